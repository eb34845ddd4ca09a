"""Early-stopping rule ``median``: decisions on real curves, in both directions."""

from __future__ import annotations

import pytest

from tests.appcore.pruners.curves import make
from tests.appcore.pruners.curves import run_trial


@pytest.mark.parametrize("direction", ["maximize", "minimize"])
def test_median_stops_a_trial_below_the_median_of_completed_ones(direction: str) -> None:
    sign = 1.0 if direction == "maximize" else -1.0
    pruner = make("median", {"n_startup_trials": "3"}, direction)
    for number, final in enumerate([0.8, 0.9, 0.85], start=1):
        assert run_trial(pruner, number, sign * final) is None
    assert run_trial(pruner, 4, sign * 0.95) is None  # better: runs to the end
    assert run_trial(pruner, 5, sign * 0.3) == 0  # worse: stopped at its first step


def test_median_respects_startup_and_warmup() -> None:
    pruner = make("median", {"n_startup_trials": "2", "n_warmup_steps": "4"})
    assert run_trial(pruner, 1, 0.9) is None
    assert run_trial(pruner, 2, 0.1) is None  # only one completed trial before it
    assert run_trial(pruner, 3, 0.2) == 4  # judged only after the warm-up
