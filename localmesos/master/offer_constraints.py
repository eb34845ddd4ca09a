"""Offer constraints (``Call.Subscribe.offer_constraints``) as a Mesos 1.11 master applies them.

A framework may give, per role, groups of attribute constraints: an agent is offered to that
role when at least one group matches, and a group matches when all its constraints do. A role
without constraints sees every agent. Facts followed (apache/mesos
``include/mesos/v1/scheduler/scheduler.proto`` ``AttributeConstraint``/``OfferConstraints``,
``src/master/allocator/mesos/offer_constraints_filter.cpp``):

* A selector picks the first agent attribute with ``attribute_name``, or a pseudoattribute:
  ``HOSTNAME``, ``REGION``, ``ZONE`` (the last two from the agent's fault domain).
* ``exists``/``not_exists`` test presence. ``text_equals``/``text_not_equals`` compare a TEXT
  attribute or a pseudoattribute; ``text_matches``/``text_not_matches`` full-match a regex.
  All four are true for an existing attribute that is not TEXT; on a missing one the positive
  predicates are false and the negative ones true.
* An empty ``groups`` list, an empty group, an unknown pseudoattribute, no selector, no
  predicate or a bad regex make the constraints invalid, with Mesos' messages.

Deviation: regexes are Python ``re`` full matches, not RE2, so RE2's memory and program-size
limits (``--offer_constraints_re2_max_*``) are not checked (see ``docs/local-mode.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
import re
from typing import Any


#: ``AttributeConstraint.Selector.PseudoattributeType`` values.
PSEUDOATTRIBUTES = ("UNKNOWN", "HOSTNAME", "REGION", "ZONE")
_MISSING = object()

#: A predicate over an attribute value: ``_MISSING``, a string (pseudoattribute) or an
#: ``Attribute`` JSON object.
Predicate = Callable[[Any], bool]


class ConstraintsError(ValueError):
    """Offer constraints Mesos refuses; ``str()`` is its message."""


@dataclass(frozen=True)
class _Constraint:
    attribute_name: str | None
    pseudoattribute: str | None
    predicate: Predicate

    def evaluate(self, agent_info: Mapping[str, Any]) -> bool:
        return self.predicate(self._select(agent_info))

    def _select(self, agent_info: Mapping[str, Any]) -> Any:
        if self.attribute_name is not None:
            for attribute in agent_info.get("attributes", []):
                if attribute.get("name") == self.attribute_name:
                    return attribute
            return _MISSING
        if self.pseudoattribute == "HOSTNAME":
            return str(agent_info.get("hostname", ""))
        fault_domain = (agent_info.get("domain") or {}).get("fault_domain")
        if not fault_domain:
            return _MISSING
        key = "region" if self.pseudoattribute == "REGION" else "zone"
        return str(fault_domain.get(key, {}).get("name", ""))


def _text(value: Any) -> str | None:
    """The string a text predicate compares, or None for a non-TEXT attribute."""
    if isinstance(value, str):
        return value
    if value.get("type") != "TEXT":
        return None
    return str(value.get("text", {}).get("value", ""))


def _text_predicate(test: Callable[[str], bool], on_missing: bool) -> Predicate:
    def predicate(value: Any) -> bool:
        if value is _MISSING:
            return on_missing
        text = _text(value)
        return True if text is None else test(text)

    return predicate


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConstraintsError(
            f"Failed to construct regex from pattern '{pattern}': {exc}"
        ) from None


def _predicate(spec: Mapping[str, Any]) -> Predicate:
    if "exists" in spec:
        return lambda value: value is not _MISSING
    if "not_exists" in spec:
        return lambda value: value is _MISSING
    if "text_equals" in spec:
        wanted = str(spec["text_equals"]["value"])
        return _text_predicate(lambda text: text == wanted, False)
    if "text_not_equals" in spec:
        unwanted = str(spec["text_not_equals"]["value"])
        return _text_predicate(lambda text: text != unwanted, True)
    if "text_matches" in spec:
        regex = _regex(str(spec["text_matches"]["regex"]))
        return _text_predicate(lambda text: regex.fullmatch(text) is not None, False)
    if "text_not_matches" in spec:
        regex = _regex(str(spec["text_not_matches"]["regex"]))
        return _text_predicate(lambda text: regex.fullmatch(text) is None, True)
    raise ConstraintsError("Unknown predicate type")


def _constraint(spec: Mapping[str, Any]) -> _Constraint:
    selector = spec.get("selector", {})
    name = selector.get("attribute_name")
    pseudo = selector.get("pseudoattribute_type")
    if name is None and pseudo is None:
        raise ConstraintsError(
            "Exactly one of 'AttributeConstraint::Selector::name' or"
            " 'AttributeConstraint::Selector::pseudoattribute_type' must be set"
        )
    if name is None and pseudo not in PSEUDOATTRIBUTES[1:]:
        raise ConstraintsError("Unknown pseudoattribute type")
    return _Constraint(name, None if name is not None else pseudo,
                       _predicate(spec.get("predicate", {})))


@dataclass(frozen=True)
class OfferConstraintsFilter:
    """Compiled constraints: role → groups (any group matches) of constraints (all match)."""

    roles: Mapping[str, tuple[tuple[_Constraint, ...], ...]]

    def excludes(self, role: str, agent_info: Mapping[str, Any]) -> bool:
        """True when the role's constraints keep the agent from being offered to it."""
        groups = self.roles.get(role)
        if groups is None:
            return False
        return not any(all(c.evaluate(agent_info) for c in group) for group in groups)


def _role_groups(role: str, spec: Mapping[str, Any]) -> tuple[tuple[_Constraint, ...], ...]:
    groups = spec.get("groups", [])
    if not groups:
        raise ConstraintsError(
            "'OfferConstraints::role_constraints' has an empty "
            f"'RoleConstraints::groups' for role {role}"
        )
    compiled = []
    for group in groups:
        constraints = group.get("attribute_constraints", [])
        if not constraints:
            # Mesos' message lacks the space before "contains"; kept verbatim.
            raise ConstraintsError(
                f"'OfferConstraints::RoleConstraints::groups' for role {role}"
                "contains an empty RoleConstraints::Group"
            )
        try:
            compiled.append(tuple(_constraint(c) for c in constraints))
        except ConstraintsError as exc:
            raise ConstraintsError(
                f"A role {role} has an invalid 'AttributeConstraint': {exc}"
            ) from None
    return tuple(compiled)


def compile_constraints(spec: Mapping[str, Any] | None) -> OfferConstraintsFilter:
    """Compile (normalized) ``OfferConstraints`` JSON.

    Raises:
        ConstraintsError: with Mesos' message when the constraints are invalid.
    """
    roles = (spec or {}).get("role_constraints", {})
    return OfferConstraintsFilter(
        {str(role): _role_groups(str(role), value) for role, value in roles.items()}
    )


NO_CONSTRAINTS = OfferConstraintsFilter({})


def compile_or_error(
    spec: Mapping[str, Any] | None,
) -> tuple[OfferConstraintsFilter, str | None]:
    """:func:`compile_constraints`, with the error message returned instead of raised."""
    try:
        return compile_constraints(spec), None
    except ConstraintsError as exc:
        return NO_CONSTRAINTS, str(exc)
