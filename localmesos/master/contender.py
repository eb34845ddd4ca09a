"""An embedded master's candidacy in a ZooKeeper election, and what it learns of the leader.

As a Mesos 1.11 master with ``--zk`` (apache/mesos ``src/master/contender/zookeeper.cpp``,
``src/zookeeper/contender.cpp``, ``src/zookeeper/group.cpp``, ``src/master/master.cpp``
``Master::contended``, ``lostCandidacy``, ``detected``):

* It joins the group under the URL's path with an ephemeral, sequential znode
  ``json.info_<sequence>`` holding its ``MasterInfo`` as JSON, so that Mesos' detectors,
  pymesos and DisAuto (:mod:`common.zk_masters`) all read it.
* The member with the lowest sequence leads. A master learns it leads when its own znode is the
  lowest (``Master::detected``: "Elected as the leading master!") and then recovers its
  registry; the others learn who leads, to redirect to it.
* A master whose candidacy ends (its znode gone, its ZooKeeper session expired, e.g. after it
  was frozen for longer than the session timeout) exits, as Mesos' does ("Lost candidacy" /
  "Lost leadership... committing suicide!"): a master that may have missed what the next leader
  did must not go on. ``on_lost`` is told why; the caller ends the process.

Callbacks run on kazoo's threads and must return quickly.
"""

from __future__ import annotations

from collections.abc import Callable
import json
import logging
import threading
from typing import Any

from disauto.common.zk_masters import MASTER_LABEL
from disauto.common.zk_masters import Contender
from disauto.common.zk_masters import ZkUrl
from disauto.common.zk_masters import read_contenders
from disauto.common.zk_masters import start_client


logger = logging.getLogger("disauto.localmesos.master")

ZK_SESSION_TIMEOUT = 10.0
"""Seconds ZooKeeper keeps a silent master's session (Mesos ``--zk_session_timeout``, 10 s)."""


class MasterContender:
    """One master's candidacy (see the module docstring). Thread-safe.

    Args:
        url: the ensemble and the group's path.
        info: this master's ``MasterInfo``.
        on_elected: called once, when this master comes to lead.
        on_leader: called with the leader (None while none) each time the group changes.
        on_lost: called once, with the reason, when the candidacy ends.
        session_timeout: the ZooKeeper session's timeout.
    """

    def __init__(self, url: ZkUrl, info: dict[str, Any], *,
                 on_elected: Callable[[], None],
                 on_leader: Callable[[Contender | None], None],
                 on_lost: Callable[[str], None],
                 session_timeout: float = ZK_SESSION_TIMEOUT) -> None:
        self.url = url
        self.info = info
        self._on_elected = on_elected
        self._on_leader = on_leader
        self._on_lost = on_lost
        self.session_timeout = session_timeout
        self._lock = threading.Lock()
        self._client: Any = None
        self.znode: str | None = None
        self.elected = False
        self._lost = False

    @property
    def client(self) -> Any:
        """The kazoo client (for the registry kept beside the group)."""
        return self._client

    def start(self, timeout: float = 10.0) -> None:
        """Connect, join the group and watch it.

        Raises:
            ZooKeeperError: ZooKeeper does not answer within ``timeout`` seconds.
        """
        from kazoo.recipe.watchers import ChildrenWatch

        client = start_client(self.url, self.session_timeout, timeout)
        self._client = client
        client.add_listener(self._session_changed)
        client.ensure_path(self.url.path)
        created = client.create(f"{self.url.path}/{MASTER_LABEL}",
                                json.dumps(self.info).encode(), ephemeral=True, sequence=True)
        self.znode = created.rsplit("/", 1)[1]
        logger.info("Joined the election under %s as %s", self.url, self.znode)
        ChildrenWatch(client, self.url.path, self._group_changed)

    def stop(self) -> None:
        """Leave the group (its znode goes with the session) and disconnect."""
        with self._lock:
            self._lost = True
            client, self._client = self._client, None
        if client is not None:
            client.stop()
            client.close()

    # -- kazoo's callbacks -------------------------------------------------------------------

    def _session_changed(self, state: str) -> None:
        from kazoo.protocol.states import KazooState

        if state == KazooState.LOST:
            self._lose("its ZooKeeper session expired")
        elif state == KazooState.SUSPENDED:
            logger.warning("Lost the connection to ZooKeeper; waiting for the session")

    def _group_changed(self, children: list[str]) -> bool:
        """The group's members changed: who leads now. False stops the watch."""
        if self._lost:
            return False
        masters = sorted(c for c in children if c.startswith(MASTER_LABEL))
        if self.znode not in masters:
            self._lose(f"its znode {self.znode} is gone")
            return False
        if masters[0] == self.znode:
            with self._lock:
                newly = not self.elected
                self.elected = True
            if newly:
                logger.info("Elected as the leading master!")
                self._on_elected()
            return True
        threading.Thread(target=self._read_leader, name="localmesos-detect",
                         daemon=True).start()
        return True

    def _read_leader(self) -> None:
        client = self._client
        if client is None:
            return
        try:
            found = read_contenders(client, self.url.path)
        except Exception as exc:  # noqa: BLE001 - a failed read leaves the old leader
            logger.warning("Cannot read the leading master: %s", exc)
            return
        leader = found[0] if found and found[0].znode != self.znode else None
        if self.elected and leader is not None:
            self._lose(f"{leader.znode} leads now")
            return
        self._on_leader(leader)

    def _lose(self, reason: str) -> None:
        with self._lock:
            if self._lost:
                return
            self._lost = True
        logger.error("Lost candidacy as a leading master: %s", reason)
        self._on_lost(reason)
