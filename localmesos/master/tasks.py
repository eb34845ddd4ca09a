"""The embedded master's book-keeping of tasks, frameworks and offers as agents report.

The master's ``tasks`` part (:mod:`localmesos.master.parts`). ``receive_status_update`` is
called by agents from any thread and takes the master's lock itself (asking the agent for the
task's latest state before, never under it); everything else runs under the lock. A task's
resources are recovered once, on its first terminal state; it leaves ``tasks`` only when that
update is acknowledged or its framework is removed.
"""

from __future__ import annotations

from collections.abc import Mapping
import logging
import time
from typing import Any

from disauto.localmesos.master.parts import MasterParts
from disauto.localmesos.master.records import TERMINAL_STATES
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.records import OfferRecord
from disauto.localmesos.master.records import TaskRecord
from disauto.localmesos.master.records import uuid_bytes
from disauto.localmesos.master.state import MasterState


logger = logging.getLogger("disauto.localmesos.master")


class TaskBookkeeping:
    """Status updates from agents; removing tasks, frameworks, offers (part of :class:`Master`)."""

    def __init__(self, state: MasterState, parts: MasterParts) -> None:
        self.state = state
        self.parts = parts

    def receive_status_update(self, status: dict[str, Any],
                              latest_state: str | None = None) -> None:
        """Take a status update from an agent (any thread; the agent holds no lock).

        ``status`` is a TaskStatus carrying ``uuid``, ``agent_id``, ``executor_id`` and the
        routing-only ``framework_id`` (stripped before the update is forwarded).
        ``latest_state``: the agent's latest state of the task, as an agent of another process
        sends it with the update (``StatusUpdate.latest_state``, set in ``Slave::forward``);
        an embedded agent is asked.
        """
        status = dict(status)
        fid = status.pop("framework_id", None)
        framework_id = fid.get("value") if isinstance(fid, Mapping) else fid
        agent_id = str((status.get("agent_id") or {}).get("value", ""))
        task_id = str((status.get("task_id") or {}).get("value", ""))
        # Mesos status updates carry the agent's latest state of the task, so the master learns
        # of a terminal state even while an earlier update waits for its acknowledgement.
        latest = latest_state
        with self.state.lock:
            record = self.state.agents.get(agent_id)
        if latest is None and record is not None and hasattr(record.agent, "latest_state") \
                and framework_id:
            try:
                latest = record.agent.latest_state(str(framework_id), task_id)
            except Exception:  # noqa: BLE001 - best effort
                latest = None
        with self.state.lock:
            self.state.count("messages_status_update")
            fw = self.state.frameworks.get(str(framework_id)) if framework_id else None
            if fw is None:
                logger.info(
                    "Ignoring status update %s of task %s: unknown framework %s",
                    status.get("state"), task_id, framework_id,
                )
                self.state.count("invalid_status_updates")
                return
            if fw.connected and fw.subscription is not None:
                fw.subscription.send({"type": "UPDATE", "update": {"status": status}})
            task = fw.tasks.get(task_id)
            if task is None:
                self.state.count("invalid_status_updates")
                return
            self.state.count("valid_status_updates")
            # Recovered resources wait for the next batch allocation, as in Mesos.
            self._update_task(fw, task, status, latest)

    def _update_task(
        self,
        fw: FrameworkRecord,
        task: TaskRecord,
        status: Mapping[str, Any],
        latest: str | None,
    ) -> None:
        state = str(status.get("state"))
        was_terminal = task.state in TERMINAL_STATES
        if not was_terminal:
            task.state = latest or state
        task.status_update_state = state
        task.status_update_uuid = uuid_bytes(status.get("uuid"))
        uuid_b64 = str(status.get("uuid", ""))
        if not uuid_b64 or uuid_b64 not in task.seen_uuids:
            # A re-sent update is recorded once; ``data`` is never stored (Mesos strips it).
            task.seen_uuids.add(uuid_b64)
            task.statuses.append({k: v for k, v in status.items() if k not in ("data", "uuid")})
        if not was_terminal and task.state in TERMINAL_STATES:
            same = task.state == state
            self.state.count_task_state(
                fw,
                task.state,
                status.get("source") if same else None,
                status.get("reason") if same else None,
            )
            self.recover_task(fw, task)
            if task.group and task.state != "TASK_FINISHED":
                self._end_group(fw, task)

    def exited_executor(
        self, agent_id: str, framework_id: str, executor_id: str, status: int
    ) -> None:
        """An agent's executor exited (Mesos ``Master::exitedExecutor``; any thread): its
        resources are recovered and a connected framework gets FAILURE."""
        with self.state.lock:
            self.state.count("messages_exited_executor")
            fw = self.state.frameworks.get(framework_id)
            key = (agent_id, executor_id)
            if agent_id not in self.state.agents or fw is None or key not in fw.executors:
                logger.warning("Ignoring unknown exited executor '%s' of framework %s on "
                               "agent %s", executor_id, framework_id, agent_id)
                return
            logger.info("Executor '%s' of framework %s on agent %s exited (wait status %d)",
                        executor_id, framework_id, agent_id, status)
            # Recovered resources wait for the next batch allocation, as in Mesos.
            del fw.executors[key]
            if not fw.connected or fw.subscription is None:
                logger.warning("Not forwarding exited executor '%s': framework %s is "
                               "disconnected", executor_id, framework_id)
                return
            fw.subscription.send({
                "type": "FAILURE",
                "failure": {"agent_id": {"value": agent_id},
                            "executor_id": {"value": executor_id}, "status": status},
            })
            fw.count("events/failure")

    def executor_message(
        self, agent_id: str, framework_id: str, executor_id: str, data: str
    ) -> None:
        """An executor's MESSAGE (Mesos ``Master::executorMessage``; any thread): to the
        framework as MESSAGE when it is connected, dropped otherwise."""
        with self.state.lock:
            self.state.count("messages_executor_to_framework")
            fw = self.state.frameworks.get(framework_id)
            if agent_id not in self.state.agents or fw is None or not fw.connected or (
                fw.subscription is None
            ):
                logger.warning("Not forwarding executor message of executor '%s' of framework "
                               "%s: the framework is unknown or disconnected", executor_id,
                               framework_id)
                self.state.count("invalid_executor_to_framework_messages")
                return
            fw.subscription.send({
                "type": "MESSAGE",
                "message": {"agent_id": {"value": agent_id},
                            "executor_id": {"value": executor_id}, "data": data},
            })
            fw.count("events/message")
            self.state.count("valid_executor_to_framework_messages")

    def _end_group(self, fw: FrameworkRecord, failed: TaskRecord) -> None:
        """A task of a group failed or was killed: kill the rest (as the default executor)."""
        for task_id in failed.group:
            task = fw.tasks.get(task_id)
            if task is not None and task is not failed and task.state not in TERMINAL_STATES:
                self.state.agents[task.agent_id].link.post("kill_task", fw.framework_id, task_id,
                                                           None)

    def recover_task(self, fw: FrameworkRecord, task: TaskRecord) -> None:
        """Return a task's resources (and its executor's, when it was the last task)."""
        if task.recovered:
            return
        task.recovered = True
        if task.executor_id:
            key = (task.agent_id, task.executor_id)
            executor = fw.executors.get(key)
            if executor is not None:
                executor.tasks.discard(task.task_id)
                if not executor.tasks and not executor.hosted:
                    del fw.executors[key]

    def remove_task(self, fw: FrameworkRecord, task: TaskRecord) -> None:
        """Move a task whose terminal update was acknowledged to the completed tasks; a
        draining agent with no task left is drained."""
        self.recover_task(fw, task)
        fw.tasks.pop(task.task_id, None)
        fw.completed_tasks.append(task)
        record = self.state.agents.get(task.agent_id)
        if record is not None:
            self.parts.drain.check_drained(record)

    # -- removal -------------------------------------------------------------------------

    def remove_framework(self, fw: FrameworkRecord) -> None:
        now = time.time()
        for offer in list(fw.offers.values()):
            self.remove_offer(offer)
        for task in list(fw.tasks.values()):
            if task.state not in TERMINAL_STATES:
                task.state = "TASK_KILLED"
                task.statuses.append(
                    {
                        "task_id": {"value": task.task_id},
                        "state": "TASK_KILLED",
                        "source": "SOURCE_MASTER",
                        "reason": "REASON_FRAMEWORK_REMOVED",
                        "message": f"Framework {fw.framework_id} removed",
                        "timestamp": now,
                    }
                )
                self.state.count_task_state(
                    fw, "TASK_KILLED", "SOURCE_MASTER", "REASON_FRAMEWORK_REMOVED"
                )
            self.remove_task(fw, task)
        fw.completed_tasks.extend(fw.unreachable_tasks.values())
        fw.unreachable_tasks.clear()
        fw.executors.clear()
        for offer_id in [i for i, o in self.state.inverse_offers.items()
                         if o.framework_id == fw.framework_id]:
            del self.state.inverse_offers[offer_id]
        self.state.inverse_filters.clear(framework_id=fw.framework_id)
        for record in self.state.agents.values():
            record.link.post("shutdown_framework", fw.framework_id)
        if fw.subscription is not None:
            fw.subscription.close()
        fw.subscription = None
        fw.connected = False
        fw.failover_deadline = None
        fw.unregistered_time = now
        self.state.filters.clear(fw.framework_id)
        self.state.frameworks.pop(fw.framework_id, None)
        self.state.completed_frameworks.append(fw)
        self.state.removed_ids.add(fw.framework_id)
        logger.info("Removed framework %s (%s)", fw.framework_id, fw.name)

    # -- offers --------------------------------------------------------------------------

    def remove_offer(self, offer: OfferRecord) -> None:
        self.state.offers.pop(offer.offer_id, None)
        fw = self.state.frameworks.get(offer.framework_id)
        if fw is not None:
            fw.offers.pop(offer.offer_id, None)

    def rescind(self, offer: OfferRecord) -> None:
        self.remove_offer(offer)
        self.state.count("offers_rescinded")
        fw = self.state.frameworks.get(offer.framework_id)
        if fw is not None:
            fw.count("offers/rescinded")
            if fw.subscription is not None:
                fw.subscription.send(
                    {"type": "RESCIND", "rescind": {"offer_id": {"value": offer.offer_id}}}
                )
