"""Issue 31 on a GPU: forked trials against exec'd ones, with and without deterministic kernels.

For a lent GPU machine, in one device call (about 3 minutes on one GPU; PyTorch with CUDA and
NumPy needed, DisAuto's own dependencies not)::

    python -m bench.fork_gpu --runs 4 --device cuda

It drives the real ``executor/zygote.py`` over its socket protocol (the zygote uses only the
standard library), with ``torch`` preloaded, exactly as a warm slot does. Four cells of
``--runs`` trainings each of one assignment (default the H200 observation's trial 3: lr 0.145,
momentum 0.79) with the same seed, one at a time on the device: **exec** (a fresh ``python -m
bench.fork_train`` each) and **fork** (forked from the zygote), each with
``torch.use_deterministic_algorithms(True)`` and without. It prints every run's accuracy and
weights' digest and then checks:

* deterministic kernels: every run of both modes has the same digest (the fork changes
  nothing that is computed), and PyTorch warned of no operation without a deterministic
  kernel (``warn_only=True``: it names them instead of failing);
* default kernels: how many distinct digests and diverged runs (accuracy < 0.5) each mode has
  (nondeterministic kernels alone make runs differ, in both modes alike);
* each forked trial started with CUDA not initialised and a torch seed of its own;
* a zygote whose preloaded module initialised CUDA is refused ("CUDA was initialised ...").

Exit status 0 when every check holds, 1 otherwise. ``--device cpu`` runs the same on the CPU.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import json
import os
from pathlib import Path
import socket
import subprocess
import sys
import tempfile
from typing import Any


ROOT = Path(__file__).resolve().parents[1]
ZYGOTE = ROOT / "executor" / "zygote.py"
CUDA_AT_IMPORT = "import torch\ntorch.zeros(1, device='cuda')\n"


class Zygote:
    """A real ``zygote.py`` with ``modules`` preloaded, started as a warm slot starts it."""

    def __init__(self, modules: Sequence[str], work: Path, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair()
        with open(work / "zygote.log", "ab") as log:
            self.process = subprocess.Popen(  # noqa: S603 - this Python
                [sys.executable, str(ZYGOTE), str(theirs.fileno()), *modules], cwd=work,
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                pass_fds=(theirs.fileno(),), start_new_session=True)
        theirs.close()
        self.sock = ours
        self.reader = ours.makefile("rb")
        self.first = self.read()

    def read(self) -> dict[str, Any]:
        line = self.reader.readline()
        return json.loads(line) if line else {"error": "the zygote exited"}

    def run(self, number: int, args: Sequence[str], env: dict[str, str], work: Path) -> int:
        """Fork one trial of ``python -m bench.fork_train ARGS``; its exit status."""
        sandbox = work / f"fork-{number}"
        sandbox.mkdir()
        request = {"id": str(number), "target": "bench.fork_train", "is_module": True,
                   "args": list(args), "env": env, "cwd": str(sandbox),
                   "stdout": str(sandbox / "stdout"), "stderr": str(sandbox / "stderr")}
        self.sock.sendall((json.dumps(request) + "\n").encode())
        while "returncode" not in (message := self.read()):
            if "error" in message:
                raise RuntimeError(f"the zygote cannot fork: {message['error']}")
        return int(message["returncode"])

    def close(self) -> None:
        """Close its socket (the reader's descriptor too): it ends on the end of file."""
        self.reader.close()
        self.sock.close()
        self.process.wait(30)


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def run_cell(mode: str, deterministic: bool, args: argparse.Namespace, work: Path,
             env: dict[str, str]) -> list[dict[str, Any]]:
    """``--runs`` trainings, exec'd or forked; each its inherited state and outcome."""
    train = ["--lr", str(args.lr), "--momentum", str(args.momentum), "--seeds", "1",
             "--epochs", str(args.epochs), "--device", args.device, "--inherited",
             *([] if deterministic else ["--nondeterministic"])]
    cell = work / f"{mode}-{'det' if deterministic else 'default'}"
    cell.mkdir()
    runs = []
    zygote = Zygote(["torch"], cell, env) if mode == "fork" else None
    if zygote is not None and "ready" not in zygote.first:
        raise RuntimeError(f"the zygote did not start: {zygote.first}")
    try:
        for number in range(args.runs):
            if zygote is not None:
                code = zygote.run(number, train, env, cell)
                out = (cell / f"fork-{number}" / "stdout").read_text()
                err = (cell / f"fork-{number}" / "stderr").read_text()
            else:
                done = subprocess.run([sys.executable, "-m", "bench.fork_train", *train],
                                      cwd=cell, env=env, capture_output=True, text=True,
                                      timeout=600, check=False)
                code, out, err = done.returncode, done.stdout, done.stderr
            if code != 0:
                raise RuntimeError(f"{mode} run {number} exited {code}: {err[-1500:]}")
            inherited, outcome = _lines(out)
            runs.append({"inherited": inherited["inherited"], "outcome": outcome})
    finally:
        if zygote is not None:
            zygote.close()
    return runs


def cuda_at_import_refused(work: Path, env: dict[str, str]) -> str:
    """What a zygote whose preloaded module initialised CUDA answers."""
    (work / "cuda_at_import.py").write_text(CUDA_AT_IMPORT)
    zygote = Zygote(["cuda_at_import"], work, {**env, "PYTHONPATH": os.pathsep.join(
        [str(work), env["PYTHONPATH"]])})
    zygote.close()
    return str(zygote.first.get("error", zygote.first))


def checks(cells: dict[tuple[str, bool], list[dict[str, Any]]], refused: str,
           device: str) -> list[tuple[str, bool]]:
    """Each check and whether it holds."""
    det = cells[("exec", True)] + cells[("fork", True)]
    forked = cells[("fork", True)] + cells[("fork", False)]
    out = [("deterministic kernels: one digest over both modes",
            len({r["outcome"]["digest"] for r in det}) == 1),
           ("deterministic runs: PyTorch named no operation without a deterministic kernel",
            not any(r["outcome"]["nondeterministic"] for r in det)),
           ("forked trials start with CUDA not initialised",
            not any(r["inherited"]["cuda_initialized"] for r in forked)),
           ("forked trials have torch seeds of their own",
            len({r["inherited"]["torch_initial_seed"] for r in forked}) == len(forked))]
    if device.startswith("cuda"):
        out.append(("a zygote that initialised CUDA at import is refused",
                    "CUDA was initialised" in refused))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.145)
    parser.add_argument("--momentum", type=float, default=0.79)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory(prefix="fork-gpu-") as folder:
        work = Path(folder)
        cells = {(mode, det): run_cell(mode, det, args, work, env)
                 for det in (True, False) for mode in ("exec", "fork")}
        refused = cuda_at_import_refused(work, env) if args.device.startswith("cuda") else ""
    for (mode, det), runs in cells.items():
        shown = " ".join(f"{r['outcome']['accuracy']:.3f}/{r['outcome']['digest'][:8]}"
                         for r in runs)
        diverged = sum(r["outcome"]["accuracy"] < 0.5 for r in runs)
        distinct = len({r["outcome"]["digest"] for r in runs})
        print(f"{mode:4} {'deterministic' if det else 'default kernels':15} {shown}  "
              f"({distinct} distinct, {diverged} diverged)")
    alerts = sorted({op for runs in cells.values() for r in runs
                     for op in r["outcome"]["nondeterministic"]})
    if alerts:
        print(f"no deterministic kernel: {', '.join(alerts)}")
    if refused:
        print(f"CUDA at import: {refused}")
    results = checks(cells, refused, args.device)
    for what, held in results:
        print(f"{'ok  ' if held else 'FAIL'} {what}")
    return 0 if all(held for _, held in results) else 1


if __name__ == "__main__":
    sys.exit(main())
