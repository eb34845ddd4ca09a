"""Warm slots with containers (``--docker-image``: one container per slot, each trial exec'd in
it, on a real Docker engine) and with GPUs (fake GPUs declared by ``da-cluster --gpus``: a slot
keeps its devices for its life)."""

from __future__ import annotations

from collections import defaultdict
import os
from pathlib import Path
import signal
import threading
import time
from typing import Any

import pytest

from disauto.common.processes import with_environment
from tests.e2e.conftest import DaCluster
from tests.e2e.conftest import common_flags
from tests.e2e.test_warm_slots import check_budget
from tests.e2e.test_warm_slots import slots_started


pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Says where it ran: its container (the slot's name, and PID 1 of its PID namespace), its slot,
# its devices and its interpreter.
RUNNER = '''
import os, sys, time
from apprunner_sdk import get_params, report
p = get_params()
init = open("/proc/1/cmdline", "rb").read().replace(b"\\0", b" ").decode()
print(f"container={os.environ.get('MESOS_CONTAINER_NAME', '')}", flush=True)
# A container trial is told its slot; a host one sees it in its sandbox's path.
sandbox = os.environ.get("MESOS_SANDBOX", "")
slot = os.environ.get("MESOS_EXECUTOR_ID") or sandbox.partition("/executors/")[2].split("/")[0]
print(f"slot={slot}", flush=True)
print(f"gpus={os.environ.get('CUDA_VISIBLE_DEVICES', '-')}", flush=True)
print(f"python={sys.executable}", flush=True)
print(f"init={init}", flush=True)
time.sleep(float(os.environ.get("RUNNER_SLEEP", "0")))
acc = 1.0 - (float(p.get("x", 0.5)) - 0.3) ** 2 - 0.01 * float(p.get("n", 0))
report(accuracy=acc, final=True)
'''


def flags(workdir: Path, sleep: float, *extra: str) -> list[str]:
    """The job's flags, its trials sleeping ``sleep`` seconds (a container gets only the task's
    environment, so the sleep is in the launch command)."""
    out = common_flags(workdir, "--slot-mode", "warm", *extra)
    out[out.index("python runner.py")] = f"RUNNER_SLEEP={sleep} python runner.py"
    return out


def said(job_dir: Path, task_id: str) -> dict[str, str]:
    """What a trial's task printed (its collected stdout)."""
    text = (job_dir / "logs" / f"{task_id}.stdout").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


class EngineWatch:
    """The slot containers the engine runs while a job runs (polled by name, with the job that
    each belongs to: an earlier test's slot containers may still be on their way out)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.seen: list[set[tuple[str, str]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            found = self.engine.containers(filters={"label": "disauto.role=slot"})
            self.seen.append({(str((c.get("Labels") or {}).get("disauto.job", "")),
                               str(c["Names"][0]).lstrip("/")) for c in found})
            self._stop.wait(0.2)

    def names(self, job: str) -> set[str]:
        """Every slot container of ``job`` seen."""
        return {name for each in self.seen for owner, name in each if owner == job}

    def most_at_once(self, job: str) -> int:
        return max((sum(1 for owner, _ in each if owner == job) for each in self.seen),
                   default=0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


@pytest.mark.parametrize("where", [pytest.param("local", marks=pytest.mark.long), "da-cluster"])
def test_a_warm_job_runs_its_trials_in_one_container_per_slot(
        submit: Any, workdir: Path, runner_image: str, docker_engine: Any, tmp_path: Path,
        where: str) -> None:
    (workdir / "runner.py").write_text(RUNNER)
    cluster = DaCluster(tmp_path / "da-cluster") if where == "da-cluster" else None
    master = ("--master", cluster.start()) if cluster is not None else ()
    watch = EngineWatch(docker_engine)
    try:
        job = submit(*flags(workdir, 0.5, "--trail-steps", "8", "--parallelism", "2",
                            "--docker-image", runner_image, *master))
        assert job.wait(300) == 0, job.output
    finally:
        watch.stop()
        if cluster is not None:
            cluster.kill()
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    trials = check_budget(results, 8)
    assert all(t["state"] == "COMPLETED" for t in trials)
    # On the record: every trial ran in the image, in a slot's container, as a task of a slot.
    started = slots_started(job.job_dir())
    prints = [said(job.job_dir(), t["task_id"]) for t in trials]
    for printed in prints:
        assert printed["python"] == "/usr/local/bin/python", printed
        assert printed["init"].startswith("/sbin/docker-init -- /bin/sh -c while read"), printed
        assert printed["slot"] in started, printed
    containers = {p["container"] for p in prints}
    assert 1 <= len(containers) <= 2, containers  # at most `parallelism`, never one per trial
    # Each slot had one container, and each container served one slot.
    by_slot = defaultdict(set)
    for printed in prints:
        by_slot[printed["slot"]].add(printed["container"])
    assert all(len(names) == 1 for names in by_slot.values()), by_slot
    # Through the engine: those containers, no more than `parallelism` at once, and all gone.
    job_id = job.job_dir().name
    assert containers <= watch.names(job_id), (containers, watch.seen)
    assert watch.most_at_once(job_id) <= 2
    deadline = time.monotonic() + 30
    while docker_engine.containers(all=True, filters={"label": "disauto.role=slot"}):
        assert time.monotonic() < deadline, "slot containers outlived their job"
        time.sleep(0.2)


# Says what forked it and where it runs; trial 3 sleeps far longer than the job may take.
PRELOADED_RUNNER = '''
import os, sys, time
from apprunner_sdk import get_params, report
p = get_params()
parent = open(f"/proc/{os.getppid()}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
init = open("/proc/1/cmdline", "rb").read().replace(b"\\0", b" ").decode()
print(f"container={os.environ.get('MESOS_CONTAINER_NAME', '')}", flush=True)
print(f"parent={parent}", flush=True)
print(f"python={sys.executable}", flush=True)
print(f"init={init}", flush=True)
print(f"sandbox={os.environ.get('MESOS_SANDBOX')}", flush=True)
print(f"cwd={os.getcwd()}", flush=True)
print(f"path={os.environ.get('PATH', '')}", flush=True)
print(f"number={os.environ.get('DISAUTO_TRIAL_NUMBER')}", flush=True)
if os.environ.get("DISAUTO_TRIAL_NUMBER") == "3":
    time.sleep(600)
report(accuracy=1.0 - (float(p.get("x", 0.5)) - 0.3) ** 2, final=True)
'''


def test_preloaded_slots_in_containers_fork_trials_from_the_images_python(
        submit: Any, workdir: Path, runner_image: str, docker_engine: Any) -> None:
    """``--slot-preload`` with ``--docker-image``: each slot's interpreter is the image's
    Python in the slot's container, which forks every trial there; a trial that runs past
    ``--trial-timeout`` is killed through it (its pid is the container's)."""
    (workdir / "runner.py").write_text(PRELOADED_RUNNER)
    job = submit(*common_flags(workdir, "--slot-mode", "warm", "--slot-preload",
                               "apprunner_sdk", "--docker-image", runner_image,
                               "--trail-steps", "6", "--parallelism", "2",
                               "--trial-timeout", "8s"))
    assert job.wait(240) == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    trials = check_budget(results, 6)
    assert [t["state"] for t in trials] == ["COMPLETED"] * 2 + ["TIMEOUT"] + ["COMPLETED"] * 3
    prints = [said(job.job_dir(), t["task_id"]) for t in trials]
    started = slots_started(job.job_dir())
    for trial, printed in zip(trials, prints, strict=True):
        # Forked by the launch command's `python`, the image's, running the sandbox's copy.
        assert printed["parent"] == ("python /mnt/mesos/sandbox/.zygote.py "
                                     "unix:/mnt/mesos/sandbox/.zygote.sock apprunner_sdk "
                                     ), printed
        assert printed["python"] == "/usr/local/bin/python", printed
        assert printed["init"].startswith("/sbin/docker-init -- /bin/sh -c while read"), printed
        own = f"/mnt/mesos/sandbox/tasks/{trial['task_id']}"
        assert printed["sandbox"] == printed["cwd"] == own, printed
        assert "/usr/local/bin" in printed["path"].split(":"), printed  # the image's PATH
        assert printed["number"] == str(trial["number"]), printed
        if trial["state"] == "COMPLETED":
            assert trial["usage"]["peak_rss_bytes"] > 0, trial  # measured when reaped
    containers = {p["container"] for p in prints}
    assert 1 <= len(containers) <= len(started), (containers, started)
    ours = {"label": f"disauto.job={job.job_dir().name}"}
    deadline = time.monotonic() + 30
    while docker_engine.containers(all=True, filters=ours):
        assert time.monotonic() < deadline, "slot containers outlived their job"
        time.sleep(0.2)


def _trial_process(job: Any, number: int, timeout: float = 120.0) -> int:
    """The host pid of the job's trial ``number``'s runner (inside its slot's container)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in job.trial_processes(number):
            return int(pid)
        time.sleep(0.2)
    raise AssertionError(f"trial {number} never ran")


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def _executor_process(executor_id: str) -> int:
    for pid in with_environment("MESOS_EXECUTOR_ID", executor_id):
        if b"disauto.executor" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
    raise AssertionError(f"no executor process for {executor_id}")


@pytest.mark.parametrize("how", [pytest.param("docker kill", marks=pytest.mark.long),
                                 "kill -9 of the executor"])
def test_a_killed_slot_container_has_its_trial_retried_as_lost(
        submit: Any, workdir: Path, runner_image: str, docker_engine: Any, how: str) -> None:
    (workdir / "runner.py").write_text(RUNNER)
    job = submit(*flags(workdir, 3, "--trail-steps", "6", "--parallelism", "2",
                        "--docker-image", runner_image))
    runner = _trial_process(job, 2)
    env = _environ(runner)
    container, executor_id = env["MESOS_CONTAINER_NAME"], env["MESOS_EXECUTOR_ID"]
    if how == "docker kill":
        docker_engine.kill(container)
    else:
        os.kill(_executor_process(executor_id), signal.SIGKILL)
    assert job.wait(300) == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    trials = check_budget(results, 6)
    assert all(t["state"] == "COMPLETED" for t in trials), job.output
    retried = trials[1]
    assert retried["task_id"] == "trial-0002.1", retried  # lost, launched again
    # It ran again on another slot's container.
    assert said(job.job_dir(), "trial-0002.1")["container"] != container
    assert len(slots_started(job.job_dir())) >= 3  # the dead slot was replaced
    deadline = time.monotonic() + 30
    while docker_engine.containers(all=True, filters={"label": "disauto.role=slot"}):
        assert time.monotonic() < deadline, "slot containers outlived their job"
        time.sleep(0.2)


def test_gpu_slots_keep_their_devices_for_their_life(submit: Any, workdir: Path,
                                                     tmp_path: Path) -> None:
    (workdir / "runner.py").write_text(RUNNER)
    cluster = DaCluster(tmp_path / "da-cluster", extra=("--gpus", "2"))
    try:
        address = cluster.start()
        job = submit(*flags(workdir, 0.5, "--trail-steps", "8", "--parallelism", "2",
                            "--app-runner-gpus", "1", "--master", address))
        assert job.wait(300) == 0, job.output
    finally:
        cluster.kill()
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    trials = check_budget(results, 8)
    assert all(t["state"] == "COMPLETED" for t in trials)
    devices: dict[str, set[str]] = defaultdict(set)
    for trial in trials:
        printed = said(job.job_dir(), trial["task_id"])
        devices[printed["slot"]].add(printed["gpus"])
    # Every trial of a slot saw the same one device; the two first slots (which ran at once)
    # had different ones.
    assert all(len(seen) == 1 and next(iter(seen)) in {"0", "1"} for seen in devices.values()), \
        devices
    first = sorted(devices, key=lambda s: int(s.rsplit("-", 1)[1]))[:2]
    assert len(first) == 2 and devices[first[0]] != devices[first[1]], devices
    assert sum(1 for t in trials) > len(devices)  # slots were reused
