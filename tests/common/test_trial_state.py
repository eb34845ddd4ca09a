"""TrialState: the stored names, the proto numbers and the two groups."""

from __future__ import annotations

import pytest

from disauto.common.trial_state import FINISHED
from disauto.common.trial_state import IN_FLIGHT
from disauto.common.trial_state import TrialState
from disauto.protos import common_pb2


def test_every_proto_state_but_unspecified_is_a_trial_state_and_back() -> None:
    for name, number in common_pb2.TrialState.items():
        if number == common_pb2.TRIAL_STATE_UNSPECIFIED:
            continue
        state = TrialState.from_proto(number)
        assert state == name and state.to_proto() == number
    assert {s.value for s in TrialState} == set(common_pb2.TrialState.keys()) - {
        "TRIAL_STATE_UNSPECIFIED"}


def test_unknown_numbers_are_refused() -> None:
    for number in (common_pb2.TRIAL_STATE_UNSPECIFIED, 99):
        with pytest.raises(ValueError, match=f"not a trial state: {number}"):
            TrialState.from_proto(number)


def test_in_flight_and_finished_split_the_states() -> None:
    assert IN_FLIGHT | FINISHED == set(TrialState) and not IN_FLIGHT & FINISHED
    assert TrialState.RUNNING.is_in_flight() and not TrialState.RUNNING.is_finished()
    assert TrialState.PRUNED.is_finished() and not TrialState.PRUNED.is_in_flight()


def test_a_state_is_its_stored_name() -> None:
    assert TrialState("COMPLETED") is TrialState.COMPLETED
    assert TrialState.COMPLETED == "COMPLETED" and f"{TrialState.KILLED}" == "KILLED"
