"""The command runner: command lines, environment, process groups and kills of real processes."""

from __future__ import annotations

import os
from pathlib import Path
import pwd
import signal
import sys
import tempfile
import threading
import time

import pytest

from disauto.localmesos.containerizer import command as executor
from disauto.localmesos.containerizer.command import CommandProcess
from disauto.localmesos.containerizer.command import LaunchError
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration  # starts processes or servers


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for init to reap it counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def spawn(box: Path, command: dict, **kwargs: object) -> CommandProcess:
    exe, argv = executor.command_line(command)
    env = kwargs.pop("env", dict(os.environ))
    return CommandProcess.spawn(
        exe,
        argv,
        env=env,  # type: ignore[arg-type]
        cwd=box,
        stdout=box / "stdout",
        stderr=box / "stderr",
        **kwargs,  # type: ignore[arg-type]
    )


def test_command_lines_follow_mesos() -> None:
    assert executor.command_line({"value": "echo $HOME"}) == (
        "/bin/sh",
        ["sh", "-c", "echo $HOME"],
    )
    assert executor.command_line({"value": "echo hi", "arguments": ["ignored"]})[1] == [
        "sh",
        "-c",
        "echo hi",
    ]
    assert executor.command_line(
        {"shell": False, "value": "/bin/echo", "arguments": ["echo", "a b"]}
    ) == ("/bin/echo", ["echo", "a b"])
    assert executor.command_line({"shell": False, "value": "ls"}) == ("ls", ["ls"])
    with pytest.raises(LaunchError, match="no 'value'"):
        executor.command_line({"shell": True})
    with pytest.raises(LaunchError, match="arguments"):
        executor.command_line({"shell": False, "value": "ls", "arguments": [1]})


def test_command_environment_values_and_secrets() -> None:
    env = executor.command_environment(
        {
            "environment": {
                "variables": [
                    {"name": "A", "value": "1"},
                    {"name": "B", "type": "VALUE", "value": "two"},
                    {
                        "name": "TOKEN",
                        "type": "SECRET",
                        "secret": {"type": "VALUE", "value": {"data": "czNjcjN0"}},
                    },
                ]
            }
        }
    )
    assert env == {"A": "1", "B": "two", "TOKEN": "s3cr3t"}
    with pytest.raises(LaunchError, match="'REF': only value secrets"):
        executor.command_environment(
            {
                "environment": {
                    "variables": [
                        {"name": "REF", "type": "SECRET", "secret": {"type": "REFERENCE"}}
                    ]
                }
            }
        )
    with pytest.raises(LaunchError, match="name"):
        executor.command_environment({"environment": {"variables": [{"name": "A=B"}]}})


def test_port_environment() -> None:
    assert executor.port_environment([(31000, 31001), (31005, 31005)]) == {
        "PORT0": "31000",
        "PORT1": "31001",
        "PORT2": "31005",
        "PORTS": "31000,31001,31005",
    }
    assert executor.port_environment([]) == {}


def test_task_environment_order(tmp_path: Path) -> None:
    base = {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0,1,2", "MESOS_SANDBOX": "stale"}
    command = {
        "environment": {
            "variables": [
                {"name": "TRIAL", "value": "7"},
                {"name": "CUDA_VISIBLE_DEVICES", "value": "9"},  # the isolation wins
                {"name": "PORT0", "value": "1234"},  # the user wins over conveniences
            ]
        }
    }
    env = executor.task_environment(
        base=base,
        command=command,
        sandbox=tmp_path,
        ids=executor.TaskIds("F", "E", "T", "A"),
        agent_endpoint="127.0.0.1:5050",
        ports=[(31000, 31001)],
        gpus=[2],
        shutdown_grace_period=2.5,
    )
    assert env["PATH"] == "/bin"
    assert env["TRIAL"] == "7"
    assert env["PORT0"] == "1234"
    assert env["PORTS"] == "31000,31001"
    assert env["CUDA_VISIBLE_DEVICES"] == env["NVIDIA_VISIBLE_DEVICES"] == "2"
    assert env["MESOS_SANDBOX"] == env["MESOS_DIRECTORY"] == str(tmp_path)
    assert env["MESOS_TASK_ID"] == "T"
    assert env["MESOS_FRAMEWORK_ID"] == "F"
    assert env["MESOS_EXECUTOR_ID"] == "E"
    assert env["MESOS_SLAVE_ID"] == "A"
    assert env["MESOS_AGENT_ENDPOINT"] == "127.0.0.1:5050"
    assert env["MESOS_CHECKPOINT"] == "0"
    assert env["MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD"] == "2.5secs"

    common = dict(
        command={},
        sandbox=tmp_path,
        ids=executor.TaskIds("F", "E", "T", "A"),
        agent_endpoint="",
    )
    hidden = executor.task_environment(base=base, gpus=[], **common)  # type: ignore[arg-type]
    assert hidden["CUDA_VISIBLE_DEVICES"] == ""
    untouched = executor.task_environment(base=base, gpus=None, **common)  # type: ignore[arg-type]
    assert untouched["CUDA_VISIBLE_DEVICES"] == "0,1,2"


def test_allocation_role_and_checkpoint_environment(tmp_path: Path) -> None:
    """``src/launcher/executor.cpp`` sets ``MESOS_ALLOCATION_ROLE`` from the first resource's
    ``allocation_info`` over the command's variables; ``src/slave/slave.cpp``
    ``executorEnvironment`` sets ``MESOS_CHECKPOINT`` and, checkpointing, the recovery
    variables."""
    allocated = {"resources": [{"name": "cpus", "allocation_info": {"role": "eng/ml"}}]}
    assert executor.allocation_role(allocated, {"roles": ["other"]}) == "eng/ml"
    assert executor.allocation_role({"resources": []}, {"roles": ["dev", "ml"]}) == "dev"
    assert executor.allocation_role({}, {"role": "old"}) == "old"
    assert executor.allocation_role({}, {}) == "*"
    assert executor.checkpoint_environment(False, 2.0) == {"MESOS_CHECKPOINT": "0"}
    assert executor.checkpoint_environment(True, 2.5) == {
        "MESOS_CHECKPOINT": "1", "MESOS_RECOVERY_TIMEOUT": "15mins",
        "MESOS_SUBSCRIPTION_BACKOFF_MAX": "2.5secs"}
    command = {"environment": {"variables": [{"name": "MESOS_ALLOCATION_ROLE", "value": "x"},
                                             {"name": "MESOS_CHECKPOINT", "value": "7"}]}}
    env = executor.task_environment(
        base={}, command=command, sandbox=tmp_path, ids=executor.TaskIds("F", "E", "T", "A"),
        agent_endpoint="", checkpoint=executor.checkpoint_environment(True, 2.0), role="ml")
    assert env["MESOS_ALLOCATION_ROLE"] == "ml"  # the command executor's word is last
    assert env["MESOS_CHECKPOINT"] == "7"  # the executor's environment, which the task's wins
    assert env["MESOS_RECOVERY_TIMEOUT"] == "15mins"


def test_describe_exit() -> None:
    assert executor.describe_exit(0) == "Command exited with status 0"
    assert executor.describe_exit(3) == "Command exited with status 3"
    assert executor.describe_exit(-signal.SIGKILL) == "Command terminated with signal Killed"
    assert executor.describe_exit(-signal.SIGTERM) == "Command terminated with signal Terminated"


def test_process_runs_in_sandbox_with_its_own_group_and_files(tmp_path: Path) -> None:
    script = (
        "import os; pid = os.getpid()\n"
        "print(os.getcwd(), os.getpgid(0) == pid, os.getsid(0) == pid)"
    )
    proc = spawn(
        tmp_path,
        {"shell": False, "value": sys.executable, "arguments": ["python", "-c", script]},
    )
    assert proc.wait() == 0
    assert (tmp_path / "stdout").read_text() == f"{tmp_path} True True\n"

    proc = spawn(tmp_path, {"value": "echo out; echo err >&2; exit 4"})
    assert proc.wait() == 4
    assert proc.exited
    assert (tmp_path / "stdout").read_text().endswith("out\n")  # appended
    assert (tmp_path / "stderr").read_text() == "err\n"


def test_output_reaches_the_file_while_the_process_runs(tmp_path: Path) -> None:
    proc = spawn(tmp_path, {"value": "echo first; sleep 30"})
    try:
        wait_until(lambda: (tmp_path / "stdout").read_text() == "first\n")
    finally:
        threading.Thread(target=proc.kill, args=(5.0,)).start()
        started = time.monotonic()
        assert proc.wait() == -signal.SIGTERM
        assert time.monotonic() - started < 2.0  # SIGTERM was enough


def test_kill_escalates_to_sigkill_after_the_grace_period(tmp_path: Path) -> None:
    proc = spawn(tmp_path, {"value": "trap '' TERM; echo ready; while :; do sleep 0.05; done"})
    wait_until(lambda: (tmp_path / "stdout").read_text() == "ready\n")
    killer = threading.Thread(target=proc.kill, args=(0.3,))
    started = time.monotonic()
    killer.start()
    returncode = proc.wait()
    killer.join()
    assert returncode == -signal.SIGKILL
    assert 0.3 <= time.monotonic() - started < 3.0
    assert not proc.signal_group(signal.SIGTERM)  # nothing left to signal


def test_kill_reaches_the_whole_group_and_leftovers_die_with_the_leader(tmp_path: Path) -> None:
    proc = spawn(tmp_path, {"value": "sleep 30 & echo $!; wait"})
    wait_until(lambda: (tmp_path / "stdout").read_text().strip().isdigit())
    child = int((tmp_path / "stdout").read_text())
    assert alive(child)
    threading.Thread(target=proc.kill, args=(2.0,)).start()
    proc.wait()
    wait_until(lambda: not alive(child))

    # The leader exits on its own, leaving a background child: the group is destroyed.
    (tmp_path / "stdout").write_text("")
    proc = spawn(tmp_path, {"value": "sleep 30 & echo $!"})
    assert proc.wait() == 0
    orphan = int((tmp_path / "stdout").read_text())
    wait_until(lambda: not alive(orphan))


def test_launch_failures_are_launch_errors(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="Failed to launch '/no/such/binary'"):
        spawn(tmp_path, {"shell": False, "value": "/no/such/binary"})
    with pytest.raises(LaunchError, match="Failed to launch"):
        spawn(tmp_path / "missing-dir", {"value": "true"})


def test_resolve_user() -> None:
    me = pwd.getpwuid(os.geteuid()).pw_name
    assert executor.resolve_user(None) is None  # the agent does not switch users
    assert executor.resolve_user(me) is None  # no need to: the agent's own uid
    with pytest.raises(LaunchError,
                       match="Failed to get the uid of user 'no-such-user-xyz': not found"):
        executor.resolve_user("no-such-user-xyz")
    nobody = executor.resolve_user("nobody")
    entry = pwd.getpwnam("nobody")
    assert nobody is not None and (nobody.uid, nobody.gid) == (entry.pw_uid, entry.pw_gid)


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
def test_runs_as_another_user_when_root() -> None:
    box = Path(tempfile.mkdtemp())
    try:
        box.chmod(0o755)  # the other user must reach its sandbox
        run_as = executor.resolve_user("nobody")
        assert run_as is not None
        (box / "stdout").touch()
        (box / "stderr").touch()
        executor.chown_tree(box, run_as)
        proc = spawn(box, {"value": "id -u; touch mine"}, run_as=run_as)
        assert proc.wait() == 0
        assert (box / "stdout").read_text() == f"{run_as.uid}\n"
        assert (box / "mine").stat().st_uid == run_as.uid
    finally:
        for path in sorted(box.rglob("*"), reverse=True):
            path.unlink()
        box.rmdir()
