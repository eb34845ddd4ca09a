""""Did you mean": a mistyped da-submit flag or choice names the nearest one, in one line."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from disauto.submit import suggest
from disauto.submit.cli import main
from disauto.submit.exit_status import ExitStatus
from tests.submit.test_cli import argv


@pytest.mark.parametrize(("extra", "line"), [
    (("--paralelism", "3"),
     "da-submit: error: unrecognized arguments: --paralelism 3 (did you mean --parallelism?)"),
    (("--tuning-paramters", "p.json"), "da-submit: error: unrecognized arguments: "
                                       "--tuning-paramters p.json (did you mean "
                                       "--tuning-parameters?)"),
    (("--sed=3", "--objetive", "loss"), "da-submit: error: unrecognized arguments: --sed=3 "
                                          "--objetive loss (did you mean --seed or "
                                          "--objective?)"),
    (("--direction", "maximise"),
     "da-submit: error: --direction: invalid value 'maximise': expected maximize or minimize "
     "(did you mean maximize?)"),
    (("--no-such-thing",), "da-submit: error: unrecognized arguments: --no-such-thing"),
])
def test_a_mistyped_flag_names_the_nearest(files: Path, capsys: pytest.CaptureFixture[str],
                                           extra: tuple[str, ...], line: str) -> None:
    assert main([*argv(), *extra]) == ExitStatus.USAGE
    assert capsys.readouterr().err.splitlines() == [line, "Try 'da-submit --help' for help."]
    assert not (files / "home").exists()


def test_nearest_is_none_for_nothing_alike() -> None:
    assert suggest.nearest("stauts", ["list", "status"]) == "status"
    assert suggest.nearest("xyz", ["list", "status"]) is None
    parser = argparse.ArgumentParser()
    parser.add_argument("-f", "--follow", action="store_true")
    assert suggest.option_strings(parser) == ["-h", "--help", "-f", "--follow"]
    assert suggest.invalid_choice(parser, "something else") == "something else"
