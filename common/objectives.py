"""A search's objectives, and what a trial's result is in their light.

A job optimizes one reported metric (``--objective accuracy``) or several at once
(``--objective accuracy,latency --direction maximize,minimize``). :class:`Objectives` is the one
reading of that from a :class:`~protos.common_pb2.JobSpec`, for everyone who needs it: the
framework (a trial is complete once its final report has every objective), AppCore (what it
tells the search, whether a target is reached), ``da-submit`` and the job page (the Pareto front).

A trial may report ``constraints`` with its result (``apprunner_sdk.report(...,
constraints=[...])``): it is *feasible* when every one is ``<= 0`` (:func:`is_feasible`). An
infeasible trial is never the best and never on the Pareto front.

The Pareto front is Optuna's: the completed, feasible trials no other such trial dominates
(``Study.best_trials`` of an in-memory study holding their values), so the record, the summary
and the job page agree with what an Optuna user would compute.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from typing import Protocol
from typing import TypeAlias

from disauto.common.trial_state import TrialState
from disauto.protos import common_pb2


__all__ = ["Direction", "Objectives", "RecordedTrial", "is_feasible"]

Direction: TypeAlias = Literal["maximize", "minimize"]
"""Whether larger (accuracy) or smaller (loss, latency) values of an objective are better."""

DIRECTIONS: tuple[Direction, ...] = ("maximize", "minimize")


def is_feasible(constraints: Sequence[float] | None) -> bool:
    """Whether a trial with these reported constraints is feasible (all ``<= 0``; none: yes)."""
    if not constraints:  # most trials: no generator (called per trial in every ranking)
        return True
    return all(value <= 0.0 for value in constraints)


class RecordedTrial(Protocol):
    """What a trial of the record must offer for its objectives to be read
    (``framework._store.TrialRow`` does)."""

    @property
    def number(self) -> int: ...

    @property
    def state(self) -> TrialState: ...

    @property
    def metrics(self) -> Mapping[str, float]: ...

    @property
    def constraints(self) -> Sequence[float] | None: ...


def _direction(value: int) -> Direction:
    return "minimize" if value == common_pb2.MINIMIZE else "maximize"


@dataclass(frozen=True)
class Objectives:
    """The objectives of a search, in order, each with its direction (and maybe a target).

    Attributes:
        names: The metrics, at least one, distinct.
        directions: One per name.
        targets: Empty, or one per name: the job ends when a feasible trial reaches them all.

    Raises:
        ValueError: If the three do not fit together.
    """

    names: tuple[str, ...]
    directions: tuple[Direction, ...]
    targets: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not self.names or len(set(self.names)) != len(self.names) or not all(self.names):
            raise ValueError(f"objectives must be distinct non-empty names, got {self.names}")
        if len(self.directions) != len(self.names) or any(
                d not in DIRECTIONS for d in self.directions):
            raise ValueError(f"one direction (maximize or minimize) per objective, got "
                             f"{self.directions} for {self.names}")
        if self.targets and len(self.targets) != len(self.names):
            raise ValueError(f"one target per objective, got {self.targets} for {self.names}")

    @classmethod
    def from_spec(cls, spec: common_pb2.JobSpec) -> Objectives:
        """The objectives a job's spec holds (one: ``objective``; several: ``objectives``)."""
        if spec.objectives:
            return cls(tuple(spec.objectives), tuple(_direction(d) for d in spec.directions),
                       tuple(spec.targets))
        return cls((spec.objective,), (_direction(spec.direction),),
                   (spec.target,) if spec.HasField("target") else ())

    def write_to(self, spec: common_pb2.JobSpec) -> None:
        """Set the spec's objective fields to these objectives."""
        protos = [common_pb2.MINIMIZE if d == "minimize" else common_pb2.MAXIMIZE
                  for d in self.directions]
        spec.objective = self.names[0]
        spec.direction = protos[0]  # type: ignore[assignment]
        del spec.objectives[:], spec.directions[:], spec.targets[:]
        spec.ClearField("target")
        if self.several:
            spec.objectives.extend(self.names)
            spec.directions.extend(protos)  # type: ignore[arg-type]
            spec.targets.extend(self.targets)
        elif self.targets:
            spec.target = self.targets[0]

    @property
    def several(self) -> bool:
        """True for a search of more than one objective."""
        return len(self.names) > 1

    def describe(self) -> str:
        """``accuracy (maximize), latency (minimize)``."""
        return ", ".join(f"{n} ({d})" for n, d in zip(self.names, self.directions, strict=True))

    def missing(self, metrics: Mapping[str, float]) -> list[str]:
        """The objectives ``metrics`` lacks."""
        return [name for name in self.names if name not in metrics]

    def values(self, metrics: Mapping[str, float]) -> tuple[float, ...] | None:
        """Each objective's value in ``metrics``, in order; None unless all are there."""
        if self.missing(metrics):
            return None
        return tuple(float(metrics[name]) for name in self.names)

    def reached(self, values: Sequence[float]) -> bool:
        """Whether ``values`` reach every target (False without targets)."""
        if not self.targets:
            return False
        return all(value >= target if direction == "maximize" else value <= target
                   for value, target, direction in zip(values, self.targets, self.directions,
                                                       strict=True))

    def results(self, trials: Iterable[RecordedTrial]) -> list[tuple[int, tuple[float, ...]]]:
        """``(number, values)`` of every completed, feasible trial with every objective."""
        found = []
        for trial in trials:
            values = self.values(trial.metrics)
            if (trial.state == TrialState.COMPLETED and values is not None
                    and is_feasible(trial.constraints)):
                found.append((trial.number, values))
        return sorted(found)

    def front_points(self, trials: Iterable[RecordedTrial]) -> list[tuple[int, tuple[float, ...]]]:
        """The Pareto front: ``(number, values)`` of the completed, feasible trials no other
        dominates (Optuna's ``Study.best_trials``), by number. With one objective: the trials
        with the best value."""
        results = self.results(trials)
        if not results:
            return []
        if not self.several:  # Optuna's front of one objective, without a study of copies
            pick = max if self.directions[0] == "maximize" else min
            best = pick(values[0] for _, values in results)
            return [(number, values) for number, values in results if values[0] == best]
        import optuna  # only for a front: the SDK side of common never loads it

        if optuna.logging.get_verbosity() < optuna.logging.WARNING:
            optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(directions=list(self.directions))
        study.add_trials([optuna.trial.create_trial(values=list(values),
                                                    user_attrs={"number": number})
                          for number, values in results])
        front = {int(trial.user_attrs["number"]) for trial in study.best_trials}
        return [(number, values) for number, values in results if number in front]

    def front(self, trials: Iterable[RecordedTrial]) -> list[int]:
        """The numbers of the Pareto front's trials (see :meth:`front_points`)."""
        return [number for number, _ in self.front_points(trials)]
