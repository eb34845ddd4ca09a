"""A job's deadline as people write it (``--deadline``): an absolute local time or a duration.

* ``2026-11-24T18:00`` (or with seconds, or a space for the ``T``): that local time;
* ``18:00`` (or ``18:00:30``): the next such local time after submission (today, else tomorrow);
* a duration from submission as :mod:`common.durations` reads it: ``2h``, ``90m``, ``1h30m``.

The result is seconds since the epoch; a deadline that is not in the future is refused.
"""

from __future__ import annotations

from datetime import datetime
from datetime import timedelta
import re

from disauto.common.durations import DurationError
from disauto.common.durations import parse_duration


HELP = ("a local date and time (2026-11-24T18:00), a time of day (18:00: the next one), or a "
        "duration from submission (2h, 90m, 1h30m)")
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")


class DeadlineError(ValueError):
    """Not a valid deadline; the one-line message names the text and the accepted forms."""


def parse_deadline(text: str, now: float) -> float:
    """The deadline ``text`` means, submitted at ``now``, in seconds since the epoch.

    Raises:
        DeadlineError: not one of the accepted forms, or not after ``now``.
    """
    value = text.strip()
    moment = _clock(value, now) if _CLOCK.match(value) else None
    if moment is None and ("-" in value or "T" in value):
        moment = _datetime(value, text)
    if moment is None:
        try:
            moment = now + parse_duration(value)
        except DurationError:
            raise DeadlineError(f"invalid deadline {text!r}: expected {HELP}") from None
    if moment <= now:
        when = datetime.fromtimestamp(moment).isoformat(timespec="seconds")
        raise DeadlineError(f"invalid deadline {text!r}: {when} is not in the future")
    return moment


def _clock(value: str, now: float) -> float:
    match = _CLOCK.match(value)
    assert match is not None
    hour, minute, second = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise DeadlineError(f"invalid deadline {value!r}: no such time of day")
    today = datetime.fromtimestamp(now)
    moment = today.replace(hour=hour, minute=minute, second=second, microsecond=0)
    if moment.timestamp() <= now:
        moment += timedelta(days=1)
    return moment.timestamp()


def _datetime(value: str, text: str) -> float:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise DeadlineError(f"invalid deadline {text!r}: expected {HELP}") from None
    return moment.timestamp()


def format_deadline(deadline: float) -> str:
    """``2026-11-24 18:00:00`` (local time), as ``da-job status`` and the progress line show it."""
    return datetime.fromtimestamp(deadline).strftime("%Y-%m-%d %H:%M:%S")
