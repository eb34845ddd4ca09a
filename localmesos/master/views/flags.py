"""The ``flags`` of ``/master/flags`` and ``/master/state``: the flags a Mesos 1.11 master reports.

A Mesos master reports each flag of ``src/master/flags.cpp`` (and of ``src/logging/flags.cpp``,
plus stout's ``help``) that has a value: its default, or what it was started with; flags without
a default that were not given are absent. The embedded master reports the values it runs with
where it has the concept (``allocation_interval``, ``hostname``, ``port``, ``weights``, ...) and
Mesos' defaults for flags that are inert here (registry, ZooKeeper, authentication of agents,
logging). ``registry`` is ``in_memory``: nothing persists across restarts.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from disauto.localmesos.master.master import Master


#: Defaults of Mesos 1.11 master flags the embedded master does not act on (as Mesos prints
#: them: stout ``Duration``, ``Bytes`` and booleans).
INERT_DEFAULTS: dict[str, str] = {
    "help": "false",
    "version": "false",
    "hostname_lookup": "true",
    "root_submissions": "true",
    "registry": "in_memory",
    "zk_session_timeout": "10secs",
    "registry_strict": "false",
    "registry_fetch_timeout": "1mins",
    "registry_store_timeout": "20secs",
    "log_auto_initialize": "true",
    "agent_reregister_timeout": "10mins",
    "recovery_agent_removal_limit": "100%",
    "authenticate_frameworks": "false",
    "authenticate_agents": "false",
    "authentication_v0_timeout": "15secs",
    "authenticate_http_readwrite": "false",
    "authenticate_http_readonly": "false",
    "authenticators": "crammd5",
    "allocator_agent_recovery_factor": "0.8",
    "allocator_recovery_timeout": "10mins",
    "agent_ping_timeout": "15secs",
    "max_agent_ping_timeouts": "5",
    "authorizers": "local",
    "http_authenticators": "basic",
    "max_operator_event_stream_subscribers": "1000",
    "max_unreachable_tasks_per_framework": "1000",
    "registry_gc_interval": "15mins",
    "registry_max_agent_age": "2weeks",
    "registry_max_agent_count": "102400",
    "memory_profiling": "false",
    "require_agent_domain": "false",
    "publish_per_framework_metrics": "true",
    "offer_constraints_re2_max_mem": "4KB",
    "offer_constraints_re2_max_program_size": "100",
    "quiet": "false",
    "logging_level": "INFO",
    "logbufsecs": "0",
    "initialize_driver_logging": "true",
}


def format_duration(seconds: float) -> str:
    """A duration as Mesos (stout ``Duration``) prints it: ``1secs``, ``500ms``, ``1.5mins``."""
    units = (
        (7 * 86400.0, "weeks"),
        (86400.0, "days"),
        (3600.0, "hrs"),
        (60.0, "mins"),
        (1.0, "secs"),
        (1e-3, "ms"),
        (1e-6, "us"),
    )
    for size, name in units:
        if seconds >= size:
            return f"{seconds / size:.10g}{name}"
    return f"{seconds * 1e9:.10g}ns"


def _min_allocatable(master: Master) -> str:
    alternatives = (sorted(r.scalars.items()) for r in master.min_allocatable)
    return "|".join(";".join(f"{k}:{v:g}" for k, v in items) for items in alternatives)


def master_flags(master: Master) -> dict[str, str]:
    """Under the master's lock (or with its configuration settled): name → value, sorted."""
    flags = dict(INERT_DEFAULTS)
    flags.update({
        "allocation_interval": format_duration(master.allocation_interval),
        "allocator": "hierarchical",
        "authenticate_http_frameworks": "true" if master.authenticate else "false",
        "filter_gpu_resources": "true",
        "framework_sorter": "drf",
        "hostname": master.hostname,
        "max_completed_frameworks": str(master.completed_frameworks.maxlen),
        "max_completed_tasks_per_framework": str(master.max_completed_tasks_per_framework),
        "min_allocatable_resources": _min_allocatable(master),
        "port": str(master.port),
        "agent_ping_timeout": format_duration(master.agent_ping_timeout),
        "max_agent_ping_timeouts": str(master.max_agent_ping_timeouts),
        "agent_reregister_timeout": format_duration(master.agent_reregister_timeout),
        "registry_max_agent_age": format_duration(master.registry_max_agent_age),
        "role_sorter": "drf",
        "webui_dir": str(Path(__file__).with_name("webui")),
    })  # fmt: skip
    if master.offer_timeout is not None:
        flags["offer_timeout"] = format_duration(master.offer_timeout)
    if master.weights:
        flags["weights"] = ",".join(f"{k}={v:g}" for k, v in sorted(master.weights.items()))
    flags.update(master.extra_flags)
    return dict(sorted(flags.items()))
