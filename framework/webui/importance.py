"""Parameter importance of a job's completed trials, by Optuna's ``get_param_importances``.

The record is turned into an in-memory Optuna study (one ``FrozenTrial`` per completed trial,
with a distribution per parameter that holds every value the space allows); Optuna's default
evaluator (PED-ANOVA in Optuna 5) ranks the parameters. Too few trials give a note instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import logging
import threading
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
"""Completed trials below which importance is not computed (the page says so)."""

Completed = Sequence[tuple[Mapping[str, Any], float]]
"""``(assignment, objective)`` of each completed trial."""


def distribution(param: RealParam | IntParam | CategoricalParam) -> BaseDistribution:
    """A distribution that holds every value ``param`` allows (steps are not needed here)."""
    if isinstance(param, RealParam):
        return FloatDistribution(param.low, param.high, log=param.log)
    if isinstance(param, IntParam):
        return IntDistribution(param.low, param.high, log=param.log)
    return CategoricalDistribution(param.choices)


def importances(space: SearchSpace, completed: Completed, maximize: bool) -> dict[str, Any]:
    """``{"values": {name: importance}}`` best first, or ``{"note": why not}``."""
    if len(completed) < MIN_TRIALS:
        return {"note": f"parameter importance needs at least {MIN_TRIALS} completed trials "
                        f"({len(completed)} so far)"}
    distributions = {p.name: distribution(p) for p in space if not distribution(p).single()}
    if not distributions:
        return {"note": "no parameter takes more than one value"}
    values = {value for _, value in completed}
    if len(values) < 2:
        return {"note": "every completed trial has the same objective: nothing to rank by"}
    study = optuna.create_study(direction="maximize" if maximize else "minimize")
    for assignment, value in completed:
        present = {name: d for name, d in distributions.items() if name in assignment}
        study.add_trial(optuna.trial.create_trial(  # a conditional parameter may be inactive
            params={name: assignment[name] for name in present},
            distributions=present, value=value))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Optuna's experimental-feature warnings
            ranked = optuna.importance.get_param_importances(study)
    except (ValueError, RuntimeError) as err:
        return {"note": f"Optuna cannot rank the parameters yet: {err}"}
    return {"values": {name: float(value) for name, value in ranked.items()}}


class ImportanceCache:
    """Remembers each job's last answer until its completed trials change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[str, tuple[tuple[int, ...], dict[str, Any]]] = {}

    def get(self, job_id: str, key: tuple[int, ...], space: SearchSpace, completed: Completed,
            maximize: bool) -> dict[str, Any]:
        with self._lock:
            known = self._answers.get(job_id)
        if known is not None and known[0] == key:
            return known[1]
        answer = importances(space, completed, maximize)
        with self._lock:
            self._answers[job_id] = (key, answer)
        return answer


optuna.logging.set_verbosity(optuna.logging.WARNING)
