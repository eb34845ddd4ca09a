"""How a job's trials run when ``--slot-mode`` is not given (``submit/slot_choice.py``): which
launch commands get warm slots with ``--slot-preload auto``, which keep a task per trial, and
the one start line that says which and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.submit.parser import build_parser
from disauto.submit.validate import Submission
from disauto.submit.validate import validate


CLUSTER = ("--master", "10.0.0.1:5050")
"""A remote master: the GPU and Docker flags are not checked against this machine."""


def _submit(*extra: str, launch: str = "python train.py") -> Submission:
    argv = ["--app-name", "mnist", "--files", "train.py", "--app-runner-launch-cmd", launch,
            "--tuning-parameters", "params.json", *extra]
    return validate(build_parser().parse_args(argv))


def _line_fits(submission: Submission) -> str:
    line = f"da-submit: {submission.slot_line}"
    assert len(line) <= 80 and "\n" not in line, line
    return submission.slot_line


@pytest.mark.parametrize("launch", [
    "python train.py", "python3 train.py", "python -u train.py", "python3.11 -B train.py --lr 3",
    "/usr/bin/python3 train.py", "python -O -u train.py --epochs 2"])
def test_a_python_script_gets_warm_slots_and_its_imports_preloaded(files: Path,
                                                                   launch: str) -> None:
    (files / "train.py").write_text("import numpy\nfrom sklearn.svm import SVC\n")
    submission = _submit(launch=launch)
    config = submission.config
    assert (config.slot_mode, config.slot_preload, config.slot_preload_auto) == (
        "warm", (), True)
    assert config.slot_preload_optional == ("numpy", "sklearn.svm")
    assert _line_fits(submission) == ("slot mode warm, preload auto: numpy, sklearn "
                                      "(default: python script)")  # sklearn.svm: too long
    assert type(config).from_json(config.to_json()) == config  # da-job resume keeps it


def test_a_module_program_in_an_input_folder_is_read_too(files: Path) -> None:
    package = files / "src" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text("import pandas\nfrom pkg import helpers\n")
    config = _submit("--input", "src/pkg#pkg", launch="python -m pkg.train --x 1").config
    assert config.slot_mode == "warm"
    assert config.slot_preload_optional == ("pandas",)  # pkg is the job's own


def test_a_script_in_an_input_folder_and_one_by_absolute_path(files: Path) -> None:
    (files / "code").mkdir()
    (files / "code" / "fit.py").write_text("import scipy.optimize\n")
    inside = _submit("--input", f"{files / 'code'}#code", launch="python code/fit.py").config
    assert inside.slot_preload_optional == ("scipy.optimize",)
    absolute = _submit(launch=f"python {files / 'code' / 'fit.py'}").config
    assert absolute.slot_preload_optional == ("scipy.optimize",)


def test_the_jobs_own_modules_and_the_standard_library_are_left_to_the_trial(
        files: Path) -> None:
    (files / "utils.py").write_text("import numpy\n")
    (files / "models").mkdir()
    (files / "models" / "__init__.py").write_text("")
    (files / "train.py").write_text(
        "import json, os\nimport utils\nimport models.cnn\nimport numpy\n"
        "from apprunner_sdk import report\n")
    config = _submit("--files", "utils.py").config
    assert config.slot_preload_optional == ("numpy",)


def test_modules_that_do_not_survive_a_fork_are_left_out_with_a_note(files: Path) -> None:
    (files / "train.py").write_text("import numpy\nimport tensorflow as tf\nimport jax\n")
    submission = _submit()
    assert submission.config.slot_preload_optional == ("numpy",)
    notes = [n for n in submission.notes if "--slot-preload auto" in n]
    assert [n.split(":")[0] for n in notes] == ["--slot-preload auto leaves out tensorflow",
                                                "--slot-preload auto leaves out jax"]
    assert all("\n" not in n for n in notes)


@pytest.mark.parametrize(("script", "note"), [
    ("def broken(:\n", "--slot-preload auto: train.py is not Python: invalid syntax (line 1); "
                       "preloading the SDK alone"),
    (None, ""),  # not among --files: nothing to read, the SDK alone
])
def test_a_script_that_cannot_be_read_preloads_the_sdk_alone(files: Path, script: str | None,
                                                             note: str) -> None:
    if script is not None:
        (files / "train.py").write_text(script)
    submission = _submit() if script is not None else _submit(launch="python elsewhere.py")
    config = submission.config
    assert (config.slot_mode, config.slot_preload_auto, config.slot_preload_optional) == (
        "warm", True, ())
    assert [n for n in submission.notes if "slot-preload" in n] == ([note] if note else [])
    assert _line_fits(submission) == ("slot mode warm, preload auto: the SDK alone "
                                      "(default: python script)")


@pytest.mark.parametrize("launch", [
    "sh train.sh", "python train.py && echo done", "bash -c 'python train.py'",
    "python -c 'import train'", "env X=1 python train.py", "python -X dev train.py",
    "cd src; python train.py", "python train.py > out.log", "python"])
def test_other_launch_commands_keep_a_task_per_trial(files: Path, launch: str) -> None:
    submission = _submit(launch=launch)
    assert submission.config.slot_mode == "task"
    assert not submission.config.slot_preload_auto
    assert _line_fits(submission) == ("slot mode task: the launch command is not "
                                      "'python SCRIPT'")


@pytest.mark.parametrize(("extra", "line"), [
    (("--docker-image", "disauto/apprunner:1"),
     "slot mode task: --docker-image (warm slots: --slot-mode warm)"),
    (("--app-runner-gpus", "1"), "slot mode task: --app-runner-gpus 1 (warm slots: "
                                 "--slot-mode warm)"),
    (("--app-core-docker-image", "disauto/apprunner:1"),
     "slot mode task: --app-core-docker-image (the agents may lack DisAuto)"),
    (("--app-core-command", "python3 -m disauto.appcore"),
     "slot mode task: --app-core-command (the agents may lack DisAuto)"),
])
def test_images_gpus_and_an_appcore_of_its_own_keep_a_task_per_trial(
        files: Path, extra: tuple[str, ...], line: str) -> None:
    submission = _submit(*extra, *CLUSTER)
    assert submission.config.slot_mode == "task"
    assert _line_fits(submission) == line


@pytest.mark.parametrize(("extra", "expected", "line"), [
    (("--slot-mode", "task"), ("task", (), False), "slot mode task (--slot-mode task)"),
    (("--slot-mode", "warm"), ("warm", (), False), "slot mode warm (--slot-mode warm)"),
    (("--slot-preload", "json"), ("warm", ("json",), False),
     "slot mode warm, preload: json (--slot-preload json)"),
    (("--slot-mode", "warm", "--slot-preload", "auto"), ("warm", (), True),
     "slot mode warm, preload auto: numpy (--slot-mode warm)"),
    (("--slot-preload", "auto,csv"), ("warm", ("csv",), True),
     "slot mode warm, preload auto: csv, numpy (--slot-preload auto,csv)"),
    (("--slot-preload", "numpy", "--docker-image", "disauto/apprunner:1", *CLUSTER),
     ("warm", ("numpy",), False), "slot mode warm, preload: numpy (--slot-preload numpy)"),
])
def test_the_flags_given_decide(files: Path, extra: tuple[str, ...],
                                expected: tuple[object, ...], line: str) -> None:
    (files / "train.py").write_text("import numpy\n")
    submission = _submit(*extra)
    config = submission.config
    assert (config.slot_mode, config.slot_preload, config.slot_preload_auto) == expected
    assert _line_fits(submission) == line


def test_a_long_list_is_shortened_to_its_packages_then_counted(files: Path) -> None:
    (files / "train.py").write_text(
        "import sklearn.datasets, sklearn.model_selection, sklearn.svm, sklearn.metrics\n")
    assert _line_fits(_submit()) == ("slot mode warm, preload auto: sklearn (default: "
                                     "python script)")
    (files / "train.py").write_text("".join(f"import package_{n}.module\n" for n in range(9)))
    assert _line_fits(_submit()) == ("slot mode warm, preload auto: package_0 +8 "
                                     "(default: python script)")
    (files / "train.py").write_text("import a_package_with_a_name_that_is_longer_than_a_line\n"
                                    "import numpy\n")
    assert _line_fits(_submit()) == "slot mode warm, preload auto: 2 modules (default: " \
                                    "python script)"
