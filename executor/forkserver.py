"""The executor's side of a slot's pre-imported interpreter (``--slot-preload``).

:class:`ForkServer` starts ``executor/zygote.py`` under the launch command's Python with the
first trial's environment; the zygote imports the declared modules once and forks one child per
trial. Each trial is a :class:`ForkedProcess`: its own session and process group (killed as a
``/bin/sh -c`` task is), its exit reported by the zygote, which is its parent. The zygote gets
SIGKILL when the executor's thread that started it dies, and its children when it dies, so a
slot killed with ``kill -9`` leaves no trial behind.

In a slot's container (``--docker-image``) the zygote is the container's Python: a copy of
``zygote.py`` in the slot's sandbox, ``docker exec``'d there, connecting back to a socket the
executor listens on in the sandbox (the container sees the sandbox at ``/mnt/mesos/sandbox``).
Its trials' pids are the container's, which the host cannot signal: a kill is a request to the
zygote (:class:`ContainerForkedProcess`), which signals the trial's group while it is its
unreaped child. The zygote ends when the executor closes the socket, and with the container.
"""

from __future__ import annotations

from collections.abc import Mapping
import json
import logging
import os
from pathlib import Path
import shlex
import shutil
import socket
import subprocess
import threading
import time
from typing import Any

from disauto.common.python_command import PythonCommand
from disauto.common.task_usage import TaskUsage
from disauto.executor.container import ContainerError
from disauto.executor.container import ContainerTaskProcess
from disauto.executor.container import SlotContainer
from disauto.executor.process import GroupProcess
from disauto.executor.process import die_with_parent


logger = logging.getLogger("disauto.executor")

ZYGOTE = Path(__file__).with_name("zygote.py")
READY_TIMEOUT = 300.0
"""Seconds the interpreter may take to import the declared modules (TensorFlow takes many)."""
FORK_TIMEOUT = 30.0
ZYGOTE_LOG = "zygote.log"
"""The interpreter's own output, in the slot's sandbox."""
CLOSE_WAIT = 2.0
"""Seconds a container's zygote has to end on its own once its socket is closed."""
ZYGOTE_COPY = ".zygote.py"
"""The copy of ``zygote.py`` a container's Python runs, in the slot's sandbox."""
ZYGOTE_SOCKET = ".zygote.sock"
"""Where a container's zygote connects to the executor, in the slot's sandbox."""


class ForkServerError(RuntimeError):
    """The pre-imported interpreter cannot start or fork (the message says why).

    Attributes:
        module: the optional module that left the interpreter unsafe to fork, when that is
            why it did not start (one without it may).
        died: it ended before it said whether it was ready (a crash in an import).
        why: what the interpreter said of ``module`` (else the message).
    """

    def __init__(self, message: str, module: str | None = None, died: bool = False,
                 why: str = "") -> None:
        super().__init__(message)
        self.module = module
        self.died = died
        self.why = why or message


def _usage_of(rusage: Any) -> TaskUsage | None:
    """A trial's usage from the zygote's exit message (None when it says none)."""
    if not isinstance(rusage, dict):
        return None
    try:
        return TaskUsage(float(rusage["utime"]), float(rusage["stime"]),
                         int(rusage["maxrss_kb"]) * 1024)
    except (KeyError, TypeError, ValueError):
        return None


class ForkedProcess(GroupProcess):
    """One trial forked by the zygote: waited for through the zygote's reports."""

    def __init__(self, pid: int, sandbox: Path) -> None:
        super().__init__(pid, sandbox)
        self._ended = threading.Event()
        self._returncode = 0
        self.orphaned = False
        """Whether it ended because the interpreter that forked it died (SIGKILL with it)."""

    def ended(self, returncode: int, usage: TaskUsage | None = None) -> None:
        self._returncode = returncode
        self.usage = usage
        self._ended.set()

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise TimeoutError(f"process {self.pid} still runs")
        return self._returncode


class ContainerForkedProcess(ForkedProcess):
    """A trial forked in a slot's container: its pid is the container's, so it is signalled
    by its zygote, not from the host."""

    def __init__(self, pid: int, sandbox: Path, server: ForkServer) -> None:
        super().__init__(pid, sandbox)
        self._server = server

    def _signal(self, signum: int) -> None:
        if not self._ended.is_set():
            self._server.signal_group(self.pid, signum)


class ForkServer:
    """A slot's pre-imported interpreter.

    Args:
        program: the launch command as a Python program (its interpreter and options).
        modules: what the interpreter imports before it forks.
        env: the environment it starts with (the first trial's; in a container, over the
            image's).
        sandbox: the slot's sandbox (its working directory; its log ``zygote.log`` is there).
        container: the slot's container, when the interpreter is the container's Python.
        optional: modules it imports after those if it can (``--slot-preload auto``): one it
            cannot import is skipped (:attr:`skipped`), one after which it would be unsafe to
            fork, or that imports a module matching a pattern of ``deny``, ends it
            (:class:`ForkServerError` naming the module).
    """

    def __init__(self, program: PythonCommand, modules: tuple[str, ...],
                 env: Mapping[str, str], sandbox: Path,
                 container: SlotContainer | None = None, optional: tuple[str, ...] = (),
                 deny: tuple[str, ...] = ()) -> None:
        self.container = container
        self.skipped: list[tuple[str, str]] = []
        """``(module, why)`` of each optional module it did not import."""
        words = (*modules, *(f"?{name}" for name in optional),
                 *((f"--deny={','.join(deny)}",) if optional and deny else ()))
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._replies: dict[str, dict[str, Any]] = {}
        self._replied = threading.Condition(self._lock)
        self._processes: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, tuple[int, TaskUsage | None]] = {}
        self._closed = False
        self._next_id = 0
        self._popen: subprocess.Popen[bytes] | None = None
        self._exec: ContainerTaskProcess | None = None
        if container is None:
            self._sock = self._start_here(program, words, env, sandbox)
        else:
            self._sock = self._start_in(container, program, words, env, sandbox)
        self._reader = self._sock.makefile("rb")
        self._sock.settimeout(READY_TIMEOUT)
        first = self._read()
        self._sock.settimeout(None)
        if first is None or "error" in first:
            self.close()
            why = (first or {}).get("error") or "it exited before it was ready"
            module = (first or {}).get("module")
            raise ForkServerError(f"the pre-imported interpreter cannot start: {why} "
                                  f"(see {ZYGOTE_LOG} in the slot's sandbox)",
                                  module=str(module) if module else None, died=first is None,
                                  why=str((first or {}).get("why") or ""))
        self.skipped = [(str(item[0]), str(item[1])) for item in first.get("skipped") or ()
                        if isinstance(item, list) and len(item) == 2]
        threading.Thread(target=self._serve, name="forkserver", daemon=True).start()
        loaded = [*modules, *(m for m in optional if m not in dict(self.skipped))]
        logger.info("pre-imported interpreter ready with %s%s", ", ".join(loaded),
                    f" in container {container.name}" if container is not None else "")

    def _start_here(self, program: PythonCommand, words: tuple[str, ...],
                    env: Mapping[str, str], sandbox: Path) -> socket.socket:
        """Start the zygote as the executor's child, on one end of a socket pair."""
        ours, theirs = socket.socketpair()
        with open(sandbox / ZYGOTE_LOG, "ab") as log:
            try:
                self._popen = subprocess.Popen(  # noqa: S603 - the user's own interpreter
                    [program.python, *program.options, str(ZYGOTE), str(theirs.fileno()),
                     *words],
                    cwd=sandbox, env=dict(env), stdin=subprocess.DEVNULL, stdout=log,
                    stderr=log, pass_fds=(theirs.fileno(),), start_new_session=True,
                    preexec_fn=die_with_parent,  # noqa: PLW1509 - only prctl
                )
            except OSError as err:
                ours.close()
                raise ForkServerError(f"cannot start {program.python}: {err}") from None
            finally:
                theirs.close()
        return ours

    def _start_in(self, container: SlotContainer, program: PythonCommand,
                  words: tuple[str, ...], env: Mapping[str, str],
                  sandbox: Path) -> socket.socket:
        """Start the zygote in the slot's container and take its connection to a socket in
        the sandbox (bound through the sandbox's descriptor: its host path may be longer than
        a socket path can be)."""
        shutil.copyfile(ZYGOTE, sandbox / ZYGOTE_COPY)
        folder = os.open(sandbox, os.O_RDONLY | os.O_DIRECTORY)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            (sandbox / ZYGOTE_SOCKET).unlink(missing_ok=True)
            listener.bind(f"/proc/self/fd/{folder}/{ZYGOTE_SOCKET}")
            listener.listen(1)
            listener.settimeout(0.2)
            command = shlex.join([program.python, *program.options,
                                  container.inside(sandbox / ZYGOTE_COPY),
                                  f"unix:{container.inside(sandbox / ZYGOTE_SOCKET)}",
                                  *words])
            try:
                self._exec = container.exec(command, env, sandbox / ZYGOTE_LOG)
            except ContainerError as err:
                raise ForkServerError(f"cannot start {program.python} in the container: "
                                      f"{err}") from None
            deadline = time.monotonic() + READY_TIMEOUT
            while True:
                try:
                    ours, _ = listener.accept()
                    break
                except TimeoutError:
                    code = self._exec.poll()
                    if code is not None or time.monotonic() > deadline:
                        self._exec.kill(0)
                        why = f"it exited with status {code}" if code is not None \
                            else f"it did not connect within {READY_TIMEOUT:g} s"
                        raise ForkServerError(
                            f"the pre-imported interpreter cannot start: {why} (see "
                            f"{ZYGOTE_LOG} in the slot's sandbox)") from None
        finally:
            listener.close()
            os.close(folder)
            (sandbox / ZYGOTE_SOCKET).unlink(missing_ok=True)
        ours.settimeout(None)
        return ours

    @property
    def alive(self) -> bool:
        if self._closed:
            return False
        if self._popen is not None:
            return self._popen.poll() is None
        return self._exec is not None and self._exec.poll() is None

    def signal_group(self, pgid: int, signum: int) -> None:
        """Ask the zygote to signal the group of its trial ``pgid`` (in a container)."""
        try:
            self._send({"signal": int(signum), "pgid": pgid})
        except OSError:
            pass  # the zygote is gone, and its trials with it

    def _send(self, message: dict[str, Any]) -> None:
        with self._send_lock:  # one line at a time, whichever thread sends
            self._sock.sendall((json.dumps(message) + "\n").encode())

    def launch(self, target: str, is_module: bool, args: tuple[str, ...],
               env: Mapping[str, str], sandbox: Path,
               output: tuple[Path, Path] | None = None) -> ForkedProcess:
        """Fork one trial running ``target`` in ``sandbox``: its stdout and stderr into
        ``output`` (the executor's named pipes into its files), else the files there."""
        with self._lock:
            if self._closed:
                raise ForkServerError("the pre-imported interpreter has ended")
            request_id = str(self._next_id)
            self._next_id += 1
        where = (lambda path: path.as_posix()) if self.container is None \
            else self.container.inside
        request = {"id": request_id, "target": target, "is_module": is_module,
                   "args": list(args), "env": dict(env), "cwd": where(sandbox),
                   "stdout": where(output[0] if output else sandbox / "stdout"),
                   "stderr": where(output[1] if output else sandbox / "stderr")}
        if self.container is not None:
            request["inherit"] = True  # over the image's environment, as a container's exec
        try:
            self._send(request)
        except OSError as err:
            raise ForkServerError(f"the pre-imported interpreter is gone: {err}") from None
        with self._replied:
            if not self._replied.wait_for(lambda: request_id in self._replies or self._closed,
                                          FORK_TIMEOUT):
                raise ForkServerError("the pre-imported interpreter did not fork in time")
            reply = self._replies.pop(request_id, None)
            if reply is None:
                raise ForkServerError("the pre-imported interpreter ended")
            if "error" in reply:
                raise ForkServerError(str(reply["error"]))
            pid = int(reply["pid"])
            process = ForkedProcess(pid, sandbox) if self.container is None \
                else ContainerForkedProcess(pid, sandbox, self)
            early = self._early_exits.pop(process.pid, None)
            if early is None:
                self._processes[process.pid] = process
        if early is not None:
            process.ended(*early)
        return process

    def _read(self) -> dict[str, Any] | None:
        try:
            line = self._reader.readline()
        except OSError:
            return None
        if not line:
            return None
        try:
            message = json.loads(line)
        except ValueError:
            logger.warning("the pre-imported interpreter said %r", line[:200])
            return {}
        return message if isinstance(message, dict) else {}

    def _serve(self) -> None:
        while (message := self._read()) is not None:
            with self._replied:
                if "id" in message:
                    self._replies[str(message["id"])] = message
                    self._replied.notify_all()
                    continue
                if "pid" not in message:
                    continue
                pid, returncode = int(message["pid"]), int(message.get("returncode", 1))
                usage = _usage_of(message.get("rusage"))
                process = self._processes.pop(pid, None)
                if process is None:
                    self._early_exits[pid] = (returncode, usage)
            if process is not None:
                process.ended(returncode, usage)
        self._end()

    def _end(self) -> None:
        """The zygote is gone: its children died with it (SIGKILL)."""
        with self._replied:
            self._closed = True
            orphans = list(self._processes.values())
            self._processes.clear()
            self._replied.notify_all()
        for process in orphans:
            process.orphaned = True
            process.ended(-9)
        if orphans:
            logger.warning("the pre-imported interpreter ended with %d trial(s) running",
                           len(orphans))

    def close(self) -> None:
        """End the interpreter (its running children get SIGKILL with it)."""
        with self._lock:
            self._closed = True
        try:
            self._sock.close()
        except OSError:
            pass
        if self._popen is not None:
            if self._popen.poll() is None:
                self._popen.kill()
            self._popen.wait()
        if self._exec is not None:  # it ends on the closed socket; or it is killed
            deadline = time.monotonic() + CLOSE_WAIT
            while self._exec.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            self._exec.kill(0)
