"""Offer policies behind one interface, chosen by name (``--offer-policy``).

``fifo`` accepts the first fitting offer for the oldest waiting task (the paper's baseline);
``dynamic`` is the paper's dynamic priority strategy and ``dynamic-plus`` an improved variant
(:mod:`framework.policies.dynamic`, docs/dynamic-priority.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from framework.policies._base import LaunchRequest
from framework.policies._base import OfferPolicy
from framework.policies._base import Plan
from framework.policies._base import PolicySetting
from framework.policies._base import PolicySettingsError
from framework.policies.dynamic import DynamicPriorityPlusPolicy
from framework.policies.dynamic import DynamicPriorityPolicy
from framework.policies.fifo import FifoPolicy
from framework.spec import TaskResources


__all__ = [
    "POLICIES",
    "DynamicPriorityPlusPolicy",
    "DynamicPriorityPolicy",
    "FifoPolicy",
    "LaunchRequest",
    "OfferPolicy",
    "Plan",
    "PolicySetting",
    "PolicySettingsError",
    "create_policy",
]

POLICIES: dict[str, type[OfferPolicy]] = {
    FifoPolicy.name: FifoPolicy,
    DynamicPriorityPolicy.name: DynamicPriorityPolicy,
    DynamicPriorityPlusPolicy.name: DynamicPriorityPlusPolicy,
}


def create_policy(
    name: str,
    settings: Mapping[str, str] | None = None,
    *,
    runner: TaskResources | None = None,
) -> OfferPolicy:
    """The policy called ``name``; the error lists the valid names.

    Args:
        name: a key of :data:`POLICIES`.
        settings: the policy's settings (``--priority-setting``), as strings.
        runner: the job's trial resources.

    Raises:
        ValueError: an unknown name (listing the valid ones), or a :class:`PolicySettingsError`.
    """
    try:
        cls = POLICIES[name]
    except KeyError:
        raise ValueError(
            f"unknown offer policy {name!r}; valid policies: {', '.join(sorted(POLICIES))}"
        ) from None
    return cls(settings=dict(settings or {}), runner=runner)
