"""Parsers of setting values (``--tuning-setting``, ``--early-stopping-setting``,
``--priority-setting``): text in, a typed value out, ``ValueError`` for anything else.

Each caller turns the ``ValueError`` into its one-line error naming the setting and what is valid.
"""

from __future__ import annotations

from collections.abc import Callable
import math


__all__ = ["int_at_least", "non_negative_number", "positive_numbers"]


def int_at_least(low: int) -> Callable[[str], int]:
    """A parser of integers ``>= low`` (surrounding blanks allowed)."""

    def parse(text: str) -> int:
        value = int(text.strip())
        if value < low:
            raise ValueError(text)
        return value

    return parse


def non_negative_number(text: str) -> float:
    """A finite number ``>= 0``."""
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError(text)
    return value


def positive_numbers(text: str) -> tuple[float, ...]:
    """Comma-separated finite numbers ``> 0``, at least one."""
    values = tuple(float(part) for part in text.split(","))
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(text)
    return values
