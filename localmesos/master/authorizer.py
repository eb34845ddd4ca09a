"""The master's local authorizer: Mesos' ACLs (``--acls``) and what they allow.

The ACL file is Mesos' JSON (``include/mesos/authorizer/acls.proto``); these of its ACLs are
enforced, as apache/mesos ``src/authorizer/local/authorizer.cpp`` decides them:

* ``permissive`` (default true): what a request that no ACL matches gets;
* ``register_frameworks`` (``principals`` → ``roles``): a SUBSCRIBE needs every role of its
  FrameworkInfo allowed (``REGISTER_FRAMEWORK``);
* ``run_tasks`` (``principals`` → ``users``): a task's launch needs its user allowed (the
  command's ``user``, else its executor's, else the framework's; ``RUN_TASK``);
* ``view_roles`` (``principals`` → ``roles``): ``/master/state`` and ``/master/slaves`` show
  only the reservations of roles the reader may view (``VIEW_ROLE``).

The subject is the framework's principal (``FrameworkInfo.principal``) for the first two and
the authenticated HTTP principal for the last; none is Mesos' ``ANY``. Each entity is ``{"values":
[...]}`` (``SOME``), ``{"type": "ANY"}`` or ``{"type": "NONE"}``; the first ACL whose subject and
object *match* decides, by whether they are *allowed* (the tables of ``matches`` and
``allows``). A role ACL ending in ``/%`` (``eng/%``) covers every role below it.

Any other ACL of Mesos' file is refused with one line: it would not be enforced here.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any


SOME, ANY, NONE = "SOME", "ANY", "NONE"
#: The ACLs enforced, each with the name of its object entity.
ENFORCED = {"register_frameworks": "roles", "run_tasks": "users", "view_roles": "roles"}


class AclError(ValueError):
    """An ACL file that is not Mesos' format, or holds ACLs not enforced here."""


@dataclass(frozen=True)
class Entity:
    """An ``ACL.Entity``: ``SOME`` of ``values``, ``ANY`` or ``NONE``."""

    kind: str = SOME
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rule:
    """One ACL: its subjects (principals) and objects (roles or users)."""

    subjects: Entity
    objects: Entity

    @property
    def recursive(self) -> bool:
        """A role ACL of one value ``R/%``: every role below ``R``."""
        return len(self.objects.values) == 1 and self.objects.values[0].endswith("/%")


def _matches(request: Entity, acl: Entity) -> bool:
    """``matches`` of authorizer.cpp: does the ACL apply to the request at all?"""
    if request.kind == NONE:
        return acl.kind == NONE
    if request.kind == ANY:
        return acl.kind in (ANY, NONE)
    return acl.kind in (ANY, NONE) or set(request.values) <= set(acl.values)


def _allows(request: Entity, acl: Entity) -> bool:
    """``allows`` of authorizer.cpp: does the matching ACL grant it?"""
    if request.kind == NONE:
        return acl.kind == NONE
    if request.kind == ANY:
        return acl.kind == ANY
    if acl.kind == ANY:
        return True
    if acl.kind == NONE:
        return False
    return set(request.values) <= set(acl.values)


@dataclass(frozen=True)
class Acls:
    """The ACLs of one master; the empty default allows everything (Mesos without
    ``--acls``)."""

    permissive: bool = True
    register_frameworks: tuple[Rule, ...] = ()
    run_tasks: tuple[Rule, ...] = ()
    view_roles: tuple[Rule, ...] = field(default=())

    def _approved(self, rules: Sequence[Rule], principal: str | None, obj: str | None,
                  *, hierarchical: bool) -> bool:
        subject = Entity(ANY) if principal is None else Entity(SOME, (principal,))
        target = Entity(ANY) if obj is None else Entity(SOME, (obj,))
        for rule in rules:
            if hierarchical and rule.recursive:
                if obj is not None and obj.startswith(rule.objects.values[0][:-1]) and \
                        _matches(subject, rule.subjects):
                    return _allows(subject, rule.subjects)
                continue
            if _matches(subject, rule.subjects) and _matches(target, rule.objects):
                return _allows(subject, rule.subjects) and _allows(target, rule.objects)
        return self.permissive

    def may_register(self, principal: str | None, roles: Iterable[str]) -> bool:
        """``REGISTER_FRAMEWORK``: may ``principal`` subscribe with all of ``roles``?"""
        return all(self._approved(self.register_frameworks, principal, role, hierarchical=True)
                   for role in roles)

    def may_run(self, principal: str | None, user: str) -> bool:
        """``RUN_TASK``: may ``principal`` launch a task as ``user``?"""
        return self._approved(self.run_tasks, principal, user, hierarchical=False)

    def may_view_role(self, principal: str | None, role: str) -> bool:
        """``VIEW_ROLE``: may ``principal`` see what is reserved for (or allocated to)
        ``role``?"""
        return self._approved(self.view_roles, principal, role, hierarchical=True)


def framework_roles(info: Mapping[str, Any]) -> list[str]:
    """A FrameworkInfo's roles as Mesos' ``getRoles`` reads them: ``roles`` with
    ``MULTI_ROLE``, else ``role`` (default ``*``)."""
    multi = any(isinstance(c, Mapping) and c.get("type") == "MULTI_ROLE"
                for c in info.get("capabilities") or [])
    if multi:
        return sorted({str(role) for role in info.get("roles") or []})
    return [str(info.get("role", "*"))]


def task_user(task: Mapping[str, Any], framework_info: Mapping[str, Any]) -> str:
    """The user a task runs as (``RUN_TASK``'s object): its command's, its executor's, or its
    framework's."""
    command = task.get("command") or {}
    if "user" in command:
        return str(command["user"])
    executor_command = (task.get("executor") or {}).get("command") or {}
    if "user" in executor_command:
        return str(executor_command["user"])
    return str(framework_info.get("user", ""))


def _entity(value: Any, where: str) -> Entity:
    if not isinstance(value, Mapping):
        raise AclError(f"{where}: expected an object like {{\"values\": [...]}} or "
                       '{"type": "ANY"}')
    kind = value.get("type", SOME)
    if kind not in (SOME, ANY, NONE):
        raise AclError(f"{where}.type: expected SOME, ANY or NONE, got {kind!r}")
    values = value.get("values", [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise AclError(f"{where}.values: expected a list of strings")
    return Entity(kind, tuple(values) if kind == SOME else ())


def parse_acls(data: Any) -> Acls:
    """Mesos' ACL JSON (``{"permissive": false, "register_frameworks": [...], ...}``).

    Raises:
        AclError: naming the part at fault, or an ACL that is not enforced here.
    """
    if not isinstance(data, Mapping):
        raise AclError("expected a JSON object of ACLs")
    unknown = sorted(set(data) - {"permissive", *ENFORCED})
    if unknown:
        raise AclError(f"{', '.join(unknown)}: not enforced by this cluster (only permissive, "
                       f"{', '.join(ENFORCED)}); refusing rather than ignoring it")
    permissive = data.get("permissive", True)
    if not isinstance(permissive, bool):
        raise AclError("permissive: expected true or false")
    lists: dict[str, tuple[Rule, ...]] = {}
    for name, objects in ENFORCED.items():
        items = data.get(name, [])
        if not isinstance(items, list):
            raise AclError(f"{name}: expected a list of ACLs")
        rules = []
        for index, item in enumerate(items):
            where = f"{name}[{index}]"
            if not isinstance(item, Mapping) or "principals" not in item or objects not in item:
                raise AclError(f"{where}: needs 'principals' and '{objects}'")
            rules.append(Rule(_entity(item["principals"], f"{where}.principals"),
                              _entity(item[objects], f"{where}.{objects}")))
        lists[name] = tuple(rules)
    return Acls(permissive, **lists)
