"""An embedded master that contends for leadership through ZooKeeper (``da-cluster --zk``).

The process serves as soon as it starts, as a Mesos master with ``--zk`` does: while another
master leads, its APIs and master endpoints redirect there (503 while none leads;
:mod:`localmesos.server.routes`). Elected, it recovers the registry its predecessors wrote
(:mod:`localmesos.master.registrar`) before it serves as the leader, then writes it on every
change; frameworks and agents find it through ZooKeeper and subscribe / re-register with it.

It runs no agents of its own: agents must outlive a master, so they run in another process
(``da-cluster --masters N --zk URL`` runs them beside the masters it starts). A master whose
candidacy ends exits (``on_lost``), as Mesos' does.
"""

from __future__ import annotations

from collections.abc import Callable
import logging
import threading

from disauto.common.zk_masters import Contender
from disauto.common.zk_masters import ZkUrl
from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.master import registrar
from disauto.localmesos.master.contender import MasterContender
from disauto.localmesos.master.registrar import Registrar


logger = logging.getLogger("disauto.localmesos.master")


class ElectedMaster:
    """A master of a cluster (no agents) in a ZooKeeper election. Thread-safe.

    Args:
        cluster: the cluster to serve (started here; its config should have no agents).
        url: the ensemble and group.
        on_lost: called once with the reason when its candidacy ends (the caller exits).
        session_timeout: ZooKeeper's session timeout.
    """

    def __init__(self, cluster: LocalCluster, url: ZkUrl, on_lost: Callable[[str], None],
                 session_timeout: float | None = None) -> None:
        self.cluster = cluster
        self.url = url
        self._on_lost = on_lost
        self._session_timeout = session_timeout
        self._contender: MasterContender | None = None
        self._registrar: Registrar | None = None
        self._lock = threading.Lock()
        self._lost = False
        self.leading = threading.Event()

    def start(self) -> None:
        """Serve (not leading yet) and join the election.

        Raises:
            OSError: the port cannot be bound. ZooKeeperError: ZooKeeper does not answer.
        """
        master = self.cluster.master if self._cluster_started() else None
        if master is None:
            self.cluster.start()
            master = self.cluster.master
        master.elected = False
        kwargs = {} if self._session_timeout is None else {
            "session_timeout": self._session_timeout}
        self._contender = MasterContender(
            self.url, master.master_info(), on_elected=self._elected,
            on_leader=self._leader_changed, on_lost=self._lose, **kwargs)
        self._contender.start()

    def _cluster_started(self) -> bool:
        try:
            self.cluster.master  # noqa: B018 - raises while not started
        except RuntimeError:
            return False
        return True

    def stop(self) -> None:
        """Leave the election and stop serving."""
        with self._lock:
            self._lost = True
        if self._registrar is not None:
            self._registrar.stop()
        if self._contender is not None:
            self._contender.stop()
        self.cluster.stop()

    def _elected(self) -> None:
        master = self.cluster.master
        with master.lock:  # no redirect to the leader it replaces from now on
            master.recovering = True
            master.leader_address = None
        threading.Thread(target=self._recover, name="localmesos-recover", daemon=True).start()

    def _recover(self) -> None:
        """Recover the registry, then lead (``Master::recover``, ``_recover``)."""
        contender = self._contender
        if contender is None or contender.client is None:
            return
        master = self.cluster.master
        keeper = Registrar(master, contender.client, self.url.path, self._lose)
        try:
            recovered = keeper.recover()
        except Exception as exc:  # noqa: BLE001 - a master that cannot recover must not lead
            self._lose(f"cannot recover the registry: {exc}")
            return
        registrar.restore(master, recovered)
        self._registrar = keeper
        master.commit_registry = keeper.commit
        keeper.start()
        with master.lock:
            master.elected = True
            master.recovering = False
            master.leader_address = f"{master.hostname}:{master.port}"
        logger.info("Recovered the registry (%d agents admitted); leading at %s",
                    len(master.recovered_agents), master.leader_address)
        self.leading.set()

    def _leader_changed(self, leader: Contender | None) -> None:
        master = self.cluster.master
        with master.lock:
            if master.recovering or master.elected:
                return  # a read of the group from before this master's election
            master.leader_address = None if leader is None else leader.address
        logger.info("Leading master: %s", "none" if leader is None else leader.address)

    def _lose(self, reason: str) -> None:
        with self._lock:
            if self._lost:
                return
            self._lost = True
        self._on_lost(reason)
