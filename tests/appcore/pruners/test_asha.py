"""Early-stopping rule ``asha``: its settings and its decisions at the rungs."""

from __future__ import annotations

import pytest

from disauto.common.errors import InvalidSettingsError
from tests.appcore.pruners.curves import make
from tests.appcore.pruners.curves import run_trial


def test_asha_bootstrap_needs_an_explicit_min_resource() -> None:
    with pytest.raises(InvalidSettingsError, match="bootstrap_count > 0 needs an explicit"):
        make("asha", {"bootstrap_count": "2"})
    make("asha", {"bootstrap_count": "2", "min_resource": "1"})


def test_asha_stops_at_rungs_and_keeps_the_top_share() -> None:
    pruner = make("asha", {"min_resource": "1", "reduction_factor": "3"})
    # The first trial at a rung has nobody to lose against.
    assert run_trial(pruner, 1, 0.9) is None
    pruned = [run_trial(pruner, n, final) for n, final in enumerate([0.2, 0.3, 0.1], 2)]
    assert pruned and all(step in (1, 3) for step in pruned), pruned  # rungs at steps 1, 3, 9
    assert run_trial(pruner, 5, 0.95) is None
