"""The trial book's indexes: which trials are in each state, and the best one so far.

A job of 10,000 trials asks many times a second which trials wait for an offer, which run and
which is the best; scanning and sorting every trial for each answer made each of those calls
grow with the job. The index is told of every trial added and of every change of a
trial's state (the book's ``add`` and ``set_state``, the only places a state changes), so each
answer costs what it returns, not the job's size. The book's lock guards it.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence

from disauto.common.trial_state import TrialState
from disauto.framework._store import TrialRow


Ranking = Callable[[Sequence[TrialRow], bool], list[TrialRow]]
"""Trials best first (``framework._job.book.sorted_trials``)."""


class TrialIndex:
    """The trials of one job by state, and the candidates for the best.

    The best is kept incrementally: a COMPLETED trial's objective, constraints and end time do
    not change once it is completed (its final report came before, and a terminal state is
    final), so the best of the completed trials is the best of (the best so far, the trials
    completed since), by the ranking ``sorted_trials`` gives.
    """

    def __init__(self, trials: Iterable[TrialRow]) -> None:
        self._rows: dict[int, TrialRow] = {}
        self._by_state: dict[TrialState, dict[int, None]] = {state: {} for state in TrialState}
        self._completed_since: list[TrialRow] = []
        self._best: tuple[bool, TrialRow | None] | None = None
        """(for maximize?, the best of the completed trials seen so far); None: not computed."""
        for trial in trials:
            self.added(trial)

    def added(self, trial: TrialRow) -> None:
        """A trial was recorded (new, or read back from the record)."""
        self._rows[trial.number] = trial
        self._by_state[trial.state][trial.number] = None
        if trial.state == TrialState.COMPLETED:
            self._completed_since.append(trial)

    def changed(self, trial: TrialRow, before: TrialState) -> None:
        """``trial``'s state changed from ``before`` (to ``trial.state``)."""
        self._by_state[before].pop(trial.number, None)
        self._by_state[trial.state][trial.number] = None
        if trial.state == TrialState.COMPLETED and before != TrialState.COMPLETED:
            self._completed_since.append(trial)

    def count(self, state: TrialState) -> int:
        return len(self._by_state[state])

    def counts(self) -> dict[TrialState, int]:
        """How many trials are in each state."""
        return {state: len(numbers) for state, numbers in self._by_state.items()}

    def in_state(self, *states: TrialState) -> Iterator[TrialRow]:
        """The trials in any of ``states`` (in the order they entered it)."""
        for state in states:
            for number in list(self._by_state[state]):
                yield self._rows[number]

    def best_completed(self, maximize: bool, ranking: Ranking) -> TrialRow | None:
        """The first of the completed trials by ``ranking`` (the book's ``sorted_trials``),
        feasible or not; None when none completed."""
        sorted_trials = ranking
        if self._best is None or self._best[0] != maximize:
            completed = [self._rows[n] for n in self._by_state[TrialState.COMPLETED]]
            ranked = sorted_trials(completed, maximize)
            self._best = (maximize, ranked[0] if ranked else None)
        elif self._completed_since:
            current = self._best[1]
            candidates = [*([current] if current is not None else []), *self._completed_since]
            self._best = (maximize, sorted_trials(candidates, maximize)[0])
        self._completed_since.clear()
        return self._best[1]
