"""The embedded master's ACCEPT: offers checked, tasks validated and launched, resources recovered.

A mixin of :class:`localmesos.master.Master`; it runs under the master's lock.
"""

from __future__ import annotations

from collections.abc import Mapping
import copy
import logging
import time
from typing import Any

from disauto.common.resources import ResourceError
from disauto.common.resources import Resources
from disauto.localmesos.master import allocator as alloc
from disauto.localmesos.master import validation
from disauto.localmesos.master.records import AgentRecord
from disauto.localmesos.master.records import ExecutorRecord
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.records import TaskRecord
from disauto.localmesos.master.records import mesos_resources_str
from disauto.localmesos.master.records import resources_of
from disauto.localmesos.protocol.messages import duration_seconds
from disauto.localmesos.protocol.validation import validate_health_check


logger = logging.getLogger("disauto.localmesos.master")


class LaunchCalls:
    """ACCEPT and its LAUNCH / LAUNCH_GROUP operations (part of :class:`Master`)."""

    def _offers_error(self, fw: FrameworkRecord, offer_ids: list[str]) -> str | None:
        if not offer_ids:
            return "No offers specified"
        seen: set[str] = set()
        for oid in offer_ids:
            if oid in seen:
                return f"Duplicate offer {oid} in offer list"
            seen.add(oid)
        for oid in offer_ids:
            if oid not in self.offers:
                return f"Offer {oid} is no longer valid"
        agent_id: str | None = None
        role: str | None = None
        for oid in offer_ids:
            offer = self.offers[oid]
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

    def _accept(self, fw: FrameworkRecord, accept: Mapping[str, Any]) -> None:
        self._count("messages_launch_tasks")
        offer_ids = [str(o["value"]) for o in accept.get("offer_ids", [])]
        operations = accept.get("operations", [])
        error = self._offers_error(fw, offer_ids)
        if error is not None:
            for oid in offer_ids:
                offer = self.offers.get(oid)
                if offer is not None and offer.framework_id == fw.framework_id:
                    self._remove_offer(offer)  # recovered without a filter
            logger.warning(
                "ACCEPT call of framework %s used invalid offers %s: %s",
                fw.framework_id, offer_ids, error,
            )
            state = "TASK_DROPPED" if fw.partition_aware else "TASK_LOST"
            for operation in operations:
                for task in self._operation_tasks(operation):
                    self._count_task_state(fw, state, "SOURCE_MASTER", "REASON_INVALID_OFFERS")
                    self._send_master_update(
                        fw,
                        task_id=task["task_id"]["value"],
                        agent_id=task["agent_id"]["value"],
                        state=state,
                        reason="REASON_INVALID_OFFERS",
                        message=f"Task launched with invalid offers: {error}",
                    )
            return

        offers = [self.offers[oid] for oid in offer_ids]
        for offer in offers:
            self._remove_offer(offer)
        fw.count("offers/accepted", len(offers))
        agent_id = offers[0].agent_id
        role = offers[0].role
        agent = self.agents[agent_id]
        available = Resources()
        for offer in offers:
            available = available + offer.resources

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
        self._recover_with_filter(fw, role, agent_id, available, refuse)

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
        message = f"Operation {kind} is not supported by localmesos (no reservations or volumes)"
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

    def _recover_with_filter(
        self,
        fw: FrameworkRecord,
        role: str,
        agent_id: str,
        unused: Resources,
        refuse_seconds: float | None,
    ) -> None:
        timeout = alloc.refuse_timeout(refuse_seconds, self.allocation_interval)
        if timeout is not None and not unused.is_empty():
            self.filters.add(
                fw.framework_id, role, agent_id, unused, timeout, time.monotonic()
            )

    def _task_error(self, task: Mapping[str, Any], fw: FrameworkRecord) -> str | None:
        """Mesos ``task::internal::validateTask`` (the part before the executor checks)."""
        task_id = task["task_id"]["value"]
        error = validation.validate_task_id(task_id)
        if error is not None:
            return error
        if task_id in fw.tasks:
            return f"Task has duplicate ID: {task_id}"
        return None

    def _task_resources_error(self, resources_json: list[dict[str, Any]]) -> str | None:
        try:
            resources = resources_of(resources_json)
        except ResourceError as exc:
            return f"Invalid resources: {exc}"
        gpus = resources.scalar("gpus")
        if round(gpus * 1000) % 1000 != 0:
            return "Invalid 'gpus' resource: The 'gpus' resource must be an unsigned integer"
        return None

    def _validate_task(
        self,
        fw: FrameworkRecord,
        agent: AgentRecord,
        task: Mapping[str, Any],
    ) -> str | None:
        error = self._task_error(task, fw)
        if error is not None:
            return error
        if task["agent_id"]["value"] != agent.agent_id:
            return (
                f"Task uses invalid agent {task['agent_id']['value']} while agent "
                f"{agent.agent_id} is expected"
            )
        grace = duration_seconds(task.get("kill_policy", {}).get("grace_period"))
        if grace is not None and grace < 0:
            return "Task's 'kill_policy.grace_period' must be non-negative"
        max_time = duration_seconds(task.get("max_completion_time"))
        if max_time is not None and max_time < 0:
            return "Task's `max_completion_time` must be non-negative"
        if "health_check" in task:
            error = validate_health_check(task["health_check"])
            if error is not None:
                return error
            if task.get("container") or task.get("executor"):
                # Accepted, they would never run here: refused rather than silently ignored.
                return ("localmesos runs health checks of command tasks only, not of container "
                        "or custom-executor tasks (docs/local-mode.md)")
        if task.get("check"):
            return "localmesos does not run general checks (TaskInfo.check; docs/local-mode.md)"
        if not task.get("resources"):
            return "Task uses no resources"
        error = self._task_resources_error(task["resources"])
        if error is not None:
            return f"Task uses invalid resources: {error}"
        if task.get("limits"):
            # The embedded agents do not advertise TASK_RESOURCE_LIMITS (no cgroups here), so
            # Mesos' validateResourceLimits refuses any limit before looking at its values.
            return "Agent is not capable of handling task resource limits"
        return None

    def _validate_executor(
        self, fw: FrameworkRecord, agent: AgentRecord, executor: dict[str, Any]
    ) -> str | None:
        """Mesos ``executor::internal::validate``."""
        kind = executor.get("type")
        if kind == "DEFAULT" and "command" in executor:
            return "'ExecutorInfo.command' must not be set for 'DEFAULT' executor"
        if kind == "CUSTOM" and "command" not in executor:
            return "'ExecutorInfo.command' must be set for 'CUSTOM' executor"
        executor.setdefault("framework_id", {"value": fw.framework_id})
        if executor["framework_id"]["value"] != fw.framework_id:
            return (
                "ExecutorInfo has an invalid FrameworkID (Actual: "
                f"{executor['framework_id']['value']} vs Expected: {fw.framework_id})"
            )
        grace = duration_seconds(executor.get("shutdown_grace_period"))
        if grace is not None and grace < 0:
            return "ExecutorInfo's 'shutdown_grace_period' must be non-negative"
        error = self._task_resources_error(executor.get("resources", []))
        if error is not None:
            return f"Executor uses invalid resources: {error}"
        existing = fw.executors.get((agent.agent_id, executor["executor_id"]["value"]))
        if existing is not None and existing.info != executor:
            return (
                "ExecutorInfo is not compatible with existing ExecutorInfo with same "
                "ExecutorID)"
            )
        return None

    def _launch(
        self,
        fw: FrameworkRecord,
        agent: AgentRecord,
        role: str,
        task: dict[str, Any],
        available: Resources,
    ) -> Resources:
        """Validate and launch one LAUNCH task; returns what is left of the offered resources."""
        task = copy.deepcopy(task)
        error = self._validate_task(fw, agent, task)
        executor = task.get("executor")
        if error is None and ("executor" in task) == ("command" in task):
            error = (
                "Task should have at least one (but not both) of CommandInfo or ExecutorInfo "
                "present"
            )
        if error is None and executor is not None:
            error = self._custom_executor_error(fw, agent, executor)
        total = Resources()
        if error is None:
            total = self._launch_total(fw, agent, [task], executor)
            if not available.contains(total):
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
            executor_id = self._register_executor(fw, agent, role, executor, hosted=True)
        self._add_task(fw, agent, role, task, executor_id)
        agent.link.post("launch_task", copy.deepcopy(fw.info), copy.deepcopy(task),
                        launch_executor)
        return available - total

    def _custom_executor_error(
        self, fw: FrameworkRecord, agent: AgentRecord, executor: dict[str, Any]
    ) -> str | None:
        """Why the ExecutorInfo of a LAUNCH task cannot run (it must be a CUSTOM command)."""
        error = self._validate_executor(fw, agent, executor)
        if error is None and executor.get("type", "CUSTOM") != "CUSTOM":
            error = "'ExecutorInfo.type' must be 'CUSTOM'"
        if error is None and "command" not in executor:
            error = "'ExecutorInfo.command' must be set"
        return error

    def _launch_group(
        self,
        fw: FrameworkRecord,
        agent: AgentRecord,
        role: str,
        group: Mapping[str, Any],
        available: Resources,
    ) -> Resources:
        """Validate and launch a task group atomically (LAUNCH_GROUP): every task of the group
        is launched, or each gets TASK_ERROR with the group's first error."""
        executor = copy.deepcopy(group["executor"])
        tasks = [copy.deepcopy(t) for t in group["task_group"].get("tasks", [])]
        error = self._group_tasks_error(fw, agent, executor, tasks)
        if error is None:
            error = self._group_executor_error(fw, agent, executor)
        total = Resources()
        if error is None:
            total = self._launch_total(fw, agent, tasks, executor)
            if not available.contains(total):
                error = (
                    f"Total resources {mesos_resources_str(total)} required by task group "
                    f"and its executor are more than available "
                    f"{mesos_resources_str(available)}"
                )
        if error is not None:
            for task in tasks:
                self._task_invalid(fw, task, error)
            return available
        executor_id = self._register_executor(fw, agent, role, executor)
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

    def _group_tasks_error(
        self,
        fw: FrameworkRecord,
        agent: AgentRecord,
        executor: dict[str, Any],
        tasks: list[dict[str, Any]],
    ) -> str | None:
        """The first reason a group's tasks cannot launch; each valid task gets the group's
        executor."""
        if not tasks:
            return "Task group is empty"
        ids = [task["task_id"]["value"] for task in tasks]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            return f"Task group has duplicate task IDs: {', '.join(duplicates)}"
        for task in tasks:
            task_executor = task.get("executor")
            if task_executor is not None:
                task_executor.setdefault("framework_id", {"value": fw.framework_id})
            executor.setdefault("framework_id", {"value": fw.framework_id})
            if task_executor is not None and task_executor != executor:
                return (
                    f"The `ExecutorInfo` of task '{task['task_id']['value']}' is different "
                    f"from executor '{executor['executor_id']['value']}'"
                )
            task["executor"] = executor
            task_error = self._validate_task(fw, agent, task)
            if task_error is None and task.get("container", {}).get("type") == "DOCKER":
                task_error = "Docker ContainerInfo is not supported on the task"
            if task_error is not None:
                return f"Task '{task['task_id']['value']}' is invalid: {task_error}"
        return None

    def _group_executor_error(
        self, fw: FrameworkRecord, agent: AgentRecord, executor: dict[str, Any]
    ) -> str | None:
        """Why a group's executor cannot run: invalid, of no or an unknown type, a Docker
        container, or less than the minimum resources of an executor."""
        error = self._validate_executor(fw, agent, executor)
        if error is not None:
            return error
        kind = executor.get("type")
        if kind is None:
            return "'ExecutorInfo.type' must be set"
        if kind == "UNKNOWN":
            return "Unknown executor type"
        if executor.get("container", {}).get("type") == "DOCKER":
            return "Docker ContainerInfo is not supported on the executor"
        executor_id = executor["executor_id"]["value"]
        resources = resources_of(executor.get("resources", []))
        cpus = resources.scalar("cpus")
        mem = resources.scalar("mem")
        if cpus < 0.01:
            shown = f"{cpus:g}" if cpus else "None"
            return (
                f"Executor '{executor_id}' uses less CPUs ({shown}) than the minimum "
                "required (0.01)"
            )
        if mem < 32:
            shown = f"{mem:g}" if mem else "None"
            return (
                f"Executor '{executor_id}' uses less memory ({shown}) than the minimum "
                "required (32)"
            )
        if resources.scalar("disk") <= 0:
            return f"Executor '{executor_id}' uses no disk"
        return None

    @staticmethod
    def _launch_total(
        fw: FrameworkRecord,
        agent: AgentRecord,
        tasks: list[dict[str, Any]],
        executor: Mapping[str, Any] | None,
    ) -> Resources:
        """What launching ``tasks`` takes: their resources, and their executor's when the
        executor does not run on the agent yet."""
        total = Resources()
        for task in tasks:
            total = total + resources_of(task["resources"])
        if executor is not None:
            key = (agent.agent_id, executor["executor_id"]["value"])
            if key not in fw.executors:
                total = total + resources_of(executor.get("resources", []))
        return total

    @staticmethod
    def _register_executor(
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
        self._count("tasks_launched")
        logger.info(
            "Launching task %s of framework %s on agent %s with %s",
            record.task_id, fw.framework_id, agent.agent_id, record.resources,
        )
        return record

    def _task_invalid(self, fw: FrameworkRecord, task: Mapping[str, Any], error: str) -> None:
        self._count_task_state(fw, "TASK_ERROR", "SOURCE_MASTER", "REASON_TASK_INVALID")
        logger.warning(
            "Task %s of framework %s is invalid: %s",
            task["task_id"]["value"], fw.framework_id, error,
        )
        self._send_master_update(
            fw,
            task_id=task["task_id"]["value"],
            agent_id=task["agent_id"]["value"],
            state="TASK_ERROR",
            reason="REASON_TASK_INVALID",
            message=error,
        )
