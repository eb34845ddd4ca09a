"""The command executor of the embedded agent: run one task's command as a process group.

What Mesos' command executor (apache/mesos ``src/launcher/executor.cpp``) and containerizer do
for a ``CommandInfo``, on the local machine:

* **Command line.** ``shell`` (default true) runs ``/bin/sh -c <value>`` (argv ``sh -c value``,
  ``arguments`` ignored). ``shell: false`` executes ``value`` (looked up on ``PATH``) with
  ``arguments`` as the whole argv, so ``arguments[0]`` is ``argv[0]``; without arguments argv is
  ``[value]``.
* **Environment.** The agent's own environment is inherited (the embedded cluster runs on the
  user's machine, so tasks see the same tools), then the ``MESOS_*`` executor variables, the
  ``PORT0..PORTn``/``PORTS`` convenience variables, then ``CommandInfo.environment`` (which wins,
  as in Mesos), then ``MESOS_ALLOCATION_ROLE`` (which Mesos' command executor sets last), then
  the GPU variables (which win over everything: they are the isolation).
  ``PORT*`` variables are a local convenience a real Mesos agent does not set; DisAuto's
  framework passes ports explicitly.
* **Process.** The child runs in the sandbox, in its own session and process group
  (``start_new_session``), with stdin from ``/dev/null``; its stdout/stderr go through pipes
  into the sandbox's capped, rotated ``stdout``/``stderr`` files (:mod:`common.logrotate`,
  Mesos' logrotate container logger), or, without caps, straight into them.
* **User.** The agent names the user (:func:`localmesos.agent.launch.task_user`: with
  ``--switch_user`` the command's, else the framework's; its sandbox was given to that user
  when it was made). When that user is not the agent's own, the child switches to its uid, gid
  and supplementary groups before exec, as ``mesos-containerizer launch`` does
  (``src/slave/containerizer/mesos/launch.cpp``), and its ``USER``, ``LOGNAME`` and ``HOME``
  are that user's (the embedded agent's tasks inherit its environment, unlike Mesos').
* **Kill.** SIGTERM to the process group, SIGKILL to it after the grace period. When the command
  itself exits, whatever is left of its process group is SIGKILLed, as Mesos destroys the
  container.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from collections.abc import Sequence
import contextlib
from dataclasses import dataclass
import logging
import os
from pathlib import Path
import pwd
import signal
import subprocess
import threading
from typing import Any

from disauto.common.logrotate import LogPump
from disauto.common.logrotate import SandboxLogging


logger = logging.getLogger(__name__)

SHELL = "/bin/sh"


class LaunchError(Exception):
    """A task's command cannot be launched; the message is one line saying why."""


# -- user -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunAs:
    """A user to switch to before exec."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str


def resolve_user(user: str | None) -> RunAs | None:
    """Whom to switch the task's process to, as ``mesos-containerizer launch`` decides.

    Args:
        user: the user the agent runs the task as (``None``: the agent does not switch users,
            ``--no-switch_user``).

    Returns:
        ``None`` to run as the agent's own user: no user, or the agent's own uid (no need to
        change user, as Mesos). Otherwise the user's uid, primary gid and groups.

    Raises:
        LaunchError: when the user does not exist (any more: its sandbox was given to it).
    """
    if user is None:
        return None
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise LaunchError(f"Failed to get the uid of user '{user}': not found") from None
    if entry.pw_uid == os.geteuid():
        return None
    groups = tuple(os.getgrouplist(entry.pw_name, entry.pw_gid))
    return RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir)


def chown_tree(path: Path, run_as: RunAs) -> None:
    """Give ``path`` and everything below it (not following symlinks) to ``run_as``."""
    os.chown(path, run_as.uid, run_as.gid, follow_symlinks=False)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), run_as.uid, run_as.gid, follow_symlinks=False)


# -- command line and environment -------------------------------------------------------------


def command_line(command: Mapping[str, Any]) -> tuple[str, list[str]]:
    """``(executable, argv)`` for a ``CommandInfo``.

    Raises:
        LaunchError: when there is no ``value`` or ``arguments`` is not a list of strings.
    """
    value = command.get("value")
    if not isinstance(value, str) or not value:
        raise LaunchError("The command has no 'value' to run")
    if command.get("shell", True):
        return SHELL, ["sh", "-c", value]
    arguments = command.get("arguments") or []
    if not isinstance(arguments, list) or not all(isinstance(a, str) for a in arguments):
        raise LaunchError("The command's 'arguments' must be a list of strings")
    return value, list(arguments) if arguments else [value]


def command_environment(command: Mapping[str, Any]) -> dict[str, str]:
    """The variables of ``CommandInfo.environment``.

    ``type`` VALUE (the default) uses ``value``; SECRET is supported for value secrets
    (``secret.value.data``, base64). Reference secrets need a secret resolver, which the
    embedded agent does not have.

    Raises:
        LaunchError: naming the variable that cannot be set.
    """
    env: dict[str, str] = {}
    variables = (command.get("environment") or {}).get("variables") or []
    for var in variables:
        name = var.get("name")
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise LaunchError(f"Invalid environment variable name {name!r}")
        kind = var.get("type", "VALUE")
        if kind == "VALUE":
            value = var.get("value", "")
            env[name] = value if isinstance(value, str) else str(value)
        elif kind == "SECRET":
            secret = var.get("secret") or {}
            data = (secret.get("value") or {}).get("data")
            if secret.get("type") != "VALUE" or data is None:
                raise LaunchError(
                    f"Environment variable '{name}': only value secrets are supported "
                    "(the embedded agent has no secret resolver)"
                )
            try:
                env[name] = base64.b64decode(data, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                raise LaunchError(
                    f"Environment variable '{name}': secret.value.data is not base64 UTF-8"
                ) from None
        else:
            raise LaunchError(f"Environment variable '{name}' has unsupported type {kind!r}")
    return env


def port_environment(ranges: Sequence[tuple[int, int]]) -> dict[str, str]:
    """``PORT0..PORTn`` and ``PORTS`` (comma list) for a task's ``ports`` ranges.

    A local convenience, not set by a real Mesos agent.
    """
    ports = [port for begin, end in ranges for port in range(begin, end + 1)]
    env = {f"PORT{i}": str(port) for i, port in enumerate(ports)}
    if ports:
        env["PORTS"] = ",".join(str(p) for p in ports)
    return env


def format_duration(seconds: float) -> str:
    """A Mesos ``Duration`` string (``5secs``), as ``MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD``."""
    return f"{seconds:g}secs"


#: Mesos' agent ``--recovery_timeout`` (its default): ``MESOS_RECOVERY_TIMEOUT``.
RECOVERY_TIMEOUT = "15mins"


def checkpoint_environment(checkpoint: bool, reregistration_timeout: float) -> dict[str, str]:
    """What ``executorEnvironment`` (apache/mesos ``src/slave/slave.cpp``) says of the
    framework's checkpointing: ``MESOS_CHECKPOINT`` ``1``/``0`` and, when it checkpoints,
    ``MESOS_RECOVERY_TIMEOUT`` and ``MESOS_SUBSCRIPTION_BACKOFF_MAX`` (the agent's
    ``--executor_reregistration_timeout``)."""
    env = {"MESOS_CHECKPOINT": "1" if checkpoint else "0"}
    if checkpoint:
        env["MESOS_RECOVERY_TIMEOUT"] = RECOVERY_TIMEOUT
        env["MESOS_SUBSCRIPTION_BACKOFF_MAX"] = format_duration(reregistration_timeout)
    return env


def allocation_role(task: Mapping[str, Any], framework_info: Mapping[str, Any]) -> str:
    """``MESOS_ALLOCATION_ROLE``: the role the task's resources are allocated to (Mesos'
    command executor reads the first resource's ``allocation_info.role``,
    ``src/launcher/executor.cpp`` ``launch``; the master injects it into every resource);
    without one, the framework's first role."""
    for resource in task.get("resources") or []:
        role = (resource.get("allocation_info") or {}).get("role") \
            if isinstance(resource, Mapping) else None
        if isinstance(role, str) and role:
            return role
    roles = framework_info.get("roles") or [framework_info.get("role") or "*"]
    return str(roles[0])


@dataclass(frozen=True)
class TaskIds:
    """Who a task is to Mesos: its framework, executor (the task's own id for a command task),
    id and agent; what its environment and its container's labels name."""

    framework_id: str
    executor_id: str
    task_id: str
    agent_id: str

    def environment(self) -> dict[str, str]:
        """The ``MESOS_*`` variables that name the task."""
        return {"MESOS_TASK_ID": self.task_id, "MESOS_FRAMEWORK_ID": self.framework_id,
                "MESOS_EXECUTOR_ID": self.executor_id, "MESOS_SLAVE_ID": self.agent_id,
                "MESOS_AGENT_ID": self.agent_id}


def task_environment(
    *,
    base: Mapping[str, str],
    command: Mapping[str, Any],
    sandbox: Path,
    ids: TaskIds,
    agent_endpoint: str,
    ports: Sequence[tuple[int, int]] = (),
    gpus: Sequence[int] | None = None,
    shutdown_grace_period: float = 5.0,
    run_as: RunAs | None = None,
    checkpoint: Mapping[str, str] | None = None,
    role: str | None = None,
) -> dict[str, str]:
    """The complete environment of a task's process (see the module docstring for the order).

    Args:
        base: the inherited environment (normally ``os.environ``).
        command: the ``CommandInfo`` (its ``environment`` is applied).
        sandbox: the sandbox directory.
        ids: the task's ``MESOS_TASK_ID``, ``MESOS_FRAMEWORK_ID``, ``MESOS_EXECUTOR_ID`` and
            ``MESOS_SLAVE_ID`` (and ``MESOS_AGENT_ID``).
        agent_endpoint: ``MESOS_AGENT_ENDPOINT`` (``host:port``).
        ports: the task's ``ports`` ranges (for ``PORT*``).
        gpus: ``None`` when the agent has no GPUs (nothing set); otherwise the GPU indices
            assigned to the task, written to ``CUDA_VISIBLE_DEVICES`` and
            ``NVIDIA_VISIBLE_DEVICES``; an empty list hides every GPU
            (``CUDA_VISIBLE_DEVICES=""``).
        shutdown_grace_period: seconds, for ``MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD``.
        run_as: the user the task is switched to, if any (sets ``USER``, ``LOGNAME``, ``HOME``).
        checkpoint: :func:`checkpoint_environment` (default ``MESOS_CHECKPOINT=0``).
        role: ``MESOS_ALLOCATION_ROLE`` (:func:`allocation_role`), set over the command's own
            variables as Mesos' command executor sets it; None leaves it out.

    Raises:
        LaunchError: for an invalid ``CommandInfo.environment``.
    """
    env = dict(base)
    if run_as is not None:
        env.update(USER=run_as.name, LOGNAME=run_as.name, HOME=run_as.home)
    env.update(port_environment(ports))
    env.update(
        {
            "MESOS_SANDBOX": str(sandbox),
            "MESOS_DIRECTORY": str(sandbox),
            **ids.environment(),
            "MESOS_AGENT_ENDPOINT": agent_endpoint,
            **(checkpoint or checkpoint_environment(False, 0.0)),
            "MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD": format_duration(shutdown_grace_period),
        }
    )
    env.update(command_environment(command))
    if role is not None:
        env["MESOS_ALLOCATION_ROLE"] = role
    if gpus is not None:
        visible = ",".join(str(i) for i in gpus)
        env["CUDA_VISIBLE_DEVICES"] = visible
        if gpus:
            env["NVIDIA_VISIBLE_DEVICES"] = visible
    return env


def describe_exit(returncode: int) -> str:
    """Mesos' message for an exit status: ``Command exited with status N`` or
    ``Command terminated with signal <name>``."""
    if returncode >= 0:
        return f"Command exited with status {returncode}"
    signum = -returncode
    try:
        name = signal.strsignal(signum) or f"{signum}"
    except ValueError:
        name = f"{signum}"
    return f"Command terminated with signal {name}"


# -- the process ------------------------------------------------------------------------------


class CommandProcess:
    """A launched command: the leader of its own process group.

    Thread safety: :meth:`wait` is called by one thread (the task's); :meth:`kill` and
    :meth:`signal_group` may be called from any thread at any time, also after the exit.
    """

    def __init__(self, popen: subprocess.Popen[bytes], pumps: Sequence[LogPump] = ()) -> None:
        self._popen = popen
        self._pumps = list(pumps)
        self.pid = popen.pid
        self.pgid = popen.pid  # start_new_session: the child leads its own group.
        self._exited = threading.Event()
        self._lock = threading.Lock()

    @classmethod
    def spawn(
        cls,
        executable: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        stdout: Path,
        stderr: Path,
        run_as: RunAs | None = None,
        logs: SandboxLogging | None = None,
    ) -> CommandProcess:
        """Start the command; with ``logs`` its output goes through capped, rotated files
        (:mod:`common.logrotate`), else straight into ``stdout``/``stderr``.

        Raises:
            LaunchError: when it cannot be started (no such executable, not permitted, ...).
        """
        extra: dict[str, Any] = {}
        if run_as is not None:
            extra = {"user": run_as.uid, "group": run_as.gid, "extra_groups": list(run_as.groups)}
        pumps: list[LogPump] = []
        try:
            with contextlib.ExitStack() as files:
                if logs is None:
                    out: Any = files.enter_context(open(stdout, "ab", buffering=0))
                    err: Any = files.enter_context(open(stderr, "ab", buffering=0))
                else:
                    pumps = [LogPump(stdout, logs.stdout), LogPump(stderr, logs.stderr)]
                    out, err = (pump.write_fd for pump in pumps)
                popen = subprocess.Popen(
                    list(argv),
                    executable=executable,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    cwd=cwd,
                    env=dict(env),
                    start_new_session=True,
                    close_fds=True,
                    **extra,
                )
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise LaunchError(f"Failed to launch '{executable}': {reason}") from None
        finally:
            for pump in pumps:
                pump.started()
        logger.debug("Launched pid %d: %s", popen.pid, argv)
        return cls(popen, pumps)

    @property
    def exited(self) -> bool:
        """Whether the command has exited and been reaped."""
        return self._exited.is_set()

    def wait(self) -> int:
        """Wait for the command, reap it, SIGKILL what remains of its group; the returncode."""
        returncode = self._popen.wait()
        with self._lock:
            self._exited.set()
            self._signal(signal.SIGKILL)
        return returncode

    def drain_logs(self, timeout: float = 5.0) -> None:
        """Wait until the output is all in the sandbox files, as Mesos' logger finishes before
        the container's end is reported (call it once what the task left behind is killed)."""
        for pump in self._pumps:
            pump.drain(timeout)

    def wait_exited(self, timeout: float | None = None) -> bool:
        """Block until :meth:`wait` has reaped the command (or ``timeout``); whether it has."""
        return self._exited.wait(timeout)

    def signal_group(self, signum: int) -> bool:
        """Send ``signum`` to the process group while the leader is not yet reaped.

        Returns:
            ``True`` if the signal was sent.
        """
        with self._lock:
            if self._exited.is_set():
                return False
            return self._signal(signum)

    def kill(self, grace_period: float) -> None:
        """SIGTERM the group, then SIGKILL it if the command has not exited within the grace
        period. Blocks up to ``grace_period``; run it on its own thread."""
        if not self.signal_group(signal.SIGTERM):
            return
        self.kill_after(grace_period)

    def kill_after(self, seconds: float) -> None:
        """SIGKILL the group unless the command exits within ``seconds`` (a kill's escalation,
        which a later kill may bring forward). Blocks up to ``seconds``."""
        if not self._exited.wait(max(0.0, seconds)):
            logger.info("pid %d outlived its grace period (%.3g s left): SIGKILL", self.pid,
                        seconds)
            self.signal_group(signal.SIGKILL)

    def _signal(self, signum: int) -> bool:
        try:
            os.killpg(self.pgid, signum)
        except ProcessLookupError:
            return False
        except PermissionError:
            # The group leader was reaped and its id reused by someone else's group: not ours.
            return False
        return True
