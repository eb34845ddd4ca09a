"""Random parameter files and flag values: validation answers every one with a Submission or a
one-line error, never a traceback, and starts or records nothing (property-based)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from disauto.submit.errors import DisAutoUsageError
from disauto.submit.parser import UsageError
from disauto.submit.parser import build_parser
from disauto.submit.validate import validate
from tests.submit.test_cli import argv


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=True)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=5),
    max_leaves=25,
)
NAMES = st.sampled_from(["lr", "layers", "act", "", "x" * 300, "momentum"])
TYPES = st.sampled_from(["bound", "number", "choice", "int", "real", "categorical", "", "x"])
PARAMETER = st.fixed_dictionaries(
    {"name": NAMES | JSON, "type": TYPES | JSON, "value": st.lists(JSON, max_size=4) | JSON},
    optional={"log": JSON, "step": JSON,
              "when": JSON | st.dictionaries(NAMES, JSON | st.lists(JSON, max_size=3))},
)
DOCUMENT = st.fixed_dictionaries({"parameters": st.lists(PARAMETER, max_size=4)}) | JSON
FLAG_VALUES = st.text(max_size=12) | st.integers(-10**30, 10**30).map(str) \
    | st.floats(allow_nan=True, allow_infinity=True).map(repr) \
    | st.sampled_from(["0", "-1", "1e400", "nan", "inf", "2**70", "1.5", "5G", "0x10", "1h30m"])
FLAGS = st.sampled_from([
    "--app-runner-cpus", "--app-runner-memory", "--app-runner-gpus", "--app-core-cpus",
    "--app-core-memory", "--trail-steps", "--parallelism", "--max-failed-trials", "--seed",
    "--target", "--max-duration", "--trial-timeout", "--tuning-type", "--offer-policy",
    "--tuning-setting", "--early-stopping", "--early-stopping-setting", "--policy-setting",
    "--priority-setting", "--local-agents", "--direction", "--objective",
])


def _validate(args: list[str]) -> Any:
    """A Submission, or the one-line error; anything else fails the property."""
    try:
        return validate(build_parser().parse_args(args))
    except (UsageError, DisAutoUsageError) as error:
        message = str(error)
        assert message and "\n" not in message and "Traceback" not in message
        return error


def _nothing_recorded(home: Path) -> None:
    assert not home.exists(), "validation must not create or record anything"


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=DOCUMENT)
def test_random_parameter_files(files: Path, document: Any) -> None:
    (files / "params.json").write_text(json.dumps(document))
    _validate(argv())
    _nothing_recorded(files / "home")


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=200))
def test_random_bytes_as_a_parameter_file(files: Path, raw: bytes) -> None:
    (files / "params.json").write_bytes(raw)
    _validate(argv())
    _nothing_recorded(files / "home")


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.lists(st.tuples(FLAGS, FLAG_VALUES), min_size=1, max_size=3))
def test_random_flag_values(files: Path, changes: list[tuple[str, str]]) -> None:
    extra = [item for flag, value in changes for item in (flag, value)]
    outcome = _validate(argv(*extra))
    if not isinstance(outcome, Exception):  # accepted: then it is a coherent job
        config = outcome.config
        assert config.runner.cpus > 0 and config.search.max_trials >= 1
        assert os.path.basename(config.files[0]) == "train.py"
    _nothing_recorded(files / "home")
