"""The paper's dynamic priority strategy, framework side (Li, Lu, Sun 2019, §2.2).

AppCore turns search convergence into a priority ``P`` for each trial it submits (Algorithm 1,
:mod:`appcore.priority`; 0 is the highest). With priority ``P`` the framework "skips ``d``
resources Mesos allocates to it, so that they go to other frameworks' higher-priority tasks", and
"when it finds the cluster idle -- after several declines the offered resources did not
decrease -- it raises the job's priority". Two policies implement it:

``dynamic`` (:class:`DynamicPriorityPolicy`), the faithful one:

1. The job's priority is the priority of its first waiting trial (AppCore's ``P``), minus the
   priority the framework has won back on an idle cluster (``boost``, see 3):
   ``P_eff = max(0, P - boost)``.
2. Before accepting a fitting offer for a trial, the policy declines
   ``d = declines_per_level * P_eff`` fitting offers, each with a decline filter of
   ``decline_filter_seconds``: the master does not offer those resources to this framework for
   that long and offers them to the others. Declines are counted offer by offer since the last
   accepted one. AppCore itself is never delayed (its request has priority 0). An accepted offer
   takes as many waiting trials as fit (FIFO order), like the FIFO policy.
3. Idle test: the policy remembers what each agent offered when it declined it. When that
   agent's resources come back undiminished (the new offer contains the declined one), nobody
   else took them; after ``idle_repeats`` such re-offers in a row the cluster is idle and the
   priority goes up by one (``boost += 1``, never past ``P``). A re-offer that is smaller than
   what was declined (another framework took part of it) restarts the count. The raise is kept:
   AppCore's ``P`` and the framework's raises act on one priority, as the paper's single global
   ``P``.

``dynamic-plus`` (:class:`DynamicPriorityPlusPolicy`), an improved variant, documented in
docs/dynamic-priority.md with what each change buys:

* Raises won on an idle cluster are dropped as soon as a re-offer shows contention, so a job
  that converged yields again when other jobs arrive (the faithful raise is permanent).
* AppCore is placed where it costs no trial slot: an offer on which AppCore would reduce the
  number of trials that fit (a whole 12-CPU agent fits three 4-CPU trials, but only two next to
  a 1-CPU AppCore) is declined, up to ``pack_patience`` times, in favour of an agent where the
  remainder is free anyway (11 CPUs fit two trials with or without another AppCore). Several
  jobs' AppCores then share one agent instead of taking a trial slot from every agent.
* Trials go to the fitting offer with the fewest free trial slots first (best fit), which keeps
  whole agents free for whoever needs them.

Thread safety: called from the pymesos IO thread only (see :mod:`framework.policies._base`).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import math
from typing import ClassVar

from disauto.common.resources import Resources
from disauto.common.setting_values import int_setting
from disauto.common.setting_values import non_negative_number
from disauto.framework._offers import OfferView
from disauto.framework._offers import fit
from disauto.framework._spec import TaskResources
from disauto.framework.policies._base import LaunchRequest
from disauto.framework.policies._base import OfferPolicy
from disauto.framework.policies._base import Plan
from disauto.framework.policies._base import PolicySetting


__all__ = ["DynamicPriorityPlusPolicy", "DynamicPriorityPolicy", "trial_slots"]


def trial_slots(available: Resources, need: TaskResources) -> int:
    """How many tasks of size ``need`` fit in ``available`` (scalars only; ports ignored)."""
    counts = []
    for name, amount in (("cpus", need.cpus), ("mem", need.mem_mb), ("gpus", float(need.gpus)),
                         ("disk", need.disk_mb)):
        if amount > 0:
            counts.append(math.floor(available.scalar(name) / amount + 1e-9))
    return max(0, min(counts)) if counts else 0


class DynamicPriorityPolicy(OfferPolicy):
    """The faithful dynamic priority strategy (see the module docstring).

    Args:
        decline_seconds: the decline filter for an offer no waiting task fits.
        settings: ``declines_per_level``, ``decline_filter_seconds``, ``idle_repeats``.
        runner: the job's trial resources (unused here; the improved variant places by it).
    """

    NAME = "dynamic"
    uses_priority = True
    SETTINGS: ClassVar[Mapping[str, PolicySetting]] = {
        "declines_per_level": int_setting(
            1, 0,
            "fitting offers declined per priority level before one is accepted (d = this * P)"),
        "decline_filter_seconds": PolicySetting(
            "1", non_negative_number, "a number of seconds >= 0",
            "refuse_seconds of a priority decline (Mesos keeps the filter at least one "
            "allocation interval)"),
        "idle_repeats": int_setting(
            2, 1, "declined resources re-offered undiminished this many times in a row = idle "
            "cluster: the priority goes up by one"),
    }
    #: Whether a re-offer showing contention drops the priority won on an idle cluster.
    forget_raises_on_contention: ClassVar[bool] = False

    def _setup(self) -> None:
        self._since_accept = 0  # fitting offers declined for priority since the last accept
        self._declined: dict[str, Resources] = {}  # agent → what it offered when declined
        self._repeats = 0  # declined resources re-offered undiminished, in a row
        self.boost = 0  # priority levels won back on an idle cluster
        self._counts: dict[str, float] = {
            "priority_declines": 0, "idle_raises": 0, "contention_seen": 0, "accepts": 0,
            "max_priority": 0, "max_effective_priority": 0,
        }

    # -- the job's priority ---------------------------------------------------------------------

    def effective_priority(self, priority: int) -> int:
        """``max(0, priority - boost)``: AppCore's priority less what the idle test won back."""
        return max(0, priority - self.boost)

    def declines_before_accept(self, priority: int) -> int:
        """``d``: fitting offers to decline before accepting one, at AppCore's ``priority``."""
        return int(self.settings["declines_per_level"]) * self.effective_priority(priority)

    def stats(self) -> dict[str, float]:
        return {**self._counts, "boost": float(self.boost)}

    # -- planning ---------------------------------------------------------------------------------

    def plan(self, offers: Sequence[OfferView], requests: Sequence[LaunchRequest]) -> Plan:
        result = Plan()
        trials = [r for r in requests if r.trial_number is not None]
        job_priority = min((r.priority for r in trials), default=0)
        self._counts["max_priority"] = max(self._counts["max_priority"], job_priority)
        self._idle_test(offers, job_priority)
        self._counts["max_effective_priority"] = max(
            self._counts["max_effective_priority"], self.effective_priority(job_priority))
        remaining = list(requests)
        for offer in self._order(offers, remaining):
            fitting = [r for r in remaining if self._fits(offer, offer.available, r)]
            if not fitting:
                result.refuse_seconds[offer.id] = self.decline_seconds
                continue
            if self._decline_for(fitting[0], offer):
                result.refuse_seconds[offer.id] = float(self.settings["decline_filter_seconds"])
                result.deliberate.add(offer.id)
                self._declined[offer.agent_id] = offer.available
                continue
            left = offer.available
            for request in list(remaining):
                claim = fit(left, request.resources, request.ports) \
                    if self._fits(offer, left, request) else None
                if claim is None:
                    continue
                left = left - claim
                result.launches.setdefault(offer.id, []).append((request, claim))
                remaining.remove(request)
            self._since_accept = 0
            self._declined.pop(offer.agent_id, None)  # our own launch changes what it offers
            self._counts["accepts"] += 1
        return result

    @staticmethod
    def _fits(offer: OfferView, available: Resources, request: LaunchRequest) -> bool:
        if request.resources.gpus > 0 and not offer.has_gpus:
            return False
        return fit(available, request.resources, request.ports) is not None

    def _order(self, offers: Sequence[OfferView],
               requests: Sequence[LaunchRequest]) -> list[OfferView]:
        """Offers in the order they are tried: CPU-only work tries agents without GPUs first."""
        wants_gpus = bool(requests) and requests[0].resources.gpus > 0
        return sorted(offers, key=lambda o: o.has_gpus != wants_gpus)

    def _decline_for(self, head: LaunchRequest, offer: OfferView) -> bool:
        """Whether to decline ``offer`` (which ``head`` fits) for the sake of priority."""
        if head.trial_number is None:
            return False  # AppCore: never delayed
        if self._since_accept < self.declines_before_accept(head.priority):
            self._since_accept += 1
            self._counts["priority_declines"] += 1
            return True
        return False

    def _idle_test(self, offers: Sequence[OfferView], job_priority: int) -> None:
        """The paper's idle test: compare re-offered agents with what they offered declined."""
        for offer in offers:
            before = self._declined.pop(offer.agent_id, None)
            if before is None:
                continue
            if offer.available.contains(before):
                self._repeats += 1
                if self._repeats >= int(self.settings["idle_repeats"]):
                    self._repeats = 0
                    if self.boost < job_priority:
                        self.boost += 1
                        self._counts["idle_raises"] += 1
            else:
                self._repeats = 0
                self._counts["contention_seen"] += 1
                if self.forget_raises_on_contention:
                    self.boost = 0


class DynamicPriorityPlusPolicy(DynamicPriorityPolicy):
    """The improved variant (see the module docstring and docs/dynamic-priority.md).

    Args:
        decline_seconds: the decline filter for an offer no waiting task fits.
        settings: the faithful policy's settings plus ``pack_patience``.
        runner: the job's trial resources: AppCore is placed where it costs none of them.
    """

    NAME = "dynamic-plus"
    SETTINGS: ClassVar[Mapping[str, PolicySetting]] = {
        **DynamicPriorityPolicy.SETTINGS,
        "pack_patience": int_setting(
            2, 0, "offers declined while looking for a place where AppCore costs no trial slot"),
    }
    forget_raises_on_contention = True

    def _setup(self) -> None:
        super()._setup()
        self._pack_declines = 0
        self._counts["pack_declines"] = 0

    def appcore_cost(self, available: Resources, request: LaunchRequest) -> int:
        """Trial slots an offer loses if ``request`` (AppCore) is placed on it."""
        if self.runner is None:
            return 0
        claim = fit(available, request.resources, request.ports)
        if claim is None:
            return 0
        return trial_slots(available, self.runner) - trial_slots(available - claim, self.runner)

    def _order(self, offers: Sequence[OfferView],
               requests: Sequence[LaunchRequest]) -> list[OfferView]:
        ordered = super()._order(offers, requests)
        if not requests or self.runner is None:
            return ordered
        head = requests[0]
        if head.trial_number is None:  # AppCore: the cheapest place first
            return sorted(ordered, key=lambda o: self.appcore_cost(o.available, head))
        # Trials: best fit (fewest free trial slots first); sorted() keeps the GPU order on ties.
        # With placement, the faster speed class first, best fit within it.
        runner = self.runner
        return sorted(ordered, key=lambda o: (o.has_gpus != (head.resources.gpus > 0),
                                              self.speed_rank(o.agent_id),
                                              trial_slots(o.available, runner)))

    def _decline_for(self, head: LaunchRequest, offer: OfferView) -> bool:
        if head.trial_number is None:
            if self.appcore_cost(offer.available, head) > 0 and \
                    self._pack_declines < int(self.settings["pack_patience"]):
                self._pack_declines += 1
                self._counts["pack_declines"] += 1
                return True
            return False
        return super()._decline_for(head, offer)
