"""Reading the masters of a ZooKeeper election (``common/zk_masters.py``): the URL, and the
leader among real znodes of a real ZooKeeper server, laid out as Mesos' masters lay them out."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from disauto.common.zk_masters import LeaderWatch
from disauto.common.zk_masters import ZkUrl
from disauto.common.zk_masters import ZooKeeperError
from disauto.common.zk_masters import contenders
from disauto.common.zk_masters import leading_master
from disauto.common.zk_masters import parse_zk
from disauto.common.zk_masters import resolve_master
from disauto.common.zk_masters import zk_client


@pytest.mark.parametrize(("uri", "expected"), [
    ("zk://127.0.0.1:2181/mesos", ZkUrl("127.0.0.1:2181", "/mesos")),
    ("zk://a:1,b:2,c:3/mesos/prod/", ZkUrl("a:1,b:2,c:3", "/mesos/prod")),
    ("zk://ops:s3cret@zk1:2181/mesos", ZkUrl("zk1:2181", "/mesos", ("ops", "s3cret"))),
    ("zoo://zk1:2181/mesos", ZkUrl("zk1:2181", "/mesos")),
])
def test_parses_mesos_zk_urls(uri: str, expected: ZkUrl) -> None:
    assert parse_zk(uri) == expected


@pytest.mark.parametrize(("uri", "says"), [
    ("127.0.0.1:5050", "is not a ZooKeeper URL"),
    ("zk://127.0.0.1:2181", "names no path"),
    ("zk://127.0.0.1:2181/", "names no path"),
    ("zk://zk1/mesos", "'zk1' is not HOST:PORT"),
    ("zk://zk1:99999/mesos", "is not HOST:PORT"),
    ("zk://ops@zk1:2181/mesos", "USER:PASSWORD@"),
])
def test_refuses_what_is_no_zk_url_in_one_line(uri: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_zk(uri)


def test_a_host_port_master_resolves_to_itself() -> None:
    assert resolve_master("10.0.0.1:5050") == "10.0.0.1:5050"
    assert resolve_master("mesos-master") == "mesos-master:5050"


def info(port: int) -> bytes:
    """A MasterInfo as a Mesos master writes it (JSON)."""
    return json.dumps({"id": f"m{port}", "pid": f"master@127.0.0.1:{port}", "port": port,
                       "hostname": "127.0.0.1", "version": "1.11.0",
                       "address": {"hostname": "127.0.0.1", "ip": "127.0.0.1",
                                   "port": port}}).encode()


@pytest.mark.integration
def test_the_lowest_sequence_leads_and_other_children_are_no_masters(zookeeper: Any) -> None:
    uri = zookeeper.url("/zk-masters-leader")
    url = parse_zk(uri)
    assert contenders(uri) == [] and leading_master(uri) is None
    with pytest.raises(ZooKeeperError, match="no Mesos master leads"):
        resolve_master(uri)
    with zk_client(url) as client:
        client.ensure_path(f"{url.path}/log_replicas")
        first = client.create(f"{url.path}/json.info_", info(5050), ephemeral=True,
                              sequence=True)
        client.create(f"{url.path}/json.info_", info(5051), ephemeral=True, sequence=True)
        found = contenders(uri)
        assert [c.address for c in found] == ["127.0.0.1:5050", "127.0.0.1:5051"]
        assert found[0].info["pid"] == "master@127.0.0.1:5050"
        assert resolve_master(uri) == "127.0.0.1:5050"
        client.delete(first)  # the leader's session ended: the next one leads
        assert leading_master(uri) == "127.0.0.1:5051"


@pytest.mark.integration
def test_a_leader_watch_follows_the_election(zookeeper: Any) -> None:
    uri = zookeeper.url("/zk-masters-watch")
    url = parse_zk(uri)
    watch = LeaderWatch(uri).start()
    try:
        assert watch() is None
        with zk_client(url) as client:
            first = client.create(f"{url.path}/json.info_", info(6050), ephemeral=True,
                                  sequence=True)
            client.create(f"{url.path}/json.info_", info(6051), ephemeral=True, sequence=True)
            wait_until(lambda: watch() == "127.0.0.1:6050")
            client.delete(first)
            wait_until(lambda: watch() == "127.0.0.1:6051")
        wait_until(lambda: watch() is None)  # the client's session ended: its znodes went
    finally:
        watch.stop()


@pytest.mark.integration
def test_no_zookeeper_is_one_line() -> None:
    with pytest.raises(ZooKeeperError, match=r"no ZooKeeper server answers at 127.0.0.1:1 "):
        contenders("zk://127.0.0.1:1/mesos", timeout=1)


def wait_until(predicate: Any, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {within}s")
