"""The control channel: what another process asks of a running job, and the job's answers.

One table of the job's record carries both (``control``, ``framework/_store.py``). Whoever asks
— ``da-job kill`` and ``da-job update``, the job page's kills (the framework's own page and the
one ``da-job ui`` serves from the record) — writes a typed request with :meth:`ControlChannel.ask`
and, if it wants the outcome, waits for the typed answer in the same row
(:meth:`ControlChannel.wait`). The framework's run loop is the one reader: each round it takes
the requests not answered yet (:meth:`ControlChannel.unanswered`), has each carried out
(``framework/_job/desk.py``) and writes its answer (:meth:`ControlChannel.answer`). A request
this version cannot read — a kind it does not know, a garbled body — is answered with one line
saying so, never acted on.

The channel replaces the meta keys ``control``, ``kill_trials`` and ``update_request`` /
``update_result`` of earlier versions: a record that holds them stays readable, and nothing acts
on them (``framework/_meta.py`` keeps their names). A new request is a dataclass here (its
``kind`` and ``from_body``), in :data:`REQUESTS`, and a case in the desk.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import asdict
from dataclasses import dataclass
import json
import time
from typing import Any
from typing import ClassVar

from disauto.framework._store import JobStore


KILLED_FROM_PAGE = "killed from the job page"
"""The message of a trial, and the outcome message of a job, a user killed from the job page."""
KILLED_WITH_DA_JOB = "killed with da-job kill"
"""The outcome message of a job ``da-job kill`` killed (a :class:`KillJob` that names no one)."""
KILLED_WITH_API = "killed with Job.kill() of the Python API"
"""The outcome message of a job the Python API's ``Job.kill()`` killed."""
MAX_MESSAGE = 200
"""The longest outcome message a :class:`KillJob` may carry."""


class ControlError(ValueError):
    """A request that cannot be read, in one line."""


@dataclass(frozen=True)
class KillJob:
    """End the job with JOB_KILLED (its tasks are killed, its record kept); ``message`` is
    the outcome message, which says who asked (``da-job kill``, the job page). A request of an
    earlier version carries none: it was ``da-job kill``'s or the page's, recorded as the
    former's."""

    message: str = KILLED_WITH_DA_JOB
    kind: ClassVar[str] = "kill_job"

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> KillJob:
        message = body.get("message", KILLED_WITH_DA_JOB)
        if not isinstance(message, str) or not message.strip() or "\n" in message \
                or len(message) > MAX_MESSAGE:
            raise ControlError(f"message must be one line of 1 to {MAX_MESSAGE} characters, "
                               f"not {message!r}")
        return cls(message.strip())


@dataclass(frozen=True)
class KillTrial:
    """Kill one trial: recorded KILLED at once (its slot refilled), its task killed."""

    number: int
    kind: ClassVar[str] = "kill_trial"

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> KillTrial:
        return cls(_count(body, "number", optional=False) or 0)


@dataclass(frozen=True)
class UpdateSearch:
    """Change the trial budget, the trials in flight, or both (``None``: unchanged)."""

    max_trials: int | None = None
    parallelism: int | None = None
    kind: ClassVar[str] = "update_search"

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> UpdateSearch:
        return cls(_count(body, "max_trials"), _count(body, "parallelism"))


Request = KillJob | KillTrial | UpdateSearch
REQUESTS: dict[str, type[KillJob] | type[KillTrial] | type[UpdateSearch]] = {
    kind.kind: kind for kind in (KillJob, KillTrial, UpdateSearch)}


@dataclass(frozen=True)
class Answer:
    """The job's answer: done (what was done) or refused (why), in one line."""

    ok: bool
    message: str


@dataclass(frozen=True)
class Asked:
    """A request not answered yet, as the reader finds it: the request, or why it cannot be
    read (``request`` None)."""

    id: int
    request: Request | None
    error: str = ""


class NoAnswerError(Exception):
    """No answer came: the job stopped running first (``ended``), or the wait ran out."""

    def __init__(self, ended: bool) -> None:
        super().__init__("the job ended first" if ended else "no answer in time")
        self.ended = ended


def _count(body: Mapping[str, Any], name: str, optional: bool = True) -> int | None:
    value = body.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ControlError(f"{name} must be an integer, not {value!r}")
    return value


def encode(request: Request) -> tuple[str, str]:
    """``(kind, body)`` as the record keeps a request."""
    return request.kind, json.dumps(asdict(request), sort_keys=True)


def decode(kind: str, body: str) -> Request:
    """The request a row holds.

    Raises:
        ControlError: an unknown kind or a garbled body (one line naming it).
    """
    made = REQUESTS.get(kind)
    if made is None:
        raise ControlError(f"unknown request {kind!r} (this framework takes "
                           f"{', '.join(sorted(REQUESTS))})")
    try:
        data = json.loads(body)
    except ValueError as err:
        raise ControlError(f"garbled {kind} request: {err}") from None
    if not isinstance(data, dict):
        raise ControlError(f"garbled {kind} request: not a JSON object")
    try:
        return made.from_body(data)
    except ControlError as err:
        raise ControlError(f"garbled {kind} request: {err}") from None


class ControlChannel:
    """The control table of one job's record.

    Args:
        store: the job's record (the framework's own, or one ``da-job`` opened).
    """

    def __init__(self, store: JobStore, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._store = store
        self._clock = clock
        self._sleep = sleep

    # -- the asking side -------------------------------------------------------------------

    def ask(self, request: Request) -> int:
        """Write ``request``; its id, to wait for its answer with."""
        return self._store.add_control_request(*encode(request))

    def answer_of(self, asked: int) -> Answer | None:
        """The answer to request ``asked``, or None while it has none."""
        row = self._store.control_answer(asked)
        return None if row is None else Answer(*row)

    def wait(self, asked: int, timeout: float, running: Callable[[], bool],
             poll: float = 0.2) -> Answer:
        """Wait up to ``timeout`` seconds for the answer to request ``asked``.

        Raises:
            NoAnswerError: the job stopped running without answering (``running()`` turned
                false), or no answer came in time.
        """
        deadline = self._clock() + timeout
        while True:
            answer = self.answer_of(asked)
            if answer is not None:
                return answer
            if not running():
                answer = self.answer_of(asked)  # answered just before it ended
                if answer is not None:
                    return answer
                raise NoAnswerError(ended=True)
            if self._clock() >= deadline:
                raise NoAnswerError(ended=False)
            self._sleep(poll)

    # -- the reading side (the run loop) ---------------------------------------------------

    def unanswered(self) -> list[Asked]:
        """The requests not answered yet, oldest first."""
        out = []
        for asked, kind, body in self._store.unanswered_control_requests():
            try:
                out.append(Asked(asked, decode(kind, body)))
            except ControlError as err:
                out.append(Asked(asked, None, str(err)))
        return out

    def answer(self, asked: int, answer: Answer) -> None:
        """Write the answer to request ``asked`` (once: a second answer changes nothing)."""
        self._store.answer_control_request(asked, answer.ok, answer.message.splitlines()[0]
                                           if answer.message else "")
