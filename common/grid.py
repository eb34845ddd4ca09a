"""The grid of a search space: how many points it has and which is the n-th, conditions included.

The grid is every valid combination of the parameters' grid axes
(:meth:`~common.space.RealParam.grid_axis` and friends). Without conditional parameters that is
the Cartesian product; with them, a parameter takes part in a combination only where it is
active (:mod:`common.conditions`), so a combination of ``optimizer = 'adam'`` has no
``momentum`` and the grid holds just the valid combinations, each once.

Order is row-major over the evaluation order (the file's order, each parameter after its
parents): the first parameter changes slowest. Point ``n`` is found without listing the others:
a parameter nothing depends on has the same number of completions under each of its values, so
its position is one division (as in a mixed-radix number); only a parent's values are walked,
with the completions counted once per distinct state (memoized), so a grid of any size costs
about (parameters x parent values) steps to index.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import functools
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from disauto.common.conditions import Conditions
    from disauto.common.param_values import Value


__all__ = ["Grid"]

_State = tuple[tuple[str, "Value"], ...]


class Grid:
    """The valid combinations of ``axes`` under ``conditions``, in row-major order.

    Args:
        axes: ``(name, axis)`` per parameter, in the evaluation order.
        conditions: The space's conditions.
        names: The parameter names in the file's order (the order of a point's keys).
    """

    def __init__(self, axes: Sequence[tuple[str, Sequence[Value]]], conditions: Conditions,
                 names: Sequence[str]) -> None:
        self._axes = tuple(axes)
        self._conditions = conditions
        self._names = tuple(names)
        # The parents that parameters at position >= i look at: what a completion depends on.
        needed: list[frozenset[str]] = [frozenset()] * (len(self._axes) + 1)
        for i in range(len(self._axes) - 1, -1, -1):
            own = {parent for parent, _ in conditions.requirement(self._axes[i][0])}
            needed[i] = needed[i + 1] | own
        self._needed = tuple(needed)
        self._completions = functools.lru_cache(maxsize=None)(self._count)
        self.size: int = self._completions(0, ())
        """The number of points."""

    def _state(self, position: int, chosen: Mapping[str, Value]) -> _State:
        """What the completions from ``position`` depend on: the needed parents' values."""
        return tuple((name, chosen[name]) for name in sorted(self._needed[position])
                     if name in chosen)

    def _count(self, position: int, state: _State) -> int:
        if position == len(self._axes):
            return 1
        name, axis = self._axes[position]
        chosen = dict(state)
        if not self._conditions.is_active(name, chosen):
            return self._completions(position + 1, self._state(position + 1, chosen))
        if name not in self._needed[position + 1]:
            return len(axis) * self._completions(position + 1, self._state(position + 1, chosen))
        return sum(self._completions(position + 1,
                                     self._state(position + 1, {**chosen, name: value}))
                   for value in axis)

    def point(self, index: int) -> dict[str, Value]:
        """Point ``index`` (from 0) of the grid, its keys in the file's order.

        Raises:
            IndexError: If ``index`` is not in ``[0, size)``.
        """
        if not 0 <= index < self.size:
            raise IndexError(f"grid index {index} out of range for {self.size} points")
        chosen: dict[str, Value] = {}
        for position, (name, axis) in enumerate(self._axes):
            if not self._conditions.is_active(name, chosen):
                continue
            if name not in self._needed[position + 1]:
                each = self._completions(position + 1, self._state(position + 1, chosen))
                slot, index = divmod(index, each)
                chosen[name] = axis[slot]
                continue
            for value in axis:
                candidate = {**chosen, name: value}
                each = self._completions(position + 1, self._state(position + 1, candidate))
                if index < each:
                    chosen = candidate
                    break
                index -= each
        return {name: chosen[name] for name in self._names if name in chosen}
