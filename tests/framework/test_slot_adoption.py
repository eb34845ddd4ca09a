"""The job's running slots, read from the master's list of its framework's executors."""

from __future__ import annotations

import pytest

from disauto.framework._slot_adoption import RunningSlot
from disauto.framework._slot_adoption import slots_of


def test_mesos_model_and_v1_forms_are_read_and_other_executors_ignored() -> None:
    body = {"frameworks": [
        {"id": "F-1", "executors": [
            # Mesos' model(ExecutorInfo) + slave_id
            {"executor_id": "job-slot-0", "slave_id": "S1",
             "resources": {"cpus": 0.05, "mem": 64.0, "gpus": 1.0}},
            # the v1 form
            {"executor_id": {"value": "job-slot-2"}, "agent_id": {"value": "S2"},
             "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.05}}]},
            {"executor_id": "other-slot-1", "slave_id": "S1"},
            {"executor_id": "job-slot-x", "slave_id": "S1"},
        ]},
        {"id": "F-2", "executors": [{"executor_id": "job-slot-9", "slave_id": "S1"}]},
    ]}
    assert slots_of(body, "F-1", "job") == [RunningSlot("job-slot-0", "S1", 1),
                                            RunningSlot("job-slot-2", "S2", 0)]


def test_an_answer_without_frameworks_is_refused() -> None:
    with pytest.raises(ValueError, match="no 'frameworks' list"):
        slots_of({"slaves": []}, "F-1", "job")
