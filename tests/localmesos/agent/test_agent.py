"""The embedded agent end to end: real sandboxes, real fetches, real processes, real retries.

``Master`` (:mod:`tests.localmesos.agent_support`) is the agent's whole view of the master: the
``send_update`` callback (and, when asked to, the acknowledgement a framework would send back).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
import io
import os
from pathlib import Path
import pwd
import shutil
import tarfile
import tempfile
import threading
import time
from typing import Any

import pytest

from disauto.common.resources import Resources
from disauto.localmesos.agent import sandbox as files
from disauto.localmesos.agent.agent import Agent
from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.agent.config import default_disk_mb
from disauto.localmesos.agent.sandbox import latest_virtual_path
from tests.localmesos.agent_support import FID
from tests.localmesos.agent_support import FW
from tests.localmesos.agent_support import Master
from tests.localmesos.agent_support import make_agent
from tests.localmesos.agent_support import task
from tests.localmesos.cluster_support import wait_until
from tests.localmesos.web_support import serving


pytestmark = pytest.mark.integration  # starts processes or servers


@pytest.fixture
def master() -> Master:
    return Master()


@pytest.fixture
def agent(tmp_path: Path, master: Master) -> Iterator[Agent]:
    agent = make_agent(tmp_path, master)
    yield agent
    agent.stop()


@pytest.fixture
def web(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "www"
    root.mkdir()
    with serving(root) as url:
        yield url, root


# -- configuration and AgentInfo --------------------------------------------------------------


def test_config_defaults_follow_mesos(tmp_path: Path) -> None:
    config = AgentConfig()
    assert config.cpus == float(os.cpu_count() or 1)
    total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    expected_mem = total_mb / 2 if total_mb < 2048 else total_mb - 1024
    assert abs(config.mem_mb - expected_mem) <= 1
    disk_mb = shutil.disk_usage(tmp_path).total / 2**20
    expected_disk = disk_mb / 2 if disk_mb < 10240 else disk_mb - 5120
    assert abs(default_disk_mb(tmp_path / "not" / "yet") - expected_disk) <= 1
    assert config.ports == ((31000, 32000),)
    assert config.gpus == 0
    assert config.gpu_devices == ()
    assert AgentConfig(gpus=2).gpu_devices == (0, 1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"cpus": 0}, "cpus"),
        ({"mem_mb": -1}, "mem_mb"),
        ({"gpus": -1}, "gpus"),
        ({"gpus": 2, "gpu_indices": (0,)}, "gpu_indices"),
        ({"gpus": 2, "gpu_indices": (1, 1)}, "gpu_indices"),
        ({"ports": ((32000, 31000),)}, "port"),
    ],
)
def test_config_validation(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        AgentConfig(**kwargs)


def test_info_and_total(tmp_path: Path, master: Master) -> None:
    config = AgentConfig(
        cpus=4,
        mem_mb=2048,
        disk_mb=4096,
        gpus=2,
        ports=((31000, 31099),),
        attributes={"rack": "r1", "speed": 2.5, "ssd": True},
        hostname="localhost",
    )
    agent = make_agent(tmp_path, master, config=config)
    try:
        info = agent.info()
        assert info["id"] == {"value": "M-S0"}
        assert info["hostname"] == "localhost"
        assert info["port"] == 5051
        assert Resources.from_json(info["resources"]) == agent.total
        assert agent.total.scalar("gpus") == 2
        assert agent.total.ranges("ports") == [(31000, 31099)]
        assert info["attributes"] == [
            {"name": "rack", "type": "TEXT", "text": {"value": "r1"}},
            {"name": "speed", "type": "SCALAR", "scalar": {"value": 2.5}},
            {"name": "ssd", "type": "TEXT", "text": {"value": "true"}},
        ]
    finally:
        agent.stop()
    no_gpus = make_agent(tmp_path, Master(), config=AgentConfig(cpus=1, mem_mb=64, disk_mb=64))
    try:
        assert "gpus" not in no_gpus.total.scalars
    finally:
        no_gpus.stop()


# -- command tasks ----------------------------------------------------------------------------


def test_command_task_runs_in_its_sandbox_and_finishes(agent: Agent, master: Master) -> None:
    script = (
        "echo hello; echo oops >&2; pwd; "
        'echo "$MESOS_SANDBOX|$MESOS_TASK_ID|$MESOS_FRAMEWORK_ID|$MESOS_EXECUTOR_ID|'
        '$MESOS_SLAVE_ID|$MESOS_AGENT_ENDPOINT|$MESOS_CHECKPOINT|$TRIAL|$PORTS|$PORT1"'
    )
    resources = Resources({"cpus": 0.1}, {"ports": [(31005, 31006)]}).to_json()
    command = {
        "value": script,
        "environment": {"variables": [{"name": "TRIAL", "value": "trial-7"}]},
    }
    agent.launch_task(FW, task("t1", command, resources=resources))

    finished = master.wait("t1", "TASK_FINISHED")
    assert master.states("t1") == ["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]
    for update in master.of("t1"):
        assert update["agent_id"] == {"value": "M-S0"}
        assert update["executor_id"] == {"value": "t1"}
        assert update["framework_id"] == {"value": FID}
        assert update["source"] == "SOURCE_EXECUTOR"
        assert len(base64.b64decode(update["uuid"])) == 16
        assert isinstance(update["timestamp"], float)
    assert finished["message"] == "Command exited with status 0"

    sandbox = agent.task_sandbox(FID, "t1")
    assert sandbox is not None
    assert sandbox.parent.parent == (agent.work_dir / "slaves/M-S0/frameworks/M-0000/executors/t1")
    lines = (sandbox / "stdout").read_text().splitlines()
    assert lines[0] == "hello"
    assert Path(lines[1]).resolve() == sandbox.resolve()
    assert lines[2] == (f"{sandbox}|t1|{FID}|t1|M-S0|127.0.0.1:5050|0|trial-7|31005,31006|31006")
    assert (sandbox / "stderr").read_text() == "oops\n"
    wait_until(lambda: agent.latest_state(FID, "t1") is None)  # terminal update acked
    assert agent.running_tasks() == []
    assert agent.task_sandbox(FID, "t1") == sandbox  # the sandbox outlives the task


def test_command_task_environment_names_its_role_and_checkpointing(agent: Agent,
                                                                   master: Master) -> None:
    """Mesos sets ``MESOS_CHECKPOINT`` (and, checkpointing, ``MESOS_RECOVERY_TIMEOUT`` and
    ``MESOS_SUBSCRIPTION_BACKOFF_MAX``) in the command executor's environment, which its task
    inherits (``src/slave/slave.cpp`` ``executorEnvironment``), and the command executor
    sets ``MESOS_ALLOCATION_ROLE`` to the role of the task's resources last, over the
    task's own variables (``src/launcher/executor.cpp`` ``launch``)."""
    script = ('echo "$MESOS_ALLOCATION_ROLE|$MESOS_CHECKPOINT|${MESOS_RECOVERY_TIMEOUT-unset}|'
              '${MESOS_SUBSCRIPTION_BACKOFF_MAX-unset}"')
    resources = Resources({"cpus": 0.1, "mem": 32}).to_json()
    for resource in resources:
        resource["allocation_info"] = {"role": "ml"}
    command = {"value": script, "environment": {"variables": [
        {"name": "MESOS_ALLOCATION_ROLE", "value": "mine"}]}}
    checkpointing = {**FW, "checkpoint": True, "roles": ["ml"]}
    agent.launch_task(checkpointing, task("kept", command, resources=resources))
    agent.launch_task(FW, task("plain", script))
    master.wait("kept", "TASK_FINISHED")
    master.wait("plain", "TASK_FINISHED")

    def printed(task_id: str) -> str:
        sandbox = agent.task_sandbox(FID, task_id)
        assert sandbox is not None
        return (sandbox / "stdout").read_text().strip()

    assert printed("kept") == "ml|1|15mins|2secs"
    assert printed("plain") == "*|0|unset|unset"


def test_file_roots_serve_sandboxes_to_the_files_endpoints(agent: Agent, master: Master) -> None:
    agent.launch_task(FW, task("logged", "echo line one; echo line two"))
    master.wait("logged", "TASK_FINISHED")
    sandbox = agent.task_sandbox(FID, "logged")
    assert sandbox is not None
    roots = agent.file_roots()
    latest = latest_virtual_path("M-S0", FID, "logged")

    assert files.read(roots, f"{sandbox}/stdout", 0) == {
        "data": "line one\nline two\n",
        "offset": 0,
    }
    assert files.read(roots, f"{latest}/stdout", 5, 3) == {"data": "one", "offset": 5}
    names = [e["path"].rsplit("/", 1)[1] for e in files.browse(roots, latest)]
    assert names == ["stderr", "stdout"]
    with pytest.raises(files.SandboxNotFound):
        files.browse(roots, str(agent.work_dir))


def test_file_roots_are_built_again_only_when_a_sandbox_is_added(agent: Agent,
                                                                 master: Master) -> None:
    agent.launch_task(FW, task("first", "true"))
    master.wait("first", "TASK_FINISHED")
    roots = agent.file_roots()
    assert agent.file_roots() is roots  # nothing new: the same mapping (issue 29)
    agent.launch_task(FW, task("second", "echo two"))
    master.wait("second", "TASK_FINISHED")
    again = agent.file_roots()
    assert again is not roots
    latest = latest_virtual_path("M-S0", FID, "second")
    assert files.read(again, f"{latest}/stdout", 0) == {"data": "two\n", "offset": 0}


def test_failing_commands_report_status_or_signal(agent: Agent, master: Master) -> None:
    """As Mesos' command executor reports its command's end (``src/launcher/executor.cpp``
    ``reaped``): ``"Command " + WSTRINGIFY(status)`` (``src/common/status_utils.hpp``), from
    SOURCE_EXECUTOR, and no reason -- REASON_COMMAND_EXECUTOR_FAILED is not the command's."""
    agent.launch_task(FW, task("exit3", "exit 3"))
    agent.launch_task(FW, task("sig", "kill -9 $$"))
    agent.launch_task(FW, task("ok", "true"))

    failed = master.wait("exit3", "TASK_FAILED")
    assert failed["message"] == "Command exited with status 3"
    assert "reason" not in failed
    assert failed["source"] == "SOURCE_EXECUTOR"
    signalled = master.wait("sig", "TASK_FAILED")
    assert signalled["message"] == "Command terminated with signal Killed"
    assert "reason" not in signalled
    assert master.states("sig") == ["TASK_STARTING", "TASK_RUNNING", "TASK_FAILED"]
    finished = master.wait("ok", "TASK_FINISHED")
    assert finished["message"] == "Command exited with status 0"
    assert "reason" not in finished


def test_non_shell_command_and_launch_failure(agent: Agent, master: Master) -> None:
    agent.launch_task(
        FW,
        task("argv", {"shell": False, "value": "/bin/echo", "arguments": ["echo", "a  b", "$X"]}),
    )
    agent.launch_task(FW, task("nobin", {"shell": False, "value": "/no/such/binary"}))

    master.wait("argv", "TASK_FINISHED")
    sandbox = agent.task_sandbox(FID, "argv")
    assert sandbox is not None
    assert (sandbox / "stdout").read_text() == "a  b $X\n"
    failed = master.wait("nobin", "TASK_FAILED")
    assert "Failed to launch '/no/such/binary'" in failed["message"]
    assert "reason" not in failed  # the command's own failure: Mesos sets no reason


def test_kill_terminates_a_running_task(agent: Agent, master: Master) -> None:
    agent.launch_task(FW, task("sleeper", "sleep 30"))
    master.wait("sleeper", "TASK_RUNNING")
    assert agent.running_tasks() == [(FID, "sleeper")]

    started = time.monotonic()
    agent.kill_task(FID, "sleeper")
    killed = master.wait("sleeper", "TASK_KILLED")
    assert time.monotonic() - started < 2.0
    assert killed["source"] == "SOURCE_EXECUTOR"
    assert master.states("sleeper") == ["TASK_STARTING", "TASK_RUNNING", "TASK_KILLED"]
    agent.kill_task(FID, "sleeper")  # already gone: ignored
    agent.kill_task(FID, "never-launched")


def test_processes_a_task_left_outside_its_group_die_with_it(agent: Agent,
                                                             master: Master) -> None:
    from disauto.common.processes import with_environment

    # The command starts a child in a session of its own (setsid), which a kill of the
    # task's process group cannot reach, prints its pid, and exits a second later.
    agent.launch_task(FW, task("leaver", "setsid sleep 300 & echo $! > child.pid; sleep 1"))
    master.wait("leaver", "TASK_FINISHED")
    sandbox = agent.task_sandbox(FID, "leaver")
    assert sandbox is not None
    child = int((sandbox / "child.pid").read_text())
    wait_until(lambda: not Path(f"/proc/{child}").exists()
             or Path(f"/proc/{child}/stat").read_text().split(")")[1].split()[0] == "Z")
    assert with_environment("MESOS_SANDBOX", str(sandbox)) == []


def test_kill_policy_grace_then_sigkill(agent: Agent, master: Master) -> None:
    stubborn = "trap 'echo got TERM' TERM; echo ready; while :; do sleep 0.05; done"
    policy = {"grace_period": {"nanoseconds": 300_000_000}}
    agent.launch_task(FW, task("stubborn", stubborn, kill_policy=policy))
    running = master.wait("stubborn", "TASK_RUNNING")
    assert running["container_status"]["executor_pid"] > 0
    sandbox = agent.task_sandbox(FID, "stubborn")
    assert sandbox is not None
    wait_until(lambda: "ready" in (sandbox / "stdout").read_text())

    started = time.monotonic()
    agent.kill_task(FID, "stubborn")  # no kill policy in the KILL: the task's own applies
    killed = master.wait("stubborn", "TASK_KILLED")
    assert 0.3 <= time.monotonic() - started < 3.0
    assert killed["message"] == "Command terminated with signal Killed"
    assert "got TERM" in (sandbox / "stdout").read_text()


STUBBORN = "trap 'echo got TERM' TERM; echo ready; while :; do sleep 0.05; done"


def _stubborn_running(agent: Agent, master: Master, task_id: str, grace: float) -> Path:
    """A task that outlives SIGTERM, with a kill policy of ``grace`` seconds, running."""
    policy = {"grace_period": {"nanoseconds": int(grace * 1e9)}}
    agent.launch_task(FW, task(task_id, STUBBORN, kill_policy=policy))
    master.wait(task_id, "TASK_RUNNING")
    sandbox = agent.task_sandbox(FID, task_id)
    assert sandbox is not None
    wait_until(lambda: "ready" in (sandbox / "stdout").read_text())
    return sandbox


def test_a_kills_kill_policy_overrides_the_tasks(agent: Agent, master: Master) -> None:
    """Mesos' command executor (``src/launcher/executor.cpp`` ``kill(taskId, override)``):
    "Kill policy provided in the `Kill` event takes precedence over kill policy specified
    when the task was launched" -- shorter here, and longer."""
    _stubborn_running(agent, master, "short", 20.0)
    _stubborn_running(agent, master, "long", 0.2)
    started = time.monotonic()
    agent.kill_task(FID, "short", grace_period=0.3)
    agent.kill_task(FID, "long", grace_period=1.2)
    master.wait("short", "TASK_KILLED", timeout=10.0)
    short_done = time.monotonic() - started
    master.wait("long", "TASK_KILLED", timeout=10.0)
    long_done = time.monotonic() - started
    assert 0.3 <= short_done < 3.0
    assert long_done >= 1.2


def test_a_second_kill_with_a_shorter_grace_escalates(agent: Agent, master: Master) -> None:
    """``include/mesos/v1/scheduler/scheduler.proto`` (Kill): a kill policy "can be used to
    forcefully kill a task which is already being killed"; ``executor.cpp`` reschedules the
    SIGKILL at the first kill's start plus the new grace, only ever earlier, and sends no
    second TASK_KILLING or SIGTERM."""
    sandbox = _stubborn_running(agent, master, "stuck", 20.0)
    started = time.monotonic()
    agent.kill_task(FID, "stuck")  # the task's 20 s
    wait_until(lambda: "got TERM" in (sandbox / "stdout").read_text())
    agent.kill_task(FID, "stuck", grace_period=60.0)  # longer: ignored, never extends
    agent.kill_task(FID, "stuck", grace_period=0.5)  # shorter: SIGKILL 0.5 s after the start
    killed = master.wait("stuck", "TASK_KILLED", timeout=10.0)
    assert time.monotonic() - started < 3.0
    assert killed["message"] == "Command terminated with signal Killed"
    assert (sandbox / "stdout").read_text().count("got TERM") == 1
    assert master.states("stuck") == ["TASK_STARTING", "TASK_RUNNING", "TASK_KILLED"]


def test_a_drain_marking_gone_reports_the_kills_start_as_gone(agent: Agent,
                                                              master: Master) -> None:
    """``src/slave/slave.cpp`` ``Slave::statusUpdate``: while the agent drains, TASK_KILLING
    and TASK_KILLED both carry REASON_AGENT_DRAINING and, with ``mark_gone``, become
    TASK_GONE_BY_OPERATOR for a partition-aware framework -- so the framework hears the task
    is gone when its kill starts, while its process still has its grace period to run."""
    aware = {**FW, "capabilities": [{"type": "PARTITION_AWARE"},
                                    {"type": "TASK_KILLING_STATE"}]}
    policy = {"grace_period": {"nanoseconds": 20 * 10**9}}
    agent.launch_task(aware, task("evicted", STUBBORN, kill_policy=policy))
    master.wait("evicted", "TASK_RUNNING")
    sandbox = agent.task_sandbox(FID, "evicted")
    assert sandbox is not None
    wait_until(lambda: "ready" in (sandbox / "stdout").read_text())
    agent.drain({"mark_gone": True, "max_grace_period": {"nanoseconds": 700_000_000}})
    first = master.wait("evicted", "TASK_GONE_BY_OPERATOR")
    assert first["reason"] == "REASON_AGENT_DRAINING"
    assert agent.running_tasks() == [(FID, "evicted")]  # its process has its grace yet
    wait_until(lambda: len(master.of("evicted")) == 4, timeout=5.0)
    assert master.states("evicted") == ["TASK_STARTING", "TASK_RUNNING",
                                        "TASK_GONE_BY_OPERATOR", "TASK_GONE_BY_OPERATOR"]
    last = master.of("evicted")[-1]
    assert last["reason"] == "REASON_AGENT_DRAINING"
    assert last["message"] == "Command terminated with signal Killed"
    wait_until(lambda: agent.running_tasks() == [])


def test_a_second_kill_past_its_grace_kills_at_once(agent: Agent, master: Master) -> None:
    """``executor.cpp``: a later kill whose grace has already elapsed since the first kill
    began SIGKILLs now (its policy of 0 s, too)."""
    _stubborn_running(agent, master, "late", 20.0)
    agent.kill_task(FID, "late")
    time.sleep(0.3)
    started = time.monotonic()
    agent.kill_task(FID, "late", grace_period=0.1)
    master.wait("late", "TASK_KILLED", timeout=10.0)
    assert time.monotonic() - started < 2.0


def test_kill_grace_argument_and_default(tmp_path: Path, master: Master) -> None:
    agent = make_agent(tmp_path, master, default_kill_grace=0.2)
    stubborn = "trap '' TERM; while :; do sleep 0.05; done"
    try:
        agent.launch_task(FW, task("default", stubborn))
        agent.launch_task(FW, task("argument", stubborn))
        master.wait("default", "TASK_RUNNING")
        master.wait("argument", "TASK_RUNNING")
        time.sleep(0.1)  # let the shells install their traps
        started = time.monotonic()
        agent.kill_task(FID, "default")
        agent.kill_task(FID, "argument", grace_period=0.6)
        master.wait("default", "TASK_KILLED")
        default_done = time.monotonic() - started
        master.wait("argument", "TASK_KILLED")
        argument_done = time.monotonic() - started
        assert 0.2 <= default_done < argument_done
        assert argument_done >= 0.6
    finally:
        agent.stop()


def test_kill_while_fetching_never_starts_the_task(
    agent: Agent, master: Master, web: tuple[str, Path]
) -> None:
    url, _ = web
    marker = "started-marker"
    agent.launch_task(
        FW, task("fetching", {"value": f"touch {marker}", "uris": [{"value": f"{url}/slow"}]})
    )
    wait_until(lambda: agent.task_sandbox(FID, "fetching") is not None)
    time.sleep(0.1)  # mid-download
    agent.kill_task(FID, "fetching")

    killed = master.wait("fetching", "TASK_KILLED")
    assert master.states("fetching") == ["TASK_KILLED"]
    assert killed["reason"] == "REASON_TASK_KILLED_DURING_LAUNCH"
    assert killed["source"] == "SOURCE_AGENT"
    sandbox = agent.task_sandbox(FID, "fetching")
    assert sandbox is not None
    assert not (sandbox / marker).exists()


def test_fetched_archive_is_used_by_the_command(
    agent: Agent, master: Master, web: tuple[str, Path]
) -> None:
    url, root = web
    with tarfile.open(root / "code.tar.gz", "w:gz") as tar:
        data = b"#!/bin/sh\necho trained with $1\n"
        info = tarfile.TarInfo("code/train.sh")
        info.size = len(data)
        info.mode = 0o755
        tar.addfile(info, io.BytesIO(data))
    command = {"value": "./code/train.sh lr=0.1", "uris": [{"value": f"{url}/code.tar.gz"}]}
    agent.launch_task(FW, task("fetch-run", command))

    master.wait("fetch-run", "TASK_FINISHED")
    sandbox = agent.task_sandbox(FID, "fetch-run")
    assert sandbox is not None
    assert (sandbox / "stdout").read_text() == "trained with lr=0.1\n"


def test_fetch_failure_fails_the_launch(
    agent: Agent, master: Master, web: tuple[str, Path]
) -> None:
    url, _ = web
    missing = f"{url}/missing.tar.gz"
    agent.launch_task(FW, task("nofetch", {"value": "true", "uris": [{"value": missing}]}))

    failed = master.wait("nofetch", "TASK_FAILED")
    assert master.states("nofetch") == ["TASK_FAILED"]
    assert failed["reason"] == "REASON_CONTAINER_LAUNCH_FAILED"
    assert failed["source"] == "SOURCE_AGENT"
    assert failed["message"] == f"Failed to fetch '{missing}': HTTP 404 File not found"
    sandbox = agent.task_sandbox(FID, "nofetch")
    assert sandbox is not None
    assert (sandbox / "stderr").read_text() == failed["message"] + "\n"


def test_custom_executor_gets_executor_env_and_fails_its_task_on_exit(
    agent: Agent, master: Master
) -> None:
    executor = {
        "type": "CUSTOM",
        "executor_id": {"value": "my-executor"},
        "command": {"value": 'echo "$MESOS_EXECUTOR_ID $MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD"'},
        "shutdown_grace_period": {"nanoseconds": 2_000_000_000},
    }
    info = task("via-executor", "unused")
    del info["command"]
    info["executor"] = executor
    agent.launch_task(FW, info)

    # The command never subscribes to the executor API and exits: Mesos fails the task it
    # queued for the executor (sendExecutorTerminatedStatusUpdate).
    failed = master.wait("via-executor", "TASK_FAILED")
    assert failed["executor_id"] == {"value": "my-executor"}
    assert failed["reason"] == "REASON_EXECUTOR_TERMINATED"
    assert failed["source"] == "SOURCE_AGENT"
    sandbox = agent.task_sandbox(FID, "via-executor")
    assert sandbox is not None
    assert sandbox.parent.parent.name == "my-executor"
    assert (sandbox / "stdout").read_text() == "my-executor 2secs\n"


def test_gpus_are_assigned_exclusively_and_freed(tmp_path: Path, master: Master) -> None:
    config = AgentConfig(cpus=2, mem_mb=256, disk_mb=256, gpus=2, gpu_indices=(3, 5))
    agent = make_agent(tmp_path, master, config=config)
    gpu = Resources({"cpus": 0.1, "gpus": 1}).to_json()
    show = 'echo "$CUDA_VISIBLE_DEVICES|${NVIDIA_VISIBLE_DEVICES-unset}"; sleep 30'
    try:
        agent.launch_task(FW, task("g1", show, resources=gpu))
        agent.launch_task(FW, task("g2", show, resources=gpu))
        agent.launch_task(FW, task("cpu", 'echo "[$CUDA_VISIBLE_DEVICES]"'))
        master.wait("g1", "TASK_RUNNING")
        master.wait("g2", "TASK_RUNNING")
        assert agent.free_gpus == ()
        agent.launch_task(FW, task("g3", show, resources=gpu))
        failed = master.wait("g3", "TASK_FAILED")
        assert "needs 1 GPUs but only 0" in failed["message"]

        seen = set()
        for name in ("g1", "g2"):
            sandbox = agent.task_sandbox(FID, name)
            assert sandbox is not None
            wait_until(lambda s=sandbox: (s / "stdout").read_text() != "")
            seen.add((sandbox / "stdout").read_text())
        assert seen == {"3|3\n", "5|5\n"}
        master.wait("cpu", "TASK_FINISHED")
        cpu_box = agent.task_sandbox(FID, "cpu")
        assert cpu_box is not None
        assert (cpu_box / "stdout").read_text() == "[]\n"

        agent.kill_task(FID, "g1")
        master.wait("g1", "TASK_KILLED")
        assert len(agent.free_gpus) == 1
        agent.launch_task(FW, task("g4", show, resources=gpu))
        master.wait("g4", "TASK_RUNNING")
    finally:
        agent.stop()
    assert agent.free_gpus == (3, 5)


# -- status update reliability ----------------------------------------------------------------


def test_updates_wait_for_acks_and_are_retried(tmp_path: Path) -> None:
    master = Master(auto_ack=False)
    agent = make_agent(tmp_path, master, retry_interval=0.1, retry_interval_max=0.2)
    try:
        agent.launch_task(FW, task("quick", "true"))
        wait_until(lambda: len(master.of("quick")) >= 3)
        # Only TASK_STARTING went out, re-sent with the same uuid, although the task is done.
        sent = master.of("quick")
        assert {u["state"] for u in sent} == {"TASK_STARTING"}
        assert len({u["uuid"] for u in sent}) == 1
        wait_until(lambda: agent.latest_state(FID, "quick") == "TASK_FINISHED")
        assert agent.running_tasks() == []
        pending = agent.unacknowledged_updates(FID, "quick")
        assert [u["state"] for u in pending] == ["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]

        assert agent.acknowledge(FID, "quick", pending[1]["uuid"]) is False
        for current, following in zip(pending, pending[1:], strict=False):
            assert agent.acknowledge(FID, "quick", current["uuid"]) is True
            # The ack releases the next update of the stream, and only then is it sent.
            wait_until(lambda n=following: master.of("quick")[-1]["uuid"] == n["uuid"])
        assert [u["state"] for u in master.of("quick")][-2:] == ["TASK_RUNNING", "TASK_FINISHED"]
        assert agent.acknowledge(FID, "quick", pending[-1]["uuid"]) is True
        assert agent.acknowledge(FID, "quick", pending[-1]["uuid"]) is False  # duplicate
        assert agent.latest_state(FID, "quick") is None
        assert agent.unacknowledged_updates(FID, "quick") == []
    finally:
        agent.stop()


def test_resend_unacknowledged_on_resubscribe(tmp_path: Path) -> None:
    master = Master(auto_ack=False)
    agent = make_agent(tmp_path, master, retry_interval=30.0, retry_interval_max=60.0)
    try:
        agent.launch_task(FW, task("held", "sleep 30"))
        wait_until(lambda: len(master.of("held")) == 1)
        assert agent.resend_unacknowledged(FID) == 1
        assert agent.resend_unacknowledged("other-framework") == 0
        wait_until(lambda: len(master.of("held")) == 2)
        assert master.states("held") == ["TASK_STARTING", "TASK_STARTING"]
    finally:
        agent.stop()


def test_shutdown_framework_kills_tasks_and_drops_updates(tmp_path: Path) -> None:
    master = Master(auto_ack=False)
    agent = make_agent(tmp_path, master, retry_interval=0.05, retry_interval_max=0.05)
    try:
        agent.launch_task(FW, task("doomed", "echo $$ > pid; exec sleep 30"))
        wait_until(lambda: agent.latest_state(FID, "doomed") == "TASK_RUNNING")
        sandbox = agent.task_sandbox(FID, "doomed")
        assert sandbox is not None
        wait_until(lambda: (sandbox / "pid").exists() and (sandbox / "pid").read_text() != "")
        pid = int((sandbox / "pid").read_text())

        agent.shutdown_framework(FID)
        wait_until(lambda: agent.running_tasks() == [])
        wait_until(lambda: not os.path.exists(f"/proc/{pid}"))
        count = len(master.updates)
        time.sleep(0.2)  # retries would have fired several times by now
        assert len(master.updates) == count
        assert "TASK_KILLED" not in master.states("doomed")
        assert agent.unacknowledged_updates(FID, "doomed") == []
    finally:
        agent.stop()


# -- users, odd launches, stop ----------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
def test_root_agent_runs_tasks_as_the_framework_user(master: Master) -> None:
    work = Path(tempfile.mkdtemp())
    work.chmod(0o755)
    agent = make_agent(work, master)
    try:
        framework = dict(FW, user="nobody")
        agent.launch_task(framework, task("as-nobody", "id -un; touch made"))
        agent.launch_task(framework, task("ghost", {"value": "true", "user": "no-such-user-x"}))
        master.wait("as-nobody", "TASK_FINISHED")
        sandbox = agent.task_sandbox(FID, "as-nobody")
        assert sandbox is not None
        assert (sandbox / "stdout").read_text() == "nobody\n"
        nobody = pwd.getpwnam("nobody").pw_uid
        assert sandbox.stat().st_uid == nobody
        assert (sandbox / "made").stat().st_uid == nobody
        dropped = master.wait("ghost", "TASK_LOST")  # Mesos drops it (tests: test_switch_user)
        assert dropped["message"].endswith("No such user 'no-such-user-x'")
    finally:
        agent.stop()
        shutil.rmtree(work)


def test_duplicate_launch_and_launch_after_stop_are_ignored(
    tmp_path: Path, master: Master
) -> None:
    agent = make_agent(tmp_path, master)
    agent.launch_task(FW, task("dup", "sleep 30"))
    agent.launch_task(FW, task("dup", "echo second"))
    master.wait("dup", "TASK_RUNNING")
    assert agent.running_tasks() == [(FID, "dup")]
    with pytest.raises(ValueError, match="task_id"):
        agent.launch_task(FW, {"command": {"value": "true"}})
    agent.stop()
    agent.launch_task(FW, task("late", "true"))
    assert agent.task_sandbox(FID, "late") is None
    assert master.states("dup") == ["TASK_STARTING", "TASK_RUNNING"]


def test_stop_kills_everything_and_leaves_no_threads(tmp_path: Path, master: Master) -> None:
    agent = make_agent(tmp_path, master)
    stubborn = "trap '' TERM; echo $$ > pid; sleep 30 & wait"
    long_policy = {"grace_period": {"nanoseconds": 60_000_000_000}}
    agent.launch_task(FW, task("a", stubborn))
    agent.launch_task(FW, task("b", stubborn, kill_policy=long_policy))
    agent.launch_task(FW, task("c", "sleep 30"))
    pids = []
    for name in ("a", "b"):
        master.wait(name, "TASK_RUNNING")
        sandbox = agent.task_sandbox(FID, name)
        assert sandbox is not None
        wait_until(lambda s=sandbox: (s / "pid").exists() and (s / "pid").read_text() != "")
        pids.append(int((sandbox / "pid").read_text()))
    agent.kill_task(FID, "b")  # a kill already under way with a long grace is escalated too

    started = time.monotonic()
    agent.stop(grace_period=0.2)
    assert time.monotonic() - started < 3.0
    agent.stop()  # idempotent
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}")
    assert agent.running_tasks() == []
    names = [t.name for t in threading.enumerate()]
    assert not [n for n in names if n.startswith(("task-", "kill-", "status-updates-M-S0"))]
