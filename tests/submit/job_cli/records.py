"""A job recorded under ``$DISAUTO_HOME/jobs/<id>``, as ``da-job`` finds it (no process).

Its trials are :class:`tests.framework.webui.records.Recorded`'s (a controller over a real
store: completed 1-5 with steps, 6 pruned, 7 failed, 8 running, 9 pending; AppCore's task
``appcore-1``); its state is what
``da-job`` reads from the record and the recorded process: ``running`` names this test's own
(alive) process, ``interrupted`` a process that is gone, ``ended`` an ended record.
"""

from __future__ import annotations

import os
from pathlib import Path
import socket
import time

from disauto.common import paths
from disauto.common.processes import start_time
from tests.framework.webui.records import Recorded
from tests.inprocess import AGENT


class JobRecord(Recorded):
    """A job in ``home`` named ``job_id``, ``running``, ``interrupted`` or ``ended``."""

    def __init__(self, home: Path, job_id: str, state: str = "running", *,
                 completed: int = 5, outcome: str = "BUDGET_SPENT",
                 message: str = "the budget of 20 trials is spent") -> None:
        super().__init__(home / "jobs" / job_id, completed=completed)
        self.job_id = job_id
        alive = state == "running"
        meta = {"job_id": job_id, "host": socket.gethostname(),
                "pid": str(os.getpid() if alive else 999_999_999),
                "pid_start": start_time(os.getpid()) if alive else "",
                "master": "127.0.0.1:5050",
                "framework_id": "04fbafe2-db01-4433-89a2-0b6909d05e8e-0000"}
        if state == "ended":
            meta.update({"state": "ENDED", "outcome": outcome, "outcome_message": message,
                         "ended_at": str(time.time())})
        self.store.set_meta_many(meta)
        self.store.add_appcore_run(1, "appcore-1", AGENT)

    def log(self, task: str, stream: str, text: str) -> Path:
        """Write ``text`` as the job folder's copy of ``task``'s ``stream``."""
        path = self.folder / paths.TASK_LOGS / f"{task}.{stream}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path
