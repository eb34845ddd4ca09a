"""Several users' jobs on one cluster: three da-submit processes against one embedded master.

Each job is its own process, framework, job store (under one shared ``$DISAUTO_HOME``), gRPC
service and file server; the master gives them disjoint resources and ports. One job runs FIFO,
one the paper's dynamic priority strategy and one its improved variant, with Algorithm 1 set to
react after a few results so the priorities show in the record.
"""

from __future__ import annotations

from collections.abc import Iterator
import json
from pathlib import Path
import sqlite3
from typing import Any

import pytest

from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.submit.local import free_port_range
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import master_state


pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    made = LocalCluster(ClusterConfig(
        agents=2, cpus=4.0, mem_mb=4096.0, ports=(free_port_range(600, low=42000, high=60000),),
        allocation_interval=0.2, work_dir=tmp_path / "cluster",
        status_update_retry_interval=1.0, status_update_retry_interval_max=2.0,
    ))
    made.start()
    yield made
    made.stop()


def _flags(workdir: Path, name: str, *extra: str) -> list[str]:
    flags = common_flags(workdir, "--trail-steps", "6", "--parallelism", "2", "--quiet",
                         *extra)
    flags[flags.index("--app-name") + 1] = name
    return flags


def _job(db: Path) -> dict[str, Any]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        trials = conn.execute("SELECT number, state, priority FROM trials ORDER BY number") \
            .fetchall()
        appcores = conn.execute("SELECT attempt, state, address FROM appcore_runs").fetchall()
    return {"meta": meta, "trials": trials, "appcores": appcores}


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
def test_three_jobs_share_one_master_without_clashing(submit: Any, workdir: Path,
                                                      cluster: LocalCluster) -> None:
    settings = ("k=1", "m=2", "thresholds=0.5,0.5", "decline_filter_seconds=0.5")

    def algorithm_1(flag: str) -> list[str]:
        """The settings through ``--policy-setting`` or its older name, the alias."""
        return [item for setting in settings for item in (flag, setting)]

    master = ["--master", cluster.address]
    jobs = {
        "tenant-fifo": submit(*_flags(workdir, "tenant-fifo", *master)),
        "tenant-dynamic": submit(*_flags(workdir, "tenant-dynamic", *master, "--offer-policy",
                                         "dynamic", *algorithm_1("--priority-setting"))),
        "tenant-plus": submit(*_flags(workdir, "tenant-plus", *master, "--offer-policy",
                                      "dynamic-plus", *algorithm_1("--policy-setting"))),
    }
    for name, job in jobs.items():
        assert job.wait(timeout=120) == 0, f"{name}:\n{job.output}"

    dirs = {name: job.job_dir() for name, job in jobs.items()}
    assert len(set(dirs.values())) == 3 and len({d.parent for d in dirs.values()}) == 1
    records = {name: _job(path / "job.db") for name, path in dirs.items()}
    framework_ids = {name: r["meta"]["framework_id"] for name, r in records.items()}
    assert len(set(framework_ids.values())) == 3
    appcore_addresses = set()
    for name, record in records.items():
        results = json.loads((dirs[name] / "results.json").read_text())
        assert results["outcome"] == "BUDGET_SPENT" and results["app_name"] == name
        assert [state for _, state, _ in record["trials"]] == ["COMPLETED"] * 6, name
        # Each AppCore bound its offered port at the first attempt: no port was given twice.
        ((attempt, _, address),) = record["appcores"]
        assert attempt == 1 and address
        appcore_addresses.add(address)
        counts = json.loads(record["meta"]["offer_counts"])
        assert counts["offers_seen"] >= 1
        config = json.loads(record["meta"]["config"])
        assert config["search"].get("dynamic_priority", False) == (name != "tenant-fifo")
    assert len(appcore_addresses) == 3
    # FIFO submits every trial at priority 0; Algorithm 1 (k*m = 2, G = 0.5, so any gap drops
    # it) lowered the dynamic jobs' priority for their later trials, down to 2 thresholds.
    assert {p for _, _, p in records["tenant-fifo"]["trials"]} == {0}
    for name in ("tenant-dynamic", "tenant-plus"):
        priorities = [p for _, _, p in records[name]["trials"]]
        assert priorities[:2] == [0, 0] and max(priorities) == 2, (name, priorities)
        assert "priority_declines" in json.loads(records[name]["meta"]["offer_counts"])
        # Either name of the flag: Algorithm 1's half to AppCore, the policy's to the framework.
        config = json.loads(records[name]["meta"]["config"])
        assert config["search"]["priority_settings"] == dict(item.split("=") for item in settings)
        assert config["offer_policy_settings"] == {"decline_filter_seconds": "0.5"}
    # The master saw three frameworks, named after the jobs, all torn down now.
    state = master_state(f"http://{cluster.address}")
    seen = {f["name"]: f["id"] for f in state["frameworks"] + state["completed_frameworks"]}
    assert {name: seen.get(name) for name in jobs} == framework_ids
    assert not state["frameworks"]
