"""The allocator: Mesos' hierarchical DRF allocator, reduced to what one machine needs.

The decision is a pure function, :func:`allocate`, over immutable inputs; the master calls it with
a snapshot of its state and turns the returned :class:`Grant` list into OFFERS. The semantics
follow apache/mesos ``src/master/allocator/mesos/hierarchical.cpp`` (``__generateOffers``,
stage 2) and ``src/master/allocator/sorter/drf/sorter.cpp``:

* Agents are visited in a random order (reshuffled every run).
* For each agent, roles are sorted by weighted DRF share, then frameworks inside each role by
  DRF share; ties go to fewer past allocations, then to the name.
* The first framework that may take the agent gets **everything still available on it**: an
  agent is skipped when its available resources are below every minimum-allocatable quantity
  (``cpus:0.01|mem:32``), a framework without ``GPU_RESOURCES`` never sees an agent that has
  GPUs, and a refused-offer filter that contains the candidate resources skips the framework
  for that agent. Shares are recomputed after each grant.

Suppressed (role, framework) pairs and disconnected frameworks are simply not passed in.

:class:`OfferFilters` holds the refused-offer filters (``refuse_seconds``) and
:func:`refuse_timeout` computes their lifetime exactly as Mesos does. :class:`AllocationLoop`
runs the batch allocation every interval, plus immediately when triggered, coalescing triggers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
import logging
import random
import threading
import time

from disauto.common.resources import Resources


logger = logging.getLogger(__name__)

#: Mesos ``Filters.refuse_seconds`` default.
DEFAULT_REFUSE_SECONDS = 5.0
#: Mesos caps refusal filters at one year (``src/master/allocator/mesos/hierarchical.cpp``).
MAX_REFUSE_SECONDS = 365 * 24 * 3600.0
#: Mesos ``--min_allocatable_resources`` default: ``cpus:0.01|mem:32``.
DEFAULT_MIN_ALLOCATABLE = (Resources({"cpus": 0.01}), Resources({"mem": 32}))


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
    resources: Resources
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
        resources: Resources,
        timeout: float,
        now: float,
    ) -> None:
        """Filter ``resources`` on ``agent_id`` for ``timeout`` seconds from ``now``."""
        if resources.is_empty():
            return
        key = (framework_id, role, agent_id)
        self._filters.setdefault(key, []).append(_Filter(resources, now + timeout))

    def is_filtered(
        self, framework_id: str, role: str, agent_id: str, resources: Resources, now: float
    ) -> bool:
        """True when an unexpired filter for the key contains ``resources``."""
        key = (framework_id, role, agent_id)
        filters = self._filters.get(key)
        if not filters:
            return False
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


# -- the decision -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentCandidate:
    """An agent as the allocator sees it.

    Attributes:
        agent_id: the agent.
        available: resources neither used by tasks nor offered.
        has_gpus: whether the agent's *total* has GPUs (GPU agents are hidden from frameworks
            without the GPU_RESOURCES capability, whatever is free on them).
    """

    agent_id: str
    available: Resources
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
    allocations: Mapping[str, Resources]
    gpu_capable: bool = False
    allocation_count: int = 0


@dataclass(frozen=True)
class Grant:
    """One offer to make: ``resources`` of ``agent_id`` to ``framework_id`` for ``role``."""

    framework_id: str
    role: str
    agent_id: str
    resources: Resources


def drf_share(
    allocation: Resources,
    total: Resources,
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


def is_allocatable(available: Resources, minimums: Sequence[Resources]) -> bool:
    """True when ``available`` holds at least one of the minimum-allocatable quantities."""
    if available.is_empty():
        return False
    if not minimums:
        return True
    return any(available.contains(minimum) for minimum in minimums)


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
                self._fw_alloc[(fw.framework_id, role)] = fw.allocations.get(role, Resources())
                self._members.setdefault(role, []).append(fw)
        self._role_alloc: dict[str, Resources] = {role: Resources() for role in self._members}
        for fw in frameworks:
            for role, allocation in fw.allocations.items():
                if role in self._role_alloc:
                    self._role_alloc[role] = self._role_alloc[role] + allocation
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

    def grant(self, fw: FrameworkCandidate, role: str, resources: Resources) -> None:
        """Count a grant of ``resources`` to ``fw`` in ``role``."""
        key = (fw.framework_id, role)
        self._fw_alloc[key] = self._fw_alloc[key] + resources
        self._role_alloc[role] = self._role_alloc[role] + resources
        self._counts[fw.framework_id] += 1
        self._role_counts[role] += 1


def _choose(
    agent: AgentCandidate,
    shares: _Shares,
    is_filtered: Callable[[str, str, str, Resources], bool],
) -> tuple[FrameworkCandidate, str] | None:
    """The first (framework, role) in DRF order that may take everything available on
    ``agent``: GPU agents only for GPU-capable frameworks, and no refusal filter holding it."""
    for role in shares.roles():
        for fw in shares.members(role):
            if agent.has_gpus and not fw.gpu_capable:
                continue
            if is_filtered(fw.framework_id, role, agent.agent_id, agent.available):
                continue
            return fw, role
    return None


def allocate(
    agents: Sequence[AgentCandidate],
    frameworks: Sequence[FrameworkCandidate],
    *,
    total: Resources,
    is_filtered: Callable[[str, str, str, Resources], bool],
    weights: Mapping[str, float] | None = None,
    min_allocatable: Sequence[Resources] = DEFAULT_MIN_ALLOCATABLE,
    excluded_names: Iterable[str] = (),
    rng: random.Random | None = None,
) -> list[Grant]:
    """Decide one batch allocation (pure: inputs are not modified).

    Args:
        agents: candidate agents (activated) with their available resources.
        frameworks: frameworks that want offers, with their roles and current allocations.
        total: the cluster's total resources (the DRF denominator).
        is_filtered: ``(framework_id, role, agent_id, resources) -> bool``, the refusal filters.
        weights: role weights (default 1.0); a role's share is divided by its weight.
        min_allocatable: alternative minimum quantities an agent must have free to be offered.
        excluded_names: resource names left out of the share (``--fair_sharing_excluded...``).
        rng: the random source for the agent order (seed it for deterministic tests).

    Returns:
        The grants, at most one per agent, in the order they were decided.
    """
    rng = rng or random.Random()
    order = list(agents)
    rng.shuffle(order)
    shares = _Shares(frameworks, total, weights or {}, tuple(excluded_names))
    grants: list[Grant] = []
    for agent in order:
        if not is_allocatable(agent.available, min_allocatable):
            continue
        chosen = _choose(agent, shares, is_filtered)
        if chosen is None:
            continue
        fw, role = chosen
        grants.append(Grant(fw.framework_id, role, agent.agent_id, agent.available))
        shares.grant(fw, role, agent.available)
    return grants


# -- when to run ------------------------------------------------------------------------------


class AllocationLoop:
    """Runs ``run()`` every ``interval`` seconds and as soon as possible after :meth:`trigger`.

    Triggers that arrive while a run is pending are coalesced into that run, as Mesos does.
    ``run`` is called on the loop's own thread; an exception it raises is logged, and the loop
    goes on.

    Args:
        run: one allocation run.
        interval: the batch allocation interval in seconds (Mesos ``--allocation_interval``).
        name: the thread name.
    """

    def __init__(
        self, run: Callable[[], None], interval: float, *, name: str = "localmesos-allocator"
    ) -> None:
        if not interval > 0:
            raise ValueError(f"allocation interval must be positive, got {interval}")
        self._run = run
        self.interval = interval
        self._cond = threading.Condition()
        self._triggered = False
        self._requested: float | None = None
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        #: Milliseconds from each run's request (a trigger or the batch beat) to its start:
        #: Mesos' ``allocator/mesos/allocation_run_latency`` timer.
        self.latency_ms: deque[float] = deque(maxlen=1000)

    def start(self) -> None:
        """Start the loop thread."""
        self._thread.start()

    def trigger(self) -> None:
        """Ask for a run as soon as possible (coalesced with any pending one)."""
        with self._cond:
            if not self._triggered:
                self._requested = time.monotonic()
            self._triggered = True
            self._cond.notify()

    def stop(self) -> None:
        """Stop the loop and wait for its thread (idempotent)."""
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _loop(self) -> None:
        next_batch = time.monotonic() + self.interval
        while True:
            with self._cond:
                while not self._stopped and not self._triggered:
                    remaining = next_batch - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                if self._stopped:
                    return
                due = next_batch
                if self._triggered and self._requested is not None:
                    due = min(due, self._requested)
                self._triggered = False
                self._requested = None
            now = time.monotonic()
            self.latency_ms.append(max(0.0, now - due) * 1000.0)
            if now >= next_batch:
                # Keep the batch cadence; skip beats that were missed entirely.
                next_batch += self.interval * max(1, int((now - next_batch) // self.interval) + 1)
            try:
                self._run()
            except Exception:  # noqa: BLE001 - the loop must survive a bad run
                logger.exception("allocation run failed")
