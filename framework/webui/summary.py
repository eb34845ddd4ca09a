"""What the job page's plots draw, bounded whatever the number of trials.

The plots of a job of 10,000 trials cannot get every trial and every intermediate value on
each poll; they get a summary of at most a few thousand numbers:

* ``history``: completed trials ``[number, objective, seconds since the job started,
  feasible]`` — every one while there are at most :data:`MAX_POINTS`, else every feasible
  trial that set a new best (by number or by time: the best-so-far lines, which skip
  infeasible trials, are drawn from them exactly), the
  :data:`BEST_KEPT` best, and an even sample of the rest by number; ``pruned`` likewise
  ``[number, last value]``;
* ``parallel``: at most :data:`MAX_PARALLEL` completed trials ``[number, objective,
  assignment]``, the best first and an even sample of the rest; with several objectives each
  ends with the list of its objectives' values (an axis each; None where one is missing);
* ``curves``: the intermediate values of at most :data:`MAX_CURVES` trials (those in flight,
  the latest ended, the best), each at most :data:`MAX_CURVE_POINTS` points (evenly thinned,
  the last kept);
* ``shown``/``of``: how many completed trials the plots show of how many, so the page can say
  it is a sample.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

from disauto.common.objectives import is_feasible
from disauto.common.trial_state import TrialState
from disauto.framework._store import TrialRow


MAX_POINTS = 800
"""Completed trials the history plots show at most."""
BEST_KEPT = 100
"""The best completed trials always among those shown."""
MAX_PARALLEL = 250
"""Completed trials the parallel-coordinates plot shows at most."""
MAX_CURVES = 20
"""Trials whose intermediate values are drawn at most."""
MAX_CURVE_POINTS = 100
"""Points of one trial's curve at most."""

Steps = Callable[[Sequence[int]], dict[int, list[tuple[int, float]]]]
"""The intermediate values of the objective of these trials, by step (from the record)."""


def _even(items: Sequence[Any], most: int) -> list[Any]:
    """At most ``most`` of ``items``, evenly spread, the first and the last kept."""
    if len(items) <= most:
        return list(items)
    if most <= 1:
        return list(items[-most:]) if most else []
    stride = (len(items) - 1) / (most - 1)
    return [items[round(i * stride)] for i in range(most)]


def thin(points: Sequence[tuple[int, float]], most: int = MAX_CURVE_POINTS) -> list[list[Any]]:
    """A curve of at most ``most`` points, evenly thinned, its first and last kept."""
    return [[step, value] for step, value in _even(points, most)]


def _new_bests(trials: Sequence[TrialRow], maximize: bool) -> list[TrialRow]:
    """The feasible trials that beat every feasible one before them, in the given order (an
    infeasible trial is never the best)."""
    found: list[TrialRow] = []
    for trial in trials:
        if not is_feasible(trial.constraints):
            continue
        value = float(trial.objective or 0.0)
        if not found or (value > float(found[-1].objective or 0.0) if maximize
                         else value < float(found[-1].objective or 0.0)):
            found.append(trial)
    return found


def _sample(trials: Sequence[TrialRow], maximize: bool, most: int,
            keep: Sequence[TrialRow] = ()) -> list[TrialRow]:
    """At most about ``most`` trials by number: ``keep``, the best, then an even spread."""
    if len(trials) <= most:
        return list(trials)
    ranked = sorted(trials, key=lambda t: float(t.objective or 0.0), reverse=maximize)
    chosen = {t.number: t for t in keep}
    for trial in ranked[:min(BEST_KEPT, most // 4)]:
        chosen.setdefault(trial.number, trial)
    for trial in _even(trials, max(0, most - len(chosen))):
        chosen.setdefault(trial.number, trial)
    return sorted(chosen.values(), key=lambda t: t.number)


def _round(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.7g}")


def _parallel_entry(trial: TrialRow, objectives: Sequence[str]) -> list[Any]:
    entry = [trial.number, _round(trial.objective), trial.assignment]
    if len(objectives) > 1:
        entry.append([_round(trial.metrics.get(name)) for name in objectives])
    return entry


def summary(trials: Sequence[TrialRow], maximize: bool, started: float,
            steps: Steps, objectives: Sequence[str] = ()) -> dict[str, Any]:
    """The plots' summary of ``trials`` (by number) of a job that started at ``started``, whose
    objectives are ``objectives`` (their values go to the parallel plot when there are several)."""
    trials = sorted(trials, key=lambda t: t.number)  # linear when they are (the usual case)
    completed = [t for t in trials if t.state == TrialState.COMPLETED and t.objective is not None]
    pruned = [t for t in trials if t.state == TrialState.PRUNED and t.objective is not None]
    by_time = sorted(completed, key=lambda t: (t.ended_at or 0.0, t.number))
    bests = [*_new_bests(completed, maximize), *_new_bests(by_time, maximize)]
    shown = _sample(completed, maximize, MAX_POINTS, keep=bests)
    parallel = _sample(completed, maximize, MAX_PARALLEL)
    curves = _curve_trials(trials, completed, maximize)
    values = steps([t.number for t in curves]) if curves else {}
    return {
        "history": [[t.number, _round(t.objective),
                     round((t.ended_at or started) - started, 2), is_feasible(t.constraints)]
                    for t in shown],
        "pruned": [[t.number, _round(t.objective)]
                   for t in _sample(pruned, not maximize, MAX_POINTS)],
        "parallel": [_parallel_entry(t, objectives) for t in parallel],
        "curves": [{"number": t.number, "state": str(t.state),
                    "points": thin(values.get(t.number, []))}
                   for t in curves if values.get(t.number)],
        "shown": len(shown), "of": len(completed), "parallel_shown": len(parallel),
        "last_number": max((t.number for t in trials), default=0),
    }


def _curve_trials(trials: Sequence[TrialRow], completed: Sequence[TrialRow],
                  maximize: bool) -> list[TrialRow]:
    """Whose intermediate values are drawn: the trials in flight, the latest to end, the best
    (at most :data:`MAX_CURVES`, by number)."""
    chosen: dict[int, TrialRow] = {}
    for trial in trials:
        if trial.state in (TrialState.RUNNING, TrialState.LAUNCHING):
            chosen.setdefault(trial.number, trial)
    ended = sorted((t for t in trials if t.ended_at is not None),
                   key=lambda t: t.ended_at or 0.0, reverse=True)
    best = sorted(completed, key=lambda t: float(t.objective or 0.0), reverse=maximize)
    for group in (best[:MAX_CURVES // 4], ended):
        for trial in group:
            if len(chosen) >= MAX_CURVES:
                break
            chosen.setdefault(trial.number, trial)
    return sorted(chosen.values(), key=lambda t: t.number)[:MAX_CURVES]
