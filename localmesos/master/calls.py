"""The embedded master's non-SUBSCRIBE scheduler calls: the dispatch table, one handler per
call type, and the status updates the master makes itself (reconciliation, invalid tasks).

The master's ``calls`` part (:mod:`localmesos.master.parts`); it runs under the master's lock.
Every call type of ``validation.CALL_TYPES`` but SUBSCRIBE and UNKNOWN has an entry in
``_HANDLERS``; UNKNOWN is answered 501 by ``_on_unknown``. ACCEPT's work is in
:mod:`localmesos.master.launch`.
"""

from __future__ import annotations

from collections.abc import Mapping
import copy
import logging
import time
from typing import Any

from disauto.localmesos.master import allocator as alloc
from disauto.localmesos.master import offer_constraints
from disauto.localmesos.master import validation
from disauto.localmesos.master.parts import MasterParts
from disauto.localmesos.master.records import PARTITION_AWARE_STATES
from disauto.localmesos.master.records import TERMINAL_STATES
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.records import TaskRecord
from disauto.localmesos.master.records import id_value
from disauto.localmesos.master.records import uuid_bytes
from disauto.localmesos.master.state import MasterState
from disauto.localmesos.protocol.messages import duration_seconds
from disauto.localmesos.protocol.protojson import CallError


logger = logging.getLogger("disauto.localmesos.master")

CallResult = tuple[int, dict[str, Any] | None, bool]
"""A call handler's answer: HTTP status, JSON body (or None), whether to allocate now."""
ACCEPTED: CallResult = (202, None, False)

# Calls the master only counts, with the metric each adds to.
_COUNTED = {
    "REQUEST": "messages_resource_request",
    "ACKNOWLEDGE_OPERATION_STATUS": "messages_operation_status_update_acknowledgement",
}
# Calls handled by a method that takes the call's body: type → (method, body key).
_BODY_HANDLERS = {
    "ACCEPT": ("_accept", "accept"), "DECLINE": ("_decline", "decline"),
    "KILL": ("_kill", "kill"), "SHUTDOWN": ("_shutdown_executor", "shutdown"),
    "ACKNOWLEDGE": ("_acknowledge", "acknowledge"), "MESSAGE": ("_message", "message"),
}
# The dispatch table: call type → the method that handles it (validated calls only;
# SUBSCRIBE opens a stream and is apart). A type missing here is answered by _on_unknown.
_HANDLERS = {
    "TEARDOWN": "_on_teardown", "REVIVE": "_on_revive", "SUPPRESS": "_on_suppress",
    "RECONCILE": "_on_reconcile", "RECONCILE_OPERATIONS": "_on_reconcile_operations",
    "UPDATE_FRAMEWORK": "_on_update_framework", "ACCEPT_INVERSE_OFFERS": "_on_inverse_offers",
    "DECLINE_INVERSE_OFFERS": "_on_inverse_offers", **{kind: "_on_counted" for kind in _COUNTED},
    **{kind: "_on_body" for kind in _BODY_HANDLERS},
}


class SchedulerCalls:
    """The dispatch of the non-SUBSCRIBE calls and their handlers (part of :class:`Master`)."""

    def __init__(self, state: MasterState, parts: MasterParts) -> None:
        self.state = state
        self.parts = parts

    def dispatch(self, fw: FrameworkRecord, call: Mapping[str, Any]) -> CallResult:
        """Run the handler of a validated call's type (``_on_unknown`` for a type without one)."""
        handler = getattr(self, _HANDLERS.get(call["type"], "_on_unknown"))
        return handler(fw, call)  # type: ignore[no-any-return]

    # One handler per call type, each answering (HTTP status, body, run an allocation now).

    def _on_teardown(self, fw: FrameworkRecord, call: Mapping[str, Any]) -> CallResult:
        self.state.count("messages_unregister_framework")
        logger.info("Framework %s (%s) tears down", fw.framework_id, fw.name)
        self.parts.tasks.remove_framework(fw)
        return ACCEPTED

    def _on_body(self, fw: FrameworkRecord, call: Mapping[str, Any]) -> CallResult:
        """A call whose handler takes the call's body (``call["accept"]`` for ACCEPT...)."""
        method, key = _BODY_HANDLERS[call["type"]]
        getattr(self, method)(fw, call[key])
        return ACCEPTED

    def _accept(self, fw: FrameworkRecord, accept: Mapping[str, Any]) -> None:
        """ACCEPT: the launch part's work."""
        self.parts.launch.accept(fw, accept)

    def _on_revive(self, fw: FrameworkRecord, call: Mapping[str, Any]) -> CallResult:
        return 202, None, self._revive(fw, call.get("revive", {}).get("roles", []))

    def _on_suppress(self, fw: FrameworkRecord, call: Mapping[str, Any]) -> CallResult:
        self._suppress(fw, call.get("suppress", {}).get("roles", []))
        return ACCEPTED

    def _on_reconcile(self, fw: FrameworkRecord, call: Mapping[str, Any]) -> CallResult:
        self._reconcile(fw, call["reconcile"].get("tasks", []))
        return ACCEPTED

    def _on_inverse_offers(self, fw: FrameworkRecord, call: Mapping[str, Any]) -> CallResult:
        """ACCEPT_INVERSE_OFFERS and DECLINE_INVERSE_OFFERS (:mod:`..maintenance`)."""
        accept = call["type"] == "ACCEPT_INVERSE_OFFERS"
        body = call["accept_inverse_offers" if accept else "decline_inverse_offers"]
        self.parts.maintenance.answer_inverse_offers(fw, body, "ACCEPT" if accept else "DECLINE")
        return ACCEPTED

    def _on_counted(self, fw: FrameworkRecord, call: Mapping[str, Any]) -> CallResult:
        """A call the master only counts (no operations are ever made)."""
        self.state.count(_COUNTED[call["type"]])
        return ACCEPTED

    def _on_reconcile_operations(self, fw: FrameworkRecord,
                                 call: Mapping[str, Any]) -> CallResult:
        ops = call["reconcile_operations"].get("operations", [])
        return 200, self._reconcile_operations(ops), False

    def _on_update_framework(self, fw: FrameworkRecord, call: Mapping[str, Any]) -> CallResult:
        self._update_framework(fw, call["update_framework"])
        return 200, None, True

    def _on_unknown(self, fw: FrameworkRecord, call: Mapping[str, Any]) -> CallResult:
        logger.warning("Received 'UNKNOWN' call from framework %s", fw.framework_id)
        return 501, None, False

    def send_master_update(
        self,
        fw: FrameworkRecord,
        *,
        task_id: str,
        state: str,
        reason: str,
        message: str,
        agent_id: str | None = None,
        executor_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Forward a master-generated update (no uuid, ``SOURCE_MASTER``)."""
        if state in PARTITION_AWARE_STATES and not fw.partition_aware:
            state = "TASK_LOST"
        status: dict[str, Any] = {
            "task_id": {"value": task_id},
            "state": state,
            "message": message,
            "source": "SOURCE_MASTER",
            "reason": reason,
            "timestamp": time.time(),
        }
        if agent_id:
            status["agent_id"] = {"value": agent_id}
        if executor_id:
            status["executor_id"] = {"value": executor_id}
        if extra:
            status.update(extra)
        if fw.subscription is not None:
            fw.subscription.send({"type": "UPDATE", "update": {"status": status}})

    # -- DECLINE / REVIVE / SUPPRESS -----------------------------------------------------

    def _decline(self, fw: FrameworkRecord, decline: Mapping[str, Any]) -> None:
        self.state.count("messages_decline_offers")
        refuse = decline.get("filters", {}).get("refuse_seconds", alloc.DEFAULT_REFUSE_SECONDS)
        for oid in (str(o["value"]) for o in decline.get("offer_ids", [])):
            offer = self.state.offers.get(oid)
            if offer is None or offer.framework_id != fw.framework_id:
                continue  # unknown offers are ignored
            self.parts.tasks.remove_offer(offer)
            fw.count("offers/declined")
            self.parts.launch.recover_with_filter(fw, offer.role, offer.agent_id,
                                                  offer.resources, refuse)

    def _valid_roles(self, fw: FrameworkRecord, roles: list[str]) -> set[str] | None:
        if not roles:
            return set(fw.roles)
        for role in roles:
            if validation.validate_role(role) is not None or role not in fw.roles:
                return None
        return set(roles)

    def _revive(self, fw: FrameworkRecord, roles: list[str]) -> bool:
        self.state.count("messages_revive_offers")
        wanted = self._valid_roles(fw, roles)
        if wanted is None:
            logger.warning("Dropping REVIVE of framework %s: invalid roles %s", fw.framework_id,
                           roles)
            return False
        fw.suppressed_roles -= wanted
        self.state.filters.clear(fw.framework_id, wanted)
        return True

    def _suppress(self, fw: FrameworkRecord, roles: list[str]) -> None:
        self.state.count("messages_suppress_offers")
        wanted = self._valid_roles(fw, roles)
        if wanted is None:
            logger.warning(
                "Dropping SUPPRESS of framework %s: invalid roles %s", fw.framework_id, roles
            )
            return
        fw.suppressed_roles |= wanted

    def _update_framework(self, fw: FrameworkRecord, update: Mapping[str, Any]) -> None:
        info = copy.deepcopy(dict(update["framework_info"]))
        error = validation.validate_framework_info(info)
        if error is not None:
            raise CallError(f"Supplied FrameworkInfo is not valid: {error}")
        error = validation.validate_framework_update(fw.info, info)
        if error is not None:
            raise CallError(f"FrameworkInfo update is not valid: {error}")
        constraints = copy.deepcopy(dict(update.get("offer_constraints", {})))
        compiled, error = offer_constraints.compile_or_error(constraints)
        if error is not None:
            raise CallError(f"'UpdateFramework.offer_constraints' are not valid: {error}")
        fw.offer_constraints, fw.constraints_filter = constraints, compiled
        suppressed = set(update.get("suppressed_roles", []))
        self.parts.subscriptions.apply_framework_info(fw, info)
        revived = fw.suppressed_roles - suppressed
        fw.suppressed_roles = suppressed & set(fw.roles)
        if revived:
            self.state.filters.clear(fw.framework_id, revived)
        self.state.count("messages_update_framework")

    # -- KILL / SHUTDOWN / MESSAGE -------------------------------------------------------

    def _kill(self, fw: FrameworkRecord, kill: Mapping[str, Any]) -> None:
        self.state.count("messages_kill_task")
        task_id = str(kill["task_id"]["value"])
        agent_id = id_value(kill.get("agent_id"))
        task = fw.tasks.get(task_id)
        if task is None:
            logger.warning(
                "Cannot kill task %s of framework %s: it is unknown; performing reconciliation",
                task_id, fw.framework_id,
            )
            entry: dict[str, Any] = {"task_id": {"value": task_id}}
            if agent_id is not None:
                entry["agent_id"] = {"value": agent_id}
            self._reconcile(fw, [entry], count=False)
            return
        if agent_id is not None and agent_id != task.agent_id:
            logger.warning(
                "Ignoring kill of task %s: agent %s does not match %s",
                task_id, agent_id, task.agent_id,
            )
            return
        if task.state in TERMINAL_STATES:
            return
        grace = duration_seconds(kill.get("kill_policy", {}).get("grace_period"))
        task.kill_sent = True
        self.state.agents[task.agent_id].link.post("kill_task", fw.framework_id, task_id, grace)

    def _shutdown_executor(self, fw: FrameworkRecord, shutdown: Mapping[str, Any]) -> None:
        self.state.count("messages_shutdown_executor")
        agent_id = str(shutdown["agent_id"]["value"])
        executor_id = str(shutdown["executor_id"]["value"])
        record = self.state.agents.get(agent_id)
        if record is None:
            logger.warning("Ignoring SHUTDOWN on unknown agent %s", agent_id)
            return
        if hasattr(record.agent, "shutdown_executor"):
            record.link.post("shutdown_executor", fw.framework_id, executor_id)
            return
        # The embedded agent has no executor processes of its own: shutting the executor
        # down is killing its tasks.
        for task in fw.tasks.values():
            if (
                task.agent_id == agent_id
                and task.executor_id == executor_id
                and task.state not in TERMINAL_STATES
            ):
                record.link.post("kill_task", fw.framework_id, task.task_id, None)

    def _message(self, fw: FrameworkRecord, message: Mapping[str, Any]) -> None:
        self.state.count("messages_framework_to_executor")
        agent_id = str(message["agent_id"]["value"])
        record = self.state.agents.get(agent_id)
        self.state.count(
            "invalid_framework_to_executor_messages"
            if record is None
            else "valid_framework_to_executor_messages"
        )
        if record is not None and hasattr(record.agent, "framework_message"):
            record.link.post(
                "framework_message",
                fw.framework_id,
                str(message["executor_id"]["value"]),
                message["data"],
            )
        else:
            logger.info(
                "Dropping framework message of %s to executor %s (best effort)",
                fw.framework_id, message["executor_id"]["value"],
            )

    # -- ACKNOWLEDGE ---------------------------------------------------------------------

    def _acknowledge(self, fw: FrameworkRecord, ack: Mapping[str, Any]) -> None:
        self.state.count("messages_status_update_acknowledgement")
        agent_id = str(ack["agent_id"]["value"])
        task_id = str(ack["task_id"]["value"])
        uuid_b64 = str(ack["uuid"])
        record = self.state.agents.get(agent_id)
        if record is None:
            logger.warning(
                "Cannot send status update acknowledgement for task %s of framework %s to "
                "unknown agent %s", task_id, fw.framework_id, agent_id,
            )
            self.state.count("invalid_status_update_acknowledgements")
            return
        task = fw.tasks.get(task_id)
        if task is not None:
            if task.status_update_state is None:
                self.state.count("invalid_status_update_acknowledgements")
                return
            if (
                task.status_update_state in TERMINAL_STATES
                and task.status_update_uuid == uuid_bytes(uuid_b64)
            ):
                self.parts.tasks.remove_task(fw, task)
        self.state.count("valid_status_update_acknowledgements")
        record.link.post("acknowledge", fw.framework_id, task_id, uuid_b64)

    # -- RECONCILE -----------------------------------------------------------------------

    def _reconcile(
        self, fw: FrameworkRecord, tasks: list[Mapping[str, Any]], *, count: bool = True
    ) -> None:
        if count:
            self.state.count("messages_reconcile_tasks")
        if not tasks:
            for task in fw.tasks.values():
                self._reconcile_known(fw, task)
            return
        for entry in tasks:
            task_id = str(entry["task_id"]["value"])
            agent_id = id_value(entry.get("agent_id"))
            known = fw.tasks.get(task_id)
            if known is not None:
                self._reconcile_known(fw, known)
            else:
                self._reconcile_unknown(fw, task_id, agent_id)

    def _reconcile_unknown(self, fw: FrameworkRecord, task_id: str,
                           agent_id: str | None) -> None:
        """A task the master does not have (``Master::reconcile`` cases 2 to 6): nothing while
        its agent is one a recovered registry admitted that has not re-registered yet (the
        framework asks again; after a failover it learns the task when the agent comes back),
        TASK_GONE on a registered agent, TASK_UNREACHABLE (with ``unreachable_time``) on an
        unreachable one, TASK_GONE_BY_OPERATOR on a gone one, TASK_UNKNOWN otherwise;
        TASK_LOST for frameworks that are not partition aware."""
        extra: dict[str, Any] = {}
        if agent_id is not None and agent_id in self.state.recovered_agents \
                and agent_id not in self.state.agents and self.state.awaits_recovered_agents():
            logger.info("Dropping reconciliation of task %s of framework %s: agent %s is "
                        "recovered and has not re-registered", task_id, fw.framework_id,
                        agent_id)
            return
        if agent_id is not None and agent_id in self.state.agents:
            state, message = "TASK_GONE", "Reconciliation: Task is unknown to the agent"
        elif agent_id is not None and agent_id in self.state.unreachable:
            state, message = "TASK_UNREACHABLE", "Reconciliation: Task is unreachable"
            extra["unreachable_time"] = {
                "nanoseconds": int(round(self.state.unreachable[agent_id].time * 1e9))}
        elif agent_id is not None and agent_id in self.state.gone:
            state, message = "TASK_GONE_BY_OPERATOR", "Reconciliation: Task is gone"
        else:
            state, message = "TASK_UNKNOWN", "Reconciliation: Task is unknown"
        self.send_master_update(fw, task_id=task_id, agent_id=agent_id, state=state,
                                 reason="REASON_RECONCILIATION", message=message, extra=extra)

    def _reconcile_known(self, fw: FrameworkRecord, task: TaskRecord) -> None:
        state = task.status_update_state or task.state
        extra: dict[str, Any] = {}
        if task.statuses and "healthy" in task.statuses[-1]:
            extra["healthy"] = task.statuses[-1]["healthy"]
        self.send_master_update(
            fw,
            task_id=task.task_id,
            agent_id=task.agent_id,
            executor_id=task.executor_id or None,
            state=state,
            reason="REASON_RECONCILIATION",
            message="Reconciliation: Latest task state",
            extra=extra,
        )

    def _reconcile_operations(self, operations: list[Mapping[str, Any]]) -> dict[str, Any]:
        self.state.count("messages_reconcile_operations")
        statuses = []
        for op in operations:
            status: dict[str, Any] = {
                "operation_id": op["operation_id"],
                "state": "OPERATION_UNKNOWN",
            }
            if "agent_id" in op:
                status["agent_id"] = op["agent_id"]
            statuses.append(status)
        return {
            "type": "RECONCILE_OPERATIONS",
            "reconcile_operations": {"operation_statuses": statuses},
        }
