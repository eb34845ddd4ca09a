"""Embedded agents in a process of their own, registered with a master in another process, as
Mesos agents run apart from their master: ``da-cluster --agents-only --master HOST:PORT``.

This is the layout in which agents outlive their master: when it dies, they keep their tasks,
and re-register, with the tasks they run, with the next master (the same address started
again, or another one an election names). :class:`AgentHost` runs

* an :class:`~localmesos.fleet.AgentFleet` whose master is a
  :class:`~localmesos.agent.master_client.MasterClient`: each agent registers with the master
  ``leader()`` names (``disauto.internal.RegisterAgent``, backing off until one answers), sends
  it its messages over HTTP and re-registers with the master ``leader()`` names then when it
  loses the master (no ping within the master's total ping timeout: ``Slave::pingTimeout``);
* its own HTTP server (:mod:`localmesos.server.agent_host_routes`) on ``host:port``: the
  master's messages to its agents (``/slave(N)/disauto.internal.*``), their executor API
  (``MESOS_AGENT_ENDPOINT`` is this address), ``/slave(N)/state``,
  ``/slave(N)/monitor/statistics``, the sandboxes' ``/files/*`` and the admin endpoint
  (restart, partition, heal its agents). The master advertises each agent at its pid
  ``slave(N)@host:port`` (``/master/slaves``, offers' ``url``), so readers of agent endpoints
  come here;
* a detector watch: every ``detect_interval`` seconds it asks ``leader()``; when it names
  another master than before, every agent registered with another master re-registers at once
  (``Slave::detected``). ``leader`` is a fixed address today; an election's detector plugs in
  there.

As a :class:`~localmesos.cluster.LocalCluster`, the host's tasks die with it, however it dies
(:mod:`localmesos.reaper`), and a temporary work dir is removed when it stops.
"""

from __future__ import annotations

from collections.abc import Sequence
import logging
from pathlib import Path
import shutil
import threading
from types import TracebackType
from typing import Any

from disauto.localmesos.agent.agent import Agent
from disauto.localmesos.agent.master_client import Leader
from disauto.localmesos.agent.master_client import MasterClient
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import agent_settings
from disauto.localmesos.cluster import make_work_dir
from disauto.localmesos.cluster import readonly_auth
from disauto.localmesos.cluster import resolve_isolation
from disauto.localmesos.containerizer import cpu_quota
from disauto.localmesos.fleet import AgentFleet
from disauto.localmesos.master.offers import CombinedRoots
from disauto.localmesos.reaper import Reaper
from disauto.localmesos.server.agent_host_routes import AgentHostRouter
from disauto.localmesos.server.server import HttpServer


logger = logging.getLogger(__name__)


def fixed_leader(address: str) -> Leader:
    """The detector of a master at one known address (Mesos' ``StandaloneMasterDetector``)."""
    return lambda: address


class AgentHost:
    """Agents whose master is in another process (see the module docstring).

    Args:
        config: the agents (``agents``, their resources...), where to serve them (``host``,
            ``port``: 0 picks a free one) and their work dir; the master's fields are not used.
        leader: the master detector: ``host:port`` of the leading master, or None.
        detect_interval: seconds between two questions to ``leader``.

    Thread safety: :meth:`start` and :meth:`stop` may be called from any thread; ``stop`` is
    idempotent and also runs when the context manager exits.
    """

    def __init__(self, config: ClusterConfig, leader: Leader,
                 detect_interval: float = 1.0) -> None:
        self.config = config
        self.leader = leader
        self.detect_interval = detect_interval
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._started = False
        self._http: HttpServer | None = None
        self._client: MasterClient | None = None
        self._fleet: AgentFleet | None = None
        self._work_dir: Path | None = None
        self._own_work_dir = False
        self._reaper: Reaper | None = None
        self._threads: list[threading.Thread] = []
        self._registrar: threading.Thread | None = None
        self._roots = CombinedRoots()

    # -- properties ------------------------------------------------------------------------

    @property
    def address(self) -> str:
        """``host:port`` where the agents are served (their pids' address)."""
        if self._http is None:
            raise RuntimeError("the agent host is not started")
        host, port = self._http.address
        return f"{host}:{port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    @property
    def fleet(self) -> AgentFleet:
        if self._fleet is None:
            raise RuntimeError("the agent host is not started")
        return self._fleet

    @property
    def work_dir(self) -> Path:
        if self._work_dir is None:
            raise RuntimeError("the agent host is not started")
        return self._work_dir

    @property
    def agents(self) -> Sequence[Agent]:
        """The registered agents, the N-th being ``/slave(N)``."""
        return self._fleet.agents if self._fleet is not None else ()

    # -- what its HTTP server serves (``HostedAgents``, ``Admin``) -------------------------

    def in_slot(self, slot: int, wait: float = 0.0) -> Agent | None:
        return None if self._fleet is None else self._fleet.in_slot(slot, wait)

    def is_cut(self, agent_id: str) -> bool:
        wire = None if self._fleet is None else self._fleet.wire(agent_id)
        return wire is not None and wire.is_cut

    def file_roots(self) -> dict[str, str]:
        return self._roots.of(self.agents)

    def admin_agents(self) -> list[dict[str, Any]]:
        return self.fleet.admin_agents()

    def admin_act(self, action: str, agent_id: str, seconds: float | None) -> None:
        """Raises: KeyError: an unknown agent. ValueError: an unknown action."""
        self.fleet.admin_act(action, agent_id, seconds)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> AgentHost:
        """Serve, then register the agents (on a thread: each waits for a master to answer;
        :meth:`wait_registered`); returns ``self``.

        Raises:
            OSError: the port cannot be bound or the work dir cannot be created.
            ValueError: invalid agent resources or isolation.
            RuntimeError: it was stopped already.
        """
        with self._lock:
            if self._stopping.is_set():
                raise RuntimeError("a stopped AgentHost cannot be started again")
            if self._started:
                return self
            self._started = True
        config = self.config
        agent_configs = config.agent_list()  # validate before anything starts
        try:
            self._work_dir, self._own_work_dir = make_work_dir(config)
            if config.reap_on_exit:
                self._reaper = Reaper(self._work_dir)
                self._reaper.start()
            readonly = readonly_auth(config)
            self._http = HttpServer(
                None, host=config.host, port=config.port, max_body_bytes=config.max_body_bytes,
                request_timeout=config.request_timeout,
                router=AgentHostRouter(self, readonly, admin=self,
                                       credentials=config.credentials))
            self._http.start()
            self._client = MasterClient(self.leader, self.address)
            settings = agent_settings(config, resolve_isolation(config.isolation))
            self._fleet = AgentFleet(self._client, self._work_dir, self.address, settings)
            if any(agent.speed < 1 for agent in agent_configs):
                cpu_quota.remove_stale()
        except BaseException:
            self.stop()
            raise
        self._registrar = self._spawn(self._register_all, agent_configs,
                                      name="agent-host-registrar")
        self._spawn(self._watch_leader, self._client, name="agent-host-detector")
        logger.info("agent host at %s with %d agent(s), work dir %s", self.address,
                    len(agent_configs), self._work_dir)
        return self

    def _spawn(self, target: Any, *args: Any, name: str) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()
        return thread

    def _register_all(self, configs: list[Any]) -> None:
        """Register each agent in turn (``/slave(N)`` is the N-th)."""
        for config in configs:
            if self._stopping.is_set() or self.fleet.add(config) is None:
                return

    def wait_registered(self, timeout: float) -> bool:
        """Whether every agent registered within ``timeout`` seconds."""
        if self._registrar is not None:
            self._registrar.join(timeout)
        return len(self.agents) == len(self.config.agent_list())

    def _watch_leader(self, client: MasterClient) -> None:
        """Ask the detector; when it names a new master, re-register the agents registered
        with another one (``Slave::detected``)."""
        last = self._detect()
        while not self._stopping.wait(self.detect_interval):
            leader = self._detect()
            if leader is None or leader == last:
                last = leader if leader is not None else last
                continue
            logger.info("New master detected at %s", leader)
            last = leader
            for agent in self.agents:
                if client.master_of(agent.id) != leader:
                    agent.master_detected()

    def _detect(self) -> str | None:
        try:
            return self.leader()
        except Exception:  # noqa: BLE001 - a failing detector detects nothing this time
            logger.exception("The master detector failed")
            return None

    def stop(self) -> None:
        """Stop registering, stop the agents (killing their tasks) and the HTTP server, and
        remove a temporary work dir. Idempotent."""
        with self._lock:
            if self._stopping.is_set():
                return
            self._stopping.set()
        if self._http is not None:
            self._http.stop_accepting()
        if self._client is not None:
            self._client.stop()
        for thread in self._threads:
            thread.join(30)
        if self._fleet is not None:
            self._fleet.stop()
        if self._http is not None:
            self._http.stop()
        if self._reaper is not None:
            self._reaper.stop()
        if self._own_work_dir and self._work_dir is not None:
            shutil.rmtree(self._work_dir, ignore_errors=True)
        logger.info("agent host stopped")

    def __enter__(self) -> AgentHost:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
