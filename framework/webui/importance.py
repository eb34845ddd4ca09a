"""Parameter importance of a job's trials, by Optuna's ``get_param_importances``.

The record is turned into an in-memory Optuna study (one ``FrozenTrial`` per completed trial,
and per pruned trial with its last intermediate value, with a distribution per parameter that
holds every value the space allows); Optuna's PED-ANOVA evaluator (its default in Optuna 5) ranks
the parameters. Too few trials give a note instead.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import logging
import threading
import time
from typing import Any
import warnings

import optuna
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution

from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace


logger = logging.getLogger(__name__)

MIN_TRIALS = 4
"""Completed and pruned trials below which importance is not computed (the page says so)."""

Completed = Sequence[tuple[Mapping[str, Any], float]]
"""``(assignment, objective)`` of each completed trial."""


def distribution(param: RealParam | IntParam | CategoricalParam) -> BaseDistribution:
    """A distribution that holds every value ``param`` allows (steps are not needed here)."""
    if isinstance(param, RealParam):
        return FloatDistribution(param.low, param.high, log=param.log)
    if isinstance(param, IntParam):
        return IntDistribution(param.low, param.high, log=param.log)
    return CategoricalDistribution(param.choices)


def why_not(space: SearchSpace, completed: Completed,
            pruned: Completed = ()) -> dict[str, Any] | None:
    """``{"note": why not}`` when these trials cannot be ranked (too few, no parameter that
    varies, one objective value), known without Optuna's evaluator; None when they can."""
    trials = [*completed, *pruned]
    if len(trials) < MIN_TRIALS:
        return {"note": f"parameter importance needs at least {MIN_TRIALS} completed or pruned "
                        f"trials ({len(completed)} completed, {len(pruned)} pruned so far)"}
    if all(distribution(p).single() for p in space):
        return {"note": "no parameter takes more than one value"}
    if len({value for _, value in trials}) < 2:
        return {"note": "every trial has the same objective: nothing to rank by"}
    return None


def importances(space: SearchSpace, completed: Completed, maximize: bool,
                pruned: Completed = ()) -> dict[str, Any]:
    """``{"values": {name: importance}, "basis": what they were computed over}`` best first,
    or ``{"note": why not}``.

    ``pruned``: ``(assignment, last intermediate value)`` of each pruned trial. Optuna's
    evaluators read completed trials only; with early stopping most trials are pruned (ASHA:
    12 of 15), so each pruned trial is told to the study as completed with the last value it
    reported, as Optuna's TPE sampler ranks pruned trials by their last intermediate value. A
    value at an early step is a worse one, which is what the pruner judged it to be.
    """
    note = why_not(space, completed, pruned)
    if note is not None:
        return note
    trials = [*completed, *pruned]
    distributions = {p.name: distribution(p) for p in space if not distribution(p).single()}
    study = optuna.create_study(direction="maximize" if maximize else "minimize")
    for assignment, value in trials:
        present = {name: d for name, d in distributions.items() if name in assignment}
        study.add_trial(optuna.trial.create_trial(  # a conditional parameter may be inactive
            params={name: assignment[name] for name in present},
            distributions=present, value=value))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Optuna's experimental-feature warnings
            ranked = optuna.importance.get_param_importances(
                study, evaluator=optuna.importance.PedAnovaImportanceEvaluator())
    except (ValueError, RuntimeError) as err:
        return {"note": f"Optuna cannot rank the parameters yet: {err}"}
    basis = f"{len(completed)} completed trial{'s' if len(completed) != 1 else ''}"
    if pruned:
        basis += (f" and {len(pruned)} pruned (each counted with its last intermediate "
                  "value)")
    return {"values": {name: float(value) for name, value in ranked.items()}, "basis": basis}


@dataclass
class _Answer:
    """A job's last answer (``key``: the trials it was computed over) and the computation in
    flight, if any."""

    key: Hashable = None
    answer: dict[str, Any] | None = None
    computing: Hashable = None
    done: threading.Event = field(default_factory=threading.Event)
    at: float = float("-inf")
    """When the last answer was computed (``time.monotonic``)."""


PENDING_NOTE = "parameter importance is being computed (Optuna)…"
RECOMPUTE_SECONDS = 20.0
"""While a job runs, its importance is computed again at most this often, unless the trials it
counts grew by :data:`RECOMPUTE_GROWTH` since: a job that completes 50 trials a second would
otherwise keep a thread of the framework computing it."""
RECOMPUTE_GROWTH = 0.2
THROTTLE_FROM = 200
"""Jobs with fewer trials get their importance computed again at each change."""


def _size(key: Hashable) -> float:
    """How many trials a key counts (a tuple of counts or of trial numbers)."""
    if isinstance(key, tuple):
        return float(sum(k if isinstance(k, int) else len(k) if isinstance(k, tuple) else 0
                         for k in key))
    return 0.0


Compute = Callable[[SearchSpace, Completed, bool, Completed], dict[str, Any]]
"""What computes an answer (:func:`importances`, here or in ``importance_worker.py``)."""


class ImportanceCache:
    """Each job's last answer, kept until its completed or pruned trials change.

    Optuna takes seconds on a busy machine (the first time, more: it imports its evaluator),
    so the page's server does not wait for it: :meth:`get` with ``wait`` computes in a thread
    of its own and answers with the job's last answer meanwhile (``"pending": true``; the
    page's next poll has the new one).
    """

    def __init__(self, compute: Compute = importances) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, _Answer] = {}
        self._compute_with = compute

    def use(self, compute: Compute) -> None:
        """Compute the next answers with ``compute`` (the framework's worker process)."""
        self._compute_with = compute

    def get(self, job_id: str, key: Hashable, space: SearchSpace, completed: Completed,
            maximize: bool, pruned: Completed = (), wait: float | None = None
            ) -> dict[str, Any]:
        """The answer over these trials (``key`` names them): computed here when ``wait`` is
        None, else in a thread, waited for up to ``wait`` seconds."""
        with self._lock:
            job = self._jobs.setdefault(job_id, _Answer())
            if job.key == key and job.answer is not None:
                return job.answer
            if wait is not None and job.answer is not None and "values" in job.answer \
                    and _size(key) >= THROTTLE_FROM \
                    and time.monotonic() - job.at < RECOMPUTE_SECONDS \
                    and _size(key) < (1 + RECOMPUTE_GROWTH) * _size(job.key):
                return job.answer  # recent enough: the next change past the interval has more
            if wait is not None and job.computing is None:
                job.computing, job.done = key, threading.Event()
                threading.Thread(target=self._compute, name="disauto-importance", daemon=True,
                                 args=(job, key, space, completed, maximize, pruned)).start()
            done = job.done if job.computing == key else None
        if wait is None:
            self._compute(job, key, space, completed, maximize, pruned)
        elif done is not None:
            done.wait(wait)
        with self._lock:
            if job.key == key and job.answer is not None:
                return job.answer
            last = job.answer
        if last is not None and "values" in last:
            return {**last, "pending": True}
        return {"note": PENDING_NOTE, "pending": True}

    def _compute(self, job: _Answer, key: Hashable, space: SearchSpace, completed: Completed,
                 maximize: bool, pruned: Completed) -> None:
        try:
            answer = self._compute_with(space, completed, maximize, pruned)
        except Exception as err:  # noqa: BLE001 - a note on the page, never a dead thread
            logger.warning("parameter importance failed: %s", err)
            answer = {"note": f"Optuna cannot rank the parameters: {err}"}
        with self._lock:
            job.key, job.answer, job.at = key, answer, time.monotonic()
            if job.computing == key:
                job.computing = None
                job.done.set()


optuna.logging.set_verbosity(optuna.logging.WARNING)
