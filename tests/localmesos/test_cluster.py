"""LocalCluster: configuration, start, stop, and what stopping cleans up."""

from __future__ import annotations

from pathlib import Path
import socket
import threading
import time

import pytest

from disauto.common.processes import pid_exists
from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.cluster import split_ranges
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration  # starts processes or servers


SMALL = {"cpus": 1.0, "mem_mb": 256.0, "disk_mb": 100.0, "allocation_interval": 0.1}


def test_start_serves_agents_with_the_configured_resources() -> None:
    config = ClusterConfig(agents=3, cpus=12, mem_mb=20 * 1024, disk_mb=1000)
    with LocalCluster(config) as cluster:
        host, port = cluster.address.split(":")
        assert host == "127.0.0.1" and int(port) == cluster.port > 0
        assert cluster.url == f"http://{cluster.address}"
        slaves = get_json(cluster, "/master/state")["slaves"]
        assert len(slaves) == 3 and len(cluster.agents) == 3
        for slave in slaves:
            assert (slave["resources"]["cpus"], slave["resources"]["mem"]) == (12.0, 20480.0)
        # The shared ports range is split so no two agents offer the same port.
        ranges = sorted(slave["resources"]["ports"] for slave in slaves)
        assert ranges == ["[31000-31332]", "[31333-31666]", "[31667-32000]"]


def test_split_ranges() -> None:
    ranges = ((31000, 31009), (32000, 32009))
    parts = [split_ranges(ranges, 3, i) for i in range(3)]
    assert parts == [((31000, 31005),), ((31006, 31009), (32000, 32002)), ((32003, 32009),)]
    flat = [p for part in parts for b, e in part for p in range(b, e + 1)]
    assert sorted(flat) == list(range(31000, 31010)) + list(range(32000, 32010))
    assert split_ranges(((1, 2),), 5, 3) == ((1, 2),)  # too few ports: shared
    config = ClusterConfig(agents=2, split_ports=False, **SMALL)
    assert [a.ports for a in config.agent_list()] == [((31000, 32000),)] * 2


def test_heterogeneous_agents_and_add_agent() -> None:
    configs = (
        AgentConfig(cpus=1.0, mem_mb=128.0, disk_mb=10.0),
        AgentConfig(cpus=2.0, mem_mb=256.0, disk_mb=10.0, gpus=1),
    )
    with LocalCluster(ClusterConfig(agent_configs=configs, allocation_interval=30.0)) as cluster:
        assert [a.total.scalar("cpus") for a in cluster.agents] == [1.0, 2.0]
        raw = RawFramework(cluster.address, capabilities=["GPU_RESOURCES"])
        raw.subscribe()
        wait_until(lambda: len(raw.offers()) == 2)
        added = cluster.add_agent(AgentConfig(cpus=4.0, mem_mb=64.0, disk_mb=10.0))
        # Adding an agent allocates it at once (the batch interval here is 30 s).
        wait_until(lambda: len(raw.offers()) == 3, timeout=3)
        assert raw.offers()[2]["agent_id"]["value"] == added.id
        raw.close()


def test_port_in_use_is_an_os_error_and_nothing_is_left_running() -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    before = threading.active_count()
    cluster = LocalCluster(ClusterConfig(port=port, **SMALL))
    with pytest.raises(OSError):
        cluster.start()
    busy.close()
    assert threading.active_count() == before
    cluster.stop()  # idempotent after a failed start


def test_stop_kills_tasks_joins_threads_and_is_idempotent() -> None:
    before = threading.active_count()
    cluster = LocalCluster(ClusterConfig(default_kill_grace=0.5, **SMALL)).start()
    assert cluster.start() is cluster  # starting twice is harmless
    raw = RawFramework(cluster.address, auto_acknowledge=True)
    raw.subscribe()
    offer = raw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
    raw.launch(offer, [command_task(offer, "t", "sleep 60")])
    running = raw.wait_event(
        lambda e: e["type"] == "UPDATE" and e["update"]["status"]["state"] == "TASK_RUNNING"
    )
    pid = running["update"]["status"]["container_status"]["executor_pid"]
    work_dir = cluster.work_dir
    assert work_dir.is_dir()
    started = time.monotonic()
    cluster.stop()
    assert time.monotonic() - started < 10
    assert raw.ended.wait(5)  # the event stream was closed
    assert not pid_exists(pid)
    assert not work_dir.exists()  # a temporary work dir is removed
    cluster.stop()
    raw.close()
    wait_until(lambda: threading.active_count() <= before, timeout=5)
    with pytest.raises(RuntimeError, match="cannot be restarted"):
        cluster.start()


def test_a_relative_work_dir_is_made_absolute(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    """A Mesos agent's sandboxes are absolute paths: an executor runs in its sandbox and is
    told its path (``MESOS_SANDBOX``), which a relative one would no longer name (issue 40)."""
    monkeypatch.chdir(tmp_path)
    assert ClusterConfig(work_dir=Path("rel/work")).work_dir == tmp_path / "rel" / "work"


def test_given_work_dir_is_kept(tmp_path: Path) -> None:
    work_dir = tmp_path / "work"
    with LocalCluster(ClusterConfig(work_dir=work_dir, **SMALL)) as cluster:
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        raw.subscribe()
        offer = raw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        raw.launch(offer, [command_task(offer, "t", "echo kept")])
        raw.wait_event(
            lambda e: e["type"] == "UPDATE" and e["update"]["status"]["state"] == "TASK_FINISHED"
        )
        raw.close()
        agent_id = cluster.agents[0].id
    stdout = (
        work_dir / "slaves" / agent_id / "frameworks" / str(raw.framework_id) / "executors" / "t"
        / "runs" / "latest" / "stdout"
    )
    assert stdout.read_text() == "kept\n"


def test_properties_need_a_started_cluster() -> None:
    cluster = LocalCluster(agents=1, **SMALL)
    assert cluster.config.agents == 1
    for name in ("address", "master", "work_dir"):
        with pytest.raises(RuntimeError, match="not started"):
            getattr(cluster, name)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"agents": -1}, "invalid agents"),
        ({"allocation_interval": 0}, "invalid allocation_interval"),
        ({"heartbeat_interval": -1.0}, "invalid heartbeat_interval"),
        ({"port": 70000}, "invalid port"),
    ],
)
def test_invalid_configs(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ClusterConfig(**kwargs)  # type: ignore[arg-type]


def test_invalid_agent_resources_fail_before_starting() -> None:
    cluster = LocalCluster(ClusterConfig(cpus=-1.0))
    with pytest.raises(ValueError, match="cpus"):
        cluster.start()
