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
from typing import Any


MASTER_LABEL = "json.info_"
"""The prefix of a contending master's znode (Mesos ``MASTER_INFO_JSON_LABEL`` and ``_``)."""

SCHEMES = ("zk://", "zoo://")


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


@contextlib.contextmanager
def zk_client(url: ZkUrl, timeout: float = 5.0) -> Iterator[Any]:
    """A started kazoo client of ``url``'s ensemble, stopped on exit.

    Raises:
        ZooKeeperError: when no server of the ensemble answers within ``timeout`` seconds.
    """
    from kazoo.client import KazooClient
    from kazoo.handlers.threading import KazooTimeoutError

    client = KazooClient(hosts=url.hosts, timeout=timeout, auth_data=url.auth_data(),
                         connection_retry={"max_tries": 1, "delay": 0.2})
    try:
        client.start(timeout=timeout)
    except KazooTimeoutError:
        client.close()
        raise ZooKeeperError(
            f"no ZooKeeper server answers at {url.hosts} within {timeout:g}s") from None
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
