"""``python -m apprunner_sdk.function_runner FILE``: the trial of a shipped function, outside
DisAuto (the SDK prints its reports as JSON lines): what the function returns becomes the final
report, a function that raises or returns something else fails with one line on stderr (its
traceback on stdout), and a function defined in a script's ``__main__`` travels by value."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
import json
import os
from pathlib import Path
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import apprunner_sdk
from apprunner_sdk import report
from apprunner_sdk.function_runner import main
from disauto.common import task_env
from disauto.common.shipped_function import FILE_NAME
from disauto.common.shipped_function import dumps


@pytest.fixture(autouse=True)
def outside_disauto(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test is a trial run by hand: its parameters alone in the environment."""
    for name in list(os.environ):
        if name.startswith("DISAUTO_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv(task_env.PARAMS, json.dumps({"x": 0.25, "n": 3}))
    apprunner_sdk._reset_for_tests()
    yield
    apprunner_sdk._reset_for_tests()


def run(tmp_path: Path, function: Callable[..., Any],
        objectives: tuple[str, ...] = ("accuracy",)) -> int:
    shipped = tmp_path / FILE_NAME
    shipped.write_bytes(dumps(function, objectives))
    return main([str(shipped)])


def reports(out: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("[disauto] "):]) for line in out.splitlines()
            if line.startswith("[disauto] {")]


def finals(out: str) -> list[dict[str, float]]:
    return [r["metrics"] for r in reports(out) if r["final"]]


@pytest.mark.parametrize(("function", "objectives", "final"), [
    (lambda p: 1 - p["x"], ("accuracy",), {"accuracy": 0.75}),
    (lambda p: np.float32(p["x"]), ("loss",), {"loss": 0.25}),
    (lambda p: np.array(p["n"]), ("loss",), {"loss": 3}),
    (lambda p: {"accuracy": p["x"], "epochs": p["n"]}, ("accuracy",),
     {"accuracy": 0.25, "epochs": 3}),
    (lambda p: (p["x"], p["n"]), ("accuracy", "latency"), {"accuracy": 0.25, "latency": 3}),
    (lambda p: [p["x"], p["n"]], ("accuracy", "latency"), {"accuracy": 0.25, "latency": 3}),
])
def test_what_the_function_returns_is_the_final_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], function: Callable[..., Any],
        objectives: tuple[str, ...], final: dict[str, float]) -> None:
    assert run(tmp_path, function, objectives) == 0
    assert finals(capsys.readouterr().out) == [final]


def test_a_function_that_reports_itself_is_left_its_reports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def stepped(params: dict[str, float]) -> None:
        for step in range(2):
            report(accuracy=params["x"] * step, step=step)
        report(accuracy=params["x"], final=True)

    assert run(tmp_path, stepped) == 0
    made = reports(capsys.readouterr().out)
    assert [(r["step"], r["final"], r["metrics"]) for r in made] == [
        (0, False, {"accuracy": 0.0}), (1, False, {"accuracy": 0.25}),
        (None, True, {"accuracy": 0.25})]


def test_a_function_that_raises_fails_with_its_last_line_on_stderr(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def broken(params: dict[str, float]) -> float:
        raise ValueError(f"x={params['x']} is not enough")

    assert run(tmp_path, broken) == 1
    out, err = capsys.readouterr()
    assert err == "ValueError: x=0.25 is not enough\n"
    assert "Traceback (most recent call last):" in out and "in broken" in out
    assert finals(out) == []


@pytest.mark.parametrize(("function", "objectives", "message"), [
    (lambda p: None, ("accuracy",),
     "the objective function returned None and reported no final result: return the "
     "objective's value (a number, or a dict or a tuple for several objectives) or call "
     "report(..., final=True)"),
    (lambda p: "good", ("accuracy",),
     "the objective function returned str 'good': expected a number (the objective "
     "'accuracy'), a dict of metrics or a tuple of the objectives' values"),
    (lambda p: True, ("accuracy",),
     "the objective function returned bool True: expected a number (the objective "
     "'accuracy'), a dict of metrics or a tuple of the objectives' values"),
    (lambda p: 0.5, ("accuracy", "latency"),
     "the objective function returned one number, but the job has 2 objectives (accuracy, "
     "latency): return a dict or a tuple"),
    (lambda p: (0.5,), ("accuracy", "latency"),
     "the objective function returned 1 values for the job's 2 objectives (accuracy, "
     "latency)"),
    (lambda p: {"accuracy": 0.5}, ("accuracy", "latency"),
     "the objective function returned a dict without 'latency': it must hold every objective "
     "of the job (accuracy, latency)"),
])
def test_a_result_that_is_no_result_fails_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], function: Callable[..., Any],
        objectives: tuple[str, ...], message: str) -> None:
    assert run(tmp_path, function, objectives) == 1
    out, err = capsys.readouterr()
    assert err == message + "\n"
    assert finals(out) == []


def test_a_file_that_is_not_one_fails_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "missing.pkl")]) == 1
    assert capsys.readouterr().err.startswith(
        f"{tmp_path / 'missing.pkl'} is no function shipped by disauto.optimize: "
        "FileNotFoundError: ")
    assert main([]) == 2
    assert capsys.readouterr().err == "usage: python -m apprunner_sdk.function_runner FILE\n"


SCRIPT = '''
import sys
from disauto.common.shipped_function import dumps
OFFSET = 0.5

def distance(x):
    return abs(x - OFFSET)

def objective(params):
    return {"loss": distance(params["x"]), "seen": len(params)}

open(sys.argv[1], "wb").write(dumps(objective, ["loss"]))
'''


@pytest.mark.integration  # starts processes
def test_a_function_of_a_scripts_main_runs_in_a_trial_by_value(tmp_path: Path) -> None:
    """The function and the helper and constant of ``__main__`` it uses travel with it: the
    trial's process has no such script."""
    script = tmp_path / "notebook_like.py"
    script.write_text(SCRIPT)
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    subprocess.run([sys.executable, str(script), str(sandbox / FILE_NAME)], check=True,
                   timeout=60)
    environ = {key: value for key, value in os.environ.items()
               if not key.startswith("DISAUTO_")}
    done = subprocess.run(
        [sys.executable, "-m", "apprunner_sdk.function_runner", FILE_NAME], cwd=sandbox,
        env={**environ, task_env.PARAMS: '{"x": 0.125}'}, capture_output=True, text=True,
        timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout + done.stderr
    assert finals(done.stdout) == [{"loss": 0.375, "seen": 1}]
