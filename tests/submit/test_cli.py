"""da-submit's flags: every bad input is one line naming what is wrong, exit 2, nothing started."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from disauto.protos import common_pb2
from disauto.submit.cli import main
from disauto.submit.exit_status import ExitStatus
from disauto.submit.parser import build_parser
from disauto.submit.validate import validate


def argv(*extra: str) -> list[str]:
    base = {
        "--app-name": "mnist", "--files": "train.py", "--app-runner-launch-cmd": "python train.py",
        "--app-runner-cpus": "4", "--app-runner-memory": "5G", "--app-core-cpus": "1",
        "--app-core-memory": "1G", "--trail-steps": "200", "--tuning-type": "random-search",
        "--tuning-parameters": "params.json",
    }
    overrides = dict(zip(extra[::2], extra[1::2], strict=True))
    merged = {**base, **overrides}
    return [item for key, value in merged.items() if value is not None
            for item in (key, value)]


def test_the_issue_command_validates_into_a_job(files: Path) -> None:
    submission = validate(build_parser().parse_args(argv("--seed", "5", "--target", "0.95",
                                                         "--max-duration", "1h30m")))
    config = submission.config
    assert config.app_name == "mnist"
    assert config.runner.cpus == 4 and config.runner.mem_mb == 5120
    assert config.appcore.cpus == 1 and config.appcore.mem_mb == 1024
    assert config.search.max_trials == 200
    assert config.search.seed == 5 and config.search.target == 0.95
    assert config.max_duration == 5400.0
    assert config.search.direction == common_pb2.MAXIMIZE
    assert [p.name for p in config.search.space.parameters] == ["lr", "bs"]
    assert config.files == (str(files / "train.py"),)
    assert submission.master == "local"


def test_slot_mode_is_in_the_job_config(files: Path) -> None:
    # The default's choice: tests/submit/test_slot_choice.py.
    task = validate(build_parser().parse_args(argv("--slot-mode", "task"))).config
    assert (task.slot_mode, task.slot_preload_auto) == ("task", False)
    config = validate(build_parser().parse_args(argv("--slot-mode", "warm", "--slot-idle",
                                                     "30s"))).config
    assert (config.slot_mode, config.slot_idle) == ("warm", 30.0)
    assert config.executor_command.endswith("-m disauto.executor")
    assert type(config).from_json(config.to_json()) == config  # resume keeps it


def test_slot_preload_is_in_the_job_config(files: Path) -> None:
    config = validate(build_parser().parse_args(argv(
        "--slot-mode", "warm", "--slot-preload", "numpy, sklearn.ensemble"))).config
    assert config.slot_preload == ("numpy", "sklearn.ensemble")
    assert type(config).from_json(config.to_json()) == config


def test_trial_steps_spelling_is_accepted(files: Path) -> None:
    args = argv("--trail-steps", None, "--trial-steps", "7")  # type: ignore[arg-type]
    assert validate(build_parser().parse_args(args)).config.search.max_trials == 7


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--app-runner-memory", "5X"), "--app-runner-memory"),
        (("--app-core-memory", "-1G"), "--app-core-memory"),
        (("--app-runner-cpus", "zero"), "--app-runner-cpus: invalid value 'zero'"),
        (("--app-runner-gpus", "1.5"), "--app-runner-gpus"),
        (("--trail-steps", "0"), "--trail-steps"),
        (("--parallelism", "two"), "--parallelism"),
        (("--parallelism", "0"), "--parallelism: invalid value '0': expected an integer > 0"),
        (("--parallelism", "-1"), "--parallelism: invalid value '-1': expected an integer > 0"),
        (("--tuning-type", "annealing"),
         "unknown algorithm 'annealing'; valid: bayesian, grid-search"),
        (("--files", "missing.py"), "--files: missing.py: no such file"),
        (("--tuning-parameters", "nope.json"), "nope.json"),
        (("--input", "/tmp/data"), "--input: invalid value '/tmp/data': expected SRC#NAME"),
        (("--input", "/definitely/not/here#data"), "no such file or folder"),
        (("--target", "high"), "--target"),
        (("--seed", "1.5"), "--seed"),
        (("--seed", str(2**70)), "--seed: invalid value '1180591620717411303424': expected an "
                                 "integer from 0 to 4294967295"),
        (("--seed", "-3"), "--seed: invalid value '-3'"),
        (("--target", "nan"), "--target: invalid value 'nan': expected a finite number"),
        (("--target", "inf"), "--target: invalid value 'inf'"),
        (("--max-duration", "soon"), "--max-duration: invalid duration 'soon': expected"),
        (("--max-duration", "0s"), "--max-duration: invalid duration '0s': must be greater"),
        (("--tuning-setting", "novalue"), "KEY=VALUE"),
        (("--tuning-setting", "colour=red"), "unknown setting 'colour'"),
        (("--offer-policy", "lottery"), "unknown policy 'lottery'"),
        (("--slot-mode", "hot"), "--slot-mode: expected one of task, warm, not 'hot'"),
        (("--slot-mode", "warm", "--app-runner-gpus", "1"),
         "--app-runner-gpus 1: this machine has 0"),
        (("--slot-mode", "warm", "--slot-idle", "never"), "--slot-idle: invalid duration"),
        (("--slot-mode", "task", "--slot-preload", "numpy"),
         "--slot-preload needs --slot-mode warm"),
        (("--slot-mode", "task", "--slot-preload", "auto"), "--slot-preload needs --slot-mode"),
        (("--slot-preload", "auto,num-py"), "--slot-preload: 'num-py' is not a module name"),
        (("--slot-preload", "auto", "--app-runner-launch-cmd", "sh train.sh"),
         "--slot-preload: 'sh train.sh' does not start with a Python interpreter"),
        (("--telemetry-interval", "100ms"),
         "--telemetry-interval: '100ms' is too often: at least 0.2s, or 0"),
        (("--slot-mode", "warm", "--slot-preload", "numpy,"),
         "--slot-preload: '' is not a module name; expected dotted names"),
        (("--slot-mode", "warm", "--slot-preload", "num-py"), "'num-py' is not a module name"),
        (("--slot-mode", "warm", "--slot-preload", "numpy", "--app-runner-launch-cmd",
          "cd x && python train.py"), "--slot-preload: 'cd x && python train.py' uses shell"),
        (("--direction", "up"), "--direction"),
        (("--app-name", None), "--app-name"),
    ],
)
def test_bad_flags_are_one_line_errors(files: Path, capsys: pytest.CaptureFixture[str],
                                       extra: tuple[str, str], message: str) -> None:
    code = main(argv(*extra))
    captured = capsys.readouterr()
    assert code == ExitStatus.USAGE
    first = captured.err.splitlines()[0]
    assert first.startswith("da-submit: error: ")
    assert message in first, first
    assert "Traceback" not in captured.err
    assert not (files / "home").exists(), "nothing may be started or recorded"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"parameters": [}', "params.json"),
        ('{"parameters": []}', "params.json"),
        ('{"parameters": [{"name": "lr", "type": "bound", "value": [0.3, 0.1]}]}',
         "parameter 'lr'"),
        ('{"parameters": [{"name": "bs", "type": "number", "value": []}]}', "parameter 'bs'"),
    ],
)
def test_bad_parameter_files_name_file_and_parameter(files: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     content: str, message: str) -> None:
    (files / "params.json").write_text(content)
    assert main(argv()) == ExitStatus.USAGE
    err = capsys.readouterr().err
    assert err.startswith("da-submit: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_grid_search_rejects_settings_it_does_not_know(files: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code = main(argv("--tuning-type", "grid-search", "--tuning-setting",
                     "grid_points_per_range=1"))
    assert code == ExitStatus.USAGE
    assert "grid_points_per_range" in capsys.readouterr().err


def test_local_gpu_jobs_need_gpus_on_this_machine(files: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from disauto.submit.local import detect_gpus

    wanted = detect_gpus() + 1
    assert main(argv("--app-runner-gpus", str(wanted))) == ExitStatus.USAGE
    err = capsys.readouterr().err
    assert f"--app-runner-gpus {wanted}: this machine has {wanted - 1} GPU(s)" in err


def test_input_names_must_not_clash(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "d1").mkdir()
    (files / "d2").mkdir()
    code = main([*argv(), "--input", "d1#data", "--input", "d2#data"])
    assert code == ExitStatus.USAGE
    assert "NAMEs must be unique" in capsys.readouterr().err
    assert main([*argv(), "--input", "d1#train.py"]) == ExitStatus.USAGE


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--bayes-backend", "hyperopt"), "--bayes-backend: unknown backend 'hyperopt'; valid: "
                                          "tpe, gp, qmc"),
        (("--bayes-mode", "batch"), "--bayes-mode: unknown mode 'batch'; valid: async, sync"),
        (("--warm-start", "missing.json"), "--warm-start: missing.json: no such file"),
        (("--warm-start", "params.json"), "--warm-start: params.json: expected the results.json"),
        (("--early-stopping", "bohb"), "--early-stopping: unknown early-stopping rule "
                                       "'bohb'; valid rules: none, median, asha, hyperband"),
        (("--early-stopping", "asha", "--early-stopping-setting", "reduction_factor=1"),
         "--early-stopping-setting: setting 'reduction_factor' for early-stopping rule 'asha' "
         "must be an integer >= 2, got '1'"),
        (("--early-stopping-setting", "min_resource=2"),
         "unknown setting 'min_resource' for early-stopping rule 'none'"),
        (("--tuning-type", "random-search", "--bayes-mode", "sync"),
         "--bayes-mode: needs --tuning-type bayesian (got --tuning-type random-search)"),
    ],
)
def test_bayesian_and_early_stopping_flags_are_checked_before_anything_starts(
        files: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...],
        message: str) -> None:
    code = main(argv("--tuning-type", "bayesian", *extra))
    first = capsys.readouterr().err.splitlines()[0]
    assert code == ExitStatus.USAGE
    assert message in first, first
    assert not (files / "home").exists(), "nothing may be started or recorded"


def test_bayesian_flags_become_settings_and_the_job_spec(files: Path) -> None:
    (files / "earlier.json").write_text(json.dumps({"objective": "accuracy", "trials": [
        {"state": "COMPLETED", "objective": 0.8, "assignment": {"lr": 0.01, "bs": 64}},
        {"state": "PRUNED", "objective": 0.2, "assignment": {"lr": 0.02, "bs": 32}},
    ]}))
    args = argv("--tuning-type", "bayesian", "--bayes-backend", "gp", "--bayes-mode", "sync",
                "--warm-start", "earlier.json", "--early-stopping", "asha",
                "--early-stopping-setting", "min_resource=2")
    submission = validate(build_parser().parse_args(args))
    search = submission.config.search
    assert submission.notes == (
        "--warm-start earlier.json: 1 completed trials are told to the model",)
    assert search.settings["backend"] == "gp" and search.settings["mode"] == "sync"
    assert json.loads(search.settings["warm_start"]) == {
        "known": [{"assignment": {"lr": 0.01, "bs": 64}, "value": 0.8}], "points": []}
    assert search.early_stopping == "asha"
    assert dict(search.early_stopping_settings) == {"min_resource": "2"}


@pytest.mark.parametrize(("content", "note"), [
    ({"objective": "accuracy", "trials": [{"state": "FAILED", "assignment": {"lr": 0.1}}]},
     "--warm-start earlier.json: no completed trial with a 'accuracy' value, so the search "
     "starts from nothing"),
    ([{"lr": 0.01, "bs": 64}, {"lr": 0.02, "bs": 32}],
     "--warm-start earlier.json: 2 points are evaluated first"),
])
def test_warm_start_says_what_it_used(files: Path, capsys: pytest.CaptureFixture[str],
                                      content: Any, note: str) -> None:
    (files / "earlier.json").write_text(json.dumps(content))
    args = argv("--tuning-type", "bayesian", "--warm-start", "earlier.json")
    assert validate(build_parser().parse_args(args)).notes == (note,)
