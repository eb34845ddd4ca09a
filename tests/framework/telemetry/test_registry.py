"""The registry: entries added, changed, deleted and kept in a real job store; command
collectors and processors run as real processes; the scheduler runs them at their interval."""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Sequence
import json
from pathlib import Path
import shlex
import sys
import threading
import time

import pytest

from disauto.common import telemetry
from disauto.common.telemetry import Sample
from disauto.framework import _meta as meta
from disauto.framework._errors import AlreadyExistsError
from disauto.framework._errors import FailedPreconditionError
from disauto.framework._errors import InvalidArgumentError
from disauto.framework._errors import NotFoundError
from disauto.framework._store import JobStore
from disauto.framework._telemetry.processors import builtin_processors
from disauto.framework._telemetry.registry import BuiltinCollector
from disauto.framework._telemetry.registry import TelemetryRegistry
from disauto.framework._telemetry.registry import recorded_registry
from disauto.framework._telemetry.scheduler import TelemetryScheduler


PY = sys.executable


def python(code: str) -> str:
    return f"{shlex.quote(PY)} -c {shlex.quote(code)}"


def wait_for(condition: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JobStore]:
    store = JobStore(tmp_path / "job.db")
    yield store
    store.close()


def node_load() -> Sequence[Sample]:
    return [Sample("node_load", "agent-1", time.time(), 0.5)]


def registry_of(store: JobStore, tmp_path: Path) -> TelemetryRegistry:
    return TelemetryRegistry(store, [BuiltinCollector("node_load", 1.0, node_load)],
                    builtin_processors(), workdir=tmp_path)


def test_add_update_delete_and_keep_across_a_resume(store: JobStore, tmp_path: Path) -> None:
    registry = registry_of(store, tmp_path)
    assert [e.name for e in registry.entries()] == ["node_load", "cpu_utilization"]
    registry.add({"name": "disk", "kind": "collector", "command": "echo", "interval": 5})
    registry.add({"name": "mem_peak", "kind": "processor", "command": "cat", "interval": 10,
                  "timeout": 3, "inputs": ["mem_rss_bytes"]})
    registry.update("disk", {"interval": 2.5, "command": "echo again"})
    registry.update("node_load", {"interval": 7})
    with pytest.raises(AlreadyExistsError, match="an entry named 'disk' exists already"):
        registry.add({"name": "disk", "kind": "collector", "command": "x", "interval": 1})
    with pytest.raises(AlreadyExistsError, match="a built-in named 'node_load'"):
        registry.add({"name": "node_load", "kind": "collector", "command": "x", "interval": 1})
    with pytest.raises(FailedPreconditionError, match="'cpu_utilization' is built in"):
        registry.remove("cpu_utilization")
    with pytest.raises(NotFoundError, match="no collector or processor named 'nope' "
                                            r"\(there are: node_load, cpu_utilization"):
        registry.remove("nope")
    with pytest.raises(InvalidArgumentError, match="only its interval can change"):
        registry.update("node_load", {"command": "echo"})
    registry.remove("disk")
    registry.add({"name": "disk", "kind": "collector", "command": "echo 2", "interval": 4})

    # The job resumes: a new framework, a new registry over the same record.
    again = registry_of(store, tmp_path)
    kept = {e.name: e for e in again.entries()}
    assert list(kept) == ["node_load", "cpu_utilization", "mem_peak", "disk"]
    assert kept["node_load"].interval == 7 and kept["node_load"].builtin
    assert kept["disk"].command == "echo 2" and kept["disk"].interval == 4
    assert kept["mem_peak"].inputs == ("mem_rss_bytes",) and kept["mem_peak"].timeout == 3
    assert [e["name"] for e in recorded_registry(store)] == list(kept)


@pytest.mark.parametrize(("body", "error"), [
    ({"name": "x", "kind": "collector", "interval": 1}, "missing command"),
    ({"name": "x y", "kind": "collector", "command": "c", "interval": 1}, "bad name 'x y'"),
    ({"name": "x", "kind": "poller", "command": "c", "interval": 1},
     "bad kind 'poller': collector or processor"),
    ({"name": "x", "kind": "collector", "command": " ", "interval": 1}, "bad command ' '"),
    ({"name": "x", "kind": "collector", "command": "c", "interval": 0},
     "bad interval 0: seconds from 0.2 to 86400"),
    ({"name": "x", "kind": "collector", "command": "c", "interval": "5"}, "bad interval '5'"),
    ({"name": "x", "kind": "collector", "command": "c", "interval": 1, "timeout": 1e9},
     "bad timeout"),
    ({"name": "x", "kind": "processor", "command": "c", "interval": 1}, "missing inputs"),
    ({"name": "x", "kind": "processor", "command": "c", "interval": 1, "inputs": []},
     "bad inputs []"),
    ({"name": "x", "kind": "collector", "command": "c", "interval": 1, "inputs": ["a"]},
     "a collector has no inputs"),
    ({"name": "x", "kind": "collector", "command": "c", "interval": 1, "cmd": "c"},
     "unknown field cmd (valid: name, kind, command, interval, timeout, inputs)"),
])
def test_bad_entries_are_refused_with_what_is_valid(store: JobStore, tmp_path: Path,
                                                   body: dict[str, object], error: str) -> None:
    registry = registry_of(store, tmp_path)
    with pytest.raises(InvalidArgumentError) as caught:
        registry.add(body)
    assert str(caught.value).startswith(error)
    assert len(registry.entries()) == 2


def test_a_broken_record_is_not_fatal(store: JobStore, tmp_path: Path) -> None:
    store.set_meta(meta.TELEMETRY_REGISTRY, "{not json")
    assert len(registry_of(store, tmp_path).entries()) == 2
    store.set_meta(meta.TELEMETRY_REGISTRY, json.dumps([{"name": "bad", "kind": "collector"}]))
    assert len(registry_of(store, tmp_path).entries()) == 2


@pytest.mark.integration
def test_a_command_collector_stores_its_good_lines_and_reports_its_bad_ones(
        store: JobStore, tmp_path: Path) -> None:
    registry = registry_of(store, tmp_path)
    code = ("import json\n"
            "print(json.dumps({'data_name': 'load', 'node': 'n1', 'value': 1.5}))\n"
            "print('oops')\n"
            "print(json.dumps({'data_name': 'load', 'node': 'n2', 'value': 2, 'trial': 4}))\n"
            "print(json.dumps({'data_name': 'load', 'node': 'n2', 'value': 'x'}))\n")
    registry.add({"name": "load", "kind": "collector", "command": python(code), "interval": 1})
    status = registry.run("load")
    assert status.runs == 1 and status.failures == 1 and status.last_samples == 2
    assert status.last_error == ("line 2: not JSON: 'oops' (a sample line is one JSON "
                                 'object, e.g. {"data_name": "x", "node": "agent-1", '
                                 '"value": 1.5}) (and 1 more)')
    assert [(s.node, s.value, s.trial) for s in store.samples("load")] == [
        ("n1", 1.5, None), ("n2", 2.0, 4)]
    # A command that fails says so, with its last line of stderr.
    registry.update("load", {"command": "echo broken >&2; exit 3"})
    assert registry.run("load").last_error == "exited with status 3: broken"
    registry.update("load", {"command": "echo '{\"data_name\":\"load\",\"node\":\"n\","
                                        "\"value\":1}'"})
    assert registry.run("load").last_error == ""


@pytest.mark.integration
def test_a_collector_that_hangs_is_killed_at_its_timeout(store: JobStore,
                                                         tmp_path: Path) -> None:
    registry = registry_of(store, tmp_path)
    # It prints one sample, then hangs in a child that holds its stdout open: the whole
    # process group is killed, and what it printed before is kept.
    command = ("echo '{\"data_name\": \"slow\", \"node\": \"n\", \"value\": 1}'; "
               "sleep 600 & wait")
    registry.add({"name": "slow", "kind": "collector", "command": command, "interval": 1,
                  "timeout": 0.5})
    started = time.monotonic()
    status = registry.run("slow")
    assert time.monotonic() - started < 60
    assert status.last_error.startswith("timed out after 0.5 s (killed)")
    assert [s.value for s in store.samples("slow")] == [1.0]


@pytest.mark.integration
def test_a_command_processor_derives_samples_from_what_came_since_its_last_run(
        store: JobStore, tmp_path: Path) -> None:
    registry = registry_of(store, tmp_path)
    # A per-trial peak of memory, written as a user would: sample lines in, sample lines out.
    code = ("import json, sys\n"
            "peak = {}\n"
            "for line in sys.stdin:\n"
            "    s = json.loads(line)\n"
            "    key = (s['node'], s['trial'])\n"
            "    peak[key] = max(peak.get(key, 0), s['value'])\n"
            "for (node, trial), value in sorted(peak.items()):\n"
            "    print(json.dumps({'data_name': 'mem_peak', 'node': node, 'trial': trial,\n"
            "                      'value': value}))\n")
    registry.add({"name": "mem_peak", "kind": "processor", "command": python(code),
                  "interval": 1, "inputs": [telemetry.MEM_RSS]})
    store.add_samples([Sample(telemetry.MEM_RSS, "a", 1.0, 100.0, 1),
                       Sample(telemetry.MEM_RSS, "a", 2.0, 300.0, 1),
                       Sample(telemetry.MEM_RSS, "b", 1.0, 50.0, 2),
                       Sample("other", "a", 1.0, 1e9, 1)])
    assert registry.run("mem_peak").last_samples == 2
    assert [(s.node, s.trial, s.value) for s in store.samples("mem_peak")] == [
        ("a", 1, 300.0), ("b", 2, 50.0)]
    # Nothing new: the command is not even run, nothing derived.
    assert registry.run("mem_peak").last_samples == 0
    store.add_samples([Sample(telemetry.MEM_RSS, "a", 3.0, 200.0, 1)])
    assert registry.run("mem_peak").last_samples == 1
    assert store.samples("mem_peak")[-1].value == 200.0  # only what came since the last run
    # The cursor is kept: a resumed job does not derive the same samples again.
    assert registry_of(store, tmp_path).run("mem_peak").last_samples == 0


@pytest.mark.integration
def test_the_scheduler_runs_each_entry_and_a_slow_one_holds_up_nobody(
        store: JobStore, tmp_path: Path) -> None:
    release = threading.Event()

    def stuck() -> Sequence[Sample]:
        release.wait(60)
        return [Sample("stuck", "n", time.time(), 1.0)]

    def failing() -> Sequence[Sample]:
        raise RuntimeError("the agent is gone")

    registry = TelemetryRegistry(store, [BuiltinCollector("stuck", 0.2, stuck, timeout=0.3),
                                BuiltinCollector("failing", 0.2, failing),
                                BuiltinCollector("node_load", 0.2, node_load)],
                        builtin_processors(interval=0.2), workdir=tmp_path)
    registry.add({"name": "tick", "kind": "collector", "interval": 0.2,
                  "command": "echo '{\"data_name\": \"tick\", \"node\": \"n\", \"value\": 1}'"})
    store.add_samples([Sample(telemetry.CPUS_USER_TIME, "a", 1.0, 1.0, 1),
                       Sample(telemetry.CPUS_SYSTEM_TIME, "a", 1.0, 0.0, 1),
                       Sample(telemetry.CPUS_USER_TIME, "a", 3.0, 2.0, 1),
                       Sample(telemetry.CPUS_SYSTEM_TIME, "a", 3.0, 1.0, 1)])
    scheduler = TelemetryScheduler(registry)
    scheduler.start()
    try:
        wait_for(lambda: len(store.samples("tick")) >= 3 and len(store.samples("node_load")) >= 3)
        wait_for(lambda: registry.status("stuck").last_error.startswith("slow: still running"))
        wait_for(lambda: registry.status("failing").runs >= 2)
        assert registry.status("failing").last_error == "RuntimeError: the agent is gone"
        assert [s.value for s in store.samples(telemetry.CPU_UTILIZATION)] == [1.0]
        assert registry.status("stuck").runs == 0
        release.set()
        wait_for(lambda: registry.status("stuck").runs >= 1)
        assert store.samples("stuck")
    finally:
        release.set()
        scheduler.stop()
    recorded = {e["name"]: e["status"] for e in recorded_registry(store)}
    assert recorded["failing"]["failures"] >= 2 and recorded["tick"]["runs"] >= 3
