"""The scheduler with warm slots (``--slot-mode warm``): trials as tasks of slot executors."""

from __future__ import annotations

from collections.abc import Iterator
import dataclasses
from pathlib import Path
import time
from typing import Any

import pytest

from disauto.common import slots
from disauto.common.python_command import parse_python_command
from disauto.framework import _meta as meta
from disauto.framework._job import JobController
from disauto.framework._sandbox_logs import SandboxLogs
from disauto.framework._scheduler import JobScheduler
from disauto.framework._slots import EXECUTOR_CPUS
from disauto.framework._slots import EXECUTOR_MEM_MB
from disauto.framework._slots import SlotTable
from disauto.framework._spec import TaskResources
from disauto.framework._store import JobStore
from disauto.framework.policies import FifoPolicy
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import task_status
from tests.framework.test_scheduler import URIS
from tests.framework.test_scheduler import RecordingDriver
from tests.framework.test_scheduler import Setup


pytestmark = pytest.mark.integration  # the shared fixtures open a store


class SlotDriver(RecordingDriver):
    def _send(self, body: dict[str, Any]) -> None:
        self.calls.append(("send", body))


class WarmSetup(Setup):
    """A job with warm slots whose AppCore runs. By default AppCore's offer had room for
    AppCore alone, so no slot started before the first trial; ``appcore_offer`` a bigger one
    (warm-ups)."""

    def __init__(self, job_dir: Path,  # noqa: D107 - a Setup with slots
                 runner: TaskResources | None = None,
                 appcore_offer: tuple[float, float] = (0.5, 64.0), parallelism: int = 2,
                 preload: slots.Preload | None = None) -> None:
        self.store = JobStore(job_dir / "job.db")
        self.driver = SlotDriver()
        config = job_config(max_trials=10, parallelism=parallelism)
        if runner is not None:
            config = dataclasses.replace(config, runner=runner)
        self.controller = JobController(config, self.store,
                                        JOB_TOKEN, on_pending=lambda: self.scheduler.wake())
        self.slots = SlotTable("job-test", idle_seconds=0.0)
        self.scheduler = JobScheduler(self.controller, FifoPolicy(decline_seconds=5.0),
                                      "10.0.0.1:5000", uris=URIS, logs=SandboxLogs(),
                                      slots=self.slots, executor_command="run-executor",
                                      preload=preload)
        self.scheduler.registered(self.driver, {"value": "F-1"},
                                  {"hostname": "master", "port": 5050})
        cpus, mem = appcore_offer
        self.scheduler.resourceOffers(self.driver, [self.offer("O0", cpus, mem)])  # AppCore
        self.appcore_round = self.driver.launched()
        self.controller.attach_appcore("h:1")
        self.driver.clear()


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[WarmSetup]:
    made = WarmSetup(tmp_path)
    yield made
    made.store.close()


def test_trials_run_on_slots_that_are_reused(warm: WarmSetup) -> None:
    warm.submit(1)
    warm.submit(2)
    warm.scheduler.resourceOffers(warm.driver, [warm.offer("O1")])
    first, second = warm.driver.launched()
    assert "command" not in first
    assert first["executor"]["executor_id"] == {"value": "job-test-slot-0"}
    assert second["executor"]["executor_id"] == {"value": "job-test-slot-1"}
    assert first["executor"]["command"] == {
        "value": "run-executor", "shell": True, "uris": URIS,
        "environment": {"variables": [{"name": "PYTHONUNBUFFERED", "value": "1"}]}}
    task = slots.read_slot_task(first["data"])
    command, env = task.command, task.environment
    assert command == warm.controller.config.launch_cmd and env["DISAUTO_TRIAL_NUMBER"] == "1"
    warm.scheduler.statusUpdate(warm.driver, task_status("trial-0001", "TASK_FINISHED"))
    warm.submit(3)
    warm.driver.clear()
    warm.scheduler.resourceOffers(warm.driver, [warm.offer("O2")])
    (third,) = warm.driver.launched()
    assert third["executor"] == first["executor"]  # the same slot, the same ExecutorInfo


def test_offers_of_agents_with_a_free_slot_are_used_first(warm: WarmSetup) -> None:
    warm.submit(1)
    warm.scheduler.resourceOffers(warm.driver, [warm.offer("O1", agent="S2")])
    warm.scheduler.statusUpdate(warm.driver, task_status("trial-0001", "TASK_FINISHED",
                                                         agent_id="S2"))
    warm.submit(2)
    warm.driver.clear()
    warm.scheduler.resourceOffers(warm.driver, [warm.offer("O2", agent="S1"),
                                                warm.offer("O3", agent="S2")])
    (task,) = warm.driver.launched()
    assert task["agent_id"] == {"value": "S2"}
    assert task["executor"]["executor_id"] == {"value": "job-test-slot-0"}
    assert warm.slots.live() == 1


def _scalars(resources: list[dict[str, Any]]) -> dict[str, float]:
    return {r["name"]: r["scalar"]["value"] for r in resources if r["type"] == "SCALAR"}


def test_a_big_trials_slot_is_carved_out_of_what_the_trial_asked(warm: WarmSetup) -> None:
    """A 1-CPU, 128 MB trial on an offer of exactly that: its slot's executor takes its share
    of the trial's claim, so a slot packs an agent as a command task would."""
    warm.submit(1)
    runner = warm.controller.config.runner
    warm.scheduler.resourceOffers(warm.driver, [warm.offer("O1", cpus=runner.cpus,
                                                           mem=runner.mem_mb)])
    (task,) = warm.driver.launched()
    assert "executor" in task and "command" not in task
    task_part = _scalars(task["resources"])
    executor_part = _scalars(task["executor"]["resources"])
    assert task_part["cpus"] + executor_part["cpus"] == pytest.approx(runner.cpus)
    assert task_part["mem"] + executor_part["mem"] == pytest.approx(runner.mem_mb)
    assert executor_part["cpus"] == EXECUTOR_CPUS and executor_part["mem"] == EXECUTOR_MEM_MB
    # The trial ends; the next one reuses the slot with the same split, on an offer of what
    # the trial's task gave back (the executor keeps its share).
    warm.scheduler.statusUpdate(warm.driver, task_status(task["task_id"]["value"],
                                                         "TASK_FINISHED", agent_id="S1"))
    warm.submit(2)
    warm.driver.clear()
    warm.scheduler.resourceOffers(warm.driver, [warm.offer("O2", cpus=task_part["cpus"],
                                                           mem=task_part["mem"])])
    (second,) = warm.driver.launched()
    assert second["executor"]["executor_id"] == task["executor"]["executor_id"]
    assert _scalars(second["resources"]) == task_part
    assert warm.slots.live() == 1


def test_no_room_for_a_small_trials_executor_runs_a_command_task(tmp_path: Path) -> None:
    small = TaskResources(cpus=0.05, mem_mb=64.0)  # less than twice an executor's share
    warm = WarmSetup(tmp_path, runner=small)
    try:
        warm.submit(1)
        warm.scheduler.resourceOffers(warm.driver, [warm.offer("O1", cpus=small.cpus,
                                                               mem=small.mem_mb)])
        (task,) = warm.driver.launched()
        assert "command" in task and "executor" not in task
        assert warm.slots.live() == 0
    finally:
        warm.store.close()


def test_a_dead_slot_requeues_its_trial_and_idle_slots_are_shut_down(warm: WarmSetup) -> None:
    warm.submit(1)
    warm.scheduler.resourceOffers(warm.driver, [warm.offer("O1")])
    lost = task_status("trial-0001", "TASK_FAILED", agent_id="S1")
    lost.update(reason="REASON_EXECUTOR_TERMINATED", message="Executor terminated")
    warm.scheduler.statusUpdate(warm.driver, lost)
    (trial,) = warm.controller.trials()
    assert trial.state == "PENDING" and trial.retries == 1
    assert warm.slots.live() == 0
    warm.scheduler.resourceOffers(warm.driver, [warm.offer("O2")])
    assert warm.driver.launched()[-1]["executor"]["executor_id"]["value"] == "job-test-slot-1"
    warm.scheduler.statusUpdate(warm.driver, task_status("trial-0001.1", "TASK_FINISHED"))
    warm.scheduler.reap_idle_slots()
    (shutdown,) = [body for kind, body in warm.driver.calls if kind == "send"]
    assert shutdown == {"type": "SHUTDOWN", "framework_id": {"value": "F-1"},
                        "shutdown": {"executor_id": {"value": "job-test-slot-1"},
                                     "agent_id": {"value": "S1"}}}


def test_a_resumed_framework_knows_a_slot_task_by_its_executor(tmp_path: Path) -> None:
    plain = Setup(tmp_path, max_trials=10, parallelism=2)  # no slot table: as after a resume
    plain.scheduler.resourceOffers(plain.driver, [plain.offer("O0")])
    plain.controller.attach_appcore("h:1")
    plain.submit(1)
    plain.scheduler.resourceOffers(plain.driver, [plain.offer("O1")])
    lost = task_status("trial-0001", "TASK_FAILED", reason="REASON_EXECUTOR_TERMINATED",
                       message="Executor terminated", source="SOURCE_AGENT")
    own = dict(lost, executor_id={"value": "trial-0001"})  # a command task's own executor
    plain.scheduler.statusUpdate(plain.driver, dict(lost, executor_id={"value": "j-slot-3"}))
    (trial,) = plain.controller.trials()
    assert trial.state == "PENDING" and trial.retries == 1
    plain.scheduler.resourceOffers(plain.driver, [plain.offer("O2")])
    plain.scheduler.statusUpdate(plain.driver, dict(own, task_id={"value": "trial-0001.1"},
                                                    executor_id={"value": "trial-0001.1"}))
    (trial,) = plain.controller.trials()
    assert trial.state == "FAILED"  # a command task's executor dying is its script's failure
    plain.store.close()


def test_slots_start_with_appcore_where_trials_will_fit_and_take_the_first_trials(
        tmp_path: Path) -> None:
    """The round that launches AppCore also starts a slot per trial slot (the parallelism)
    where a trial will fit: their executors, interpreters and containers start while
    AppCore does. The first trials go to those slots; no new executor starts."""
    warm = WarmSetup(tmp_path, appcore_offer=(2.6, 4096.0), parallelism=3)  # room: 2 trials
    appcore, *warm_ups = warm.appcore_round
    assert appcore["name"] == "appcore"
    assert [t["task_id"]["value"] for t in warm_ups] == ["job-test-slot-0-warmup",
                                                         "job-test-slot-1-warmup"]
    first = warm_ups[0]
    assert _scalars(first["resources"]) == {"cpus": 0.01}
    assert _scalars(first["executor"]["resources"]) == {"cpus": EXECUTOR_CPUS,
                                                        "mem": EXECUTOR_MEM_MB}
    task = slots.read_slot_task(first["data"])
    runner = warm.controller.config.runner
    assert task.warmup == slots.Warmup(runner.cpus, runner.mem_mb)
    assert task.command == warm.controller.config.launch_cmd
    assert task.environment["DISAUTO_JOB_ID"] == warm.controller.config.job_id
    assert "DISAUTO_TRIAL_NUMBER" not in task.environment
    assert warm.slots.live() == 2 and warm.slots.free_count("S1") == 2
    # adoptable after a resume:
    assert warm.store.get_meta(meta.SLOT_EXECUTOR.key("job-test-slot-0"))

    # A running warm-up does not keep its slot from trials; its end changes nothing.
    warm.scheduler.statusUpdate(warm.driver, {
        **task_status("job-test-slot-0-warmup", "TASK_RUNNING"),
        "executor_id": {"value": "job-test-slot-0"}})
    assert warm.slots.free_count("S1") == 2
    warm.scheduler.statusUpdate(warm.driver, task_status("job-test-slot-0-warmup",
                                                         "TASK_FINISHED"))
    for number in (1, 2, 3):
        warm.submit(number)
    warm.scheduler.resourceOffers(warm.driver, [warm.offer("O1", cpus=8.0)])
    launched = warm.driver.launched()
    assert [t["executor"]["executor_id"]["value"] for t in launched] == [
        "job-test-slot-0", "job-test-slot-1", "job-test-slot-2"]
    assert launched[0]["executor"] == first["executor"]  # the warmed slot, as started
    assert slots.read_slot_task(launched[0]["data"]).warmup is None  # a trial, run
    assert warm.slots.live() == 3
    warm.store.close()


def test_a_warm_up_that_starts_an_interpreter_claims_a_trials_memory(tmp_path: Path) -> None:
    """The interpreter imports the script's modules under the warm-up, in the slot's
    container: with the executor's 64 MB alone the agent killed a slot that imported
    scikit-learn, and the container's limit, once raised, stays for the slot's trials."""
    program = parse_python_command("python train.py")
    preload = slots.Preload(program, ("apprunner_sdk",), ("numpy", "sklearn.svm"))
    runner = TaskResources(cpus=1.0, mem_mb=512.0)  # carved: the task gets 512 - 64 MB
    warm = WarmSetup(tmp_path, runner=runner, appcore_offer=(3.0, 4096.0), preload=preload)
    _appcore, first, second = warm.appcore_round
    assert _scalars(first["resources"]) == {"cpus": 0.01, "mem": 512.0 - EXECUTOR_MEM_MB}
    assert slots.read_slot_task(first["data"]).preload == preload
    warm.store.close()
    small = WarmSetup(tmp_path / "small", runner=TaskResources(cpus=0.05, mem_mb=100.0),
                      appcore_offer=(3.0, 4096.0), preload=preload)
    assert _scalars(small.appcore_round[1]["resources"]) == {"cpus": 0.01, "mem": 100.0}
    small.store.close()


def test_no_warm_up_without_appcore_or_room_or_for_gpu_trials(tmp_path: Path) -> None:
    small = WarmSetup(tmp_path / "a", appcore_offer=(1.4, 4096.0))  # AppCore + 0.9 CPUs
    assert [t["name"] for t in small.appcore_round] == ["appcore"]
    small.submit(1)
    small.scheduler.resourceOffers(small.driver, [small.offer("O1", cpus=8.0)])
    assert [t["name"] for t in small.driver.launched()] == ["trial-0001"]  # no AppCore: none
    small.store.close()
    gpu = WarmSetup(tmp_path / "b", runner=TaskResources(cpus=1.0, mem_mb=128.0, gpus=1),
                    appcore_offer=(8.0, 4096.0))
    assert [t["name"] for t in gpu.appcore_round] == ["appcore"]
    gpu.store.close()


def test_a_warm_up_whose_executor_ended_forgets_its_slot(tmp_path: Path) -> None:
    warm = WarmSetup(tmp_path, appcore_offer=(2.0, 4096.0), parallelism=1)
    assert warm.slots.live() == 1
    warm.scheduler.statusUpdate(warm.driver, task_status(
        "job-test-slot-0-warmup", "TASK_FAILED", reason="REASON_EXECUTOR_TERMINATED",
        message="cannot warm up: the executor ended"))
    assert warm.slots.live() == 0
    assert warm.controller.trials() == []  # not a trial: nothing recorded as one
    warm.store.close()


def test_a_trial_that_reports_and_does_not_exit_frees_its_slot_once_killed(
        tmp_path: Path) -> None:
    """--slot-mode warm: a trial whose script reported its final result and hangs is
    COMPLETED past its exit grace and its task killed through the slot's executor; the kill's
    TASK_KILLED frees the slot, and the next trial runs on it."""
    from disauto.common.report import Report

    warm = WarmSetup(tmp_path, parallelism=1)
    try:
        warm.submit(1)
        warm.scheduler.resourceOffers(warm.driver, [warm.offer("O1")])
        (first,) = warm.driver.launched()
        slot = first["executor"]["executor_id"]["value"]
        warm.scheduler.statusUpdate(warm.driver, task_status("trial-0001", "TASK_RUNNING"))
        warm.controller.record_report(Report(1, {"accuracy": 0.7}, final=True))
        grace = warm.controller.config.trial_exit_grace
        expired = warm.controller.expire_trials(now=time.time() + grace + 1)
        assert expired == ["trial-0001"]
        warm.driver.clear()
        warm.scheduler.kill(expired)
        assert warm.driver.calls == [("kill", {"value": "trial-0001"})]
        assert not warm.slots.has_free("S1")  # its task still runs there
        warm.scheduler.statusUpdate(warm.driver, {
            **task_status("trial-0001", "TASK_KILLED"), "executor_id": {"value": slot}})
        assert warm.slots.has_free("S1")
        warm.submit(2)
        warm.driver.clear()
        warm.scheduler.resourceOffers(warm.driver, [warm.offer("O2")])
        (second,) = warm.driver.launched()
        assert second["executor"]["executor_id"] == {"value": slot}
        assert {t.number: t.state for t in warm.controller.trials()} == {
            1: "COMPLETED", 2: "LAUNCHING"}
    finally:
        warm.store.close()
