"""A Python function shipped to the trials by value (``disauto.optimize``): what the submitting
side writes and the trial side (``python -m apprunner_sdk.function_runner``) reads back.

The file (:data:`FILE_NAME`, shipped with the job as ``--files`` are) is a pickle of a plain
dict: the format's version, the Python that made it (``major.minor``), the job's objectives in
order, and the function itself, pickled by cloudpickle (bytes of their own). cloudpickle pickles
a function defined in ``__main__`` (a script, a notebook cell) by value, its code and the
globals it uses with it; a function of an importable module is pickled by reference, unless
that module is named in ``modules`` (:func:`dumps`), then by value too. The function's bytes
are loaded only once the Python is known to be the same: a function pickled by value carries
its code object, which loads only in the Python version that made it.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
import importlib
from pathlib import Path
import pickle
import sys
from types import ModuleType
from typing import Any


__all__ = ["FILE_NAME", "LoadError", "ShippedFunction", "ShippingError", "dumps", "load"]

FILE_NAME = "disauto_function.pkl"
"""The file's name in the job's folder and in each trial's sandbox."""
FORMAT = 1
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


class ShippingError(ValueError):
    """The function cannot be shipped (it cannot be pickled, or a module in ``modules`` is
    not one); the message is one line, naming the argument at fault."""


class LoadError(RuntimeError):
    """The trial cannot rebuild the function (another Python, a module it needs missing); the
    message is one line saying what to do."""


@dataclass(frozen=True)
class ShippedFunction:
    """The function and the job's objectives, in order, as the trial reads them."""

    function: Callable[..., Any]
    objectives: tuple[str, ...]


def dumps(function: Callable[..., Any], objectives: Sequence[str],
          modules: Sequence[ModuleType | str] = ()) -> bytes:
    """The file's content for ``function`` (``modules`` pickled by value with it).

    Raises:
        ShippingError: a module cannot be named, or the function cannot be pickled.
    """
    import cloudpickle

    named = [_module(module) for module in modules]
    added = [module for module in named
             if module.__name__ not in cloudpickle.list_registry_pickle_by_value()]
    for module in added:
        cloudpickle.register_pickle_by_value(module)
    try:
        shipped = cloudpickle.dumps(function)
    except Exception as error:  # noqa: BLE001 - whatever it holds that cannot travel
        raise ShippingError(
            f"fn: cannot be pickled to ship it to the trials: {_line(error)} (a function that "
            "holds, or whose globals hold, an open file, a lock, a connection or a client "
            "cannot travel: make such things inside the function)") from None
    finally:
        for module in added:
            cloudpickle.unregister_pickle_by_value(module)
    return pickle.dumps({"format": FORMAT, "python": PYTHON,
                         "objectives": [str(name) for name in objectives],
                         "function": shipped})


def _module(module: ModuleType | str) -> ModuleType:
    if isinstance(module, ModuleType):
        return module
    if not isinstance(module, str):
        raise ShippingError(f"modules: expected modules or their names, not "
                            f"{type(module).__name__}")
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ShippingError(f"modules: cannot import {module!r}: {error}") from None


def load(path: Path) -> ShippedFunction:
    """The function shipped in ``path``.

    Raises:
        LoadError: the file is not one, it was made by another Python, or the function
            cannot be rebuilt here.
    """
    try:
        data = pickle.loads(path.read_bytes())  # noqa: S301 - the job's own file, its owner's
        made_by, objectives, shipped = data["python"], data["objectives"], data["function"]
    except (OSError, pickle.UnpicklingError, EOFError, KeyError, TypeError) as error:
        raise LoadError(f"{path} is no function shipped by disauto.optimize: "
                        f"{_line(error)}") from None
    if made_by != PYTHON:
        raise LoadError(f"the objective function was pickled by Python {made_by} and this "
                        f"trial runs Python {PYTHON}: a function shipped by value loads only in "
                        f"the same Python version (give the trials a Python {made_by})")
    try:
        function = pickle.loads(shipped)  # noqa: S301 - as above
    except ModuleNotFoundError as error:
        raise LoadError(f"cannot rebuild the objective function: {error}: it refers to that "
                        f"module, which the trial lacks; optimize(..., modules=[{error.name!r}]) "
                        "ships it by value with the function (or ship its file with files=[...])"
                        ) from None
    except Exception as error:  # noqa: BLE001 - whatever rebuilding it raised, in one line
        raise LoadError(f"cannot rebuild the objective function: {_line(error)}") from None
    return ShippedFunction(function, tuple(objectives))


def _line(error: BaseException) -> str:
    """An error's type and first line."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
