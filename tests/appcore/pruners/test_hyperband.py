"""Early-stopping rule ``hyperband``: its settings, its brackets, and the same bracket for a
trial after AppCore restarts."""

from __future__ import annotations

import pytest

from disauto.appcore.pruners.hyperband import Hyperband
from disauto.common.errors import InvalidSettingsError
from tests.appcore.pruners.curves import make
from tests.appcore.pruners.curves import run_trial


def test_bootstrap_needs_an_explicit_max_resource() -> None:
    with pytest.raises(InvalidSettingsError) as caught:
        make("hyperband", {"bootstrap_count": "2"})
    assert str(caught.value) == ("early-stopping rule 'hyperband': bootstrap_count > 0 needs an "
                                 "explicit max_resource (an integer >= 1), not 'auto'")
    make("hyperband", {"bootstrap_count": "2", "max_resource": "9"})


def test_max_resource_below_min_resource_is_refused() -> None:
    with pytest.raises(InvalidSettingsError) as caught:
        make("hyperband", {"min_resource": "4", "max_resource": "2"})
    assert str(caught.value) == ("early-stopping rule 'hyperband': max_resource (2) must be at "
                                 "least min_resource (4)")


def test_hyperband_stops_weak_trials_and_keeps_strong_ones() -> None:
    pruner = make("hyperband", {"min_resource": "1", "max_resource": "9"})
    assert run_trial(pruner, 1, 0.9) is None
    outcomes = {final: run_trial(pruner, n, final)
                for n, final in enumerate([0.2, 0.3, 0.1, 0.15, 0.25, 0.05, 0.12], start=2)}
    assert any(step is not None for step in outcomes.values()), outcomes
    assert all(step is None or step < 8 for step in outcomes.values())
    assert run_trial(pruner, 20, 0.99) is None


def test_brackets_are_the_same_in_a_fresh_rule() -> None:
    """The bracket is a hash of the study's name and the trial number: no randomness."""
    decisions = []
    for _ in range(2):
        pruner = make("hyperband", {"min_resource": "1", "max_resource": "27"})
        assert isinstance(pruner, Hyperband)
        decisions.append([run_trial(pruner, n, final) for n, final in
                          enumerate([0.9, 0.2, 0.5, 0.1, 0.3, 0.05, 0.7, 0.15], start=1)])
    assert decisions[0] == decisions[1]
