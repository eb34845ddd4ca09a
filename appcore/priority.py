"""The paper's Algorithm 1: a job whose results have stopped improving lowers its own priority.

Li, Lu, Sun (2019), §2.2. AppCore feeds every completed trial's objective to a
:class:`ConvergencePriority`; the priority it holds is sent with each trial AppCore submits
(``SubmitTrialRequest.priority``), and the framework's dynamic offer policy
(:mod:`framework.policies.dynamic`) declines more offers the larger it is. 0 is the highest
priority; the paper's ``P + 1`` "lowers the priority of the next job".

Algorithm 1, as implemented (one evaluation per completed result)::

    if n > k * m:                              # n results so far
        F = results sorted best first
        g = min(|F[i] - F[i+1]| for i < m - 1)  # smallest gap among the top m
        if g < G or g ≈ g':                     # G: current threshold; g': mean of earlier g's
            P = P + 1; j = j + 1; G = G_j       # lower the priority, move to the next threshold
        remember g (for g')

Where the paper is silent (see docs/dynamic-priority.md):

* ``n`` counts *completed results* (trials with an objective), not tasks started.
* ``g ≈ g'`` means ``|g - g'| <= tolerance * |g'|``; ``g'`` is the mean of the ``g`` of every
  earlier evaluation (none at the first one, so only ``g < G`` can fire then).
* The threshold sequence ``G_0, G_1, ...`` is finite: after ``len(thresholds)`` drops there is no
  next threshold and the priority stays where it is, so the sequence's length is the lowest
  priority a job can reach.
* Only AppCore lowers the priority; raising it again when the cluster is idle is the framework's
  half of the strategy (the paper: "the framework raises the job's priority").

Thread safety: not thread-safe; AppCore's trial loop calls it under its lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
import math
import statistics

from disauto.common.errors import InvalidSettingsError
from disauto.common.setting_values import SettingSpec
from disauto.common.setting_values import int_setting
from disauto.common.setting_values import non_negative_number
from disauto.common.setting_values import parse_settings
from disauto.common.setting_values import positive_numbers


__all__ = [
    "SETTINGS",
    "ConvergencePriority",
    "Evaluation",
    "FixedPriority",
    "PrioritySettings",
    "parse_priority_settings",
    "priority_for",
]


#: AppCore's settings of the strategy (``--priority-setting NAME=VALUE``), with their defaults.
SETTINGS: Mapping[str, SettingSpec] = {
    "k": int_setting(2, 1, "Algorithm 1 waits for more than k*m results before it evaluates"),
    "m": int_setting(5, 2, "how many of the best results are compared (their smallest gap is g)"),
    "thresholds": SettingSpec(
        "0.01,0.005,0.0025", positive_numbers, "comma-separated numbers > 0, e.g. 0.01,0.005",
        "the threshold sequence G_0,G_1,... in objective units; its length is the lowest "
        "priority a job reaches"),
    "tolerance": SettingSpec("0.1", non_negative_number, "a number >= 0",
                             "g ~ g' when |g - g'| <= tolerance * |g'| (relative)"),
}


@dataclass(frozen=True)
class PrioritySettings:
    """Algorithm 1's constants (defaults in :data:`SETTINGS`).

    Attributes:
        k: evaluate once more than ``k * m`` results are in.
        m: the number of best results whose smallest neighbour gap is ``g``.
        thresholds: ``G_0, G_1, ...``; a drop moves from ``G_j`` to ``G_{j+1}``.
        tolerance: relative tolerance of ``g ≈ g'``.
    """

    k: int = 2
    m: int = 5
    thresholds: tuple[float, ...] = (0.01, 0.005, 0.0025)
    tolerance: float = 0.1

    @property
    def lowest(self) -> int:
        """The largest priority number Algorithm 1 can reach (one per threshold)."""
        return len(self.thresholds)


def parse_priority_settings(settings: Mapping[str, str]) -> PrioritySettings:
    """Read AppCore's settings out of the strategy's ``NAME=VALUE`` settings.

    Names that are not AppCore's (the framework's decline schedule and idle test) are skipped:
    ``da-submit`` checks every name against both halves before the job starts.

    Args:
        settings: every setting of the strategy (AppCore's and the framework's).

    Returns:
        The settings, defaults filled in.

    Raises:
        InvalidSettingsError: naming the setting, its value and what would be valid.
    """
    own = {name: text for name, text in settings.items() if name in SETTINGS}
    values = parse_settings(SETTINGS, own, owner="the dynamic priority strategy",
                            error=InvalidSettingsError)
    return PrioritySettings(**values)


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of Algorithm 1 (for logs and tests).

    Attributes:
        results: ``n``, the number of results at this evaluation.
        gap: ``g``, the smallest gap among the best ``m`` results.
        mean_gap: ``g'``, the mean of the earlier evaluations' ``g`` (None at the first).
        threshold: ``G``, the threshold ``g`` was compared with.
        lowered: whether the priority dropped (``P + 1``).
        priority: ``P`` after the evaluation.
    """

    results: int
    gap: float
    mean_gap: float | None
    threshold: float
    lowered: bool
    priority: int


class FixedPriority:
    """Priority 0 for every trial: the strategy is off (an offer policy that ignores priority)."""

    priority = 0

    def tell(self, value: float) -> Evaluation | None:
        """Ignore a result."""
        return None


class ConvergencePriority:
    """Algorithm 1 over the results of one job (see the module docstring).

    Args:
        settings: the constants k, m, the thresholds and the tolerance.
        maximize: whether larger objective values are better ("best first").
    """

    def __init__(self, settings: PrioritySettings | None = None, *, maximize: bool = True) -> None:
        self.settings = settings or PrioritySettings()
        self._maximize = maximize
        self._results: list[float] = []
        self._gaps: list[float] = []
        self._level = 0  # j: the index of the current threshold G_j
        self.priority = 0
        self.evaluations: list[Evaluation] = []

    @property
    def threshold(self) -> float | None:
        """The current threshold ``G``, or None once the sequence is used up."""
        if self._level >= len(self.settings.thresholds):
            return None
        return self.settings.thresholds[self._level]

    def tell(self, value: float) -> Evaluation | None:
        """Record a completed trial's objective and evaluate; the evaluation, if there was one.

        Non-finite values are ignored (the framework never records them).
        """
        if not math.isfinite(value):
            return None
        self._results.append(float(value))
        k, m = self.settings.k, self.settings.m
        if len(self._results) <= k * m:
            return None
        best = sorted(self._results, reverse=self._maximize)[:m]
        gap = min(abs(best[i] - best[i + 1]) for i in range(m - 1))
        mean_gap = statistics.fmean(self._gaps) if self._gaps else None
        self._gaps.append(gap)
        threshold = self.threshold
        lowered = False
        if threshold is not None:
            close = mean_gap is not None and abs(gap - mean_gap) <= \
                self.settings.tolerance * abs(mean_gap)
            if gap < threshold or close:
                self.priority += 1
                self._level += 1
                lowered = True
        evaluation = Evaluation(len(self._results), gap, mean_gap,
                                threshold if threshold is not None else math.nan,
                                lowered, self.priority)
        self.evaluations.append(evaluation)
        return evaluation


def priority_for(
    enabled: bool, settings: Mapping[str, str], *, maximize: bool,
    history: Iterable[float] = (),
) -> ConvergencePriority | FixedPriority:
    """The job's priority source: Algorithm 1 when ``enabled``, else :class:`FixedPriority`.

    Args:
        enabled: ``JobSpec.dynamic_priority``.
        settings: ``JobSpec.priority_settings``.
        maximize: the objective's direction.
        history: objectives of the trials completed before this AppCore attached, in trial
            order; they are replayed so a relaunched AppCore resumes at the same priority
            (up to the order in which results arrived, which the record does not keep).

    Raises:
        InvalidSettingsError: for an unknown or invalid setting.
    """
    if not enabled:
        return FixedPriority()
    tracker = ConvergencePriority(parse_priority_settings(settings), maximize=maximize)
    for value in history:
        tracker.tell(value)
    return tracker
