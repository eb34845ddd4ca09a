"""An in-process Mesos cluster: one embedded master and N embedded agents on loopback.

This is what ``da-cluster`` runs, what ``--master local`` boots, and what the tests and
benchmarks use::

    with LocalCluster(ClusterConfig(agents=2, cpus=4, mem_mb=4096)) as cluster:
        driver = MesosSchedulerDriver(scheduler, framework_info, cluster.address)
        ...

The master speaks the Mesos v1 scheduler API over real HTTP on ``cluster.address``
(``127.0.0.1:PORT``); agents run command tasks as local process groups with sandboxes under
``work_dir`` (``<work_dir>/slaves/<agent id>/frameworks/...``, as a Mesos agent lays them out).

Like ``mesos-local``, every agent is on the same host. Unlike it, when there are several agents
and they share one ``ports`` range, the range is split evenly between them (``split_ports``), so
two tasks on different agents are never offered the same port of the one network namespace.

Its agents run in this process; agents of another process, which outlive their master, are
:mod:`localmesos.agent_host`'s (a cluster of no agents is a master alone, for them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
import logging
from pathlib import Path
import shutil
import tempfile
import threading
from types import MappingProxyType
from types import TracebackType
from typing import Any

from disauto.common.logrotate import DEFAULT_SANDBOX_LOGGING
from disauto.common.logrotate import SandboxLogging
from disauto.common.resources import RoleResources
from disauto.localmesos.agent.agent import Agent
from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.containerizer import cgroups
from disauto.localmesos.containerizer import cpu_quota
from disauto.localmesos.containerizer.gpus import split_devices
from disauto.localmesos.fleet import AgentFleet
from disauto.localmesos.fleet import AgentSettings
from disauto.localmesos.master.authorizer import Acls
from disauto.localmesos.master.master import Master
from disauto.localmesos.master.views.state import format_duration
from disauto.localmesos.protocol import registration
from disauto.localmesos.reaper import Reaper
from disauto.localmesos.server.http_auth import ReadonlyAuth
from disauto.localmesos.server.server import HttpServer


logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterConfig:
    """How to build a :class:`LocalCluster`: each field, its default and the Mesos flag it
    stands for are in docs/local-mode.md, "Building a cluster from Python"."""

    agents: int = 1
    cpus: float | None = None
    mem_mb: float | None = None
    disk_mb: float | None = None
    gpus: int = 0
    gpu_devices: tuple[int, ...] | None = None
    ports: tuple[tuple[int, int], ...] = ((31000, 32000),)
    attributes: Mapping[str, str | float] = field(default_factory=dict)
    agent_configs: tuple[AgentConfig, ...] = ()
    split_ports: bool = True
    host: str = "127.0.0.1"
    port: int = 0
    allocation_interval: float = 1.0
    heartbeat_interval: float = 15.0
    work_dir: Path | None = None
    credentials: Mapping[str, str] | None = None
    weights: Mapping[str, float] = field(default_factory=dict)
    status_update_retry_interval: float = 10.0
    status_update_retry_interval_max: float = 600.0
    default_kill_grace: float = 3.0
    max_failover_timeout: float | None = None
    offer_timeout: float | None = None
    executor_registration_timeout: float = 60.0
    executor_shutdown_grace_period: float = 5.0
    executor_heartbeat_interval: float = 1800.0
    max_completed_frameworks: int = 50
    max_completed_tasks_per_framework: int = 1000
    max_body_bytes: int = 16 * 1024 * 1024
    request_timeout: float = 30.0
    reap_on_exit: bool = True
    sandbox_logging: SandboxLogging | None = DEFAULT_SANDBOX_LOGGING
    resources: RoleResources | None = None
    agent_ping_timeout: float = registration.DEFAULT_AGENT_PING_TIMEOUT
    max_agent_ping_timeouts: int = registration.DEFAULT_MAX_AGENT_PING_TIMEOUTS
    agent_reregister_timeout: float = registration.DEFAULT_AGENT_REREGISTER_TIMEOUT
    registry_max_agent_age: float = registration.DEFAULT_REGISTRY_MAX_AGENT_AGE
    executor_reregistration_timeout: float = registration.DEFAULT_EXECUTOR_REREGISTRATION_TIMEOUT
    isolation: str = "auto"
    cgroups_enable_cfs: bool = False
    switch_user: bool = True
    authenticate_http_executors: bool = False
    jwt_secret_key: bytes | None = None
    authenticate_http_readonly: bool = False
    http_credentials: Mapping[str, str] | None = None
    acls: Acls | None = None

    def __post_init__(self) -> None:
        if not self.agent_configs and (
            isinstance(self.agents, bool) or not isinstance(self.agents, int) or self.agents < 0
        ):
            raise ValueError(f"invalid agents {self.agents!r}: must be a whole number >= 0")
        for name in ("allocation_interval", "heartbeat_interval", "agent_ping_timeout",
                     "agent_reregister_timeout", "registry_max_agent_age",
                     "executor_reregistration_timeout", "executor_heartbeat_interval"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"invalid {name} {value!r}: must be a number of seconds > 0")
        if self.offer_timeout is not None and not (
            isinstance(self.offer_timeout, int | float) and self.offer_timeout > 0
        ):
            raise ValueError(
                f"invalid offer_timeout {self.offer_timeout!r}: must be a number of seconds > 0"
            )
        if isinstance(self.max_agent_ping_timeouts, bool) or not isinstance(
                self.max_agent_ping_timeouts, int) or self.max_agent_ping_timeouts < 1:
            raise ValueError(f"invalid max_agent_ping_timeouts {self.max_agent_ping_timeouts!r}"
                             ": must be a whole number >= 1")
        parse_isolation(self.isolation)
        if self.authenticate_http_readonly and self.credentials is None \
                and self.http_credentials is None:
            raise ValueError("authenticate_http_readonly needs credentials or http_credentials")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"invalid port {self.port!r}: must be 0..65535")
        object.__setattr__(self, "agent_configs", tuple(self.agent_configs))
        object.__setattr__(self, "attributes", MappingProxyType(dict(self.attributes)))
        object.__setattr__(self, "weights", MappingProxyType(dict(self.weights)))
        for name in ("credentials", "http_credentials"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        if self.work_dir is not None:
            # Absolute, as a Mesos agent's sandboxes are: an executor runs in its sandbox and
            # is told its path (MESOS_SANDBOX), which a relative one would no longer name.
            object.__setattr__(self, "work_dir", Path(self.work_dir).expanduser().absolute())

    def agent_list(self) -> list[AgentConfig]:
        """The configuration of every agent, ports split when asked.

        Raises:
            ValueError: for invalid resources (from :class:`AgentConfig`).
        """
        if self.agent_configs:
            return list(self.agent_configs)
        kwargs: dict[str, Any] = {
            "gpus": self.gpus,
            "ports": self.ports,
            "attributes": dict(self.attributes),
            "hostname": self.host,
            "resources": self.resources,
        }
        for name in ("cpus", "mem_mb", "disk_mb"):
            if getattr(self, name) is not None:
                kwargs[name] = getattr(self, name)
        base = AgentConfig(**kwargs)
        configs = [base] * self.agents
        if self.split_ports and self.agents > 1:
            configs = [
                replace(config, ports=split_ranges(base.ports, self.agents, index))
                for index, config in enumerate(configs)
            ]
        if self.gpu_devices is not None and "gpus" not in (self.resources or RoleResources()
                                                           ).names():
            # With gpus in ``resources`` each agent has that many (indices 0..N-1).
            slices = [split_devices(self.gpu_devices, self.agents, i) for i in range(self.agents)]
            configs = [
                replace(config, gpus=len(devices), gpu_indices=devices)
                for config, devices in zip(configs, slices, strict=True)
            ]
        return configs


def split_ranges(
    ranges: tuple[tuple[int, int], ...], parts: int, index: int
) -> tuple[tuple[int, int], ...]:
    """The ``index``-th of ``parts`` near-equal, disjoint slices of the ports in ``ranges``.

    When there are fewer ports than parts, every part keeps all of them.
    """
    ports = sum(end - begin + 1 for begin, end in ranges)
    if ports < parts:
        return ranges
    start = ports * index // parts
    stop = ports * (index + 1) // parts  # exclusive
    out: list[tuple[int, int]] = []
    offset = 0
    for begin, end in ranges:
        size = end - begin + 1
        low = max(start, offset)
        high = min(stop, offset + size)
        if low < high:
            out.append((begin + low - offset, begin + high - offset - 1))
        offset += size
    return tuple(out)


def parse_isolation(text: str) -> frozenset[str] | None:
    """The isolators of ``text`` (``cgroups/cpu,cgroups/mem``), None for ``auto``.

    Raises:
        ValueError: naming an isolator that does not exist here.
    """
    if text.strip() == "auto":
        return None
    names = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(names - set(cgroups.ISOLATORS))
    if unknown or not names:
        raise ValueError(f"invalid isolation {text!r}: expected auto or a comma-separated list "
                         f"of {', '.join(cgroups.ISOLATORS)}")
    return names


def resolve_isolation(text: str) -> frozenset[str]:
    """The isolators to run with: ``auto`` is cgroups where usable (else posix, warned).

    Raises:
        ValueError: cgroups isolators asked for where they cannot run, one line saying why.
    """
    names = parse_isolation(text)
    if names is None:
        wanted = frozenset({"cgroups/cpu", "cgroups/mem"})
        why = cgroups.unavailable(wanted)
        if why is None:
            return wanted
        logger.warning("memory isolation is off (%s): tasks are not held to their 'mem'; "
                       "--isolation posix/cpu,posix/mem", why)
        return frozenset({"posix/cpu", "posix/mem"})
    why = cgroups.unavailable(names)
    if why is not None:
        raise ValueError(f"isolation {text!r}: cannot use cgroups: {why}")
    return names


def readonly_auth(config: ClusterConfig) -> ReadonlyAuth | None:
    """Who may read the read-only endpoints (``authenticate_http_readonly``): the master's
    with its credentials, the agents' with theirs."""
    if not config.authenticate_http_readonly:
        return None
    agents = config.http_credentials if config.http_credentials is not None \
        else config.credentials
    master = config.credentials if config.credentials is not None else agents
    return ReadonlyAuth(master=master, agents=agents)


def make_work_dir(config: ClusterConfig) -> tuple[Path, bool]:
    """The configured work dir (created), or a temporary one; whether it is temporary (its
    owner removes it on stop).

    Raises:
        OSError: it cannot be created.
    """
    if config.work_dir is None:
        work_dir = Path(tempfile.mkdtemp(prefix="localmesos-"))
        work_dir.chmod(0o755)  # as a Mesos work dir: tasks of other users reach sandboxes
        return work_dir, True
    work_dir = Path(config.work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    return work_dir, False


def agent_settings(config: ClusterConfig, isolation: frozenset[str]) -> AgentSettings:
    """How the agents of ``config`` are made, with the (resolved) ``isolation``; stale cgroups
    of cluster processes killed before they could remove them are removed first."""
    if isolation & {"cgroups/cpu", "cgroups/mem"}:
        cgroups.remove_stale()
    return AgentSettings(
        retry_interval=config.status_update_retry_interval,
        retry_interval_max=config.status_update_retry_interval_max,
        default_kill_grace=config.default_kill_grace,
        sandbox_logging=config.sandbox_logging,
        executor_registration_timeout=config.executor_registration_timeout,
        executor_shutdown_grace=config.executor_shutdown_grace_period,
        executor_heartbeat_interval=config.executor_heartbeat_interval,
        executor_reregistration_timeout=config.executor_reregistration_timeout,
        isolation=isolation, cgroups_enable_cfs=config.cgroups_enable_cfs,
        switch_user=config.switch_user,
        authenticate_executors=config.authenticate_http_executors,
        jwt_secret_key=config.jwt_secret_key)


class LocalCluster:
    """An embedded master plus agents in this process (see the module docstring).

    Args:
        config: the cluster's configuration (default: one agent with detected resources).
        **overrides: fields of :class:`ClusterConfig` to change, e.g. ``agents=3``.

    Thread safety: :meth:`start` and :meth:`stop` may be called from any thread; ``stop`` is
    idempotent and also runs when the context manager exits.
    """

    def __init__(self, config: ClusterConfig | None = None, **overrides: Any) -> None:
        base = config or ClusterConfig()
        self.config = replace(base, **overrides) if overrides else base
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False
        self._master: Master | None = None
        self._http: HttpServer | None = None
        self._fleet: AgentFleet | None = None
        self._work_dir: Path | None = None
        self._own_work_dir = False
        self._reaper: Reaper | None = None

    # -- properties ----------------------------------------------------------------------

    @property
    def master(self) -> Master:
        """The embedded master."""
        if self._master is None:
            raise RuntimeError("the cluster is not started")
        return self._master

    @property
    def agents(self) -> tuple[Agent, ...]:
        """The running agents, in the order they were added (a restarted one in its place)."""
        return self._fleet.agents if self._fleet is not None else ()

    @property
    def fleet(self) -> AgentFleet:
        """The agents and what can happen to them (restarts, partitions)."""
        if self._fleet is None:
            raise RuntimeError("the cluster is not started")
        return self._fleet

    @property
    def address(self) -> str:
        """``host:port`` of the master, what ``MesosSchedulerDriver`` takes."""
        if self._http is None:
            raise RuntimeError("the cluster is not started")
        host, port = self._http.address
        return f"{host}:{port}"

    @property
    def port(self) -> int:
        """The master's port."""
        return int(self.address.rsplit(":", 1)[1])

    @property
    def url(self) -> str:
        """``http://host:port``: the web UI page and the base of every endpoint."""
        return f"http://{self.address}"

    @property
    def work_dir(self) -> Path:
        """The directory holding the agents' sandboxes."""
        if self._work_dir is None:
            raise RuntimeError("the cluster is not started")
        return self._work_dir

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> LocalCluster:
        """Start the master, its HTTP server and the agents; returns ``self``.

        Raises:
            OSError: when the port cannot be bound or the work dir cannot be created.
            ValueError: for invalid agent resources.
            RuntimeError: when the cluster was already stopped.
        """
        with self._lock:
            if self._stopped:
                raise RuntimeError("a stopped LocalCluster cannot be restarted")
            if self._started:
                return self
            self._started = True
        config = self.config
        agent_configs = config.agent_list()  # validate before anything starts
        try:
            self._work_dir = self._make_work_dir()
            if config.reap_on_exit:  # the tasks die with this process, however it dies
                self._reaper = Reaper(self._work_dir)
                self._reaper.start()
            self._master = self._make_master(self._work_dir)
            self._http = HttpServer(
                self._master,
                host=config.host,
                port=config.port,
                credentials=config.credentials,
                max_body_bytes=config.max_body_bytes,
                request_timeout=config.request_timeout,
                agents=lambda: self.agents,
                admin=self,
                readonly=self._readonly_auth(),
            )
            self._http.start()
            host, port = self._http.address
            self._master.set_address(host, port)
            self._master.start()
            self._fleet = self._make_fleet(resolve_isolation(config.isolation))
            if any(agent.speed < 1 for agent in agent_configs):
                cpu_quota.remove_stale()  # those of cluster processes killed before they could
            for agent_config in agent_configs:
                self.add_agent(agent_config)
        except BaseException:
            self.stop()
            raise
        logger.info(
            "localmesos cluster at %s with %d agent(s), work dir %s, isolation %s",
            self.address, len(self.agents), self._work_dir, ",".join(sorted(self.isolation)),
        )
        return self

    def _readonly_auth(self) -> ReadonlyAuth | None:
        return readonly_auth(self.config)

    def _make_work_dir(self) -> Path:
        """The configured work dir (created), or a temporary one removed on stop."""
        work_dir, self._own_work_dir = make_work_dir(self.config)
        return work_dir

    def _make_master(self, work_dir: Path) -> Master:
        config = self.config
        return Master(
            hostname=config.host,
            allocation_interval=config.allocation_interval,
            heartbeat_interval=config.heartbeat_interval,
            weights=config.weights,
            max_completed_frameworks=config.max_completed_frameworks,
            max_completed_tasks_per_framework=config.max_completed_tasks_per_framework,
            max_failover_timeout=config.max_failover_timeout,
            offer_timeout=config.offer_timeout,
            agent_ping_timeout=config.agent_ping_timeout,
            max_agent_ping_timeouts=config.max_agent_ping_timeouts,
            agent_reregister_timeout=config.agent_reregister_timeout,
            registry_max_agent_age=config.registry_max_agent_age,
            authenticate=config.credentials is not None,
            acls=config.acls,
            flags={
                "work_dir": str(work_dir),
                "heartbeat_interval": format_duration(config.heartbeat_interval),
                "http_framework_authenticators": "basic",
                "authenticate_http_readonly": str(config.authenticate_http_readonly).lower(),
            },
        )

    def add_agent(self, config: AgentConfig | None = None) -> Agent:
        """Start one more agent and register it (an allocation runs for it at once).

        Args:
            config: its resources; default the cluster's per-agent configuration.
        """
        if config is None:
            config = replace(self.config, agents=1, split_ports=False).agent_list()[0]
        agent = self.fleet.add(config)
        if agent is None:  # cannot be: this process' master registers it at once
            raise RuntimeError("the agent could not register")
        return agent

    def _make_fleet(self, isolation: frozenset[str]) -> AgentFleet:
        return AgentFleet(self.master, self.work_dir, self.address,
                          agent_settings(self.config, isolation))

    @property
    def isolation(self) -> frozenset[str]:
        """The isolators the agents run with (``auto`` resolved)."""
        return self.fleet.settings.isolation

    # -- what happens to agents (not Mesos calls; docs/local-mode.md) ---------------------

    def restart_agent(self, agent_id: str, down_for: float = 0.0) -> threading.Thread:
        """Restart an agent: it dies now, a new one recovers ``down_for`` seconds later (on
        the returned thread). Raises KeyError for an unknown agent."""
        return self.fleet.restart(agent_id, down_for)

    def partition_agent(self, agent_id: str, seconds: float | None = None) -> None:
        """Cut the network to an agent (for ``seconds``, or until :meth:`heal_agent`)."""
        self.fleet.partition(agent_id, seconds)

    def heal_agent(self, agent_id: str) -> None:
        self.fleet.heal(agent_id)

    def admin_agents(self) -> list[dict[str, Any]]:
        """The admin endpoint's list: each agent and whether its network is cut."""
        return self.fleet.admin_agents()

    def admin_act(self, action: str, agent_id: str, seconds: float | None) -> None:
        """The admin endpoint's actions (:mod:`localmesos.server.admin_routes`).

        Raises:
            KeyError: an unknown agent. ValueError: an unknown action.
        """
        self.fleet.admin_act(action, agent_id, seconds)

    def stop(self) -> None:
        """Close the event streams, stop the agents (killing their tasks), the master and its
        HTTP server, join every thread, and remove a temporary work dir. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        if self._http is not None:
            self._http.stop_accepting()  # no framework can (re)subscribe from here on
        if self._master is not None:
            self._master.close_streams()
        if self._http is not None:
            self._http.stop()
        if self._fleet is not None:
            self._fleet.stop()
        if self._master is not None:
            self._master.stop()
        if self._reaper is not None:
            self._reaper.stop()
        if self._own_work_dir and self._work_dir is not None:
            shutil.rmtree(self._work_dir, ignore_errors=True)
        logger.info("localmesos cluster stopped")

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
