"""``da-job update``: a running job's trial budget and parallelism, changed from another shell.

The request travels through the job's control channel (``framework/control.py``), as
``da-job kill`` does: ``da-job`` asks for an :class:`~framework.control.UpdateSearch`, the
framework's run loop picks it up (``desk.py``), the job controller checks it against the live job
(:func:`check_update`), records the new spec and sends it to AppCore, and the channel carries the
answer (what changed, or why not) back to ``da-job``, which waits for it.

The rules, whoever applies them (the framework for a running job, ``da-job`` itself for an
interrupted one):

* the budget may not go below the trials already submitted (the error names that minimum);
* the job must not have ended;
* bounds of each value (and grid search's grid) are ``da-submit``'s, checked by ``da-job``.
"""

from __future__ import annotations

from disauto.framework.control import UpdateSearch
from disauto.protos import common_pb2


class UpdateRefusedError(ValueError):
    """The change does not suit the job as it is now (one line, naming what would)."""


def check_update(spec: common_pb2.JobSpec, submitted: int, request: UpdateSearch) -> None:
    """Refuse a change that the job, with ``submitted`` trials recorded, cannot take.

    Raises:
        UpdateRefusedError: a budget below the trials already submitted (naming the minimum),
            or a parallelism below 1 (``da-job`` refuses it; a request in the record is read
            as it is).
    """
    if request.parallelism is not None and request.parallelism < 1:
        raise UpdateRefusedError(
            f"a parallelism of {request.parallelism} runs no trial; it must be at least 1")
    if request.max_trials is not None and request.max_trials < submitted:
        raise UpdateRefusedError(
            f"a trial budget of {request.max_trials} is below the {submitted} trials already "
            f"submitted; the smallest valid budget is {submitted}")


def updated_spec(spec: common_pb2.JobSpec, request: UpdateSearch) -> common_pb2.JobSpec:
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
