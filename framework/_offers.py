"""Pure functions that fit tasks into Mesos offers, and what a job may use of an offer.

An offer holds unreserved resources and, for a job subscribed with roles (``--role``), the
resources reserved for them (Mesos 1.11 offers a role what is reserved for it or for a role
above it; apache/mesos ``src/master/allocator/mesos/hierarchical.cpp``). :class:`OfferView`
keeps them apart as *pools*, one per reservation, each with the exact reservation fields the
offer carried (post-refinement ``reservations`` stacks, or pre-refinement ``role`` /
``reservation``), so that a task can name the pool it draws from
(``framework/_offer_claims.py``); the policies see the sum, ``available``.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
import json
import random
from typing import Any

from disauto.common.resources import ResourceError
from disauto.common.resources import Resources
from disauto.framework._roles import STAR
from disauto.framework._roles import usable_by
from disauto.framework._spec import TaskResources


RESERVATION_FIELDS = ("role", "reservation", "reservations")
"""The fields of a JSON Resource that say whose it is (Resource Format, mesos.proto)."""


@dataclass(frozen=True)
class Pool:
    """Offered resources that share one reservation (or none)."""

    reserved_for: str
    """The role they are reserved for (the last of a ``reservations`` stack, or the
    pre-refinement ``role``); ``*`` for unreserved ones."""
    fields: Mapping[str, Any]
    """Their reservation fields exactly as offered (empty for unreserved post-refinement
    resources): a task that uses them sends them back as they came."""
    resources: Resources


@dataclass(frozen=True)
class OfferView:
    """What the offer policies see of one Mesos offer."""

    id: str
    agent_id: str
    hostname: str
    available: Resources
    raw: Mapping[str, Any]
    role: str = STAR
    """The role the offer is allocated to (``allocation_info.role``; ``*`` when absent)."""
    pools: tuple[Pool, ...] = ()
    """``available`` by reservation; empty: all of it unreserved (a view made in a test)."""

    @property
    def has_gpus(self) -> bool:
        return self.available.scalar("gpus") > 0

    @classmethod
    def from_offer(cls, offer: Mapping[str, Any],
                   roles: Sequence[str] = (STAR,)) -> OfferView:
        """Read a Mesos JSON Offer made to a job subscribed with ``roles``: its unreserved
        resources and those reserved for one of its roles (or a role above one), by pool.
        Resources we cannot parse are ignored, not fatal: an offer with one offers nothing."""
        role = str((offer.get("allocation_info") or {}).get("role") or STAR)
        grouped: dict[str, tuple[str, dict[str, Any], list[Mapping[str, Any]]]] = {}
        for res in offer.get("resources", []):
            if not isinstance(res, Mapping) or not _plain(res):
                continue
            reserved_for = reservation_role(res)
            if reserved_for != STAR and not usable_by(reserved_for, (*roles, role)):
                continue
            fields = {key: res[key] for key in RESERVATION_FIELDS if key in res}
            key = json.dumps(fields, sort_keys=True)
            grouped.setdefault(key, (reserved_for, fields, []))[2].append(res)
        try:
            pools = tuple(Pool(reserved_for, fields, Resources.from_json(items))
                          for reserved_for, fields, items in grouped.values())
        except ResourceError:
            pools = ()
        available = Resources()
        for pool in pools:
            available = available + pool.resources
        return cls(
            id=str(offer["id"]["value"]),
            agent_id=str(offer["agent_id"]["value"]),
            hostname=str(offer.get("hostname", "")),
            available=available,
            raw=offer,
            role=role,
            pools=pools,
        )


def reservation_role(resource: Mapping[str, Any]) -> str:
    """The role a JSON Resource is reserved for, ``*`` when unreserved: the last of its
    ``reservations`` stack (post-refinement format), else its ``role`` (pre-refinement)."""
    stack = resource.get("reservations") or []
    if stack:
        last = stack[-1]
        return str(last.get("role") or STAR) if isinstance(last, Mapping) else STAR
    return str(resource.get("role") or STAR)


def _plain(resource: Mapping[str, Any]) -> bool:
    """Whether a job may use a resource as plain cpus/mem/disk/gpus/ports: not revocable
    (RevocableInfo has no fields, so a revocable resource carries ``"revocable": {}``: test
    presence, not truthiness), not shared, not of a resource provider, and not a disk with
    a source or a persistent volume (``disk`` info: those must be taken whole or by id)."""
    return not any(key in resource for key in ("revocable", "shared", "provider_id", "disk"))


def fit(available: Resources, need: TaskResources, ports: int = 0,
        rng: random.Random | None = None) -> Resources | None:
    """The exact resources to claim for ``need`` (+ ``ports`` ports), or None if it doesn't fit.

    Ports are one block drawn at random from the offered ranges (``rng``; by default the
    system's randomness), not the lowest: a port that another process on the agent took (the
    offer cannot know) is then unlikely to be drawn again when the task is launched anew.
    """
    scalars = {"cpus": need.cpus, "mem": need.mem_mb}
    if need.gpus:
        scalars["gpus"] = float(need.gpus)
    if need.disk_mb:
        scalars["disk"] = need.disk_mb
    claim = Resources(scalars)
    if not available.contains(claim):
        return None
    if ports:
        chosen = _port_block(available.ranges("ports"), ports, rng or _RANDOM)
        if chosen is None:
            return None
        claim = claim + Resources(ranges={"ports": chosen})
    return claim


_RANDOM = random.SystemRandom()


def _port_block(ranges: list[tuple[int, int]], count: int,
                rng: random.Random) -> list[tuple[int, int]] | None:
    """``count`` ports: a contiguous block at a random place in one range when one is large
    enough, else the lowest ports across ranges; None when there are too few."""
    roomy = [(begin, end) for begin, end in ranges if end - begin + 1 >= count]
    if roomy:
        weights = [end - begin + 2 - count for begin, end in roomy]
        begin, end = rng.choices(roomy, weights=weights)[0]
        start = rng.randint(begin, end - count + 1)
        return [(start, start + count - 1)]
    chosen: list[tuple[int, int]] = []
    left = count
    for begin, end in ranges:
        take = min(left, end - begin + 1)
        chosen.append((begin, begin + take - 1))
        left -= take
        if left == 0:
            return chosen
    return None
