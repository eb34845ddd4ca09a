"""A warm slot's pre-imported interpreter (``da-submit --slot-preload``): it forks trials.

Run by the slot's executor as ``<the launch command's python> zygote.py FD MODULE...`` with the
first trial's environment, in the slot's sandbox; in a slot's container (``--docker-image``) as
``python zygote.py unix:PATH MODULE...``, a copy of this file in the slot's sandbox, connecting to
the executor's socket at ``PATH`` in the sandbox. It imports the modules once, says whether
that worked, then serves requests on the socket. A module written ``?NAME`` is optional
(``--slot-preload auto``): one that cannot be imported is skipped, and one that leaves the
interpreter unsafe to fork (below; or imports a module matching a pattern of ``--deny=P,...``)
ends it with that module named, so that the executor starts another without it. Then each
request forks a child that becomes one trial, running the user's script (``runpy``) exactly as
``python SCRIPT ARGS`` would, in a session and process group of its own, with the trial's own
environment, working directory, stdout and stderr. This file uses the standard library only:
it runs in the user's Python, which need not have DisAuto installed.

The protocol is JSON, one object per line, over the socket:

* zygote → executor, once: ``{"ready": true, "skipped": [[MODULE, WHY], ...]}`` or
  ``{"error": "cannot import numpy: ..."}`` (with ``"module": NAME`` when an optional module
  left the interpreter unsafe to fork: the executor starts another without it);
* executor → zygote: ``{"id": ..., "target": ..., "is_module": ..., "args": [...], "env": {...},
  "cwd": ..., "stdout": PATH, "stderr": PATH}`` (with ``"inherit": true`` the trial's
  environment is the zygote's own, as the container's image set it, updated with ``env``);
* executor → zygote: ``{"signal": N, "pgid": P}``: send signal ``N`` to the process group ``P``
  of a trial not yet reaped (in a container, whose pids the executor cannot signal);
* zygote → executor: ``{"id": ..., "pid": N}`` (or ``{"id": ..., "error": ...}``) at once, and
  ``{"pid": N, "returncode": R, "rusage": {"utime": U, "stime": S, "maxrss_kb": K}}`` when the
  child ends (``R`` < 0: the signal that ended it; the rusage is ``os.wait4``'s of the child:
  its CPU seconds since the fork and its largest resident set, which counts the pages it
  shares with this interpreter, as the trial's own ``getrusage`` does).

What a fork does not give a trial (docs/warm-slots.md): a module's import-time state is shared
with the slot's other trials as of the import. Generators a fresh interpreter seeds from the OS
are re-seeded in each trial (``random`` by Python, NumPy's global one and PyTorch's CPU one
here); one a module made at import is not. What cannot work in a fork is refused before the
interpreter says it is ready: CUDA initialised while the modules were imported (PyTorch refuses
CUDA in a fork), and a GNU OpenMP thread pool started then (a forked trial would hang at its
first parallel region: the pool's threads are not copied by a fork). Libraries that start other
threads or open connections at import (a gRPC channel) are not fork-safe either: do not preload
them.
"""

from __future__ import annotations

import atexit
import ctypes
import fnmatch
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any


_PR_SET_PDEATHSIG = 1
PROBE_TIMEOUT = 10.0
"""Seconds a forked probe may take to run a parallel region of an OpenMP runtime (it takes
milliseconds; one whose pool a fork broke never returns)."""


def _prctl() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def _die_with_parent() -> None:
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall((json.dumps(message) + "\n").encode())


def _exit_code(code: object) -> int:
    """``sys.exit(code)``'s status, as the interpreter computes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _reseed() -> None:
    """Re-seed from the OS, as a fresh interpreter seeds them, the generators a fork copies:
    NumPy's global one and PyTorch's CPU one (Python's ``random`` re-seeds itself in a fork).
    PyTorch's CUDA generators start from a constant in a fresh interpreter and are made when
    CUDA starts, in the trial (the zygote refuses to fork once CUDA started): left alone."""
    mtrand = sys.modules.get("numpy.random")
    torch = sys.modules.get("torch")
    for reseed in (getattr(mtrand, "seed", None),
                   getattr(getattr(torch, "default_generator", None), "seed", None)):
        if reseed is not None:
            try:
                reseed()
            except Exception:  # noqa: BLE001 - a broken library is the trial's to find
                pass


def _loaded(prefix: str) -> list[str]:
    """The shared libraries loaded in this process whose file name starts with ``prefix``."""
    try:
        with open("/proc/self/maps") as maps:
            paths = [line.split(None, 5)[-1].strip() for line in maps if "/" + prefix in line]
    except OSError:
        return []
    return list(dict.fromkeys(p for p in paths if os.path.basename(p).startswith(prefix)))


def _gnu_openmp_runtimes() -> list[str]:
    """The GNU OpenMP runtimes loaded in this process (each wheel may bring its own copy)."""
    return _loaded("libgomp")


_CUDA_ERROR_NOT_INITIALIZED = 3


def cuda_driver_started() -> bool:
    """Whether the CUDA driver was initialised here (``cuInit``, which ``cudaGetDeviceCount``
    and so ``torch.cuda.is_available()`` run): a forked child can no longer use CUDA. Asked
    of a ``libcuda`` already loaded only; until ``cuInit`` every driver call answers
    CUDA_ERROR_NOT_INITIALIZED."""
    for path in _loaded("libcuda.so"):
        try:
            count = ctypes.c_int()
            answer = ctypes.CDLL(path).cuDeviceGetCount(ctypes.byref(count))
        except (OSError, AttributeError):
            continue
        if answer != _CUDA_ERROR_NOT_INITIALIZED:
            return True
    return False


def _parallel_region_in_a_fork(runtime: str) -> bool:
    """Whether a child forked now can run a two-thread parallel region of ``runtime``
    (``GOMP_parallel`` of ``free(NULL)``): not when a pool it started here lost its threads."""
    pid = os.fork()
    if pid == 0:
        try:
            _die_with_parent()
            gomp = ctypes.CDLL(runtime)
            gomp.GOMP_parallel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint,
                                           ctypes.c_uint]
            gomp.GOMP_parallel(ctypes.cast(ctypes.CDLL(None).free, ctypes.c_void_p), None,
                               2, 0)
        except BaseException:  # noqa: BLE001 - an unusual runtime: nothing to tell
            pass
        os._exit(0)
    deadline = time.monotonic() + PROBE_TIMEOUT
    while os.waitpid(pid, os.WNOHANG)[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return False
        time.sleep(0.01)
    return True


def unsafe_to_fork() -> str | None:
    """Why a trial forked from this interpreter could not run as ``python SCRIPT`` would
    (None: it could)."""
    cuda = getattr(sys.modules.get("torch"), "cuda", None)
    try:
        started = bool(cuda.is_initialized()) if cuda is not None else False
    except Exception:  # noqa: BLE001 - a broken torch is the trial's to find
        started = False
    if started:
        return ("CUDA was initialised while the modules were imported, and PyTorch cannot use "
                "it in a forked trial: preload only modules that leave the GPU to the trial")
    for runtime in _gnu_openmp_runtimes():
        if not _parallel_region_in_a_fork(runtime):
            return (f"an OpenMP thread pool ({os.path.basename(runtime)}) was started while "
                    "the modules were imported, so a forked trial would hang at its first "
                    "parallel operation: preload only modules that compute nothing at import")
    return None


def _become_trial(request: dict[str, Any], sock: socket.socket) -> int:
    """In the child: turn into the trial and run it; its exit status."""
    os.setsid()
    _die_with_parent()
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sock.close()
    devnull = os.open(os.devnull, os.O_RDONLY)
    out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for fd, target in ((devnull, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    own = {str(k): str(v) for k, v in request["env"].items()}
    os.environ.clear()
    os.environ.update({**_STARTED_WITH, **own} if request.get("inherit") else own)
    _reseed()
    target, args = str(request["target"]), [str(a) for a in request.get("args", [])]
    try:
        if request.get("is_module"):
            sys.argv = [target, *args]
            sys.path[0] = os.getcwd()
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target, *args]
            sys.path[0] = os.path.dirname(os.path.abspath(target))
            runpy.run_path(target, run_name="__main__")
        code = 0
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except KeyboardInterrupt:
        code = 128 + signal.SIGINT
    except BaseException:  # noqa: BLE001 - the script's error, printed as Python would
        traceback.print_exc()
        code = 1
    return code


def _finish(code: int) -> None:
    """End the child as an interpreter's shutdown would, without tearing the modules down:
    wait for non-daemon threads, run ``atexit`` handlers, flush, exit."""
    try:
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        code = code or 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)


def _fork(request: dict[str, Any], sock: socket.socket) -> int:
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = _become_trial(request, sock)
        finally:
            _finish(code)
    return pid


def _signal_group(request: dict[str, Any], children: set[int]) -> None:
    """Signal the group of a child not yet reaped (its pid cannot belong to anyone else)."""
    pgid = int(request["pgid"])
    if pgid in children:
        try:
            os.killpg(pgid, int(request["signal"]))
        except (ProcessLookupError, PermissionError):
            pass


def _reap(sock: socket.socket, children: set[int]) -> None:
    while True:
        try:
            pid, status, rusage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        _send(sock, {"pid": pid, "returncode": os.waitstatus_to_exitcode(status),
                     "rusage": {"utime": rusage.ru_utime, "stime": rusage.ru_stime,
                                "maxrss_kb": rusage.ru_maxrss}})


def serve(sock: socket.socket) -> None:
    """Fork a trial for each request until the executor closes the socket."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    pending = b""
    children: set[int] = set()
    while True:
        for key, _ in selector.select():
            if key.fileobj == wake_read:
                while True:
                    try:
                        if not os.read(wake_read, 512):
                            break
                    except BlockingIOError:
                        break
                _reap(sock, children)
                continue
            data = sock.recv(1 << 16)
            if not data:
                return
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                if "signal" in request:
                    _signal_group(request, children)
                    continue
                try:
                    pid = _fork(request, sock)
                except OSError as err:
                    _send(sock, {"id": request["id"], "error": f"cannot fork: {err}"})
                    continue
                children.add(pid)
                _send(sock, {"id": request["id"], "pid": pid})
        _reap(sock, children)


_STARTED_WITH = dict(os.environ)
"""The environment the zygote started with (the base of an ``inherit`` request's)."""


def _connect(where: str) -> socket.socket:
    """The executor's socket: an inherited descriptor ``FD``, or ``unix:PATH`` to connect to."""
    if where.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(where[len("unix:"):])
        return sock
    return socket.socket(fileno=int(where))


def _denied(names: set[str], deny: list[str]) -> str | None:
    """The first top-level module of ``names`` that a ``--deny`` pattern matches."""
    tops = sorted({name.split(".", 1)[0] for name in names})
    return next((top for top in tops for pattern in deny if fnmatch.fnmatchcase(top, pattern)),
                None)


def import_optional(name: str, deny: list[str]) -> tuple[str, bool] | None:
    """Import an optional module: None when it is imported and the interpreter can still fork
    trials, else ``(why, tainted)``: ``tainted`` when the interpreter is no longer safe to
    fork (it must not serve trials), not when the module merely could not be imported."""
    threads, before = threading.active_count(), set(sys.modules)
    try:
        importlib.import_module(name)
        failed = ""
    except BaseException as err:  # noqa: BLE001 - any failure of the user's import
        failed = f"cannot import it: {type(err).__name__}: {err}"
    pulled = _denied(set(sys.modules) - before, deny)
    unsafe = (f"it imports {pulled}, which does not survive a fork" if pulled else
              "it starts a thread at import, which a forked trial would not have"
              if threading.active_count() > threads else
              "it initialises the CUDA driver at import, which a forked trial cannot use"
              if cuda_driver_started() else unsafe_to_fork())
    if unsafe:
        return unsafe, True
    return (failed, False) if failed else None


def _arguments(words: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(required modules, optional modules, deny patterns) of the command line."""
    required, optional, deny = [], [], []
    for word in words:
        if word.startswith("--deny="):
            deny += [p for p in word[len("--deny="):].split(",") if p]
        elif word.startswith("?"):
            optional.append(word[1:])
        else:
            required.append(word)
    return required, optional, deny


def main(argv: list[str]) -> int:
    _die_with_parent()
    sock = _connect(argv[1])
    sys.path[0] = os.getcwd()  # as ``python -m``: the sandbox, not this file's folder
    required, optional, deny = _arguments(argv[2:])
    for name in required:
        try:
            importlib.import_module(name)
        except BaseException as err:  # noqa: BLE001 - any failure of the user's import
            _send(sock, {"error": f"cannot import {name}: {type(err).__name__}: {err}"})
            return 3
    why = unsafe_to_fork()
    if why is not None:
        _send(sock, {"error": why})
        return 3
    skipped = []
    for name in optional:
        problem = import_optional(name, deny)
        if problem is not None and problem[1]:
            print(f"{name}: not preloaded: {problem[0]}", file=sys.stderr, flush=True)
            _send(sock, {"error": f"{name}: {problem[0]}", "module": name, "why": problem[0]})
            return 3
        if problem is not None:
            print(f"{name}: not preloaded: {problem[0]}", file=sys.stderr, flush=True)
            skipped.append([name, problem[0]])
    _send(sock, {"ready": True, "skipped": skipped})
    serve(sock)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
