"""The pymesos Scheduler's callbacks, over the real controller, store and FIFO policy.

The driver is a recorder with pymesos' ``MesosSchedulerDriver`` method signatures: it keeps every
call the scheduler makes (launch, decline, suppress, revive, acknowledge, kill, reconcile) so the
tests can check them, as pymesos' own scheduler tests do (style anchors, rule 13). The real driver
talking to a real master is exercised by the local-mode end-to-end tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
import time
from typing import Any

import pytest

from disauto.common import task_env
from disauto.common.tokens import trial_token
from disauto.framework import _meta as meta
from disauto.framework._job import JobController
from disauto.framework._sandbox_logs import SandboxLogs
from disauto.framework._scheduler import IDLE_REFUSE_SECONDS
from disauto.framework._scheduler import LEFTOVER_REFUSE_SECONDS
from disauto.framework._scheduler import JobScheduler
from disauto.framework._store import JobStore
from disauto.framework.policies import FifoPolicy
from disauto.framework.policies import Plan
from disauto.protos import framework_pb2
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import task_status


pytestmark = pytest.mark.integration  # starts processes or servers


class RecordingDriver:
    """Records the calls a JobScheduler makes on its pymesos driver."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def launchTasks(self, offer_ids: Any, tasks: list[dict[str, Any]],  # noqa: N802
                    filters: Any = None) -> None:
        self.calls.append(("launch", (offer_ids, tasks, filters)))

    def declineOffer(self, offer_ids: Any, filters: Any = None) -> None:  # noqa: N802
        self.calls.append(("decline", (offer_ids, filters)))

    def suppressOffers(self, roles: Any = ()) -> None:  # noqa: N802
        self.calls.append(("suppress", None))

    def reviveOffers(self, roles: Any = ()) -> None:  # noqa: N802
        self.calls.append(("revive", None))

    def acknowledgeStatusUpdate(self, status: dict[str, Any]) -> None:  # noqa: N802
        self.calls.append(("ack", status))

    def killTask(self, task_id: dict[str, str]) -> None:  # noqa: N802
        self.calls.append(("kill", task_id))

    def reconcileTasks(self, tasks: list[Any]) -> None:  # noqa: N802
        self.calls.append(("reconcile", [{"task_id": t["task_id"]} for t in tasks]))

    def _send(self, body: dict[str, Any]) -> None:
        """The raw v1 calls pymesos 0.3.15 lacks (an explicit RECONCILE with agent ids)."""
        if body["type"] == "RECONCILE":
            self.calls.append(("reconcile", body["reconcile"]["tasks"]))
        else:
            self.calls.append((str(body["type"]).lower(), body))

    def stop(self, failover: bool = False) -> None:
        self.calls.append(("stop", failover))

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.calls]

    def launched(self) -> list[dict[str, Any]]:
        return [task for kind, (_, tasks, _) in
                ((k, a) for k, a in self.calls if k == "launch") for task in tasks]

    def clear(self) -> None:
        self.calls.clear()


URIS = [{"value": "http://10.0.0.1:8000/s/files/0/train.py", "extract": False,
         "output_file": "train.py"}]


class Setup:
    def __init__(self, job_dir: Path, trial_timeout: float = 0.0, **config: Any) -> None:
        self.store = JobStore(job_dir / "job.db")
        self.driver = RecordingDriver()
        settings = replace(job_config(**config), trial_timeout=trial_timeout)
        self.controller = JobController(settings, self.store, JOB_TOKEN,
                                        on_pending=lambda: self.scheduler.wake())
        self.scheduler = JobScheduler(self.controller, FifoPolicy(decline_seconds=5.0),
                                      "10.0.0.1:5000", uris=URIS, trial_env={"T": "1"},
                                      logs=SandboxLogs())
        self.scheduler.registered(self.driver, {"value": "F-1"},
                                  {"hostname": "master", "port": 5050})

    def offer(self, offer_id: str, cpus: float = 4.0, mem: float = 4096.0,
              ports: tuple[int, int] = (31000, 31010), agent: str = "S1") -> dict[str, Any]:
        return {
            "id": {"value": offer_id}, "framework_id": {"value": "F-1"},
            "agent_id": {"value": agent}, "hostname": f"host-{agent}",
            "url": {"scheme": "http", "address": {"ip": "127.0.0.1", "port": 5051},
                    "path": "/slave(1)"},
            "resources": [
                {"name": "cpus", "type": "SCALAR", "scalar": {"value": cpus}, "role": "*"},
                {"name": "mem", "type": "SCALAR", "scalar": {"value": mem}, "role": "*"},
                {"name": "ports", "type": "RANGES", "role": "*",
                 "ranges": {"range": [{"begin": ports[0], "end": ports[1]}]}},
            ],
        }

    def submit(self, number: int) -> None:
        self.controller.submit_trial(number, {"lr": 0.01 * number, "layers": 1, "act": "relu"},
                                     priority=0)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    made = Setup(tmp_path, max_trials=10, parallelism=2)
    yield made
    made.store.close()


def env_of(task: dict[str, Any]) -> dict[str, str]:
    return {v["name"]: v["value"] for v in task["command"]["environment"]["variables"]}


def test_registration_is_recorded(setup: Setup) -> None:
    assert setup.scheduler.registered_event.is_set()
    assert setup.scheduler.framework_id == "F-1"
    assert setup.store.get_meta(meta.FRAMEWORK_ID) == "F-1"


def test_appcore_launches_first_and_trials_wait_for_it_to_attach(setup: Setup) -> None:
    setup.submit(1)
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1")])
    (task,) = setup.driver.launched()
    assert task["name"] == "appcore" and task["task_id"] == {"value": "appcore-1"}
    port = int(env_of(task)[task_env.APPCORE_PORT])
    assert 31000 <= port <= 31010  # one of the offered ports
    assert [r for r in task["resources"] if r["name"] == "ports"][0]["ranges"]["range"] == [
        {"begin": port, "end": port}]
    assert env_of(task)[task_env.FRAMEWORK_ADDR] == "10.0.0.1:5000"
    assert env_of(task)[task_env.JOB_TOKEN] == JOB_TOKEN
    launch = setup.driver.calls[0][1]
    assert launch[0] == [{"value": "O1"}] and launch[2] == {"refuse_seconds":
                                                            LEFTOVER_REFUSE_SECONDS}
    # The trial waits: AppCore has not attached, so runners would not know where to report.
    assert [t.state for t in setup.controller.trials()] == ["PENDING"]
    assert "suppress" not in setup.driver.kinds()

    setup.driver.clear()
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O2")])
    assert setup.driver.kinds() == ["decline"]  # still not attached: nothing to launch
    assert setup.driver.calls[0][1] == ([{"value": "O2"}], {"refuse_seconds": 5.0})


def test_trials_launch_once_appcore_attached(setup: Setup) -> None:
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1")])
    setup.controller.attach_appcore("host-S1:31000")
    setup.driver.clear()
    setup.submit(1)
    setup.submit(2)
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O2", cpus=1.0),
                                                  setup.offer("O3", agent="S2")])
    tasks = setup.driver.launched()
    assert [t["name"] for t in tasks] == ["trial-0001", "trial-0002"]
    first = tasks[0]
    assert first["agent_id"] == {"value": "S1"} and tasks[1]["agent_id"] == {"value": "S2"}
    env = env_of(first)
    assert env[task_env.APPCORE_ADDR] == "host-S1:31000"
    assert env[task_env.TRIAL_TOKEN] == trial_token(JOB_TOKEN, 1)
    assert env["T"] == "1"
    assert first["command"]["uris"] == URIS
    assert [t.state for t in setup.controller.trials()] == ["LAUNCHING", "LAUNCHING"]
    # Nothing waits any more: offers are suppressed.
    assert setup.driver.kinds()[-1] == "suppress"


def test_idle_offers_are_declined_long_and_suppressed_once(setup: Setup) -> None:
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1"), setup.offer("O2")])
    # AppCore took O1; O2 fitted nothing (the policy's filter); now nothing waits: suppress.
    assert setup.driver.kinds() == ["launch", "decline", "suppress"]
    assert setup.driver.calls[1] == ("decline", ([{"value": "O2"}], {"refuse_seconds": 5.0}))
    setup.controller.attach_appcore("h:1")
    setup.driver.clear()
    # Offers that were already on their way still arrive: declined, no second SUPPRESS.
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O3"), setup.offer("O4")])
    assert setup.driver.calls == [
        ("decline", ([{"value": "O3"}], {"refuse_seconds": IDLE_REFUSE_SECONDS})),
        ("decline", ([{"value": "O4"}], {"refuse_seconds": IDLE_REFUSE_SECONDS})),
    ]
    assert setup.scheduler.offers_seen == 4 and setup.scheduler.offers_declined == 3


def test_a_new_trial_revives_suppressed_offers(setup: Setup) -> None:
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1")])
    setup.controller.attach_appcore("h:1")
    assert setup.driver.kinds()[-1] == "suppress"
    setup.submit(1)  # the controller's on_pending wakes the scheduler
    assert setup.driver.kinds()[-1] == "revive"
    setup.submit(2)
    assert setup.driver.kinds().count("revive") == 1  # already revived


def test_a_failed_appcore_is_relaunched_on_the_next_offer(setup: Setup) -> None:
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1")])
    setup.controller.attach_appcore("h:1")
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O2")])  # suppresses
    setup.driver.clear()
    setup.scheduler.statusUpdate(setup.driver, task_status("appcore-1", "TASK_FAILED"))
    assert setup.driver.kinds() == ["revive", "ack"]
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O3")])
    assert [t["task_id"]["value"] for t in setup.driver.launched()] == ["appcore-2"]


def test_status_updates_are_acknowledged_after_they_are_recorded(setup: Setup) -> None:
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1")])
    setup.controller.attach_appcore("h:1")
    setup.submit(1)
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O2")])
    setup.driver.clear()
    running = task_status("trial-0001", "TASK_RUNNING")
    setup.scheduler.statusUpdate(setup.driver, running)
    assert setup.driver.calls == [("ack", running)]
    assert setup.store.task_updates("trial-0001")[-1]["state"] == "TASK_RUNNING"
    # An update without a uuid (from reconciliation) is not acknowledged.
    reconciled = task_status("trial-0001", "TASK_RUNNING")
    del reconciled["uuid"]
    setup.scheduler.statusUpdate(setup.driver, reconciled)
    assert setup.driver.kinds() == ["ack"]


def test_an_update_that_cannot_be_recorded_is_not_acknowledged(setup: Setup) -> None:
    setup.store.close()  # the database is gone: Mesos must resend the update later
    setup.scheduler.statusUpdate(setup.driver, task_status("trial-0001", "TASK_FINISHED"))
    assert "ack" not in setup.driver.kinds()


def test_a_bad_offer_is_declined_instead_of_killing_the_driver(setup: Setup) -> None:
    broken = setup.offer("O1")
    del broken["agent_id"]
    setup.scheduler.resourceOffers(setup.driver, [broken])
    assert setup.driver.calls == [("decline", ({"value": "O1"}, None))]


def test_a_master_error_ends_the_job(setup: Setup) -> None:
    setup.scheduler.error(setup.driver, "User 'root' is not allowed to run frameworks")
    assert setup.controller.outcome == (
        framework_pb2.ERROR,
        "the Mesos master refused the job: User 'root' is not allowed to run frameworks")
    assert "stop" not in setup.driver.kinds()


@pytest.mark.parametrize(("message", "says"), [
    ("Framework failed over", "another scheduler subscribed with its FrameworkID"),
    ("Framework has been removed", "the Mesos master removed it and killed its tasks"),
])
def test_a_framework_taken_away_ends_the_job_trial_by_trial(
    setup: Setup, message: str, says: str
) -> None:
    """Failed over by someone else or removed: the driver stops without TEARDOWN (it would
    otherwise subscribe again), the job ends FRAMEWORK_LOST and no trial stays in flight."""
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1")])
    setup.controller.attach_appcore("h:1")
    for number in (1, 2):
        setup.submit(number)
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O2")])
    setup.scheduler.statusUpdate(setup.driver, task_status("trial-0001", "TASK_RUNNING"))
    setup.submit(3)  # waits for an offer
    setup.driver.clear()

    setup.scheduler.error(setup.driver, message)

    assert setup.driver.calls == [("stop", True)]
    outcome, why = setup.controller.outcome or (0, "")
    assert outcome == framework_pb2.FRAMEWORK_LOST
    assert why.startswith("the framework was taken away: ") and says in why and "\n" not in why
    assert setup.scheduler.framework_lost == why
    states = {t.number: (t.state, t.message) for t in setup.controller.trials()}
    assert states[1] == ("KILLED", f"its task's end is unknown: {why}")
    assert states[2] == ("KILLED", f"its task's end is unknown: {why}")  # launched
    assert states[3][0] == "KILLED"  # never launched
    assert setup.controller.tasks.live_task_ids() == []
    assert setup.store.appcore_runs()[-1]["state"] == "TASK_KILLED"


def test_reregistration_reconciles_and_forgets_suppression(setup: Setup) -> None:
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1")])
    setup.controller.attach_appcore("h:1")
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O2")])
    setup.driver.clear()
    live = setup.controller.tasks.live_tasks()
    assert live  # AppCore and the trials launched on O1 and O2
    setup.scheduler.reregistered(setup.driver, {"hostname": "master2"})
    # By id first (a restarted master answers for tasks it does not know), then implicitly.
    assert setup.driver.calls == [
        ("reconcile", [{"task_id": {"value": task}, "agent_id": {"value": agent}}
                       for task, agent in live]),
        ("reconcile", []),
    ]
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O3")])
    assert setup.driver.kinds()[-1] == "suppress"  # suppressed again after the re-subscribe


def test_unreachable_tasks_are_reconciled_with_their_agent_ids(setup: Setup) -> None:
    """Without the agent id a Mesos 1.11 master answers a task of an unreachable agent
    TASK_UNKNOWN, not TASK_UNREACHABLE (``Master::_reconcileTasks``): the RECONCILE carries
    it, though pymesos' reconcileTasks would drop it."""
    setup.scheduler.reconcile([("trial-0001", "S7"), ("appcore-1", "S8")])
    assert setup.driver.calls == [("reconcile", [
        {"task_id": {"value": "trial-0001"}, "agent_id": {"value": "S7"}},
        {"task_id": {"value": "appcore-1"}, "agent_id": {"value": "S8"}}])]
    setup.driver.clear()
    setup.scheduler.reconcile([])
    assert setup.driver.calls == []


def test_a_resumed_framework_kills_the_tasks_its_predecessor_timed_out(
        tmp_path: Path) -> None:
    """Its predecessor recorded trial 1 timed out and died before the kill reached the task:
    the resumed framework reconciles the task and kills it, once."""
    first = Setup(tmp_path, max_trials=10, parallelism=2, trial_timeout=1.0)
    first.submit(1)
    first.scheduler.resourceOffers(first.driver, [first.offer("O1")])
    first.controller.attach_appcore("h:1")
    first.scheduler.resourceOffers(first.driver, [first.offer("O2")])
    (task,) = [t.task_id for t in first.controller.trials() if t.task_id]
    first.controller.on_status(task_status(task, "TASK_RUNNING"))
    assert first.controller.expire_trials(now=time.time() + 5.0) == [task]
    first.store.close()  # killed -9 before it killed the task
    resumed = Setup(tmp_path, max_trials=10, parallelism=2, trial_timeout=1.0)
    try:
        resumed.driver.clear()
        resumed.scheduler.reregistered(resumed.driver, {"hostname": "master"})
        reconciled = [call for call in resumed.driver.calls if call[0] == "reconcile"]
        assert {"task_id": {"value": task}, "agent_id": {"value": "S1"}} in reconciled[0][1]
        assert resumed.driver.calls[-1] == ("kill", {"value": task})
        resumed.driver.clear()
        resumed.scheduler.reregistered(resumed.driver, {"hostname": "master"})
        assert [c for c in resumed.driver.calls if c[0] == "kill"] == []  # once
    finally:
        resumed.store.close()


def test_kill(setup: Setup) -> None:
    setup.scheduler.kill(["trial-0001", "appcore-1"])
    assert setup.driver.calls == [("kill", {"value": "trial-0001"}),
                                  ("kill", {"value": "appcore-1"})]


def test_a_trial_that_arrives_just_after_resources_were_filtered_revives(setup: Setup) -> None:
    """The rest of an accepted offer is filtered until the master's next batch allocation (a
    0 s filter); a trial that AppCore submits a moment later REVIVEs rather than waiting for
    that batch, once, and not when nothing was filtered lately."""
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1", cpus=0.5)])
    setup.controller.attach_appcore("h:1")
    setup.submit(1)
    setup.submit(2)
    setup.driver.clear()
    # Room for trial 1 only: the rest of O2 is filtered, trial 2 still waits (no suppress).
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O2", cpus=1.5)])
    assert setup.driver.kinds() == ["launch"]
    setup.submit(3)
    assert setup.driver.kinds() == ["launch", "revive"]
    setup.submit(4)  # the filters are already cleared
    assert setup.driver.kinds() == ["launch", "revive"]


class YieldingPolicy(FifoPolicy):
    """FIFO that declines every offer on purpose (as the dynamic policies do when the job
    should yield), with a long filter."""

    def plan(self, offers: Any, requests: Any) -> Plan:
        return Plan(refuse_seconds={o.id: 30.0 for o in offers},
                    deliberate={o.id for o in offers})


def test_no_revive_while_the_policy_yields_on_purpose(tmp_path: Path) -> None:
    made = Setup(tmp_path, max_trials=10, parallelism=2)
    try:
        made.scheduler.resourceOffers(made.driver, [made.offer("O1", cpus=0.5)])
        made.controller.attach_appcore("h:1")
        made.submit(1)
        made.scheduler._policy = YieldingPolicy()
        made.driver.clear()
        made.scheduler.resourceOffers(made.driver, [made.offer("O2")])
        assert made.driver.calls == [("decline", ([{"value": "O2"}], {"refuse_seconds": 30.0}))]
        made.submit(2)
        assert "revive" not in made.driver.kinds()  # the yield's filter stands
    finally:
        made.store.close()
