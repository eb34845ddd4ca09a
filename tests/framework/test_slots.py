"""The warm-slot book-keeping and task conversion (framework/slots.py)."""

from __future__ import annotations

from disauto.common import slots
from disauto.framework.slots import SlotTable
from disauto.framework.slots import as_slot_task
from disauto.framework.slots import executor_info


def test_a_freed_slot_is_taken_again_on_its_agent_only() -> None:
    table = SlotTable("job", idle_seconds=0.0)
    assert table.take("S1", "t1", can_start=True) == ("job-slot-0", True)
    assert table.take("S1", "t2", can_start=False) is None  # busy, no room for another
    assert table.take("S1", "t2", can_start=True) == ("job-slot-1", True)
    table.task_ended("t1")
    assert table.take("S2", "t3", can_start=False) is None
    assert table.take("S1", "t3", can_start=False) == ("job-slot-0", False)
    assert table.executor_of("t1") == table.executor_of("t3") == "job-slot-0"
    assert table.executor_of("nope") == ""


def test_an_ended_executor_is_forgotten_and_its_id_never_reused() -> None:
    table = SlotTable("job")
    table.take("S1", "t1", can_start=True)
    table.executor_ended("job-slot-0")
    assert table.live() == 0
    assert table.take("S1", "t2", can_start=True) == ("job-slot-1", True)


def test_idle_slots_expire_and_yield_per_agent() -> None:
    table = SlotTable("job", idle_seconds=3600.0)
    table.take("S1", "a", can_start=True)
    table.take("S2", "b", can_start=True)
    table.task_ended("a")
    table.task_ended("b")
    assert table.expired() == []  # not idle long enough
    assert [s.executor_id for s in table.idle("S2")] == ["job-slot-1"]
    assert [s.executor_id for s in table.all()] == ["job-slot-0"]
    assert table.live() == 0


def test_a_command_task_becomes_a_task_of_the_slot() -> None:
    task = {"name": "trial-0001", "task_id": {"value": "trial-0001"},
            "agent_id": {"value": "S1"}, "resources": [],
            "command": {"shell": True, "value": "python train.py",
                        "environment": {"variables": [{"name": "A", "value": "1"}]},
                        "uris": [{"value": "http://f/train.py"}]}}
    executor = executor_info("job-slot-0", "python3 -m disauto.executor",
                             [{"value": "http://f/train.py"}], "job")
    out = as_slot_task(task, executor)
    assert "command" not in out and out["executor"] == executor
    assert slots.read_task_data(out["data"]) == ("python train.py", {"A": "1"})
    assert executor["command"]["uris"] == [{"value": "http://f/train.py"}]
    assert executor["type"] == "CUSTOM"
