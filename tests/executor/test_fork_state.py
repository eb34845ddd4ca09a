"""What a trial forked from a slot's pre-imported interpreter inherits, against the same trial
exec'd as ``python SCRIPT`` (issue 31): real zygotes forking real trials, real processes.

The generators a fresh interpreter seeds from the OS must differ from trial to trial; seeded
computations and the libraries' thread counts must be those of an exec'd trial; and what a
fork cannot carry (a GNU OpenMP pool started at import) is refused before any trial runs. The
PyTorch tests run where PyTorch is installed (it is not in the ``test`` extra: see
docs/warm-slots.md); the NumPy and OpenMP ones always run (scikit-learn, in the ``test`` extra,
brings a GNU OpenMP runtime).
"""

from __future__ import annotations

from collections.abc import Iterator
import ctypes.util
import json
import os
from pathlib import Path
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from disauto.common.python_command import PythonCommand
from disauto.executor.forkserver import ForkServer
from disauto.executor.forkserver import ForkServerError


NO_TORCH = ("torch (about 800 MB) is not in the test extra: the numpy twin of this test runs "
            "here, and a lent GPU machine runs this one (docs/warm-slots.md)")


pytestmark = pytest.mark.integration  # starts processes

PROBE = textwrap.dedent('''
    import hashlib, json, os, random, sys
    import numpy
    from threadpoolctl import threadpool_info
    out = {"numpy": float(numpy.random.random()), "random": random.random(),
           "default_rng": float(numpy.random.default_rng().random()),
           "omp": os.environ.get("OMP_NUM_THREADS"), "ppid": os.getppid()}
    a = numpy.random.default_rng(7).standard_normal((300, 300))
    out["seeded"] = hashlib.sha256((a @ a).tobytes()).hexdigest()
    if "torch" in sys.argv[1:]:
        import torch
        out["torch_seed"] = torch.initial_seed()
        out["torch_draw"] = torch.rand(()).item()
        out["torch_threads"] = torch.get_num_threads()
        torch.manual_seed(7)
        w = torch.randn(200, 200)
        out["torch_seeded"] = hashlib.sha256((w @ w).sum(0).numpy().tobytes()).hexdigest()
    # Once every library is loaded (the exec'd trial loads torch's runtimes only now).
    out["pools"] = sorted([p["internal_api"], p["num_threads"]] for p in threadpool_info())
    print(json.dumps(out))
''')

# Loads a GNU OpenMP runtime (TEST_GOMP) and runs a two-thread parallel region of it, at
# import when TEST_START_POOL is set: what a module that computes at import does.
GOMP_USER = textwrap.dedent('''
    import ctypes, os
    gomp = ctypes.CDLL(os.environ["TEST_GOMP"])
    gomp.GOMP_parallel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint,
                                   ctypes.c_uint]
    def parallel_region():
        gomp.GOMP_parallel(ctypes.cast(ctypes.CDLL(None).free, ctypes.c_void_p), None, 2, 0)
    if os.environ.get("TEST_START_POOL"):
        parallel_region()
''')


@pytest.fixture
def slot(tmp_path: Path) -> Path:
    (tmp_path / "probe.py").write_text(PROBE)
    (tmp_path / "gomp_user.py").write_text(GOMP_USER)
    (tmp_path / "parallel.py").write_text(
        "import gomp_user\ngomp_user.parallel_region()\nprint('parallel region ran')\n")
    (tmp_path / "torch_user.py").write_text(
        "import torch\ntorch.set_num_threads(2)\ntorch.ones(1 << 20).sum()\n")
    return tmp_path


def _env(slot: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISAUTO_")}
    env["PYTHONPATH"] = os.pathsep.join([str(slot), *sys.path[1:]])
    env["OMP_NUM_THREADS"] = "1"  # read once, at a runtime's load: the trial's must hold
    env.update(extra)
    return env


def _gnu_openmp() -> str:
    """A GNU OpenMP runtime: scikit-learn's own copy, else the system's."""
    import sklearn

    found = sorted(Path(sklearn.__file__).parent.parent.glob("scikit_learn.libs/libgomp*"))
    path = str(found[0]) if found else ctypes.util.find_library("gomp")
    if not path:
        pytest.skip("no GNU OpenMP runtime on this machine")
    return path


@pytest.fixture
def start(slot: Path) -> Iterator[Any]:
    servers: list[ForkServer] = []

    def run(modules: tuple[str, ...], script: str = "probe.py", **env: str) -> ForkServer:
        program = PythonCommand(sys.executable, script, False)
        server = ForkServer(program, modules, _env(slot, **env), slot)
        servers.append(server)
        return server

    yield run
    for server in servers:
        server.close()


def _forked(server: ForkServer, slot: Path, name: str, script: str = "probe.py",
            *args: str, **env: str) -> tuple[int, str]:
    sandbox = slot / "tasks" / name
    sandbox.mkdir(parents=True)
    (sandbox / script).symlink_to(slot / script)  # the job's files, as a slot links them
    code = server.launch(script, False, args, _env(slot, **env), sandbox).wait(timeout=120)
    return code, (sandbox / "stdout").read_text()


def _execd(slot: Path, *args: str) -> str:
    """The same probe as task mode runs it: a fresh ``python probe.py`` in its sandbox."""
    sandbox = slot / "tasks" / f"exec-{len(list((slot / 'tasks').glob('exec-*')))}"
    sandbox.mkdir(parents=True)
    done = subprocess.run([sys.executable, str(slot / "probe.py"), *args], cwd=sandbox,
                          env=_env(slot), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, check=True)
    return done.stdout


def _probes(server: ForkServer, slot: Path, count: int, *args: str) -> list[dict[str, Any]]:
    out = []
    for n in range(count):
        code, stdout = _forked(server, slot, f"fork-{n}", "probe.py", *args)
        assert code == 0, stdout
        out.append(json.loads(stdout))
    return out


def test_forked_trials_draw_apart_and_compute_as_exec_d_ones(start: Any, slot: Path) -> None:
    server = start(("numpy", "threadpoolctl"))
    forked = _probes(server, slot, 3)
    execd = [json.loads(_execd(slot)) for _ in range(2)]
    for key in ("numpy", "random", "default_rng"):  # seeded from the OS, as an exec'd one's
        assert len({p[key] for p in forked}) == 3, (key, forked)
    assert {p["seeded"] for p in forked + execd} == {execd[0]["seeded"]}
    assert {p["omp"] for p in forked} == {"1"}
    # The thread pools a forked trial's libraries use: those an exec'd trial's use.
    assert all(p["pools"] == execd[0]["pools"] for p in forked + execd), (forked, execd)
    assert len({p["ppid"] for p in forked}) == 1  # all forked by the slot's interpreter


def test_pytorch_cpu_generator_is_reseeded_in_every_forked_trial(start: Any,
                                                                 slot: Path) -> None:
    pytest.importorskip("torch", reason=NO_TORCH)
    server = start(("torch", "threadpoolctl"))
    forked = _probes(server, slot, 2, "torch")
    execd = json.loads(_execd(slot, "torch"))
    # Unseeded: a fresh interpreter's CPU generator starts from the OS, so every trial's
    # does (before the fix every trial of a slot drew the zygote's numbers).
    assert forked[0]["torch_seed"] != forked[1]["torch_seed"], forked
    assert forked[0]["torch_draw"] != forked[1]["torch_draw"], forked
    # Seeded: the same numbers, the same threads, as the exec'd trial.
    assert {p["torch_seeded"] for p in forked} == {execd["torch_seeded"]}
    assert {p["torch_threads"] for p in forked} == {execd["torch_threads"]} == {1}
    assert all(p["pools"] == execd["pools"] for p in forked), (forked, execd)


def test_a_preload_that_started_an_openmp_pool_is_refused(start: Any) -> None:
    with pytest.raises(ForkServerError, match=r"an OpenMP thread pool \(libgomp.*hang"):
        start(("gomp_user",), TEST_GOMP=_gnu_openmp(), TEST_START_POOL="1")


def test_torch_that_ran_a_parallel_operation_at_import_is_refused(start: Any) -> None:
    pytest.importorskip("torch", reason=NO_TORCH)
    with pytest.raises(ForkServerError, match=r"OpenMP thread pool \(libgomp.*"
                                              r"compute nothing at import"):
        start(("torch_user",))


def test_a_loaded_openmp_runtime_whose_pool_never_started_forks_parallel_trials(
        start: Any, slot: Path) -> None:
    gomp = _gnu_openmp()
    server = start(("gomp_user",), "parallel.py", TEST_GOMP=gomp)
    for name in ("a", "b"):
        code, stdout = _forked(server, slot, name, "parallel.py", TEST_GOMP=gomp)
        assert (code, stdout) == (0, "parallel region ran\n")
