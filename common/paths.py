"""Where DisAuto keeps its jobs: ``$DISAUTO_HOME`` (default ``~/.disauto``), one folder a job.

``da-submit`` writes a job's folder and every command that reads jobs finds it here; the names
of the files in it are defined once.
"""

from __future__ import annotations

import os
from pathlib import Path


JOB_DB = "job.db"
"""The job's SQLite record (:mod:`framework._store`)."""
LOG = "da-submit.log"
"""The log of the process that ran the job."""
RESULTS_JSON = "results.json"
RESULTS_CSV = "results.csv"
REPORT = "report.html"
"""The job page as one self-contained file, written when the job ends (:mod:`framework.webui`)."""
TASK_LOGS = "logs"
"""Each task's stdout and stderr, copied while it runs (:mod:`framework._log_collector`)."""
CLUSTER = "cluster"
"""The embedded cluster's sandboxes, for ``--master local``."""
TOKEN = "job.token"
"""The job's token (mode 0600): a resumed framework must still recognize AppCore and runners."""
LOCK = "job.lock"
"""Locked by the one process that runs the job's framework (:mod:`submit.job_lock`)."""
DETACHED_OUT = "da-submit.out"
"""What a detached ``da-submit`` prints (``--detach``)."""
TLS = "tls"
"""The folder (0700) of the job's TLS certificate and private key (``da-submit --tls``)."""
TLS_CERT = "cert.pem"
"""The framework's certificate (PEM) in ``TLS``."""
TLS_KEY = "key.pem"
"""Its private key (PEM, 0600) in ``TLS``: it never leaves the job folder."""
CHECKPOINTS = "checkpoints"
"""The trials' checkpoints uploaded to the framework, one folder a trial
(:mod:`common.checkpoints`)."""
SHIPPED = "shipped"
"""In an exported job (``da-job export``): the files it shipped to its tasks (``--files``), as
they were when it was exported."""
IMPORTED = "imported.json"
"""In an imported job's folder (``da-job import``): the archive's manifest, where and when it
was exported and when imported."""


def disauto_home() -> Path:
    """``$DISAUTO_HOME``, or ``~/.disauto``: always absolute (a relative ``$DISAUTO_HOME`` is
    taken from the current directory)."""
    return Path(os.environ.get("DISAUTO_HOME") or Path.home() / ".disauto").expanduser().absolute()


def pin_disauto_home() -> None:
    """Make a relative ``$DISAUTO_HOME`` absolute in this process's environment, once, before
    anything uses it: every process started from here (the embedded cluster's executors, which
    run in their sandboxes, a detached ``da-submit``, AppCore) then finds the same folder, from
    whatever directory it runs in."""
    if os.environ.get("DISAUTO_HOME"):
        os.environ["DISAUTO_HOME"] = str(disauto_home())


def jobs_dir() -> Path:
    """The folder of every job's folder."""
    return disauto_home() / "jobs"


def job_dir(job_id: str) -> Path:
    """One job's folder (not created here)."""
    return jobs_dir() / job_id
