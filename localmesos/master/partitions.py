"""Agents that stop answering, restart, come back or go: the master's side.

As Mesos 1.11 (apache/mesos ``src/master/master.cpp``: ``SlaveObserver``, ``markUnreachable``,
``__removeSlave``, ``exited``, ``removeFramework(Slave*, Framework*)``,
``agentReregisterTimeout``, ``reregisterSlave``/``__reregisterSlave``/``___reregisterSlave``,
``reconcileKnownSlave``, ``markGone``):

* **Pings.** Every ``agent_ping_timeout`` the master pings each agent; an agent that answers
  none of ``max_agent_ping_timeouts`` pings in a row is marked **unreachable**: it leaves
  the registered agents for the registry's unreachable list (kept ``registry_max_agent_age``),
  its offers and inverse offers are rescinded, and each of its tasks becomes TASK_UNREACHABLE
  (TASK_LOST for frameworks without PARTITION_AWARE), ``REASON_AGENT_REMOVED``, "health
  check timed out", with ``unreachable_time``; connected frameworks also get FAILURE naming
  the agent (``LostSlaveMessage``).
* **Disconnection** (the agent's process died: ``exited``). The agent is deactivated (offers
  rescinded); the tasks of frameworks that do not checkpoint become TASK_LOST,
  ``REASON_AGENT_DISCONNECTED``, "Agent <hostname> disconnected"; an agent that does not
  re-register within ``agent_reregister_timeout`` is marked unreachable.
* **Re-registration.** An unreachable (or unknown) agent is admitted again: every task it
  reports comes back, and its framework gets the task's state with
  ``REASON_AGENT_REREGISTERED``, "Unreachable agent re-reregistered" (sic), whether it is
  partition aware or not (Mesos >= 1.5); a framework the master does not know (after a
  failover of the master) is recovered, disconnected, from the agent's report
  (``updateSlaveFrameworks``) until it subscribes again. A registered agent (after a
  restart) is reconciled: tasks it does not report are reconciled through it (it answers
  TASK_LOST/TASK_DROPPED), executors it does not report are removed, tasks killed meanwhile
  are killed again. Either way, frameworks the master removed are shut down on it, and a
  deactivated or draining agent stays so (and is told to drain again).
* **Gone** (DRAIN_AGENT with ``mark_gone``, START_MAINTENANCE): the agent is removed and
  shut down; its tasks become TASK_GONE_BY_OPERATOR (``REASON_AGENT_REMOVED_BY_OPERATOR``;
  TASK_LOST, ``REASON_AGENT_REMOVED``, without PARTITION_AWARE). A gone agent may not
  re-register.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from typing import Any

from disauto.localmesos.master.agent_link import AgentLike
from disauto.localmesos.master.agent_link import AgentLink
from disauto.localmesos.master.parts import MasterParts
from disauto.localmesos.master.records import PARTITION_AWARE_STATES
from disauto.localmesos.master.records import TERMINAL_STATES
from disauto.localmesos.master.records import AgentRecord
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.records import TaskRecord
from disauto.localmesos.master.records import UnreachableAgent
from disauto.localmesos.master.records import resources_of
from disauto.localmesos.master.remote_agent import RemoteAgent
from disauto.localmesos.master.state import MasterState
from disauto.localmesos.protocol.registration import ReregisterAgent
from disauto.localmesos.protocol.registration import Reregistered


logger = logging.getLogger("disauto.localmesos.master")


def _time_info(seconds: float) -> dict[str, int]:
    return {"nanoseconds": int(round(seconds * 1e9))}


def mesos_duration(seconds: float) -> str:
    """A Duration as Mesos prints it: ``10mins``, ``75secs``, ``500ms``."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}mins"
    if seconds >= 1 or seconds == 0:
        return f"{seconds:g}secs"
    return f"{seconds * 1000:g}ms"


class AgentHealth:
    """Pings, unreachable agents, disconnections and re-registrations (part of :class:`Master`)."""

    def __init__(self, state: MasterState, parts: MasterParts) -> None:
        self.state = state
        self.parts = parts

    def start_health(self) -> None:
        """Start pinging the agents."""
        self._health_cond = threading.Condition(self.state.lock)
        self._health_thread = threading.Thread(target=self._health_loop,
                                               name="localmesos-master-pings", daemon=True)
        self._health_thread.start()

    def stop_health(self) -> None:
        """Wake the ping thread to see ``state.stopped`` (set first), and join it."""
        with self.state.lock:
            self._health_cond.notify_all()
        if self._health_thread.is_alive():
            self._health_thread.join()

    def _health_loop(self) -> None:
        """Ping every agent each ``agent_ping_timeout`` (``SlaveObserver``)."""
        with self.state.lock:
            while not self.state.stopped:
                self._health_cond.wait(self.state.agent_ping_timeout)
                if self.state.stopped:
                    return
                self._health_tick(time.monotonic())

    def _health_tick(self, now: float) -> None:
        """Under the lock: count unanswered pings, mark the silent agents unreachable, ping
        the others; time out disconnected agents; forget old unreachable ones."""
        for record in list(self.state.agents.values()):
            if record.pinged:
                record.ping_timeouts += 1
                if record.ping_timeouts >= self.state.max_agent_ping_timeouts:
                    self.state.count("slave_unreachable_scheduled")
                    self.state.count("slave_unreachable_completed")
                    self._mark_unreachable(record, "health check timed out")
                    continue
            if (record.reregister_deadline is not None and now >= record.reregister_deadline
                    and not record.connected):
                self.state.count("slave_unreachable_scheduled")
                self.state.count("slave_unreachable_completed")
                self._mark_unreachable(record, (
                    "agent did not reregister within "
                    f"{mesos_duration(self.state.agent_reregister_timeout)} after disconnecting"))
                continue
            record.pinged = True
            record.link.post("ping", record.connected)
        cutoff = time.time() - self.state.registry_max_agent_age
        for agent_id in [a for a, u in self.state.unreachable.items() if u.time < cutoff]:
            self._forget_unreachable(agent_id)

    def _forget_unreachable(self, agent_id: str) -> None:
        """Under the lock: the registry's garbage collection drops an agent unreachable for
        longer than ``registry_max_agent_age``, and the frameworks' unreachable tasks that
        were on it (``Master::_doRegistryGc``)."""
        logger.info("Removing unreachable agent %s from the registry (older than %s)",
                    agent_id, mesos_duration(self.state.registry_max_agent_age))
        entry = self.state.unreachable.pop(agent_id)
        for framework_id, task_ids in entry.tasks.items():
            fw = self.state.frameworks.get(framework_id)
            if fw is not None:
                for task_id in task_ids:
                    fw.unreachable_tasks.pop(task_id, None)

    def pong(self, agent_id: str) -> None:
        """The agent answered a ping (``SlaveObserver::pong``)."""
        with self.state.lock:
            record = self.state.agents.get(agent_id)
            if record is not None:
                record.pinged = False
                record.ping_timeouts = 0

    # -- unreachable and gone agents -------------------------------------------------------

    def _mark_unreachable(self, record: AgentRecord, message: str) -> None:
        """Under the lock: the agent goes to the unreachable list (``markUnreachable``)."""
        logger.info("Marking agent %s unreachable: %s", record.agent_id, message)
        self.state.count("slave_removals")
        self.state.count("slave_removals/reason_unhealthy")
        now = time.time()
        entry = UnreachableAgent(record, now)
        self.state.unreachable[record.agent_id] = entry
        entry.tasks = self._remove_agent(record, message, now)
        self._send_agent_lost(record.agent_id)

    def remove_agent_by_operator(self, record: AgentRecord, message: str, *,
                                 gone: bool = False) -> None:
        """Under the lock: remove the agent and tell it to shut down (START_MAINTENANCE's
        ``removeSlave``, ``markGone``)."""
        logger.info("Removing agent %s: %s", record.agent_id, message)
        record.link.post("shutdown", message)
        if gone:
            self.state.gone[record.agent_id] = time.time()
            self.state.draining.pop(record.agent_id, None)
            self.state.deactivated.discard(record.agent_id)
        self.state.count("slave_removals")
        self.state.count("slave_removals/reason_unregistered")
        self._remove_agent(record, message, None)
        self._send_agent_lost(record.agent_id)

    def _remove_agent(self, record: AgentRecord, message: str,
                      unreachable_time: float | None) -> dict[str, set[str]]:
        """Under the lock: ``__removeSlave``. Tasks become TASK_UNREACHABLE (with
        ``unreachable_time``) or TASK_GONE_BY_OPERATOR (without), TASK_LOST for frameworks
        that are not partition aware; returns the unreachable tasks by framework."""
        agent_id = record.agent_id
        self.state.agents.pop(agent_id, None)
        record.link.stop_later()
        kept: dict[str, set[str]] = {}
        for fw in list(self.state.frameworks.values()):
            for task in [t for t in fw.tasks.values() if t.agent_id == agent_id]:
                self._task_removed_with_agent(fw, task, message, unreachable_time)
                if unreachable_time is not None:
                    kept.setdefault(fw.framework_id, set()).add(task.task_id)
            for key in [k for k in fw.executors if k[0] == agent_id]:
                del fw.executors[key]
            for offer in [o for o in fw.offers.values() if o.agent_id == agent_id]:
                self.parts.tasks.rescind(offer)
        self.parts.maintenance.rescind_inverse_offers(agent_id=agent_id)
        self.state.inverse_statuses.pop(agent_id, None)
        return kept

    def _task_removed_with_agent(self, fw: FrameworkRecord, task: TaskRecord, message: str,
                                 unreachable_time: float | None) -> None:
        if unreachable_time is not None:
            state, reason = "TASK_UNREACHABLE", "REASON_AGENT_REMOVED"
        else:
            state, reason = "TASK_GONE_BY_OPERATOR", "REASON_AGENT_REMOVED_BY_OPERATOR"
        if not fw.partition_aware:
            state, reason = "TASK_LOST", "REASON_AGENT_REMOVED"
        extra = {} if unreachable_time is None else {
            "unreachable_time": _time_info(unreachable_time)}
        self._master_transition(fw, task, state, reason, message, extra)
        fw.tasks.pop(task.task_id, None)
        if unreachable_time is not None:
            fw.unreachable_tasks[task.task_id] = task
        else:
            fw.completed_tasks.append(task)

    def _master_transition(self, fw: FrameworkRecord, task: TaskRecord, state: str,
                           reason: str, message: str, extra: dict[str, Any]) -> None:
        """Under the lock: the master moves a task to ``state`` itself (``updateTask`` and
        ``forward``): recorded, counted, its resources recovered, sent to a connected
        framework (without uuid: not reliable)."""
        if state in PARTITION_AWARE_STATES and not fw.partition_aware:
            state = "TASK_LOST"
        status: dict[str, Any] = {
            "task_id": {"value": task.task_id}, "state": state, "message": message,
            "source": "SOURCE_MASTER", "reason": reason, "timestamp": time.time(),
            "agent_id": {"value": task.agent_id}, **extra}
        if task.executor_id:
            status["executor_id"] = {"value": task.executor_id}
        was_terminal = task.state in TERMINAL_STATES or task.state == "TASK_UNREACHABLE"
        task.state = state
        task.status_update_state = state
        task.statuses.append(status)
        if not was_terminal and state in TERMINAL_STATES:
            self.state.count_task_state(fw, state, "SOURCE_MASTER", reason)
        self.parts.tasks.recover_task(fw, task)
        if fw.connected and fw.subscription is not None:
            fw.subscription.send({"type": "UPDATE", "update": {"status": status}})
        else:
            logger.warning("Dropping update %s of task %s for disconnected framework %s",
                           state, task.task_id, fw.framework_id)

    def _send_agent_lost(self, agent_id: str) -> None:
        """Under the lock: FAILURE naming the agent to every connected framework
        (``sendSlaveLost``; pymesos calls ``slaveLost``)."""
        for fw in self.state.frameworks.values():
            if fw.connected and fw.subscription is not None:
                fw.subscription.send({"type": "FAILURE",
                                      "failure": {"agent_id": {"value": agent_id}}})
                fw.count("events/failure")

    # -- disconnection ---------------------------------------------------------------------

    def agent_disconnected(self, agent_id: str) -> None:
        """The connection to the agent broke: its process is gone (``Master::exited``)."""
        with self.state.lock:
            record = self.state.agents.get(agent_id)
            if record is None or not record.connected:
                return
            logger.info("Agent %s disconnected", agent_id)
            record.connected = False
            record.reregister_deadline = time.monotonic() + self.state.agent_reregister_timeout
            self.deactivate(record)
            hostname = str(record.info.get("hostname", ""))
            for fw in list(self.state.frameworks.values()):
                if fw.info.get("checkpoint"):
                    continue
                self._remove_framework_from_agent(fw, record, hostname)

    def _remove_framework_from_agent(self, fw: FrameworkRecord, record: AgentRecord,
                                     hostname: str) -> None:
        """Under the lock: a non-checkpointing framework loses what it had on a disconnected
        agent (``removeFramework(Slave*, Framework*)``)."""
        for task in [t for t in fw.tasks.values() if t.agent_id == record.agent_id]:
            self._master_transition(fw, task, "TASK_LOST", "REASON_AGENT_DISCONNECTED",
                                    f"Agent {hostname} disconnected", {})
            self.parts.tasks.remove_task(fw, task)
        for key in [k for k in fw.executors if k[0] == record.agent_id]:
            del fw.executors[key]

    def deactivate(self, record: AgentRecord) -> None:
        """Under the lock: no more offers of the agent (``Master::deactivate``)."""
        record.active = False
        for offer in [o for o in self.state.offers.values() if o.agent_id == record.agent_id]:
            self.parts.tasks.rescind(offer)
        self.parts.maintenance.rescind_inverse_offers(agent_id=record.agent_id)

    # -- re-registration -------------------------------------------------------------------

    def register(self, agent: AgentLike, info: dict[str, Any]) -> AgentRecord:
        """Under the lock: a registered agent record with its link to the agent.

        An embedded agent is served on the master's address (its ``port``, the IP of its pid);
        an agent of another process (:class:`RemoteAgent`) on its host's.
        """
        info = dict(info)
        remote = agent if isinstance(agent, RemoteAgent) else None
        if remote is not None:
            info["port"] = remote.port
        elif self.state.port:
            info["port"] = self.state.port
        link = AgentLink(agent)
        link.start()
        record = AgentRecord(agent, link, info, time.time(), agent.total,
                             ip=self.state.hostname if remote is None else remote.host,
                             pid=None if remote is None else remote.pid)
        self.state.agents[agent.id] = record
        if agent.id not in self.state.agent_slots:
            self.state.agent_slots.append(agent.id)
        return record

    def reregister_agent(self, agent: AgentLike, report: ReregisterAgent) -> Reregistered | None:
        """An agent re-registers (any thread). None when it is ignored; a ``shutdown``
        answer when it is refused (gone, or on a DOWN machine)."""
        self.state.count("messages_reregister_slave")
        if self.parts.maintenance.machine_is_down(report.info):
            return Reregistered(shutdown="Machine is `DOWN`")
        with self.state.lock:
            if self.state.stopped:
                return None
            if report.agent_id in self.state.gone:
                return Reregistered(shutdown="Agent has been marked gone")
            known = self.state.agents.get(report.agent_id)
            if known is not None:
                answer = self._reregister_known(known, agent, report)
            else:
                answer = self._readmit(agent, report)
            self.state.count("slave_reregistrations")
            self._after_reregistration(report)
        self.state.loop.trigger()
        return answer

    def _relink(self, record: AgentRecord, agent: AgentLike) -> None:
        """Under the lock: talk to the (possibly new) agent object from now on."""
        if record.agent is not agent:
            record.link.stop_later()
            record.agent = agent
            record.link = AgentLink(agent)
            record.link.start()
        if isinstance(agent, RemoteAgent):  # its host may have moved
            record.pid, record.ip = agent.pid, agent.host
            record.info["port"] = agent.port
        record.reregistered_time = time.time()
        record.pinged = False
        record.ping_timeouts = 0

    def _reregister_known(self, record: AgentRecord, agent: AgentLike,
                          report: ReregisterAgent) -> Reregistered:
        """Under the lock: a registered agent comes back (``___reregisterSlave``)."""
        logger.info("Agent %s re-registered", report.agent_id)
        self._relink(record, agent)
        reported = {(t.framework_id, t.task_id) for t in report.tasks}
        reconcile: list[tuple[dict[str, Any], str]] = []
        for fw in self.state.frameworks.values():
            for task in fw.tasks.values():
                if task.agent_id == record.agent_id and (fw.framework_id,
                                                         task.task_id) not in reported:
                    reconcile.append((dict(fw.info), task.task_id))
        executors = {(e["framework_id"]["value"], e["executor_id"]["value"])
                     for e in report.executors}
        for fw in self.state.frameworks.values():
            for key in [k for k in fw.executors if k[0] == record.agent_id]:
                if (fw.framework_id, key[1]) not in executors and fw.executors[key].hosted:
                    del fw.executors[key]
        for task_report in report.tasks:
            fw = self.state.frameworks.get(task_report.framework_id)
            task = fw.tasks.get(task_report.task_id) if fw is not None else None
            if task is not None and task.kill_sent and task_report.state not in TERMINAL_STATES:
                record.link.post("kill_task", fw.framework_id, task.task_id, None)
        record.connected = True
        record.reregister_deadline = None
        if record.agent_id not in self.state.deactivated:
            record.active = True
        return Reregistered(tuple(reconcile), self.state.total_ping_timeout)

    def _readmit(self, agent: AgentLike, report: ReregisterAgent) -> Reregistered:
        """Under the lock: an unreachable or unknown agent is admitted again with the tasks
        it reports (``__reregisterSlave``)."""
        entry = self.state.unreachable.pop(report.agent_id, None)
        message = ("Unreachable agent re-reregistered" if entry is not None
                   else "Unknown agent reregistered")
        logger.info("Agent %s: %s", report.agent_id, message)
        record = self.register(agent, report.info)
        record.reregistered_time = time.time()
        record.active = report.agent_id not in self.state.deactivated
        self._recover_frameworks(report)
        for task_report in report.tasks:
            fw = self.state.frameworks.get(task_report.framework_id)
            if fw is None:
                continue
            self._readmit_task(fw, record, task_report, message)
        for executor in report.executors:
            fw = self.state.frameworks.get(executor["framework_id"]["value"])
            if fw is not None:
                self.parts.launch.register_executor(fw, record, self._role_of(fw, executor),
                                                    executor, hosted=True)
        for fw in self.state.frameworks.values():
            for task in fw.tasks.values():
                if task.executor_id and (task.agent_id, task.executor_id) in fw.executors:
                    fw.executors[(task.agent_id, task.executor_id)].tasks.add(task.task_id)
        return Reregistered((), self.state.total_ping_timeout)

    def _recover_frameworks(self, report: ReregisterAgent) -> None:
        """Under the lock: the frameworks a re-admitted agent runs tasks of, which this
        master does not know (it was elected since they subscribed), are added disconnected
        with the agent's FrameworkInfo, so that their tasks are theirs when they subscribe
        again (Mesos ``Master::__reregisterSlave``, ``recoverFramework``)."""
        for info in report.frameworks:
            fid = (info.get("id") or {}).get("value")
            if not fid or fid in self.state.frameworks or fid in self.state.removed_ids:
                continue
            fw = self.parts.subscriptions.add_framework(fid, copy.deepcopy(dict(info)),
                                                        recovered=True)
            fw.connected = False
            fw.unregistered_time = time.time()
            logger.info("Recovered framework %s (%s) from agent %s", fid, fw.name,
                        report.agent_id)

    def _readmit_task(self, fw: FrameworkRecord, record: AgentRecord, report: Any,
                      message: str) -> None:
        """Under the lock: a task of a re-admitted agent is the framework's again."""
        old = fw.unreachable_tasks.pop(report.task_id, None)
        fw.completed_tasks = type(fw.completed_tasks)(
            (t for t in fw.completed_tasks if t.task_id != report.task_id),
            maxlen=fw.completed_tasks.maxlen)
        task = TaskRecord(
            info=old.info if old is not None else dict(report.info),
            framework_id=fw.framework_id, agent_id=record.agent_id,
            role=old.role if old is not None else self._role_of(fw, report.info),
            resources=resources_of(report.info.get("resources", [])),
            executor_id=report.executor_id, state=report.state,
            statuses=list(old.statuses) if old is not None else [])
        task.status_update_state = report.state
        task.recovered = report.state in TERMINAL_STATES  # it holds nothing any more
        fw.tasks[task.task_id] = task
        status: dict[str, Any] = {
            "task_id": {"value": task.task_id}, "state": report.state, "message": message,
            "source": "SOURCE_MASTER", "reason": "REASON_AGENT_REREGISTERED",
            "timestamp": time.time(), "agent_id": {"value": record.agent_id}}
        if task.executor_id:
            status["executor_id"] = {"value": task.executor_id}
        for key in ("healthy", "container_status"):
            if key in report.status:
                status[key] = report.status[key]
        if fw.connected and fw.subscription is not None:
            fw.subscription.send({"type": "UPDATE", "update": {"status": status}})

    @staticmethod
    def _role_of(fw: FrameworkRecord, info: dict[str, Any]) -> str:
        """The role a recovered task's or executor's resources were allocated to."""
        for item in info.get("resources") or []:
            role = (item.get("allocation_info") or {}).get("role")
            if isinstance(role, str):
                return role
        return fw.roles[0] if fw.roles else "*"

    def _after_reregistration(self, report: ReregisterAgent) -> None:
        """Under the lock: removed frameworks are shut down on the agent, a draining agent
        drains again."""
        record = self.state.agents[report.agent_id]
        on_agent = {t.framework_id for t in report.tasks} | {
            f["id"]["value"] for f in report.frameworks if f.get("id")}
        for fid in on_agent:
            if fid in self.state.removed_ids:
                logger.info("Shutting down framework %s on re-registered agent %s", fid,
                            report.agent_id)
                record.link.post("shutdown_framework", fid)
        drain = self.state.draining.get(report.agent_id)
        if drain is not None:
            record.active = False
            record.link.post("drain", dict(drain["config"]))
            self.parts.drain.check_drained(record)
