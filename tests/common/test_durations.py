"""Durations: Mesos' flag units, short units, compound forms, and one-line errors."""

from __future__ import annotations

import pytest

from disauto.common.durations import DurationError
from disauto.common.durations import format_duration
from disauto.common.durations import parse_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("90", 90), ("45s", 45), ("500ms", 0.5), ("1.5mins", 90), ("2h", 7200), ("1h30m", 5400),
    ("1h 30m 15s", 5415), ("2hrs", 7200), ("1d", 86400), ("1w", 604800), (".5s", 0.5),
    ("10secs", 10), ("3 days", 259200),
])
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(("text", "why"), [
    ("", "expected"), ("fast", "expected"), ("5 parsecs", "expected"), ("-1s", "expected"),
    ("0", "greater than zero"), ("0s", "greater than zero"), ("1h 30", "expected"),
    ("1e999", "expected"), ("nan", "expected"),
])
def test_bad_durations_say_what_is_valid(text: str, why: str) -> None:
    with pytest.raises(DurationError, match=why) as caught:
        parse_duration(text)
    assert repr(text) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(("seconds", "text"), [
    (7200, "2h"), (5400, "1h30m"), (45, "45s"), (3661, "1h1m1s"), (0.5, "0.5s"), (8, "8s")])
def test_format_round_trips(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)
