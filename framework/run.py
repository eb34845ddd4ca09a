"""Running a job's framework: what ``da-submit`` and ``disauto.testing`` build and start.

:func:`build_runner` makes every part of a job's framework (store, controller, gRPC service,
file server, job page, scheduler) and the :class:`JobRunner` that serves them; the checks
``da-submit`` runs before any of it (containers, roles, the master's address, the capacity a
runner asks for) and the few facts it prints are named here too, so that ``submit/`` asks one
module about a job's framework. :class:`JobController` and :func:`make_server` are the
controller and its gRPC service, for a job in one process (``disauto.testing.inprocess``);
:class:`StatisticsCollector` the framework's poller of its tasks' usage (``bench``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from disauto.common.registry import lazy_attributes


if TYPE_CHECKING:
    from disauto.framework._capacity import describe as describe_capacity
    from disauto.framework._containers import DEFAULT_CONTAINERIZER
    from disauto.framework._containers import ContainerConfigError
    from disauto.framework._containers import check_container_flags
    from disauto.framework._job import APPCORE_KEY
    from disauto.framework._job import JobController
    from disauto.framework._job.tls import keep as keep_tls_identity
    from disauto.framework._job.tls import kept as kept_tls_identity
    from disauto.framework._master_endpoint import MasterEndpoint
    from disauto.framework._master_endpoint import MasterUnreachableError
    from disauto.framework._roles import role_problem
    from disauto.framework._runner_builder import RunnerOptions
    from disauto.framework._runner_builder import build_runner
    from disauto.framework._runtime import JobRunner
    from disauto.framework._runtime import MasterAwayError
    from disauto.framework._sandbox_logs import SandboxLogs
    from disauto.framework._service import make_server
    from disauto.framework._slots import EXECUTOR_CPUS
    from disauto.framework._slots import EXECUTOR_MEM_MB
    from disauto.framework._slots import carved
    from disauto.framework._tasks import task_name
    from disauto.framework._telemetry.monitor import StatisticsCollector
    from disauto.framework._telemetry.monitor import TaskPlace


__all__ = [
    "APPCORE_KEY", "DEFAULT_CONTAINERIZER", "EXECUTOR_CPUS", "EXECUTOR_MEM_MB",
    "ContainerConfigError", "JobController", "JobRunner", "MasterAwayError", "MasterEndpoint",
    "MasterUnreachableError", "RunnerOptions", "SandboxLogs", "StatisticsCollector", "TaskPlace",
    "build_runner", "carved",
    "check_container_flags", "describe_capacity", "keep_tls_identity", "kept_tls_identity",
    "make_server", "role_problem", "task_name",
]

# Loaded on first use: a reader of one name does not import every part behind the others.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "APPCORE_KEY": "disauto.framework._job:APPCORE_KEY",
    "ContainerConfigError": "disauto.framework._containers:ContainerConfigError",
    "DEFAULT_CONTAINERIZER": "disauto.framework._containers:DEFAULT_CONTAINERIZER",
    "EXECUTOR_CPUS": "disauto.framework._slots:EXECUTOR_CPUS",
    "EXECUTOR_MEM_MB": "disauto.framework._slots:EXECUTOR_MEM_MB",
    "JobController": "disauto.framework._job:JobController",
    "JobRunner": "disauto.framework._runtime:JobRunner",
    "MasterAwayError": "disauto.framework._runtime:MasterAwayError",
    "MasterEndpoint": "disauto.framework._master_endpoint:MasterEndpoint",
    "MasterUnreachableError": "disauto.framework._master_endpoint:MasterUnreachableError",
    "RunnerOptions": "disauto.framework._runner_builder:RunnerOptions",
    "SandboxLogs": "disauto.framework._sandbox_logs:SandboxLogs",
    "build_runner": "disauto.framework._runner_builder:build_runner",
    "carved": "disauto.framework._slots:carved",
    "check_container_flags": "disauto.framework._containers:check_container_flags",
    "describe_capacity": "disauto.framework._capacity:describe",
    "keep_tls_identity": "disauto.framework._job.tls:keep",
    "kept_tls_identity": "disauto.framework._job.tls:kept",
    "make_server": "disauto.framework._service:make_server",
    "role_problem": "disauto.framework._roles:role_problem",
    "task_name": "disauto.framework._tasks:task_name",
    "StatisticsCollector": "disauto.framework._telemetry.monitor:StatisticsCollector",
    "TaskPlace": "disauto.framework._telemetry.monitor:TaskPlace",
})
