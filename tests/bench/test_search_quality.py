"""bench.search_quality's executors: each runs the algorithm as AppCore's mode would."""

from __future__ import annotations

import pytest

from bench import search_quality


def test_sync_applies_to_bayesian_backends_only() -> None:
    every = list(search_quality.EXECUTORS)
    assert search_quality.executors_for("random", every) == ["sequential", "parallel 8 async"]
    assert search_quality.executors_for("tpe", every) == every


@pytest.mark.parametrize("executor", list(search_quality.EXECUTORS))
def test_each_executor_counts_the_trials_to_the_target(executor: str) -> None:
    # Branin with TPE reaches <= 0.5 within 200 trials for seed 0 in every mode (62.5-88
    # trials is the median over 10 seeds).
    trials = search_quality.run(("tpe", "branin", 0, executor, 200))
    assert trials is not None and 1 <= trials <= 200
    # A budget too small for the target: reported as not reached.
    assert search_quality.run(("tpe", "branin", 0, executor, 3)) is None
