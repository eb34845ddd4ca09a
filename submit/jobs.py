"""The jobs under ``$DISAUTO_HOME``, read from their records: what ``da-job`` shows and acts on.

A job's state comes from its record and its process: ``running`` while the process that runs its
framework (recorded pid and start time, on this host) is alive; ``ended`` once the record says
so, with its outcome; ``interrupted`` when neither holds (the framework died: ``da-job resume``
carries it on). Job ids may be abbreviated to any unique prefix.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from dataclasses import field
from functools import cached_property
import json
from pathlib import Path
import socket
import sqlite3
import time
from typing import Any
from urllib.error import HTTPError
from urllib.request import urlopen

from disauto.common import paths
from disauto.common.master_http import master_request
from disauto.common.objectives import is_feasible
from disauto.common.processes import is_running
from disauto.common.trial_state import TrialState
from disauto.common.zk_masters import ZooKeeperError
from disauto.common.zk_masters import is_zk
from disauto.common.zk_masters import resolve_master
from disauto.framework.control import Answer
from disauto.framework.control import Request
from disauto.framework.record import JobConfig
from disauto.framework.record import JobMeta
from disauto.framework.record import JobRecord
from disauto.framework.record import StoreError
from disauto.framework.record import TrialRow
from disauto.framework.record import meta as meta_keys
from disauto.framework.record import sorted_trials
from disauto.protos import common_pb2


class JobLookupError(LookupError):
    """No job, or more than one, matches what was asked for (the message says which)."""


class UnreadableRecordError(ValueError):
    """A job's record cannot be read (corrupt, truncated, not a database): the message names
    it, in one line. The record is left as it is."""

    def __init__(self, job_id: str, folder: Path, why: str) -> None:
        super().__init__(f"the record of job {job_id} is unreadable: {folder / paths.JOB_DB}: "
                         f"{why} (left as it is)")
        self.job_id = job_id
        self.folder = folder
        self.why = why


@dataclass
class Job:
    """One job folder and what its record says."""

    job_id: str
    folder: Path
    meta: JobMeta
    trials: list[TrialRow]
    appcore_run: dict[str, Any] = field(default_factory=dict)
    """AppCore's latest run as recorded (task_id, address, state, agent_id...); empty before
    its first launch."""

    @cached_property
    def config(self) -> JobConfig:
        config = self.meta[meta_keys.CONFIG]
        if config is None:
            raise ValueError(f"{self.folder} holds no job configuration")
        return config

    @property
    def maximize(self) -> bool:
        return self.config.search.direction != common_pb2.MINIMIZE

    @property
    def state(self) -> str:
        """``running``, ``ended`` or ``interrupted``."""
        if self.meta[meta_keys.STATE] == meta_keys.ENDED:
            return "ended"
        if self.alive:
            return "running"
        return "interrupted"

    @property
    def alive(self) -> bool:
        pid = self.meta[meta_keys.PID]
        return (pid > 0 and self.meta[meta_keys.HOST] == socket.gethostname()
                and is_running(pid, self.meta[meta_keys.PID_START]))

    @property
    def outcome(self) -> str:
        return self.meta[meta_keys.OUTCOME]

    def best(self) -> TrialRow | None:
        ranked = sorted_trials(self.trials, self.maximize)
        first = ranked[0] if ranked else None
        return first if first is not None and first.state == TrialState.COMPLETED \
            and is_feasible(first.constraints) else None

    def counts(self) -> dict[str, int]:
        counted = Counter(str(t.state) for t in self.trials)
        return {str(state): counted.get(str(state), 0) for state in TrialState}

    def started(self) -> float:
        return self.meta[meta_keys.STARTED_AT] or 0.0

    def duration(self) -> float:
        stop = self.meta[meta_keys.ENDED_AT] or time.time()
        return max(0.0, stop - self.started()) if self.started() else 0.0

    def summary(self) -> dict[str, Any]:
        """One row of ``da-job list`` (``--json``)."""
        config = self.config
        best = self.best()
        done = sum(1 for t in self.trials if t.state.is_finished())
        return {
            "job_id": self.job_id, "name": config.app_name, "state": self.state,
            "outcome": self.outcome, "done": done, "budget": int(config.search.max_trials),
            "parallelism": int(config.search.parallelism),
            "objective": config.search.objective,
            "best": None if best is None else {"trial": best.number, "value": best.objective},
            "started_at": self.started(), "duration_seconds": round(self.duration(), 1),
        }


def load(folder: Path) -> Job:
    """The job recorded in ``folder``.

    Raises:
        JobLookupError: the folder holds no job record.
        UnreadableRecordError: it holds one that cannot be read.
    """
    db = folder / paths.JOB_DB
    if not db.is_file():
        raise JobLookupError(f"{folder} holds no job record ({paths.JOB_DB})")
    try:
        record = JobRecord.open(db)
    except StoreError as err:
        raise UnreadableRecordError(folder.name, folder, _cause(err)) from None
    try:
        meta = record.meta()
        trials = record.trials()
        runs = record.appcore_runs()
    except (sqlite3.DatabaseError, ValueError, KeyError) as err:  # a page of it is garbage
        raise UnreadableRecordError(folder.name, folder, _cause(err)) from None
    finally:
        record.close()
    if not meta.has(meta_keys.CONFIG):
        raise JobLookupError(f"{folder} holds no job record (no configuration recorded)")
    return Job(meta[meta_keys.JOB_ID] or folder.name, folder, meta, trials,
               runs[-1] if runs else {})


def _cause(err: Exception) -> str:
    """What SQLite said, without the store's own preamble."""
    text = str(err)
    return text.rsplit(": ", 1)[-1] if text.startswith("cannot open job store") else text


def all_jobs() -> list[Job]:
    """Every job under ``$DISAUTO_HOME`` whose record can be read, oldest first."""
    return scan()[0]


def scan() -> tuple[list[Job], list[UnreadableRecordError]]:
    """Every job under ``$DISAUTO_HOME``, oldest first, and the records that cannot be read
    (by folder name): one bad record hides no other job."""
    root = paths.jobs_dir()
    if not root.is_dir():
        return [], []
    jobs, unreadable = [], []
    for folder in sorted(root.iterdir()):
        if folder.name.startswith("."):
            continue  # not a job: da-job import's or rm's folder, on its way in or out
        try:
            jobs.append(load(folder))
        except UnreadableRecordError as err:
            unreadable.append(err)
        except (JobLookupError, ValueError, OSError):
            continue  # a folder being created, or not a job's
    return sorted(jobs, key=lambda job: (job.started(), job.job_id)), unreadable


def find(prefix: str) -> Job:
    """The job whose id starts with ``prefix``.

    Raises:
        JobLookupError: none, or several (naming them).
    """
    root = paths.jobs_dir()
    names = sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) \
        if root.is_dir() else []
    if prefix in names:
        return load(root / prefix)
    matches = [name for name in names if name.startswith(prefix)] if prefix else []
    if not matches:
        raise JobLookupError(f"no job {prefix!r} under {root} (da-job list shows them)")
    if len(matches) > 1:
        raise JobLookupError(f"job id {prefix!r} is ambiguous: it starts "
                             f"{', '.join(matches[:5])}{' ...' if len(matches) > 5 else ''}")
    return load(root / matches[0])


def ask(job: Job, request: Request, wait: float) -> Answer:
    """Ask the running ``job`` through its record's control channel and wait up to ``wait``
    seconds for its typed answer.

    Raises:
        NoAnswerError: the job stopped running first, or did not answer in time.
    """
    with JobRecord.in_folder(job.folder) as record:
        channel = record.control()
        return channel.wait(channel.ask(request), wait,
                            running=lambda: find(job.job_id).state == "running")


class MasterQueryError(ConnectionError):
    """A master could not be asked for its frameworks (the message says why, in one line)."""


def master_frameworks(master: str, principal: str | None = None, secret: str | None = None,
                      timeout: float = 5.0) -> list[dict[str, Any]]:
    """The frameworks a Mesos master knows, active and completed, as ``da-job list --master``
    shows them: id, name, state, running tasks and, for DisAuto's, the job id of its label.

    Raises:
        MasterQueryError: the master is unreachable, refuses us or answers nonsense.
    """
    if is_zk(master):
        try:
            address = resolve_master(master, timeout)
        except (ValueError, ZooKeeperError) as err:
            raise MasterQueryError(f"{err}; check --master") from None
    else:
        address = master.split("://", 1)[-1].rstrip("/")
        if ":" not in address:
            address += ":5050"
    request = master_request(f"http://{address}/master/frameworks", principal or "",
                             secret or "")
    try:
        with urlopen(request, timeout=timeout) as response:  # noqa: S310 - the user's master
            body = json.loads(response.read())
    except HTTPError as err:
        if err.code == 401:
            raise MasterQueryError(f"the Mesos master at {address} requires authentication for "
                                   "/master/frameworks; give --principal and --secret-file"
                                   ) from None
        raise MasterQueryError(f"the Mesos master at {address} answered HTTP {err.code} for "
                               "/master/frameworks") from None
    except (OSError, ValueError) as err:
        raise MasterQueryError(f"cannot reach the Mesos master at {address} ({err}); check "
                               "--master") from None
    if not isinstance(body, dict):
        raise MasterQueryError(f"the Mesos master at {address} answered no frameworks object")
    rows = []
    for key, completed in (("frameworks", False), ("completed_frameworks", True)):
        for framework in body.get(key) or []:
            if isinstance(framework, dict):
                rows.append(_framework_row(framework, completed))
    return rows


def _framework_row(framework: dict[str, Any], completed: bool) -> dict[str, Any]:
    labels = {str(label.get("key")): str(label.get("value", ""))
              for label in framework.get("labels") or [] if isinstance(label, dict)}
    if completed:
        state = "completed"
    else:
        state = "active" if framework.get("active") else "inactive (disconnected)"
    tasks = framework.get("tasks") or []
    return {
        "framework_id": str(framework.get("id", "")),
        "name": str(framework.get("name", "")),
        "state": state,
        "running_tasks": sum(1 for t in tasks
                             if isinstance(t, dict) and t.get("state") == "TASK_RUNNING"),
        "job_id": labels.get("disauto.job", ""),
        "webui_url": str(framework.get("webui_url", "")),
    }
