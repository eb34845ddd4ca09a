"""Where the job page gets a job from: the framework that runs it, or its record alone.

:class:`LiveJob` is the running framework's own job (a trial's kill goes to its controller at
once, the job's through the control channel as ``da-job kill``'s does); :class:`RecordedJob` is
a job read from its folder by ``da-job ui`` (ended, interrupted, or running in another process:
kills then travel through the record's control channel, ``framework/control.py``, to the run
loop that answers it).
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
import time

from disauto.common import paths
from disauto.common.trial_state import TrialState
from disauto.framework import _meta as meta
from disauto.framework._errors import FailedPreconditionError
from disauto.framework._errors import NotFoundError
from disauto.framework._job.ports import PageView
from disauto.framework._store import JobStore
from disauto.framework._telemetry.registry import TelemetryRegistry
from disauto.framework.control import KILLED_FROM_PAGE
from disauto.framework.control import ControlChannel
from disauto.framework.control import KillJob
from disauto.framework.control import KillTrial
from disauto.framework.webui.mirror import mirror_of
from disauto.framework.webui.summary import Steps
from disauto.framework.webui.views import Record
from disauto.framework.webui.views import store_steps


class ActionError(Exception):
    """A request the page cannot carry out: an HTTP status and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class JobSource(abc.ABC):
    """One job the page server shows."""

    def __init__(self, job_id: str, folder: Path) -> None:
        self.job_id = job_id
        self.folder = folder

    @abc.abstractmethod
    def record(self) -> Record:
        """The job as recorded now."""

    @abc.abstractmethod
    def kill_job(self) -> str:
        """Ask the job to end (outcome JOB_KILLED, "killed from the job page"); what was
        done, in one line."""

    @abc.abstractmethod
    def kill_trial(self, number: int) -> str:
        """Kill one trial (recorded KILLED, its slot refilled); what was done, in one line."""

    @abc.abstractmethod
    @contextmanager
    def store(self) -> Iterator[JobStore]:
        """The job's store, to read (telemetry samples, the kept registry)."""

    def registry(self) -> TelemetryRegistry | None:
        """The running registry of collectors and processors, or None: this server reads
        the job from its record (or the job runs without telemetry), and cannot change it."""
        return None

    def token(self) -> str:
        """The job token (``<job folder>/job.token``); "" when there is none."""
        try:
            return (self.folder / paths.TOKEN).read_text().strip()
        except OSError:
            return ""

    def log_path(self, number: int, stream: str) -> Path:
        """The collected stdout/stderr of trial ``number``'s latest task.

        Raises:
            ActionError: no such trial, or no such stream.
        """
        if stream not in ("stdout", "stderr"):
            raise ActionError(400, f"unknown stream {stream!r}: stdout or stderr")
        trial = next((t for t in self.record().trials if t.number == number), None)
        if trial is None:
            raise ActionError(404, f"job {self.job_id} has no trial {number}")
        task = trial.task_id or f"trial-{number:04d}"
        return self.folder / paths.TASK_LOGS / f"{task}.{stream}"


class LiveJob(JobSource):
    """The job this framework runs.

    Args:
        controller: the job's controller.
        folder: the job folder.
        kill_tasks: kills Mesos tasks by id (the scheduler's).
    """

    def __init__(self, controller: PageView, folder: Path,
                 kill_tasks: Callable[[list[str]], None],
                 registry: TelemetryRegistry | None = None) -> None:
        super().__init__(controller.config.job_id, folder)
        self._controller = controller
        self._kill_tasks = kill_tasks
        self._registry = registry

    @contextmanager
    def store(self) -> Iterator[JobStore]:
        yield self._controller.store

    def registry(self) -> TelemetryRegistry | None:
        return self._registry

    def token(self) -> str:
        return self._controller.job_token

    def record(self) -> Record:
        """The controller's own trials (not read from the record, nor copied: a 10,000-trial
        job's page would otherwise read or copy them all on each poll), read-only."""
        controller = self._controller
        state = "running" if controller.outcome is None else "ended"
        store = controller.store
        return Record(store.meta(), controller.rows_to_read(),
                      store_steps(store, controller.config.search.objective), state,
                      time.time(), version=controller.version())

    def kill_job(self) -> str:
        if self._controller.outcome is not None:
            raise ActionError(409, f"job {self.job_id} has already ended")
        # The same path as `da-job kill`: the run loop ends the job with JOB_KILLED.
        ControlChannel(self._controller.store).ask(KillJob(KILLED_FROM_PAGE))
        return f"killing job {self.job_id}"

    def kill_trial(self, number: int) -> str:
        try:
            tasks = self._controller.kill_trial(number, KILLED_FROM_PAGE)
        except NotFoundError as err:
            raise ActionError(404, str(err)) from None
        except FailedPreconditionError as err:
            raise ActionError(409, str(err)) from None
        if tasks:
            self._kill_tasks(tasks)
        return f"trial {number} killed"


class RecordedJob(JobSource):
    """A job read from its folder.

    Args:
        folder: the job folder.
        state: returns ``running``, ``ended`` or ``interrupted`` (``da-job``'s judgement from
            the recorded process).
    """

    def __init__(self, job_id: str, folder: Path, state: Callable[[], str]) -> None:
        super().__init__(job_id, folder)
        self._state = state

    def _store(self) -> JobStore:
        return JobStore(self.folder / paths.JOB_DB)

    @contextmanager
    def store(self) -> Iterator[JobStore]:
        store = self._store()
        try:
            yield store
        finally:
            store.close()

    def record(self) -> Record:
        """The record, its trials from the page's mirror of it (read again as they change)."""
        store = self._store()
        try:
            recorded = store.meta()
            trials, version = mirror_of(self.folder / paths.JOB_DB).trials(store)
        finally:
            store.close()
        config = recorded[meta.CONFIG]
        objective = config.search.objective if config is not None else ""
        return Record(recorded, trials, self._steps(objective), self._state(), time.time(),
                      version=version)

    def _steps(self, objective: str) -> Steps:
        """Reads intermediate values from the record when asked (the page asks for a few
        trials' once it knows which)."""
        def steps(numbers: Sequence[int]) -> dict[int, list[tuple[int, float]]]:
            with self.store() as store:
                return store_steps(store, objective)(numbers)
        return steps

    def _running(self) -> None:
        state = self._state()
        if state == "interrupted":
            raise ActionError(409, f"job {self.job_id} is interrupted: nothing runs it "
                                   f"(da-job kill {self.job_id} closes its record)")
        if state != "running":
            raise ActionError(409, f"job {self.job_id} has already ended")

    def kill_job(self) -> str:
        self._running()
        store = self._store()
        try:
            ControlChannel(store).ask(KillJob(KILLED_FROM_PAGE))  # as `da-job kill` does
        finally:
            store.close()
        return f"killing job {self.job_id}"

    def kill_trial(self, number: int) -> str:
        self._running()
        store = self._store()
        try:
            trial = store.trial(number)
            if trial is None:
                raise ActionError(404, f"trial {number} does not exist")
            if trial.state not in (TrialState.PENDING, TrialState.LAUNCHING,
                                   TrialState.RUNNING):
                raise ActionError(409, f"trial {number} has already ended ({trial.state})")
            ControlChannel(store).ask(KillTrial(number))  # the run loop answers it
        finally:
            store.close()
        return f"killing trial {number}"
