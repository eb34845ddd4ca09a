"""Masters elected through a real ZooKeeper fail over under a running job: the job is given
``--master zk://...``, the leader is killed with ``kill -9`` (during the job, and again as it
ends) or frozen with ``SIGSTOP``, and the job ends with every trial run once, checked on the
record trial by trial. Each scenario runs against three embedded masters (``da-cluster
--master-only --zk``, each its own process, and an agents' process that follows the leader) and
against three real ``mesos-master`` processes with the replicated log (``make test-mesos``).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
import time
from typing import Any

import pytest

from tests.conformance.clusters import AgentSpec
from tests.conformance.clusters import get_json
from tests.conformance.conftest import Jobs
from tests.conformance.conftest import mesos_home
from tests.conformance.elected import ElectedCluster
from tests.conformance.elected import EmbeddedElected
from tests.conformance.elected import RealElected
from tests.e2e.test_production_cluster import ended_whole
from tests.e2e.test_production_cluster import running
from tests.e2e.test_production_cluster import trial_rows
from tests.e2e.test_production_cluster import until


# 30 s each on the embedded cluster: make test-long runs them, and make test-mesos on both
# clusters; tests/localmesos/test_elected.py covers the election itself in make test.
pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.long]

HEARTBEAT = 15.0
"""The masters' heartbeat interval (Mesos' DEFAULT_HEARTBEAT_INTERVAL)."""
ELECTION = 10.0 + 5.0
"""ZooKeeper's session timeout (Mesos' --zk_session_timeout) and the new leader's recovery."""
IN_USE_WITHIN = 5 * HEARTBEAT + ELECTION
"""The issue's bound: a new leader is in use within 5 heartbeats plus the election."""


@pytest.fixture
def elected(kind: str, tmp_path: Path, zookeeper: Any) -> Iterator[ElectedCluster]:
    """Three masters of the scenario's kind under a ZooKeeper path of the test's own."""
    work = tmp_path / f"elected-{kind}"
    work.mkdir()
    zk = zookeeper.url(f"/{kind}-{tmp_path.name}")
    home = mesos_home()
    cluster: ElectedCluster = (
        RealElected(home, work, zk, AgentSpec()) if kind == "real" and home is not None
        else EmbeddedElected(work, zk, AgentSpec()))
    yield cluster
    cluster.stop()


def framework_at(cluster: ElectedCluster, job_name: str) -> bool:
    """Whether the leader has the job's framework subscribed (connected and active)."""
    address = f"127.0.0.1:{cluster.ports[cluster.leader_index()]}"
    try:
        frameworks = get_json(f"http://{address}/master/frameworks", timeout=3)["frameworks"]
    except (OSError, ValueError, KeyError):
        return False
    return any(f.get("active") and f.get("connected", True) and job_name in str(
        f.get("labels", "")) + f.get("name", "") for f in frameworks)


def job_log(job_dir: Path, lines: int = 60) -> str:
    """The last lines of the job's own log."""
    log = job_dir / "da-submit.log"
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() \
        else "(none)"


def in_use_after(cluster: ElectedCluster, job_dir: Path, started: float) -> float:
    """Seconds from ``started`` until the new leader has the job's framework again."""
    until(lambda: framework_at(cluster, job_dir.name), IN_USE_WITHIN,
          lambda: f"the job's framework was not at the new leader within {IN_USE_WITHIN:g}s:"
          f"\n{cluster.logs()}\n--- da-submit.log\n{job_log(job_dir)}")
    return time.monotonic() - started


def test_the_leader_killed_during_a_job_and_as_it_ends(
        elected: ElectedCluster, jobs: Callable[[ElectedCluster], Jobs],
        tmp_path: Path) -> None:
    run = jobs(elected)  # type: ignore[arg-type]  # an ElectedCluster serves as a Cluster
    gate = tmp_path / "gate"
    budget = 4
    job = run.submit(*run.flags(budget, 2, sleep=f"@{gate}", again=0))
    alive = running(job, 2, within=120)
    first = elected.leader_index()
    started = time.monotonic()
    elected.kill_leader()
    took = in_use_after(elected, job.job_dir(), started)
    assert elected.leader_index() != first  # the killed one came back behind the others
    gate.touch()
    # As it ends: the last trials run; the leader dies again.
    until(lambda: sum(t["state"] == "COMPLETED" for t in trial_rows(job)) >= budget - 2,
          120, f"the job did not go on after the failover:\n{job.output}")
    elected.kill_leader()
    job.wait(240)
    assert "Traceback" not in job.output, job.output
    ended = ended_whole(job, budget)
    for trial in alive:  # those running through the first failover ran once, to the end
        recorded = ended.db_trials[trial["number"]]
        assert recorded["task_id"] == trial["task_id"] and recorded["retries"] == 0, recorded
    print(f"\n[{elected.kind}: the new leader had the job's framework {took:.1f}s after "
          "the kill]")


def test_a_frozen_leader_is_replaced_and_exits_when_thawed(
        elected: ElectedCluster, jobs: Callable[[ElectedCluster], Jobs],
        tmp_path: Path) -> None:
    run = jobs(elected)  # type: ignore[arg-type]
    gate = tmp_path / "gate"
    budget = 3
    job = run.submit(*run.flags(budget, 2, sleep=f"@{gate}", again=0))
    alive = running(job, 2, within=120)
    started = time.monotonic()
    frozen = elected.freeze_leader()
    took = in_use_after(elected, job.job_dir(), started)
    gate.touch()
    ended = ended_whole(job, budget)
    for trial in alive:
        recorded = ended.db_trials[trial["number"]]
        assert recorded["task_id"] == trial["task_id"] and recorded["retries"] == 0, recorded
    process = elected.masters[frozen]
    assert process is not None
    elected.thaw()  # it finds its candidacy over and exits, as Mesos' master does
    assert process.returncode not in (None, 0), process.returncode
    print(f"\n[{elected.kind}: the new leader had the job's framework {took:.1f}s after "
          "the freeze]")
