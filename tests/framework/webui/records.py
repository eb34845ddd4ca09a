"""A constructed job record for the job page's tests: a controller over a real SQLite store,
driven as the scheduler and AppCore would (no server, no process)."""

from __future__ import annotations

from pathlib import Path
import time

from disauto.common.report import Report
from disauto.framework.job import JobController
from disauto.framework.store import JobStore
from disauto.framework.tasks import trial_task_id
from disauto.protos import common_pb2
from tests.inprocess import AGENT
from tests.inprocess import job_config
from tests.inprocess import task_status


TOKEN = "job-token-for-tests"


def assignment(i: int) -> dict[str, object]:
    return {"lr": 0.001 * (i + 1), "layers": 1 + i % 4, "act": "relu" if i % 2 else "tanh"}


class Recorded:
    """A job with trials in every interesting state, recorded in ``folder/job.db``.

    Trials 1-5 completed (accuracy 0.5 + 0.1*i, with steps 0 and 1), 6 pruned after two
    steps, 7 failed, 8 running (one step reported), 9 pending.
    """

    def __init__(self, folder: Path, *, completed: int = 5,
                 direction: int = common_pb2.MAXIMIZE) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "job.token").write_text(TOKEN)
        self.folder = folder
        self.store = JobStore(folder / "job.db")
        self.config = job_config(max_trials=20, parallelism=4, target=0.99,
                                 direction=direction,
                                 settings={"backend": "tpe"}, early_stopping="median")
        self.store.set_meta_many({"config": self.config.to_json(), "job_id": "job-test",
                                  "offer_policy": "dynamic", "started_at": str(time.time() - 60),
                                  "state": "RUNNING"})
        self.killed: list[list[str]] = []
        self.controller = JobController(self.config, self.store, TOKEN,
                                        on_kill=self.killed.append, prune_grace=60)
        total = completed + 4
        self.controller.submit_trials([(i, assignment(i), 0) for i in range(1, total + 1)])
        for number in range(1, completed + 1):
            self.run(number)
            for step in (0, 1):
                self.report(number, 0.3 + 0.05 * number + 0.1 * step, step=step)
            self.report(number, 0.5 + 0.1 * number / completed, final=True)
            self.status(number, "TASK_FINISHED")
        pruned, failed, running = completed + 1, completed + 2, completed + 3
        self.run(pruned)
        self.report(pruned, 0.1, step=0)
        self.report(pruned, 0.12, step=1)
        self.controller.prune_trial(pruned, "stopped early by the median rule")
        self.status(pruned, "TASK_KILLED")
        self.run(failed)
        self.status(failed, "TASK_FAILED", message="exited with status 1")
        self.run(running)
        self.report(running, 0.2, step=0)
        self.running, self.pending = running, completed + 4

    def run(self, number: int) -> None:
        self.controller.trial_launched(number, trial_task_id(number, 0), AGENT)
        self.status(number, "TASK_RUNNING")

    def status(self, number: int, state: str, **extra: str) -> None:
        self.controller.on_status(task_status(trial_task_id(number, 0), state, **extra))

    def report(self, number: int, value: float, *, step: int | None = None,
               final: bool = False) -> None:
        self.controller.record_report(Report(number, {"accuracy": value}, step, final, 1.0))
