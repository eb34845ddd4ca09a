"""A whole job whose trials run in Docker containers on the embedded cluster (da-submit
--docker-image), on a real Docker engine with the small runner image."""

from __future__ import annotations

import json
from pathlib import Path
import time
from typing import Any
from urllib.parse import quote
from urllib.request import urlopen

import pytest

from tests.e2e.conftest import common_flags
from tests.e2e.conftest import master_state


pytestmark = pytest.mark.slow

RUNNER = '''
import os, sys, time
from apprunner_sdk import get_params, output_path, report

p = get_params()
print(f"sandbox={os.environ.get('MESOS_SANDBOX')} python={sys.executable}", flush=True)
acc = 1.0 - (float(p["x"]) - 0.3) ** 2 - 0.01 * float(p["n"])
for epoch in range(int(os.environ["EPOCHS"])):
    print(f"epoch {epoch}", flush=True)
    time.sleep(0.5)
    report(accuracy=acc * (epoch + 1) / int(os.environ["EPOCHS"]), step=epoch)
output_path().write_text(f"model of x={p['x']}")
report(accuracy=acc, final=True)
'''


def get_json(url: str) -> Any:
    with urlopen(url, timeout=5) as response:  # noqa: S310 - loopback
        return json.loads(response.read())


def running_trial_sandbox(url: str) -> tuple[str, str] | None:
    """``(task id, sandbox directory)`` of a running trial, from the master and agent state."""
    running = {t["id"] for f in master_state(url)["frameworks"] for t in f["tasks"]
               if t["name"].startswith("trial-") and t["state"] == "TASK_RUNNING"}
    if not running:
        return None
    agent = get_json(f"{url}/slave(1)/state")
    for framework in agent["frameworks"]:
        for executor in framework["executors"]:
            if executor["id"] in running:
                return executor["id"], executor["directory"]
    return None


def test_a_job_runs_every_trial_in_a_container_with_live_logs(
    submit: Any, workdir: Path, runner_image: str, docker_engine: Any
) -> None:
    (workdir / "runner.py").write_text(RUNNER)
    out = workdir / "models"
    flags = common_flags(workdir, "--trail-steps", "4", "--parallelism", "2",
                         "--docker-image", runner_image, "--output", f"{out}#model")
    flags[flags.index("python runner.py")] = "EPOCHS=6 python runner.py"
    job = submit(*flags)
    url = job.master_url()

    # While a trial runs, its container's stdout is readable through the master's /files/read.
    live = ""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and "epoch 1" not in live:
        found = running_trial_sandbox(url)
        if found is not None:
            task_id, directory = found
            read = get_json(f"{url}/files/read?path={quote(directory)}/stdout&offset=0")
            still_running = any(t["id"] == task_id and t["state"] == "TASK_RUNNING"
                                for f in master_state(url)["frameworks"] for t in f["tasks"])
            if still_running:
                live = read["data"]
        time.sleep(0.1)
    assert "epoch 1" in live and "epoch 5" not in live, live
    assert live.startswith("sandbox=/mnt/mesos/sandbox python=/usr/local/bin/python")

    assert job.wait(240) == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT"
    assert [t["state"] for t in results["trials"]] == ["COMPLETED"] * 4
    # Every trial ran in the image: its sandbox says so, and it wrote its output through the
    # --output folder mounted into the container.
    stdouts = sorted((job.job_dir() / "cluster").glob(
        "slaves/*/frameworks/*/executors/trial-*/runs/latest/stdout"))
    assert len(stdouts) == 4
    for stdout in stdouts:
        lines = stdout.read_text().splitlines()
        assert lines[0] == "sandbox=/mnt/mesos/sandbox python=/usr/local/bin/python"
        assert lines[1:] == [f"epoch {i}" for i in range(6)]
    assert len(list(out.glob("trial-*/model"))) == 4
    best = results["best"]
    assert (out / "model").read_text() == f"model of x={best['assignment']['x']}"
    # The containers are gone once their logs were collected.
    leftovers = docker_engine.containers(
        all=True, filters={"label": f"disauto.job={results['job_id']}"})
    assert leftovers == []


def test_a_job_whose_image_is_missing_fails_its_trials_with_the_reason(
    submit: Any, workdir: Path, docker_engine: Any
) -> None:
    job = submit(*common_flags(workdir, "--trail-steps", "3", "--max-failed-trials", "1",
                               "--docker-image", "disauto-test/not-built:0"))
    assert job.wait(180) == 4, job.output  # too many trials failed
    results = job.results()
    messages = [t.get("message", "") for t in results["trials"] if t["state"] == "FAILED"]
    assert messages and all("image 'disauto-test/not-built:0' is not on this machine" in m
                            for m in messages), messages
