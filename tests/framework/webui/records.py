"""A constructed job record for the job page's tests: a controller over a real SQLite store,
driven as the scheduler and AppCore would (no server, no process)."""

from __future__ import annotations

from contextlib import closing
import http.client
import json
from pathlib import Path
import sqlite3
import time
from typing import Any

from disauto.common import telemetry
from disauto.common.report import Report
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.telemetry import Sample
from disauto.common.telemetry import TrialUsage
from disauto.framework import _meta as meta
from disauto.framework._job import JobController
from disauto.framework._store import JobStore
from disauto.framework._tasks import trial_task_id
from disauto.protos import common_pb2
from disauto.testing.inprocess import AGENT
from disauto.testing.inprocess import DEFAULT_SPACE
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import task_status


TOKEN = "job-token-for-tests"


def assignment(i: int, extra: int = 0) -> dict[str, object]:
    return {"lr": 0.001 * (i + 1), "layers": 1 + i % 4, "act": "relu" if i % 2 else "tanh",
            **{extra_name(k): (i * 7 + k) % 10 / 10 for k in range(extra)}}


def extra_name(k: int) -> str:
    """The name of the ``k``-th extra parameter (long, as real ones can be)."""
    return f"regularization_strength_{k}"


class Recorded:
    """A job with trials in every interesting state, recorded in ``folder/job.db``.

    Trials 1-5 completed (accuracy 0.5 + 0.1*i, with steps 0 and 1), 6 pruned after two
    steps, 7 failed, 8 running (one step reported), 9 pending.
    """

    def __init__(self, folder: Path, *, completed: int = 5,
                 direction: int = common_pb2.MAXIMIZE, extra: int = 0, agent: str = AGENT,
                 failure: str = "exited with status 1", failure_reason: str = "",
                 budget: int = 20) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "job.token").write_text(TOKEN)
        self.folder = folder
        self.store = JobStore(folder / "job.db")
        space = SearchSpace((*DEFAULT_SPACE, *(RealParam(extra_name(k), 0.0, 1.0)
                                               for k in range(extra))))
        self.config = job_config(max_trials=budget, parallelism=4, target=0.99,
                                 direction=direction, space=space,
                                 settings={"backend": "tpe"}, early_stopping="median")
        self.store.set_meta_many({meta.CONFIG: self.config, meta.JOB_ID: "job-test",
                                  meta.OFFER_POLICY: "dynamic",
                                  meta.STARTED_AT: time.time() - 60, meta.STATE: meta.RUNNING})
        self.killed: list[list[str]] = []
        self.agent = agent
        self.controller = JobController(self.config, self.store, TOKEN,
                                        on_kill=self.killed.append, prune_grace=60)
        total = completed + 4
        self.controller.submit_trials([(i, assignment(i, extra), 0)
                                       for i in range(1, total + 1)])
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
        self.status(failed, "TASK_FAILED", message=failure, reason=failure_reason)
        self.run(running)
        self.report(running, 0.2, step=0)
        self.running, self.pending = running, completed + 4

    def run(self, number: int) -> None:
        self.controller.trial_launched(number, trial_task_id(number, 0), self.agent)
        self.status(number, "TASK_RUNNING")

    def status(self, number: int, state: str, **extra: str) -> None:
        self.controller.on_status(task_status(trial_task_id(number, 0), state,
                                              agent_id=self.agent, **extra))

    def report(self, number: int, value: float, *, step: int | None = None,
               final: bool = False) -> None:
        self.controller.record_report(Report(number, {"accuracy": value}, step, final, 1.0))


class Client:
    """Real HTTP requests to a page server on this machine; JSON answers decoded."""

    def __init__(self, port: int) -> None:
        self.port = port

    def request(self, method: str, path: str, body: bytes | None = None,
                token: str | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        headers = dict(headers or {})
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        connection.close()
        kind = response.getheader("Content-Type", "")
        data = json.loads(raw) if kind == "application/json" else raw
        return response.status, data, dict(response.getheaders())


def record_pace(recorded: Recorded, now: float) -> None:
    """Trials 1-7 ran 60 s each: trial 1 long ago (ended ``now`` - 940), 2-7 one after another,
    the last ending ``now`` - 30; the running trial 8 started ``now`` - 100.

    Its pace holds still for minutes, however slow the test: 6 trials ended in the last 10
    minutes (0.6 a minute); trials of 60 s, 4 more expected (the target's estimate:
    max(parallelism 4, 5 completed) - 1 running), and trial 8 already past the mean (nothing
    left of it): 4 x 60 s over 4 slots, an ETA of 60 s.
    """
    ends = {1: now - 940, **{n: now - 30 - 60 * (7 - n) for n in range(2, 8)}}
    for number, end in ends.items():
        recorded.store.update_trial(number, started_at=end - 60, ended_at=end)
    recorded.store.update_trial(recorded.running, started_at=now - 100, ended_at=None)


def record_telemetry(recorded: Recorded, start: float | None = None) -> None:
    """Samples of memory and CPU for trials 1-8 (ten each, a second apart, on ``AGENT``, from
    ``start + 100 * trial``; ``start`` defaults to when the job started), one node-wide figure on
    another agent, and the usage of the completed trials 1-5."""
    if start is None:
        start = (recorded.store.get_meta(meta.STARTED_AT) or 0.0) - 100.0
    samples: list[Sample] = []
    for trial in range(1, recorded.running + 1):
        for i in range(10):
            when = start + trial * 100 + i
            samples.append(Sample(telemetry.MEM_RSS, AGENT, when, (trial * 10 + i) * 2**20,
                                  trial))
            samples.append(Sample(telemetry.CPU_UTILIZATION, AGENT, when, 0.1 * (i % 5),
                                  trial))
    samples.append(Sample(telemetry.AGENT_CPU_UTILIZATION, "agent-2", start, 0.25))
    recorded.controller.add_samples(samples)
    for trial in range(1, 6):  # as telemetry keeps it: through the controller, into the store
        recorded.controller.set_trial_usage(trial, TrialUsage(
            peak_rss_bytes=(trial * 10 + 9) * 2**20, mean_rss_bytes=(trial * 10 + 4.5) * 2**20,
            cpu_seconds=2.0 * trial, mean_gpu_utilization=None if trial % 2 else 40.0 + trial))


PARETO_POINTS = {1: (0.70, 10.0), 2: (0.80, 20.0), 3: (0.75, 25.0), 4: (0.90, 40.0),
                 5: (0.60, 30.0), 6: (0.95, 15.0), 7: (0.85, 35.0), 8: (0.65, 50.0)}
"""(accuracy, latency) of the completed trials of :class:`ParetoRecorded`."""
INFEASIBLE = 6
"""Its trial whose constraint is above 0: it would dominate most others if it were feasible."""
PARETO_FRONT = (1, 2, 7, 4)
"""Its front, in the order of accuracy (trial 6 is off it, infeasible)."""
OUTLIER_POINTS = {**PARETO_POINTS, INFEASIBLE: (0.95, 200.0)}
"""The same trials with the infeasible one an outlier: latency 200 against a front of 10 to 40
(issue 36: it flattened the plot)."""


CONDITIONAL_SPACE = SearchSpace((*DEFAULT_SPACE, RealParam("momentum", 0.5, 0.99)),
                                {"momentum": {"act": "relu"}})
"""The default space and a bound ``momentum`` searched only with ``act`` relu."""


def conditional_assignment(i: int) -> dict[str, object]:
    """:func:`assignment` in :data:`CONDITIONAL_SPACE`: a momentum of 16 digits where act is relu
    (odd ``i``), none where it is tanh."""
    return {**assignment(i), **({"momentum": 0.5 + i / 21} if i % 2 else {})}


class ParetoRecorded:
    """A job of two objectives (accuracy up, latency down) with a constraint and
    ``--trial-retries 1``, recorded in ``folder/job.db`` through a controller as the scheduler
    and AppCore would drive it: trials 1-8 completed at :data:`PARETO_POINTS` (6 infeasible; 8
    on its second try, its first failed), 9 failed on both tries, 10 running.

    With ``objectives`` three (a third, ``size``, minimized) every completed trial reports
    ``size`` too (10 minus its number): every feasible one is then on the front. With
    ``conditional`` its space is :data:`CONDITIONAL_SPACE`."""

    def __init__(self, folder: Path, *, objectives: int = 2, state: str = meta.RUNNING,
                 points: dict[int, tuple[float, float]] | None = None,
                 conditional: bool = False) -> None:
        from dataclasses import replace

        from disauto.common.objectives import Objectives

        folder.mkdir(parents=True, exist_ok=True)
        (folder / "job.token").write_text(TOKEN)
        self.folder = folder
        self.store = JobStore(folder / "job.db")
        names = ("accuracy", "latency", "size")[:objectives]
        directions = ("maximize", "minimize", "minimize")[:objectives]
        config = job_config(max_trials=12, parallelism=3, tuning_type="bayesian",
                            settings={"backend": "nsga2"},
                            space=CONDITIONAL_SPACE if conditional else DEFAULT_SPACE)
        Objectives(names, directions).write_to(config.search)  # type: ignore[arg-type]
        self.config = replace(config, trial_retries=1)
        self.store.set_meta_many({meta.CONFIG: self.config, meta.JOB_ID: folder.name,
                                  meta.OFFER_POLICY: "fifo", meta.STATE: state,
                                  meta.STARTED_AT: time.time() - 60})
        self.controller = JobController(self.config, self.store, TOKEN, on_kill=lambda _: None)
        made = conditional_assignment if conditional else assignment
        self.controller.submit_trials([(i, made(i), 0) for i in range(1, 11)])
        for number, (accuracy, latency) in (points or PARETO_POINTS).items():
            if number == 8:  # its first try fails, its second completes
                self.run(8, 0)
                self.status(8, 0, "TASK_FAILED", message="exited with status 1")
            self.run(number, 1 if number == 8 else 0)
            self.report(number, {"accuracy": accuracy - 0.1}, step=0)
            values = {"accuracy": accuracy, "latency": latency, "size": 10.0 - number}
            self.controller.record_report(Report(
                number, {n: values[n] for n in names}, None, True, 1.0,
                constraints=(0.5 if number == INFEASIBLE else -1.0,)))
            self.status(number, 1 if number == 8 else 0, "TASK_FINISHED")
        for retries in (0, 1):
            self.run(9, retries)
            self.status(9, retries, "TASK_FAILED", message="exited with status 2")
        self.run(10, 0)
        self.running = 10

    def run(self, number: int, retries: int) -> None:
        self.controller.trial_launched(number, trial_task_id(number, retries), AGENT)
        self.status(number, retries, "TASK_RUNNING")

    def status(self, number: int, retries: int, state: str, **extra: str) -> None:
        self.controller.on_status(task_status(trial_task_id(number, retries), state, **extra))

    def report(self, number: int, metrics: dict[str, float], *, step: int | None = None) -> None:
        self.controller.record_report(Report(number, metrics, step, False, 1.0))


def big_record(folder: Path, trials: int, *, job_id: str = "job-big",
               state: str = meta.ENDED) -> JobStore:
    """The record of a job of ``trials`` trials that each reported three intermediate values and
    a final one (every 20th pruned, every 50th failed), written in a few transactions (a
    10,000-trial record in seconds): what the scale tests read. Its store is returned open."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.token").write_text(TOKEN)
    store = JobStore(folder / "job.db")
    config = job_config(max_trials=trials, parallelism=16, job_id=job_id,
                        direction=common_pb2.MINIMIZE)
    start = time.time() - trials * 0.02 - 60
    store.set_meta_many({meta.CONFIG: config, meta.JOB_ID: job_id, meta.STARTED_AT: start,
                         meta.ENDED_AT: start + trials * 0.02 + 1, meta.STATE: state,
                         meta.OUTCOME: "BUDGET_SPENT",
                         meta.OUTCOME_MESSAGE: f"the budget of {trials} trials is spent"})
    rows, reports = [], []
    for n in range(1, trials + 1):
        began = start + n * 0.02
        value = 0.5 + 0.4 * ((n * 7919) % 1000) / 1000 - 0.3 * n / trials
        state_of = "FAILED" if n % 50 == 0 else "PRUNED" if n % 20 == 0 else "COMPLETED"
        objective = None if state_of == "FAILED" else value
        metrics = {} if objective is None else {"accuracy": value}
        rows.append((n, json.dumps(assignment(n)), state_of, f"trial-{n:04d}", AGENT,
                     f"{job_id}-slot-{n % 16}", objective, json.dumps(metrics),
                     "exited with status 1" if state_of == "FAILED" else "",
                     int(state_of == "COMPLETED"), began - 0.01, began, began + 0.05))
        steps = 1 if state_of == "PRUNED" else 3
        for step in range(steps):
            reports.append((n, step, json.dumps({"accuracy": value + 0.1 / (step + 1)}), 0,
                            0.01 * step, began + 0.01 * step))
        if state_of == "COMPLETED":
            reports.append((n, None, json.dumps(metrics), 1, 0.05, began + 0.05))
    # Closed here, not when collected: its close moves the WAL into the database file.
    with closing(sqlite3.connect(folder / "job.db")) as db, db:
        db.executemany(
            "INSERT INTO trials(number, assignment, state, task_id, agent_id, executor_id, "
            "objective, metrics, message, final_reported, created_at, started_at, ended_at) "
            "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        db.executemany(
            "INSERT INTO reports(trial_number, step, metrics, final, elapsed_seconds, "
            "recorded_at) VALUES(?, ?, ?, ?, ?, ?)", reports)
    return store


def fresh_record(folder: Path, *, running: int = 2, pending: int = 2) -> JobController:
    """A job that has no result yet: ``running`` trials launched (none has reported anything)
    and ``pending`` more waiting, recorded in ``folder/job.db``; its controller."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.token").write_text(TOKEN)
    store = JobStore(folder / "job.db")
    config = job_config(max_trials=20, parallelism=running, job_id=folder.name)
    store.set_meta_many({meta.CONFIG: config, meta.JOB_ID: folder.name,
                         meta.OFFER_POLICY: "fifo", meta.STARTED_AT: time.time() - 30,
                         meta.STATE: meta.RUNNING})
    controller = JobController(config, store, TOKEN, on_kill=lambda _: None)
    controller.submit_trials([(i, assignment(i), 0) for i in range(1, running + pending + 1)])
    for number in range(1, running + 1):
        controller.trial_launched(number, trial_task_id(number, 0), AGENT)
        controller.on_status(task_status(trial_task_id(number, 0), "TASK_RUNNING"))
    return controller
