"""da-submit's --deadline and --offer-policy deadline: recorded in the config; one-line errors."""

from __future__ import annotations

import time

import pytest

from disauto.submit.parser import UsageError
from disauto.submit.parser import build_parser
from disauto.submit.validate import validate
from tests.submit.test_cli import argv


@pytest.mark.usefixtures("files")
def test_deadline_is_recorded_in_the_config() -> None:
    before = time.time()
    config = validate(build_parser().parse_args(argv("--deadline", "2h"))).config
    assert before + 7200 <= config.deadline <= time.time() + 7200
    assert validate(build_parser().parse_args(argv())).config.deadline == 0.0


@pytest.mark.usefixtures("files")
def test_deadline_policy_takes_its_settings() -> None:
    config = validate(build_parser().parse_args(argv(
        "--deadline", "30m", "--offer-policy", "deadline",
        "--priority-setting", "patience_seconds=5")
        + ["--priority-setting", "edge_attribute=zone:edge"])).config
    assert config.offer_policy_settings == {"patience_seconds": "5",
                                            "edge_attribute": "zone:edge"}
    assert not config.search.dynamic_priority  # Algorithm 1 is not needed


@pytest.mark.usefixtures("files")
@pytest.mark.parametrize(("value", "fragment"), [
    ("tomorrow", "--deadline: invalid deadline 'tomorrow': expected"),
    ("2020-01-01T10:00", "is not in the future"),
])
def test_invalid_deadline_is_one_line(value: str, fragment: str) -> None:
    with pytest.raises(UsageError) as err:
        validate(build_parser().parse_args(argv("--deadline", value)))
    assert fragment in str(err.value) and "\n" not in str(err.value)
