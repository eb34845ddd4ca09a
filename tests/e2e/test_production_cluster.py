"""A production cluster's hard parts, end to end: one real ``da-cluster`` (a GPU pool reserved
for the role ``ml``, three unreserved agents, cgroups isolation, quick agent pings) and real
``da-submit`` jobs whose agents are restarted (``da-cluster agent restart``), drained (the
operator API's DRAIN_AGENT), partitioned (``da-cluster agent partition``), whose trials go over
their memory and are killed (``da-job kill``).

Each scenario is checked on the record trial by trial (``tests/e2e/outcomes.py``): every trial
once, its final report in, the counts right; what Mesos 1.11 says in each case is checked
against the task updates the job recorded (docs/local-mode.md, its fidelity table).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
import json
import os
from pathlib import Path
import sqlite3
import subprocess
import sys
import time
from typing import Any
from urllib.error import HTTPError

import pytest

from disauto.localmesos.cluster_process import ClusterProcess
from disauto.localmesos.containerizer import cgroups
from disauto.submit.local import free_port_range
from tests.e2e.conftest import PARAMS
from tests.e2e.conftest import ROOT
from tests.e2e.conftest import Job
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import master_state
from tests.e2e.conftest import nothing_left
from tests.e2e.conftest import operator_call
from tests.e2e.outcomes import Ended
from tests.e2e.outcomes import check_ended


pytestmark = [pytest.mark.slow, pytest.mark.integration]

ISOLATION = frozenset({"cgroups/cpu", "cgroups/mem"})
CGROUPS = cgroups.unavailable(ISOLATION)
"""Why cgroup v1 isolation cannot run here (None: it can)."""

# ``python runner.py SLEEP AGAIN HOG``: a trial sleeps SLEEP seconds (AGAIN in a try after its
# task was lost: its task id is trial-NNNN.<retries>), and trial number HOG first fills 400 MB,
# far over --app-runner-memory 128M. A wait of ``@PATH`` lasts until the test creates PATH.
# Arguments, not the environment: the tasks' environment is the da-cluster's, not da-submit's.
RUNNER = '''
import os, sys, time
from apprunner_sdk import get_params, report, trial_number
p = get_params()
sleep, again, hog = (sys.argv[1:] + ["0", "0", "0"])[:3]
if str(trial_number()) == hog:
    filled = b"x" * (400 * 1024 * 1024)
retry = "." in os.environ.get("MESOS_TASK_ID", "")
wait = again if retry else sleep
while wait.startswith("@") and not os.path.exists(wait[1:]):
    time.sleep(0.1)
time.sleep(0 if wait.startswith("@") else float(wait))
report(accuracy=1.0 - (float(p["x"]) - 0.3) ** 2 - 0.01 * float(p["n"]), final=True)
'''

ML_POOL = "cpus(ml):1;mem(ml):1024;gpus(ml):1"
"""Agent 0: a GPU agent whose every resource is reserved for the role ``ml``."""


class Cluster:
    """The shared ``da-cluster`` and the calls an operator makes to it."""

    def __init__(self, process: ClusterProcess) -> None:
        self.process = process
        self.address = process.address
        self.url = f"http://{process.address}"

    def agents(self) -> dict[str, dict[str, Any]]:
        """The registered agents by id."""
        return {a["id"]: a for a in master_state(self.url).get("slaves", [])}

    def pool(self) -> str:
        """The id of the agent reserved for ``ml``."""
        (agent,) = [i for i, a in self.agents().items() if a.get("reserved_resources")]
        return agent

    def tasks(self, framework: str = "") -> list[dict[str, Any]]:
        """Every live task (of ``framework``, when given)."""
        return [t for f in master_state(self.url)["frameworks"]
                if not framework or f["id"] == framework for t in f["tasks"]]

    def agent_cli(self, action: str, agents: Iterable[str], duration: str) -> None:
        """``da-cluster agent ACTION AGENT --for DURATION`` for each agent, all at once."""
        runs = [subprocess.Popen(
            [sys.executable, "-m", "disauto.localmesos.cli", "agent", action, agent,
             "--master", self.address, "--for", duration], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=self.process.env) for agent in agents]
        for run in runs:
            out, err = run.communicate(timeout=60)
            assert run.returncode == 0 and out.startswith("agent "), err

    def operator(self, call: dict[str, Any]) -> dict[str, Any]:
        """One call of the operator API (``/api/v1``); its JSON answer ({} when empty)."""
        return operator_call(self.url, call)

    def reactivate(self, agent: str) -> bool:
        """REACTIVATE_AGENT once it is DRAINED; whether it was."""
        try:
            self.operator({"type": "REACTIVATE_AGENT",
                           "reactivate_agent": {"agent_id": {"value": agent}}})
        except HTTPError:
            return False  # still draining
        return True

    def healthy(self, within: float = 30.0) -> None:
        """Wait until all four agents are registered, active and not draining."""
        until(lambda: len(self.agents()) == 4 and all(
            a["active"] for a in self.agents().values()) and not any(
            "drain_info" in a for a in self.operator({"type": "GET_AGENTS"})[
                "get_agents"]["agents"]), within, "the cluster never came back whole")


def until(predicate: Callable[[], Any], within: float,
          what: str | Callable[[], str]) -> Any:
    """Poll ``predicate`` until it is truthy; its value. ``what`` says what did not happen:
    a callable is asked when it did not, so that the logs it shows are those of then."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(what if isinstance(what, str) else what())


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    low, high = free_port_range(800, low=42000, high=60000)
    env = {**os.environ,
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    isolation = "posix/cpu,posix/mem" if CGROUPS else "cgroups/cpu,cgroups/mem"
    process = ClusterProcess(tmp_path_factory.mktemp("production"), (
        "--agents", "4", "--cpus", "2", "--mem", "2GB", "--gpus", "0",
        "--ports", f"[{low}-{high}]", "--agent-resources", ML_POOL,
        "--allocation-interval", "200ms", "--agent-ping-timeout", "1secs",
        "--max-agent-ping-timeouts", "3", "--isolation", isolation), env=env)
    process.start()
    made = Cluster(process)
    made.healthy()
    yield made
    process.kill()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "runner.py").write_text(RUNNER)
    (tmp_path / "params.json").write_text(json.dumps(PARAMS))
    return tmp_path


class Jobs:
    """``da-submit`` processes against the shared cluster, under one ``$DISAUTO_HOME``."""

    def __init__(self, workdir: Path, cluster: Cluster) -> None:
        self.workdir = workdir
        self.cluster = cluster
        self.home = workdir / "home"
        self.started: list[Job] = []

    def env(self) -> dict[str, str]:
        return {**self.cluster.process.env, "DISAUTO_HOME": str(self.home)}

    def submit(self, budget: int, parallelism: int, *flags: str, sleep: float = 0.0,
               again: float | str = 0.0, hog: int = 0) -> Job:
        """A job of ``budget`` trials, ``parallelism`` at once, whose trials sleep ``sleep``
        seconds (``again`` when run again) and whose trial ``hog`` goes over its memory."""
        args = common_flags(self.workdir, "--trail-steps", str(budget), "--parallelism",
                            str(parallelism), "--master", self.cluster.address, "--quiet",
                            *flags)
        args[args.index("--app-runner-launch-cmd") + 1] = f"python runner.py {sleep} {again} {hog}"
        process = subprocess.Popen(
            [sys.executable, "-m", "disauto.submit.cli", *args], cwd=self.workdir,
            env=self.env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        job = Job(process, self.home)
        job.start_reading()
        self.started.append(job)
        return job

    def da_job(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "disauto.submit.job_cli", *args],
                              cwd=self.workdir, env=self.env(), capture_output=True, text=True,
                              timeout=60, check=False)


@pytest.fixture
def jobs(workdir: Path, cluster: Cluster) -> Iterator[Jobs]:
    made = Jobs(workdir, cluster)
    yield made
    for job in made.started:
        if job.process.poll() is None:
            job.process.kill()
            job.process.wait(10)
    cluster.healthy()  # the next scenario gets the whole cluster back


# -- the record --------------------------------------------------------------------------------


def framework_id(job: Job) -> str:
    return job.wait_for_line(r"framework (\S+) registered").group(1)


def running(job: Job, count: int, within: float = 60.0) -> list[dict[str, Any]]:
    """Wait until ``count`` of the job's trials run (as the record says); their rows."""
    def ready() -> list[dict[str, Any]]:
        trials = [t for t in trial_rows(job) if t["state"] == "RUNNING"]
        return trials if len(trials) >= count else []
    return until(ready, within, lambda: f"{count} trials never ran at once:\n{job.output}")


def trial_rows(job: Job) -> list[dict[str, Any]]:
    try:
        with sqlite3.connect(f"file:{job.job_dir() / 'job.db'}?mode=ro", uri=True) as db:
            db.row_factory = sqlite3.Row
            return [dict(r) for r in db.execute("SELECT * FROM trials ORDER BY number")]
    except sqlite3.Error:
        return []


def updates(ended: Ended | Job, task: str) -> list[tuple[str, str]]:
    """``(state, reason)`` of every status update the job (ended or running) recorded for
    ``task``, in order."""
    job_dir = ended.job_dir if isinstance(ended, Ended) else ended.job_dir()
    with sqlite3.connect(f"file:{job_dir / 'job.db'}?mode=ro", uri=True) as db:
        return [(s, r) for s, r in db.execute(
            "SELECT state, reason FROM task_updates WHERE task_id = ? ORDER BY id", (task,))]


def unknown_before_the_end(ended: Ended) -> int:
    """How many TASK_UNKNOWN updates the job recorded before it ended."""
    with sqlite3.connect(ended.job_dir / "job.db") as db:
        (count,) = db.execute(
            "SELECT COUNT(*) FROM task_updates WHERE state = 'TASK_UNKNOWN' AND recorded_at < "
            "(SELECT CAST(value AS REAL) FROM meta WHERE key = 'ended_at')").fetchone()
    return int(count)


def appcore_runs(ended: Ended) -> list[tuple[str, str]]:
    """``(task_id, state)`` of each AppCore launch."""
    with sqlite3.connect(ended.job_dir / "job.db") as db:
        return list(db.execute("SELECT task_id, state FROM appcore_runs ORDER BY attempt"))


def finals(ended: Ended) -> dict[int, int]:
    """How many final reports each trial has in the record."""
    with sqlite3.connect(ended.job_dir / "job.db") as db:
        return dict(db.execute(
            "SELECT trial_number, COUNT(*) FROM reports WHERE final = 1 GROUP BY trial_number"))


def best(job: Job) -> int:
    """The best completed trial, from the record (check_ended checks it was chosen so)."""
    done = [t for t in trial_rows(job) if t["state"] == "COMPLETED"]
    return max(done, key=lambda t: t["objective"])["number"]


def ended_whole(job: Job, budget: int) -> Ended:
    """The job spent its budget, every trial COMPLETED once, its final report in once."""
    assert job.wait(240) == 0, job.output
    ended = check_ended(job, 0, "BUDGET_SPENT", best=best(job))
    assert ended.states() == dict.fromkeys(range(1, budget + 1), "COMPLETED"), ended.states()
    assert finals(ended) == dict.fromkeys(range(1, budget + 1), 1)
    assert nothing_left(job.job_dir().name), "a trial's process outlived the job"
    return ended


# -- the scenarios -----------------------------------------------------------------------------


def test_a_pool_reserved_for_a_role_serves_that_role_only(jobs: Jobs, cluster: Cluster) -> None:
    pool = cluster.pool()
    outsider = jobs.submit(2, 1, "--app-runner-gpus", "1")
    member = jobs.submit(2, 1, "--app-runner-gpus", "1", "--role", "ml")
    # Without the role the job can never run: it ends at once, one line naming the role.
    ended = check_ended(outsider, 2, "UNSCHEDULABLE", best=None, logs=False)
    assert ended.db_trials == {} or all(t["started_at"] is None
                                        for t in ended.db_trials.values())
    errors = [line for line in outsider.lines if "error:" in line]
    assert len(errors) == 1, outsider.output
    assert "reserved for the role 'ml'" in outsider.words and "--role ml" in outsider.words
    # With it, every trial runs on the pool.
    ended = ended_whole(member, 2)
    assert {t["agent_id"] for t in ended.db_trials.values()} == {pool}
    status = jobs.da_job("status", member.job_dir().name)
    assert status.returncode == 0 and "role ml," in " ".join(status.stdout.split()), status


@pytest.mark.skipif(CGROUPS is not None, reason=f"no cgroups isolation here: {CGROUPS}")
def test_a_trial_over_its_memory_is_killed_and_the_record_says_why(jobs: Jobs) -> None:
    job = jobs.submit(3, 2, "--max-failed-trials", "3", hog=2)
    assert job.wait(240) == 0, job.output
    ended = check_ended(job, 0, "BUDGET_SPENT", best=best(job))
    assert ended.states() == {1: "COMPLETED", 2: "FAILED", 3: "COMPLETED"}
    hog = ended.db_trials[2]
    assert updates(ended, hog["task_id"])[-1] == (
        "TASK_FAILED", "REASON_CONTAINER_LIMITATION_MEMORY")
    assert "memory" in hog["message"] and "128" in hog["message"], hog["message"]
    assert "trial-0002" in job.output and "memory" in job.output.split("trial-0002", 1)[1]


def test_killed_trials_say_task_killing_first(jobs: Jobs) -> None:
    job = jobs.submit(4, 2, sleep=60)
    alive = running(job, 2)
    done = jobs.da_job("kill", job.job_dir().name)
    assert done.returncode == 0, done.stderr
    ended = check_ended(job, 5, "JOB_KILLED", best=None, logs=False)
    for trial in alive:
        seen = [state for state, _ in updates(ended, trial["task_id"])]
        assert seen[-2:] == ["TASK_KILLING", "TASK_KILLED"], seen
        assert ended.db_trials[trial["number"]]["state"] == "KILLED"
    assert nothing_left(job.job_dir().name)


def test_an_agent_restart_loses_no_trial_task_or_warm_slot(jobs: Jobs, cluster: Cluster) -> None:
    tasks = jobs.submit(3, 2, sleep=3)
    warm = jobs.submit(3, 2, "--slot-mode", "warm", sleep=3)
    alive = {id(job): running(job, 2) for job in (tasks, warm)}
    cluster.agent_cli("restart", {t["agent_id"] for trials in alive.values() for t in trials},
                      "1s")
    for job in (tasks, warm):
        ended = ended_whole(job, 3)
        for trial in alive[id(job)]:
            # The framework checkpoints: its task (a command task, or a task of a warm slot's
            # executor) runs through the restart and is reported once, never run again.
            recorded = ended.db_trials[trial["number"]]
            assert recorded["task_id"] == trial["task_id"] and recorded["retries"] == 0
            seen = [state for state, _ in updates(ended, trial["task_id"])]
            assert seen[-1] == "TASK_FINISHED" and "TASK_LOST" not in seen, seen


def test_a_drained_agent_s_trials_run_again_elsewhere_uncounted(
        jobs: Jobs, cluster: Cluster) -> None:
    job = jobs.submit(2, 2, sleep=30, again=1)
    alive = running(job, 2)
    # An agent with trials, AppCore's too if it is there: all run again, none counted.
    (agent, *_) = sorted({t["agent_id"] for t in alive})
    cluster.operator({"type": "DRAIN_AGENT", "drain_agent": {"agent_id": {"value": agent}}})
    ended = ended_whole(job, 2)
    drained = [t for t in alive if t["agent_id"] == agent]
    for trial in drained:
        recorded = ended.db_trials[trial["number"]]
        assert recorded["retries"] == recorded["evictions"] == 1, recorded
        assert recorded["agent_id"] != agent
        (first,) = json.loads(recorded["tries"])
        assert first["outcome"] == "evicted" and first["task_id"] == trial["task_id"]
        assert "REASON_AGENT_DRAINING" in first["message"], first
        assert updates(ended, trial["task_id"])[-1] == ("TASK_KILLED", "REASON_AGENT_DRAINING")
    assert not any(t["state"] == "FAILED" for t in ended.db_trials.values())
    until(lambda: cluster.reactivate(agent), 30, "the drained agent never reactivated")


def test_a_partition_healed_in_time_brings_trials_back_and_one_past_the_bound_reruns_them(
        jobs: Jobs, cluster: Cluster) -> None:
    # Both jobs' trials still run when the 20 s partition heals: the patient job's come back
    # (their results and ends after the heal); the hasty job ran its trials again meanwhile
    # and kills the old tasks when they show up. Its new tries end only once both old tasks
    # are back (on a busy machine an agent may re-register after a fixed sleep would end).
    gate = jobs.workdir / "the-old-tasks-are-back"
    patient = jobs.submit(2, 2, "--unreachable-timeout", "60s", sleep=24)
    hasty = jobs.submit(2, 2, "--unreachable-timeout", "3s", sleep=40, again=f"@{gate}")
    alive = {id(job): running(job, 2) for job in (patient, hasty)}
    cluster.agent_cli("partition", {t["agent_id"] for trials in alive.values() for t in trials},
                      "20s")
    # Mesos marks the agents unreachable; da-job status says which trials wait for them.
    until(lambda: "unreachable" in jobs.da_job("status", patient.job_dir().name).stdout, 15,
          "da-job status never showed the unreachable trials")
    ended = ended_whole(patient, 2)
    for trial in alive[id(patient)]:
        recorded = ended.db_trials[trial["number"]]
        assert recorded["retries"] == 0 and recorded["task_id"] == trial["task_id"], recorded
        seen = updates(ended, trial["task_id"])
        assert ("TASK_UNREACHABLE", "REASON_AGENT_REMOVED") in seen, seen
        # Back with its agent: still running, or ended meanwhile (its update held till then).
        assert {("TASK_RUNNING", "REASON_AGENT_REREGISTERED"),
                ("TASK_FINISHED", "REASON_AGENT_REREGISTERED")} & set(seen), seen
        assert seen[-1][0] == "TASK_FINISHED", seen
    # Reconciled by agent id meanwhile, AppCore's task too: TASK_UNREACHABLE, never
    # TASK_UNKNOWN while the job ran (which would have launched a second AppCore). At its end
    # a KILL of a task still unreachable is answered TASK_UNKNOWN: pymesos' KILL names no
    # agent (Master::kill reconciles it, case 6).
    assert unknown_before_the_end(ended) == 0
    assert len(appcore_runs(ended)) == 1
    until(lambda: all(("TASK_RUNNING", "REASON_AGENT_REREGISTERED") in updates(hasty, t["task_id"])
                      for t in alive[id(hasty)]), 60, "the hasty job's old tasks never came back")
    gate.touch()
    ended = ended_whole(hasty, 2)
    for trial in alive[id(hasty)]:
        recorded = ended.db_trials[trial["number"]]
        assert recorded["retries"] == 1 and recorded["evictions"] == 0, recorded
        (first,) = json.loads(recorded["tries"])
        assert first["outcome"] == "lost" and first["task_id"] == trial["task_id"]
        assert "--unreachable-timeout 3s" in first["message"], first
        # The old task came back with its agent and was killed: it never reported.
        seen = updates(ended, trial["task_id"])
        assert ("TASK_RUNNING", "REASON_AGENT_REREGISTERED") in seen, seen
        assert seen[-1][0] == "TASK_KILLED", seen
    until(lambda: not cluster.tasks(), 40, "the abandoned tasks outlived the partition")
