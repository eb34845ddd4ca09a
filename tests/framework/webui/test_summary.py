"""The plots' summary (framework/webui/summary.py): bounded whatever the number of trials, and
exact where the page draws a line from it (the best so far, which skips infeasible trials)."""

from __future__ import annotations

from disauto.common.trial_state import TrialState
from disauto.framework._store import TrialRow
from disauto.framework.webui import summary as summary_mod
from disauto.framework.webui.summary import summary


def _trial(number: int, objective: float, *, feasible: bool = True,
           state: TrialState = TrialState.COMPLETED) -> TrialRow:
    return TrialRow(number, {"x": number}, state, objective=objective, ended_at=100.0 + number,
                    constraints=(-1.0,) if feasible else (0.5,))


def _no_steps(numbers: object) -> dict[int, list[tuple[int, float]]]:
    return {}


def _best_so_far(history: list[list[object]]) -> list[int | None]:
    """What the page's bestSoFar draws from the history (maximising)."""
    best: list[object] | None = None
    out: list[int | None] = []
    for point in sorted(history, key=lambda p: int(p[0])):  # type: ignore[arg-type]
        if point[3] and (best is None or float(point[1]) > float(best[1])):  # type: ignore[arg-type]
            best = point
        out.append(None if best is None else int(best[0]))  # type: ignore[arg-type]
    return out


def test_each_point_says_whether_it_is_feasible_and_an_infeasible_one_is_never_the_best() -> None:
    trials = [_trial(1, 0.5), _trial(2, 0.9, feasible=False), _trial(3, 0.7)]
    history = summary(trials, True, 100.0, _no_steps)["history"]
    assert history == [[1, 0.5, 1.0, True], [2, 0.9, 2.0, False], [3, 0.7, 3.0, True]]
    assert _best_so_far(history) == [1, 1, 3]


def test_a_large_job_is_sampled_and_its_best_so_far_line_stays_exact() -> None:
    n = 5 * summary_mod.MAX_POINTS
    trials = [_trial(i, 5.0, feasible=False) if i % 7 == 0
              else _trial(i, ((i * 7919) % 1000) / 1000) for i in range(1, n + 1)]
    made = summary(trials, True, 100.0, _no_steps)
    history = made["history"]
    assert made["of"] == n and made["shown"] == len(history) < n
    assert len(history) <= summary_mod.MAX_POINTS + summary_mod.BEST_KEPT
    best, exact = None, {}
    for trial in trials:  # the line from every trial: infeasible ones (5.0) never take it
        if trial.number % 7 and (best is None or trial.objective > best.objective):
            best = trial
        exact[trial.number] = best.number if best else None
    drawn = _best_so_far(history)
    assert drawn == [exact[int(point[0])] for point in history]


def test_with_several_objectives_the_parallel_trials_carry_each_ones_value() -> None:
    """An axis per objective on the parallel coordinates (issue 36)."""
    trials = [TrialRow(n, {"x": n}, TrialState.COMPLETED, objective=0.1 * n,
                       metrics={"accuracy": 0.1 * n, "latency": 10.0 * n}) for n in (1, 2)]
    several = summary(trials, True, 100.0, _no_steps, objectives=("accuracy", "latency"))
    assert sorted(several["parallel"]) == [[1, 0.1, {"x": 1}, [0.1, 10.0]],
                                           [2, 0.2, {"x": 2}, [0.2, 20.0]]]
    one = summary(trials, True, 100.0, _no_steps, objectives=("accuracy",))
    assert sorted(one["parallel"]) == [[1, 0.1, {"x": 1}], [2, 0.2, {"x": 2}]]
