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
from typing import Any

from disauto.common import paths
from disauto.common.processes import start_time
from disauto.framework import _meta as meta
from disauto.testing.inprocess import AGENT
from tests.framework.webui.records import Recorded


class JobRecord(Recorded):
    """A job in ``home`` named ``job_id``, ``running``, ``interrupted`` or ``ended``."""

    def __init__(self, home: Path, job_id: str, state: str = "running", *,
                 completed: int = 5, outcome: str = "BUDGET_SPENT",
                 message: str = "the budget of 20 trials is spent") -> None:
        super().__init__(home / "jobs" / job_id, completed=completed)
        self.job_id = job_id
        alive = state == "running"
        values: dict[meta.MetaKey[Any], Any] = {
            meta.JOB_ID: job_id, meta.HOST: socket.gethostname(),
            meta.PID: os.getpid() if alive else 999_999_999,
            meta.PID_START: start_time(os.getpid()) if alive else "",
            meta.MASTER: "127.0.0.1:5050",
            meta.FRAMEWORK_ID: "04fbafe2-db01-4433-89a2-0b6909d05e8e-0000"}
        if state == "ended":
            values.update({meta.STATE: meta.ENDED, meta.OUTCOME: outcome,
                           meta.OUTCOME_MESSAGE: message, meta.ENDED_AT: time.time()})
        self.store.set_meta_many(values)
        self.store.add_appcore_run(1, "appcore-1", AGENT)

    def log(self, task: str, stream: str, text: str) -> Path:
        """Write ``text`` as the job folder's copy of ``task``'s ``stream``."""
        path = self.folder / paths.TASK_LOGS / f"{task}.{stream}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path
