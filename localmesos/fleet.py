"""The embedded cluster's agents: made, wired to the master, restarted and cut off.

Each agent reaches the master, and the master it, through an
:class:`~localmesos.network.AgentWire`; its processes are kept by a
:class:`~localmesos.containerizer.launcher.Launcher` that outlives it. On top of what Mesos
itself does, the fleet can do to an agent what happens to a real one (not Mesos calls:
``da-cluster agent`` and the cluster's admin endpoint reach them):

* :meth:`AgentFleet.restart`: the agent's process dies (its connection to the master breaks:
  the master's ``exited``) and, after ``down_for`` seconds, a new agent with the same id and
  work dir recovers from its checkpoint and re-registers (:mod:`localmesos.agent.recovery`).
* :meth:`AgentFleet.partition` / :meth:`AgentFleet.heal`: the network between the master and
  the agent splits (messages lost both ways; pings go unanswered until the master marks the
  agent unreachable) and joins again (the agent re-registers).

The master is the :class:`~localmesos.master.master.Master` of this process (the agents call it,
through their wires), or one in another process that a
:class:`~localmesos.agent.master_client.MasterClient` reaches over HTTP
(:mod:`localmesos.agent_host`): then an agent is registered by its host's slot, ``/slave(N)``
for the N-th agent added, and the master's messages to it come through the host's HTTP server
(which cuts them with the wire too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
import logging
from pathlib import Path
import threading
from typing import Any

from disauto.common.logrotate import SandboxLogging
from disauto.localmesos.agent import executor_auth
from disauto.localmesos.agent.agent import Agent
from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.agent.config import AgentRuntime
from disauto.localmesos.agent.master_client import MasterClient
from disauto.localmesos.agent.master_link import MasterCallbacks
from disauto.localmesos.agent.views import agent_info
from disauto.localmesos.containerizer import cgroups
from disauto.localmesos.containerizer.launcher import Launcher
from disauto.localmesos.master.master import Master
from disauto.localmesos.network import AgentWire


logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AgentSettings:
    """What every agent of a cluster is made with (the cluster's configuration)."""

    retry_interval: float
    retry_interval_max: float
    default_kill_grace: float
    sandbox_logging: SandboxLogging | None
    executor_registration_timeout: float
    executor_shutdown_grace: float
    executor_heartbeat_interval: float
    executor_reregistration_timeout: float
    isolation: frozenset[str]
    cgroups_enable_cfs: bool
    switch_user: bool = True
    #: Executors must present their token (Mesos ``--authenticate_http_executors``).
    authenticate_executors: bool = False
    #: The key every agent signs its executors' tokens with (Mesos ``--jwt_secret_key``);
    #: None: each agent makes a random one of its own, kept across its restarts.
    jwt_secret_key: bytes | None = None


class AgentFleet:
    """The agents of one cluster (see the module docstring). Thread-safe.

    Args:
        master: the master they register with: this process' or another's.
        work_dir: the cluster's work dir.
        endpoint: ``host:port`` serving the agents (``MESOS_AGENT_ENDPOINT``): the master's
            port, or that of the agents' own process.
        settings: how agents are made.
    """

    def __init__(self, master: Master | MasterClient, work_dir: Path, endpoint: str,
                 settings: AgentSettings) -> None:
        self.master = master
        self.work_dir = work_dir
        self.endpoint = endpoint
        self.settings = settings
        self._lock = threading.Lock()
        self._added = threading.Condition(self._lock)
        self._slots = 0  # slots handed out: the agents, and one being registered
        self._agents: list[Agent] = []
        self._configs: dict[str, AgentConfig] = {}
        self._wires: dict[str, AgentWire] = {}
        self._launchers: dict[str, Launcher] = {}
        self._restarts: list[threading.Thread] = []
        self._secrets: dict[str, bytes] = {}

    @property
    def agents(self) -> tuple[Agent, ...]:
        """The running agents, the N-th being ``/slave(N)`` (a restarted one in its place)."""
        with self._lock:
            return tuple(self._agents)

    def add(self, config: AgentConfig) -> Agent | None:
        """Make an agent and register it with the master; None when a master of another
        process was still not found when the fleet stopped (registering waits for one)."""
        if isinstance(self.master, Master):
            agent_id = self.master.next_agent_id()
            agent = self._new(agent_id, config)
            self.master.add_agent(self._wires[agent_id].connect(agent))
            agent.registered()
            agent.libprocess_id = self.master.agent_path(agent.id).lstrip("/")
            return agent
        with self._lock:
            self._slots += 1
            process = f"slave({self._slots})"
        registered = self.master.register(process, agent_info(config))
        if registered is None:
            return None
        agent = self._new(registered, config, process)
        agent.registered()
        return agent

    def _new(self, agent_id: str, config: AgentConfig, process: str = "") -> Agent:
        """A new agent (its wire, launcher and key first), in its slot."""
        wire = AgentWire(agent_id)
        with self._lock:
            self._wires[agent_id] = wire
            self._launchers[agent_id] = Launcher(agent_id)
            self._configs[agent_id] = config
            secret = self._secret_of_new_agent()
            if secret is not None:
                self._secrets[agent_id] = secret
        agent = self._make(agent_id, recover=False, process=process)
        if process:
            agent.libprocess_id = process
        with self._lock:
            self._agents.append(agent)
            self._added.notify_all()
        return agent

    def _make(self, agent_id: str, *, recover: bool, process: str = "") -> Agent:
        settings = self.settings
        wire = self._wires[agent_id]
        calls = self._callbacks(agent_id, wire, process)
        runtime = AgentRuntime(
            launcher=self._launchers[agent_id], recover=recover,
            total_ping_timeout=self.master.total_ping_timeout,
            executor_reregistration_timeout=settings.executor_reregistration_timeout,
            on_pong=wire.to_master(calls.pong), on_reregister=wire.to_master(calls.reregister),
            isolation=settings.isolation, cgroups_enable_cfs=settings.cgroups_enable_cfs,
            switch_user=settings.switch_user,
            executor_secret=self._secrets.get(agent_id))
        return Agent(
            agent_id, self._configs[agent_id], self.work_dir,
            wire.to_master(calls.status_update),
            retry_interval=settings.retry_interval,
            retry_interval_max=settings.retry_interval_max,
            default_kill_grace=settings.default_kill_grace,
            master_endpoint=self.endpoint, sandbox_logging=settings.sandbox_logging,
            on_executor_exited=wire.to_master(calls.executor_exited),
            on_executor_message=wire.to_master(calls.executor_message),
            executor_registration_timeout=settings.executor_registration_timeout,
            executor_shutdown_grace=settings.executor_shutdown_grace,
            executor_heartbeat_interval=settings.executor_heartbeat_interval,
            runtime=runtime)

    def _callbacks(self, agent_id: str, wire: AgentWire, process: str) -> MasterCallbacks:
        """The agent's messages to the master: calls of this process' master (the agent it
        re-registers as reached through its wire), or messages to another's."""
        master = self.master
        if isinstance(master, MasterClient):
            return master.callbacks(agent_id, process,
                                    lambda fid, tid: self._latest_state(agent_id, fid, tid))
        return MasterCallbacks(
            status_update=master.receive_status_update,
            executor_exited=master.exited_executor, executor_message=master.executor_message,
            pong=master.pong,
            reregister=lambda agent, report: master.reregister_agent(wire.connect(agent),
                                                                     report))

    def _latest_state(self, agent_id: str, framework_id: str, task_id: str) -> str | None:
        try:
            return self.find(agent_id).latest_state(framework_id, task_id)
        except KeyError:
            return None

    def in_slot(self, slot: int, wait: float = 0.0) -> Agent | None:
        """The agent of ``/slave(slot)``; while it is being registered, waited for up to
        ``wait`` seconds (the master may send it a message before its host has made it)."""
        with self._added:
            self._added.wait_for(lambda: len(self._agents) >= slot or slot > self._slots,
                                 wait)
            return self._agents[slot - 1] if 1 <= slot <= len(self._agents) else None

    def wire(self, agent_id: str) -> AgentWire | None:
        """The agent's network, if it is one of the fleet's."""
        with self._lock:
            return self._wires.get(agent_id)

    def _secret_of_new_agent(self) -> bytes | None:
        """A new agent's executor token key: the cluster's, its own, or None (no executor
        authentication)."""
        if not self.settings.authenticate_executors:
            return None
        return self.settings.jwt_secret_key or executor_auth.new_secret()

    def find(self, agent_id: str) -> Agent:
        """The running agent of that id.

        Raises:
            KeyError: naming the agents there are.
        """
        with self._lock:
            for agent in self._agents:
                if agent.id == agent_id:
                    return agent
            known = ", ".join(a.id for a in self._agents) or "none"
        raise KeyError(f"no agent {agent_id} (agents: {known})")

    # -- faults ----------------------------------------------------------------------------

    def restart(self, agent_id: str, down_for: float = 0.0,
                on_done: Callable[[Agent], None] | None = None) -> threading.Thread:
        """Restart the agent: it dies now; ``down_for`` seconds later a new one recovers
        (on a thread, returned; ``on_done`` gets the new agent).

        Raises:
            KeyError: for an unknown agent.
        """
        old = self.find(agent_id)
        old.crash()
        if isinstance(self.master, Master):  # its connection broke (``Master::exited``)
            self.master.agent_disconnected(agent_id)
        # A master of another process, with no connection to break, learns of the restart
        # from the agent's re-registration.
        thread = threading.Thread(target=self._come_back, args=(old, down_for, on_done),
                                  name=f"restart-{agent_id}", daemon=True)
        with self._lock:
            self._restarts.append(thread)
        thread.start()
        return thread

    def _come_back(self, old: Agent, down_for: float,
                   on_done: Callable[[Agent], None] | None) -> None:
        if down_for > 0:
            threading.Event().wait(down_for)
        new = self._make(old.id, recover=True, process=old.libprocess_id)
        new.libprocess_id = old.libprocess_id
        with self._lock:
            self._agents[self._agents.index(old)] = new
            self._added.notify_all()
        for observer in old.executor_observers:
            new.add_executor_event_observer(observer)
        new.recover()
        logger.info("Agent %s restarted", old.id)
        if on_done is not None:
            on_done(new)

    def partition(self, agent_id: str, seconds: float | None = None) -> None:
        """Cut the network between the master and the agent (``seconds``: then it heals).

        Raises:
            KeyError: for an unknown agent.
        """
        self.find(agent_id)
        self._wires[agent_id].cut(seconds)

    def heal(self, agent_id: str) -> None:
        """Join the network again.

        Raises:
            KeyError: for an unknown agent.
        """
        self.find(agent_id)
        self._wires[agent_id].heal()

    def stop(self) -> None:
        """Stop every agent (killing its tasks) after pending restarts are done."""
        with self._lock:
            restarts = list(self._restarts)
        for thread in restarts:
            thread.join(30)
        agents = self.agents
        stoppers = [threading.Thread(target=agent.stop, name=f"stop-{agent.id}", daemon=True)
                    for agent in agents]
        for thread in stoppers:
            thread.start()
        for thread in stoppers:
            thread.join()
        with self._lock:
            launchers = list(self._launchers.values())
        for launcher in launchers:
            for container in launcher.containers():
                launcher.destroy(container.container_id)
        cgroups.remove_family()

    def admin_agents(self) -> list[dict[str, Any]]:
        """The admin endpoint's list: each agent and whether its network is cut."""
        links = self.state()
        return [{"id": agent.id, "hostname": agent.config.hostname,
                 "partitioned": links.get(agent.id, {}).get("partitioned", False)}
                for agent in self.agents]

    def admin_act(self, action: str, agent_id: str, seconds: float | None) -> None:
        """The admin endpoint's actions (:mod:`localmesos.server.admin_routes`).

        Raises:
            KeyError: an unknown agent. ValueError: an unknown action.
        """
        if action == "restart":
            self.restart(agent_id, seconds or 0.0)
        elif action == "partition":
            self.partition(agent_id, seconds)
        elif action == "heal":
            self.heal(agent_id)
        else:
            raise ValueError(f"unknown action {action!r}: expected restart, partition or heal")

    def state(self) -> dict[str, Any]:
        """Each agent's link: cut or not."""
        with self._lock:
            return {agent_id: {"partitioned": wire.is_cut}
                    for agent_id, wire in self._wires.items()}
