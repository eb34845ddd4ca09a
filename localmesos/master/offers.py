"""The embedded master's allocation runs and the offers they make; agents' endpoints.

The master's ``allocation`` part (:mod:`localmesos.master.parts`). ``allocate`` runs on the
allocation loop's thread and takes the master's lock for the whole run, so a run sees one
consistent state; ``agent_state`` and ``file_roots`` call into agents and so do it outside the
lock; the rest runs under it. Without quota an agent is offered to the first framework that may
take it, all of what is free on it for that framework's role
(:mod:`localmesos.master.allocator`).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import copy
import logging
import time
from typing import Any

from disauto.common.resources import RoleResources
from disauto.localmesos.master import allocator as alloc
from disauto.localmesos.master import quota
from disauto.localmesos.master.parts import MasterParts
from disauto.localmesos.master.records import AgentRecord
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.records import OfferRecord
from disauto.localmesos.master.state import MasterState


logger = logging.getLogger("disauto.localmesos.master")


class OfferMaking:
    """Allocation runs, offers, where agents and their sandboxes are (part of :class:`Master`)."""

    def __init__(self, state: MasterState, parts: MasterParts) -> None:
        self.state = state
        self.parts = parts

    def _allocations(
        self,
    ) -> tuple[dict[str, RoleResources], dict[str, dict[str, RoleResources]]]:
        """Under the lock: (used + offered per agent, allocation per framework per role)."""
        per_agent: dict[str, RoleResources] = {agent_id: RoleResources()
                                               for agent_id in self.state.agents}
        per_fw: dict[str, dict[str, RoleResources]] = {}
        for fw in self.state.frameworks.values():
            per_fw[fw.framework_id] = fw.held_by_role()
            items = [t for t in fw.tasks.values() if not t.recovered]
            for held in [*items, *fw.executors.values(), *fw.offers.values()]:
                if held.agent_id in per_agent:
                    per_agent[held.agent_id] = per_agent[held.agent_id] + held.resources
        return per_agent, per_fw

    def _candidates(self) -> tuple[list[alloc.AgentCandidate],
                                   list[alloc.FrameworkCandidate]]:
        """Under the lock: the active agents with what they have left, and the connected
        frameworks with the roles they want offers for."""
        per_agent, per_fw = self._allocations()
        agents = [
            alloc.AgentCandidate(agent_id, record.total - per_agent[agent_id], record.has_gpus)
            for agent_id, record in self.state.agents.items() if record.active
        ]
        frameworks = []
        for fw in self.state.frameworks.values():
            roles = tuple(r for r in fw.roles if r not in fw.suppressed_roles)
            if not fw.connected or not roles:
                continue
            frameworks.append(alloc.FrameworkCandidate(
                framework_id=fw.framework_id,
                roles=roles,
                allocations=per_fw.get(fw.framework_id, {}),
                gpu_capable="GPU_RESOURCES" in fw.capabilities,
                allocation_count=fw.allocation_count,
            ))
        return agents, frameworks

    def _quota_state(self) -> alloc.QuotaState:
        """Under the lock: the quotas and what each role with one consumes now."""
        return alloc.QuotaState(dict(self.state.quotas), {
            role: quota.consumed(role, self.state.agents.values(), self.state.frameworks.values(),
                                 offered=True)
            for role in self.state.quotas
        })

    def allocate(self) -> None:
        """One allocation run (on the allocation loop's thread): offers, then inverse offers."""
        started = time.perf_counter()
        with self.state.lock:
            if self.state.stopped:
                return
            agents, frameworks = self._candidates()
            total = RoleResources()
            for record in self.state.agents.values():
                total = total + record.total
            now = time.monotonic()
            grants = alloc.allocate(
                agents, frameworks, total=total,
                is_filtered=lambda f, r, a, res: self._is_filtered(f, r, a, res, now),
                weights=self.state.weights, min_allocatable=self.state.min_allocatable,
                rng=self.state.rng,
                quota=self._quota_state(),
            )
            self._send_offers(grants)
            self.parts.maintenance.make_inverse_offers(now)
            self.state.allocation_runs += 1
            self.state.last_allocation_ms = (time.perf_counter() - started) * 1000.0
            self.state.allocation_run_ms.append(self.state.last_allocation_ms)

    def _send_offers(self, grants: list[alloc.Grant]) -> None:
        """Under the lock: one OFFERS event per framework with its grants."""
        by_framework: dict[str, list[alloc.Grant]] = {}
        for grant in grants:
            by_framework.setdefault(grant.framework_id, []).append(grant)
        for fid, fw_grants in by_framework.items():
            fw = self.state.frameworks[fid]
            if fw.subscription is None:
                continue
            offers = [self._make_offer(fw, grant) for grant in fw_grants]
            fw.allocation_count += len(fw_grants)
            fw.count("offers/sent", len(offers))
            fw.subscription.send({"type": "OFFERS", "offers": {"offers": offers}})

    def _is_filtered(
        self, framework_id: str, role: str, agent_id: str, resources: RoleResources,
        now: float,
    ) -> bool:
        """Under the lock: whether a decline filter or the framework's offer constraints keep
        ``agent_id`` from being offered to ``role`` of the framework."""
        fw = self.state.frameworks[framework_id]
        if fw.constraints_filter.excludes(role, self.state.agents[agent_id].info):
            return True
        return self.state.filters.is_filtered(framework_id, role, agent_id, resources, now)

    def agent_path(self, agent_id: str) -> str:
        """The agent's libprocess path, ``/slave(N)``: N counts agents in order of addition.

        Every embedded agent is served on the master's port, so each gets its own N (a real
        agent is always ``slave(1)`` on its own host:port); an agent of another process has
        the path of its own pid (the N-th agent of its host).
        """
        record = self.state.agents.get(agent_id)
        if record is None and agent_id in self.state.unreachable:
            record = self.state.unreachable[agent_id].record
        if record is not None and record.pid is not None:
            return "/" + record.pid.partition("@")[0]
        for index, known in enumerate(self.state.agent_slots, start=1):
            if known == agent_id:
                return f"/slave({index})"
        return "/slave(1)"

    def agent_pid(self, record: AgentRecord) -> str:
        """The agent's libprocess pid, ``slave(N)@host:port``: where its endpoints are."""
        if record.pid is not None:
            return record.pid
        hostname = str(record.info.get("hostname", self.state.hostname))
        port = int(record.info.get("port", 5051))
        return f"{self.agent_path(record.agent_id).lstrip('/')}@{hostname}:{port}"

    def agent_list(self) -> list[Any]:
        """The registered agents, in order of addition."""
        with self.state.lock:
            return [record.agent for record in self.state.agents.values()]

    def _make_offer(self, fw: FrameworkRecord, grant: alloc.Grant) -> dict[str, Any]:
        offer_id = f"{self.state.master_id}-O{self.state.next_offer}"
        self.state.next_offer += 1
        agent = self.state.agents[grant.agent_id]
        refined = "RESERVATION_REFINEMENT" in fw.capabilities
        resources = grant.resources.to_json(
            format="post" if refined else "pre",
            allocation_role=grant.role if fw.multi_role else None)
        hostname = str(agent.info.get("hostname", self.state.hostname))
        port = int(agent.info.get("port", 5051))
        ip = hostname if agent.pid is None else agent.ip
        offer: dict[str, Any] = {
            "id": {"value": offer_id},
            "framework_id": {"value": fw.framework_id},
            "agent_id": {"value": grant.agent_id},
            "hostname": hostname,
            "url": {
                "scheme": "http",
                "address": {"hostname": hostname, "ip": ip, "port": port},
                "path": self.agent_path(grant.agent_id),
            },
            "resources": resources,
        }
        if agent.info.get("attributes"):
            offer["attributes"] = copy.deepcopy(agent.info["attributes"])
        executor_ids = [
            {"value": executor_id}
            for (agent_id, executor_id) in fw.executors
            if agent_id == grant.agent_id
        ]
        if executor_ids:
            offer["executor_ids"] = executor_ids
        if fw.multi_role:
            offer["allocation_info"] = {"role": grant.role}
        unavailability = self.parts.maintenance.unavailability_of(agent)
        if unavailability is not None:
            offer["unavailability"] = unavailability
        record = OfferRecord(
            offer_id, fw.framework_id, grant.agent_id, grant.role, grant.resources, offer
        )
        self.state.offers[offer_id] = record
        fw.offers[offer_id] = record
        return offer

    # -- files -----------------------------------------------------------------------------

    _combined_roots: CombinedRoots | None = None

    def file_roots(self) -> dict[str, str]:
        """Virtual path → real directory for ``/files``: every agent's sandboxes (the same
        mapping while they are the same: read it, do not change it; see
        :class:`CombinedRoots`). Must not be called with the master lock held (it asks the
        agents)."""
        with self.state.lock:
            agents = [record.agent for record in self.state.agents.values()]
            if self._combined_roots is None:
                self._combined_roots = CombinedRoots()
            combined = self._combined_roots
        return combined.of(agents)


class CombinedRoots:
    """The ``/files`` roots of several agents (thread-safe; the last answer is kept).

    Each sandbox is served under its real path, under Mesos' virtual path
    ``/frameworks/<fw>/executors/<executor>/runs/latest`` and under the agent's
    ``/slaves/<agent>/frameworks/<fw>/executors/<executor>/runs/latest``.
    """

    def __init__(self) -> None:
        self._cache: tuple[list[Mapping[str, Any]], dict[str, str]] | None = None
        """(the agents' mappings it was built from, :meth:`of`'s answer)."""

    def of(self, agents: Sequence[Any]) -> dict[str, str]:
        """The roots of ``agents``' ``file_roots`` (agents without one serve none here); the
        same mapping while theirs are the same."""
        parts = [file_roots() for agent in agents
                 if (file_roots := getattr(agent, "file_roots", None)) is not None]
        # An agent answers the same mapping while its sandboxes are the same: so is this one
        # (the mappings are kept with it, so their ids are theirs).
        cached = self._cache
        if cached is not None and len(cached[0]) == len(parts) \
                and all(a is b for a, b in zip(cached[0], parts, strict=True)):
            return cached[1]
        roots: dict[str, str] = {}
        for agent_roots in parts:
            for virtual, real in agent_roots.items():
                roots[str(virtual)] = str(real)
                names = str(virtual).split("/")
                # /slaves/<a>/frameworks/<f>/executors/<e>/runs/latest -> /frameworks/...
                if len(names) == 9 and names[1] == "slaves" and names[3] == "frameworks":
                    roots["/" + "/".join(names[3:])] = str(real)
        self._cache = (parts, roots)
        return roots
