"""Whom an embedded agent runs a task as: Mesos' ``--switch_user`` (apache/mesos 1.11
``src/slave/slave.cpp`` ``Framework::addExecutor``, ``src/slave/paths.cpp``
``createSandboxDirectory``, ``src/slave/containerizer/mesos/launch.cpp``).

With it on (the default) a task runs as its command's ``user``, else its framework's: its
sandbox (0750) is given to that user, and its process (a custom executor's too) switches to it.
A user the machine lacks, or another user than the agent's own when the agent is not root,
cannot have the sandbox: the task is dropped, TASK_DROPPED (TASK_LOST for a framework that is
not PARTITION_AWARE), REASON_EXECUTOR_TERMINATED, with Mesos' message.
"""

from __future__ import annotations

from collections.abc import Iterator
import json
import os
from pathlib import Path
import pwd
import shutil
import stat
import tempfile
import traceback
from typing import Any

import pytest

from disauto.localmesos.agent.config import AgentRuntime
from disauto.localmesos.agent.sandbox import sandbox_dir
from tests.localmesos.agent_support import FID
from tests.localmesos.agent_support import FW
from tests.localmesos.agent_support import Master
from tests.localmesos.agent_support import make_agent
from tests.localmesos.agent_support import task
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration  # starts processes

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="switching users needs root")
GHOST = f"disauto-ghost-{os.getpid()}"  # a user no machine has
NOBODY = pwd.getpwnam("nobody")
ME = pwd.getpwuid(os.geteuid()).pw_name
PARTITION_AWARE = [{"type": "PARTITION_AWARE"}]


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder other users can reach, as a Mesos work dir is (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="switch-user-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def master() -> Master:
    return Master()


def dropped_message(work: Path, executor_id: str, user: str, why: str, master: Master,
                    task_id: str | None = None) -> str:
    """Mesos' message for a sandbox its user cannot have (of a run whose container id the
    agent made): checked, and returned."""
    runs = sandbox_dir(work / "work", "M-S0", FID, executor_id, "C").parent
    message = str(master.of(task_id or executor_id)[0]["message"])
    assert message.startswith(f"Failed to create executor directory '{runs}/"), message
    assert message.endswith(f"': Failed to chown directory to '{user}': {why}"), message
    return message


@needs_root
def test_a_task_runs_as_its_framework_user_in_a_sandbox_that_user_owns(
        work: Path, master: Master) -> None:
    agent = make_agent(work, master)
    try:
        agent.launch_task(dict(FW, user="nobody"),
                          task("as-nobody", "id -u; id -g; echo $USER $HOME; touch made"))
        master.wait("as-nobody", "TASK_FINISHED")
        sandbox = agent.task_sandbox(FID, "as-nobody")
        assert sandbox is not None
        assert (sandbox / "stdout").read_text().split("\n")[:3] == [
            str(NOBODY.pw_uid), str(NOBODY.pw_gid), f"nobody {NOBODY.pw_dir}"]
        assert (sandbox.stat().st_uid, sandbox.stat().st_gid) == (NOBODY.pw_uid, NOBODY.pw_gid)
        assert stat.S_IMODE(sandbox.stat().st_mode) == 0o750  # private to the task's user
        assert (sandbox / "made").stat().st_uid == NOBODY.pw_uid
    finally:
        agent.stop()


@needs_root
def test_the_command_user_precedes_the_framework_user(work: Path, master: Master) -> None:
    agent = make_agent(work, master)
    try:
        agent.launch_task(dict(FW, user=GHOST),
                          task("mine", {"value": "id -u", "user": "nobody"}))
        master.wait("mine", "TASK_FINISHED")
        sandbox = agent.task_sandbox(FID, "mine")
        assert sandbox is not None
        assert (sandbox / "stdout").read_text() == f"{NOBODY.pw_uid}\n"
    finally:
        agent.stop()


@pytest.mark.parametrize(("capabilities", "state"), [([], "TASK_LOST"),
                                                      (PARTITION_AWARE, "TASK_DROPPED")])
def test_a_user_the_machine_lacks_drops_the_task_as_mesos_does(
        work: Path, master: Master, capabilities: list[dict[str, str]], state: str) -> None:
    agent = make_agent(work, master)
    try:
        agent.launch_task(dict(FW, user=GHOST, capabilities=capabilities),
                          task("ghostly", "echo never"))
        update = master.wait("ghostly", state)
        assert master.states("ghostly") == [state]  # no TASK_STARTING: nothing was launched
        assert (update["source"], update["reason"]) == ("SOURCE_AGENT",
                                                        "REASON_EXECUTOR_TERMINATED")
        message = dropped_message(work, "ghostly", GHOST, f"No such user '{GHOST}'", master)
        run = Path(message.split("'")[1])
        assert not run.exists()  # removed again, as Mesos removes it
    finally:
        agent.stop()


def test_a_command_user_the_machine_lacks_drops_the_task(work: Path, master: Master) -> None:
    agent = make_agent(work, master)
    try:
        agent.launch_task(FW, task("typo", {"value": "true", "user": GHOST}))
        master.wait("typo", "TASK_LOST")
        dropped_message(work, "typo", GHOST, f"No such user '{GHOST}'", master)
    finally:
        agent.stop()


def test_without_switch_user_every_task_runs_as_the_agent_user(work: Path,
                                                               master: Master) -> None:
    agent = make_agent(work, master, runtime=AgentRuntime(switch_user=False))
    try:
        agent.launch_task(dict(FW, user=GHOST), task("as-agent", "id -u"))
        master.wait("as-agent", "TASK_FINISHED")
        sandbox = agent.task_sandbox(FID, "as-agent")
        assert sandbox is not None
        assert (sandbox / "stdout").read_text() == f"{os.geteuid()}\n"
        assert sandbox.stat().st_uid == os.geteuid()
    finally:
        agent.stop()


def executor_task(task_id: str, command: dict[str, Any]) -> dict[str, Any]:
    info = task(task_id, "unused")
    del info["command"]
    info["executor"] = {"executor_id": {"value": f"{task_id}-executor"}, "command": command,
                        "resources": info["resources"]}
    return info


@needs_root
def test_a_custom_executor_runs_as_the_framework_user(work: Path, master: Master) -> None:
    agent = make_agent(work, master)
    try:
        agent.launch_task(dict(FW, user="nobody"),
                          executor_task("slot", {"value": "id -u > uid; touch mine"}),
                          launch_executor=True)
        master.wait("slot", "TASK_FAILED")  # it exits without subscribing: "terminated"
        sandbox = agent.task_sandbox(FID, "slot")
        assert sandbox is not None
        assert (sandbox / "uid").read_text() == f"{NOBODY.pw_uid}\n"
        assert (sandbox / "mine").stat().st_uid == NOBODY.pw_uid
        assert sandbox.stat().st_uid == NOBODY.pw_uid
    finally:
        agent.stop()


def test_a_custom_executor_of_a_missing_user_is_never_launched(work: Path,
                                                               master: Master) -> None:
    exited: list[tuple[str, str, str, int]] = []
    agent = make_agent(work, master, on_executor_exited=lambda *args: exited.append(args))
    try:
        agent.launch_task(dict(FW, user=GHOST, capabilities=PARTITION_AWARE),
                          executor_task("slot", {"value": "touch launched"}),
                          launch_executor=True)
        update = master.wait("slot", "TASK_DROPPED")
        assert update["reason"] == "REASON_EXECUTOR_TERMINATED"
        dropped_message(work, "slot-executor", GHOST, f"No such user '{GHOST}'", master,
                        task_id="slot")
        # The master charged an executor: it is told none runs (ExitedExecutorMessage, -1).
        wait_until(lambda: exited == [("M-S0", FID, "slot-executor", -1)])
        assert agent.running_tasks() == []
    finally:
        agent.stop()


def _unprivileged_agent(work: Path, out: Path) -> None:
    """As the user that owns ``work``: an agent that drops root's task and runs its own."""
    master = Master()
    agent = make_agent(work, master)
    try:
        agent.launch_task(dict(FW, user="root"), task("roots", "true"))
        agent.launch_task(dict(FW, user=pwd.getpwuid(os.geteuid()).pw_name),
                          task("own", "id -u"))
        lost = master.wait("roots", "TASK_LOST", timeout=20)
        master.wait("own", "TASK_FINISHED", timeout=20)
        sandbox = agent.task_sandbox(FID, "own")
        assert sandbox is not None
        out.write_text(json.dumps({"lost": lost, "stdout": (sandbox / "stdout").read_text()}))
    finally:
        agent.stop()


def test_an_agent_that_is_not_root_drops_the_tasks_of_other_users(work: Path) -> None:
    """Mesos' agent cannot give the sandbox to another user: chown fails, the task is
    dropped (stout's error: "Operation not permitted")."""
    out = work / "result.json"
    if not ROOT:
        _unprivileged_agent(work, out)
    else:  # be nobody in a child: the modules are loaded, nobody need not read them
        os.chown(work, NOBODY.pw_uid, NOBODY.pw_gid)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                os.setgroups([])
                os.setgid(NOBODY.pw_gid)
                os.setuid(NOBODY.pw_uid)
                _unprivileged_agent(work, out)
                code = 0
            except BaseException:  # noqa: BLE001 - reported to the parent through stderr
                traceback.print_exc()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    result = json.loads(out.read_text())
    lost = result["lost"]
    assert (lost["source"], lost["reason"]) == ("SOURCE_AGENT", "REASON_EXECUTOR_TERMINATED")
    assert lost["message"].endswith(
        "': Failed to chown directory to 'root': Operation not permitted"), lost["message"]
    assert lost["message"].startswith("Failed to create executor directory '")
    assert result["stdout"] == f"{os.geteuid() if not ROOT else NOBODY.pw_uid}\n"
