"""``da-job update``: a running job's trial budget and parallelism, changed from another shell.

The request travels through the job's record, as ``da-job kill`` does: ``da-job`` writes an
:class:`UpdateRequest` under :data:`REQUEST_KEY`, the framework's run loop picks it up, the job
controller checks it against the live job (:func:`check_update`), records the new spec and sends
it to AppCore, and the framework answers with an :class:`UpdateResult` under :data:`RESULT_KEY`
(the same id), which ``da-job`` waits for.

The rules, whoever applies them (the framework for a running job, ``da-job`` itself for an
interrupted one):

* the budget may not go below the trials already submitted (the error names that minimum);
* the job must not have ended;
* bounds of each value (and grid search's grid) are ``da-submit``'s, checked by ``da-job``.
"""

from __future__ import annotations

from dataclasses import asdict
from dataclasses import dataclass
import json

from disauto.framework import meta
from disauto.protos import common_pb2


REQUEST_KEY = meta.LEGACY_UPDATE_REQUEST
"""The meta key ``da-job update`` writes its request under."""
RESULT_KEY = meta.LEGACY_UPDATE_RESULT
"""The meta key the framework answers under."""


class UpdateRefusedError(ValueError):
    """The change does not suit the job as it is now (one line, naming what would)."""


@dataclass(frozen=True)
class UpdateRequest:
    """What ``da-job update`` asks for; ``None``: unchanged."""

    id: str
    max_trials: int | None = None
    parallelism: int | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> UpdateRequest:
        data = json.loads(text)
        return cls(str(data["id"]), _int_or_none(data.get("max_trials")),
                   _int_or_none(data.get("parallelism")))


@dataclass(frozen=True)
class UpdateResult:
    """The framework's answer to the request ``id``: applied (what changed) or refused (why)."""

    id: str
    applied: bool
    message: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> UpdateResult:
        data = json.loads(text)
        return cls(str(data["id"]), bool(data["applied"]), str(data["message"]))


def _int_or_none(value: object) -> int | None:
    return None if value is None else int(str(value))


def check_update(spec: common_pb2.JobSpec, submitted: int, request: UpdateRequest) -> None:
    """Refuse a change that the job, with ``submitted`` trials recorded, cannot take.

    Raises:
        UpdateRefusedError: a budget below the trials already submitted (naming the minimum).
    """
    if request.max_trials is not None and request.max_trials < submitted:
        raise UpdateRefusedError(
            f"a trial budget of {request.max_trials} is below the {submitted} trials already "
            f"submitted; the smallest valid budget is {submitted}")


def updated_spec(spec: common_pb2.JobSpec, request: UpdateRequest) -> common_pb2.JobSpec:
    """A copy of ``spec`` with the request's values."""
    new = common_pb2.JobSpec()
    new.CopyFrom(spec)
    if request.max_trials is not None:
        new.max_trials = request.max_trials
    if request.parallelism is not None:
        new.parallelism = request.parallelism
    return new


def describe_change(old: common_pb2.JobSpec, new: common_pb2.JobSpec) -> str:
    """``trial budget 4 → 8, parallelism 1 → 2`` (what did not change is left out)."""
    parts = [f"{name} {before} → {after}" for name, before, after in (
        ("trial budget", old.max_trials, new.max_trials),
        ("parallelism", old.parallelism, new.parallelism)) if before != after]
    return ", ".join(parts) or (f"nothing changed (trial budget {new.max_trials}, "
                                f"parallelism {new.parallelism})")
