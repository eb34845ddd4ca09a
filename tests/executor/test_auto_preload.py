"""``--slot-preload auto`` on the slot (``executor/zygote.py``, ``forkserver.py``, ``slot.py``),
with real interpreters: the script's modules are optional, so one that cannot be imported, that
starts a thread, a GNU OpenMP pool or a denied module at import, or that kills the interpreter,
is left out with one line, and the slot still forks every trial (which imports it itself)."""

from __future__ import annotations

import ctypes.util
import os
from pathlib import Path
import sys
import textwrap
from typing import Any

import pytest

from disauto.common import slots
from disauto.common.python_command import PythonCommand
from disauto.executor.forkserver import ForkServer
from disauto.executor.forkserver import ForkServerError
from disauto.executor.slot import READY
from disauto.executor.slot import SlotExecutor


pytestmark = pytest.mark.integration  # starts processes

MODULES = {
    "heavy.py": "import time\nIMPORTED_AT = time.time()\n",
    "threader.py": "import threading, time\n"
                   "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
    "forbidden_lib.py": "VALUE = 1\n",
    "uses_forbidden.py": "import forbidden_lib\n",
    "crasher.py": "import os\nos._exit(7)\n",
    "broken.py": "raise RuntimeError('broken at import')\n",
    "pool.py": textwrap.dedent('''
        import ctypes, os
        gomp = ctypes.CDLL(os.environ["TEST_GOMP"])
        gomp.GOMP_parallel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint,
                                       ctypes.c_uint]
        gomp.GOMP_parallel(ctypes.cast(ctypes.CDLL(None).free, ctypes.c_void_p), None, 2, 0)
    '''),
    # The trial: which modules its interpreter had before the script ran, and that it runs.
    "train.py": textwrap.dedent('''
        import json, sys
        preloaded = sorted(m for m in ("heavy", "threader", "pool", "uses_forbidden")
                           if m in sys.modules)
        import heavy, threader
        print(json.dumps({"preloaded": preloaded, "heavy": heavy.IMPORTED_AT}))
    '''),
}


@pytest.fixture
def slot(tmp_path: Path) -> Path:
    for name, text in MODULES.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def _gnu_openmp() -> str:
    import sklearn

    found = sorted(Path(sklearn.__file__).parent.parent.glob("scikit_learn.libs/libgomp*"))
    path = str(found[0]) if found else ctypes.util.find_library("gomp")
    if not path:
        pytest.skip("no GNU OpenMP runtime on this machine")
    return path


def _env(slot: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISAUTO_")}
    env["PYTHONPATH"] = os.pathsep.join([str(slot), *sys.path[1:]])
    env["TEST_GOMP"] = _gnu_openmp()
    return env


PROGRAM = PythonCommand(sys.executable, "train.py", False)


def test_a_module_that_cannot_be_imported_is_skipped_and_the_rest_preloaded(
        slot: Path) -> None:
    server = ForkServer(PROGRAM, ("apprunner_sdk",), _env(slot), slot,
                        optional=("no_such_module", "broken", "heavy"))
    try:
        assert server.skipped == [
            ("no_such_module", "cannot import it: ModuleNotFoundError: No module named "
                               "'no_such_module'"),
            ("broken", "cannot import it: RuntimeError: broken at import")]
        assert "no_such_module: not preloaded" in (slot / "zygote.log").read_text()
    finally:
        server.close()


@pytest.mark.parametrize(("module", "why"), [
    ("threader", "it starts a thread at import, which a forked trial would not have"),
    ("uses_forbidden", "it imports forbidden_lib, which does not survive a fork"),
    ("pool", "an OpenMP thread pool (libgomp"),
])
def test_a_module_that_leaves_the_interpreter_unsafe_to_fork_is_named(
        slot: Path, module: str, why: str) -> None:
    with pytest.raises(ForkServerError) as raised:
        ForkServer(PROGRAM, ("apprunner_sdk",), _env(slot), slot, optional=("heavy", module),
                   deny=("forbidden*",))
    assert raised.value.module == module
    assert raised.value.why.startswith(why)
    assert not raised.value.died


def test_required_modules_are_still_refused_as_before(slot: Path) -> None:
    with pytest.raises(ForkServerError, match="cannot import no_such_module") as raised:
        ForkServer(PROGRAM, ("no_such_module",), _env(slot), slot, optional=("heavy",))
    assert raised.value.module is None


class Driver:
    """pymesos' executor driver, as far as a warm-up uses it."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []

    def sendStatusUpdate(self, status: dict[str, Any]) -> None:  # noqa: N802 - pymesos API
        self.updates.append(status)


def _warm_up(slot: Path, optional: tuple[str, ...]) -> tuple[SlotExecutor, dict[str, Any]]:
    executor = SlotExecutor(slot, shutdown_grace=5.0)
    driver = Driver()
    preload = slots.Preload(PROGRAM, ("apprunner_sdk",), optional)
    data = slots.task_data("python train.py", _env(slot), preload, slots.Warmup(0.5, 256))
    executor._warm_up(driver, "job-slot-0-warmup", slots.read_slot_task(data))
    return executor, driver.updates[-1]


def test_the_slot_starts_again_without_each_unsafe_module_and_forks_every_trial(
        slot: Path) -> None:
    executor, update = _warm_up(slot, ("threader", "heavy", "no_such_module", "pool"))
    try:
        assert update["state"] == "TASK_FINISHED"
        message = update["message"]
        assert message.startswith(f"{READY}; not preloaded: threader (it starts a thread")
        assert "no_such_module (cannot import it: ModuleNotFoundError" in message
        assert "pool (an OpenMP thread pool" in message
        server = executor._forkserver
        assert server is not None
        assert [name for name, _ in server.skipped] == ["threader", "pool", "no_such_module"]
        outputs = []
        for name in ("a", "b"):
            sandbox = slot / "tasks" / name
            sandbox.mkdir(parents=True)
            (sandbox / "train.py").symlink_to(slot / "train.py")
            process = server.launch("train.py", False, (), _env(slot), sandbox)
            assert process.wait(timeout=60) == 0
            outputs.append((sandbox / "stdout").read_text())
        import json
        first, second = (json.loads(text) for text in outputs)
        assert first["preloaded"] == second["preloaded"] == ["heavy"]
        assert first["heavy"] == second["heavy"]  # imported once, before the forks
    finally:
        executor.shutdown(Driver())


def test_an_interpreter_that_dies_importing_them_starts_again_without_any(
        slot: Path) -> None:
    executor, update = _warm_up(slot, ("heavy", "crasher"))
    try:
        assert update["state"] == "TASK_FINISHED"
        assert "not preloaded: heavy (the interpreter died importing the script's " \
               "modules" in update["message"]
        assert "crasher (the interpreter died" in update["message"]
        assert executor._forkserver is not None and executor._forkserver.alive
    finally:
        executor.shutdown(Driver())
