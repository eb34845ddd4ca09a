"""Container tasks of the embedded agent on a real Docker engine, with the small runner image.

Every test runs real containers (or, for GPUs, creates one without starting it: this machine has
no GPU and no NVIDIA runtime) and checks what the engine, the sandbox and the status updates say.
"""

from __future__ import annotations

from collections.abc import Iterator
import json
import os
from pathlib import Path
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from disauto.common import task_env
from disauto.common.resources import Resources
from disauto.framework._containers import container_info
from disauto.framework._tasks import trial_task
from disauto.localmesos.agent.agent import Agent
from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.containerizer import docker as docker_mod
from disauto.localmesos.containerizer.command import TaskIds
from disauto.localmesos.containerizer.docker import SANDBOX_PATH
from disauto.localmesos.containerizer.docker import DockerContainerizer
from disauto.localmesos.containerizer.docker import build_request
from tests.localmesos.agent_support import FID
from tests.localmesos.agent_support import FW
from tests.localmesos.agent_support import Master
from tests.localmesos.agent_support import make_agent
from tests.localmesos.agent_support import task
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration  # starts processes or servers


ROOT = Path(__file__).resolve().parents[3]
MB = 1024 * 1024


@pytest.fixture
def agent(tmp_path: Path, master: Master, runner_image: str) -> Iterator[Agent]:
    agent = make_agent(tmp_path, master)
    yield agent
    agent.stop()


@pytest.fixture
def master() -> Master:
    return Master()


def docker(image: str, *, mesos: bool = False, **docker_info: Any) -> dict[str, Any]:
    """A DOCKER ContainerInfo, or a MESOS one with a Docker image."""
    if mesos:
        return {"type": "MESOS", "mesos": {"image": {"type": "DOCKER", "docker": {"name": image}}}}
    return {"type": "DOCKER", "docker": {"image": image, **docker_info}}


def ctask(task_id: str, command: str, image: str, *, cpus: float = 0.5, mem: float = 64,
          **extra: Any) -> dict[str, Any]:
    extra.setdefault("container", docker(image))
    return task(task_id, command, resources=Resources({"cpus": cpus, "mem": mem}).to_json(),
                **extra)


def containers_of(client: Any, task_id: str) -> list[dict[str, Any]]:
    """The engine's containers (running or not) of a task."""
    return list(client.containers(all=True, filters={"label": f"localmesos.task_id={task_id}"}))


def sandbox_of(agent: Agent, task_id: str) -> Path:
    sandbox = agent.task_sandbox(FID, task_id)
    assert sandbox is not None
    return sandbox


# -- running ----------------------------------------------------------------------------------


def test_docker_task_runs_in_its_image_with_sandbox_env_labels_and_limits(
    agent: Agent, master: Master, runner_image: str, docker_engine: Any
) -> None:
    script = (
        'echo "sandbox=$MESOS_SANDBOX cwd=$(pwd) task=$MESOS_TASK_ID fw=$MESOS_FRAMEWORK_ID '
        'mine=$MINE gpus=$NVIDIA_VISIBLE_DEVICES"; '
        "grep -c VERSION_CODENAME=bookworm /etc/os-release; "
        "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null "
        "|| cat /sys/fs/cgroup/memory.max; "
        "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null "
        "|| cut -d' ' -f1 /sys/fs/cgroup/cpu.max; "
        "python -c 'import apprunner_sdk; print(\"sdk ok\")'; "
        "echo written > from-container.txt; echo to-stderr >&2; sleep 2"
    )
    info = ctask("c1", script, runner_image, cpus=0.5, mem=96,
                 labels={"labels": [{"key": "disauto.role", "value": "trial"}]})
    info["command"]["environment"] = {"variables": [{"name": "MINE", "value": "yes"}]}
    agent.launch_task(FW, info)
    running = master.wait("c1", "TASK_RUNNING", timeout=60)
    assert running["container_status"]["executor_pid"] > 0

    # While it runs: one container, named and labelled as the agent says, with host networking.
    (entry,) = containers_of(docker_engine, "c1")
    details = docker_engine.inspect_container(entry["Id"])
    labels = details["Config"]["Labels"]
    assert labels["localmesos.framework_id"] == FID and labels["localmesos.task_id"] == "c1"
    assert labels["localmesos.agent_id"] == "M-S0" and labels["disauto.role"] == "trial"
    container_id = labels["localmesos.container_id"]
    assert details["Name"] == f"/mesos-{container_id}"
    assert details["HostConfig"]["NetworkMode"] == "host"
    assert details["HostConfig"]["Memory"] == 96 * MB
    assert details["HostConfig"]["NanoCpus"] == 500_000_000
    assert details["HostConfig"]["CpuShares"] == 512
    sandbox = sandbox_of(agent, "c1")
    assert sandbox.name == container_id

    master.wait("c1", "TASK_FINISHED", timeout=30)
    stdout = (sandbox / "stdout").read_text().splitlines()
    assert stdout[0] == (f"sandbox={SANDBOX_PATH} cwd={SANDBOX_PATH} task=c1 fw={FID} mine=yes "
                         "gpus=void")
    assert stdout[1] == "1"  # the image's Debian, not this machine's file system
    assert stdout[2] == str(96 * MB)  # the memory limit, inside the container
    assert stdout[3] == "50000"  # 0.5 CPU of the 100 ms CFS period
    assert stdout[4] == "sdk ok"
    assert (sandbox / "stderr").read_text() == "to-stderr\n"
    assert (sandbox / "from-container.txt").read_text() == "written\n"
    assert master.of("c1")[-1]["message"] == "Container exited with status 0"
    assert containers_of(docker_engine, "c1") == []  # removed once its output was collected


def test_mesos_container_with_a_docker_image_runs_the_same_way(
    agent: Agent, master: Master, runner_image: str
) -> None:
    info = ctask("m1", 'echo "$MESOS_SANDBOX $(python --version)"', runner_image,
                 container=docker(runner_image, mesos=True))
    agent.launch_task(FW, info)
    master.wait("m1", "TASK_FINISHED", timeout=60)
    assert (sandbox_of(agent, "m1") / "stdout").read_text().startswith(f"{SANDBOX_PATH} Python 3.")


def test_non_shell_command_keeps_the_image_entrypoint_semantics(
    agent: Agent, master: Master, runner_image: str
) -> None:
    command = {"shell": False, "value": "python", "arguments": ["-c", "print('argv ok')"]}
    info = ctask("argv", "unused", runner_image)
    info["command"] = command
    agent.launch_task(FW, info)
    master.wait("argv", "TASK_FINISHED", timeout=60)
    assert (sandbox_of(agent, "argv") / "stdout").read_text() == "argv ok\n"


def test_output_streams_into_the_sandbox_while_the_container_runs(
    agent: Agent, master: Master, runner_image: str
) -> None:
    script = "for i in 1 2 3 4 5 6 7 8 9 10; do echo tick $i; echo err $i >&2; sleep 0.3; done"
    agent.launch_task(FW, ctask("live", script, runner_image))
    master.wait("live", "TASK_RUNNING", timeout=60)
    sandbox = sandbox_of(agent, "live")
    wait_until(lambda: "tick 2" in (sandbox / "stdout").read_text(), timeout=10)
    partial = (sandbox / "stdout").read_text()
    assert agent.latest_state(FID, "live") == "TASK_RUNNING"  # read before the end
    assert "tick 10" not in partial
    master.wait("live", "TASK_FINISHED", timeout=30)
    assert (sandbox / "stdout").read_text() == "".join(f"tick {i}\n" for i in range(1, 11))
    assert (sandbox / "stderr").read_text() == "".join(f"err {i}\n" for i in range(1, 11))


def test_host_path_volumes_are_mounted(
    agent: Agent, master: Master, runner_image: str, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "in.txt").write_text("data\n")
    info = ctask("vol", f"cat {shared}/in.txt > {shared}/out.txt; cat in-sandbox/x", runner_image,
                 container=container_info(runner_image, "mesos", host_paths=[str(shared)]))
    info["container"]["volumes"].append(
        {"container_path": "in-sandbox", "mode": "RO",
         "source": {"type": "HOST_PATH", "host_path": {"path": str(shared)}}})
    (shared / "x").write_text("relative ok\n")
    agent.launch_task(FW, info)
    master.wait("vol", "TASK_FINISHED", timeout=60)
    assert (shared / "out.txt").read_text() == "data\n"
    assert (sandbox_of(agent, "vol") / "stdout").read_text() == "relative ok\n"


# -- failures, kills, timeouts ----------------------------------------------------------------


def test_a_crash_inside_the_container_fails_the_task_with_its_status(
    agent: Agent, master: Master, runner_image: str
) -> None:
    agent.launch_task(FW, ctask("crash", "python -c 'import sys; 1/0'", runner_image))
    agent.launch_task(FW, ctask("segv", "kill -SEGV $$", runner_image))
    crashed = master.wait("crash", "TASK_FAILED", timeout=60)
    assert crashed["message"] == "Container exited with status 1"
    assert "reason" not in crashed  # src/docker/executor.cpp reaped sets none
    assert "ZeroDivisionError" in (sandbox_of(agent, "crash") / "stderr").read_text()
    segv = master.wait("segv", "TASK_FAILED", timeout=60)
    assert segv["message"] == "Container exited with status 139"


def test_kill_stops_the_container_and_reports_killed(
    agent: Agent, master: Master, runner_image: str, docker_engine: Any
) -> None:
    agent.launch_task(FW, ctask("k", "echo started; sleep 600", runner_image))
    master.wait("k", "TASK_RUNNING", timeout=60)
    sandbox = sandbox_of(agent, "k")
    wait_until(lambda: (sandbox / "stdout").read_text() == "started\n", timeout=10)
    began = time.monotonic()
    agent.kill_task(FID, "k")
    master.wait("k", "TASK_KILLED", timeout=30)
    assert time.monotonic() - began < 10  # sleep dies of SIGTERM: no need for the grace period
    assert containers_of(docker_engine, "k") == []


def test_sigterm_reaches_the_commands_process_group_within_the_grace_period(
    agent: Agent, master: Master, runner_image: str
) -> None:
    child = ("import signal, sys, time; "
             "signal.signal(signal.SIGTERM, lambda *a: (print('child got TERM', flush=True), "
             "sys.exit(0))); print('child ready', flush=True); time.sleep(600)")
    script = f"trap 'echo shell got TERM' TERM; python -c \"{child}\" & wait; wait"
    info = ctask("grace", script, runner_image,
                 kill_policy={"grace_period": {"nanoseconds": 20_000_000_000}})
    agent.launch_task(FW, info)
    master.wait("grace", "TASK_RUNNING", timeout=60)
    sandbox = sandbox_of(agent, "grace")
    wait_until(lambda: "child ready" in (sandbox / "stdout").read_text(), timeout=15)
    began = time.monotonic()
    agent.kill_task(FID, "grace")
    master.wait("grace", "TASK_KILLED", timeout=30)
    assert time.monotonic() - began < 10  # ended on SIGTERM, long before the 20 s grace
    out = (sandbox / "stdout").read_text()
    assert "child got TERM" in out and "shell got TERM" in out


def test_a_container_ignoring_sigterm_is_killed_after_the_grace_period(
    agent: Agent, master: Master, runner_image: str
) -> None:
    script = "trap '' TERM; echo stubborn; while true; do sleep 0.2; done"
    info = ctask("stubborn", script, runner_image,
                 kill_policy={"grace_period": {"nanoseconds": 2_000_000_000}})
    agent.launch_task(FW, info)
    master.wait("stubborn", "TASK_RUNNING", timeout=60)
    sandbox = sandbox_of(agent, "stubborn")
    wait_until(lambda: "stubborn" in (sandbox / "stdout").read_text(), timeout=10)
    began = time.monotonic()
    agent.kill_task(FID, "stubborn")
    killed = master.wait("stubborn", "TASK_KILLED", timeout=30)
    elapsed = time.monotonic() - began
    assert 1.8 <= elapsed < 12, elapsed  # SIGTERM ignored: SIGKILL after the 2 s grace
    assert killed["message"] == "Container exited with status 137"


def test_max_completion_time_fails_a_container_that_runs_too_long(
    agent: Agent, master: Master, runner_image: str
) -> None:
    info = ctask("slow", "sleep 600", runner_image,
                 max_completion_time={"nanoseconds": 1_500_000_000})
    agent.launch_task(FW, info)
    master.wait("slow", "TASK_RUNNING", timeout=60)
    began = time.monotonic()
    failed = master.wait("slow", "TASK_FAILED", timeout=30)
    assert time.monotonic() - began < 10
    assert failed["reason"] == "REASON_MAX_COMPLETION_TIME_REACHED"
    assert failed["message"].startswith("Task exceeded its max_completion_time of 1.5s")


def test_max_completion_time_also_applies_to_process_tasks(tmp_path: Path) -> None:
    master = Master()
    agent = make_agent(tmp_path, master)
    try:
        agent.launch_task(FW, task("proc-slow", "sleep 600",
                                   max_completion_time={"nanoseconds": 500_000_000}))
        failed = master.wait("proc-slow", "TASK_FAILED", timeout=15)
        assert failed["reason"] == "REASON_MAX_COMPLETION_TIME_REACHED"
        agent.launch_task(FW, task("proc-fast", "true",
                                   max_completion_time={"nanoseconds": 5_000_000_000}))
        master.wait("proc-fast", "TASK_FINISHED", timeout=15)
    finally:
        agent.stop()


def test_memory_limit_is_enforced(agent: Agent, master: Master, runner_image: str) -> None:
    script = "python -c 'x = bytearray(400 * 1024 * 1024); print(len(x))'"
    agent.launch_task(FW, ctask("oom", script, runner_image, mem=64))
    failed = master.wait("oom", "TASK_FAILED", timeout=60)
    # As the cgroups/mem isolator reports a command task over its memory.
    assert failed["reason"] == "REASON_CONTAINER_LIMITATION_MEMORY"
    assert failed["source"] == "SOURCE_AGENT"
    assert failed["message"] == "Memory limit exceeded: Requested: 64MB Maximum Used: 64MB\n"
    assert failed["limitation"]["resources"] == [
        {"name": "mem", "type": "SCALAR", "scalar": {"value": 64.0}, "role": "*"}]


def test_a_missing_image_fails_the_launch_clearly(
    tmp_path: Path, master: Master, runner_image: str
) -> None:
    config = AgentConfig(cpus=2, mem_mb=1024, disk_mb=1024, gpus=1)
    agent = make_agent(tmp_path, master, config=config)
    try:
        image = "disauto-test/no-such-image:0"
        info = ctask("missing", "true", image)
        info["resources"] = Resources({"cpus": 0.5, "mem": 64, "gpus": 1}).to_json()
        agent.launch_task(FW, info)
        failed = master.wait("missing", "TASK_FAILED", timeout=120)
        assert failed["reason"] == "REASON_CONTAINER_LAUNCH_FAILED"
        message = failed["message"]
        assert message.startswith(f"Failed to launch container: image '{image}' is not on this "
                                  "machine and pulling it failed: ")
        assert "\n" not in message
        assert message in (sandbox_of(agent, "missing") / "stderr").read_text()
        assert agent.free_gpus == (0,)  # the GPU it was given is back
    finally:
        agent.stop()


def test_unsupported_container_settings_are_refused_with_the_reason(
    agent: Agent, master: Master, runner_image: str
) -> None:
    mapping = docker(runner_image, network="BRIDGE",
                     port_mappings=[{"host_port": 31000, "container_port": 80}])
    agent.launch_task(FW, ctask("ports", "true", runner_image, container=mapping))
    failed = master.wait("ports", "TASK_FAILED", timeout=30)
    assert failed["message"].startswith("Docker port_mappings are not supported")
    appc = {"type": "MESOS", "mesos": {"image": {"type": "APPC", "appc": {"name": "x"}}}}
    agent.launch_task(FW, ctask("appc", "true", runner_image, container=appc))
    assert "Image type 'APPC' is not supported" in master.wait("appc", "TASK_FAILED")["message"]


def test_a_container_flooding_its_output_keeps_its_tail_and_the_agent_responsive(
    agent: Agent, master: Master, runner_image: str
) -> None:
    size = 40 * MB
    flood = ("python -c \"import sys; b = b'x' * 65535 + b'\\n'; w = sys.stdout.buffer.write; "
             f"[w(b) for _ in range({size // 65536})]; sys.stderr.write('done\\n')\"")
    agent.launch_task(FW, ctask("flood", flood, runner_image, cpus=1, mem=128))
    agent.launch_task(FW, ctask("forever", "yes flooding", runner_image, cpus=0.5))
    master.wait("flood", "TASK_RUNNING", timeout=60)
    master.wait("forever", "TASK_RUNNING", timeout=60)
    # Another task starts and ends while both flood.
    agent.launch_task(FW, ctask("quiet", "echo calm", runner_image))
    master.wait("quiet", "TASK_FINISHED", timeout=60)
    master.wait("flood", "TASK_FINISHED", timeout=120)
    sandbox = sandbox_of(agent, "flood")
    # Capped as Mesos' logrotate logger (10 MB a file, one rotated file kept): the last 20 MB.
    assert (sandbox / "stdout").stat().st_size + (sandbox / "stdout.1").stat().st_size \
        == 20 * MB
    assert not (sandbox / "stdout.2").exists()
    assert (sandbox / "stderr").read_text() == "done\n"
    forever = sandbox_of(agent, "forever")
    wait_until(lambda: (forever / "stdout").stat().st_size > MB, timeout=30)
    began = time.monotonic()
    agent.kill_task(FID, "forever")
    master.wait("forever", "TASK_KILLED", timeout=60)
    assert time.monotonic() - began < 15
    with open(forever / "stdout", "rb") as out:
        assert out.read(13) == b"flooding\nfloo"


# -- GPUs -------------------------------------------------------------------------------------


def gpu_trial(image: str, output: Path) -> dict[str, Any]:
    """The TaskInfo the framework builds for a GPU trial (2 GPUs) in ``image``."""
    claim = Resources({"cpus": 1.5, "mem": 3072.0, "gpus": 2.0})
    return trial_task(
        trial_number=7, agent_id="M-S0", claim=claim, launch_cmd="python train.py",
        job_id="job-1", assignment={"lr": 0.1}, trial_token="tok",
        appcore_address="127.0.0.1:31001", framework_address="127.0.0.1:5000",
        output_dir=f"{output}/trial-0007", output_name="model",
        container=container_info(image, "mesos", host_paths=[str(output)]),
    )


def test_a_container_is_told_its_allocation_role(tmp_path: Path) -> None:
    """``src/docker/docker.cpp`` sets ``MESOS_ALLOCATION_ROLE`` to the role of the task's
    resources, over the command's own variables (no engine needed: the request alone)."""
    info = ctask("roled", "true", "busybox")
    for resource in info["resources"]:
        resource["allocation_info"] = {"role": "ml"}
    info["command"]["environment"] = {"variables": [
        {"name": "MESOS_ALLOCATION_ROLE", "value": "mine"}]}
    request = build_request(
        info=info, container=info["container"], command=info["command"], sandbox=tmp_path,
        ids=TaskIds(FID, "roled", "roled", "M-S0"), container_id="c0ffee",
        resources=Resources.from_json(info["resources"]), gpus=(), stop_grace=3.0)
    assert request.environment["MESOS_ALLOCATION_ROLE"] == "ml"


def test_the_container_a_gpu_trial_gets_created_not_started(
    tmp_path: Path, runner_image: str, docker_engine: Any
) -> None:
    """No GPU here: the exact container request is checked by creating it on the engine."""
    output = tmp_path / "out"
    info = gpu_trial(runner_image, output)
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    cores = os.cpu_count() or 1
    containers = DockerContainerizer("M-S0")
    request = build_request(
        info=info, container=info["container"], command=info["command"], sandbox=sandbox,
        ids=TaskIds(FID, "trial-0007", "trial-0007", "M-S0"),
        container_id="c0ffee", resources=Resources.from_json(info["resources"]), gpus=(1, 3),
        stop_grace=3.0, host_cpus=cores, extra_labels=containers.labels,
    )
    process = containers.launch(request, sandbox / "stdout", sandbox / "stderr")
    try:
        details = docker_engine.inspect_container(process.id)
    finally:
        process.remove()
    host = details["HostConfig"]
    assert host["DeviceRequests"] == [{"Driver": "nvidia", "Count": 0, "DeviceIDs": ["1", "3"],
                                       "Capabilities": [["gpu"]], "Options": {}}]
    assert host["NanoCpus"] == int(min(1.5, cores) * 1e9) and host["CpuShares"] == 1536
    assert host["Memory"] == 3072 * MB and host["MemorySwap"] == 3072 * MB
    assert host["NetworkMode"] == "host" and host["Init"] is True
    assert host["Binds"] == [f"{sandbox}:{SANDBOX_PATH}:rw", f"{output}:{output}:rw"]
    config = details["Config"]
    assert config["Image"] == runner_image
    assert config["Entrypoint"] == ["/bin/sh", "-c"] and config["Cmd"] == ["python train.py"]
    assert config["WorkingDir"] == SANDBOX_PATH
    assert config["StopTimeout"] == 3
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["NVIDIA_VISIBLE_DEVICES"] == "1,3"
    assert "CUDA_VISIBLE_DEVICES" not in env  # inside, its two GPUs are numbered 0 and 1
    assert env["MESOS_SANDBOX"] == SANDBOX_PATH and env["MESOS_TASK_ID"] == "trial-0007"
    assert env[task_env.TRIAL_NUMBER] == "7" and json.loads(env[task_env.PARAMS]) == {"lr": 0.1}
    assert env[task_env.APPCORE_ADDR] == "127.0.0.1:31001"
    assert env[task_env.OUTPUT_DIR] == f"{output}/trial-0007"
    labels = config["Labels"]
    assert labels["disauto.trial"] == "7" and labels["localmesos.task_id"] == "trial-0007"
    assert labels[docker_mod.LABEL_OWNER] == docker_mod.process_owner()
    assert details["Name"] == "/mesos-c0ffee"
    assert details["State"]["Status"] == "created"


def test_a_gpu_container_on_an_engine_without_the_nvidia_runtime_fails_and_frees_its_gpus(
    tmp_path: Path, master: Master, runner_image: str, docker_engine: Any
) -> None:
    config = AgentConfig(cpus=4, mem_mb=4096, disk_mb=1024, gpus=2, gpu_indices=(4, 6))
    agent = make_agent(tmp_path, master, config=config)
    try:
        info = ctask("gpu", "nvidia-smi", runner_image)
        info["resources"] = Resources({"cpus": 1, "mem": 256, "gpus": 1}).to_json()
        agent.launch_task(FW, info)
        failed = master.wait("gpu", "TASK_FAILED", timeout=60)
        assert failed["reason"] == "REASON_CONTAINER_LAUNCH_FAILED"
        assert failed["message"].startswith("Failed to start container mesos-")
        assert 'could not select device driver "nvidia"' in failed["message"]
        assert agent.free_gpus == (4, 6)
        assert containers_of(docker_engine, "gpu") == []
    finally:
        agent.stop()


# -- orphans ----------------------------------------------------------------------------------


AGENT_PROCESS = r"""
import sys, time
from pathlib import Path
from disauto.localmesos.agent.agent import Agent
from disauto.localmesos.agent.config import AgentConfig
from disauto.common.resources import Resources

def send(status):
    print(status["state"], flush=True)
    agent.acknowledge(status["framework_id"]["value"], status["task_id"]["value"],
                      status["uuid"])

agent = Agent("M-S9", AgentConfig(cpus=1, mem_mb=512, disk_mb=512), Path(sys.argv[1]), send)
agent.launch_task(
    {"id": {"value": "M-0000"}, "user": "root", "name": "t"},
    {"name": "orphan", "task_id": {"value": "orphan"}, "agent_id": {"value": "M-S9"},
     "resources": Resources({"cpus": 0.2, "mem": 32}).to_json(),
     "command": {"value": "sleep 600"},
     "container": {"type": "DOCKER", "docker": {"image": sys.argv[2]}}})
time.sleep(600)
"""


def test_containers_of_a_dead_agent_are_removed_when_an_agent_starts(
    tmp_path: Path, master: Master, runner_image: str, docker_engine: Any
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", AGENT_PROCESS, str(tmp_path / "dead"), runner_image],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.strip() == "TASK_RUNNING":
                break
        (orphan,) = containers_of(docker_engine, "orphan")
        owner = orphan["Labels"][docker_mod.LABEL_OWNER]
        assert owner.split("/")[2] == str(process.pid)
        # A live agent's containers are not orphans, whoever looks.
        assert not docker_mod.owner_is_gone(owner)
        DockerContainerizer("M-S1").reap_orphans()
        assert containers_of(docker_engine, "orphan")[0]["State"] == "running"
    finally:
        process.send_signal(signal.SIGKILL)  # the agent dies without cleaning up
        process.wait(10)
    assert containers_of(docker_engine, "orphan")[0]["State"] == "running"
    assert docker_mod.owner_is_gone(owner)

    agent = make_agent(tmp_path, master)  # a new agent starts: it reaps in the background
    try:
        wait_until(lambda: containers_of(docker_engine, "orphan") == [], timeout=30)
    finally:
        agent.stop()


def test_stopping_an_agent_leaves_none_of_its_containers(
    tmp_path: Path, master: Master, runner_image: str, docker_engine: Any
) -> None:
    agent = make_agent(tmp_path, master)
    for name in ("s1", "s2"):
        agent.launch_task(FW, ctask(name, "trap '' TERM; sleep 600", runner_image,
                                    cpus=0.2, mem=32))
    master.wait("s1", "TASK_RUNNING", timeout=60)
    master.wait("s2", "TASK_RUNNING", timeout=60)
    began = time.monotonic()
    agent.stop(grace_period=1.0)
    assert time.monotonic() - began < 20
    assert containers_of(docker_engine, "s1") == [] and containers_of(docker_engine, "s2") == []
