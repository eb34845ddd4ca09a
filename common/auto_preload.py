"""``--slot-preload auto``: the modules a trial script imports, read without running it.

A warm slot's pre-imported interpreter (``executor/zygote.py``) forks every trial from a Python
that has imported modules once. With ``auto`` those modules are the ones the script imports at
its top level, as :func:`top_level_imports` reads them with :mod:`ast` (the script is never
run), less what :func:`choose` leaves out:

* **kept**: ``import a.b`` and ``from a.b import c`` (as ``a.b``: ``c`` may be a name, not a
  module) in the module's body, in a top-level ``try`` body or its ``else``/``finally``, and in
  a top-level ``with`` block: what runs whenever the script starts;
* **dropped, not read**: imports inside functions and classes (imported late on purpose),
  under any ``if`` (``if __name__ == "__main__"``, ``if TYPE_CHECKING``, a platform or flag
  test: a condition that cannot be judged without running the script), in loops, and in
  ``except`` handlers (fallbacks for an import that failed);
* **dropped, read**: relative imports and ``__future__``; the standard library (cheap to import,
  and the SDK brings most of what trials use); ``apprunner_sdk`` (always preloaded); the job's
  own modules (:func:`choose`'s ``own``: the ``--files`` and ``--input`` names, the modules
  beside the script), which more often than a library do work at import (read data, seed or
  make a generator) that every trial of a slot would then share; and :data:`DENIED`.

A module kept here is still only *optional*: the interpreter imports it if it can, and a module
that cannot be imported, or that leaves the interpreter unsafe to fork (a thread started, CUDA
initialised, a GNU OpenMP pool started, a denied module imported on its behalf), is skipped with
one line in the slot's log; the trial then imports it itself, as ``python SCRIPT`` would.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
import fnmatch
import sys


AUTO = "auto"
"""The ``--slot-preload`` item that asks for the script's own imports."""

DENIED: dict[str, str] = {
    "tensorflow*": "TensorFlow's runtime is multithreaded and not fork-safe: a session in a "
                   "forked child hangs (tensorflow/tensorflow#5448, #8220, #51832)",
    "keras": "Keras 3 imports its backend (TensorFlow by default) at import",
    "tf_keras": "it imports TensorFlow",
    "jax": "JAX is multithreaded and warns that os.fork() will likely deadlock "
           "(jax-ml/jax#18989)",
    "jaxlib": "JAX's runtime (XLA), multithreaded",
    "flax": "it imports JAX",
    "optax": "it imports JAX",
    "haiku": "it imports JAX",
    "equinox": "it imports JAX",
    "chex": "it imports JAX",
    "orbax": "it imports JAX",
    "pycuda": "pycuda.autoinit creates a CUDA context at import, and CUDA cannot be used in a "
              "child forked after the driver started (inducer/pycuda#137)",
    "cupy": "CUDA arrays: once CUDA started in the interpreter, no forked trial can use it",
    "cupyx": "CUDA arrays: once CUDA started in the interpreter, no forked trial can use it",
    "mpi4py": "'from mpi4py import MPI' initialises MPI at import, and MPI does not survive "
              "a fork after MPI_Init (Open MPI warns of memory corruption)",
    "petsc4py": "'from petsc4py import PETSc' initialises MPI at import",
    "mxnet": "it starts its engine's worker threads at import",
}
"""Modules (patterns of the top-level name) ``auto`` never preloads, each with why: they start
threads or a GPU/CUDA or MPI runtime at import, which a forked trial would inherit broken. The
interpreter's own checks catch the same kinds of state for modules not listed here; this list
names the ones whose state those checks cannot see (threads started in C++ libraries) or that
would be imported only to be refused. PyTorch is not here: ``import torch`` starts neither
threads nor CUDA, and the interpreter refuses it when a module initialised CUDA or started an
OpenMP pool (docs/warm-slots.md)."""


class ScriptReadError(ValueError):
    """The script cannot be read as Python; the message says why, in one line."""


def denied(name: str) -> str | None:
    """Why ``auto`` never preloads module ``name`` (a dotted name), or None."""
    top = name.split(".", 1)[0]
    for pattern, why in DENIED.items():
        if fnmatch.fnmatchcase(top, pattern):
            return why
    return None


def top_level_imports(source: str | bytes, filename: str = "<script>") -> list[str]:
    """The absolute module names ``source`` imports whenever it runs (the module docstring
    says which statements count), in order, once each.

    Raises:
        ScriptReadError: it is not Python (a syntax error, a null byte).
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as err:
        where = f" (line {err.lineno})" if err.lineno else ""
        raise ScriptReadError(f"{filename} is not Python: {err.msg}{where}") from None
    except ValueError as err:
        raise ScriptReadError(f"{filename} is not Python: {err}") from None
    found: list[str] = []
    for statement in _run_always(tree.body):
        if isinstance(statement, ast.Import):
            names = [alias.name for alias in statement.names]
        elif isinstance(statement, ast.ImportFrom) and not statement.level \
                and statement.module and statement.module != "__future__":
            names = [statement.module]
        else:
            continue
        found += [name for name in names if name not in found]
    return found


def _run_always(body: Sequence[ast.stmt]) -> Iterable[ast.stmt]:
    """The statements of ``body`` that run whenever it does, nested blocks flattened."""
    for statement in body:
        if isinstance(statement, ast.Try | ast.TryStar):
            yield from _run_always([*statement.body, *statement.orelse,
                                    *statement.finalbody])
        elif isinstance(statement, ast.With):
            yield from _run_always(statement.body)
        else:
            yield statement


@dataclass(frozen=True)
class Choice:
    """What ``auto`` preloads of a script's imports, and what it leaves out."""

    modules: tuple[str, ...]
    """To preload, in the script's order."""
    denied: tuple[tuple[str, str], ...] = ()
    """``(module, why)`` of each left out by :data:`DENIED`."""
    own: tuple[str, ...] = ()
    """The job's own modules left out."""


SDK = "apprunner_sdk"


def choose(imports: Iterable[str], own: Iterable[str] = ()) -> Choice:
    """The modules of ``imports`` (:func:`top_level_imports`) to preload; ``own`` are the
    top-level names of the job's own modules (its files, inputs and the script's neighbours)."""
    mine = frozenset(own)
    kept: list[str] = []
    left: list[tuple[str, str]] = []
    theirs: list[str] = []
    for name in imports:
        top = name.split(".", 1)[0]
        if top in sys.stdlib_module_names or top == SDK:
            continue
        if top in mine:
            theirs.append(name)
            continue
        why = denied(name)
        if why is not None:
            left.append((name, why))
        elif name not in kept:
            kept.append(name)
    return Choice(tuple(kept), tuple(left), tuple(theirs))
