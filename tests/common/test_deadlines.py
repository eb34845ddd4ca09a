"""--deadline values: absolute local times, times of day, durations; one-line errors."""

from __future__ import annotations

from datetime import datetime

import pytest

from disauto.common.deadlines import DeadlineError
from disauto.common.deadlines import format_deadline
from disauto.common.deadlines import parse_deadline


NOW = datetime(2026, 11, 24, 15, 0, 0).timestamp()


@pytest.mark.parametrize(("text", "seconds"), [
    ("2h", 7200.0), ("90m", 5400.0), ("1h30m", 5400.0), ("45", 45.0),
    ("18:00", 3 * 3600.0), ("15:00:30", 30.0), ("14:00", 23 * 3600.0),
    ("2026-11-24T18:00", 3 * 3600.0), ("2026-11-25 15:00:00", 86400.0),
])
def test_accepted_forms(text: str, seconds: float) -> None:
    assert parse_deadline(text, NOW) - NOW == pytest.approx(seconds)


@pytest.mark.parametrize(("text", "fragment"), [
    ("soon", "expected a local date and time"), ("25:00", "no such time of day"),
    ("2026-11-24T14:00", "is not in the future"), ("0s", "expected"),
    ("2026-13-01T00:00", "expected"),
])
def test_refused_with_one_line(text: str, fragment: str) -> None:
    with pytest.raises(DeadlineError) as err:
        parse_deadline(text, NOW)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_format_is_local_time() -> None:
    assert format_deadline(NOW + 3 * 3600) == "2026-11-24 18:00:00"
