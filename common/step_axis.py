"""A stepped range's values, computed in decimal and lazily (``common.space.RealParam``).

``StepAxis(low, high, step)`` is the sequence ``low, low + step, ... <= high`` with each point
rounded once from decimal arithmetic on the numbers as written, so ``[0.1, 0.3]`` with step
``0.1`` has exactly the three points 0.1, 0.2, 0.3.
"""

from __future__ import annotations

from collections.abc import Sequence
import decimal
import operator
from typing import overload


__all__ = ["StepAxis", "decimal_of"]

# Enough digits for any quotient of two finite doubles, so stepped axes never overflow Decimal.
_DECIMAL_CONTEXT = decimal.Context(prec=800)


def decimal_of(value: float) -> decimal.Decimal:
    """``value`` as the decimal its shortest repr spells."""
    # The shortest repr of a float is the decimal the user wrote (0.1, not 0.1000000000000000055).
    return decimal.Decimal(repr(float(value)))


class StepAxis(Sequence[float]):
    """The values ``low + k * step <= high`` (k = 0, 1, ...), computed in decimal, lazily.

    Lazy because a fine step over a wide range can have more points than fit in memory; only the
    points a search actually visits are ever computed.
    """

    __slots__ = ("_len", "_low", "_step")

    def __init__(self, low: float, high: float, step: float) -> None:
        with decimal.localcontext(_DECIMAL_CONTEXT):
            self._low = decimal_of(low)
            self._step = decimal_of(step)
            self._len = int((decimal_of(high) - self._low) // self._step) + 1

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[float, ...]: ...

    def __getitem__(self, index: int | slice) -> float | tuple[float, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._len)))
        position = operator.index(index)
        if position < 0:
            position += self._len
        if not 0 <= position < self._len:
            raise IndexError(f"axis index {index} out of range for {self._len} points")
        with decimal.localcontext(_DECIMAL_CONTEXT):
            return float(self._low + position * self._step)

    def __repr__(self) -> str:
        return f"StepAxis(low={self._low}, step={self._step}, len={self._len})"
