"""Whether the tasks and executors of an ACCEPT can launch: Mesos 1.11's checks of them
(apache/mesos ``src/master/validation.cpp``: ``task::internal::validateTask``,
``executor::internal::validate``, ``task::group::internal::validateTask`` and
``validateExecutor``), on the master's records.

Each check returns the TASK_ERROR message of the first problem, or None; the ACCEPT
(:mod:`localmesos.master.launch`) reports it. The checks fill in what Mesos fills in as it
validates (an executor's ``framework_id``, a group task's ``executor``), so they run on the
master's own copies of the task infos.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from disauto.common.resources import ResourceError
from disauto.localmesos.master import validation
from disauto.localmesos.master.records import AgentRecord
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.records import resources_of
from disauto.localmesos.protocol.messages import duration_seconds
from disauto.localmesos.protocol.validation import validate_health_check


def _task_id_error(task: Mapping[str, Any], fw: FrameworkRecord) -> str | None:
    """Mesos ``task::internal::validateTask`` (the part before the executor checks)."""
    task_id = task["task_id"]["value"]
    error = validation.validate_task_id(task_id)
    if error is not None:
        return error
    if task_id in fw.tasks:
        return f"Task has duplicate ID: {task_id}"
    return None


def resources_error(resources_json: list[dict[str, Any]]) -> str | None:
    """Why a task's or executor's resources are invalid (unparsable, fractional GPUs)."""
    try:
        resources = resources_of(resources_json)
    except ResourceError as exc:
        return f"Invalid resources: {exc}"
    gpus = resources.scalar("gpus")
    if round(gpus * 1000) % 1000 != 0:
        return "Invalid 'gpus' resource: The 'gpus' resource must be an unsigned integer"
    return None


def allocation_role_error(resources_json: list[dict[str, Any]]) -> str | None:
    """Mesos ``validateAllocatedToSingleRole`` (the master has injected the offer's allocation
    info where a resource had none)."""
    roles: list[str] = []
    for item in resources_json:
        role = (item.get("allocation_info") or {}).get("role")
        if not isinstance(role, str):
            return "The resources are not allocated to a role"
        if roles and role != roles[0]:
            return (f"The resources have multiple allocation roles ('{role}' and '{roles[0]}') "
                    "but only one allocation role is allowed")
        roles.append(role)
    return None


def inject_allocation_info(task_or_executor: dict[str, Any], role: str) -> None:
    """Give every resource without ``allocation_info`` the offer's role, as the master does
    before validating an ACCEPT (``protobuf::injectAllocationInfo``)."""
    for key in ("resources",):
        for item in task_or_executor.get(key) or []:
            if isinstance(item, dict) and not item.get("allocation_info"):
                item["allocation_info"] = {"role": role}
    executor = task_or_executor.get("executor")
    if isinstance(executor, dict):
        inject_allocation_info(executor, role)


def task_error(
    fw: FrameworkRecord,
    agent: AgentRecord,
    task: Mapping[str, Any],
) -> str | None:
    """Why a task cannot launch on ``agent``: its ID, agent, durations, health check, checks,
    resources or limits (the checks that do not depend on its executor)."""
    error = _task_id_error(task, fw)
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
    error = resources_error(task["resources"])
    if error is not None:
        return f"Task uses invalid resources: {error}"
    error = allocation_role_error(task["resources"])
    if error is not None:
        return f"Invalid task resources: {error}"
    if task.get("limits"):
        # The embedded agents do not advertise TASK_RESOURCE_LIMITS (their isolators limit a
        # container by its resources, not by ``limits``), so
        # Mesos' validateResourceLimits refuses any limit before looking at its values.
        return "Agent is not capable of handling task resource limits"
    return None


def executor_error(
    fw: FrameworkRecord, agent: AgentRecord, executor: dict[str, Any]
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
    error = resources_error(executor.get("resources", []))
    if error is not None:
        return f"Executor uses invalid resources: {error}"
    error = allocation_role_error(executor.get("resources", []))
    if error is not None:
        return f"Invalid executor resources: {error}"
    existing = fw.executors.get((agent.agent_id, executor["executor_id"]["value"]))
    if existing is not None and existing.info != executor:
        return (
            "ExecutorInfo is not compatible with existing ExecutorInfo with same "
            "ExecutorID)"
        )
    return None


def custom_executor_error(
    fw: FrameworkRecord, agent: AgentRecord, executor: dict[str, Any]
) -> str | None:
    """Why the ExecutorInfo of a LAUNCH task cannot run (it must be a CUSTOM command)."""
    error = executor_error(fw, agent, executor)
    if error is None and executor.get("type", "CUSTOM") != "CUSTOM":
        error = "'ExecutorInfo.type' must be 'CUSTOM'"
    if error is None and "command" not in executor:
        error = "'ExecutorInfo.command' must be set"
    return error


def group_tasks_error(
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
        error = task_error(fw, agent, task)
        if error is None and task.get("container", {}).get("type") == "DOCKER":
            error = "Docker ContainerInfo is not supported on the task"
        if error is not None:
            return f"Task '{task['task_id']['value']}' is invalid: {error}"
    return None


def group_executor_error(
    fw: FrameworkRecord, agent: AgentRecord, executor: dict[str, Any]
) -> str | None:
    """Why a group's executor cannot run: invalid, of no or an unknown type, a Docker
    container, or less than the minimum resources of an executor."""
    error = executor_error(fw, agent, executor)
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
