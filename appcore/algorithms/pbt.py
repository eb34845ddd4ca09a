"""Population Based Training (``pbt``): Jaderberg et al. 2017, "Population Based Training of
Neural Networks", with the semantics of Ray Tune's ``PopulationBasedTraining``.

Optuna has no PBT, so the schedule is written here; the draws from the prior are Optuna's
(``RandomSampler``, as :mod:`~appcore.algorithms.random` draws them).

The population is the job's ``--parallelism`` trials in flight. Each reports its objective with
a step (``apprunner_sdk.report(..., step=…)``) and saves checkpoints
(``apprunner_sdk.save_checkpoint``). When a trial reports at a step at least
``perturbation_interval`` steps after its last decision (or its start), it is ranked among the
trials in flight by their latest reports:

* **exploit**: if it is in the bottom ``quantile_fraction`` (at least one trial, at most half of
  them), it is stopped (recorded PRUNED, its message naming its replacement) and a *new* trial
  takes its slot, started from the latest checkpoint of a trial of the top quantile chosen at
  random (its ``parent``);
* **explore**: the new trial's assignment is the parent's, each parameter perturbed: with
  probability ``resample_probability`` drawn again from the prior, else a real or integer one
  multiplied by 0.8 or 1.2 (at random; clipped to its range, snapped to its step; an integer
  that would not move moves by one step) and a choice kept.

A trial that ends otherwise (its script completed, failed, or another rule stopped it) is
replaced by a fresh draw from the prior, so the population keeps its size until the trial
budget (``--max-trials``: every trial counts, the exploits' too) is spent; then no trial is
replaced and those in flight run to their end. The new trial resumes from a copy of the
parent's checkpoint (the framework copies it: ``framework/_checkpoints.py``); the record keeps its
lineage (``parent``, the step it resumed from, the parent's assignment).

Determinism: a fresh draw depends on ``(seed, n)`` only; an exploit's parent on
``(seed, trial, step)`` and the explored assignment on ``(seed, n)``, so the same reports in the
same order give the same search. After an AppCore restart the population is rebuilt from the
record (who is in flight, who descends from whom); the latest scores come back with the next
reports, and an exploit decided but not yet submitted is lost (its slot gets a fresh draw).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np
import optuna
from optuna.samplers import RandomSampler

from disauto.appcore.algorithms._base import Finished
from disauto.appcore.algorithms._base import SearchAlgorithm
from disauto.appcore.algorithms._base import SettingSpec
from disauto.appcore.algorithms._base import TrialRecord
from disauto.appcore.algorithms._base import trial_seed
from disauto.appcore.algorithms.random import draw
from disauto.appcore.algorithms.random import from_optuna_value
from disauto.appcore.algorithms.random import suggest
from disauto.appcore.algorithms.random import to_optuna_distribution
from disauto.common.setting_values import int_setting
from disauto.common.space import Assignment
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import Param
from disauto.common.space import RealParam
from disauto.common.space import Value
from disauto.common.trial_state import TrialState


__all__ = ["Exploit", "PopulationBasedTraining", "perturb"]

FACTORS = (0.8, 1.2)
"""What explore multiplies a real or integer parameter by (one of them, at random)."""


def _fraction(text: str) -> float:
    """A number in (0, 0.5]."""
    value = float(text)
    if not 0 < value <= 0.5:
        raise ValueError(text)
    return value


def _probability(text: str) -> float:
    """A number in [0, 1]."""
    value = float(text)
    if not 0 <= value <= 1:
        raise ValueError(text)
    return value


@dataclass(frozen=True)
class Exploit:
    """A decision to replace trial ``replaced`` (stopped at ``step``) by a new trial that
    continues trial ``parent``'s latest checkpoint (``parent_step``: the parent's last report)."""

    replaced: int
    step: int
    parent: int
    parent_step: int


@dataclass
class _Member:
    """A trial of the population in flight: its latest report and its last decision's step.
    A replaced one keeps its place in the ranking, with its last score, until its replacement
    is asked (as Ray's exploited trial keeps its score until it reports again): otherwise the
    next trial to report would be the bottom of a smaller population, and so on down."""

    since: int = 0
    step: int | None = None
    score: float | None = None
    replaced: bool = False


def perturb(param: Param, value: Value, factor: float) -> Value:
    """``value`` of a real or integer ``param`` multiplied by ``factor``, clipped to its range
    and snapped to its step; an integer that would stay moves one step towards ``factor``."""
    if isinstance(param, RealParam):
        moved = min(param.high, max(param.low, float(value) * factor))  # type: ignore[arg-type]
        if param.step is None:
            return moved
        points = param.step_points()
        index = round((moved - param.low) / param.step)
        return points[min(max(index, 0), len(points) - 1)]
    assert isinstance(param, IntParam)
    old = int(value)  # type: ignore[call-overload]
    top = param.high - (param.high - param.low) % param.step
    moved_int = param.low + round((old * factor - param.low) / param.step) * param.step
    if moved_int == old:
        moved_int = old + (param.step if factor > 1 else -param.step)
    return min(top, max(param.low, moved_int))


class PopulationBasedTraining(SearchAlgorithm):
    """Population Based Training (see the module docstring). Settings:

    * ``perturbation_interval`` (default 4): steps between two decisions on a trial;
    * ``quantile_fraction`` (default 0.25): the share of the population that is the bottom
      (replaced) and the top (copied);
    * ``resample_probability`` (default 0.25): the chance that explore draws a parameter from
      the prior instead of perturbing (or, for a choice, keeping) it.

    Trials are ranked by the first objective (what ``report(..., step=…)`` carries, as the
    early-stopping rules read it), in its direction. Thread safety and call order: as
    :class:`~appcore.algorithms.SearchAlgorithm`, with :meth:`intermediate` among the calls.
    """

    NAME = "pbt"
    SETTINGS: Mapping[str, SettingSpec] = {
        "perturbation_interval": int_setting(
            4, 1, "steps between two exploit/explore decisions on a trial"),
        "quantile_fraction": SettingSpec(
            "0.25", _fraction, "a number > 0 and <= 0.5",
            "share of the population replaced (the bottom) and copied (the top)"),
        "resample_probability": SettingSpec(
            "0.25", _probability, "a number from 0 to 1",
            "chance that explore draws a parameter from the prior instead of perturbing it"),
    }

    def _setup(self) -> None:
        if optuna.logging.get_verbosity() < optuna.logging.WARNING:
            optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._distributions = {param.name: to_optuna_distribution(param)
                               for param in self.space}
        self._members: dict[int, _Member] = {}
        self._queue: list[Exploit] = []
        self._assignments: dict[int, Assignment] = {}
        self._parents: dict[int, int] = {}
        self.exploits: dict[int, Exploit] = {}
        """The exploit each new trial came from, by the new trial's number."""

    # -- suggestions ---------------------------------------------------------------------------

    def _trial(self, number: int) -> optuna.Trial:
        """A fresh Optuna trial drawing from the prior, seeded by ``(seed, number)``."""
        study = optuna.create_study(
            sampler=RandomSampler(seed=trial_seed(self.seed, number)), direction=self.direction)
        return study.ask()

    def ask(self, trial_number: int) -> Assignment | None | Finished:
        """The replacement of a trial exploit decided to stop (its parent's assignment,
        explored), else a fresh draw from the prior.

        Raises:
            ValueError: If ``trial_number`` is not a positive int.
        """
        number = self._check_trial_number(trial_number)
        if self._queue:
            exploit = self._queue.pop(0)
            assignment = self._explore(number, self._assignments[exploit.parent])
            self._parents[number] = exploit.parent
            self.exploits[number] = exploit
            replaced = self._members.pop(exploit.replaced, _Member())
            self._members[number] = _Member(since=exploit.parent_step, score=replaced.score)
        else:
            assignment = draw(self._trial(number), self.space, self._distributions)
            self._members[number] = _Member()
        self._assignments[number] = assignment
        return assignment

    def _explore(self, number: int, old: Assignment) -> Assignment:
        """``old`` perturbed (module docstring); parameters it lacks (inactive there) and those
        resampled come from the prior."""
        rng = np.random.default_rng(trial_seed(self.seed, number))
        prior = self._trial(number)
        resample = self.settings["resample_probability"]
        values: Assignment = {}
        for param in self.space.evaluation_order:
            if not self.space.conditions.is_active(param.name, values):
                continue
            redraw = bool(rng.random() < resample)
            factor = float(rng.choice(FACTORS))
            if param.name not in old or redraw:
                values[param.name] = from_optuna_value(
                    param, suggest(prior, param.name, self._distributions[param.name]))
            elif isinstance(param, CategoricalParam):
                values[param.name] = old[param.name]
            else:
                values[param.name] = perturb(param, old[param.name], factor)
        return {name: values[name] for name in self.space.names if name in values}

    def parent_of(self, trial_number: int) -> int | None:
        """The trial whose latest checkpoint trial ``trial_number`` continues, or None."""
        return self._parents.get(trial_number)

    # -- results -------------------------------------------------------------------------------

    def intermediate(self, trial_number: int, step: int, value: float, *,
                     may_replace: bool) -> bool:
        """Record the trial's latest result; True when exploit replaces it (module docstring).
        A value that is not finite, a step not after the latest, or a trial not in flight is
        ignored."""
        member = self._members.get(trial_number)
        if member is None or member.replaced or not math.isfinite(value) or (
                member.step is not None and step <= member.step):
            return False
        member.step, member.score = step, float(value)
        interval = self.settings["perturbation_interval"]
        if not may_replace or step - member.since < interval:
            return False
        member.since = step
        parent = self._exploit_parent(trial_number, step)
        if parent is None:
            return False
        parent_step = self._members[parent].step
        assert parent_step is not None
        self._queue.append(Exploit(trial_number, step, parent, parent_step))
        member.replaced = True
        return True

    def _exploit_parent(self, trial_number: int, step: int) -> int | None:
        """A top-quantile trial for ``trial_number`` to copy when it is in the bottom quantile
        of the trials in flight that reported (ranked by their latest scores), else None."""
        scored = [(member.score, number) for number, member in self._members.items()
                  if member.score is not None]
        size = min(math.ceil(len(scored) * self.settings["quantile_fraction"]),
                   len(scored) // 2)
        if size < 1:
            return None
        best_first = sorted(scored, reverse=self.direction == "maximize")
        bottom = {number for _, number in best_first[-size:]}
        if trial_number not in bottom:
            return None
        top = [number for _, number in best_first[:size] if not self._members[number].replaced]
        if not top:
            return None
        rng = np.random.default_rng(np.random.SeedSequence(self.seed % 2**64,
                                                           spawn_key=(trial_number, step)))
        return int(top[int(rng.integers(len(top)))])

    def tell(self, trial_number: int, value: float | tuple[float, ...] | None,
             state: TrialState, constraints: Sequence[float] = ()) -> None:
        """The trial left the population (its slot is refilled by the next ask; a replaced
        trial's score ranks until its replacement is asked)."""
        member = self._members.get(trial_number)
        if member is not None and not member.replaced:
            del self._members[trial_number]

    def restore(self, history: Sequence[TrialRecord]) -> None:
        """Rebuild the population (the trials in flight), the assignments and the lineage from
        the record; logs trials started from scratch whose draw this search would not give.

        Args:
            history: The job store's trials, sorted by number.
        """
        differing = set()
        for record in history:
            self._assignments[record.number] = dict(record.assignment)
            if record.parent is not None:
                self._parents[record.number] = record.parent
            elif draw(self._trial(record.number), self.space,
                      self._distributions) != record.assignment:
                differing.add(record.number)
            if record.state == TrialState.RUNNING:
                self._members[record.number] = _Member()
        self._warn_if_replay_differs(differing)
