"""The calls a custom executor makes to its embedded agent (``/api/v1/executor``): SUBSCRIBE,
UPDATE and MESSAGE, served as a Mesos 1.11 agent serves them.

The agent's ``executor_calls`` part (:mod:`localmesos.agent.parts`; apache/mesos
``src/slave/http.cpp`` ``Http::executor``, ``src/slave/slave.cpp`` ``Slave::subscribe``,
``statusUpdate``); the calls arrive validated (:mod:`localmesos.agent.executor_api`).
"""

from __future__ import annotations

from collections.abc import Mapping
import logging
import time
from typing import Any

from disauto.localmesos.agent import executor_api
from disauto.localmesos.agent import executor_auth
from disauto.localmesos.agent.agent_task import AgentTask
from disauto.localmesos.agent.executor_run import REGISTERING
from disauto.localmesos.agent.executor_run import RUNNING
from disauto.localmesos.agent.executor_run import TERMINATED
from disauto.localmesos.agent.executor_run import TERMINATING
from disauto.localmesos.agent.executor_run import ExecutorRun
from disauto.localmesos.agent.executor_run import partition_aware
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.recovery import checkpoints
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.agent.status_updates import TERMINAL_STATES
from disauto.localmesos.protocol.recordio import Subscription


logger = logging.getLogger("disauto.localmesos.agent")


class ExecutorCalls:
    """Serves custom executors' calls (part of :class:`localmesos.agent.agent.Agent`)."""

    def __init__(self, state: AgentState, parts: AgentParts) -> None:
        self.state = state
        self.parts = parts

    """SHUTDOWN an executor, its kill scheduled (``ExecutorHost``)."""
    """LAUNCH a task on a subscribed executor (``ExecutorHost``)."""
    """The key of its executors' tokens, or None when they are not authenticated."""

    @property
    def executor_secret(self) -> bytes | None:
        """The key its executors' tokens are signed with; None when executor calls need no
        token (``--authenticate_http_executors`` off)."""
        return self.state.runtime.executor_secret

    def executor_call(self, call: Mapping[str, Any],
                      authorization: str | None = None) -> Subscription | tuple[int, str]:
        """Serve a validated executor call (``/api/v1/executor``).

        Args:
            call: the call.
            authorization: its ``Authorization`` header: with executor authentication, the
                executor's token as ``Bearer <token>`` (:mod:`localmesos.agent.executor_auth`).

        Returns:
            The event stream for SUBSCRIBE; otherwise ``(HTTP status, body)``: 202, or
            400 ``Framework cannot be found``/``Executor cannot be found``, 403 ``Executor is
            not subscribed`` or a token of another executor, 501 for UNKNOWN.

        Raises:
            executor_auth.Unauthorized: executors are authenticated and this call's token is
                missing or not valid (401).
        """
        framework_id = call["framework_id"]["value"]
        executor_id = call["executor_id"]["value"]
        claims = None
        if self.state.runtime.executor_secret is not None:
            claims = executor_auth.authenticate(authorization, self.state.runtime.executor_secret)
        if self.state.recovering:
            return 503, "Agent has not finished recovery"
        with self.state.lock:
            run = self.state.executors.get((framework_id, executor_id))
            if run is None:
                known = any(key[0] == framework_id for key in self.state.executors) or any(
                    task.framework_id == framework_id for task in self.state.tasks.values())
                return 400, "Executor cannot be found" if known else "Framework cannot be found"
            refused = None if claims is None else executor_auth.claims_error(
                claims, framework_id, executor_id, run.container_id)
            if refused is not None:
                return 403, refused
            if run.state == REGISTERING and call["type"] != "SUBSCRIBE":
                return 403, "Executor is not subscribed"
        kind = call["type"]
        if kind == "SUBSCRIBE":
            return self._subscribe(run, call["subscribe"])
        if kind == "UPDATE":
            self._executor_update(run, call["update"]["status"])
            return 202, ""
        if kind == "MESSAGE":
            if self.state.on_executor_message is not None:
                self.state.on_executor_message(self.state.id, framework_id, executor_id,
                                          call["message"]["data"])
            return 202, ""
        logger.warning("Received 'UNKNOWN' call from executor %s", executor_id)
        return 501, ""

    def knows_executor(self, framework_id: str, executor_id: str) -> bool:
        """Whether an executor of that id runs (or is launched) here for the framework."""
        with self.state.lock:
            return (framework_id, executor_id) in self.state.executors

    def knows_framework(self, framework_id: str) -> bool:
        with self.state.lock:
            return any(key[0] == framework_id for key in self.state.executors) or any(
                task.framework_id == framework_id for task in self.state.tasks.values())

    def _subscribe(self, run: ExecutorRun, subscribe: Mapping[str, Any]) -> Subscription:
        stream = Subscription(run.framework_id, self.state.executor_heartbeat_interval,
                              list(self.state.executor_observers))
        stream.send_stream_id = False
        stream.on_closed = lambda closed: self._executor_disconnected(run, closed)
        dropped: list[AgentTask] = []
        with self.state.lock:
            removed = run.framework_id in self.state.removed_frameworks
            if removed or run.state in (TERMINATING, TERMINATED) or self.state.stopped:
                logger.warning("Shutting down executor %s: it subscribed while %s",
                               run.executor_id, "terminating" if not removed else "removed")
                stream.send(executor_api.SHUTDOWN)
                stream.close()
                return stream
            if run.stream is not None:
                logger.warning("Closing the earlier connection of executor %s", run.executor_id)
                run.stream.close()
            run.state = RUNNING
            run.stream = stream
            run.settled.set()
            if checkpoints(run.framework_info):
                self.state.meta.mark_http(run.framework_id, run.executor_id, run.container_id)
            unacked = {t["task_id"]["value"] for t in subscribe.get("unacknowledged_tasks", [])}
            for task_id in sorted(run.launched):
                task = self.state.tasks.get((run.framework_id, task_id))
                if task is not None and task.state == "TASK_STAGING" and task_id not in unacked:
                    dropped.append(task)
        for update in subscribe.get("unacknowledged_updates", []):
            self._executor_update(run, update["status"])
        for task in dropped:
            state = "TASK_DROPPED" if partition_aware(task.framework_info) else "TASK_LOST"
            self.parts.reports.emit(task, state, source="SOURCE_AGENT",
                       message="Task launched during agent restart",
                       reason="REASON_AGENT_RESTARTED")
        with self.state.lock:
            if run.stream is not stream:
                return stream
            if not run.ever_sent and not run.queued:
                logger.warning("Shutting down executor %s: all its tasks were killed before "
                               "delivery", run.executor_id)
                self.parts.executor_host.begin_shutdown(run, None)
                return stream
            stream.send(executor_api.subscribed(run.info, run.framework_info,
                                                self._advertised_info(), run.container_id))
            for task_id in list(run.queued):
                task = self.state.tasks.get((run.framework_id, task_id))
                del run.queued[task_id]
                if task is not None:
                    self.parts.executor_host.deliver(run, task)
        logger.info("Executor %s of framework %s subscribed", run.executor_id, run.framework_id)
        return stream

    def _advertised_info(self) -> dict[str, Any]:
        """AgentInfo as the master advertises it: the port is the one it is served on."""
        info = self.parts.views.info()
        port = self.state.master_endpoint.rpartition(":")[2]
        if port.isdigit():
            info["port"] = int(port)
        return info

    def _executor_disconnected(self, run: ExecutorRun, stream: Subscription) -> None:
        """The executor's connection ended: forget it (the executor may subscribe again)."""
        with self.state.lock:
            if run.stream is stream:
                run.stream = None

    def _executor_update(self, run: ExecutorRun, status: Mapping[str, Any]) -> None:
        """An executor's status update: into the task's reliable stream, then ACKNOWLEDGED."""
        status = dict(status)
        task_id = status["task_id"]["value"]
        if status.get("agent_id", {"value": self.state.id})["value"] != self.state.id:
            logger.warning("Ignoring status update of task %s: agent id %s is not %s", task_id,
                           status["agent_id"]["value"], self.state.id)
            return
        status["agent_id"] = {"value": self.state.id}
        status["source"] = "SOURCE_EXECUTOR"
        status.setdefault("timestamp", time.time())
        container = dict(status.get("container_status") or {})
        container.setdefault("container_id", {"value": run.container_id})
        if run.process is not None:
            container.setdefault("executor_pid", run.process.pid)
        if not container.get("network_infos"):
            container["network_infos"] = [
                {"ip_addresses": [{"ip_address": self.state.config.hostname}]}]
        status["container_status"] = container
        state = status["state"]
        acknowledge = True
        with self.state.lock:
            if run.framework_id in self.state.removed_frameworks:
                logger.info("Ignoring status update of task %s: framework removed", task_id)
                return
            task = self.state.tasks.get((run.framework_id, task_id))
            if task is None:
                acknowledge = False  # Mesos forwards it but has no executor to acknowledge
            duplicate = any(u["uuid"] == status["uuid"]
                            for u in self.state.updates.pending(run.framework_id, task_id))
            if task is not None and task.terminal and not duplicate:
                logger.warning("Dropping %s of task %s: it is already terminal", state, task_id)
                duplicate = True
            if not duplicate:
                status["framework_id"] = {"value": run.framework_id}
                self.parts.draining.decorate(run.framework_info, status)
            if task is not None and not duplicate:
                task.state = status["state"]
                if task.state in TERMINAL_STATES:
                    task.terminal = True
                    run.launched.discard(task_id)
                self.parts.reports.queue_update(task, status)
            elif not duplicate:
                self.state.updates.update(run.framework_id, task_id, status)
        if acknowledge:
            with self.state.lock:
                run.send(executor_api.acknowledged(task_id, status["uuid"]))
