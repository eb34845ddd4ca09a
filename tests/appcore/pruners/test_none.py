"""Early-stopping rule ``none``: never stops a trial."""

from __future__ import annotations

from tests.appcore.pruners.curves import make
from tests.appcore.pruners.curves import run_trial


def test_none_never_prunes() -> None:
    pruner = make("none")
    assert [run_trial(pruner, n, final) for n, final in enumerate([0.9, 0.1, 0.05], 1)] == [
        None, None, None]
