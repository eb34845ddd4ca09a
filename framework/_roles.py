"""Mesos roles as a job uses them: which names are valid, and which reservations are its own.

A role is ``*`` (the default role) or a path of components (``ml``, ``eng/ml``), as Mesos 1.11
checks it (apache/mesos ``src/common/roles.cpp`` ``validate``). A resource reserved for a role
may be used by that role and by the roles below it: a reservation for ``eng`` is offered to
``eng/ml`` too (``Resources::isAllocatableTo`` in ``src/common/resources.cpp``); unreserved
resources are every role's.
"""

from __future__ import annotations

from collections.abc import Iterable


STAR = "*"
"""The default role: what a framework without ``--role`` subscribes with."""

_INVALID_CHARACTERS = frozenset("\t\n\x0b\x0c\r \x7f")
"""Whitespace and DEL: ``roles.cpp``'s ``INVALID_CHARACTERS``."""


def role_problem(role: str) -> str:
    """Why ``role`` is not a valid Mesos role ("" when it is)."""
    if role == STAR:
        return ""
    if not role:
        return "role names cannot be the empty string"
    if role.startswith("/"):
        return f"role {role!r} cannot start with a slash"
    if role.endswith("/"):
        return f"role {role!r} cannot end with a slash"
    if "//" in role:
        return f"role {role!r} cannot contain two adjacent slashes"
    for component in role.split("/"):
        if component in (".", ".."):
            return f"role {role!r} cannot include {component!r} as a component"
        if component == STAR:
            return f"role {role!r} cannot include '*' as a component"
        if component.startswith("-"):
            return f"role component {component!r} is invalid because it starts with a dash"
        if any(char in _INVALID_CHARACTERS for char in component):
            return (f"role component {component!r} is invalid because it contains whitespace "
                    "or DEL")
    return ""


def allocatable_to(reserved_for: str, role: str) -> bool:
    """Whether a resource reserved for ``reserved_for`` may be allocated to ``role``: the same
    role or one below it (``*`` means unreserved: every role's)."""
    if reserved_for == STAR or reserved_for == role:
        return True
    return role != STAR and role.startswith(reserved_for + "/")


def usable_by(reserved_for: str, roles: Iterable[str]) -> bool:
    """Whether a job subscribed with ``roles`` may use a resource reserved for
    ``reserved_for``."""
    return any(allocatable_to(reserved_for, role) for role in roles)
