"""TPE's window (issue 29): which trials the model learns from, and that a window changes the
search only past its size, the same way in a restored search."""

from __future__ import annotations

import math

import pytest

from disauto.appcore.algorithms import SearchAlgorithm
from disauto.appcore.algorithms import TrialRecord
from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.algorithms import optuna_tpe
from disauto.appcore.algorithms.optuna_tpe import WindowBook
from disauto.common.space import Assignment
from disauto.common.trial_state import TrialState
from tests.appcore.algorithms.test_bayesian import SPACE
from tests.appcore.algorithms.test_bayesian import score


def test_the_window_holds_the_best_the_most_recent_and_the_running() -> None:
    values = {number: float((number * 37) % 101) for number in range(60)}
    book = WindowBook(20, minimize=True, kept_best=5)
    for number in reversed(range(60)):  # told out of order: the window is the same
        book.finished(number, values[number], complete=number % 9 != 4)
    best = sorted((n for n in values if n % 9 != 4), key=lambda n: (values[n], -n))[:5]
    recent = [n for n in reversed(range(60)) if n not in best][:15]
    assert book.numbers([61, 62]) == {*best, *recent, 61, 62}


def test_a_window_larger_than_the_study_or_zero_keeps_every_trial() -> None:
    book = WindowBook(30, minimize=False, kept_best=5)
    for number in range(30):
        book.finished(number, float(number), complete=True)
    assert book.numbers([30]) is None
    book.finished(30, 1.0, complete=True)
    assert book.numbers([]) is not None
    book.window = 0
    assert book.numbers([]) is None


def test_several_objectives_keep_the_most_recent() -> None:
    book = WindowBook(10, minimize=None)
    for number in range(25):
        book.finished(number, float(number), complete=True)
    assert book.numbers([]) == set(range(15, 25))


def _make(window: int) -> SearchAlgorithm:
    return create_algorithm("bayesian", SPACE, seed=3, direction="maximize",
                            settings={"backend": "tpe", "n_startup_trials": "5",
                                      "tpe_window": str(window)}, parallelism=4)


def _run(search: SearchAlgorithm, trials: int, records: list[TrialRecord]) -> list[Assignment]:
    """Ask ``trials`` trials four at a time in flight, every 7th pruned; ``records`` gets the
    job store's view of them."""
    asked: list[Assignment] = []
    pending: list[int] = []
    for number in range(1, trials + 1):
        suggestion = search.ask(number)
        assert isinstance(suggestion, dict)
        asked.append(suggestion)
        pending.append(number)
        if len(pending) >= 4:
            done = pending.pop(0)
            value = score(asked[done - 1]) + math.sin(done) / 10
            state = TrialState.PRUNED if done % 7 == 0 else TrialState.COMPLETED
            search.tell(done, value, state)
            records[done - 1] = TrialRecord(done, asked[done - 1], value, state)
    for number in pending:
        records[number - 1] = TrialRecord(number, asked[number - 1], None, TrialState.RUNNING)
    return asked


@pytest.fixture(autouse=True)
def _ten_best(monkeypatch: pytest.MonkeyPatch) -> None:
    """The searches below keep the 10 best (100 in a job), so a short search passes its
    window."""
    monkeypatch.setattr(optuna_tpe, "KEPT_BEST", 10)


def test_a_window_changes_the_search_only_past_its_size() -> None:
    whole = _run(_make(0), 60, [None] * 60)  # type: ignore[list-item]
    windowed = _run(_make(30), 60, [None] * 60)  # type: ignore[list-item]
    # 30 trials finished by the ask of trial 34: the model saw every one until then.
    assert windowed[:34] == whole[:34]
    assert windowed[34:] != whole[34:]


def test_a_restored_windowed_search_suggests_what_the_original_would() -> None:
    records: list[TrialRecord] = [None] * 60  # type: ignore[list-item]
    original = _make(30)
    _run(original, 60, records)
    restored = _make(30)
    restored.restore(records)
    ended = records[57]  # trials 58-60 still run
    assert ended.state == TrialState.RUNNING
    for search in (original, restored):
        search.tell(ended.number, 0.5, TrialState.COMPLETED)
    assert restored.ask(61) == original.ask(61)
