"""A slot's pre-imported interpreter (``executor/forkserver.py`` and ``zygote.py``) with real
processes: each trial forked from it behaves as ``python SCRIPT ARGS`` would."""

from __future__ import annotations

from collections.abc import Iterator
import os
from pathlib import Path
import signal
import sys
import textwrap
import time

import pytest

from disauto.common.python_command import PythonCommand
from disauto.executor.forkserver import ZYGOTE_LOG
from disauto.executor.forkserver import ForkServer
from disauto.executor.forkserver import ForkServerError


pytestmark = pytest.mark.integration  # starts processes

SCRIPT = textwrap.dedent('''
    import atexit, json, os, random, sys, threading, time
    import heavy
    import apprunner_sdk
    out = {"argv": sys.argv, "cwd": os.getcwd(), "env": os.environ.get("TRIAL_VALUE"),
           "heavy_id": heavy.IMPORTED_AT, "random": random.random(), "pid": os.getpid(),
           "pgid": os.getpgid(0), "sid": os.getsid(0), "path0": sys.path[0],
           "trial": apprunner_sdk.trial_number(), "name": __name__}
    print(json.dumps(out))
    print("to stderr", file=sys.stderr)
    atexit.register(lambda: open("atexit-ran", "w").close())
    def late():
        time.sleep(0.2)
        open("thread-finished", "w").close()
    threading.Thread(target=late).start()
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "exit3":
        sys.exit(3)
    if mode == "raise":
        raise RuntimeError("the script failed")
    if mode == "sleep":
        time.sleep(60)
''')


@pytest.fixture
def slot(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "heavy.py").write_text("import time\nIMPORTED_AT = time.time()\n")
    return tmp_path


def _env(slot: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISAUTO_")}
    env["PYTHONPATH"] = os.pathsep.join([str(slot), *sys.path[1:]])
    env.update(extra)
    return env


@pytest.fixture
def server(slot: Path) -> Iterator[ForkServer]:
    program = PythonCommand(sys.executable, "train.py", False)
    started = ForkServer(program, ("apprunner_sdk", "heavy"), _env(slot), slot)
    yield started
    started.close()


def _trial(server: ForkServer, slot: Path, name: str, *args: str,
           **env: str) -> tuple[int, Path]:
    sandbox = slot / "tasks" / name
    sandbox.mkdir(parents=True)
    (sandbox / "train.py").symlink_to(slot / "train.py")
    process = server.launch("train.py", False, args, _env(slot, **env), sandbox)
    return process.wait(timeout=30), sandbox


def _wait_for_output(sandbox: Path) -> None:
    """Until the trial has printed its first line (it runs)."""
    deadline = time.monotonic() + 20
    stdout = sandbox / "stdout"
    while not (stdout.exists() and stdout.read_text()):
        assert time.monotonic() < deadline, "the trial printed nothing"
        time.sleep(0.05)


def _output(sandbox: Path) -> dict[str, object]:
    import json
    return json.loads((sandbox / "stdout").read_text().splitlines()[0])


def test_each_trial_is_a_fresh_program_that_shares_only_the_imports(server: ForkServer,
                                                                      slot: Path) -> None:
    code_a, a = _trial(server, slot, "a", "--lr", "0.1", TRIAL_VALUE="one",
                       DISAUTO_TRIAL_NUMBER="1")
    code_b, b = _trial(server, slot, "b", TRIAL_VALUE="two", DISAUTO_TRIAL_NUMBER="2")
    assert (code_a, code_b) == (0, 0)
    out_a, out_b = _output(a), _output(b)
    assert out_a["argv"] == ["train.py", "--lr", "0.1"]
    assert out_a["cwd"] == str(a) and out_b["cwd"] == str(b)
    assert (out_a["env"], out_b["env"]) == ("one", "two")
    assert (out_a["trial"], out_b["trial"]) == (1, 2)  # the SDK re-reads its environment
    assert out_a["name"] == "__main__"
    assert out_a["path0"] == str(a)
    assert out_a["heavy_id"] == out_b["heavy_id"]  # imported once, before the forks
    assert out_a["random"] != out_b["random"]
    assert out_a["pid"] == out_a["pgid"] == out_a["sid"]  # its own session and group
    assert (a / "stderr").read_text() == "to stderr\n"
    for sandbox in (a, b):  # an interpreter's exit: non-daemon threads joined, atexit run
        assert (sandbox / "atexit-ran").exists()
        assert (sandbox / "thread-finished").exists()


def test_exit_status_exceptions_and_signals_are_those_of_python(server: ForkServer,
                                                                 slot: Path) -> None:
    assert _trial(server, slot, "exit", "exit3")[0] == 3
    code, sandbox = _trial(server, slot, "raise", "raise")
    assert code == 1
    assert "RuntimeError: the script failed" in (sandbox / "stderr").read_text()
    sandbox = slot / "tasks" / "killed"
    sandbox.mkdir(parents=True)
    (sandbox / "train.py").symlink_to(slot / "train.py")
    process = server.launch("train.py", False, ("sleep",), _env(slot), sandbox)
    _wait_for_output(sandbox)
    process.kill(grace=5)
    assert process.wait(timeout=10) == -signal.SIGTERM
    assert server.alive


def test_a_module_program_runs_as_python_dash_m(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(
        "import sys\nprint(__name__, sys.argv[1:])\nsys.exit(int(sys.argv[1]))\n")
    program = PythonCommand(sys.executable, "pkg.train", True)
    server = ForkServer(program, ("json",), _env(tmp_path), tmp_path)
    try:
        process = server.launch("pkg.train", True, ("4",), _env(tmp_path), tmp_path)
        assert process.wait(timeout=30) == 4
        assert (tmp_path / "stdout").read_text() == "__main__ ['4']\n"
    finally:
        server.close()


def test_a_module_that_cannot_be_imported_is_named(tmp_path: Path) -> None:
    program = PythonCommand(sys.executable, "train.py", False)
    with pytest.raises(ForkServerError, match="cannot import no_such_module: "
                                              "ModuleNotFoundError"):
        ForkServer(program, ("no_such_module",), _env(tmp_path), tmp_path)
    assert (tmp_path / ZYGOTE_LOG).exists()


def test_an_interpreter_that_does_not_exist_is_named(tmp_path: Path) -> None:
    program = PythonCommand("/nonexistent/python3", "train.py", False)
    with pytest.raises(ForkServerError, match="cannot start /nonexistent/python3"):
        ForkServer(program, (), _env(tmp_path), tmp_path)


def test_killing_the_interpreter_ends_its_running_trials(server: ForkServer,
                                                         slot: Path) -> None:
    sandbox = slot / "tasks" / "orphan"
    sandbox.mkdir(parents=True)
    (sandbox / "train.py").symlink_to(slot / "train.py")
    process = server.launch("train.py", False, ("sleep",), _env(slot), sandbox)
    _wait_for_output(sandbox)
    os.kill(server._popen.pid, signal.SIGKILL)
    assert process.wait(timeout=20) == -signal.SIGKILL
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(process.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"trial {process.pid} outlived its interpreter")
    assert not server.alive
    with pytest.raises(ForkServerError):
        server.launch("train.py", False, (), _env(slot), sandbox)


LOAD = textwrap.dedent('''
    import json, resource, time
    block = bytearray(80 * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    end = time.process_time() + 0.5
    while time.process_time() < end:
        pass
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps([own.ru_utime + own.ru_stime, own.ru_maxrss * 1024]))
''')


def test_each_trial_is_measured_exactly_when_it_is_reaped(server: ForkServer,
                                                          slot: Path) -> None:
    (slot / "load.py").write_text(LOAD)
    for name in ("first", "second"):  # the second trial's figures are its own, not a sum
        sandbox = slot / "tasks" / name
        sandbox.mkdir(parents=True)
        process = server.launch(str(slot / "load.py"), False, (), _env(slot), sandbox)
        assert process.wait(timeout=30) == 0
        own_cpu, own_peak = _output_list(sandbox)
        assert process.usage is not None
        assert own_cpu <= process.usage.cpu_seconds <= own_cpu + 0.2
        # The trial measured itself a moment before it exited (its exit may touch more).
        assert own_peak <= process.usage.max_rss_bytes <= own_peak + 4 * 1024 * 1024


def _output_list(sandbox: Path) -> list[float]:
    import json
    return list(json.loads((sandbox / "stdout").read_text().splitlines()[0]))


def test_a_forked_trial_writes_through_the_executors_named_pipes(server: ForkServer,
                                                                  slot: Path) -> None:
    from disauto.common.logrotate import MIN_SIZE
    from disauto.common.logrotate import Rotation
    from disauto.common.logrotate import SandboxLogging
    from disauto.executor.task_output import FIFO_DIR
    from disauto.executor.task_output import TaskOutput

    sandbox = slot / "tasks" / "piped"
    sandbox.mkdir(parents=True)
    (sandbox / "train.py").symlink_to(slot / "train.py")
    output = TaskOutput(sandbox, slot / FIFO_DIR,
                        SandboxLogging(Rotation(MIN_SIZE, 1), Rotation(MIN_SIZE, 1)))
    assert output.fifos is not None
    process = server.launch("train.py", False, (), _env(slot, TRIAL_VALUE="piped"), sandbox,
                            output.fifos)
    assert process.wait(timeout=30) == 0
    output.drain()
    assert _output(sandbox)["env"] == "piped"  # the files the collector reads, as ever
    assert (sandbox / "stderr").read_text() == "to stderr\n"
    assert not list((slot / FIFO_DIR).iterdir())  # the pipes are gone once drained


IN_CONTAINER = textwrap.dedent('''
    import json, os, sys, time
    print(json.dumps({"cwd": os.getcwd(), "value": os.environ.get("TRIAL_VALUE"),
                      "path": os.environ.get("PATH", ""), "python": sys.executable,
                      "sandbox": os.environ.get("MESOS_SANDBOX"), "argv": sys.argv}),
          flush=True)
    if sys.argv[1:] == ["sleep"]:
        time.sleep(60)
''')


def test_in_a_container_the_images_python_forks_the_trials(
        tmp_path: Path, runner_image: str, docker_engine: object) -> None:
    """With ``--docker-image`` the interpreter is the image's Python in the slot's container:
    trials run there with container paths and the image's environment, and are killed through
    the interpreter (their pids are the container's); what cannot start is named."""
    from disauto.common.slots import ContainerSpec
    from disauto.executor.container import SlotContainer

    (tmp_path / "train.py").write_text(IN_CONTAINER)
    container = SlotContainer(ContainerSpec(runner_image, labels={"disauto.job": "zygote-test"}),
                              tmp_path)
    server = None
    try:
        container.ensure(0.5, 256)
        program = PythonCommand("python", "train.py", False)
        slot_env = {"MESOS_SANDBOX": "/mnt/mesos/sandbox"}
        server = ForkServer(program, ("json",), slot_env, tmp_path, container)
        sandboxes = []
        for name in ("a", "b"):
            sandbox = tmp_path / "tasks" / name
            sandbox.mkdir(parents=True)
            (sandbox / "train.py").symlink_to("../../train.py")  # relative: it resolves inside
            sandboxes.append(sandbox)
        inside = "/mnt/mesos/sandbox/tasks/a"
        process = server.launch("train.py", False, ("--x", "1"),
                                {"TRIAL_VALUE": "one", "MESOS_SANDBOX": inside}, sandboxes[0])
        assert process.wait(timeout=30) == 0
        out = _output(sandboxes[0])
        assert out["cwd"] == out["sandbox"] == inside
        assert out["python"] == "/usr/local/bin/python" and out["value"] == "one"
        assert "/usr/local/bin" in str(out["path"]).split(":")  # the image's, inherited
        assert out["argv"] == ["train.py", "--x", "1"]
        assert process.usage is not None and process.usage.max_rss_bytes > 0
        sleeper = server.launch("train.py", False, ("sleep",), {}, sandboxes[1])
        _wait_for_output(sandboxes[1])
        sleeper.kill(grace=5)
        assert sleeper.wait(timeout=10) == -signal.SIGTERM
        assert server.alive
        with pytest.raises(ForkServerError, match="cannot import no_such_module"):
            ForkServer(program, ("no_such_module",), slot_env, tmp_path, container)
        with pytest.raises(ForkServerError, match="exited with status 127"):
            ForkServer(PythonCommand("/nonexistent/python3", "train.py", False), (), slot_env,
                       tmp_path, container)
    finally:
        if server is not None:
            server.close()
        container.remove()
    assert not server.alive
