"""The warm-slot book-keeping and task conversion (framework/_slots.py)."""

from __future__ import annotations

from disauto.common import slots
from disauto.framework._slots import SlotTable
from disauto.framework._slots import as_slot_task
from disauto.framework._slots import container_spec
from disauto.framework._slots import executor_info


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
    task = slots.read_slot_task(out["data"])
    assert (task.command, task.environment) == ("python train.py", {"A": "1"})
    assert executor["command"]["uris"] == [{"value": "http://f/train.py"}]
    assert executor["type"] == "CUSTOM"


def test_a_gpu_slot_is_reused_only_for_as_many_gpus() -> None:
    table = SlotTable("job", idle_seconds=0.0)
    assert table.take("S1", "t1", can_start=True, gpus=1) == ("job-slot-0", True)
    table.task_ended("t1")
    assert table.free_gpus("S1") == 1 and table.free_gpus("S2") == 0
    assert table.take("S1", "t2", can_start=False, gpus=2) is None  # holds 1, not 2
    assert table.take("S1", "t2", can_start=False) is None  # nor 0
    assert table.take("S1", "t2", can_start=False, gpus=1) == ("job-slot-0", False)
    assert table.free_gpus("S1") == 0  # busy again


def test_a_gpu_slot_holds_its_gpus_in_the_executor_and_its_tasks_none() -> None:
    task = {"task_id": {"value": "trial-0001"}, "name": "trial-0001",
            "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.5}},
                          {"name": "gpus", "type": "SCALAR", "scalar": {"value": 2.0}}],
            "command": {"value": "python runner.py"},
            "container": {"type": "DOCKER", "docker": {"image": "img"}}}
    executor = executor_info("job-slot-0", "python3 -m disauto.executor", [], "job", gpus=2)
    held = {r["name"]: r["scalar"]["value"] for r in executor["resources"]}
    assert held["gpus"] == 2.0
    converted = as_slot_task(task, executor)
    assert [r["name"] for r in converted["resources"]] == ["cpus"]
    assert "container" not in converted and "command" not in converted


def test_a_container_slot_carries_its_container_in_the_executor_environment() -> None:
    spec = container_spec("registry.example.com/runner:1", False, ["/data/out"], "job")
    executor = executor_info("job-slot-0", "python3 -m disauto.executor", [], "job", spec)
    variables = {v["name"]: v["value"]
                 for v in executor["command"]["environment"]["variables"]}
    back = slots.ContainerSpec.from_json(variables[slots.SPEC_ENV])
    assert back == spec
    assert back.host_paths == ("/data/out",) and back.labels["disauto.job"] == "job"
    assert "container" not in executor  # the executor itself runs on the host
    plain = executor_info("job-slot-1", "python3 -m disauto.executor", [], "job")
    assert slots.SPEC_ENV not in {v["name"] for v in
                                  plain["command"]["environment"]["variables"]}


def test_slot_numbers_go_on_from_the_record_and_are_told_before_use() -> None:
    told: list[int] = []
    table = SlotTable("job", started=3, on_start=told.append)
    assert table.take("S1", "t1", can_start=True) == ("job-slot-3", True)
    assert told == [4]


def test_an_adopted_slot_is_freed_by_its_task_reused_with_its_info_or_reaped() -> None:
    table = SlotTable("job", idle_seconds=60.0, started=2)
    info = {"executor_id": {"value": "job-slot-0"}}
    assert table.adopt("job-slot-0", "S1", "trial-0001", info=info)
    assert not table.adopt("job-slot-0", "S1", "trial-0001")  # known already
    assert not table.adopt("other-slot-0", "S1") and not table.adopt("job-appcore", "S1")
    assert table.take("S1", "t2", can_start=False) is None  # busy
    table.task_ended("trial-0001")
    assert table.take("S1", "t2", can_start=False) == ("job-slot-0", False)
    assert table.info_of("job-slot-0") == info
    # Without its ExecutorInfo an adopted slot takes no trial and goes at the next reap.
    assert table.adopt("job-slot-1", "S1")
    assert table.take("S1", "t3", can_start=False) is None
    assert [s.executor_id for s in table.expired()] == ["job-slot-1"]
    assert not table.adopt("job-slot-1", "S1")  # shut down: never adopted again
    assert table.adopted == 2


def test_adopting_a_slot_numbered_past_the_count_moves_the_count_on() -> None:
    told: list[int] = []
    table = SlotTable("job", on_start=told.append)
    table.adopt("job-slot-4", "S1")
    assert told == [5] and table.take("S1", "t", can_start=True) == ("job-slot-5", True)


def test_ended_executors_are_listed_with_their_agents_for_the_log_collector() -> None:
    """Issue 40: a slot's executor that failed before it ran a trial printed why in its own
    stderr; the collector copies it once the executor has ended (never while it runs)."""
    table = SlotTable("job", idle_seconds=3600.0)
    table.take("S1", "t1", can_start=True)
    table.start_idle("S2")
    table.adopt("job-slot-7", "S3")
    assert table.ended_executors() == []
    table.executor_ended("job-slot-0")
    assert table.ended_executors() == [("job-slot-0", "S1", False)]
    table.all()
    assert sorted(table.ended_executors()) == [("job-slot-0", "S1", False),
                                               ("job-slot-1", "S2", False),
                                               ("job-slot-7", "S3", False)]
