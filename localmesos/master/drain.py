"""Draining, deactivating and reactivating agents: the operator calls and the master's side.

As Mesos 1.11 (apache/mesos ``src/master/http.cpp`` ``drainAgent``/``_drainAgent``,
``deactivateAgent``, ``reactivateAgent``; ``src/master/master.cpp``
``checkAndTransitionDrainingAgent``, ``markGone``):

* DRAIN_AGENT (``agent_id``, ``max_grace_period``, ``mark_gone``) of a registered or
  unreachable agent: the agent is deactivated (no more offers; outstanding ones rescinded)
  and DRAINING; a registered agent is told to drain (the agent kills its tasks, their
  TASK_KILLING/TASK_KILLED carry ``REASON_AGENT_DRAINING``, or become
  TASK_GONE_BY_OPERATOR with ``mark_gone`` for partition-aware frameworks). Refused (400) for
  an unknown agent ("Unknown agent"), an agent of a machine in the maintenance schedule; 409
  while it is being marked gone.
* Once the master holds no task on it (the terminal updates acknowledged), the agent is
  DRAINED -- or, with ``mark_gone``, gone: removed and shut down for good.
* DEACTIVATE_AGENT stops offers of the agent; REACTIVATE_AGENT resumes them ("Agent is not
  deactivated", "Agent is still in the DRAINING state" otherwise) and ends the draining.
* GET_AGENTS shows ``deactivated``, ``drain_info`` and ``estimated_drain_start_time``.
"""

from __future__ import annotations

from collections.abc import Mapping
import logging
import time
from typing import Any

from disauto.localmesos.master.parts import MasterParts
from disauto.localmesos.master.records import AgentRecord
from disauto.localmesos.master.state import MasterState
from disauto.localmesos.protocol.protojson import CallError


logger = logging.getLogger("disauto.localmesos.master")


def drain_config(max_grace_period: Mapping[str, Any] | None, mark_gone: bool) -> dict[str, Any]:
    """A ``DrainConfig``: the call's ``google.protobuf.Duration`` (``seconds``, ``nanos``) as
    a ``DurationInfo``; ``mark_gone`` always written (it has a default)."""
    config: dict[str, Any] = {"mark_gone": bool(mark_gone)}
    if max_grace_period is not None:
        nanos = int(max_grace_period.get("seconds", 0)) * 1_000_000_000 + int(
            max_grace_period.get("nanos", 0))
        config["max_grace_period"] = {"nanoseconds": nanos}
    return config


class DrainMaster:
    """DRAIN_AGENT, DEACTIVATE_AGENT and REACTIVATE_AGENT (part of :class:`Master`)."""

    def __init__(self, state: MasterState, parts: MasterParts) -> None:
        self.state = state
        self.parts = parts

    def _known_agent(self, agent_id: str) -> AgentRecord | None:
        """Under the lock: the registered agent, or None for an unreachable one.

        Raises:
            CallError: 400 ``Unknown agent`` when it is neither.
        """
        record = self.state.agents.get(agent_id)
        if record is None and agent_id not in self.state.unreachable:
            raise CallError("Unknown agent")
        return record

    def drain_agent(self, agent_id: str, max_grace_period: Mapping[str, Any] | None,
                    mark_gone: bool) -> None:
        """DRAIN_AGENT.

        Raises:
            CallError: 400 (unknown agent, an agent under maintenance, a negative grace
                period).
        """
        with self.state.lock:
            record = self.state.agents.get(agent_id)
            if record is not None and self.parts.maintenance.unavailability_of(record) is not None:
                hostname, ip = record.machine_id
                raise CallError(f"Agent {agent_id} is part of a maintenance schedule under "
                                f"Machine {hostname}@{ip}")
            record = self._known_agent(agent_id)
            config = drain_config(max_grace_period, mark_gone)
            if config.get("max_grace_period", {}).get("nanoseconds", 0) < 0:
                raise CallError("'max_grace_period' must be non-negative")
            self.state.draining[agent_id] = {"state": "DRAINING", "config": config}
            self.state.deactivated.add(agent_id)
            if record is None:
                return
            logger.info("Transitioning agent %s to the DRAINING state", agent_id)
            self.parts.partitions.deactivate(record)
            record.drain_started = time.time()
            record.link.post("drain", dict(config))
            self.check_drained(record)

    def deactivate_agent(self, agent_id: str) -> None:
        """DEACTIVATE_AGENT.

        Raises:
            CallError: 400 ``Unknown agent``.
        """
        with self.state.lock:
            record = self._known_agent(agent_id)
            self.state.deactivated.add(agent_id)
            if record is not None:
                self.parts.partitions.deactivate(record)

    def reactivate_agent(self, agent_id: str) -> None:
        """REACTIVATE_AGENT.

        Raises:
            CallError: 400 for an unknown agent, one not deactivated or still DRAINING; 409
                when it was removed meanwhile.
        """
        with self.state.lock:
            self._known_agent(agent_id)
            if agent_id not in self.state.deactivated:
                raise CallError("Agent is not deactivated")
            if self.state.draining.get(agent_id, {}).get("state") == "DRAINING":
                raise CallError("Agent is still in the DRAINING state")
            self.state.draining.pop(agent_id, None)
            self.state.deactivated.discard(agent_id)
            record = self.state.agents.get(agent_id)
            if record is None:
                raise CallError("Agent removed while processing the call", 409)
            record.drain_started = None
            if record.connected:
                logger.info("Reactivating agent %s", agent_id)
                record.active = True
        self.state.loop.trigger()

    def check_drained(self, record: AgentRecord) -> None:
        """Under the lock: a DRAINING agent the master holds no task on is DRAINED, or gone
        with ``mark_gone`` (``checkAndTransitionDrainingAgent``)."""
        drain = self.state.draining.get(record.agent_id)
        if drain is None or drain["state"] == "DRAINED":
            return
        if any(t.agent_id == record.agent_id for fw in self.state.frameworks.values()
               for t in fw.tasks.values()):
            return
        if drain["config"].get("mark_gone"):
            logger.info("Marking agent %s in the DRAINED state as gone", record.agent_id)
            self.parts.partitions.remove_agent_by_operator(
                record, "Agent has been marked gone", gone=True)
            return
        logger.info("Agent %s successfully marked as DRAINED", record.agent_id)
        drain["state"] = "DRAINED"
