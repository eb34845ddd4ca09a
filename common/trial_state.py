"""A trial's state: one enum for the record, the wire and the search.

The job store keeps the names (``"COMPLETED"``), the gRPC messages carry
``disauto.v1.TrialState`` numbers, and the search algorithms and pruners are told how a trial
ended. :class:`TrialState` is all three: a ``str`` enum whose values are the stored names, with
the mapping to and from the proto enum in one place.
"""

from __future__ import annotations

from enum import StrEnum
from enum import unique

from disauto.protos import common_pb2


@unique
class TrialState(StrEnum):
    """Where a trial is in its life; the first three are in flight, the rest final."""

    PENDING = "PENDING"
    """Submitted by AppCore, waiting for an offer."""
    LAUNCHING = "LAUNCHING"
    """Launched on an agent, not yet running."""
    RUNNING = "RUNNING"
    """Its task runs."""
    COMPLETED = "COMPLETED"
    """Its final result for the objective is recorded."""
    FAILED = "FAILED"
    """It produced no result: its program failed, or its task was lost too often."""
    KILLED = "KILLED"
    """Killed before a result (the job ended, or the user stopped it)."""
    PRUNED = "PRUNED"
    """Stopped early by the job's early-stopping rule."""
    TIMEOUT = "TIMEOUT"
    """Killed for running longer than the job's ``--trial-timeout``."""

    def is_finished(self) -> bool:
        """Whether the trial has ended (it never changes again)."""
        return self in FINISHED

    def is_in_flight(self) -> bool:
        """Whether the trial holds (or waits for) a slot."""
        return self in IN_FLIGHT

    def to_proto(self) -> int:
        """The ``disauto.v1.TrialState`` number."""
        return int(common_pb2.TrialState.Value(self.value))

    @classmethod
    def from_proto(cls, value: int) -> TrialState:
        """The state of a ``disauto.v1.TrialState`` number.

        Raises:
            ValueError: an unknown number, or TRIAL_STATE_UNSPECIFIED.
        """
        try:
            return cls(common_pb2.TrialState.Name(value))
        except ValueError:
            raise ValueError(f"not a trial state: {value}") from None


IN_FLIGHT = frozenset({TrialState.PENDING, TrialState.LAUNCHING, TrialState.RUNNING})
FINISHED = frozenset({TrialState.COMPLETED, TrialState.FAILED, TrialState.KILLED,
                      TrialState.PRUNED, TrialState.TIMEOUT})
