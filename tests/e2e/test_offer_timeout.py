"""DisAuto's framework under Mesos' ``--offer_timeout``: a whole job on a ``da-cluster`` that
rescinds every offer held longer than 300 ms completes (the framework's ``offerRescinded``
only forgets the offer; it never launches on one it was told is gone).

Real processes throughout: a da-cluster started with ``--offer-timeout``, a detached
da-submit, AppCore and the trials.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.request import urlopen

import pytest

from tests.e2e.conftest import DaCluster
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import nothing_left
from tests.e2e.test_job_lifecycle import Shell
from tests.e2e.test_job_lifecycle import shell  # noqa: F401 - the fixture


pytestmark = pytest.mark.slow


def test_a_job_completes_on_a_master_with_an_offer_timeout(
        shell: Shell, workdir: Path, tmp_path: Path) -> None:  # noqa: F811
    cluster = DaCluster(tmp_path / "da-cluster", extra=("--offer-timeout", "300ms"))
    budget = 4
    try:
        address = cluster.start()
        with urlopen(f"http://{address}/master/flags", timeout=5) as response:  # noqa: S310
            assert json.loads(response.read())["flags"]["offer_timeout"] == "300ms"
        job = shell.submit(*common_flags(workdir, "--trail-steps", str(budget),
                                         "--parallelism", "2", "--master", address))
        status = shell.wait_until(job, lambda s: s["state"] == "ended", timeout=240)
        assert status["outcome"] == "BUDGET_SPENT", status
        results = json.loads((shell.home / "jobs" / job / "results.json").read_text())
        assert results["exit_status"] == 0 and len(results["trials"]) == budget
        assert nothing_left(job)
    finally:
        cluster.kill()
