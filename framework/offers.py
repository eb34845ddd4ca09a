"""Pure functions that fit tasks into Mesos offers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import random
from typing import Any

from disauto.common.resources import ResourceError
from disauto.common.resources import Resources
from disauto.framework.spec import TaskResources


@dataclass(frozen=True)
class OfferView:
    """What the offer policies see of one Mesos offer."""

    id: str
    agent_id: str
    hostname: str
    available: Resources
    raw: Mapping[str, Any]

    @property
    def has_gpus(self) -> bool:
        return self.available.scalar("gpus") > 0

    @classmethod
    def from_offer(cls, offer: Mapping[str, Any]) -> OfferView:
        """Read a Mesos JSON Offer; resources we cannot parse are ignored, not fatal."""
        usable = []
        for res in offer.get("resources", []):
            # Only unreserved ("*") or role-less resources are ours to use. RevocableInfo has
            # no fields, so a revocable resource carries `"revocable": {}`: test presence, not
            # truthiness (an empty dict is falsy).
            if res.get("role", "*") != "*" or res.get("reservations") or "revocable" in res:
                continue
            usable.append(res)
        try:
            available = Resources.from_json(usable)
        except ResourceError:
            available = Resources()
        return cls(
            id=str(offer["id"]["value"]),
            agent_id=str(offer["agent_id"]["value"]),
            hostname=str(offer.get("hostname", "")),
            available=available,
            raw=offer,
        )


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
