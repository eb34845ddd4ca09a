"""``/monitor/statistics`` of the embedded agents: Mesos' shape, real figures, bad requests."""

from __future__ import annotations

import http.client
import json
import os
from pathlib import Path
import sys
from typing import Any

import pytest

from disauto.localmesos.containerizer.monitor import ExecutorEntry
from disauto.localmesos.containerizer.monitor import ResourceMonitor
from disauto.localmesos.containerizer.monitor import container_cgroups
from disauto.localmesos.containerizer.monitor import read_processes
from disauto.localmesos.containerizer.monitor import session_statistics
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


_MB = 1024 * 1024

# ResourceStatistics (mesos.proto): the fields and their JSON types; ``timestamp`` is required.
_DOUBLES = {"timestamp", "cpus_user_time_secs", "cpus_system_time_secs", "cpus_limit",
            "cpus_throttled_time_secs"}
_INTEGERS = {"processes", "threads", "cpus_nr_periods", "cpus_nr_throttled", "mem_total_bytes",
             "mem_total_memsw_bytes", "mem_limit_bytes", "mem_soft_limit_bytes",
             "mem_file_bytes", "mem_anon_bytes", "mem_cache_bytes", "mem_rss_bytes",
             "mem_mapped_file_bytes", "mem_swap_bytes", "mem_unevictable_bytes"}
_USAGE_KEYS = {"executor_id", "executor_name", "framework_id", "source", "statistics"}


def check_statistics(answer: Any) -> list[str]:
    """Problems of a ``/monitor/statistics`` answer against Mesos' shape (empty: fine)."""
    if not isinstance(answer, list):
        return [f"not a JSON array: {answer!r}"[:200]]
    problems = []
    for entry in answer:
        if not isinstance(entry, dict) or set(entry) != _USAGE_KEYS:
            problems.append(f"entry keys {sorted(entry) if isinstance(entry, dict) else entry}")
            continue
        for key in _USAGE_KEYS - {"statistics"}:
            if not isinstance(entry[key], str):
                problems.append(f"{key} is not a string: {entry[key]!r}")
        stats = entry["statistics"]
        if not isinstance(stats, dict) or "timestamp" not in stats:
            problems.append(f"statistics without timestamp: {stats!r}")
            continue
        for key, value in stats.items():
            if key in _DOUBLES:
                ok = isinstance(value, int | float) and not isinstance(value, bool)
            elif key in _INTEGERS:
                ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            else:
                ok = False
            if not ok:
                problems.append(f"statistics.{key} = {value!r} is not ResourceStatistics'")
    return problems


def request(address: str, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(*address.split(":"), timeout=10)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


# A known load: 200 MB touched, then about 1 s of CPU, then it waits to be measured.
LOAD = ("import time\n"
        "block = bytearray(200 * 1024 * 1024)\n"
        "for i in range(0, len(block), 4096): block[i] = 1\n"
        "end = time.process_time() + 1.0\n"
        "while time.process_time() < end: pass\n"
        "open('done', 'w').close()\n"
        "time.sleep(60)\n")


def test_session_statistics_counts_this_process() -> None:
    """Against this very process (not a session leader under pytest: its own session)."""
    figures = session_statistics(read_processes(), os.getsid(0))
    assert figures["processes"] >= 1 and figures["threads"] >= 1
    assert figures["mem_rss_bytes"] > 10 * _MB
    assert figures["cpus_user_time_secs"] > 0


_CONTAINER = "0f3c9a7e" * 8


def _proc_with(tmp_path: Path, pid: int, cgroup_lines: str) -> Path:
    """A /proc holding one process and its ``cgroup`` file (cgroup v1 lines)."""
    (tmp_path / "proc" / str(pid)).mkdir(parents=True)
    (tmp_path / "proc" / str(pid) / "cgroup").write_text(cgroup_lines)
    return tmp_path / "proc"


def _cgroup_root(tmp_path: Path, path: str, rss: int) -> Path:
    """A cgroup v1 root with one memory and cpuacct group at ``path``, as the kernel shows
    them (``memory.stat``, ``memory.usage_in_bytes``, ``cpuacct.stat`` in ticks)."""
    root = tmp_path / "cgroup"
    memory = root / "memory" / path.lstrip("/")
    memory.mkdir(parents=True)
    (memory / "memory.stat").write_text(f"cache 4096\nrss {rss}\ntotal_cache 4096\n"
                                        f"total_rss {rss}\ntotal_mapped_file 0\n")
    (memory / "memory.usage_in_bytes").write_text(f"{rss + 4096}\n")
    (memory / "cgroup.procs").write_text("1\n2\n")
    (memory / "tasks").write_text("1\n2\n3\n")
    cpuacct = root / "cpuacct" / path.lstrip("/")
    cpuacct.mkdir(parents=True)
    (cpuacct / "cpuacct.stat").write_text("user 150\nsystem 50\n")
    return root


def _container_entry(pid: int, cgroups: dict[str, str]) -> ExecutorEntry:
    return ExecutorEntry(framework_id="fw", executor_id="t", executor_name="Command Executor",
                         source="t", pid=pid, container=True, cpus_limit=1.0,
                         mem_limit_bytes=512 * _MB, cgroups=cgroups)


def test_a_container_is_measured_from_the_cgroups_read_when_it_started(tmp_path: Path) -> None:
    """Its init's pid is not the agent's child: once the container ends, the kernel may give
    that pid to any process (it did under a loaded ``make test``, and the trial was recorded
    with the sandbox's 1.3 GB as its peak). The figures come from the container's own cgroups,
    read while its init was surely its own, whatever the pid is now."""
    docker_lines = (f"4:memory:/docker/{_CONTAINER}\n2:cpuacct:/docker/{_CONTAINER}\n"
                    "9:name=systemd:/\n")
    cgroups = container_cgroups(4242, _CONTAINER, _proc_with(tmp_path / "a", 4242, docker_lines))
    assert cgroups == {"memory": f"/docker/{_CONTAINER}", "cpuacct": f"/docker/{_CONTAINER}"}
    # The same pid, now some other process of the machine's: nothing of it is the container's.
    reused = _proc_with(tmp_path / "b", 4242, "4:memory:/process_api/abc\n2:cpuacct:/\n")
    assert container_cgroups(4242, _CONTAINER, reused) == {}
    assert container_cgroups(4243, _CONTAINER, reused) == {}  # gone: nothing
    root = _cgroup_root(tmp_path, f"/docker/{_CONTAINER}", rss=200 * _MB)
    monitor = ResourceMonitor(proc=reused, cgroup_root=root)
    (entry,) = monitor.statistics([_container_entry(4242, cgroups)])
    stats = entry["statistics"]
    assert stats["mem_rss_bytes"] == 200 * _MB and stats["mem_total_bytes"] == 200 * _MB + 4096
    assert stats["cpus_user_time_secs"] == pytest.approx(150 / _ticks())
    assert stats["cpus_system_time_secs"] == pytest.approx(50 / _ticks())
    assert stats["processes"] == 2 and stats["threads"] == 3
    assert check_statistics([entry]) == []


def test_a_container_whose_cgroups_are_gone_or_unknown_is_left_out(tmp_path: Path) -> None:
    """An ended container's cgroups are removed: it is not measured at all (Mesos lists only
    executors it can measure), and one whose cgroups could not be read at its start never is."""
    root = _cgroup_root(tmp_path, "/docker/other", rss=200 * _MB)
    monitor = ResourceMonitor(proc=tmp_path / "noproc", cgroup_root=root)
    gone = {"memory": f"/docker/{_CONTAINER}", "cpuacct": f"/docker/{_CONTAINER}"}
    assert monitor.statistics([_container_entry(4242, gone), _container_entry(4242, {})]) == []


def _ticks() -> float:
    return float(os.sysconf("SC_CLK_TCK"))


@pytest.mark.integration
def test_statistics_of_a_command_task_measure_its_process(tmp_path: Path) -> None:
    script = tmp_path / "load.py"
    script.write_text(LOAD)
    with running_cluster() as cluster:
        fw = RawFramework(cluster.address, auto_acknowledge=True)
        try:
            framework_id = fw.subscribe()
            offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            task = command_task(offer, "load", f"{sys.executable} {script}", cpus=1.0,
                                mem=512.0)
            assert fw.launch(offer, [task]) == 202
            sandbox = wait_until(lambda: cluster.agents[0].task_sandbox(framework_id, "load"))
            wait_until(lambda: (Path(sandbox) / "done").exists(), timeout=60)
            answer = get_json(cluster, "/slave(1)/monitor/statistics")
            assert check_statistics(answer) == []
            (entry,) = answer
            assert entry["executor_id"] == "load" and entry["framework_id"] == framework_id
            assert entry["source"] == "load"
            stats = entry["statistics"]
            assert 180 * _MB <= stats["mem_rss_bytes"] <= 300 * _MB
            cpu = stats["cpus_user_time_secs"] + stats["cpus_system_time_secs"]
            assert 0.9 <= cpu <= 2.5  # the busy second plus the interpreter's start
            assert stats["cpus_limit"] == 1.0 and stats["mem_limit_bytes"] == 512 * _MB
            assert stats["processes"] == 2  # the shell and python
            assert get_json(cluster, "/slave(1)/monitor/statistics.json")[0]["executor_id"] \
                == "load"
            fw.call("KILL", kill={"task_id": {"value": "load"}, "agent_id": offer["agent_id"]})
            fw.wait_event(lambda e: e.get("update", {}).get("status", {}).get("state")
                          == "TASK_KILLED", timeout=30)  # fmt: skip
            assert get_json(cluster, "/slave(1)/monitor/statistics") == []
        finally:
            fw.close()


@pytest.mark.integration
def test_statistics_bad_requests_are_answered_as_mesos_does() -> None:
    with running_cluster() as cluster:
        status, headers, body = request(cluster.address, "POST", "/slave(1)/monitor/statistics")
        assert status == 405 and headers["Allow"] == "GET"
        assert body == b"Expecting one of { 'GET' }, but received 'POST'"
        status, _, _ = request(cluster.address, "DELETE", "/slave(1)/monitor/statistics.json")
        assert status == 405
        assert request(cluster.address, "GET", "/slave(2)/monitor/statistics")[0] == 404
        assert request(cluster.address, "GET", "/slave(1)/monitor/statistic")[0] == 404
        status, _, body = request(cluster.address, "GET",
                                  "/slave(1)/monitor/statistics?jsonp=cb")
        assert status == 200 and body.startswith(b"cb(") and json.loads(body[3:-2]) == []
