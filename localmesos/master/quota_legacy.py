"""The deprecated quota calls a Mesos 1.11 master still serves: SET_QUOTA and REMOVE_QUOTA.

As apache/mesos ``src/master/quota_handler.cpp`` (``QuotaHandler::set``/``_set``/``__set``,
``remove``/``_remove``/``__remove``), ``src/master/quota.cpp`` (``createQuotaInfo``,
``quota::validation::quotaInfo``, ``Quota::Quota(const QuotaInfo&)``) and
``src/common/resources.cpp`` (``Resources::validate``, ``operator<<(Resource)``):

* SET_QUOTA's ``QuotaRequest`` (``role``, ``guarantee``: scalar ``Resource``s, ``force``) sets a
  role's quota once: its guarantee is its limit too ("For legacy `QuotaInfo`, guarantee also
  acts as limit"). Refused (400 ``Failed to validate set quota request: ...``) for an invalid
  resource, a missing or invalid role, an empty guarantee, a reserved, disk, revocable,
  non-scalar or repeated resource, a role that has quota already, a guarantee its parent
  role's does not contain; (400) for a nested role; (409 ``Quota guarantees overcommit the
  cluster ...``) for guarantees above the cluster's capacity unless ``force``. Then offers are
  rescinded, agent by agent, until what came back holds the guarantee and as many agents as
  the role has active frameworks were visited (``rescindOffers``).
* REMOVE_QUOTA (``role``) sets the role's quota back to the default; 400 ``Failed to remove
  quota: Role '<role>' has no quota set`` when it has none. The v1 call skips the role checks
  of the old ``DELETE /quota/<role>`` endpoint, as Mesos' ``remove(call)`` does.

The functions here are pure (the request against the quotas and capacity it is given); the
master's side is :class:`localmesos.master.quota.QuotaMaster`.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from disauto.localmesos.master import validation
from disauto.localmesos.protocol.protojson import CallError


SET_ERROR = "Failed to validate set quota request: "


def _value_str(resource: Mapping[str, Any]) -> str:
    """A resource's value as ``operator<<`` writes it: ``1``, ``[1-2, 4-4]``, ``{a, b}``."""
    kind = resource.get("type")
    if kind == "RANGES":
        ranges = (resource.get("ranges") or {}).get("range") or []
        return "[" + ", ".join(f"{r.get('begin')}-{r.get('end')}" for r in ranges) + "]"
    if kind == "SET":
        return "{" + ", ".join((resource.get("set") or {}).get("item") or []) + "}"
    return f"{float((resource.get('scalar') or {}).get('value', 0.0)):g}"


def resource_str(resource: Mapping[str, Any]) -> str:
    """``operator<<(Resource)``: ``cpus:1``, ``cpus(allocated: ml):1``, ``cpus{REV}:1``."""
    text = str(resource.get("name", ""))
    if resource.get("allocation_info"):
        text += f"(allocated: {resource['allocation_info'].get('role', '')})"
    if resource.get("reservations"):
        parts = ",".join(f"({reservation})" for reservation in resource["reservations"])
        text += f"(reservations: [{parts}])"
    if resource.get("disk"):
        text += f"[{resource['disk']}]"
    if resource.get("revocable") is not None:
        text += "{REV}"
    if resource.get("shared") is not None:
        text += "<SHARED>"
    return f"{text}:{_value_str(resource)}"


def resource_error(resource: Mapping[str, Any]) -> str | None:
    """``Resources::validate`` of one resource (its name, value and legacy role): the error."""
    if not resource.get("name"):
        return "Empty resource name"
    kind = resource.get("type")
    shapes = {"SCALAR": "scalar", "RANGES": "ranges", "SET": "set"}
    if kind not in shapes:
        return "Unsupported resource type"
    if any((key in resource) != (key == shapes[kind]) for key in shapes.values()):
        return f"Invalid {shapes[kind]} resource"
    if kind == "SCALAR" and float(resource["scalar"].get("value", 0.0)) < 0:
        return "Invalid scalar resource: value <= 0"
    if not resource.get("reservations"):
        return validation.validate_role(str(resource.get("role", "*")))
    return None


def quota_info_error(role: str, guarantee: Sequence[Mapping[str, Any]]) -> str | None:
    """``quota::validation::quotaInfo`` of the request's ``QuotaInfo`` (its resources in the
    reservation-refinement format first: a legacy ``role`` other than ``*`` is a
    reservation, ``upgradeResources``)."""
    error = validation.validate_role(role)
    if error is not None:
        return f"QuotaInfo with invalid role: {error}"
    if not guarantee:
        return "QuotaInfo with empty 'guarantee'"
    names: set[str] = set()
    for resource in guarantee:
        if resource.get("reservations") or resource.get("role", "*") != "*":
            return "QuotaInfo must not contain any ReservationInfo"
        if resource.get("disk"):
            return "QuotaInfo must not contain DiskInfo"
        if resource.get("revocable") is not None:
            return "QuotaInfo must not contain RevocableInfo"
        if resource.get("type") != "SCALAR":
            return "QuotaInfo must not include non-scalar resources"
        name = str(resource["name"])
        if name in names:
            return f"QuotaInfo contains duplicate resource name '{name}'"
        names.add(name)
    return None


def guarantees_of(guarantee: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``ResourceQuantities::fromScalarResources``: the quantities by name (zeros dropped)."""
    out: dict[str, float] = {}
    for resource in guarantee:
        out[str(resource["name"])] = out.get(str(resource["name"]), 0.0) + float(
            resource["scalar"].get("value", 0.0))
    return {name: value for name, value in out.items() if value > 0}


def _quantities_str(values: Mapping[str, float]) -> str:
    if not values:
        return "{}"
    return "; ".join(f"{name}:{value:g}" for name, value in sorted(values.items()))


def tree_error(role: str, guarantees: Mapping[str, float],
               existing: Mapping[str, Mapping[str, float]]) -> str | None:
    """``QuotaTree::validate`` with the request added: each parent role's guarantees must
    contain the sum of its children's. Existing quotas are of top-level roles, so only the
    request's ancestors can break it, the nearest first (the tree is checked depth first)."""
    parts = role.split("/")
    child = dict(guarantees)
    for depth in range(len(parts) - 1, 0, -1):
        parent = "/".join(parts[:depth])
        own = dict(existing.get(parent, {}))
        if any(value > own.get(name, 0.0) + 1e-9 for name, value in child.items()):
            return (f"Invalid quota configuration. Parent role '{parts[depth - 1]}' with "
                    f"guarantees ({_quantities_str(own)}) does not contain the sum of its "
                    f"children's guarantees ({_quantities_str(child)})")
        child = own
    return None


def check_set(request: Mapping[str, Any], quotas: Mapping[str, Mapping[str, float]]) -> None:
    """``QuotaHandler::_set``'s checks of a ``QuotaRequest``, before the capacity's.

    Args:
        request: the converted ``QuotaRequest``.
        quotas: the guarantees of the roles that have quota, by role.

    Raises:
        CallError: 400 with Mesos' message.
    """
    guarantee = list(request.get("guarantee") or [])
    for resource in guarantee:
        error = resource_error(resource)
        if error is not None:
            raise CallError(f"{SET_ERROR}QuotaInfo with invalid resource: Resource "
                            f"'{resource_str(resource)}' is invalid: {error}")
    role = str(request.get("role", ""))
    error = quota_info_error(role, guarantee)
    if error is not None:
        raise CallError(SET_ERROR + error)
    if role in quotas:
        raise CallError(f"{SET_ERROR}Cannot set quota for role '{role}' which already has "
                        "quota")
    error = tree_error(role, guarantees_of(guarantee), quotas)
    if error is not None:
        raise CallError(SET_ERROR + error)
    if "/" in role:
        raise CallError(f"Setting quota on nested role '{role}' is not supported yet")


def check_capacity(guarantees: Mapping[str, Mapping[str, float]],
                   capacity: Mapping[str, float]) -> None:
    """``overcommitCheck``: the top-level roles' guarantees (the request's included) within
    the agents' total scalars.

    Raises:
        CallError: 409 ``Quota guarantees overcommit the cluster ...``.
    """
    total: dict[str, float] = {}
    for role, values in guarantees.items():
        if "/" in role:
            continue
        for name, value in values.items():
            total[name] = total.get(name, 0.0) + value
    if any(value > capacity.get(name, 0.0) + 1e-9 for name, value in total.items()):
        raise CallError(
            "Quota guarantees overcommit the cluster (use 'force' to bypass this check): "
            f"Total quota guarantees '{_quantities_str(total)}' exceed cluster capacity "
            f"'{_quantities_str({n: v for n, v in capacity.items() if v > 0})}'", 409)
