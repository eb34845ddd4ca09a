"""Maintenance: schedules, machine modes, offers' ``unavailability`` and inverse offers.

As Mesos 1.11 (apache/mesos ``src/master/maintenance.cpp``, ``src/master/http.cpp``
``updateMaintenanceSchedule``, ``startMaintenance``, ``stopMaintenance``,
``getMaintenanceStatus``; ``src/master/master.cpp`` ``updateUnavailability``,
``inverseOffer``, ``acceptInverseOffers``, ``declineInverseOffers``;
``src/master/allocator/mesos/hierarchical.cpp`` ``generateInverseOffers``):

* A machine is ``(hostname, ip)``; an agent is on the machine whose hostname (any case) and
  IP it advertises. Every embedded agent is served at the master's address, so its IP is the
  master's and agents on different "machines" differ by hostname.
* UPDATE_MAINTENANCE_SCHEDULE replaces the schedule: machines new in it go DRAINING with
  their window's ``unavailability``; machines left out go back UP (a DOWN machine may not be
  left out). Offers on an agent whose unavailability changed are rescinded (and so are its
  inverse offers); later offers on it carry ``unavailability``.
* After each allocation run, every active framework that has resources offered or allocated
  on an agent of a DRAINING machine gets one INVERSE_OFFERS event per run with an inverse
  offer for each such agent (empty ``resources``: the whole agent), unless it has one
  outstanding or refused it (``refuse_seconds``, default 5 s, of ACCEPT/DECLINE_INVERSE_OFFERS).
  Answers are the machine's ``statuses`` in GET_MAINTENANCE_STATUS.
* START_MAINTENANCE takes DRAINING machines DOWN: their agents are removed (their tasks
  TASK_LOST / TASK_GONE_BY_OPERATOR for partition-aware frameworks, "Operator initiated
  'Machine DOWN'") and told to shut down; they may not register while DOWN.
  STOP_MAINTENANCE brings DOWN machines UP and out of the schedule.
"""

from __future__ import annotations

from collections.abc import Mapping
import copy
import ipaddress
import logging
import time
from typing import Any

from disauto.localmesos.master.offer_filters import inverse_refuse_timeout
from disauto.localmesos.master.parts import MasterParts
from disauto.localmesos.master.records import AgentRecord
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.records import InverseOfferRecord
from disauto.localmesos.master.records import Machine
from disauto.localmesos.master.records import MachineKey
from disauto.localmesos.master.state import MasterState
from disauto.localmesos.protocol.protojson import CallError


logger = logging.getLogger("disauto.localmesos.master")

def machine_key(machine_id: Mapping[str, Any]) -> MachineKey:
    """The key of a ``MachineID``: hostname (lowercased) and IP."""
    return (str(machine_id.get("hostname", "")).lower(), str(machine_id.get("ip", "")))


def _machine_json(machine_id: Mapping[str, Any]) -> str:
    """A MachineID as Mesos writes it in messages (``JSON::protobuf``)."""
    parts = [f'"{k}":"{machine_id[k]}"' for k in ("hostname", "ip") if machine_id.get(k)]
    return "{" + ",".join(parts) + "}"


def machine_error(machine_id: Mapping[str, Any]) -> str | None:
    """``maintenance::validation::machine``."""
    if not machine_id.get("hostname") and not machine_id.get("ip"):
        return "Both 'hostname' and 'ip' for a machine are empty"
    ip = machine_id.get("ip")
    if ip:
        try:
            ipaddress.IPv4Address(str(ip))
        except ValueError:
            return f"Failed to parse IPv4 address '{ip}'"
    return None


def machines_error(machine_ids: list[Mapping[str, Any]]) -> str | None:
    """``maintenance::validation::machines``."""
    if not machine_ids:
        return "List of machines is empty"
    seen: set[MachineKey] = set()
    for machine_id in machine_ids:
        error = machine_error(machine_id)
        if error is not None:
            return error
        if machine_key(machine_id) in seen:
            return (f"Machine '{_machine_json(machine_id)}' appears more than once in the "
                    "schedule")
        seen.add(machine_key(machine_id))
    return None


def schedule_error(schedule: Mapping[str, Any], machines: Mapping[MachineKey, Machine]
                   ) -> str | None:
    """``maintenance::validation::schedule``."""
    seen: set[MachineKey] = set()
    for window in schedule.get("windows", []):
        ids = window.get("machine_ids", [])
        if not ids:
            return "List of machines in the maintenance window is empty"
        duration = (window.get("unavailability") or {}).get("duration")
        if duration is not None and int(duration.get("nanoseconds", 0)) < 0:
            return "Unavailability 'duration' is negative"
        for machine_id in ids:
            error = machine_error(machine_id)
            if error is not None:
                return error
            if machine_key(machine_id) in seen:
                return (f"Machine '{_machine_json(machine_id)}' appears more than once in the "
                        "schedule")
            seen.add(machine_key(machine_id))
    for key, machine in machines.items():
        if machine.mode == "DOWN" and key not in seen:
            return (f"Machine '{_machine_json(machine.id)}' is deactivated and cannot be "
                    "removed from the schedule")
    return None


class MaintenanceMaster:
    """Maintenance schedules and inverse offers (part of :class:`Master`)."""

    def __init__(self, state: MasterState, parts: MasterParts) -> None:
        self.state = state
        self.parts = parts

    # -- the schedule ----------------------------------------------------------------------

    def maintenance_schedule(self) -> dict[str, Any]:
        """``maintenance.Schedule`` (``{}`` when there is none)."""
        with self.state.lock:
            return copy.deepcopy(self.state.schedule)

    def update_maintenance_schedule(self, schedule: Mapping[str, Any]) -> None:
        """UPDATE_MAINTENANCE_SCHEDULE.

        Raises:
            CallError: 400 with Mesos' message for an invalid schedule.
        """
        with self.state.lock:
            error = schedule_error(schedule, self.state.machines)
            if error is not None:
                raise CallError(error)
            windows = {machine_key(m): (m, w.get("unavailability"))
                       for w in schedule.get("windows", []) for m in w.get("machine_ids", [])}
            for key, machine in list(self.state.machines.items()):
                if key not in windows:
                    del self.state.machines[key]
                    self._update_unavailability(key, None)
                elif machine.mode != "UP":
                    machine.unavailability = copy.deepcopy(windows[key][1])
                    self._update_unavailability(key, machine.unavailability)
            for key, (machine_id, unavailability) in windows.items():
                if key not in self.state.machines:
                    self.state.machines[key] = Machine(dict(machine_id), "DRAINING",
                                                 copy.deepcopy(unavailability))
                    self._update_unavailability(key, unavailability)
            self.state.schedule = copy.deepcopy(dict(schedule)) if schedule.get("windows") else {}
        self.state.loop.trigger()

    def _machine_agents(self, key: MachineKey) -> list[AgentRecord]:
        return [a for a in self.state.agents.values() if machine_key(
            {"hostname": a.machine_id[0], "ip": a.machine_id[1]}) == key]

    def _update_unavailability(self, key: MachineKey, unavailability: Any) -> None:
        """Under the lock: offers and inverse offers of the machine's agents are rescinded so
        that the frameworks learn the new unavailability at once (``updateUnavailability``)."""
        for agent in self._machine_agents(key):
            for offer in [o for o in self.state.offers.values() if o.agent_id == agent.agent_id]:
                self.parts.tasks.rescind(offer)
            self.rescind_inverse_offers(agent.agent_id)
            self.state.inverse_filters.clear(agent_id=agent.agent_id)
            self.state.inverse_statuses.pop(agent.agent_id, None)

    def unavailability_of(self, agent: AgentRecord) -> dict[str, Any] | None:
        """Under the lock: the ``Unavailability`` of the agent's machine, if scheduled."""
        machine = self.state.machines.get(machine_key(
            {"hostname": agent.machine_id[0], "ip": agent.machine_id[1]}))
        if machine is None or machine.unavailability is None:
            return None
        return copy.deepcopy(machine.unavailability)

    def machine_is_down(self, info: Mapping[str, Any]) -> bool:
        """Whether an agent advertising ``info`` is on a DOWN machine."""
        with self.state.lock:
            machine = self.state.machines.get(machine_key(
                {"hostname": info.get("hostname", ""), "ip": self.state.hostname}))
            return machine is not None and machine.mode == "DOWN"

    # -- machine modes ---------------------------------------------------------------------

    def start_maintenance(self, machine_ids: list[Mapping[str, Any]]) -> None:
        """START_MAINTENANCE: DRAINING machines go DOWN, their agents removed.

        Raises:
            CallError: 400 for an invalid list or a machine not DRAINING.
        """
        with self.state.lock:
            self._check_modes(machine_ids, "DRAINING", "is not in DRAINING mode and cannot "
                                                       "be brought down")
            for machine_id in machine_ids:
                key = machine_key(machine_id)
                for agent in self._machine_agents(key):
                    self.parts.partitions.remove_agent_by_operator(
                        agent, "Operator initiated 'Machine DOWN'")
                self.state.machines[key].mode = "DOWN"

    def stop_maintenance(self, machine_ids: list[Mapping[str, Any]]) -> None:
        """STOP_MAINTENANCE: DOWN machines come back UP and leave the schedule.

        Raises:
            CallError: 400 for an invalid list or a machine not DOWN.
        """
        with self.state.lock:
            self._check_modes(machine_ids, "DOWN", "is not in DOWN mode and cannot be "
                                                   "brought up")
            keys = {machine_key(m) for m in machine_ids}
            for key in keys:
                del self.state.machines[key]
            windows = []
            for window in self.state.schedule.get("windows", []):
                kept = [m for m in window["machine_ids"] if machine_key(m) not in keys]
                if kept:
                    windows.append({**window, "machine_ids": kept})
            self.state.schedule = {"windows": windows} if windows else {}

    def _check_modes(self, machine_ids: list[Mapping[str, Any]], mode: str,
                     problem: str) -> None:
        error = machines_error(machine_ids)
        if error is not None:
            raise CallError(error)
        for machine_id in machine_ids:
            machine = self.state.machines.get(machine_key(machine_id))
            if machine is None:
                raise CallError(f"Machine '{_machine_json(machine_id)}' is not part of a "
                                "maintenance schedule")
            if machine.mode != mode:
                raise CallError(f"Machine '{_machine_json(machine_id)}' {problem}")

    def maintenance_status(self) -> dict[str, Any]:
        """``maintenance.ClusterStatus``: DRAINING machines with the inverse offer answers of
        their agents' frameworks, DOWN machines."""
        with self.state.lock:
            draining, down = [], []
            for key, machine in sorted(self.state.machines.items()):
                if machine.mode == "DOWN":
                    down.append(dict(machine.id))
                    continue
                entry: dict[str, Any] = {"id": dict(machine.id)}
                statuses = [s for agent in self._machine_agents(key)
                            for s in self.state.inverse_statuses.get(agent.agent_id, {}).values()]
                if statuses:
                    entry["statuses"] = copy.deepcopy(statuses)
                draining.append(entry)
        out: dict[str, Any] = {}
        if draining:
            out["draining_machines"] = draining
        if down:
            out["down_machines"] = down
        return out

    # -- inverse offers --------------------------------------------------------------------

    def make_inverse_offers(self, now: float) -> None:
        """Under the lock, after an allocation run: inverse offers to the frameworks that use
        or are offered resources on agents of scheduled machines (``generateInverseOffers``)."""
        outstanding = {(i.framework_id, i.agent_id) for i in self.state.inverse_offers.values()}
        per_framework: dict[str, list[dict[str, Any]]] = {}
        for agent in self.state.agents.values():
            unavailability = self.unavailability_of(agent)
            if unavailability is None or not agent.active:
                continue
            for fw in self.state.frameworks.values():
                key = (fw.framework_id, agent.agent_id)
                if not fw.connected or fw.subscription is None or key in outstanding:
                    continue
                if not _holds_on(fw, agent.agent_id) or self.state.inverse_filters.is_filtered(
                        fw.framework_id, agent.agent_id, now):
                    continue
                per_framework.setdefault(fw.framework_id, []).append(
                    self._new_inverse_offer(fw, agent, unavailability))
        for fid, offers in per_framework.items():
            fw = self.state.frameworks[fid]
            fw.subscription.send({"type": "INVERSE_OFFERS",
                                  "inverse_offers": {"inverse_offers": offers}})

    def _new_inverse_offer(self, fw: FrameworkRecord, agent: AgentRecord,
                           unavailability: dict[str, Any]) -> dict[str, Any]:
        offer_id = f"{self.state.master_id}-O{self.state.next_offer}"
        self.state.next_offer += 1
        hostname = str(agent.info.get("hostname", self.state.hostname))
        offer = {
            "id": {"value": offer_id},
            "url": {"scheme": "http",
                    "address": {"hostname": hostname, "ip": agent.ip,
                                "port": int(agent.info.get("port", 5051))},
                    "path": self.parts.allocation.agent_path(agent.agent_id)},
            "framework_id": {"value": fw.framework_id},
            "agent_id": {"value": agent.agent_id},
            "unavailability": unavailability,
        }
        self.state.inverse_offers[offer_id] = InverseOfferRecord(
            offer_id, fw.framework_id, agent.agent_id, offer)
        fw.count("inverse_offers/sent")
        return offer

    def answer_inverse_offers(self, fw: FrameworkRecord, body: Mapping[str, Any],
                               status: str) -> None:
        """ACCEPT_INVERSE_OFFERS or DECLINE_INVERSE_OFFERS: each known inverse offer of the
        framework is answered, recorded for the maintenance status and filtered for
        ``refuse_seconds``; unknown ones are ignored."""
        self.state.count(f"messages_{status.lower()}_inverse_offers")
        refuse = (body.get("filters") or {}).get("refuse_seconds")
        now = time.monotonic()
        for oid in (str(o["value"]) for o in body.get("inverse_offer_ids", [])):
            offer = self.state.inverse_offers.get(oid)
            if offer is None or offer.framework_id != fw.framework_id:
                logger.warning("Ignoring %s of inverse offer %s: it is no longer valid",
                               status.lower(), oid)
                continue
            del self.state.inverse_offers[oid]
            fw.count(f"inverse_offers/{status.lower()}ed")
            self.state.inverse_statuses.setdefault(offer.agent_id, {})[fw.framework_id] = {
                "status": status, "framework_id": {"value": fw.framework_id},
                "timestamp": {"nanoseconds": int(time.time() * 1e9)}}
            self.state.inverse_filters.add(fw.framework_id, offer.agent_id,
                                     inverse_refuse_timeout(refuse), now)

    def rescind_inverse_offers(self, agent_id: str | None = None,
                                framework_id: str | None = None) -> None:
        """Under the lock: RESCIND_INVERSE_OFFER for the agent's (or framework's) inverse
        offers."""
        for offer in list(self.state.inverse_offers.values()):
            if agent_id not in (None, offer.agent_id) or framework_id not in (
                    None, offer.framework_id):
                continue
            del self.state.inverse_offers[offer.offer_id]
            fw = self.state.frameworks.get(offer.framework_id)
            if fw is not None and fw.subscription is not None:
                fw.subscription.send({"type": "RESCIND_INVERSE_OFFER", "rescind_inverse_offer": {
                    "inverse_offer_id": {"value": offer.offer_id}}})


def _holds_on(fw: FrameworkRecord, agent_id: str) -> bool:
    """Whether ``fw`` uses or is offered something on the agent (``getOfferedOrAllocated``)."""
    return any(t.agent_id == agent_id and not t.recovered for t in fw.tasks.values()) or any(
        e.agent_id == agent_id for e in fw.executors.values()) or any(
        o.agent_id == agent_id for o in fw.offers.values())
