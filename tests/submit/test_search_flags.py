"""da-submit's flags of issue 30's search: several objectives with their directions and targets,
the new backends and rule, and every misuse as one line before anything starts."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest

from disauto.common.objectives import Objectives
from disauto.protos import common_pb2
from disauto.submit.cli import main
from disauto.submit.exit_status import ExitStatus
from disauto.submit.parser import build_parser
from disauto.submit.validate import validate
from tests.submit.test_cli import argv


pytestmark = pytest.mark.usefixtures("files")

TWO = ("--objective", "accuracy,latency", "--direction", "maximize,minimize")


def submission(*extra: str) -> common_pb2.JobSpec:
    return validate(build_parser().parse_args(argv(*extra))).config.search


def test_one_objective_is_as_before() -> None:
    search = submission("--objective", "loss", "--direction", "minimize", "--target", "0.1")
    assert (search.objective, search.direction, search.target) == (
        "loss", common_pb2.MINIMIZE, 0.1)
    assert not search.objectives and not search.directions and not search.targets
    assert submission().direction == common_pb2.MAXIMIZE  # the default


def test_several_objectives_carry_a_direction_and_a_target_each() -> None:
    search = submission(*TWO, "--target", "0.9, 5")
    assert list(search.objectives) == ["accuracy", "latency"]
    assert list(search.directions) == [common_pb2.MAXIMIZE, common_pb2.MINIMIZE]
    assert list(search.targets) == [0.9, 5.0] and not search.HasField("target")
    assert search.objective == "accuracy" and search.direction == common_pb2.MAXIMIZE
    assert Objectives.from_spec(search) == Objectives(
        ("accuracy", "latency"), ("maximize", "minimize"), (0.9, 5.0))


@pytest.mark.parametrize("backend", ["tpe", "nsga2", "qmc"])
def test_the_multi_objective_backends_take_several(backend: str) -> None:
    search = submission(*TWO, "--tuning-type", "bayesian", "--bayes-backend", backend)
    assert search.settings["backend"] == backend


def test_grid_and_random_search_take_several_objectives() -> None:
    for tuning in ("grid-search", "random-search"):
        assert len(submission(*TWO, "--tuning-type", tuning).objectives) == 2


def test_cmaes_and_hyperband_are_accepted() -> None:
    search = submission("--tuning-type", "bayesian", "--bayes-backend", "cmaes",
                        "--early-stopping", "hyperband", "--early-stopping-setting",
                        "max_resource=9")
    assert search.settings["backend"] == "cmaes" and search.early_stopping == "hyperband"


def test_a_conditional_parameter_file_is_accepted(files: Path) -> None:
    (files / "params.json").write_text(json.dumps({"parameters": [
        {"name": "optimizer", "type": "choice", "value": ["sgd", "adam"]},
        {"name": "momentum", "type": "bound", "value": [0.5, 0.99],
         "when": {"optimizer": "sgd"}},
    ]}))
    search = submission("--tuning-type", "grid-search", "--tuning-setting",
                        "grid_points_per_range=3")
    assert [c.parameter for c in search.space.parameters[1].when] == ["optimizer"]


@pytest.mark.parametrize(("extra", "message"), [
    (("--objective", "accuracy,latency"),
     "--direction: 2 objectives (accuracy, latency) need a direction each, e.g. --direction "
     "maximize,minimize"),
    (("--objective", "accuracy,latency", "--direction", "maximize"),
     "--direction: 1 given for 2 objectives (accuracy, latency); give one per objective"),
    (("--direction", "maximize,minimize"), "--direction: 2 given for 1 objective (accuracy)"),
    (("--direction", "up"), "--direction: invalid value 'up': expected maximize or minimize"),
    (("--objective", "accuracy,,latency"), "--objective: invalid value 'accuracy,,latency': "
                                           "an empty item"),
    (("--objective", "acc,acc", "--direction", "maximize,maximize"),
     "--objective: 'acc' is named twice"),
    ((*TWO, "--target", "0.9"), "--target: 1 given for 2 objectives (accuracy, latency); give "
                                "one per objective"),
    ((*TWO, "--target", "0.9,fast"), "--target: invalid value 'fast': expected a number"),
    ((*TWO, "--target", "0.9,inf"), "--target: invalid value 'inf': expected a finite number"),
    (("--target", "1,2"), "--target: 2 given for 1 objective (accuracy)"),
    ((*TWO, "--tuning-type", "bayesian", "--bayes-backend", "gp"),
     "--bayes-backend: backend 'gp' optimizes one objective; for 2 use one of tpe, qmc, nsga2"),
    ((*TWO, "--tuning-type", "bayesian", "--bayes-backend", "cmaes"),
     "--bayes-backend: backend 'cmaes' optimizes one objective"),
    ((*TWO, "--early-stopping", "median"), "--early-stopping median: a rule judges one "
                                           "objective's curve"),
    (("--bayes-backend", "cmaes"), "--bayes-backend: needs --tuning-type bayesian"),
    (("--tuning-type", "bayesian", "--bayes-backend", "cma"),
     "--bayes-backend: unknown backend 'cma'; valid: tpe, gp, qmc, nsga2, cmaes"),
    (("--early-stopping", "hyperband", "--early-stopping-setting", "bootstrap_count=2"),
     "--early-stopping-setting: early-stopping rule 'hyperband': bootstrap_count > 0 needs an "
     "explicit max_resource"),
    (("--early-stopping", "hyperband", "--early-stopping-setting", "min_resource=0"),
     "--early-stopping-setting: setting 'min_resource' for early-stopping rule 'hyperband' "
     "must be an integer >= 1"),
])
def test_misuse_is_one_line(files: Path, capsys: pytest.CaptureFixture[str],
                            extra: tuple[str, ...], message: str) -> None:
    assert main(argv(*extra)) == ExitStatus.USAGE
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith(f"da-submit: error: {message}"), err
    assert "Traceback" not in err
    assert not (files / "home").exists()


def test_warm_start_results_are_for_one_objective(files: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (files / "results.json").write_text(json.dumps({"objective": "accuracy", "trials": []}))
    code = main(argv(*TWO, "--tuning-type", "bayesian", "--warm-start", "results.json"))
    assert code == ExitStatus.USAGE
    assert ("an earlier job's results teach one objective; a search of 2 can start from a "
            "list of points only") in capsys.readouterr().err
    (files / "points.json").write_text(json.dumps([{"lr": 0.01, "bs": 32}]))
    search = submission(*TWO, "--tuning-type", "bayesian", "--warm-start", "points.json")
    assert json.loads(search.settings["warm_start"])["points"] == [{"lr": 0.01, "bs": 32}]


def test_trial_retries_is_zero_unless_given() -> None:
    def config(*extra: str) -> int:
        return validate(build_parser().parse_args(argv(*extra))).config.trial_retries

    assert config() == 0
    assert config("--trial-retries", "2") == 2


@pytest.mark.parametrize(("value", "message"), [
    ("-1", "--trial-retries: invalid value '-1': expected an integer >= 0 and <= 100"),
    ("1.5", "--trial-retries: invalid value '1.5': expected an integer >= 0 and <= 100"),
    ("101", "--trial-retries: invalid value '101': expected an integer >= 0 and <= 100"),
    ("lots", "--trial-retries: invalid value 'lots': expected an integer >= 0 and <= 100"),
])
def test_a_bad_trial_retries_is_one_line(files: Path, capsys: pytest.CaptureFixture[str],
                                         value: str, message: str) -> None:
    assert main(argv("--trial-retries", value)) == ExitStatus.USAGE
    err = capsys.readouterr().err
    assert err.splitlines()[0] == f"da-submit: error: {message}" and "Traceback" not in err
    assert not (files / "home").exists()


def test_the_trial_exit_grace_is_30s_unless_given() -> None:
    def config(*extra: str) -> float:
        return validate(build_parser().parse_args(argv(*extra))).config.trial_exit_grace

    assert config() == 30.0
    assert config("--trial-exit-grace", "2s") == 2.0
    assert config("--trial-exit-grace", "1m30s") == 90.0


@pytest.mark.parametrize(("value", "message"), [
    ("0", "--trial-exit-grace: invalid duration '0': must be greater than zero"),
    ("soon", "--trial-exit-grace: invalid duration 'soon': expected a positive number"),
    ("5 parsecs", "--trial-exit-grace: invalid duration '5 parsecs': expected a positive number"),
])
def test_a_bad_trial_exit_grace_is_one_line(files: Path, capsys: pytest.CaptureFixture[str],
                                            value: str, message: str) -> None:
    assert main(argv("--trial-exit-grace", value)) == ExitStatus.USAGE
    err = capsys.readouterr().err
    assert err.splitlines()[0].startswith(f"da-submit: error: {message}"), err
    assert "Traceback" not in err
    assert not (files / "home").exists()


def test_cmaes_says_once_which_parameters_it_samples_at_random(
        caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    """params.json's ``bs`` is a list of numbers, a choice CMA-ES cannot model: da-submit says
    so at the start, on stderr and in the job's log (issue 36)."""
    from disauto.submit import run

    given = validate(build_parser().parse_args(argv("--tuning-type", "bayesian",
                                                    "--bayes-backend", "cmaes")))
    (note,) = [n for n in given.notes if "cmaes" in n]
    assert note.startswith("--bayes-backend cmaes cannot model bs (choice): Optuna's CMA-ES "
                           "samples them independently, at random in every trial")
    out, err = io.StringIO(), io.StringIO()
    with caplog.at_level(logging.INFO):
        run._announce(given, tmp_path, False, out, err)
    assert " ".join(err.getvalue().split()) == f"da-submit: note: {note}"
    # Besides the slot mode's line (tests/submit/test_slot_choice.py), the note, once.
    assert [m for m in caplog.messages if "cmaes" in m] == [f"note: {note}"]
    tpe = validate(build_parser().parse_args(argv("--tuning-type", "bayesian")))
    assert not tpe.notes


def test_a_resumed_cmaes_job_says_it_again_and_an_odd_record_says_nothing() -> None:
    from disauto.submit.validate import search_notes
    from disauto.testing.inprocess import job_config

    cmaes = job_config(tuning_type="bayesian", settings={"backend": "cmaes"})
    (note,) = search_notes(cmaes.search)
    assert note.startswith("--bayes-backend cmaes cannot model act (choice):")
    # A setting the algorithm does not take (an older record): no note, no error on resume.
    assert search_notes(job_config(settings={"backend": "tpe"}).search) == ()
