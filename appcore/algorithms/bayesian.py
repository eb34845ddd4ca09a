"""Bayesian optimization (``bayesian``): a model of the results chooses the next assignments.

The model comes from a well-kept library, chosen by the ``backend`` setting and found in
:data:`BACKENDS` (each backend is one module, imported on first use):

* ``tpe`` (default) -- Optuna's multivariate TPE with the constant liar
  (:mod:`appcore.algorithms.optuna_tpe`);
* ``gp`` -- scikit-optimize's Gaussian process with ``gp_hedge`` and the ``cl_min`` liar
  (:mod:`appcore.algorithms.skopt_gp`; needs the ``skopt`` extra);
* ``qmc`` -- Optuna's scrambled Sobol sequence, a model-free space-filling baseline
  (:mod:`appcore.algorithms.optuna_qmc`);
* ``nsga2`` -- Optuna's NSGA-II, a genetic algorithm for several objectives (one works too)
  (:mod:`appcore.algorithms.optuna_nsga2`);
* ``cmaes`` -- Optuna's CMA-ES with IPOP restarts, for continuous and integer parameters
  (:mod:`appcore.algorithms.optuna_cmaes`).

Several objectives (``--objective a,b``): ``tpe`` (Optuna's multi-objective TPE), ``nsga2`` and
``qmc``; ``gp`` and ``cmaes`` optimize one. Reported constraints are used by ``tpe`` and
``nsga2`` (Optuna's constrained TPE and NSGA-II) and ignored by the others.

Settings (strings, as ``--tuning-setting KEY=VALUE`` or the dedicated flags):

* ``backend`` (``tpe``): one of :data:`BACKENDS`.
* ``mode`` (``async``): the paper's Table 1 parallel modes. ``async`` suggests as soon as a slot
  frees, with the trials still running accounted for by the backend's constant liar. ``sync``
  suggests a batch of ``parallelism`` assignments at once, then answers ``None`` ("nothing
  now") until every issued member of the batch has ended, then suggests the next batch.
* ``n_startup_trials`` (``10``): results needed before the model is used (random draws before).
* ``warm_start`` (empty): JSON ``{"known": [{"assignment": {...}, "value": v}, ...],
  "points": [{...}, ...]}``, built by ``da-submit --warm-start`` (:func:`warm_start_setting`).
  Known results are told to the model before the first trial (they are not re-run and get no
  trial number); points are issued first, in order, as trials 1, 2, ... (in sync mode, in
  batches of at most ``parallelism``).

Restarts: :meth:`BayesianSearch.restore` replays the job store's trials in number order -- each
one re-registered with the backend as it was issued, then the finished ones told their outcome
-- so the backend's state is the one the original AppCore had, and because every backend's
suggestion depends only on the seed, the trial number and that state, the next ask continues
the original sequence. In sync mode a batch that was only partly issued is suggested again from
the state before it (the same batch) and its remaining members are issued.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import importlib
import importlib.util
import json
import logging
import math
from typing import Any

from disauto.appcore.algorithms._backend import Backend
from disauto.appcore.algorithms._base import Direction
from disauto.appcore.algorithms._base import Finished
from disauto.appcore.algorithms._base import ObjectiveValue
from disauto.appcore.algorithms._base import SearchAlgorithm
from disauto.appcore.algorithms._base import SettingSpec
from disauto.appcore.algorithms._base import TrialRecord
from disauto.common.errors import InvalidAssignmentError
from disauto.common.errors import InvalidSettingsError
from disauto.common.registry import Registry
from disauto.common.setting_values import int_setting
from disauto.common.space import Assignment
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState


__all__ = ["BACKENDS", "MODES", "BayesianSearch", "WarmStart", "warm_start_setting"]

_logger = logging.getLogger(__name__)

BACKENDS: Registry[Backend] = Registry("Bayesian backend", "backends", {
    "tpe": "disauto.appcore.algorithms.optuna_tpe:TPEBackend",
    "gp": "disauto.appcore.algorithms.skopt_gp:GPBackend",
    "qmc": "disauto.appcore.algorithms.optuna_qmc:QMCBackend",
    "nsga2": "disauto.appcore.algorithms.optuna_nsga2:NSGA2Backend",
    "cmaes": "disauto.appcore.algorithms.optuna_cmaes:CmaEsBackend",
}, error=InvalidSettingsError)
"""Backend name to its class, imported on first use."""

MODES = ("async", "sync")
"""The parallel modes (the paper's Table 1)."""


def backend_class(name: str) -> type[Backend]:
    """Return the backend class registered as ``name``, importing its module.

    Args:
        name: A key of :data:`BACKENDS`.

    Returns:
        The class.

    Raises:
        InvalidSettingsError: Naming the backend and the valid ones, or the missing library and
            how to install it.
    """
    return BACKENDS[name]


def _check_available(name: str) -> None:
    cls = backend_class(name)
    if cls.REQUIRES is not None:
        module, how = cls.REQUIRES
        if importlib.util.find_spec(module) is None:
            raise InvalidSettingsError(
                f"backend {name!r} of algorithm 'bayesian' needs the {module!r} package, which "
                f"is not installed: {how}"
            )


def _parse_choice(valid: Sequence[str]) -> Callable[[str], str]:
    """A parser of one of ``valid`` (surrounding blanks allowed)."""

    def parse(raw: str) -> str:
        value = raw.strip()
        if value not in valid:
            raise ValueError(raw)
        return value

    return parse


class WarmStart:
    """The parsed ``warm_start`` setting: known results and points to evaluate first.

    Args:
        known: ``(assignment, value)`` pairs, as JSON gave them (checked against the space by
            :meth:`for_space`).
        points: Assignments to issue first, as JSON gave them.
    """

    def __init__(self, known: Sequence[tuple[Mapping[str, Any], float]],
                 points: Sequence[Mapping[str, Any]]) -> None:
        self.known = list(known)
        self.points = list(points)

    @classmethod
    def parse(cls, raw: str) -> WarmStart:
        """Parse the setting's JSON; raise ``ValueError`` if its shape is wrong."""
        if not raw.strip():
            return cls([], [])
        data = json.loads(raw)
        if not isinstance(data, dict) or set(data) - {"known", "points"}:
            raise ValueError(raw)
        known = data.get("known", [])
        points = data.get("points", [])
        if not isinstance(known, list) or not isinstance(points, list):
            raise ValueError(raw)
        pairs = []
        for item in known:
            if not isinstance(item, dict) or not isinstance(item.get("assignment"), dict):
                raise ValueError(raw)
            value = item.get("value")
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not math.isfinite(value):
                raise ValueError(raw)
            pairs.append((item["assignment"], float(value)))
        if not all(isinstance(point, dict) for point in points):
            raise ValueError(raw)
        return cls(pairs, points)

    def for_space(self, space: SearchSpace) -> tuple[list[tuple[Assignment, float]],
                                                     list[Assignment]]:
        """The known results and points as valid assignments of ``space``.

        JSON has one number type, so a real parameter accepts an integer (``1`` -> ``1.0``) and
        an integer parameter an integral float (``3.0`` -> ``3``).

        Raises:
            InvalidSettingsError: Naming the entry and what is wrong with it.
        """
        known = [(_coerce(space, a, f"known result {i + 1}"), v)
                 for i, (a, v) in enumerate(self.known)]
        points = [_coerce(space, p, f"point {i + 1}") for i, p in enumerate(self.points)]
        return known, points


def _coerce(space: SearchSpace, raw: Mapping[str, Any], what: str) -> Assignment:
    assignment: Assignment = {}
    for name, value in raw.items():
        if name not in space.names:
            raise InvalidSettingsError(
                f"warm start {what}: unknown parameter {name!r}; parameters: "
                f"{', '.join(space.names)}"
            )
        param = space[name]
        if isinstance(param, RealParam) and isinstance(value, int) \
                and not isinstance(value, bool):
            value = float(value)
        elif isinstance(param, IntParam) and isinstance(value, float) and value.is_integer():
            value = int(value)
        elif isinstance(param, CategoricalParam):
            value = next((c for c in param.choices if type(c) is type(value) and c == value)
                         if not isinstance(value, bool) else iter(()), value)
        assignment[name] = value
    try:
        space.validate_assignment(assignment)
    except InvalidAssignmentError as err:
        raise InvalidSettingsError(f"warm start {what}: {err}") from None
    return {param.name: assignment[param.name] for param in space if param.name in assignment}


def warm_start_setting(data: Any, objective: str, direction: Direction) -> str:
    """Build the ``warm_start`` setting from a ``--warm-start`` file's JSON.

    Two shapes are accepted:

    * the ``results.json`` of an earlier DisAuto job: its ``COMPLETED`` trials with an objective
      value become known results (the file's ``objective`` must be this job's; a file of the
      opposite direction is accepted, its values are the same metric);
    * a JSON list of assignments: points to evaluate first, in order.

    Args:
        data: The parsed file.
        objective: This job's objective metric.
        direction: This job's direction (for the error message only).

    Returns:
        The setting's JSON text.

    Raises:
        ValueError: Naming what is wrong with the file's shape.
    """
    if isinstance(data, list):
        if not all(isinstance(point, dict) for point in data):
            raise ValueError("a list of points must hold one object per point, e.g. "
                             '[{"lr": 0.01, "layers": 2}]')
        return json.dumps({"known": [], "points": data}, sort_keys=True)
    if isinstance(data, dict) and isinstance(data.get("trials"), list):
        earlier = data.get("objective")
        if earlier is not None and earlier != objective:
            raise ValueError(f"the results are of objective {earlier!r}, this job "
                             f"{direction}s {objective!r}")
        known = [
            {"assignment": trial["assignment"], "value": trial["objective"]}
            for trial in data["trials"]
            if isinstance(trial, dict) and trial.get("state") == "COMPLETED"
            and isinstance(trial.get("objective"), int | float)
            and isinstance(trial.get("assignment"), dict)
        ]
        return json.dumps({"known": known, "points": []}, sort_keys=True)
    raise ValueError("expected the results.json of an earlier job (an object with \"trials\") "
                     "or a list of points to evaluate first")


def _parse_warm_start(raw: str) -> WarmStart:
    try:
        return WarmStart.parse(raw)
    except (json.JSONDecodeError, TypeError):
        raise ValueError(raw) from None


class BayesianSearch(SearchAlgorithm):
    """Model-based search through a library backend, in sync or async mode (see module doc).

    Never answers :data:`~appcore.algorithms.FINISHED`: the trial budget ends the job. Thread
    safety and call order: as :class:`~appcore.algorithms.SearchAlgorithm`.
    """

    NAME = "bayesian"
    SETTINGS: Mapping[str, SettingSpec] = {
        "backend": SettingSpec(
            default="tpe", parse=_parse_choice(tuple(BACKENDS)),
            valid=f"one of {', '.join(BACKENDS)}",
            help="the library model: Optuna TPE, scikit-optimize GP, Optuna QMC, NSGA-II or "
                 "CMA-ES",
        ),
        "mode": SettingSpec(
            default="async", parse=_parse_choice(MODES), valid="one of async, sync",
            help="async: suggest when a slot frees; sync: batches of --parallelism",
        ),
        "n_startup_trials": int_setting(
            10, 1, "results before the model is used (random draws until then)", high=10_000),
        "tpe_window": int_setting(
            1000, 0, "tpe: the model learns from at most this many finished trials, the best "
            "100 and the most recent (0: every one; docs/benchmarks.md, Scale)",
            high=1_000_000),
        "warm_start": SettingSpec(
            default="", parse=_parse_warm_start,
            valid='JSON {"known": [{"assignment": {...}, "value": v}], "points": [{...}]}',
            help="known results and points to evaluate first (da-submit --warm-start)",
        ),
    }

    def _setup(self) -> None:
        self._sync = self.settings["mode"] == "sync"
        known, self._points = self.settings["warm_start"].for_space(self.space)
        self._backend = backend_class(self.settings["backend"])(
            self.space, seed=self.seed, direction=self.directions,
            n_startup_trials=self.settings["n_startup_trials"],
        )
        if self._backend.model_window is not None:
            self._backend.model_window = self.settings["tpe_window"]
        for assignment, value in known:
            self._backend.add_known(assignment, value)
        self._batch: dict[int, Assignment] = {}  # sync: suggested, not yet issued
        self._untold: set[int] = set()  # issued, not yet told

    @property
    def backend(self) -> str:
        """The backend's name."""
        return str(self.settings["backend"])

    def _batch_size(self, number: int) -> int:
        """The size of the sync batch that starts at trial ``number``."""
        remaining_points = len(self._points) - (number - 1)
        if remaining_points > 0:
            return min(self.parallelism, remaining_points)
        return self.parallelism

    def _fixed(self, numbers: Sequence[int]) -> list[Assignment | None]:
        return [self._points[n - 1] if n - 1 < len(self._points) else None for n in numbers]

    def ask(self, trial_number: int) -> Assignment | None | Finished:
        """Suggest trial ``trial_number``'s assignment, or ``None`` while a sync batch runs.

        Args:
            trial_number: The trial's number (the next unused one).

        Returns:
            The assignment, or ``None`` ("nothing now").

        Raises:
            ValueError: If ``trial_number`` is not a positive int.
        """
        number = self._check_trial_number(trial_number)
        if not self._sync:
            assignment = self._backend.suggest([number], self._fixed([number]))[0]
        elif number in self._batch:
            assignment = self._batch.pop(number)
        elif self._untold or self._batch:
            return None
        else:
            numbers = list(range(number, number + self._batch_size(number)))
            batch = self._backend.suggest(numbers, self._fixed(numbers))
            self._batch = dict(zip(numbers[1:], batch[1:], strict=True))
            assignment = batch[0]
        self._untold.add(number)
        return assignment

    def tell(self, trial_number: int, value: ObjectiveValue | None, state: TrialState,
             constraints: Sequence[float] = ()) -> None:
        """Tell the backend how trial ``trial_number`` ended (see the backends' docs).

        Args:
            trial_number: An asked trial's number.
            value: The objective (completed; a tuple with several), the last intermediate
                value (pruned) or ``None``.
            state: How it ended.
            constraints: The trial's reported constraints (``<= 0``: satisfied).
        """
        if trial_number not in self._untold:
            _logger.debug("bayesian: ignoring a second or unknown tell for trial %d",
                          trial_number)
            return
        self._untold.discard(trial_number)
        self._backend.observe(trial_number, value, state, constraints)

    def restore(self, history: Sequence[TrialRecord]) -> None:
        """Replay the job store's trials into the backend (see the module docstring).

        Args:
            history: Every trial issued so far, sorted by number.
        """
        records = sorted(history, key=lambda record: record.number)
        differing = {1} if self._first_differs(records) else set()
        by_number = {record.number: record for record in records}
        last = records[-1].number if records else 0
        start = 1
        while start <= last:
            size = self._batch_size(start) if self._sync else 1
            numbers = list(range(start, start + size))
            issued = [by_number[n] for n in numbers if n in by_number]
            if self._sync and len(issued) < size:
                # A partly issued batch: suggest it again from the state before it.
                batch = self._backend.suggest(numbers, self._fixed(numbers))
                differing.update(r.number for r, a in zip(issued, batch, strict=False)
                                 if a != r.assignment)
                self._batch = dict(zip(numbers[len(issued):], batch[len(issued):],
                                       strict=True))
            else:
                for record in issued:
                    fixed = self._fixed([record.number])[0]
                    if fixed is not None:
                        self._backend.suggest([record.number], [fixed])
                    elif self._backend.replay(record.number, record.assignment) \
                            != record.assignment:
                        differing.add(record.number)
            for record in issued:
                self._untold.add(record.number)
                if record.state.is_finished():
                    self.tell(record.number, record.value, record.state, record.constraints)
            start += size
        self._warn_if_replay_differs(differing)

    def _first_differs(self, records: Sequence[TrialRecord]) -> bool:
        """Whether trial 1 is not what this search would issue (changed space, seed...)."""
        if not records or records[0].number != 1:
            return False
        fresh = BayesianSearch(self.space, seed=self.seed, direction=self.directions,
                               settings=self._settings_given, parallelism=self.parallelism)
        return fresh.ask(1) != records[0].assignment

    @classmethod
    def notes(cls, space: SearchSpace, settings: Mapping[str, str]) -> tuple[str, ...]:
        """The backend's notes on the space (``cmaes``: the parameters it does not model)."""
        return backend_class(cls.parse_settings(settings)["backend"]).space_notes(space)

    @classmethod
    def _validate_space(
        cls, space: SearchSpace, settings: Mapping[str, Any], max_trials: int | None
    ) -> None:
        _check_available(settings["backend"])
        settings["warm_start"].for_space(space)

    @classmethod
    def _validate_objectives(cls, settings: Mapping[str, Any], count: int) -> None:
        if count == 1:
            return
        name = settings["backend"]
        if not backend_class(name).MULTI_OBJECTIVE:
            several = ", ".join(n for n in BACKENDS if backend_class(n).MULTI_OBJECTIVE)
            raise InvalidSettingsError(
                f"backend {name!r} optimizes one objective; for {count} use one of {several}")
        if settings["warm_start"].known:
            raise InvalidSettingsError(
                "warm start: an earlier job's results teach one objective; a search of "
                f"{count} can start from a list of points only")
