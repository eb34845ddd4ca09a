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
    from disauto.framework.capacity import describe as describe_capacity
    from disauto.framework.containers import DEFAULT_CONTAINERIZER
    from disauto.framework.containers import ContainerConfigError
    from disauto.framework.containers import check_container_flags
    from disauto.framework.job import APPCORE_KEY
    from disauto.framework.job import JobController
    from disauto.framework.job.tls import keep as keep_tls_identity
    from disauto.framework.job.tls import kept as kept_tls_identity
    from disauto.framework.master_endpoint import MasterEndpoint
    from disauto.framework.master_endpoint import MasterUnreachableError
    from disauto.framework.roles import role_problem
    from disauto.framework.runner_builder import RunnerOptions
    from disauto.framework.runner_builder import build_runner
    from disauto.framework.runtime import JobRunner
    from disauto.framework.runtime import MasterAwayError
    from disauto.framework.sandbox_logs import SandboxLogs
    from disauto.framework.service import make_server
    from disauto.framework.slots import EXECUTOR_CPUS
    from disauto.framework.slots import EXECUTOR_MEM_MB
    from disauto.framework.slots import carved
    from disauto.framework.tasks import task_name
    from disauto.framework.telemetry.monitor import StatisticsCollector
    from disauto.framework.telemetry.monitor import TaskPlace


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
    "APPCORE_KEY": "disauto.framework.job:APPCORE_KEY",
    "ContainerConfigError": "disauto.framework.containers:ContainerConfigError",
    "DEFAULT_CONTAINERIZER": "disauto.framework.containers:DEFAULT_CONTAINERIZER",
    "EXECUTOR_CPUS": "disauto.framework.slots:EXECUTOR_CPUS",
    "EXECUTOR_MEM_MB": "disauto.framework.slots:EXECUTOR_MEM_MB",
    "JobController": "disauto.framework.job:JobController",
    "JobRunner": "disauto.framework.runtime:JobRunner",
    "MasterAwayError": "disauto.framework.runtime:MasterAwayError",
    "MasterEndpoint": "disauto.framework.master_endpoint:MasterEndpoint",
    "MasterUnreachableError": "disauto.framework.master_endpoint:MasterUnreachableError",
    "RunnerOptions": "disauto.framework.runner_builder:RunnerOptions",
    "SandboxLogs": "disauto.framework.sandbox_logs:SandboxLogs",
    "build_runner": "disauto.framework.runner_builder:build_runner",
    "carved": "disauto.framework.slots:carved",
    "check_container_flags": "disauto.framework.containers:check_container_flags",
    "describe_capacity": "disauto.framework.capacity:describe",
    "keep_tls_identity": "disauto.framework.job.tls:keep",
    "kept_tls_identity": "disauto.framework.job.tls:kept",
    "make_server": "disauto.framework.service:make_server",
    "role_problem": "disauto.framework.roles:role_problem",
    "task_name": "disauto.framework.tasks:task_name",
    "StatisticsCollector": "disauto.framework.telemetry.monitor:StatisticsCollector",
    "TaskPlace": "disauto.framework.telemetry.monitor:TaskPlace",
})
