"""FIFO: accept the first fitting offer for the oldest waiting task (the paper's baseline)."""

from __future__ import annotations

from collections.abc import Sequence

from disauto.common.resources import Resources
from disauto.framework._offers import OfferView
from disauto.framework._offers import fit
from disauto.framework.policies._base import LaunchRequest
from disauto.framework.policies._base import OfferPolicy
from disauto.framework.policies._base import Plan


class FifoPolicy(OfferPolicy):
    """Launch every waiting task that fits, in order, on the first offer it fits.

    CPU-only tasks try agents without GPUs first, so GPUs stay free for tasks that need them
    (as Mesos recommends); GPU tasks only go where GPUs are offered.
    """

    NAME = "fifo"

    def plan(self, offers: Sequence[OfferView], requests: Sequence[LaunchRequest]) -> Plan:
        result = Plan()
        left: dict[str, Resources] = {offer.id: offer.available for offer in offers}
        for request in requests:
            wants_gpus = request.resources.gpus > 0
            ordered = sorted(offers, key=lambda o: o.has_gpus != wants_gpus)
            for offer in ordered:
                if wants_gpus and not offer.has_gpus:
                    continue
                claim = fit(left[offer.id], request.resources, request.ports)
                if claim is None:
                    continue
                left[offer.id] = left[offer.id] - claim
                result.launches.setdefault(offer.id, []).append((request, claim))
                break
        for offer in offers:
            if offer.id not in result.launches:
                result.refuse_seconds[offer.id] = self.decline_seconds
        return result
