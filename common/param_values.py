"""What a parameter's value is: the one type the search space, its conditions and its grid share
(a module of its own, so that none of them imports another for a type)."""

from __future__ import annotations

from typing import TypeAlias


__all__ = ["Assignment", "Value"]

Value: TypeAlias = float | int | str
"""One parameter's value: ``float`` (real), ``int`` (integer) or a categorical choice."""

Assignment: TypeAlias = dict[str, Value]
"""One value per parameter of a space, keyed by parameter name."""
