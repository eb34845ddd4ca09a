"""The DisAuto executor (``python -m disauto.executor``) on an embedded agent, driven by a raw
v1 scheduler: the real pymesos ``MesosExecutorDriver`` under it, every event shape-checked."""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import os
from pathlib import Path
import signal
import sys
from typing import Any
from urllib.parse import urlencode

import pytest

from disauto.common import slots
from disauto.common import task_usage
from disauto.common.python_command import parse_python_command
from disauto.localmesos.cluster import LocalCluster
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import scalar
from tests.localmesos.cluster_support import wait_until
from tests.localmesos.executor_support import pid_alive


pytestmark = pytest.mark.integration  # starts processes and servers

EXECUTOR_COMMAND = f"{sys.executable} -m {slots.EXECUTOR_MODULE}"


@contextlib.contextmanager
def framework() -> Iterator[tuple[LocalCluster, RawFramework]]:
    with running_cluster(cpus=2.0) as cluster:
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        raw.subscribe()
        try:
            yield cluster, raw
        finally:
            raw.close()


def slot(uris: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"executor_id": {"value": "job-slot-0"}, "type": "CUSTOM",
            "command": {"value": EXECUTOR_COMMAND, "uris": uris or []},
            "resources": [scalar("cpus", 0.1), scalar("mem", 32)]}


def launch(raw: RawFramework, used: set[str], task_id: str, command: str,
           env: dict[str, str] | None = None, executor: dict[str, Any] | None = None,
           **extra: Any) -> dict[str, Any]:
    offer = wait_until(lambda: next((o for o in raw.offers() if o["id"]["value"] not in used
                                     and _fits(o)), None), timeout=10)
    used.add(offer["id"]["value"])
    task = command_task(offer, task_id, "unused", cpus=0.1, mem=32)
    del task["command"]
    task["executor"] = executor or slot()
    task["data"] = slots.task_data(command, env or {})
    task.update(extra)
    raw.launch(offer, [task], refuse_seconds=0)
    return offer


def _fits(offer: dict[str, Any]) -> bool:
    """Whether an offer holds a task and a new slot's executor (0.1 CPU and 32 MB each): the
    resources a finished task frees come back as an offer of their own, too small for both."""
    held: dict[str, float] = {}
    for resource in offer["resources"]:
        if resource.get("type", "SCALAR") == "SCALAR":
            held[resource["name"]] = held.get(resource["name"], 0.0) + resource["scalar"]["value"]
    return held.get("cpus", 0.0) >= 0.2 - 1e-9 and held.get("mem", 0.0) >= 64


def final(raw: RawFramework, task_id: str, timeout: float = 20) -> dict[str, Any]:
    event = raw.wait_event(
        lambda e: e["type"] == "UPDATE" and e["update"]["status"]["task_id"]["value"] == task_id
        and e["update"]["status"]["state"] not in ("TASK_STARTING", "TASK_RUNNING"), timeout)
    return dict(event["update"]["status"])


def executor_dir(cluster: LocalCluster) -> Path:
    """The slot executor's sandbox (once the agent lists it)."""
    def listed() -> str | None:
        for framework_state in cluster.agents[0].state()["frameworks"]:
            for executor in framework_state["executors"] + framework_state[
                    "completed_executors"]:
                if executor["id"] == "job-slot-0":
                    return str(executor["directory"])
        return None

    return Path(wait_until(listed, timeout=10))


def read_pid(path: Path) -> int:
    wait_until(lambda: path.exists() and path.read_text().strip(), timeout=10)
    return int(path.read_text().split()[0])


def test_one_executor_runs_each_task_in_its_own_sandbox_and_process(tmp_path: Path) -> None:
    data = tmp_path / "input.txt"
    data.write_text("shared input\n")
    with framework() as (cluster, raw):
        used: set[str] = set()
        executor = slot([{"value": str(data)}])
        for n in range(3):
            launch(raw, used, f"t{n}", 'echo "$GREETING $MESOS_TASK_ID"; echo oops >&2; '
                   'cat input.txt; echo $PPID > ppid', {"GREETING": f"hello{n}"}, executor)
            finished = final(raw, f"t{n}")
            assert finished["state"] == "TASK_FINISHED"
            assert finished["message"] == "Command exited with status 0"
            usage = task_usage.read_status_data(finished.get("data"))  # what it used
            assert usage is not None and usage.max_rss_bytes > 0
            assert [s["state"] for s in raw.updates(f"t{n}")] == [
                "TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]
        root = executor_dir(cluster)
        parents = {read_pid(root / slots.task_sandbox(f"t{n}") / "ppid") for n in range(3)}
        assert len(parents) == 1  # one executor process ran the three
        for n in range(3):
            sandbox = root / slots.task_sandbox(f"t{n}")
            assert (sandbox / "stdout").read_text() == f"hello{n} t{n}\nshared input\n"
            assert (sandbox / "stderr").read_text() == "oops\n"
        # The agent's /files API serves a task's sandbox (the framework's log collector).
        answer = get_json(cluster, "/files/read?" + urlencode(
            {"path": f"{root}/{slots.task_sandbox('t1')}/stdout", "offset": 0}))
        assert answer["data"].startswith("hello1 t1")


def test_exit_status_kill_and_bad_data() -> None:
    with framework() as (cluster, raw):
        used: set[str] = set()
        launch(raw, used, "fails", "exit 3")
        failed = final(raw, "fails")
        assert failed["state"] == "TASK_FAILED"
        assert failed["message"] == "Command exited with status 3"
        launch(raw, used, "stubborn", "trap '' TERM; echo $$ > pid; sleep 60",
               kill_policy={"grace_period": {"nanoseconds": 200_000_000}})
        pid = read_pid(executor_dir(cluster) / slots.task_sandbox("stubborn") / "pid")
        wait_until(lambda: any(s["state"] == "TASK_RUNNING" for s in raw.updates("stubborn")))
        assert raw.call("KILL", kill={"task_id": {"value": "stubborn"}}) == 202
        killed = final(raw, "stubborn")
        assert killed["state"] == "TASK_KILLED"
        assert killed["message"] == "Command terminated with signal SIGKILL"
        assert not pid_alive(pid)
        offer = launch(raw, used, "bad", "true")
        raw.wait_event(lambda e: e["type"] == "UPDATE"
                       and e["update"]["status"]["task_id"]["value"] == "bad")
        assert offer["executor_ids"] == [{"value": "job-slot-0"}]  # the slot outlived them


def test_shutdown_kills_tasks_reports_them_and_ends_the_executor() -> None:
    with framework() as (cluster, raw):
        used: set[str] = set()
        offer = launch(raw, used, "long", "echo $$ > pid; echo $PPID > ppid; sleep 60")
        sandbox = executor_dir(cluster) / slots.task_sandbox("long")
        pid, executor_pid = read_pid(sandbox / "pid"), read_pid(sandbox / "ppid")
        assert raw.call("SHUTDOWN", shutdown={"executor_id": {"value": "job-slot-0"},
                                              "agent_id": offer["agent_id"]}) == 202
        killed = final(raw, "long")
        assert killed["state"] == "TASK_KILLED" and killed["source"] == "SOURCE_EXECUTOR"
        wait_until(lambda: not pid_alive(pid) and not pid_alive(executor_pid), timeout=10)
        failure = raw.wait_event(lambda e: e["type"] == "FAILURE")["failure"]
        assert failure["executor_id"] == {"value": "job-slot-0"}


def test_a_killed_executor_takes_its_tasks_with_it() -> None:
    with framework() as (cluster, raw):
        used: set[str] = set()
        launch(raw, used, "orphan", "echo $$ > pid; echo $PPID > ppid; sleep 60")
        sandbox = executor_dir(cluster) / slots.task_sandbox("orphan")
        pid, executor_pid = read_pid(sandbox / "pid"), read_pid(sandbox / "ppid")
        os.kill(executor_pid, signal.SIGKILL)
        failed = final(raw, "orphan")
        assert failed["state"] == "TASK_FAILED"
        assert failed["reason"] == "REASON_EXECUTOR_TERMINATED"
        wait_until(lambda: not pid_alive(pid), timeout=10)


def test_a_warm_up_task_starts_the_slots_interpreter_before_its_first_trial(
        tmp_path: Path) -> None:
    """A warm-up task (``framework/_slots.py`` warm_up_task) starts the pre-imported
    interpreter and ends FINISHED; the next trial is forked from that very interpreter. One
    that names a module that cannot be imported ends FAILED, naming it."""
    script = tmp_path / "trial.py"
    script.write_text("import os\nopen('ppid', 'w').write(str(os.getppid()))\n")
    command = f"{sys.executable} trial.py"
    preload = slots.Preload(parse_python_command(command), ("json",))
    warm_up = slots.Warmup(0.1, 32.0)
    with framework() as (cluster, raw):
        used: set[str] = set()
        executor = slot([{"value": str(script)}])
        launch(raw, used, slots.warmup_task_id("job-slot-0"), command, executor=executor,
               data=slots.task_data(command, {}, preload, warm_up))
        ready = final(raw, "job-slot-0-warmup")
        assert (ready["state"], ready["message"]) == ("TASK_FINISHED", "the slot is ready")
        assert [s["state"] for s in raw.updates("job-slot-0-warmup")] == [
            "TASK_RUNNING", "TASK_FINISHED"]
        root = executor_dir(cluster)
        interpreters = [pid for pid in _pids() if _cwd(pid) == root
                        and b"zygote.py" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        assert len(interpreters) == 1  # started by the warm-up, before any trial
        launch(raw, used, "t1", command, executor=executor,
               data=slots.task_data(command, {}, preload))
        assert final(raw, "t1")["state"] == "TASK_FINISHED"
        assert read_pid(root / slots.task_sandbox("t1") / "ppid") == interpreters[0]
        assert not (root / slots.task_sandbox("job-slot-0-warmup")).exists()

        broken = slots.Preload(parse_python_command(command), ("no_such_module_here",))
        other = {**slot([{"value": str(script)}]), "executor_id": {"value": "job-slot-1"}}
        launch(raw, used, "job-slot-1-warmup", command, executor=other,
               data=slots.task_data(command, {}, broken, warm_up))
        failed = final(raw, "job-slot-1-warmup")
        assert failed["state"] == "TASK_FAILED"
        assert failed["message"].startswith("cannot warm up: ")
        assert "no_such_module_here" in failed["message"]


def _pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def _cwd(pid: int) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None
