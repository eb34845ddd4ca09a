"""da-submit's exit codes: how the job ended."""

from __future__ import annotations

from enum import IntEnum
from enum import unique

from disauto.protos import framework_pb2


@unique
class ExitStatus(IntEnum):
    """Program exit status codes."""

    SUCCESS = 0
    """The job ended normally: budget spent, target reached, space exhausted or time budget
    (``--max-duration``) spent."""
    ERROR = 1
    """DisAuto failed (AppCore could not run, an internal error)."""
    USAGE = 2
    """Bad flags or a bad parameter file (nothing was started), or a task that no agent of the
    cluster can ever run (the job ended at once)."""
    MASTER_UNREACHABLE = 3
    """The Mesos master could not be reached or refused the job."""
    TOO_MANY_FAILURES = 4
    """More trials failed than --max-failed-trials allows."""
    STOPPED = 5
    """The job was stopped from outside (not by Ctrl-C here): da-job kill."""
    NO_RESULT = 6
    """The job ran to its end (budget, grid or time) but no trial produced a result."""
    FRAMEWORK_LOST = 7
    """The job's framework was taken away while it ran: the Mesos master removed it ("Framework
    has been removed": torn down, or its failover timeout passed) or another scheduler
    subscribed with its FrameworkID ("Framework failed over"). The record says so per trial."""
    CTRL_C = 130
    """Stopped with Ctrl-C (SIGINT) or SIGTERM; running tasks were killed, the record kept."""


def for_outcome(outcome: int) -> ExitStatus:
    """The exit status for a framework_pb2.JobOutcome."""
    return {
        framework_pb2.BUDGET_SPENT: ExitStatus.SUCCESS,
        framework_pb2.TARGET_REACHED: ExitStatus.SUCCESS,
        framework_pb2.SPACE_EXHAUSTED: ExitStatus.SUCCESS,
        framework_pb2.TIME_LIMIT_REACHED: ExitStatus.SUCCESS,
        framework_pb2.UNSCHEDULABLE: ExitStatus.USAGE,
        framework_pb2.TOO_MANY_FAILURES: ExitStatus.TOO_MANY_FAILURES,
        framework_pb2.STOPPED: ExitStatus.STOPPED,
        framework_pb2.JOB_KILLED: ExitStatus.STOPPED,
        framework_pb2.FRAMEWORK_LOST: ExitStatus.FRAMEWORK_LOST,
    }.get(outcome, ExitStatus.ERROR)
