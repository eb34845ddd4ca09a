"""Refused-offer filters (``Filters.refuse_seconds`` of DECLINE and ACCEPT, and of the inverse
offers' ACCEPT_INVERSE_OFFERS and DECLINE_INVERSE_OFFERS), as apache/mesos
``src/master/allocator/mesos/hierarchical.cpp`` keeps them (``RefusedOfferFilter``,
``RefusedInverseOfferFilter``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from disauto.common.resources import Resources
from disauto.common.resources import RoleResources


#: Mesos ``Filters.refuse_seconds`` default.
DEFAULT_REFUSE_SECONDS = 5.0
#: Mesos caps refusal filters at one year (``src/master/allocator/mesos/hierarchical.cpp``).
MAX_REFUSE_SECONDS = 365 * 24 * 3600.0


def refuse_timeout(refuse_seconds: float | None, allocation_interval: float) -> float | None:
    """How long a refusal filter lives, or ``None`` for no filter.

    Mesos rules: absent or negative → the default 5 s; 0 → no filter; above 365 days → 365
    days; otherwise ``max(allocation_interval, refuse_seconds)`` so that a filter never expires
    before the next batch allocation (MESOS-4302).
    """
    if refuse_seconds is None or refuse_seconds < 0:
        seconds = DEFAULT_REFUSE_SECONDS
    else:
        seconds = refuse_seconds
    if seconds == 0:
        return None
    seconds = min(seconds, MAX_REFUSE_SECONDS)
    return max(allocation_interval, seconds)


@dataclass(frozen=True)
class _Filter:
    resources: RoleResources
    expires: float


class OfferFilters:
    """Refused-offer filters per (framework, role, agent).

    A filter matches a candidate offer when the refused resources contain it; it expires at its
    deadline, and REVIVE or removal of the framework clears it. Not thread-safe: the master
    calls it under its lock.
    """

    def __init__(self) -> None:
        self._filters: dict[tuple[str, str, str], list[_Filter]] = {}

    def add(
        self,
        framework_id: str,
        role: str,
        agent_id: str,
        resources: RoleResources | Resources,
        timeout: float,
        now: float,
    ) -> None:
        """Filter ``resources`` on ``agent_id`` for ``timeout`` seconds from ``now``."""
        resources = _roles(resources)
        if resources.is_empty():
            return
        key = (framework_id, role, agent_id)
        self._filters.setdefault(key, []).append(_Filter(resources, now + timeout))

    def is_filtered(
        self, framework_id: str, role: str, agent_id: str,
        resources: RoleResources | Resources, now: float,
    ) -> bool:
        """True when an unexpired filter for the key contains ``resources``."""
        key = (framework_id, role, agent_id)
        filters = self._filters.get(key)
        if not filters:
            return False
        resources = _roles(resources)
        alive = [f for f in filters if f.expires > now]
        if len(alive) != len(filters):
            if alive:
                self._filters[key] = alive
            else:
                del self._filters[key]
        return any(f.resources.contains(resources) for f in alive)

    def clear(self, framework_id: str, roles: Iterable[str] | None = None) -> None:
        """Drop the framework's filters (for ``roles`` only, when given)."""
        wanted = None if roles is None else set(roles)
        for key in [k for k in self._filters if k[0] == framework_id]:
            if wanted is None or key[1] in wanted:
                del self._filters[key]

    def active(self, now: float) -> dict[str, int]:
        """Unexpired filters per role (metric ``offer_filters/roles/<role>/active``)."""
        counts: dict[str, int] = {}
        for (_, role, _), filters in self._filters.items():
            alive = sum(1 for f in filters if f.expires > now)
            if alive:
                counts[role] = counts.get(role, 0) + alive
        return counts


def _roles(resources: RoleResources | Resources) -> RoleResources:
    if isinstance(resources, RoleResources):
        return resources
    return RoleResources.unreserved(resources)


def inverse_refuse_timeout(refuse_seconds: float | None) -> float | None:
    """How long a refused-inverse-offer filter lives (``updateInverseOffer``): absent or
    negative → 5 s, above 365 days → 365 days, 0 → no filter (no allocation-interval floor)."""
    if refuse_seconds is None or refuse_seconds < 0:
        return DEFAULT_REFUSE_SECONDS
    if refuse_seconds == 0:
        return None
    return min(refuse_seconds, MAX_REFUSE_SECONDS)


class InverseOfferFilters:
    """Refused inverse offers per (framework, agent): until then, no new inverse offer for
    that agent goes to that framework. Not thread-safe: used under the master's lock."""

    def __init__(self) -> None:
        self._until: dict[tuple[str, str], float] = {}

    def add(self, framework_id: str, agent_id: str, timeout: float | None, now: float) -> None:
        if timeout is not None:
            self._until[(framework_id, agent_id)] = now + timeout

    def is_filtered(self, framework_id: str, agent_id: str, now: float) -> bool:
        until = self._until.get((framework_id, agent_id))
        if until is not None and until <= now:
            del self._until[(framework_id, agent_id)]
            return False
        return until is not None

    def clear(self, *, framework_id: str | None = None, agent_id: str | None = None) -> None:
        """Drop the filters of a framework, of an agent (its unavailability changed), or both."""
        for key in list(self._until):
            if framework_id in (None, key[0]) and agent_id in (None, key[1]):
                del self._until[key]
