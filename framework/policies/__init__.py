"""Offer policies behind one interface, chosen by name (``--offer-policy``)."""

from __future__ import annotations

from framework.policies._base import LaunchRequest
from framework.policies._base import OfferPolicy
from framework.policies._base import Plan
from framework.policies.fifo import FifoPolicy


__all__ = ["POLICIES", "FifoPolicy", "LaunchRequest", "OfferPolicy", "Plan", "create_policy"]

POLICIES: dict[str, type[OfferPolicy]] = {FifoPolicy.name: FifoPolicy}


def create_policy(name: str) -> OfferPolicy:
    """The policy called ``name``; the error lists the valid names."""
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(
            f"unknown offer policy {name!r}; valid policies: {', '.join(sorted(POLICIES))}"
        ) from None
