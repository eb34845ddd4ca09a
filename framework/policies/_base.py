"""The offer-policy interface: the framework's second-level scheduling.

A policy receives the offers of one ``resourceOffers`` callback and the tasks waiting to launch,
and answers which tasks to launch on which offer and how long to refuse the rest. It must be a
pure decision: it neither calls the driver nor mutates the requests.

Thread safety: the scheduler calls a policy from the pymesos IO thread only.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

from framework.offers import OfferView
from framework.spec import TaskResources
from localmesos.resources import Resources


@dataclass(frozen=True)
class LaunchRequest:
    """A task waiting for resources: AppCore or a trial."""

    key: str
    """``appcore`` or ``trial-NNNN``."""
    resources: TaskResources
    ports: int = 0
    priority: int = 0
    trial_number: int | None = None


@dataclass
class Plan:
    """A policy's answer for one batch of offers."""

    launches: dict[str, list[tuple[LaunchRequest, Resources]]] = field(default_factory=dict)
    """Offer id → the requests to launch on it with the resources each claims."""
    refuse_seconds: dict[str, float] = field(default_factory=dict)
    """Offer id → the decline filter for offers not launched on (default: ``decline_seconds``)."""


class OfferPolicy(abc.ABC):
    """Decides which offers to accept for which waiting tasks.

    Args:
        decline_seconds: the decline filter for an offer that no waiting task fits.
    """

    name: str = ""

    def __init__(self, decline_seconds: float = 5.0) -> None:
        self.decline_seconds = decline_seconds

    @abc.abstractmethod
    def plan(self, offers: Sequence[OfferView], requests: Sequence[LaunchRequest]) -> Plan:
        """Assign waiting requests (in priority order) to offers."""
