"""The Python API's ``submit(...)`` keywords: da-submit's flags with underscores, checked by
da-submit's own parser and validators, so a bad one raises SubmitError with the very line
da-submit prints, before anything is started or recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from disauto import submit
from disauto.submit.api import SubmitError
from disauto.submit.api.options import command_line
from disauto.submit.cli import main
from disauto.submit.errors import ParameterFileError
from disauto.submit.params import load_parameter_file
from disauto.submit.parser import build_parser


pytestmark = pytest.mark.usefixtures("files")

BASE: dict[str, Any] = {
    "app_name": "mnist", "files": ["train.py"], "app_runner_launch_cmd": "python train.py",
    "app_runner_memory": "256M", "trail_steps": 4, "tuning_type": "random-search",
    "tuning_parameters": "params.json"}


def argv(**options: Any) -> list[str]:
    return list(command_line(build_parser(), options).argv)


def test_keywords_are_the_flags_with_underscores() -> None:
    assert argv(**BASE, parallelism=4, quiet=True, tls=False, seed=None) == [
        "--app-name", "mnist", "--files", "train.py", "--app-runner-launch-cmd",
        "python train.py", "--app-runner-memory", "256M", "--trail-steps", "4",
        "--tuning-type", "random-search", "--tuning-parameters", "params.json",
        "--parallelism", "4", "--quiet"]


def test_lists_repeat_a_repeatable_flag_and_join_a_comma_separated_one(files: Path) -> None:
    assert argv(files=["a.py", files / "b.py"], tuning_setting={"k": 1, "m": "x"},
                objective=["accuracy", "latency"], direction=("maximize", "minimize"),
                target=[0.9, 5]) == [
        "--files", "a.py", "--files", str(files / "b.py"), "--tuning-setting", "k=1",
        "--tuning-setting", "m=x", "--objective", "accuracy,latency",
        "--direction", "maximize,minimize", "--target", "0.9,5"]
    assert argv(input="/data#data") == ["--input", "/data#data"]


def test_parameters_as_a_dict_stand_for_their_file() -> None:
    space = {"parameters": [{"name": "x", "type": "bound", "value": [0, 1]}]}
    line = command_line(build_parser(), {**BASE, "tuning_parameters": space})
    assert line.parameters == space
    assert line.with_parameters_file(Path("/j/parameters.json"))[
        line.argv.index("--tuning-parameters") + 1] == "/j/parameters.json"


def da_submit_says(capsys: pytest.CaptureFixture[str], **options: Any) -> str:
    """The first line da-submit prints for these options as flags."""
    assert main(argv(**options)) == 2
    return capsys.readouterr().err.splitlines()[0]


@pytest.mark.parametrize("bad", [
    {"paralelism": 4},
    {"parallelism": 0},
    {"trial_retries": -1},
    {"direction": "maximise"},
    {"objective": ["accuracy", "latency"]},
    {"tuning_type": "bayesain"},
    {"files": ["missing.py"]},
    {"tuning_parameters": "missing.json"},
    {"app_runner_memory": "lots"},
])
def test_a_bad_option_raises_the_line_da_submit_prints(
        files: Path, capsys: pytest.CaptureFixture[str], bad: dict[str, Any]) -> None:
    options = {**BASE, **bad}
    with pytest.raises(SubmitError) as raised:
        submit(**options)
    assert f"da-submit: error: {raised.value}" == da_submit_says(capsys, **options)
    assert "\n" not in str(raised.value)
    assert not (files / "home").exists()  # nothing started, nothing recorded


def test_a_missing_required_option_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    options = {k: v for k, v in BASE.items() if k != "app_name"}
    with pytest.raises(SubmitError, match="the following arguments are required: --app-name"):
        submit(**options)


@pytest.mark.parametrize(("options", "message"), [
    ({"detach": True}, "detach: not an option of submit(): submit() always runs the job in the "
                       "background, as --detach does"),
    ({"job_id": "mine"}, "job_id: not an option of submit(): the job's id is made when it is "
                         "submitted"),
    ({"tls": "yes"}, "--tls: tls='yes': expected True or False"),
    ({"parallelism": True}, "--parallelism: expected a value, not True"),
    ({"seed": {"a": 1}}, "--seed: expected a string, a number or a list, not dict"),
])
def test_what_only_the_api_can_get_wrong_is_one_line(options: dict[str, Any],
                                                     message: str) -> None:
    with pytest.raises(SubmitError) as raised:
        submit(**{**BASE, **options})
    assert str(raised.value) == message


def test_a_bad_parameter_dict_is_named_as_the_keyword(files: Path) -> None:
    """The dict's file is the API's own: its error names the keyword, as da-submit's names the
    file, with the same words."""
    space = {"parameters": [{"name": "x", "type": "bound", "value": [1, 0]}]}
    with pytest.raises(SubmitError) as raised:
        submit(**{**BASE, "tuning_parameters": space})
    (files / "bad.json").write_text(json.dumps(space))
    with pytest.raises(ParameterFileError) as from_file:
        load_parameter_file(files / "bad.json")
    assert str(raised.value) == str(ParameterFileError(
        "tuning_parameters", from_file.value.detail, from_file.value.parameter))
    assert str(raised.value).startswith("tuning_parameters: parameter 'x': ")
    assert not (files / "home").exists()
