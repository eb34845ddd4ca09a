"""Offer policies behind one interface, chosen by name (``--offer-policy``).

``fifo`` accepts the first fitting offer for the oldest waiting task (the paper's baseline);
``dynamic`` is the paper's dynamic priority strategy and ``dynamic-plus`` an improved variant
(:mod:`framework.policies.dynamic`, docs/dynamic-priority.md); ``deadline`` places by each job's
deadline after EdgeFlow (:mod:`framework.policies.deadline`, docs/deadlines.md).

Each policy's module is imported when the policy is first looked up in :data:`POLICIES` (or its
class first read from this package), as the search algorithms are: a job imports the policy it
runs, not every policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from disauto.common.registry import Registry
from disauto.common.registry import lazy_attributes
from disauto.framework._spec import TaskResources
from disauto.framework.policies._base import JobProgress
from disauto.framework.policies._base import LaunchRequest
from disauto.framework.policies._base import OfferPolicy
from disauto.framework.policies._base import Plan
from disauto.framework.policies._base import PolicySetting
from disauto.framework.policies._base import PolicySettingsError


if TYPE_CHECKING:
    from disauto.framework._agent_measures import AgentMeasures
    from disauto.framework._agent_measures import AgentRecord
    from disauto.framework._offers import OfferView
    from disauto.framework.policies.deadline import DeadlinePolicy
    from disauto.framework.policies.deadline import Standing
    from disauto.framework.policies.dynamic import DynamicPriorityPlusPolicy
    from disauto.framework.policies.dynamic import DynamicPriorityPolicy
    from disauto.framework.policies.fifo import FifoPolicy
    from disauto.framework.policies.placement import PLACEMENT_SETTINGS


__all__ = [
    "PLACEMENT_SETTINGS",
    "POLICIES",
    "AgentMeasures",
    "AgentRecord",
    "DeadlinePolicy",
    "DynamicPriorityPlusPolicy",
    "DynamicPriorityPolicy",
    "FifoPolicy",
    "JobProgress",
    "LaunchRequest",
    "OfferPolicy",
    "OfferView",
    "Plan",
    "PolicySetting",
    "PolicySettingsError",
    "Standing",
    "TaskResources",
    "UnknownPolicyError",
    "create_policy",
]


class UnknownPolicyError(ValueError):
    """No offer policy has the requested name (the message lists the valid ones)."""


POLICIES: Registry[OfferPolicy] = Registry("offer policy", "policies", {
    "fifo": "disauto.framework.policies.fifo:FifoPolicy",
    "dynamic": "disauto.framework.policies.dynamic:DynamicPriorityPolicy",
    "dynamic-plus": "disauto.framework.policies.dynamic:DynamicPriorityPlusPolicy",
    "deadline": "disauto.framework.policies.deadline:DeadlinePolicy",
}, error=UnknownPolicyError)
"""Policy name to its class, imported on first use."""

__getattr__, __dir__ = lazy_attributes(__name__, {
    "FifoPolicy": "disauto.framework.policies.fifo:FifoPolicy",
    "DynamicPriorityPolicy": "disauto.framework.policies.dynamic:DynamicPriorityPolicy",
    "DynamicPriorityPlusPolicy": "disauto.framework.policies.dynamic:DynamicPriorityPlusPolicy",
    "DeadlinePolicy": "disauto.framework.policies.deadline:DeadlinePolicy",
    "Standing": "disauto.framework.policies.deadline:Standing",
    # What a policy reads: the offers as the job sees them, the agents' measures, and the
    # placement settings every policy takes.
    "OfferView": "disauto.framework._offers:OfferView",
    "AgentMeasures": "disauto.framework._agent_measures:AgentMeasures",
    "AgentRecord": "disauto.framework._agent_measures:AgentRecord",
    "PLACEMENT_SETTINGS": "disauto.framework.policies.placement:PLACEMENT_SETTINGS",
})


def create_policy(
    name: str,
    settings: Mapping[str, str] | None = None,
    *,
    runner: TaskResources | None = None,
) -> OfferPolicy:
    """The policy called ``name``; the error lists the valid names.

    Args:
        name: a key of :data:`POLICIES`.
        settings: the policy's settings (``--policy-setting``), as strings.
        runner: the job's trial resources.

    Raises:
        UnknownPolicyError: an unknown name (listing the valid ones).
        PolicySettingsError: an unknown or invalid setting.
    """
    return POLICIES[name](settings=dict(settings or {}), runner=runner)
