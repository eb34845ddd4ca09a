"""The conformance scenarios: what a user does with DisAuto on a cluster, each run against the
embedded cluster and a real Mesos (``kind``), checked on the record trial by trial.

Each scenario says what it holds on both clusters; where the two differ by design, the
difference is asserted per kind, with the Mesos source that explains it (docs/real-mesos.md).
"""

from __future__ import annotations

from collections.abc import Callable
import os
from pathlib import Path
import signal
import sqlite3
import subprocess
import sys
from typing import Any
from urllib.request import urlopen

import pytest

from disauto.common.processes import with_environment
from tests.conformance.clusters import AgentSpec
from tests.conformance.clusters import get_json
from tests.conformance.conftest import Jobs
from tests.conformance.conftest import MakeCluster
from tests.conformance.wire import Protos
from tests.conformance.wire import Tap
from tests.conformance.wire import check_exchanges
from tests.conformance.wire import exchanges
from tests.e2e.outcomes import check_ended
from tests.e2e.test_production_cluster import best
from tests.e2e.test_production_cluster import ended_whole
from tests.e2e.test_production_cluster import running
from tests.e2e.test_production_cluster import trial_rows
from tests.e2e.test_production_cluster import until
from tests.e2e.test_production_cluster import updates


pytestmark = [pytest.mark.slow, pytest.mark.integration]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

MakeJobs = Callable[..., Jobs]


def on_the_wire(tap: Tap, protos: Protos | None) -> dict[str, int]:
    """Every scheduler and operator message DisAuto and the master exchanged through ``tap``,
    checked (the project's shape checkers; Mesos' protos with a real Mesos): their counts."""
    tap.stop()
    found = exchanges(tap.folder)
    counts, problems = check_exchanges(protos, found)
    reads = sorted({e.request.start.split(" ")[1].split("?")[0] for e in found
                    if e.request.start.startswith("GET ")})
    assert not problems, "\n".join(problems[:20])
    print(f"\n[on the wire: {sum(counts.values())} messages checked: "  # shown with -s
          + ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
          + f"; endpoints read: {', '.join(reads)}]")
    return counts


def test_the_fig3_command_runs_end_to_end_in_task_mode(
        make_cluster: MakeCluster, jobs: MakeJobs, protos: Protos | None,
        tmp_path: Path) -> None:
    """The README's Fig. 3 command (its input, output, target), scaled to this machine, every
    scheduler call and event on the wire parsed strictly."""
    cluster = make_cluster()
    run = jobs(cluster)
    data = tmp_path / "data"
    subprocess.run([sys.executable, str(EXAMPLES / "make_digits_data.py"), str(data)],
                   check=True, capture_output=True, timeout=120)
    tap = Tap(cluster.address, tmp_path / "wire")
    job = run.submit(
        "--app-name", "testAutoML", "--input", f"{data}#data",
        "--output", f"{tmp_path / 'model'}#model", "--files", str(EXAMPLES / "demo.py"),
        "--app-runner-launch-cmd", "python demo.py", "--app-runner-memory", "384M",
        "--app-runner-cpus", "0.5", "--app-core-memory", "256M", "--app-core-cpus", "0.3",
        "--trail-steps", "4", "--tuning-type", "random-search",
        "--tuning-parameters", str(EXAMPLES / "demo-parameters.json"), "--parallelism", "2",
        "--target", "0.5", "--seed", "5", master=tap.address)
    assert job.wait(300) == 0, job.output
    ended = check_ended(job, 0, "TARGET_REACHED", best=best(job), output=tmp_path / "model")
    assert all(t["retries"] == 0 for t in ended.db_trials.values())
    counts = on_the_wire(tap, protos)
    assert counts.get("scheduler.Event SUBSCRIBED") == 1, counts
    assert counts.get("scheduler.Event UPDATE", 0) >= 2 * len(ended.db_trials), counts
    assert counts.get("scheduler.Call ACCEPT", 0) >= 1, counts


def test_warm_slots_run_on_the_clusters_agents(make_cluster: MakeCluster, jobs: MakeJobs,
                                               protos: Protos | None, tmp_path: Path) -> None:
    """DisAuto's executor, started by the agent, runs the trials (and, preloaded, forks them)."""
    cluster = make_cluster(AgentSpec("cpus:3;mem:3072;disk:4096"))
    run = jobs(cluster)
    tap = Tap(cluster.address, tmp_path / "wire")
    plain = run.submit(*run.flags(4, 2), "--slot-mode", "warm", master=tap.address)
    ended_whole(plain, 4)
    preloaded = run.submit(*run.flags(4, 2), "--slot-mode", "warm",
                           "--slot-preload", "apprunner_sdk")
    ended = ended_whole(preloaded, 4)
    executors = {t["executor_id"] for t in ended.db_trials.values()}
    assert 1 <= len(executors) <= 2 and all("-slot-" in e for e in executors), executors
    on_the_wire(tap, protos)


def test_a_trial_past_its_timeout_is_killed(make_cluster: MakeCluster,
                                            jobs: MakeJobs) -> None:
    run = jobs(make_cluster())
    job = run.submit(*run.flags(2, 2, sleep="hang"), "--trial-timeout", "3s")
    assert job.wait(120) == 6, job.output  # no trial produced a result
    ended = check_ended(job, 6, "BUDGET_SPENT", best=None)
    assert ended.states() == {1: "TIMEOUT", 2: "TIMEOUT"}
    for trial in ended.db_trials.values():
        assert updates(ended, trial["task_id"])[-1][0] == "TASK_KILLED"


def test_a_trial_whose_process_is_killed_fails_with_the_signal(make_cluster: MakeCluster,
                                                               jobs: MakeJobs,
                                                               tmp_path: Path) -> None:
    run = jobs(make_cluster())
    gate = tmp_path / "gate"
    job = run.submit(*run.flags(2, 1, sleep=f"@{gate}"), "--max-failed-trials", "2")
    (trial,) = running(job, 1)
    pids = [pid for pid in with_environment("DISAUTO_TRIAL_NUMBER", str(trial["number"]))
            if pid in with_environment("DISAUTO_JOB_ID", job.job_dir().name)
            and b"runner.py" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert pids, "the trial's process was not found"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    gate.touch()  # the next trial ends at once
    assert job.wait(120) == 0, job.output
    ended = check_ended(job, 0, "BUDGET_SPENT", best=best(job))
    killed = ended.db_trials[trial["number"]]
    assert killed["state"] == "FAILED", killed
    assert "signal" in killed["message"].lower() and "killed" in killed["message"].lower(), \
        killed["message"]
    assert updates(ended, killed["task_id"])[-1][0] == "TASK_FAILED"


def test_da_job_kill_ends_the_job_and_its_tasks(make_cluster: MakeCluster,
                                                jobs: MakeJobs) -> None:
    cluster = make_cluster()
    run = jobs(cluster)
    job = run.submit(*run.flags(4, 2, sleep=60))
    alive = running(job, 2)
    done = run.da_job("kill", job.job_dir().name)
    assert done.returncode == 0, done.stderr
    ended = check_ended(job, 5, "JOB_KILLED", best=None, logs=False)
    for trial in alive:
        assert ended.db_trials[trial["number"]]["state"] == "KILLED"
        assert updates(ended, trial["task_id"])[-1][0] == "TASK_KILLED"
    until(lambda: not cluster.tasks(), 30, "the killed job's tasks stayed on the cluster")


def test_kill_9_of_da_submit_then_resume_adopts_the_running_tasks(
        make_cluster: MakeCluster, jobs: MakeJobs, tmp_path: Path) -> None:
    run = jobs(make_cluster())
    gate = tmp_path / "gate"
    job = run.submit(*run.flags(4, 2, sleep=f"@{gate}"))
    alive = {t["number"]: t["task_id"] for t in running(job, 2)}
    job.process.kill()  # kill -9: no goodbye to the master
    job.process.wait(10)
    gate.touch()
    done = run.da_job("resume", job.job_dir().name, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {t["number"]: t for t in trial_rows(job)}
    assert sorted(rows) == [1, 2, 3, 4]
    assert all(t["state"] == "COMPLETED" for t in rows.values()), rows
    for number, task in alive.items():
        # The same task, adopted by the resumed framework: not run again.
        assert rows[number]["task_id"] == task and rows[number]["retries"] == 0, rows[number]
    with sqlite3.connect(job.job_dir() / "job.db") as db:
        finals = dict(db.execute("SELECT trial_number, COUNT(*) FROM reports WHERE final = 1 "
                                 "GROUP BY trial_number"))
    assert finals == dict.fromkeys(range(1, 5), 1), finals


def test_an_agent_restart_keeps_the_checkpointed_tasks(make_cluster: MakeCluster,
                                                       jobs: MakeJobs, tmp_path: Path) -> None:
    cluster = make_cluster()
    run = jobs(cluster)
    gate = tmp_path / "gate"
    job = run.submit(*run.flags(3, 2, sleep=f"@{gate}", again=0))
    alive = running(job, 2)
    cluster.restart_agent(0)
    cluster.wait_agents(1)
    gate.touch()
    ended = ended_whole(job, 3)
    for trial in alive:
        recorded = ended.db_trials[trial["number"]]
        assert recorded["task_id"] == trial["task_id"] and recorded["retries"] == 0
        seen = [state for state, _ in updates(ended, trial["task_id"])]
        assert seen[-1] == "TASK_FINISHED" and "TASK_LOST" not in seen, seen


def test_a_drained_agents_trials_run_again_elsewhere(make_cluster: MakeCluster,
                                                     jobs: MakeJobs, tmp_path: Path) -> None:
    cluster = make_cluster(AgentSpec("cpus:1;mem:1024;disk:2048"),
                           AgentSpec("cpus:1;mem:1024;disk:2048"))
    run = jobs(cluster)
    gate = tmp_path / "gate"
    job = run.submit(*run.flags(2, 1, sleep=f"@{gate}", again=0))
    (trial,) = running(job, 1)
    cluster.operator({"type": "DRAIN_AGENT", "drain_agent": {
        "agent_id": {"value": trial["agent_id"]}, "max_grace_period": {"nanoseconds": 0}}})
    until(lambda: any(t["retries"] for t in trial_rows(job)), 60,
          f"the drained trial never ran again:\n{job.output}")
    gate.touch()
    ended = ended_whole(job, 2)
    moved = ended.db_trials[trial["number"]]
    assert moved["retries"] == 1 and moved["evictions"] == 1, moved
    assert moved["agent_id"] != trial["agent_id"]
    seen = updates(ended, trial["task_id"])
    assert seen[-1][0] in ("TASK_KILLED", "TASK_GONE_BY_OPERATOR"), seen


def test_a_reserved_role_serves_a_job_of_that_role(make_cluster: MakeCluster,
                                                   jobs: MakeJobs) -> None:
    cluster = make_cluster(AgentSpec("cpus(ml):2;mem(ml):2048;disk:2048",
                                     attributes="pool:ml"))
    run = jobs(cluster)
    job = run.submit(*run.flags(2, 2), "--role", "ml")
    ended = ended_whole(job, 2)
    state = run.da_job("status", ended.job_dir.name)
    assert "role ml," in " ".join(state.stdout.split()), state.stdout


def test_the_masters_web_ui_links_to_the_job_page(make_cluster: MakeCluster,
                                                  jobs: MakeJobs, tmp_path: Path,
                                                  browser: Any) -> None:
    """The master's web UI (Mesos' own, or the embedded one's) lists the job's framework with
    a link to its ``webui_url``; in a real browser, on a laptop-sized window, the link opens
    the job's page."""
    from playwright.sync_api import expect

    cluster = make_cluster()
    run = jobs(cluster)
    gate = tmp_path / "gate"
    job = run.submit(*run.flags(1, 1, sleep=f"@{gate}"))
    running(job, 1)
    (framework,) = [f for f in cluster.state()["frameworks"] if f["name"] == "conformance"]
    url = str(framework.get("webui_url", ""))
    # The master's web UI links each framework's name to its webui_url: the job's page.
    assert url.startswith("http://") and f"/jobs/{job.job_dir().name}/" in url, framework
    with urlopen(url, timeout=10) as page:  # noqa: S310 - loopback
        assert page.status == 200 and b"<html" in page.read().lower()
    answer = get_json(url.rstrip("/") + "/api/page")
    assert answer, url
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{cluster.url}/#/frameworks")
    link = page.locator(f'a[href="{url}"]').first
    expect(link).to_be_visible(timeout=30_000)
    master_ui_errors = list(errors)  # the master's page's own (Mesos' UI: not ours to fix)
    errors.clear()
    link.click()
    expect(page).to_have_url(url, timeout=30_000)
    expect(page.locator("body")).to_contain_text("conformance", timeout=30_000)
    context.close()
    assert not errors, (errors, master_ui_errors)
    gate.touch()
    assert job.wait(120) == 0, job.output


def test_docker_trials_run_through_the_agents_docker_containerizer(
        docker_engine: object, runner_image: str, make_cluster: MakeCluster,
        jobs: MakeJobs) -> None:
    """``--containerizer docker``: the agent's Docker containerizer (a real agent's runs
    ``mesos-docker-executor``, which runs ``docker run``) starts each trial in the image."""
    cluster = make_cluster(AgentSpec("cpus:2;mem:2048;disk:4096", docker=True))
    run = jobs(cluster)
    job = run.submit(*run.flags(2, 2), "--docker-image", runner_image,
                     "--containerizer", "docker")
    ended = ended_whole(job, 2)
    for trial in ended.db_trials.values():
        assert updates(ended, trial["task_id"])[-1][0] == "TASK_FINISHED"


@pytest.mark.xfail_on_embedded(
    "the embedded agent runs a MESOS container's Docker image through the Docker engine "
    "without --image_providers (docs/local-mode.md); a Mesos agent has no store for it: "
    "src/slave/containerizer/mesos/provisioner/provisioner.cpp ProvisionerProcess::provision")
def test_a_docker_image_in_the_mesos_containerizer_needs_the_agents_image_provider(
        docker_engine: object, runner_image: str, make_cluster: MakeCluster,
        jobs: MakeJobs) -> None:
    """``--docker-image`` with the default ``--containerizer mesos`` on an agent started
    without ``--image_providers=docker``: every trial fails at its launch, and the job says in
    one line what the agent lacks and what to do."""
    cluster = make_cluster(AgentSpec("cpus:2;mem:2048;disk:4096", docker=True))
    run = jobs(cluster)
    job = run.submit(*run.flags(2, 1), "--docker-image", runner_image,
                     "--max-failed-trials", "1")
    assert job.wait(120) == 4, job.output
    ended = check_ended(job, 4, "TOO_MANY_FAILURES", best=None, logs=False)
    for trial in ended.db_trials.values():
        assert updates(ended, trial["task_id"])[-1] == (
            "TASK_FAILED", "REASON_CONTAINER_LAUNCH_FAILED")
        assert "Unsupported container image type" in trial["message"], trial["message"]
    assert "--image_providers=docker" in job.words and "--containerizer docker" in job.words
