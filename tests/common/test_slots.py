from __future__ import annotations

import pytest

from disauto.common import slots


def test_task_data_round_trips() -> None:
    data = slots.task_data("python train.py", {"A": "1", "B": "x y"})
    assert slots.read_task_data(data) == ("python train.py", {"A": "1", "B": "x y"})


@pytest.mark.parametrize("data", ["", "not base64!", "e30=", "eyJjb21tYW5kIjogIiJ9"])
def test_bad_task_data_is_one_error(data: str) -> None:
    with pytest.raises(slots.TaskDataError):
        slots.read_task_data(data)


def test_names() -> None:
    assert slots.slot_executor_id("job-1", 3) == "job-1-slot-3"
    assert slots.task_sandbox("trial-0001.1") == "tasks/trial-0001.1"
    with pytest.raises(slots.TaskDataError):
        slots.task_sandbox("../x")
