"""The embedded master's ACCEPT: offers checked, tasks validated and launched, resources recovered.

The master's ``launch`` part (:mod:`localmesos.master.parts`); it runs under the master's lock.
The task and executor checks are :mod:`localmesos.master.task_validation`.
"""

from __future__ import annotations

from collections.abc import Mapping
import copy
import logging
import time
from typing import Any

from disauto.common.resources import RoleResources
from disauto.localmesos.master import allocator as alloc
from disauto.localmesos.master.authorizer import task_user
from disauto.localmesos.master.parts import MasterParts
from disauto.localmesos.master.records import AgentRecord
from disauto.localmesos.master.records import ExecutorRecord
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.records import TaskRecord
from disauto.localmesos.master.records import mesos_resources_str
from disauto.localmesos.master.records import resources_of
from disauto.localmesos.master.state import MasterState
from disauto.localmesos.master.task_validation import custom_executor_error
from disauto.localmesos.master.task_validation import group_executor_error
from disauto.localmesos.master.task_validation import group_tasks_error
from disauto.localmesos.master.task_validation import inject_allocation_info
from disauto.localmesos.master.task_validation import task_error


logger = logging.getLogger("disauto.localmesos.master")


class LaunchCalls:
    """ACCEPT and its LAUNCH / LAUNCH_GROUP operations (part of :class:`Master`)."""

    def __init__(self, state: MasterState, parts: MasterParts) -> None:
        self.state = state
        self.parts = parts

    def _offers_error(self, fw: FrameworkRecord, offer_ids: list[str]) -> str | None:
        if not offer_ids:
            return "No offers specified"
        seen: set[str] = set()
        for oid in offer_ids:
            if oid in seen:
                return f"Duplicate offer {oid} in offer list"
            seen.add(oid)
        for oid in offer_ids:
            if oid not in self.state.offers:
                return f"Offer {oid} is no longer valid"
        agent_id: str | None = None
        role: str | None = None
        for oid in offer_ids:
            offer = self.state.offers[oid]
            if offer.framework_id != fw.framework_id:
                return (
                    f"Offer {oid} has invalid framework {offer.framework_id} while framework "
                    f"{fw.framework_id} is expected"
                )
            if agent_id is None:
                agent_id, role = offer.agent_id, offer.role
            elif offer.agent_id != agent_id:
                return (
                    f"Aggregated offers must belong to one single agent. Offer {oid} uses "
                    f"agent {offer.agent_id} and agent {agent_id}"
                )
            elif offer.role != role:
                return (
                    f"Aggregated offers must be allocated to the same role. Offer {oid} uses "
                    f"role {offer.role} and role {role}"
                )
        return None

    def accept(self, fw: FrameworkRecord, accept: Mapping[str, Any]) -> None:
        self.state.count("messages_launch_tasks")
        offer_ids = [str(o["value"]) for o in accept.get("offer_ids", [])]
        operations = accept.get("operations", [])
        error = self._offers_error(fw, offer_ids)
        if error is not None:
            for oid in offer_ids:
                offer = self.state.offers.get(oid)
                if offer is not None and offer.framework_id == fw.framework_id:
                    self.parts.tasks.remove_offer(offer)  # recovered without a filter
            logger.warning(
                "ACCEPT call of framework %s used invalid offers %s: %s",
                fw.framework_id, offer_ids, error,
            )
            state = "TASK_DROPPED" if fw.partition_aware else "TASK_LOST"
            for operation in operations:
                for task in self._operation_tasks(operation):
                    self.state.count_task_state(fw, state, "SOURCE_MASTER",
                                                "REASON_INVALID_OFFERS")
                    self.parts.calls.send_master_update(
                        fw,
                        task_id=task["task_id"]["value"],
                        agent_id=task["agent_id"]["value"],
                        state=state,
                        reason="REASON_INVALID_OFFERS",
                        message=f"Task launched with invalid offers: {error}",
                    )
            return

        offers = [self.state.offers[oid] for oid in offer_ids]
        for offer in offers:
            self.parts.tasks.remove_offer(offer)
        fw.count("offers/accepted", len(offers))
        agent_id = offers[0].agent_id
        role = offers[0].role
        agent = self.state.agents[agent_id]
        available = RoleResources()
        for offer in offers:
            available = available + offer.resources
        for operation in operations:
            for task in self._operation_tasks(operation):
                inject_allocation_info(task, role)
            if operation.get("type") == "LAUNCH_GROUP" and "launch_group" in operation:
                inject_allocation_info(operation["launch_group"].get("executor") or {}, role)

        for operation in operations:
            kind = operation.get("type")
            if kind == "LAUNCH":
                for task in operation.get("launch", {}).get("task_infos", []):
                    available = self._launch(fw, agent, role, task, available)
            elif kind == "LAUNCH_GROUP":
                group = operation.get("launch_group")
                if group is not None:
                    available = self._launch_group(fw, agent, role, group, available)
            else:
                self._operation_unsupported(fw, operation, agent_id)

        refuse = accept.get("filters", {}).get("refuse_seconds", alloc.DEFAULT_REFUSE_SECONDS)
        self.recover_with_filter(fw, role, agent_id, available, refuse)

    @staticmethod
    def _operation_tasks(operation: Mapping[str, Any]) -> list[dict[str, Any]]:
        if operation.get("type") == "LAUNCH":
            return list(operation.get("launch", {}).get("task_infos", []))
        if operation.get("type") == "LAUNCH_GROUP" and "launch_group" in operation:
            return list(operation["launch_group"]["task_group"].get("tasks", []))
        return []

    def _operation_unsupported(
        self, fw: FrameworkRecord, operation: Mapping[str, Any], agent_id: str
    ) -> None:
        kind = operation.get("type", "UNKNOWN")
        message = (f"Operation {kind} is not supported by localmesos (static reservations only: "
                   "no dynamic reservations or volumes)")
        logger.warning("Framework %s: %s", fw.framework_id, message)
        # Feedback goes to an operation that names itself; an empty id names nothing (Mesos'
        # IDs must not be empty), so it gets none, as an operation without an id.
        if (operation.get("id") or {}).get("value") and fw.subscription is not None:
            fw.subscription.send(
                {
                    "type": "UPDATE_OPERATION_STATUS",
                    "update_operation_status": {
                        "status": {
                            "operation_id": operation["id"],
                            "state": "OPERATION_ERROR",
                            "message": message,
                            "agent_id": {"value": agent_id},
                        }
                    },
                }
            )

    def recover_with_filter(
        self,
        fw: FrameworkRecord,
        role: str,
        agent_id: str,
        unused: RoleResources,
        refuse_seconds: float | None,
    ) -> None:
        timeout = alloc.refuse_timeout(refuse_seconds, self.state.allocation_interval)
        if timeout is not None and not unused.is_empty():
            self.state.filters.add(
                fw.framework_id, role, agent_id, unused, timeout, time.monotonic()
            )

    def _launch(
        self,
        fw: FrameworkRecord,
        agent: AgentRecord,
        role: str,
        task: dict[str, Any],
        available: RoleResources,
    ) -> RoleResources:
        """Validate and launch one LAUNCH task; returns what is left of the offered resources."""
        task = copy.deepcopy(task)
        unauthorized = self._launch_unauthorized(fw, task)
        if unauthorized is not None:
            self._task_invalid(fw, task, unauthorized, reason="REASON_TASK_UNAUTHORIZED")
            return available
        error = task_error(fw, agent, task)
        executor = task.get("executor")
        if error is None and ("executor" in task) == ("command" in task):
            error = (
                "Task should have at least one (but not both) of CommandInfo or ExecutorInfo "
                "present"
            )
        if error is None and executor is not None:
            error = custom_executor_error(fw, agent, executor)
        total = RoleResources()
        if error is None:
            total = self._launch_total(fw, agent, [task], executor)
            if not available.contains(total) or _other_role([task], executor, role):
                error = (
                    f"Total resources {mesos_resources_str(total)} required by task and its "
                    f"executor is more than available {mesos_resources_str(available)}"
                )
        if error is not None:
            self._task_invalid(fw, task, error)
            return available
        executor_id = ""
        launch_executor: bool | None = None
        if executor is not None:
            launch_executor = (agent.agent_id, executor["executor_id"]["value"]) not in (
                fw.executors)
            executor_id = self.register_executor(fw, agent, role, executor, hosted=True)
        self._add_task(fw, agent, role, task, executor_id)
        agent.link.post("launch_task", copy.deepcopy(fw.info), copy.deepcopy(task),
                        launch_executor)
        return available - total

    def _launch_group(
        self,
        fw: FrameworkRecord,
        agent: AgentRecord,
        role: str,
        group: Mapping[str, Any],
        available: RoleResources,
    ) -> RoleResources:
        """Validate and launch a task group atomically (LAUNCH_GROUP): every task of the group
        is launched, or each gets TASK_ERROR with the group's first error."""
        executor = copy.deepcopy(group["executor"])
        tasks = [copy.deepcopy(t) for t in group["task_group"].get("tasks", [])]
        refusals = (self._launch_unauthorized(fw, {**task, "executor": executor})
                    for task in tasks)
        unauthorized = next(filter(None, refusals), None)
        if unauthorized is not None:
            for task in tasks:
                self._task_invalid(fw, task, unauthorized, reason="REASON_TASK_UNAUTHORIZED")
            return available
        error = group_tasks_error(fw, agent, executor, tasks)
        if error is None:
            error = group_executor_error(fw, agent, executor)
        total = RoleResources()
        if error is None:
            total = self._launch_total(fw, agent, tasks, executor)
            if not available.contains(total) or _other_role(tasks, executor, role):
                error = (
                    f"Total resources {mesos_resources_str(total)} required by task group "
                    f"and its executor are more than available "
                    f"{mesos_resources_str(available)}"
                )
        if error is not None:
            for task in tasks:
                self._task_invalid(fw, task, error)
            return available
        executor_id = self.register_executor(fw, agent, role, executor)
        members = tuple(task["task_id"]["value"] for task in tasks)
        for task in tasks:
            record = self._add_task(fw, agent, role, task, executor_id)
            record.group = members
        for task in tasks:
            # The embedded agent runs each task of a group as a command task; the master keeps
            # the group's all-or-nothing semantics (see _end_group).
            agent_task = {k: v for k, v in task.items() if k != "executor"}
            agent.link.post("launch_task", copy.deepcopy(fw.info), agent_task)
        return available - total

    @staticmethod
    def _launch_total(
        fw: FrameworkRecord,
        agent: AgentRecord,
        tasks: list[dict[str, Any]],
        executor: Mapping[str, Any] | None,
    ) -> RoleResources:
        """What launching ``tasks`` takes: their resources, and their executor's when the
        executor does not run on the agent yet."""
        total = RoleResources()
        for task in tasks:
            total = total + resources_of(task["resources"])
        if executor is not None:
            key = (agent.agent_id, executor["executor_id"]["value"])
            if key not in fw.executors:
                total = total + resources_of(executor.get("resources", []))
        return total

    @staticmethod
    def register_executor(
        fw: FrameworkRecord,
        agent: AgentRecord,
        role: str,
        executor: dict[str, Any],
        *,
        hosted: bool = False,
    ) -> str:
        """Charge a new executor's resources to the framework; returns the executor's id."""
        executor_id = str(executor["executor_id"]["value"])
        key = (agent.agent_id, executor_id)
        if key not in fw.executors:
            fw.executors[key] = ExecutorRecord(
                info=executor,
                agent_id=agent.agent_id,
                role=role,
                resources=resources_of(executor.get("resources", [])),
                hosted=hosted,
            )
        return executor_id

    def _add_task(
        self,
        fw: FrameworkRecord,
        agent: AgentRecord,
        role: str,
        task: dict[str, Any],
        executor_id: str,
    ) -> TaskRecord:
        record = TaskRecord(
            info=task,
            framework_id=fw.framework_id,
            agent_id=agent.agent_id,
            role=role,
            resources=resources_of(task["resources"]),
            executor_id=executor_id,
        )
        fw.tasks[record.task_id] = record
        if executor_id:
            executor_record = fw.executors.get((agent.agent_id, executor_id))
            if executor_record is not None:
                executor_record.tasks.add(record.task_id)
        self.state.count("tasks_launched")
        logger.info(
            "Launching task %s of framework %s on agent %s with %s",
            record.task_id, fw.framework_id, agent.agent_id, record.resources,
        )
        return record

    def _launch_unauthorized(self, fw: FrameworkRecord, task: Mapping[str, Any]) -> str | None:
        """Mesos' ``RUN_TASK`` authorization of a LAUNCH (``Master::_accept``): the message of
        a task whose user the ``run_tasks`` ACLs do not allow its framework's principal, or
        None."""
        user = task_user(task, fw.info)
        if self.state.acls.may_run(fw.info.get("principal"), user):
            return None
        return (f"Not authorized to launch task {task['task_id']['value']} of framework "
                f"{fw.framework_id} under user '{user}'")

    def _task_invalid(self, fw: FrameworkRecord, task: Mapping[str, Any], error: str,
                      reason: str = "REASON_TASK_INVALID") -> None:
        self.state.count_task_state(fw, "TASK_ERROR", "SOURCE_MASTER", reason)
        logger.warning(
            "Task %s of framework %s is refused: %s",
            task["task_id"]["value"], fw.framework_id, error,
        )
        self.parts.calls.send_master_update(
            fw,
            task_id=task["task_id"]["value"],
            agent_id=task["agent_id"]["value"],
            state="TASK_ERROR",
            reason=reason,
            message=error,
        )


def _other_role(tasks: list[dict[str, Any]], executor: Mapping[str, Any] | None,
                role: str) -> bool:
    """Whether a resource is allocated to a role other than the offers' (then it is not
    contained in them: Mesos compares ``allocation_info`` with the rest of a resource)."""
    items = [r for task in tasks for r in task.get("resources") or []]
    items += list((executor or {}).get("resources") or [])
    return any((r.get("allocation_info") or {}).get("role", role) != role for r in items)
