"""The file ``disauto.optimize`` ships a function in: a module named in ``modules`` travels by
value, one that is not is needed where the function is loaded (and the error says how to ship
it); another Python, a file of something else and a function that cannot be pickled are each
one line."""

from __future__ import annotations

from collections.abc import Iterator
import importlib
from pathlib import Path
import pickle
import sys
import threading

import cloudpickle
import pytest

from disauto.common.shipped_function import FILE_NAME
from disauto.common.shipped_function import LoadError
from disauto.common.shipped_function import ShippingError
from disauto.common.shipped_function import dumps
from disauto.common.shipped_function import load


HELPER = "disauto_shipped_helper"


@pytest.fixture
def helper(tmp_path: Path) -> Iterator[object]:
    """A module of the user's, importable here (as in a notebook's folder) and forgotten after:
    the trial side of these tests cannot import it."""
    folder = tmp_path / "user"
    folder.mkdir()
    (folder / f"{HELPER}.py").write_text("SCALE = 3\n\ndef scaled(x):\n    return SCALE * x\n")
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    try:
        yield importlib.import_module(HELPER)
    finally:
        if str(folder) in sys.path:
            sys.path.remove(str(folder))
        sys.modules.pop(HELPER, None)


def forget(module: str) -> None:
    """The trial's side: the module is not importable there."""
    sys.modules.pop(module, None)
    sys.path[:] = [p for p in sys.path if not Path(p, f"{module}.py").exists()]


def test_a_module_named_in_modules_travels_by_value(helper: object, tmp_path: Path) -> None:
    before = cloudpickle.list_registry_pickle_by_value()
    shipped = tmp_path / FILE_NAME
    shipped.write_bytes(dumps(helper.scaled, ["accuracy", "latency"],  # type: ignore[attr-defined]
                              modules=[HELPER]))
    assert cloudpickle.list_registry_pickle_by_value() == before  # the registry as it was
    forget(HELPER)
    loaded = load(shipped)
    assert loaded.objectives == ("accuracy", "latency")
    assert loaded.function(2) == 6


def test_a_module_not_named_is_needed_where_it_loads_and_the_error_says_how_to_ship_it(
        helper: object, tmp_path: Path) -> None:
    shipped = tmp_path / FILE_NAME
    shipped.write_bytes(dumps(helper.scaled, ["accuracy"]))  # type: ignore[attr-defined]
    forget(HELPER)
    with pytest.raises(LoadError) as raised:
        load(shipped)
    assert str(raised.value) == (
        f"cannot rebuild the objective function: No module named '{HELPER}': it refers to that "
        f"module, which the trial lacks; optimize(..., modules=['{HELPER}']) ships it by value "
        "with the function (or ship its file with files=[...])")


def test_a_function_from_another_python_is_refused_before_it_is_loaded(tmp_path: Path) -> None:
    shipped = tmp_path / FILE_NAME
    data = pickle.loads(dumps(abs, ["accuracy"]))
    shipped.write_bytes(pickle.dumps({**data, "python": "3.9", "function": b"not loaded"}))
    with pytest.raises(LoadError) as raised:
        load(shipped)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert str(raised.value) == (
        f"the objective function was pickled by Python 3.9 and this trial runs Python {here}: "
        "a function shipped by value loads only in the same Python version (give the trials "
        "a Python 3.9)")


def test_a_file_of_something_else_is_one_line(tmp_path: Path) -> None:
    shipped = tmp_path / FILE_NAME
    shipped.write_text("print('hello')\n")
    with pytest.raises(LoadError, match=rf"^{shipped} is no function shipped by "
                                        r"disauto.optimize: UnpicklingError: "):
        load(shipped)


def test_a_function_holding_a_lock_cannot_travel_and_says_so() -> None:
    lock = threading.Lock()

    def objective(params: dict[str, float]) -> float:
        with lock:
            return params["x"]

    with pytest.raises(ShippingError) as raised:
        dumps(objective, ["accuracy"])
    message = str(raised.value)
    assert message.startswith("fn: cannot be pickled to ship it to the trials: TypeError: "
                              "cannot pickle '_thread.lock' object")
    assert "\n" not in message


@pytest.mark.parametrize(("modules", "message"), [
    ([3], "modules: expected modules or their names, not int"),
    (["no_such_module_of_anyone"], "modules: cannot import 'no_such_module_of_anyone': "
                                   "No module named 'no_such_module_of_anyone'"),
])
def test_a_bad_module_is_one_line(modules: list[object], message: str) -> None:
    with pytest.raises(ShippingError) as raised:
        dumps(abs, ["accuracy"], modules=modules)  # type: ignore[arg-type]
    assert str(raised.value) == message
