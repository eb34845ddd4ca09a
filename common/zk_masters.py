"""Masters elected through ZooKeeper, read as Mesos' own detectors read them.

A Mesos master contends for leadership by creating an ephemeral, sequential znode
``PATH/json.info_<10 digits>`` holding its ``MasterInfo`` as JSON (apache/mesos
``src/zookeeper/group.cpp`` ``join``: the label, ``_``, ``ZOO_SEQUENCE | ZOO_EPHEMERAL``;
``src/master/contender/zookeeper.cpp``). The member with the lowest sequence leads
(``src/zookeeper/detector.cpp``); a reader takes its data as the leader's ``MasterInfo``
(``src/master/detector/zookeeper.cpp``: label ``json.info``). Other children (the replicated log's
``log_replicas``) are not masters.

The URL is Mesos' ``zk://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...]/PATH`` (``src/zookeeper/url.cpp``
``URL::parse``; ``zoo://`` is not Mesos' but pymesos' alias and is taken too). The embedded
masters (:mod:`localmesos.master.contender`) join the same way, so pymesos, ``mesos-dns`` and
Mesos' own agents find them as they find real ones.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
from dataclasses import dataclass
import json
import logging
import threading
from typing import Any


MASTER_LABEL = "json.info_"
"""The prefix of a contending master's znode (Mesos ``MASTER_INFO_JSON_LABEL`` and ``_``)."""

SCHEMES = ("zk://", "zoo://")

ZK_LOG = logging.getLogger("disauto.zookeeper")
"""The logger DisAuto's ZooKeeper clients log through (kazoo's own logs every refused
connection as a warning): its records go where the process sends its logs (a job's log), and
never to the terminal of a command that configured none (``da-job``)."""
ZK_LOG.addHandler(logging.NullHandler())


class ZooKeeperError(ConnectionError):
    """ZooKeeper cannot be reached, or the URL is not one."""


@dataclass(frozen=True)
class ZkUrl:
    """A parsed ``zk://`` URL."""

    hosts: str
    """``HOST:PORT[,HOST:PORT...]`` (what kazoo takes)."""
    path: str
    """The znode the masters join under, e.g. ``/mesos``."""
    credentials: tuple[str, str] | None = None
    """(user, password) for ZooKeeper's ``digest`` scheme, when the URL has them."""

    def __str__(self) -> str:
        if self.credentials is None:
            return f"zk://{self.hosts}{self.path}"
        user, password = self.credentials
        return f"zk://{user}:{password}@{self.hosts}{self.path}"

    def auth_data(self) -> list[tuple[str, str]] | None:
        """kazoo's ``auth_data``: the ``digest`` scheme's ``user:password``, or None."""
        if self.credentials is None:
            return None
        user, password = self.credentials
        return [("digest", f"{user}:{password}")]


def is_zk(uri: str) -> bool:
    """Whether ``uri`` names masters through ZooKeeper."""
    return uri.startswith(SCHEMES)


def parse_zk(uri: str) -> ZkUrl:
    """Parse ``zk://[USER:PASSWORD@]HOST:PORT[,...]/PATH``.

    Raises:
        ValueError: naming what is wrong with it.
    """
    scheme = next((s for s in SCHEMES if uri.startswith(s)), None)
    if scheme is None:
        raise ValueError(f"{uri!r} is not a ZooKeeper URL (zk://HOST:PORT/PATH)")
    rest = uri[len(scheme):]
    credentials = None
    if "@" in rest.split("/", 1)[0]:
        auth, rest = rest.split("@", 1)
        user, colon, password = auth.partition(":")
        if not user or not colon:
            raise ValueError(f"{uri!r}: the credentials must be USER:PASSWORD@")
        credentials = (user, password)
    hosts, slash, path = rest.partition("/")
    if not slash or not path.strip("/"):
        raise ValueError(f"{uri!r} names no path: zk://HOST:PORT/PATH, e.g. /mesos")
    for host in hosts.split(","):
        name, colon, port = host.rpartition(":")
        if not colon or not name or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{uri!r}: {host!r} is not HOST:PORT")
    return ZkUrl(hosts=hosts, path="/" + path.strip("/"), credentials=credentials)


def start_client(url: ZkUrl, session_timeout: float = 10.0, timeout: float = 5.0) -> Any:
    """A started kazoo client of ``url``'s ensemble (its session ``session_timeout`` long),
    logging through :data:`ZK_LOG`; the caller stops it.

    Raises:
        ZooKeeperError: when no server of the ensemble answers within ``timeout`` seconds.
    """
    from kazoo.client import KazooClient
    from kazoo.handlers.threading import KazooTimeoutError

    client = KazooClient(hosts=url.hosts, timeout=session_timeout, auth_data=url.auth_data(),
                         logger=ZK_LOG,
                         connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 1.0})
    try:
        client.start(timeout=timeout)
    except KazooTimeoutError:
        client.close()
        raise ZooKeeperError(
            f"no ZooKeeper server answers at {url.hosts} within {timeout:g}s") from None
    return client


@contextlib.contextmanager
def zk_client(url: ZkUrl, timeout: float = 5.0) -> Iterator[Any]:
    """A started kazoo client of ``url``'s ensemble, stopped on exit.

    Raises:
        ZooKeeperError: when no server of the ensemble answers within ``timeout`` seconds.
    """
    client = start_client(url, timeout, timeout)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@dataclass(frozen=True)
class Contender:
    """A master in the election: its znode and what it says of itself."""

    znode: str
    """``json.info_0000000003``."""
    info: dict[str, Any]
    """Its ``MasterInfo`` (JSON)."""

    @property
    def address(self) -> str:
        """``host:port`` (``MasterInfo.address``, else its ``hostname`` and ``port``)."""
        return master_address(self.info)


def master_address(info: dict[str, Any]) -> str:
    """``host:port`` of a ``MasterInfo``."""
    address = info.get("address") or {}
    host = address.get("hostname") or address.get("ip") or info.get("hostname", "")
    port = address.get("port") or info.get("port", 0)
    return f"{host}:{port}"


def read_contenders(client: Any, path: str) -> list[Contender]:
    """The masters under ``path``, the leader first (lowest sequence); [] when none."""
    from kazoo.exceptions import NoNodeError

    try:
        children = client.get_children(path)
    except NoNodeError:
        return []
    found = []
    for child in sorted(c for c in children if c.startswith(MASTER_LABEL)):
        try:
            data, _ = client.get(f"{path}/{child}")
            info = json.loads(data.decode())
        except NoNodeError:
            continue  # it left between the two reads
        except ValueError:
            info = {}
        found.append(Contender(znode=child, info=info if isinstance(info, dict) else {}))
    return found


def contenders(uri: str, timeout: float = 5.0) -> list[Contender]:
    """The masters contending under a ``zk://`` URL, the leader first.

    Raises:
        ValueError: a bad URL. ZooKeeperError: ZooKeeper does not answer.
    """
    url = parse_zk(uri)
    with zk_client(url, timeout) as client:
        return read_contenders(client, url.path)


def leading_master(uri: str, timeout: float = 5.0) -> str | None:
    """``host:port`` of the master leading under ``uri``; None while none leads.

    Raises:
        ValueError: a bad URL. ZooKeeperError: ZooKeeper does not answer.
    """
    found = contenders(uri, timeout)
    return found[0].address if found else None


def resolve_master(uri: str, timeout: float = 5.0) -> str:
    """``host:port`` of the master to ask now: ``uri`` itself, or the leader under a
    ``zk://`` URL.

    Raises:
        ZooKeeperError: naming the URL when ZooKeeper does not answer or no master leads.
        ValueError: a bad URL.
    """
    if not is_zk(uri):
        return uri if ":" in uri else f"{uri}:5050"
    leader = leading_master(uri, timeout)
    if leader is None:
        raise ZooKeeperError(f"no Mesos master leads under {uri} (no {MASTER_LABEL} znode)")
    return leader


class LeaderWatch:
    """The leader under a ``zk://`` URL, kept current by a ZooKeeper watch (Mesos'
    ``ZooKeeperMasterDetector``): calling it returns ``host:port`` of the leader, None while
    none leads or ZooKeeper is out of reach. Thread-safe.

    The watch only marks the group changed; one thread of its own reads the leader (a
    watch's callback must not wait on ZooKeeper).

    Args:
        uri: ``zk://HOST:PORT[,...]/PATH``.
        timeout: ZooKeeper's session timeout.

    Raises:
        ValueError: a bad URL.
    """

    def __init__(self, uri: str, timeout: float = 10.0) -> None:
        self.url = parse_zk(uri)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._leader: str | None = None
        self._client: Any = None
        self._changed = threading.Event()
        self._stopped = threading.Event()
        self._reader = threading.Thread(target=self._read_changes, name="zk-leader-watch",
                                        daemon=True)

    def start(self, timeout: float = 10.0) -> LeaderWatch:
        """Connect, read the leader and watch the group.

        Raises:
            ZooKeeperError: no server of the ensemble answers within ``timeout`` seconds.
        """
        from kazoo.recipe.watchers import ChildrenWatch

        client = start_client(self.url, self.timeout, timeout)
        self._client = client
        client.ensure_path(self.url.path)
        self._read()
        self._reader.start()
        ChildrenWatch(client, self.url.path, self._group_changed)
        return self

    def _group_changed(self, children: list[str]) -> bool:
        self._changed.set()
        return not self._stopped.is_set()

    def _read_changes(self) -> None:
        while not self._stopped.is_set():
            if self._changed.wait(1.0):
                self._changed.clear()
                self._read()

    def _read(self) -> None:
        client = self._client
        if client is None:
            return
        try:
            found = read_contenders(client, self.url.path)
        except Exception:  # noqa: BLE001 - ZooKeeper out of reach: the next change reads again
            return
        with self._lock:
            self._leader = found[0].address if found else None

    def __call__(self) -> str | None:
        with self._lock:
            return self._leader

    def stop(self) -> None:
        self._stopped.set()
        client, self._client = self._client, None
        if client is not None:
            client.stop()
            client.close()
