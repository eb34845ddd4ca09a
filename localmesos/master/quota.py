"""Quota of roles: guarantees and limits (Mesos 1.11's ``QuotaConfig``), their validation and
what a role consumes of them.

As apache/mesos ``src/master/quota.cpp`` (``quota::validate``), ``src/master/quota_handler.cpp``
(``QuotaHandler::update``, ``status``) and ``src/master/allocator/mesos/hierarchical.cpp``
(``Role::quotaOfferedOrConsumed``):

* A ``QuotaConfig`` names a (top-level) role and maps scalar resource names to
  ``guarantees`` and ``limits``; an empty config is the default quota (no guarantee, no
  limit) and removes the role's quota.
* A role *consumes* quota with its reservations (allocated or not) and with the unreserved,
  allocated or offered scalars of its frameworks (``quotaOfferedOrConsumed``).
* UPDATE_QUOTA is refused (400, ``Invalid QuotaConfig: ...``) for a bad role, a nested role,
  values that are negative, not finite or too large, guarantees above limits, limits below
  what the role consumes and guarantees above the cluster's capacity -- the last two unless
  ``force`` is set.

The deprecated SET_QUOTA and REMOVE_QUOTA are served too (:mod:`localmesos.master.quota_legacy`).

The master keeps one :class:`Quota` per role with a quota (the ``quota`` part,
:class:`localmesos.master.quota_master.QuotaMaster`); the allocator honours it
(:mod:`localmesos.master.allocator`).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
import logging
import math
from typing import TYPE_CHECKING
from typing import Any

from disauto.common.resources import UNRESERVED
from disauto.common.resources import RoleResources
from disauto.common.resources import is_subrole
from disauto.localmesos.master import validation


if TYPE_CHECKING:
    from disauto.localmesos.master.records import AgentRecord
    from disauto.localmesos.master.records import FrameworkRecord

logger = logging.getLogger("disauto.localmesos.master")

Quantities = dict[str, float]
#: ``quota::validate``'s largest values: 1 exabyte of mem/disk (in MB), 1 trillion else.
_EXABYTE_MB = 1024.0**4
_OTHER_LIMIT = 1000.0**4


@dataclass(frozen=True)
class Quota:
    """A role's quota: guaranteed and limiting quantities of scalar resources by name."""

    guarantees: Mapping[str, float] = field(default_factory=dict)
    limits: Mapping[str, float] = field(default_factory=dict)

    @property
    def is_default(self) -> bool:
        return not self.guarantees and not self.limits

    def config(self, role: str) -> dict[str, Any]:
        """The ``QuotaConfig`` JSON (empty maps left out, as Mesos writes them)."""
        out: dict[str, Any] = {"role": role}
        if self.guarantees:
            out["guarantees"] = {k: {"value": v} for k, v in sorted(self.guarantees.items())}
        if self.limits:
            out["limits"] = {k: {"value": v} for k, v in sorted(self.limits.items())}
        return out


def subtract(have: Mapping[str, float], take: Mapping[str, float]) -> Quantities:
    """``have - take`` per name, floored at 0 and the zeros dropped (``ResourceQuantities``)."""
    out = {name: value - take.get(name, 0.0) for name, value in have.items()}
    return {name: value for name, value in out.items() if value > 1e-9}


def add(*parts: Mapping[str, float]) -> Quantities:
    out: Quantities = {}
    for part in parts:
        for name, value in part.items():
            out[name] = out.get(name, 0.0) + value
    return out


def quantities_str(values: Mapping[str, float]) -> str:
    """Mesos' ``ResourceQuantities`` text: ``cpus:1; mem:64`` (``{}`` when empty)."""
    if not values:
        return "{}"
    return "; ".join(f"{name}:{value:g}" for name, value in sorted(values.items()))


def _map_str(values: Mapping[str, float]) -> str:
    return "{ " + ", ".join(f"{k}: {v:g}" for k, v in sorted(values.items())) + " }"


# -- validation -------------------------------------------------------------------------------


def _scalars(config: Mapping[str, Any], key: str) -> Quantities:
    """A ``map<string, Value.Scalar>`` of a converted config (values already numbers)."""
    return {name: float(value["value"]) for name, value in (config.get(key) or {}).items()}


def config_error(config: Mapping[str, Any]) -> str | None:
    """``quota::validate`` of one ``QuotaConfig``: the error, or None."""
    role = config.get("role")
    if not role:
        return "'QuotaConfig.role' must be set"
    error = validation.validate_role(str(role))
    if error is not None:
        return f"Invalid 'QuotaConfig.role': {error}"
    guarantees, limits = _scalars(config, "guarantees"), _scalars(config, "limits")
    for key, values in (("guarantees", guarantees), ("limits", limits)):
        for name, value in values.items():
            bound = _EXABYTE_MB if name in ("mem", "disk") else _OTHER_LIMIT
            if value > bound:
                unit = "1 exabyte" if name in ("mem", "disk") else "1 trillion"
                return (f"Invalid 'QuotaConfig.{key}': {{'{name}': {value:g}}} is invalid: "
                        f"values greater than {unit} ({bound:.0f}) are not supported")
    for key, values in (("guarantee", guarantees), ("limit", limits)):
        for name, value in values.items():
            problem = _scalar_error(value)
            if problem is not None:
                return f"Invalid {key} configuration {{'{name}': {value:g}}}: {problem}"
    over = {n: v for n, v in guarantees.items() if n in limits and v > limits[n] + 1e-9}
    if over:
        return (f"'QuotaConfig.guarantees' {_map_str(guarantees)} is not contained within "
                f"the 'QuotaConfig.limits' {_map_str(limits)}")
    return None


def _scalar_error(value: float) -> str | None:
    """``validateInputScalarValue``."""
    if math.isinf(value):
        return "Infinite values not supported"
    if math.isnan(value):
        return "NaN not supported"
    if value < 0:
        return "Negative values not supported"
    return None


def quota_of(config: Mapping[str, Any]) -> Quota:
    return Quota(_scalars(config, "guarantees"), _scalars(config, "limits"))


# -- consumption ------------------------------------------------------------------------------


def consumed(
    role: str,
    agents: Iterable[AgentRecord],
    frameworks: Iterable[FrameworkRecord],
    *,
    offered: bool = False,
) -> Quantities:
    """What ``role`` (and its subroles) consumes of its quota: its reservations on every
    agent, and the unreserved scalars allocated to it (``RoleResourceBreakdown::
    consumedQuota``), or allocated or offered (``offered``: the allocator's
    ``quotaOfferedOrConsumed``)."""
    total = RoleResources()
    for agent in agents:
        for reserved_role, resources in agent.total.by_role().items():
            if reserved_role != UNRESERVED and is_subrole(reserved_role, role):
                total = total + RoleResources({reserved_role: resources})
    for fw in frameworks:
        for held_role, resources in fw.held_by_role(offered=offered).items():
            if is_subrole(held_role, role):
                total = total + RoleResources.unreserved(resources.reserved_for(UNRESERVED))
    return {name: value for name, value in total.scalars.items() if value > 0}
