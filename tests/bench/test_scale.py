"""bench.scale's parts, run small: each offer policy answers a round of offers (no process),
and the cluster part's record check on a real da-cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.scale_cluster import cluster_table
from bench.scale_cluster import run_cluster
from bench.scale_offers import RUNNER
from bench.scale_offers import offer_json
from bench.scale_offers import policy_table
from disauto.framework._offers import OfferView
from disauto.framework.policies import POLICIES
from disauto.framework.policies import LaunchRequest
from disauto.framework.policies import create_policy


def test_each_policy_is_timed_on_a_round_of_offers() -> None:
    table = policy_table(agents=40, frameworks=3, waiting=4, rounds=2).splitlines()
    assert [row.split(" | ")[0].lstrip("| ") for row in table[2:]] == sorted(POLICIES)
    for row in table[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1:4] == ["40", "4", "2"] and all(float(c) >= 0 for c in cells[4:])


def test_the_offers_of_a_round_fit_the_waiting_trials() -> None:
    views = [OfferView.from_offer(offer_json(i, 0)) for i in range(10)]
    plan = create_policy("fifo", runner=RUNNER).place(
        views, [LaunchRequest(f"trial-{n}", RUNNER, trial_number=n) for n in range(1, 5)])
    assert sum(len(launches) for launches in plan.launches.values()) == 4


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
@pytest.mark.integration
@pytest.mark.slow
def test_every_job_of_the_cluster_part_is_checked_on_its_record(tmp_path: Path) -> None:
    figures = run_cluster(tmp_path, jobs=2, agents=2, trials=3)
    assert figures.correct == 2 and figures.problems == [], cluster_table(figures)
    assert len(figures.first_trial) == 2 and len(figures.peaks) == 2
    assert figures.allocation_ms.get("count", 0) > 0
