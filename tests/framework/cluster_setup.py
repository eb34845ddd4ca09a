"""A job's framework on a production-like Mesos 1.11 cluster, in-process: the real controller,
store, FIFO policy and scheduler fed what the master sends (``tests/framework/mesos_1_11.py``)
through the callbacks pymesos calls, its calls kept by a recording driver with pymesos 0.3.15's
method names. Nothing listens or connects: these are unit tests.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from disauto.framework._job import JobController
from disauto.framework._scheduler import JobScheduler
from disauto.framework._slots import SlotTable
from disauto.framework._spec import JobConfig
from disauto.framework._spec import TaskResources
from disauto.framework._store import JobStore
from disauto.framework.policies import FifoPolicy
from disauto.framework.policies import create_policy
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import job_config
from tests.framework import mesos_1_11 as mesos
from tests.framework.test_scheduler import RecordingDriver


class ClusterDriver(RecordingDriver):
    """Records the calls, the inverse offers' and the raw SHUTDOWN too."""

    def acceptInverseOffers(self, offer_ids: Any, filters: Any = None) -> None:  # noqa: N802
        self.calls.append(("accept_inverse", (offer_ids, filters)))

    def declineInverseOffer(self, offer_ids: Any, filters: Any = None) -> None:  # noqa: N802
        self.calls.append(("decline_inverse", (offer_ids, filters)))

    def _send(self, body: dict[str, Any]) -> None:
        self.calls.append((str(body["type"]).lower(), body))

    def of(self, kind: str) -> list[Any]:
        return [arguments for name, arguments in self.calls if name == kind]


class Cluster:
    """One job on the cluster.

    Args:
        job_dir: the job's folder.
        roles: ``--role``.
        warm: ``--slot-mode warm``.
        policy: ``--offer-policy`` (by default FIFO with a 5 s decline filter).
        changes: other JobConfig fields.
    """

    def __init__(self, job_dir: Path, *, roles: tuple[str, ...] = (), gpus: int = 0,
                 warm: bool = False, max_trials: int = 10, parallelism: int = 2,
                 policy: str = "", **changes: Any) -> None:
        self.store = JobStore(job_dir / "job.db")
        self.driver = ClusterDriver()
        base = job_config(max_trials=max_trials, parallelism=parallelism)
        self.config: JobConfig = replace(
            base, roles=roles, runner=TaskResources(cpus=1.0, mem_mb=512.0, gpus=gpus),
            appcore=TaskResources(cpus=0.5, mem_mb=256.0),
            slot_mode="warm" if warm else "task", **changes)
        self.killed: list[str] = []
        self.controller = JobController(self.config, self.store, JOB_TOKEN,
                                        on_pending=lambda: self.scheduler.wake(),
                                        on_kill=self.killed.extend)
        slots = SlotTable(self.config.job_id) if warm else None
        chosen = create_policy(policy, runner=self.config.runner) if policy \
            else FifoPolicy(decline_seconds=5.0)
        self.scheduler = JobScheduler(self.controller, chosen,
                                      "10.0.0.1:5000", slots=slots,
                                      executor_command="python3 -m disauto.executor")
        self.scheduler.registered(self.driver, {"value": mesos.FRAMEWORK_ID},
                                  {"hostname": "master", "port": 5050})

    def submit(self, *numbers: int) -> None:
        self.controller.submit_trials([(n, {"lr": 0.01 * n, "layers": 1, "act": "relu"}, 0)
                                       for n in numbers])

    def start_appcore(self, offer: dict[str, Any]) -> dict[str, Any]:
        """AppCore launched on ``offer`` and attached; its task."""
        self.scheduler.resourceOffers(self.driver, [offer])
        (task,) = [t for t in self.driver.launched() if t["name"] == "appcore"]
        self.controller.attach_appcore("host:31000")
        self.driver.clear()
        return task

    def offers(self, *offers: dict[str, Any]) -> list[dict[str, Any]]:
        """The tasks launched on ``offers``."""
        self.driver.clear()
        self.scheduler.resourceOffers(self.driver, list(offers))
        return self.driver.launched()

    def update(self, status: dict[str, Any]) -> None:
        self.scheduler.statusUpdate(self.driver, status)

    def trial(self, number: int) -> Any:
        """Trial ``number`` as the record holds it (the store, not the controller's copy)."""
        return self.store.trial(number)
