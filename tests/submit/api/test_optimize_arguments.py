"""``optimize(...)``'s arguments: a bad one is a SubmitError of one line naming it, in
optimize()'s own words (``n_trials``, ``space``, ``master``), before anything is started or
recorded; ``submit()`` given a function says to use ``optimize()``."""

from __future__ import annotations

from pathlib import Path
import threading
from typing import Any

import pytest

from disauto import SubmitError
from disauto import optimize
from disauto import submit


pytestmark = pytest.mark.usefixtures("files")

SPACE = {"parameters": [{"name": "x", "type": "bound", "value": [0.0, 1.0]}]}


def objective(params: dict[str, float]) -> float:
    return params["x"]


@pytest.mark.parametrize(("args", "options", "message"), [
    ((42, SPACE), {}, "fn: expected a function of the trial's parameters, not int"),
    ((lambda a, b: a, SPACE), {},
     "fn: must take one argument, the trial's parameters (a dict): missing a required "
     "argument: 'b'"),
    ((objective, SPACE), {"n_trials": 0},
     "n_trials: expected a whole number of trials, at least 1, not 0"),
    ((objective, SPACE), {"n_trials": "8"},
     "n_trials: expected a whole number of trials, at least 1, not '8'"),
    ((objective, SPACE), {"master": ""},
     "master: expected 'local' or a master's address, not ''"),
    ((objective, SPACE), {"app_runner_launch_cmd": "python train.py"},
     "app_runner_launch_cmd: not an option of optimize(): each trial runs the function"),
    ((objective, SPACE), {"tuning_parameters": "params.json"},
     "tuning_parameters: not an option of optimize(): the space is optimize()'s second "
     "argument"),
    ((objective, SPACE), {"trail_steps": 4},
     "trail_steps: not an option of optimize(): the budget is n_trials"),
    ((objective, SPACE), {"modules": ["no_such_module_of_anyone"]},
     "modules: cannot import 'no_such_module_of_anyone': No module named "
     "'no_such_module_of_anyone'"),
    ((objective, SPACE), {"paralelism": 2},
     "unrecognized arguments: --paralelism 2 (did you mean --parallelism?)"),
    ((objective, SPACE), {"direction": "maximise"},
     "--direction: invalid value 'maximise': expected maximize or minimize (did you mean "
     "maximize?)"),
    ((objective, {"parameters": [{"name": "x", "type": "bound", "value": [1, 0]}]}), {},
     "space: parameter 'x': \"bound\" needs \"value\": [low, high] with low < high, got "
     "[1, 0]"),
    ((objective, "missing.json"), {}, "space missing.json: no such file"),
])
def test_a_bad_argument_is_one_line_naming_it(files: Path, args: tuple[Any, ...],
                                              options: dict[str, Any], message: str) -> None:
    with pytest.raises(SubmitError) as raised:
        optimize(*args, **options)
    assert str(raised.value) == message
    assert not (files / "home").exists()  # nothing started, nothing recorded


def test_a_function_that_cannot_travel_is_one_line(files: Path) -> None:
    lock = threading.Lock()

    def holds_a_lock(params: dict[str, float]) -> float:  # by value: a function of a function
        with lock:
            return params["x"]

    with pytest.raises(SubmitError) as raised:
        optimize(holds_a_lock, SPACE)
    assert str(raised.value).startswith(
        "fn: cannot be pickled to ship it to the trials: TypeError: cannot pickle "
        "'_thread.lock' object (a function that holds, or whose globals hold, an open file, "
        "a lock, a connection or a client cannot travel: make such things inside the function)")
    assert not (files / "home").exists()


def test_submit_given_a_function_says_to_use_optimize() -> None:
    with pytest.raises(SubmitError) as raised:
        submit(app_name="f", files=["train.py"], app_runner_launch_cmd="python train.py",
               tuning_parameters="params.json", objective=lambda trial: 0.0)
    assert str(raised.value) == (
        "objective: a function is no value of a flag; disauto.optimize(fn, space, ...) runs a "
        "function as the trials' objective")
