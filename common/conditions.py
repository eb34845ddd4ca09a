"""Conditional parameters: a parameter that exists only while others hold given values.

In a parameter file, ``{"name": "momentum", ..., "when": {"optimizer": "sgd"}}`` makes
``momentum`` *conditional*: an assignment has a value for it exactly when ``optimizer`` is
active and has one of the listed values (one value or a list; several parents must all hold).
A parent may itself be conditional (chains). A parent must be a parameter with a finite list of
values (``"number"`` or ``"choice"``), every listed value must be one of them (same type and
value, as the assignment will carry it), and the conditions must not form a cycle.

:meth:`Conditions.build` checks all of that once, raising :class:`~common.errors.SearchSpaceError`
naming the parameter, and computes the *evaluation order*: the file's order, except that each
parameter comes after its parents. Every search walks that order and decides each parameter in
turn (Optuna's define-by-run), so an inactive parameter is never drawn and an assignment never
holds a key for one.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import TypeAlias

from disauto.common.errors import SearchSpaceError


if TYPE_CHECKING:
    from disauto.common.param_values import Value


__all__ = ["Conditions", "Requirement", "same_value"]

Requirement: TypeAlias = "tuple[tuple[str, tuple[Value, ...]], ...]"
"""A parameter's ``when``: ``(parent, accepted values)`` pairs, sorted by parent."""


def same_value(a: object, b: object) -> bool:
    """Whether two parameter values are the same value of the same type (``1`` is not ``1.0``)."""
    return type(a) is type(b) and a == b


def _show(value: object) -> str:
    return repr(value)


@dataclass(frozen=True)
class Conditions:
    """The ``when`` of every conditional parameter, checked, and the evaluation order.

    Build with :meth:`build`. Instances are immutable and hashable; two are equal when they
    hold the same requirements over the same order.

    Attributes:
        requirements: ``(parameter, Requirement)`` for each conditional parameter, sorted.
        order: Every parameter name, each after its parents (the file's order otherwise).
    """

    requirements: tuple[tuple[str, Requirement], ...] = ()
    order: tuple[str, ...] = ()
    _by_child: Mapping[str, Requirement] = field(init=False, repr=False, compare=False,
                                                 hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_child", dict(self.requirements))

    @classmethod
    def build(
        cls,
        names: Sequence[str],
        choices: Mapping[str, tuple[Value, ...] | None],
        when: Mapping[str, Mapping[str, Value | Sequence[Value]]],
    ) -> Conditions:
        """Check ``when`` against the parameters and build the conditions.

        Args:
            names: Every parameter name, in the file's order.
            choices: Each parameter's values if it is a list of values, else ``None``.
            when: Conditional parameter to ``{parent: value or list of values}``.

        Returns:
            The conditions.

        Raises:
            SearchSpaceError: Naming the parameter whose ``when`` names an unknown parameter,
                a range, a value its parent does not have, or closes a cycle.
        """
        requirements = []
        for child in sorted(when):
            if child not in names:
                raise SearchSpaceError(f'"when" is given for unknown parameter {child!r}')
            requirements.append((child, _requirement(child, when[child], names, choices)))
        order = _evaluation_order(names, dict(requirements))
        return cls(tuple(requirements), order)

    @property
    def empty(self) -> bool:
        """True when no parameter is conditional."""
        return not self.requirements

    def requirement(self, name: str) -> Requirement:
        """``name``'s ``(parent, values)`` pairs; empty for an unconditional parameter."""
        return self._by_child.get(name, ())

    def is_active(self, name: str, assignment: Mapping[str, object]) -> bool:
        """Whether ``name`` is active given the values decided so far.

        ``assignment`` holds only active parameters, so a parent that is absent is inactive
        (or not decided yet, which the evaluation order rules out) and so is its child.
        """
        return all(parent in assignment
                   and any(same_value(assignment[parent], value) for value in values)
                   for parent, values in self.requirement(name))

    def describe(self, name: str) -> str:
        """``name``'s condition for messages, e.g. ``optimizer = 'sgd'``."""
        return " and ".join(
            f"{parent} = {_show(values[0])}" if len(values) == 1
            else f"{parent} in ({', '.join(_show(v) for v in values)})"
            for parent, values in self.requirement(name))


def _requirement(
    child: str,
    given: Mapping[str, Value | Sequence[Value]],
    names: Sequence[str],
    choices: Mapping[str, tuple[Value, ...] | None],
) -> Requirement:
    label = f"parameter {child!r}"
    if not isinstance(given, Mapping) or not given:
        raise SearchSpaceError(f'{label}: "when" needs at least one parameter and its values, '
                               'e.g. {"optimizer": "sgd"}')
    pairs = []
    for parent in sorted(given):
        if parent == child:
            raise SearchSpaceError(f'{label}: "when" names the parameter itself')
        if parent not in names:
            raise SearchSpaceError(f'{label}: "when" names unknown parameter {parent!r}; '
                                   f"parameters: {', '.join(names)}")
        valid = choices.get(parent)
        if valid is None:
            raise SearchSpaceError(f'{label}: "when" names {parent!r}, a range; a parent must '
                                   'be a list of values ("number" or "choice")')
        raw = given[parent]
        values = tuple(raw) if isinstance(raw, list | tuple) else (raw,)
        if not values:
            raise SearchSpaceError(f'{label}: "when" gives no value of {parent!r}')
        for value in values:
            if not any(same_value(value, choice) for choice in valid):
                raise SearchSpaceError(
                    f'{label}: "when" gives {parent} = {_show(value)}, which is not one of its '
                    f"values {', '.join(_show(choice) for choice in valid)}")
        pairs.append((parent, tuple(dict.fromkeys(values))))
    return tuple(pairs)


def _evaluation_order(names: Sequence[str],
                      by_child: Mapping[str, Requirement]) -> tuple[str, ...]:
    """The names in file order, each moved after its parents; a cycle is an error."""
    placed: list[str] = []
    done: set[str] = set()
    remaining = list(names)
    while remaining:
        ready = next((name for name in remaining
                      if all(parent in done for parent, _ in by_child.get(name, ()))), None)
        if ready is None:
            raise SearchSpaceError(_cycle(remaining, by_child))
        placed.append(ready)
        done.add(ready)
        remaining.remove(ready)
    return tuple(placed)


def _cycle(remaining: Sequence[str], by_child: Mapping[str, Requirement]) -> str:
    """The message naming one cycle among ``remaining`` (each has a parent among them)."""
    path = [remaining[0]]
    while True:
        parent = next(p for p, _ in by_child[path[-1]] if p in remaining)
        if parent in path:
            loop = [*path[path.index(parent):], parent]
            return (f'parameter {loop[0]!r}: its "when" conditions form a cycle: '
                    + " -> ".join(loop))
        path.append(parent)
