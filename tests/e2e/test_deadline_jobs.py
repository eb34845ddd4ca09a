"""Two ``--offer-policy deadline`` jobs on one ``da-cluster``: each publishes its standing as a
FrameworkInfo label (UPDATE_FRAMEWORK) and reads the other's from the master, and both finish.

Real processes throughout: a da-cluster, two detached da-submit processes, AppCores and trials.
"""

from __future__ import annotations

import json
from pathlib import Path
import time
from typing import Any
from urllib.request import urlopen

import pytest

from disauto.framework._peers import STANDING_LABEL
from tests.e2e.conftest import DaCluster
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import nothing_left
from tests.e2e.test_job_lifecycle import Shell
from tests.e2e.test_job_lifecycle import shell  # noqa: F401 - the fixture


pytestmark = pytest.mark.slow


def _standings(address: str) -> dict[str, dict[str, Any]]:
    """Each active framework's published standing, by name."""
    with urlopen(f"http://{address}/master/frameworks", timeout=5) as response:  # noqa: S310
        frameworks = json.loads(response.read())["frameworks"]
    found = {}
    for framework in frameworks:
        for label in framework.get("labels", []):
            if label["key"] == STANDING_LABEL:
                found[framework["name"]] = json.loads(label["value"])
    return found


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
def test_two_deadline_jobs_see_each_other_through_the_master_and_finish(
        shell: Shell, workdir: Path, da_cluster: DaCluster) -> None:  # noqa: F811
    address = da_cluster.start()
    jobs = {}
    for name, deadline in (("tight", "3m"), ("loose", "30m")):
        flags = common_flags(workdir, "--trail-steps", "6", "--parallelism", "2", "--master",
                             address, "--offer-policy", "deadline", "--deadline", deadline)
        flags[flags.index("--app-name") + 1] = name
        jobs[name] = shell.submit(*flags)
    deadline = time.monotonic() + 60
    standings: dict[str, dict[str, Any]] = {}
    while time.monotonic() < deadline and set(standings) != {"tight", "loose"}:
        standings = _standings(address)
        time.sleep(0.5)
    assert set(standings) == {"tight", "loose"}, standings  # both published through Mesos
    assert standings["tight"]["deadline"] < standings["loose"]["deadline"]
    for name, job in jobs.items():
        status = shell.wait_until(job, lambda s: s["state"] == "ended", timeout=240)
        assert status["outcome"] == "BUDGET_SPENT", (name, status)
        assert nothing_left(job)
    told = shell.job("status", jobs["tight"])
    assert told.returncode == 0 and "met (" in told.stdout, told.stdout
