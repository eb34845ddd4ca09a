"""The registry of elected masters, kept in ZooKeeper so that it outlives the leader.

A Mesos master keeps, in its registry, what must survive a failover: the admitted agents, the
unreachable and gone ones, the maintenance schedule and machines' modes, quotas, weights, and
which agents are draining or deactivated (apache/mesos ``src/master/registry.proto``). The
leader writes it through the registrar (``src/master/registrar.cpp``) into a replicated log
that its peers hold (``src/log/``); the next leader recovers it before it serves
(``Master::recover``, ``_recover``). Everything else (frameworks, tasks, offers) is learned
again: from the agents that re-register with their tasks and frameworks, and from the
frameworks that subscribe again.

The embedded masters have no replicated log; their registry is one JSON document in the
data of the znode ``PATH/log_replicas`` of their ZooKeeper group (where Mesos' replicated log
keeps its replicas' membership, and a name every detector skips). ZooKeeper is the replicated,
consistent store here, as it was for Mesos' ``--registry=zookeeper`` state storage
(``src/state/zookeeper.cpp``). Writes are conditional on the version this master last read or
wrote (``set(..., version=)``): a master that was frozen while another took over finds the
version moved, and its candidacy ends (``on_lost``) instead of overwriting the new leader's
registry, as a Mesos registrar's write fails against a log with a higher proposal.

The registrar writes what changed every :data:`WRITE_INTERVAL` seconds, and at once when asked
(:meth:`Registrar.commit`, after an operator call, before it is answered).
"""

from __future__ import annotations

from collections.abc import Callable
import copy
import json
import logging
import threading
import time
from typing import TYPE_CHECKING
from typing import Any

from disauto.localmesos.master.maintenance import machine_key
from disauto.localmesos.master.quota import Quota
from disauto.localmesos.master.records import Machine


if TYPE_CHECKING:
    from disauto.localmesos.master.master import Master

logger = logging.getLogger("disauto.localmesos.master")

REGISTRY_ZNODE = "log_replicas"
"""The child of the group's path whose data is the registry."""

WRITE_INTERVAL = 0.25
"""Seconds between the registrar's looks for a change."""


def snapshot(master: Master) -> dict[str, Any]:
    """What the registry holds of ``master`` now (JSON)."""
    with master.lock:
        admitted = {aid: info for aid, info in master.recovered_agents.items()
                    if master.awaits_recovered_agents()}
        admitted.update({aid: record.info for aid, record in master.agents.items()})
        return {
            "admitted": admitted,
            "agent_slots": list(master.agent_slots),
            "unreachable": {aid: entry.time for aid, entry in master.unreachable.items()},
            "gone": dict(master.gone),
            "weights": dict(master.weights),
            "quotas": {role: {"guarantees": dict(quota.guarantees),
                              "limits": dict(quota.limits)}
                       for role, quota in master.quotas.items()},
            "schedule": copy.deepcopy(master.schedule),
            "machines": [{"id": m.id, "mode": m.mode, "unavailability": m.unavailability}
                         for m in master.machines.values()],
            "draining": copy.deepcopy(master.draining),
            "deactivated": sorted(master.deactivated),
        }


def restore(master: Master, registry: dict[str, Any]) -> None:
    """Take a recovered registry (before the master serves). Admitted and unreachable agents
    are kept as ``recovered_agents`` for ``agent_reregister_timeout`` (Mesos' "allowing 10mins
    for agents to reregister"): they re-register with their tasks, and meanwhile a
    reconciliation of a task on one is answered by nothing (``Master::reconcile``'s case 2).
    Mesos then marks those still away unreachable; here they are forgotten (a reconciliation
    answers TASK_UNKNOWN, which a framework takes for lost as it would TASK_UNREACHABLE's
    end)."""
    with master.lock:
        master.agent_slots[:] = [str(a) for a in registry.get("agent_slots", [])]
        master.gone.update({str(k): float(v) for k, v in registry.get("gone", {}).items()})
        master.weights.update({str(k): float(v)
                               for k, v in registry.get("weights", {}).items()})
        master.quotas.update({
            str(role): Quota(guarantees=dict(q.get("guarantees", {})),
                             limits=dict(q.get("limits", {})))
            for role, q in registry.get("quotas", {}).items()})
        master.schedule = copy.deepcopy(registry.get("schedule", {}))
        for entry in registry.get("machines", []):
            machine = Machine(dict(entry["id"]), entry.get("mode", "DRAINING"),
                              entry.get("unavailability"))
            master.machines[machine_key(machine.id)] = machine
        master.draining.update(copy.deepcopy(registry.get("draining", {})))
        master.deactivated.update(registry.get("deactivated", []))
        master.recovered_agents = {
            **{str(k): dict(v) for k, v in registry.get("admitted", {}).items()},
            **{str(k): {} for k in registry.get("unreachable", {})
               if k not in registry.get("admitted", {})}}
        master.recovered_until = time.monotonic() + master.agent_reregister_timeout


class Registrar:
    """Writes the leader's registry into ZooKeeper (see the module docstring). Thread-safe.

    Args:
        master: the leading master.
        client: a started kazoo client (the contender's).
        path: the group's path.
        on_lost: called once when another master wrote the registry since this one did.
    """

    def __init__(self, master: Master, client: Any, path: str,
                 on_lost: Callable[[str], None]) -> None:
        self.master = master
        self._client = client
        self.node = f"{path}/{REGISTRY_ZNODE}"
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self._version = -1
        self._written = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="localmesos-registrar",
                                        daemon=True)

    def recover(self) -> dict[str, Any]:
        """Read the registry (empty when none was written yet) and remember its version."""
        from kazoo.exceptions import NoNodeError

        try:
            data, stat = self._client.get(self.node)
        except NoNodeError:
            self._client.ensure_path(self.node)
            data, stat = self._client.get(self.node)
        with self._lock:
            self._version = stat.version
            self._written = data.decode() if data else ""
        try:
            registry = json.loads(self._written) if self._written else {}
        except ValueError:
            logger.error("The registry in %s is not JSON; starting from an empty one",
                         self.node)
            registry = {}
        return registry if isinstance(registry, dict) else {}

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(5)

    def commit(self) -> bool:
        """Write the registry if it changed; False when this master may no longer write it."""
        from kazoo.exceptions import BadVersionError
        from kazoo.exceptions import KazooException

        text = json.dumps(snapshot(self.master), sort_keys=True)
        with self._lock:
            if text == self._written or self._stop.is_set():
                return not self._stop.is_set()
            try:
                stat = self._client.set(self.node, text.encode(), version=self._version)
            except BadVersionError:
                self._stop.set()
                lost = True
            except KazooException as exc:
                logger.warning("Cannot write the registry yet: %s", exc)
                return True
            else:
                self._version, self._written, lost = stat.version, text, False
        if lost:
            self._on_lost("another master wrote the registry")
            return False
        return True

    def _run(self) -> None:
        while not self._stop.wait(WRITE_INTERVAL):
            try:
                self.commit()
            except Exception:  # noqa: BLE001 - the next look tries again
                logger.exception("The registrar failed to write")
