"""Clusters whose masters are elected through a real ZooKeeper, for the failover scenarios:
three real ``mesos-master`` processes (``--zk``, ``--quorum=2``, the replicated log) and a
``mesos-agent`` that finds the leader through ZooKeeper, or three embedded masters
(``da-cluster --masters 3 --zk``, each its own process, the agents in the parent's).

Both are driven the same way: who leads (read from ZooKeeper, as every detector reads it), kill
it with ``kill -9`` (it is started again, on its port and work dir, as a supervisor would, so
that a quorum stays), freeze it with ``SIGSTOP`` and thaw it.
"""

from __future__ import annotations

import abc
import os
from pathlib import Path
import signal
import subprocess
import sys
from typing import Any

from disauto.common.zk_masters import contenders
from tests.conformance.clusters import ROOT
from tests.conformance.clusters import AgentSpec
from tests.conformance.clusters import free_ports
from tests.conformance.clusters import get_json
from tests.conformance.clusters import lasting_port
from tests.e2e.test_production_cluster import until


class ElectedCluster(abc.ABC):
    """Masters elected through ZooKeeper at ``zk``, and their agents."""

    kind: str

    def __init__(self, work: Path, zk: str, masters: int) -> None:
        self.work = work
        self.zk = zk
        self.address = zk  # what a framework is given: the ZooKeeper URL
        self.env = {**os.environ,
                    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.ports = [lasting_port() for _ in range(masters)]
        self.masters: list[subprocess.Popen[bytes] | None] = [None] * masters
        self.frozen: int | None = None

    # -- who leads ---------------------------------------------------------------------------

    def leader(self) -> str | None:
        """``host:port`` of the leader, as ZooKeeper says; None while none leads."""
        try:
            found = contenders(self.zk, timeout=5)
        except ConnectionError:
            return None
        return found[0].address if found else None

    def leader_index(self, within: float = 60.0) -> int:
        """Which master leads (waiting for one that serves as the leader)."""
        def serving() -> int | None:
            address = self.leader()
            if address is None:
                return None
            index = self.ports.index(int(address.rsplit(":", 1)[1]))
            if index == self.frozen:
                return None
            try:
                get_json(f"http://{address}/master/state", timeout=2)
            except (OSError, ValueError):
                return None
            return index
        found = until(lambda: (index := serving()) is not None and [index], within,
                      lambda: f"no master leads under {self.zk}:\n{self.logs()}")
        return int(found[0])

    def state(self) -> dict[str, Any]:
        return dict(get_json(f"http://127.0.0.1:{self.ports[self.leader_index()]}"
                             "/master/state"))

    def wait_agents(self, count: int, within: float = 90.0) -> None:
        until(lambda: sum(1 for a in self.state()["slaves"] if a.get("active")) >= count,
              within, f"{count} agent(s) never registered with the leader:\n{self.logs()}")

    # -- faults ------------------------------------------------------------------------------

    def kill_leader(self) -> int:
        """``kill -9`` the leader, then start it again (it contends anew); its index."""
        index = self.leader_index()
        process = self.masters[index]
        assert process is not None
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        self._start_master(index)
        return index

    def freeze_leader(self) -> int:
        """``SIGSTOP`` the leader (its ZooKeeper session expires: another is elected)."""
        index = self.leader_index()
        process = self.masters[index]
        assert process is not None
        os.killpg(process.pid, signal.SIGSTOP)
        self.frozen = index
        return index

    def thaw(self) -> None:
        """``SIGCONT`` the frozen master: it finds its candidacy over and exits, as Mesos'
        does; it is started again."""
        index = self.frozen
        if index is None:
            return
        process = self.masters[index]
        assert process is not None
        os.killpg(process.pid, signal.SIGCONT)
        self.frozen = None
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        self._start_master(index)

    def _come_up(self, agent: AgentSpec) -> None:
        """Start the masters and the agents; stop what started if they do not come up."""
        try:
            self._start(agent)
        except BaseException:
            self.stop()  # nothing it started outlives a cluster that did not come up
            raise

    @abc.abstractmethod
    def _start(self, agent: AgentSpec) -> None: ...

    @abc.abstractmethod
    def _start_master(self, index: int) -> None: ...

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.work / f"{name}.log").open("ab")
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,  # noqa: S603
                                start_new_session=True)

    def stop(self) -> None:
        if self.frozen is not None:
            process = self.masters[self.frozen]
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGCONT)
        for process in self.masters:
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)

    def logs(self) -> str:
        try:
            parts = ["--- contenders under the ZooKeeper path (the lowest leads): " + ", ".join(
                f"{c.znode} {c.address}" for c in contenders(self.zk))]
        except (ValueError, ConnectionError) as error:
            parts = [f"--- contenders: ZooKeeper did not answer: {error}"]
        for log in sorted(self.work.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()[-30:]
            parts.append(f"--- {log.name}\n" + "\n".join(lines))
        return "\n".join(parts)


class RealElected(ElectedCluster):
    """Real masters (``--quorum=2``, the replicated log) and one real agent."""

    kind = "real"

    def __init__(self, prefix: Path, work: Path, zk: str, agent: AgentSpec,
                 masters: int = 3) -> None:
        super().__init__(work, zk, masters)
        self.prefix = prefix
        self.quorum = masters // 2 + 1
        self.agent: subprocess.Popen[bytes] | None = None
        self._come_up(agent)

    def _start(self, agent: AgentSpec) -> None:
        prefix, work, zk = self.prefix, self.work, self.zk
        for index in range(len(self.ports)):
            self._start_master(index)
        self.leader_index(120)
        self.agent = self._spawn("agent", [
            str(prefix / "sbin" / "mesos-agent"), f"--master={zk}", "--ip=127.0.0.1",
            f"--port={lasting_port()}", "--hostname=127.0.0.1",
            f"--work_dir={work / 'agent'}", "--launcher=posix",
            "--isolation=posix/cpu,posix/mem", "--no-systemd_enable_support",
            f"--launcher_dir={prefix / 'libexec' / 'mesos'}", "--containerizers=mesos",
            f"--resources={agent.resources};ports:{free_ports(200)}",
            "--executor_registration_timeout=2mins"])
        self.wait_agents(1)

    def _start_master(self, index: int) -> None:
        self.masters[index] = self._spawn(f"master-{index}", [
            str(self.prefix / "sbin" / "mesos-master"), "--ip=127.0.0.1",
            f"--port={self.ports[index]}", "--hostname=127.0.0.1",
            f"--work_dir={self.work / f'master-{index}'}", f"--zk={self.zk}",
            f"--quorum={self.quorum}", "--registry=replicated_log",
            "--allocation_interval=200ms"])

    def stop(self) -> None:
        if self.agent is not None and self.agent.poll() is None:
            os.killpg(self.agent.pid, signal.SIGKILL)
            self.agent.wait(10)
        super().stop()


class EmbeddedElected(ElectedCluster):
    """Three ``da-cluster --zk --master-only`` processes and a ``da-cluster --agents-only
    --zk`` (what ``da-cluster --masters 3 --zk`` runs, started one by one here so that each
    can be killed and started again as the real ones are)."""

    kind = "embedded"

    def __init__(self, work: Path, zk: str, agent: AgentSpec, masters: int = 3) -> None:
        super().__init__(work, zk, masters)
        self.agents: subprocess.Popen[bytes] | None = None
        self._come_up(agent)

    def _start(self, agent: AgentSpec) -> None:
        zk, work = self.zk, self.work
        for index in range(len(self.ports)):
            self._start_master(index)
        self.leader_index(60)
        self.agents = self._spawn("agents", [
            sys.executable, "-m", "disauto.localmesos.cli", "--agents-only", "--zk", zk,
            "--port", str(lasting_port()), "--resources", agent.resources,
            "--work-dir", str(work / "agents"), "--verbose"])
        self.wait_agents(1)

    def _start_master(self, index: int) -> None:
        self.masters[index] = self._spawn(f"master-{index}", [
            sys.executable, "-m", "disauto.localmesos.cli", "--zk", self.zk, "--master-only",
            "--port", str(self.ports[index]), "--allocation-interval", "200ms",
            "--work-dir", str(self.work / f"master-{index}"), "--verbose"])

    def stop(self) -> None:
        if self.agents is not None and self.agents.poll() is None:
            os.killpg(self.agents.pid, signal.SIGTERM)
            try:
                self.agents.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.agents.pid, signal.SIGKILL)
                self.agents.wait(10)
        super().stop()
