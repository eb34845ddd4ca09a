from __future__ import annotations

import base64

import pytest

from disauto.common import slots


def test_task_data_round_trips() -> None:
    data = slots.task_data("python train.py", {"A": "1", "B": "x y"})
    task = slots.read_slot_task(data)
    assert (task.command, task.environment) == ("python train.py", {"A": "1", "B": "x y"})


@pytest.mark.parametrize("data", ["", "not base64!", "e30=", "eyJjb21tYW5kIjogIiJ9"])
def test_bad_task_data_is_one_error(data: str) -> None:
    with pytest.raises(slots.TaskDataError):
        slots.read_slot_task(data)


def test_names() -> None:
    assert slots.slot_executor_id("job-1", 3) == "job-1-slot-3"
    assert slots.task_sandbox("trial-0001.1") == "tasks/trial-0001.1"
    with pytest.raises(slots.TaskDataError):
        slots.task_sandbox("../x")


def test_a_warm_up_says_so_and_what_its_trials_take() -> None:
    data = slots.task_data("python train.py", {"A": "1"}, warmup=slots.Warmup(3.95, 4032.0))
    task = slots.read_slot_task(data)
    assert task.warmup == slots.Warmup(3.95, 4032.0) and task.command == "python train.py"
    assert slots.read_slot_task(slots.task_data("python train.py", {})).warmup is None
    assert slots.warmup_task_id("job-1-slot-3") == "job-1-slot-3-warmup"
    assert slots.is_warmup_task("job-1-slot-3-warmup")
    assert not slots.is_warmup_task("trial-0003") and not slots.is_warmup_task("x-warmup")


@pytest.mark.parametrize("warmup", ['[]', '{"cpus": 1}', '{"cpus": "a", "mem_mb": 1}',
                                    '{"cpus": -1, "mem_mb": 1}'])
def test_a_bad_warm_up_is_one_error(warmup: str) -> None:
    body = f'{{"command": "true", "environment": {{}}, "warmup": {warmup}}}'
    with pytest.raises(slots.TaskDataError, match="warmup"):
        slots.read_slot_task(base64.b64encode(body.encode()).decode())
