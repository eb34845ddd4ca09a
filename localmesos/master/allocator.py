"""The allocator: Mesos' hierarchical DRF allocator, reduced to what one machine needs.

The decision is a pure function, :func:`allocate`, over immutable inputs; the master calls it with
a snapshot of its state and turns the returned :class:`Grant` list into OFFERS. The semantics
follow apache/mesos ``src/master/allocator/mesos/hierarchical.cpp`` (``__generateOffers``) and
``src/master/allocator/sorter/drf/sorter.cpp``:

* Agents are visited in a random order (reshuffled for each stage).
* For each agent, roles are sorted by weighted DRF share, then frameworks inside each role by
  DRF share; ties go to fewer past allocations, then to the name.
* A framework of role R may be offered what is unreserved and what is reserved for R (or a
  role above it) -- ``allocatableTo``. An agent is skipped when what it has left is below
  every minimum-allocatable quantity (``cpus:0.01|mem:32``), a framework without
  ``GPU_RESOURCES`` never sees an agent that has GPUs, and a refused-offer filter that
  contains the candidate resources skips the framework for that agent. Shares are recomputed
  after each grant.
* **Quota** (:mod:`localmesos.master.quota`). Stage 1 gives roles with unsatisfied
  guarantees up to their guarantee (then what their limit and the headroom allow); stage 2
  gives everyone the rest. A role is never offered unreserved scalars beyond its limit
  (``shrinkResources`` to ``limits - consumed``), and nobody is offered the unreserved
  scalars other roles' unsatisfied guarantees need (``availableHeadroom -
  requiredHeadroom``). Without quota every framework gets everything still available on the
  agent, so the first taker empties it, as before.

Suppressed (role, framework) pairs and disconnected frameworks are simply not passed in. The
refused-offer filters are :mod:`localmesos.master.offer_filters`, the run timing
:mod:`localmesos.master.allocation_loop`.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import random

from disauto.common.resources import UNRESERVED
from disauto.common.resources import Resources
from disauto.common.resources import RoleResources
from disauto.localmesos.master.allocation_loop import AllocationLoop
from disauto.localmesos.master.offer_filters import DEFAULT_REFUSE_SECONDS
from disauto.localmesos.master.offer_filters import MAX_REFUSE_SECONDS
from disauto.localmesos.master.offer_filters import OfferFilters
from disauto.localmesos.master.offer_filters import refuse_timeout
from disauto.localmesos.master.quota import Quantities
from disauto.localmesos.master.quota import Quota
from disauto.localmesos.master.quota import add
from disauto.localmesos.master.quota import subtract


__all__ = [
    "DEFAULT_MIN_ALLOCATABLE", "DEFAULT_REFUSE_SECONDS", "MAX_REFUSE_SECONDS", "AgentCandidate",
    "AllocationLoop", "FrameworkCandidate", "Grant", "OfferFilters", "allocate", "drf_share",
    "is_allocatable", "refuse_timeout",
]

#: Mesos ``--min_allocatable_resources`` default: ``cpus:0.01|mem:32``.
DEFAULT_MIN_ALLOCATABLE = (Resources({"cpus": 0.01}), Resources({"mem": 32}))

IsFiltered = Callable[[str, str, str, RoleResources], bool]


def _roles(value: RoleResources | Resources) -> RoleResources:
    return value if isinstance(value, RoleResources) else RoleResources.unreserved(value)


@dataclass(frozen=True)
class AgentCandidate:
    """An agent as the allocator sees it.

    Attributes:
        agent_id: the agent.
        available: resources neither used by tasks nor offered (reservations kept apart).
        has_gpus: whether the agent's *total* has GPUs (GPU agents are hidden from frameworks
            without the GPU_RESOURCES capability, whatever is free on them).
    """

    agent_id: str
    available: RoleResources | Resources
    has_gpus: bool = False


@dataclass(frozen=True)
class FrameworkCandidate:
    """A framework that may receive offers in this run.

    Attributes:
        framework_id: the framework.
        roles: the roles it currently wants offers for (subscribed, not suppressed).
        allocations: its current allocation (used + offered) per role, for the shares.
        gpu_capable: whether it has the GPU_RESOURCES capability.
        allocation_count: how many grants it received so far (DRF tie-breaker).
    """

    framework_id: str
    roles: tuple[str, ...]
    allocations: Mapping[str, RoleResources | Resources]
    gpu_capable: bool = False
    allocation_count: int = 0


@dataclass(frozen=True)
class Grant:
    """One offer to make: ``resources`` of ``agent_id`` to ``framework_id`` for ``role``."""

    framework_id: str
    role: str
    agent_id: str
    resources: RoleResources


@dataclass(frozen=True)
class QuotaState:
    """Quota as the allocator sees it: each role's :class:`Quota` and what each role with a
    quota consumes now (``quotaOfferedOrConsumed``), and the unreserved scalars that are
    free now (the available headroom)."""

    quotas: Mapping[str, Quota] = field(default_factory=dict)
    consumed: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


def drf_share(
    allocation: RoleResources | Resources,
    total: RoleResources | Resources,
    weight: float = 1.0,
    excluded: Iterable[str] = (),
) -> float:
    """Dominant share: ``max_r allocation[r] / total[r]`` over scalar resources, ÷ ``weight``."""
    skip = set(excluded)
    share = 0.0
    for name, amount in allocation.scalars.items():
        if name in skip:
            continue
        whole = total.scalar(name)
        if whole > 0:
            share = max(share, amount / whole)
    return share / weight if weight > 0 else float("inf")


def is_allocatable(available: RoleResources | Resources, minimums: Sequence[Resources]) -> bool:
    """True when ``available`` holds at least one of the minimum-allocatable quantities."""
    quantities = available.quantities() if isinstance(available, RoleResources) else available
    if quantities.is_empty():
        return False
    if not minimums:
        return True
    return any(quantities.contains(minimum) for minimum in minimums)


class _Shares:
    """The allocations of one run, as the DRF sorters hold them, updated with each grant.

    A role's allocation counts every framework in it, including ones not asking for offers.
    """

    def __init__(self, frameworks: Sequence[FrameworkCandidate], total: Resources,
                 weights: Mapping[str, float], excluded: tuple[str, ...]) -> None:
        self._total = total
        self._weights = weights
        self._excluded = excluded
        self._fw_alloc: dict[tuple[str, str], Resources] = {}
        self._members: dict[str, list[FrameworkCandidate]] = {}
        self._counts: dict[str, int] = {}
        for fw in frameworks:
            self._counts[fw.framework_id] = fw.allocation_count
            for role in fw.roles:
                held = fw.allocations.get(role)
                self._fw_alloc[(fw.framework_id, role)] = _roles(
                    held or Resources()).quantities()
                self._members.setdefault(role, []).append(fw)
        self._role_alloc: dict[str, Resources] = {role: Resources() for role in self._members}
        for fw in frameworks:
            for role, allocation in fw.allocations.items():
                if role in self._role_alloc:
                    self._role_alloc[role] = self._role_alloc[role] + _roles(
                        allocation).quantities()
        self._role_counts: dict[str, int] = {role: 0 for role in self._members}

    def roles(self) -> list[str]:
        """The roles, lowest weighted DRF share first (ties: fewer grants, then the name)."""
        return sorted(self._members, key=lambda r: (
            drf_share(self._role_alloc[r], self._total, self._weights.get(r, 1.0),
                      self._excluded),
            self._role_counts[r],
            r,
        ))

    def members(self, role: str) -> list[FrameworkCandidate]:
        """The role's frameworks, lowest DRF share in the role first (ties: fewer grants, then
        the id)."""
        return sorted(self._members[role], key=lambda fw: (
            drf_share(self._fw_alloc[(fw.framework_id, role)], self._total, 1.0, self._excluded),
            self._counts[fw.framework_id],
            fw.framework_id,
        ))

    def grant(self, fw: FrameworkCandidate, role: str, resources: RoleResources) -> None:
        """Count a grant of ``resources`` to ``fw`` in ``role``."""
        key = (fw.framework_id, role)
        amount = resources.quantities()
        self._fw_alloc[key] = self._fw_alloc[key] + amount
        self._role_alloc[role] = self._role_alloc[role] + amount
        self._counts[fw.framework_id] += 1
        self._role_counts[role] += 1


def _unreserved_scalars(resources: RoleResources) -> Quantities:
    return resources.reserved_for(UNRESERVED).scalars


def _shrink(resources: RoleResources, target: Mapping[str, float],
            *, absent_is_zero: bool) -> RoleResources:
    """``resources`` with its unreserved scalars cut to ``target`` (``shrinkResources``): a
    name absent from ``target`` is dropped (quantities, ``absent_is_zero``) or kept whole
    (limits)."""
    limits = dict(target)
    if absent_is_zero:
        limits.update({n: 0.0 for n in _unreserved_scalars(resources) if n not in target})
    return resources.shrink_unreserved(limits)


def _split(resources: RoleResources) -> tuple[RoleResources, RoleResources]:
    """(the unreserved scalars, everything else: reservations and ranges)."""
    free = resources.reserved_for(UNRESERVED)
    scalars = RoleResources.unreserved(Resources(free.scalars))
    return scalars, resources - scalars


class _Run:
    """One allocation run: the agents' available resources, the shares and the quota headroom,
    updated with each grant (``__generateOffers``)."""

    def __init__(self, agents: Sequence[AgentCandidate], frameworks: Sequence[FrameworkCandidate],
                 total: Resources, quota: QuotaState, options: _Options) -> None:
        self.options = options
        self.shares = _Shares(frameworks, total, options.weights, options.excluded)
        self.available = {agent.agent_id: _roles(agent.available) for agent in agents}
        self.quota = quota
        self.consumed: dict[str, Quantities] = {
            role: dict(quota.consumed.get(role, {})) for role in quota.quotas}
        self.required = add(*(subtract(q.guarantees, self.consumed[r])
                              for r, q in quota.quotas.items()))
        self.headroom = add(*(_unreserved_scalars(a) for a in self.available.values()))
        self.grants: dict[tuple[str, str, str], RoleResources] = {}

    def take(self, agent: AgentCandidate, fw: FrameworkCandidate, role: str,
             offer: RoleResources, counted: RoleResources, guaranteed: RoleResources) -> None:
        """Grant ``offer``; ``counted`` of it consumes ``role``'s quota, ``guaranteed`` of it
        satisfies its guarantee."""
        key = (fw.framework_id, role, agent.agent_id)
        self.grants[key] = self.grants.get(key, RoleResources()) + offer
        self.available[agent.agent_id] = self.available[agent.agent_id] - offer
        self.shares.grant(fw, role, offer)
        used = _unreserved_scalars(counted)
        if role in self.consumed:
            self.consumed[role] = add(self.consumed[role], used)
        self.required = subtract(self.required, _unreserved_scalars(guaranteed))
        self.headroom = subtract(self.headroom, used)

    def candidate(self, agent: AgentCandidate, fw: FrameworkCandidate,
                  role: str) -> RoleResources | None:
        """What ``fw`` may be offered on ``agent`` for ``role`` before quota: None when it may
        have nothing (too little, GPUs it cannot take)."""
        available = self.available[agent.agent_id].allocatable_to(role)
        if not is_allocatable(available, self.options.min_allocatable):
            return None
        if agent.has_gpus and not fw.gpu_capable:
            return None
        return available

    def limit(self, role: str, scalars: RoleResources, already: Quantities) -> RoleResources:
        """``scalars`` cut to ``role``'s limit (less ``already`` granted now) and to the
        headroom other roles' guarantees need."""
        quota = self.quota.quotas.get(role)
        if quota is not None and quota.limits:
            room = subtract(quota.limits, add(self.consumed.get(role, {}), already))
            room.update({n: 0.0 for n in quota.limits if n not in room})
            scalars = _shrink(scalars, room, absent_is_zero=False)
        if self.required and not scalars.is_empty():
            scalars = _shrink(scalars, subtract(self.headroom, self.required),
                              absent_is_zero=True)
        return scalars


@dataclass(frozen=True)
class _Options:
    is_filtered: IsFiltered
    weights: Mapping[str, float]
    min_allocatable: Sequence[Resources]
    excluded: tuple[str, ...]


def _offer(run: _Run, agent: AgentCandidate, fw: FrameworkCandidate, role: str,
           offer: RoleResources, counted: RoleResources, guaranteed: RoleResources) -> bool:
    """Grant ``offer`` unless it is too small or filtered; whether it was granted."""
    if offer.is_empty() or not is_allocatable(offer, run.options.min_allocatable):
        return False
    if run.options.is_filtered(fw.framework_id, role, agent.agent_id, offer):
        return False
    run.take(agent, fw, role, offer, counted, guaranteed)
    return True


def _guarantees_stage(run: _Run, agents: Sequence[AgentCandidate]) -> None:
    """Stage 1: roles with unsatisfied guarantees get up to them first."""
    for agent in agents:
        for role in run.shares.roles():
            quota = run.quota.quotas.get(role)
            if quota is None or not quota.guarantees:
                continue
            for fw in run.shares.members(role):
                unsatisfied = subtract(quota.guarantees, run.consumed.get(role, {}))
                if not unsatisfied:
                    break
                available = run.candidate(agent, fw, role)
                if available is None:
                    continue
                scalars, rest = _split(available)
                guaranteed = _shrink(scalars, unsatisfied, absent_is_zero=True)
                if guaranteed.is_empty():
                    continue
                extra = run.limit(role, scalars - guaranteed, _unreserved_scalars(guaranteed))
                counted = guaranteed + extra
                _offer(run, agent, fw, role, rest + counted, counted, guaranteed)


def _fair_stage(run: _Run, agents: Sequence[AgentCandidate]) -> None:
    """Stage 2: everyone, in DRF order, gets what is left (within limits and headroom)."""
    for agent in agents:
        for role in run.shares.roles():
            if run.available[agent.agent_id].is_empty():
                break
            for fw in run.shares.members(role):
                available = run.candidate(agent, fw, role)
                if available is None:
                    continue
                scalars, rest = _split(available)
                counted = run.limit(role, scalars, {})
                _offer(run, agent, fw, role, rest + counted, counted, RoleResources())


def allocate(
    agents: Sequence[AgentCandidate],
    frameworks: Sequence[FrameworkCandidate],
    *,
    total: RoleResources | Resources,
    is_filtered: Callable[[str, str, str, RoleResources], bool],
    weights: Mapping[str, float] | None = None,
    min_allocatable: Sequence[Resources] = DEFAULT_MIN_ALLOCATABLE,
    excluded_names: Iterable[str] = (),
    rng: random.Random | None = None,
    quota: QuotaState | None = None,
) -> list[Grant]:
    """Decide one batch allocation (pure: inputs are not modified).

    Args:
        agents: candidate agents (activated) with their available resources.
        frameworks: frameworks that want offers, with their roles and current allocations.
        total: the cluster's total resources (the DRF denominator).
        is_filtered: ``(framework_id, role, agent_id, resources) -> bool``, the refusal filters.
        weights: role weights (default 1.0); a role's share is divided by its weight.
        min_allocatable: alternative minimum quantities an offer must hold.
        excluded_names: resource names left out of the share (``--fair_sharing_excluded...``).
        rng: the random source for the agent order (seed it for deterministic tests).
        quota: the roles' quotas and what they consume (default: none).

    Returns:
        The grants, at most one per (framework, role, agent), in the order first decided.
    """
    rng = rng or random.Random()
    options = _Options(is_filtered, weights or {}, tuple(min_allocatable),
                       tuple(excluded_names))
    run = _Run(agents, frameworks, _roles(total).quantities(), quota or QuotaState(), options)
    order = list(agents)
    if run.quota.quotas:
        rng.shuffle(order)
        _guarantees_stage(run, order)
    rng.shuffle(order)
    _fair_stage(run, order)
    return [Grant(fid, role, agent_id, resources)
            for (fid, role, agent_id), resources in run.grants.items()]
