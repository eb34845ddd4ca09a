"""Durations as people and Mesos flags write them: ``90``, ``45s``, ``500ms``, ``2h``, ``1h30m``.

A number alone is seconds. Units follow Mesos' flag syntax (``ns``, ``us``, ``ms``, ``secs``,
``mins``, ``hrs``, ``days``, ``weeks``) and the short forms (``s``, ``m``, ``h``, ``d``, ``w``);
several parts add up (``1h30m``). Only finite, positive durations are valid.
"""

from __future__ import annotations

import math
import re


UNITS = {
    "": 1.0, "ns": 1e-9, "us": 1e-6, "ms": 1e-3,
    "s": 1.0, "sec": 1.0, "secs": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
    "w": 604800.0, "weeks": 604800.0,
}
HELP = ("a positive number of seconds, or with units ns, us, ms, s/secs, m/mins, h/hrs, d/days, "
        "w/weeks (e.g. 45s, 500ms, 2h, 1h30m)")

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)")


class DurationError(ValueError):
    """Not a valid duration; the message names the text and the accepted forms."""


def parse_duration(text: str) -> float:
    """Seconds of a duration.

    Raises:
        DurationError: not a duration, or not positive and finite.
    """
    rest = text.strip()
    total = 0.0
    parts = 0
    while rest:
        match = _PART.match(rest)
        unit = match.group(2).lower() if match else ""
        if not match or unit not in UNITS or (parts and not match.group(2)):
            raise DurationError(f"invalid duration {text!r}: expected {HELP}")
        total += float(match.group(1)) * UNITS[unit]
        parts += 1
        rest = rest[match.end():].lstrip()
    if not parts:
        raise DurationError(f"invalid duration {text!r}: expected {HELP}")
    if not math.isfinite(total) or total <= 0:
        raise DurationError(f"invalid duration {text!r}: must be greater than zero")
    return total


def format_duration(seconds: float) -> str:
    """``2h``, ``1h30m``, ``45s``, ``0.5s``: the shortest form :func:`parse_duration` reads."""
    if seconds < 1:
        return f"{seconds:g}s"
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(part for part in (f"{hours}h" if hours else "",
                                     f"{minutes}m" if minutes else "",
                                     f"{secs}s" if secs else "") if part)
