"""The two clusters the conformance scenarios run against, behind one small interface.

- :class:`Embedded`: DisAuto's own Mesos-compatible cluster, a ``da-cluster`` process.
- :class:`RealMesos`: Apache Mesos' ``mesos-master`` and ``mesos-agent``, built from its sources
  by ``tools/mesos/build.sh`` into ``$MESOS_HOME`` (docs/real-mesos.md): an in-memory registry,
  posix isolation and launcher (no cgroups needed), agents that checkpoint and recover.

Both take the same agents (:class:`AgentSpec`: Mesos' ``--resources`` syntax, static
reservations included, and ``--attributes``) and answer the same calls: the master's address
and state, the operator API, an agent restarted (its process killed and started again on the
same work dir: the tasks of a checkpointing framework live on), the processes' own logs.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
import json
import os
from pathlib import Path
import random
import signal
import socket
import subprocess
import sys
import time
from typing import Any
from urllib.error import URLError
from urllib.request import urlopen

from disauto.localmesos.cluster_process import ClusterProcess
from tests.e2e.conftest import operator_call
from tests.e2e.test_production_cluster import until


ROOT = Path(__file__).resolve().parents[2]
BUILD_HINT = ("real Mesos: not built here (MESOS_HOME unset); build it with "
              "'tools/mesos/build.sh SRC PREFIX' (docs/real-mesos.md), then "
              "'MESOS_HOME=PREFIX make test-mesos'")


@dataclass(frozen=True)
class AgentSpec:
    """One agent: its resources (Mesos' ``--resources``: ``cpus(ml):1`` reserves for a role),
    attributes (``rack:r1;zone:eu``), and whether it runs Docker containers too."""

    resources: str = "cpus:2;mem:2048;disk:4096"
    attributes: str = ""
    docker: bool = False


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def lasting_port(low: int = 21000, high: int = 30000) -> int:
    """A free port below the kernel's ephemeral range (32768 and up here), for an agent that is
    restarted on it: a port the kernel hands out could be another process's outgoing
    connection by the time the agent binds it again (a Mesos agent must keep its port to
    recover: it is part of its SlaveInfo)."""
    for port in random.sample(range(low, high), 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {low}-{high}")


def free_ports(count: int) -> str:
    """A range of ``count`` free-looking ports, as Mesos writes it (``[low-high]``)."""
    from disauto.submit.local import free_port_range

    low, high = free_port_range(count, low=42000, high=60000)
    return f"[{low}-{high}]"


def get_json(url: str, timeout: float = 10.0) -> Any:
    with urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback
        return json.loads(response.read())


class Cluster(abc.ABC):
    """A running cluster of one master and its agents."""

    kind: str
    address: str
    """``host:port`` of the master (what ``da-submit --master`` takes)."""
    env: dict[str, str]
    """The environment ``da-submit`` and ``da-job`` run in (this checkout importable)."""

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def state(self) -> dict[str, Any]:
        return get_json(f"{self.url}/master/state")  # type: ignore[no-any-return]

    def agents(self) -> list[dict[str, Any]]:
        """The registered agents, in the order of their specs (by port)."""
        return sorted(self.state().get("slaves", []), key=lambda a: int(a.get("port", 0)))

    def operator(self, call: dict[str, Any]) -> dict[str, Any]:
        """One call of the master's operator API (``/api/v1``); its JSON answer ({} if empty)."""
        return operator_call(self.url, call)

    def tasks(self, framework_id: str = "") -> list[dict[str, Any]]:
        """Every live task the master knows (of ``framework_id`` when given)."""
        return [t for f in self.state().get("frameworks", [])
                if not framework_id or f["id"] == framework_id for t in f["tasks"]]

    def wait_agents(self, count: int, within: float = 60.0) -> None:
        until(lambda: len([a for a in self.agents() if a.get("active")]) == count, within,
              f"{count} agents never registered with the {self.kind} master")

    @abc.abstractmethod
    def restart_agent(self, index: int, down: float = 1.0) -> None:
        """Kill agent ``index``'s process (``kill -9``) and start it again after ``down``
        seconds on the same work dir, as an upgrade or a crash would."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop every process of the cluster (their tasks with them)."""

    @abc.abstractmethod
    def logs(self) -> str:
        """The cluster's own logs (for a failing test's message)."""


class Embedded(Cluster):
    """A ``da-cluster`` process with the agents given."""

    kind = "embedded"

    def __init__(self, work: Path, agents: list[AgentSpec]) -> None:
        self.env = {**os.environ,
                    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        flags = ["--agents", str(len(agents)), "--ports", free_ports(200 * len(agents)),
                 "--gpus", "0", "--allocation-interval", "200ms",
                 "--isolation", "posix/cpu,posix/mem"]
        for spec in agents:
            flags += ["--agent-resources", spec.resources]
            if spec.attributes:
                flags += ["--agent-attributes", spec.attributes]
        self._process = ClusterProcess(work, tuple(flags), env=self.env)
        self.address = self._process.start()
        self.specs = agents
        self.wait_agents(len(agents))

    def restart_agent(self, index: int, down: float = 1.0) -> None:
        agent = self.agents()[index]["id"]
        done = subprocess.run(
            [sys.executable, "-m", "disauto.localmesos.cli", "agent", "restart", agent,
             "--master", self.address, "--for", f"{down}s"],
            env=self.env, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr

    def stop(self) -> None:
        self._process.kill()

    def logs(self) -> str:
        return ""


class RealMesos(Cluster):
    """``mesos-master`` and one ``mesos-agent`` per spec from ``prefix`` (``$MESOS_HOME``)."""

    kind = "real"

    def __init__(self, prefix: Path, work: Path, agents: list[AgentSpec]) -> None:
        self.prefix = prefix
        self.work = work
        self.env = {**os.environ,
                    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.specs = agents
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        self._master = self._spawn("master", [
            str(prefix / "sbin" / "mesos-master"), "--ip=127.0.0.1", f"--port={port}",
            "--hostname=127.0.0.1", f"--work_dir={work / 'master'}", "--registry=in_memory",
            "--allocation_interval=200ms"])
        until(self._master_serves, 60, lambda: f"mesos-master did not serve:\n{self.logs()}")
        self._agent_ports = [lasting_port() for _ in agents]
        # Each agent keeps its resources across restarts: a Mesos agent whose resources changed
        # refuses to recover its checkpointed state ("Incompatible agent info detected").
        self._task_ports = [free_ports(200) for _ in agents]
        self._agents: list[subprocess.Popen[bytes] | None] = [None] * len(agents)
        for index in range(len(agents)):
            self._start_agent(index)
        self.wait_agents(len(agents))

    def _master_serves(self) -> bool:
        try:
            get_json(f"{self.url}/master/state", timeout=2)
        except (OSError, URLError, ValueError):
            if self._master.poll() is not None:
                raise AssertionError(f"mesos-master exited:\n{self.logs()}") from None
            return False
        return True

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.work / f"{name}.log").open("ab")
        (self.work / name).mkdir(parents=True, exist_ok=True)
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                start_new_session=True)

    def _start_agent(self, index: int) -> None:
        spec = self.specs[index]
        port = self._agent_ports[index]
        ports = self._task_ports[index]
        argv = [
            str(self.prefix / "sbin" / "mesos-agent"), f"--master={self.address}",
            "--ip=127.0.0.1", f"--port={port}", "--hostname=127.0.0.1",
            f"--work_dir={self.work / f'agent-{index}'}", "--launcher=posix",
            "--isolation=posix/cpu,posix/mem", "--no-systemd_enable_support",
            f"--launcher_dir={self.prefix / 'libexec' / 'mesos'}",
            "--containerizers=" + ("mesos,docker" if spec.docker else "mesos"),
            f"--resources={spec.resources};ports:{ports}",
            "--executor_registration_timeout=2mins"]
        if spec.attributes:
            argv.append(f"--attributes={spec.attributes}")
        self._agents[index] = self._spawn(f"agent-{index}", argv)

    def restart_agent(self, index: int, down: float = 1.0) -> None:
        process = self._agents[index]
        assert process is not None
        os.killpg(process.pid, signal.SIGKILL)  # its executors are in sessions of their own
        process.wait(10)
        time.sleep(down)
        self._start_agent(index)

    def wait_agents(self, count: int, within: float = 60.0) -> None:
        try:
            super().wait_agents(count, within)
        except AssertionError as err:  # say why: an agent that exited, or what it logged
            exited = [i for i, p in enumerate(self._agents) if p is not None
                      and p.poll() is not None]
            raise AssertionError(f"{err}; agents exited: {exited}\n{self.logs()}") from None

    def stop(self) -> None:
        for process in [*self._agents, self._master]:
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        # Executors and their tasks left by the agents (each in a session of its own).
        for pid in _children_of_work_dir(self.work):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def logs(self) -> str:
        parts = []
        for log in sorted(self.work.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()[-40:]
            parts.append(f"--- {log.name}\n" + "\n".join(lines))
        return "\n".join(parts)


def _children_of_work_dir(work: Path) -> list[int]:
    """Processes whose working directory is under ``work`` (the agents' sandboxes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(work)):
            found.append(int(entry.name))
    return found
