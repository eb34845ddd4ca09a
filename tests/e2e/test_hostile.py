"""Hostile tenants and floods, end to end: real da-submit processes, real tasks (issue 15).

* On a master with credentials for alice and bob, bob cannot take, drive or tear down alice's
  running job; it completes normally.
* A job whose framework is taken away (failed over by another holder of its id, or removed by
  the master) ends at once with one line, exit 7, and a record with no trial left RUNNING.
* A trial printing 100 MB leaves its sandbox and the job folder within their caps, the last
  lines kept.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
import http.client
import json
from pathlib import Path
import sqlite3
import time
from typing import Any

import pytest

from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.submit.local import free_port_range
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import master_state


pytestmark = pytest.mark.slow

CREDENTIALS = {"alice": "a-secret", "bob": "b-secret"}


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCluster]:
    monkeypatch.setenv("RUNNER_SLEEP", "3")  # the agent runs in this process: its tasks see it
    made = LocalCluster(ClusterConfig(
        agents=1, cpus=4.0, mem_mb=4096.0, ports=(free_port_range(300, low=42000, high=60000),),
        allocation_interval=0.2, work_dir=tmp_path / "cluster", credentials=CREDENTIALS,
        status_update_retry_interval=1.0, status_update_retry_interval_max=2.0,
    ))
    made.start()
    yield made
    made.stop()


def _alice_job(submit: Any, workdir: Path, cluster: LocalCluster, steps: int = 4) -> Any:
    secret = workdir / "alice.secret"
    secret.write_text("a-secret\n")
    return submit(*common_flags(workdir, "--trail-steps", str(steps), "--parallelism", "2",
                                "--master", cluster.address, "--principal", "alice",
                                "--secret-file", str(secret)))


def _running_framework(cluster: LocalCluster, timeout: float = 60.0) -> dict[str, Any]:
    """alice's framework once two of its trials run."""
    url = f"http://{cluster.address}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for fw in master_state(url)["frameworks"]:
            running = [t for t in fw["tasks"]
                       if t["name"].startswith("trial-") and t["state"] == "TASK_RUNNING"]
            if len(running) == 2:
                return dict(fw)
        time.sleep(0.2)
    raise AssertionError("alice's trials never ran")


def _post(cluster: LocalCluster, auth: tuple[str, str], body: dict[str, Any],
          stream_id: str | None = None) -> tuple[int, bytes]:
    host, port = cluster.address.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    headers = {"Content-Type": "application/json", "Accept": "application/json",
               "Authorization": f"Basic {token}"}
    if stream_id:
        headers["Mesos-Stream-Id"] = stream_id
    conn.request("POST", "/api/v1/scheduler", json.dumps(body), headers)
    response = conn.getresponse()
    content = response.read()  # a refused SUBSCRIBE's stream ends after its ERROR
    conn.close()
    return response.status, content


def _subscribe(fw: dict[str, Any], **info: Any) -> dict[str, Any]:
    framework_info = {"user": fw["user"], "name": "thief", "id": {"value": fw["id"]}, **info}
    return {"type": "SUBSCRIBE", "framework_id": {"value": fw["id"]},
            "subscribe": {"framework_info": framework_info}}


def _record(job_dir: Path) -> tuple[dict[str, str], list[tuple[int, str, str]]]:
    with sqlite3.connect(f"file:{job_dir / 'job.db'}?mode=ro", uri=True) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        trials = conn.execute("SELECT number, state, message FROM trials ORDER BY number") \
            .fetchall()
    return meta, trials


def test_bob_cannot_take_or_tear_down_alices_job(submit: Any, workdir: Path,
                                                 cluster: LocalCluster) -> None:
    job = _alice_job(submit, workdir, cluster)
    fw = _running_framework(cluster)
    assert fw["principal"] == "alice"
    bob = ("bob", "b-secret")
    # As himself (or naming nobody): an ERROR on his own stream, no failover of alice's.
    for info in ({}, {"principal": "bob"}):
        status, content = _post(cluster, bob, _subscribe(fw, **info))
        assert status == 200 and b"Changing framework's principal is not allowed." in content
    # Claiming to be alice: refused before anything happens.
    status, content = _post(cluster, bob, _subscribe(fw, principal="alice"))
    assert status == 400 and b"Authenticated principal 'bob' does not match" in content
    # Driving her framework, with or without a stream id.
    for stream_id in (None, "00000000-0000-0000-0000-000000000000"):
        status, content = _post(cluster, bob, {"type": "TEARDOWN",
                                               "framework_id": {"value": fw["id"]}}, stream_id)
        assert status == 400 and b"does not match principal 'alice'" in content

    assert job.wait(timeout=180) == 0, job.output
    assert "taken away" not in job.output
    meta, trials = _record(job.job_dir())
    assert meta["outcome"] == "BUDGET_SPENT"
    assert [state for _, state, _ in trials] == ["COMPLETED"] * 4


@pytest.mark.parametrize("how", ["failed over", "removed"])
def test_a_framework_taken_away_ends_the_job_with_one_line_and_a_true_record(
    submit: Any, workdir: Path, cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    monkeypatch.setenv("RUNNER_SLEEP", "60")
    job = _alice_job(submit, workdir, cluster)
    fw = _running_framework(cluster)
    if how == "failed over":
        # Someone else holding alice's credentials and her framework's id subscribes.
        host, port = cluster.address.split(":")
        thief = http.client.HTTPConnection(host, int(port), timeout=10)
        token = base64.b64encode(b"alice:a-secret").decode()
        thief.request("POST", "/api/v1/scheduler", json.dumps(_subscribe(fw)),
                      {"Content-Type": "application/json", "Authorization": f"Basic {token}"})
        assert thief.getresponse().status == 200
    else:
        # The operator's teardown (Mesos' /teardown endpoint; here through the master).
        master = cluster.master
        with master.lock:
            master.tasks.remove_framework(master.frameworks[fw["id"]])

    started = time.monotonic()
    assert job.wait(timeout=60) == 7, job.output
    assert time.monotonic() - started < 30
    said = [line for line in job.lines if "taken away" in line]
    assert len(said) == 1 and said[0].startswith("da-submit: error: the framework was taken "
                                                 "away: "), job.output
    assert ("another scheduler subscribed" if how == "failed over" else "removed it") in said[0]
    meta, trials = _record(job.job_dir())
    assert meta["outcome"] == "FRAMEWORK_LOST" and meta["state"] == "ENDED"
    assert not [t for t in trials if t[1] in ("PENDING", "LAUNCHING", "RUNNING")], trials
    killed = [t for t in trials if t[1] == "KILLED"]
    assert len(killed) >= 2 and all("taken away" in message for _, _, message in killed)
    results = json.loads((job.job_dir() / "results.json").read_text())
    assert results["outcome"] == "FRAMEWORK_LOST" and results["exit_status"] == 7
    if how == "failed over":
        thief.close()


FLOOD = '''
import os, sys
from apprunner_sdk import report
block = (b"y" * 1023 + b"\\n") * 1024
for _ in range(100):
    os.write(1, block)
os.write(1, b"THE LAST LINE OF STDOUT\\n")
report(accuracy=0.5, final=True)
'''


@pytest.mark.parametrize("slot_mode", ["task", "warm"])
def test_a_trial_printing_100_mb_leaves_small_folders(submit: Any, workdir: Path,
                                                      slot_mode: str) -> None:
    (workdir / "runner.py").write_text(FLOOD)
    job = submit(*common_flags(workdir, "--trail-steps", "1", "--parallelism", "1",
                               "--slot-mode", slot_mode))
    assert job.wait(timeout=180) == 0, job.output
    job_dir = job.job_dir()
    meta, trials = _record(job_dir)
    assert meta["outcome"] == "BUDGET_SPENT" and [t[1] for t in trials] == ["COMPLETED"]
    # A slot task's sandbox is its folder in the slot executor's: capped the same way.
    sandbox = next(job_dir.glob("cluster/**/executors/trial-0001/runs/*[!t]")) \
        if slot_mode == "task" else next(job_dir.glob("cluster/**/runs/*/tasks/trial-0001"))
    files = {p.name: p.stat().st_size for p in sandbox.iterdir() if p.name.startswith("stdout")}
    assert set(files) == {"stdout", "stdout.1"} and max(files.values()) <= 10 * 2**20, files
    assert (sandbox / "stdout").read_bytes().endswith(b"THE LAST LINE OF STDOUT\n")
    copy = job_dir / "logs" / "trial-0001.stdout"
    assert copy.stat().st_size <= 2**20 + 300
    text = copy.read_bytes()
    assert text.startswith(b"[disauto: ") and text.endswith(b"THE LAST LINE OF STDOUT\n")
    total = sum(p.stat().st_size for p in job_dir.rglob("*") if p.is_file()
                and "cluster" not in p.relative_to(job_dir).parts)
    assert total < 8 * 2**20, total
