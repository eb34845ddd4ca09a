"""Placement by measured capability: a step every offer policy can take before it plans
(``--policy-setting placement=capability``; docs/placement.md).

Given what the job measured of each agent (:class:`AgentMeasures`), :meth:`Placement.arrange`
splits a batch of offers into those the policy may use, fastest agent first, and those declined
on purpose, each with its filter:

* **excluded**: an agent on which ``placement_failures`` of the job's trial tasks failed for the
  cluster's reasons (lost, agent gone, executor terminated, container start failed; never a
  non-zero exit of the script) within the last ``placement_exclude_seconds`` is avoided until
  that long after its last such failure;
* **saturated**: an agent whose newest ``agent_cpu_utilization`` sample, at most
  ``placement_sample_age`` seconds old, is at or above ``placement_saturation`` gets no more
  trials (the offer exists because Mesos' accounting has room; the measured CPU has none);
* **held for a faster agent**: near the job's end -- when no more trials remain than this job's
  trials on faster agents that are predicted to end, and a new trial there to finish, before a
  trial started on the offered agent would -- the slower agent's offer is declined so that the
  job's last trials do not straggle on it. A hold lasts at most ``placement_patience_seconds``
  without a launch, so a wrong prediction costs little.

The rest are ordered by speed class (an agent's median time ratio, classes a factor
``placement_slower`` apart; an agent not yet measured counts as typical, ratio 1), so a policy
that tries offers in order prefers the faster agents; ``speed_rank`` gives the class to policies
that sort offers themselves (dynamic-plus ranks by it before best fit).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import math
from typing import Any

from disauto.common.setting_values import SettingSpec
from disauto.common.setting_values import int_setting
from disauto.common.setting_values import non_negative_number
from disauto.framework._agent_measures import AgentMeasures
from disauto.framework._agent_measures import AgentRecord
from disauto.framework._offers import OfferView


__all__ = ["MODES", "PLACEMENT_SETTINGS", "Arrangement", "Placement"]

MODES = ("none", "capability")


def _mode(text: str) -> str:
    value = text.strip()
    if value not in MODES:
        raise ValueError(text)
    return value


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 < value <= 1.0:
        raise ValueError(text)
    return value


def _above_one(text: str) -> float:
    value = float(text)
    if not (value > 1.0 and math.isfinite(value)):
        raise ValueError(text)
    return value


PLACEMENT_SETTINGS: Mapping[str, SettingSpec] = {
    "placement": SettingSpec(
        "none", _mode, "'none' or 'capability'",
        "place trials by what the job measured of each agent (docs/placement.md)"),
    "placement_failures": int_setting(
        2, 1, "infrastructure failures of the job's trials on an agent that exclude it"),
    "placement_exclude_seconds": SettingSpec(
        "300", non_negative_number, "a number of seconds >= 0",
        "the window failures are counted in, and how long after the last one an agent stays "
        "excluded"),
    "placement_saturation": SettingSpec(
        "0.9", _share, "a number in (0, 1]",
        "measured agent_cpu_utilization at or above which an agent gets no more trials"),
    "placement_sample_age": SettingSpec(
        "30", non_negative_number, "a number of seconds >= 0",
        "how old a utilisation sample may be and still count"),
    "placement_slower": SettingSpec(
        "1.5", _above_one, "a number > 1",
        "the ratio of trial times at which one agent counts as slower than another"),
    "placement_patience_seconds": SettingSpec(
        "60", non_negative_number, "a number of seconds >= 0",
        "the longest the job holds a slower agent back, without launching, for a faster one"),
    "placement_filter_seconds": SettingSpec(
        "2", non_negative_number, "a number of seconds >= 0",
        "decline filter of an offer held back or declined for saturation"),
}
"""The settings every offer policy accepts for placement (``--policy-setting``)."""


@dataclass
class Arrangement:
    """The offers a policy may plan on, in order, and those declined on purpose."""

    kept: list[OfferView] = field(default_factory=list)
    avoided: dict[str, float] = field(default_factory=dict)
    """Offer id → its decline filter (seconds)."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Offer id → ``excluded``, ``saturated`` or ``held``."""


class Placement:
    """The placement step of one job's policy (state: its counters and the current hold).

    Args:
        settings: the parsed :data:`PLACEMENT_SETTINGS` (other keys are ignored).
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.failures = int(settings["placement_failures"])
        self.exclude_seconds = float(settings["placement_exclude_seconds"])
        self.saturation = float(settings["placement_saturation"])
        self.sample_age = float(settings["placement_sample_age"])
        self.slower = float(settings["placement_slower"])
        self.patience = float(settings["placement_patience_seconds"])
        self.filter_seconds = float(settings["placement_filter_seconds"])
        self._held_since: float | None = None
        self.counts: dict[str, float] = {"placement_excluded": 0, "placement_saturated": 0,
                                         "placement_held": 0, "placement_patience_accepts": 0}

    # -- what one agent's record says ----------------------------------------------------------

    def excluded_until(self, record: AgentRecord, now: float) -> float:
        """Until when the agent is excluded (0: it is not)."""
        recent = [t for t in record.failures if now - t <= self.exclude_seconds]
        if len(recent) < self.failures:
            return 0.0
        return recent[-1] + self.exclude_seconds

    def saturated(self, record: AgentRecord, now: float) -> bool:
        return (record.cpu_utilization is not None
                and now - record.utilization_time <= self.sample_age
                and record.cpu_utilization >= self.saturation)

    @staticmethod
    def ratio(record: AgentRecord) -> float:
        """The agent's time ratio; 1 (typical) until one of the job's trials completed there."""
        return record.time_ratio if record.time_ratio is not None else 1.0

    def speed_rank(self, record: AgentRecord) -> int:
        """The agent's speed class: 0 typical, negative faster, positive slower."""
        return round(math.log(max(self.ratio(record), 1e-9)) / math.log(self.slower))

    # -- a batch of offers ---------------------------------------------------------------------

    def arrange(self, offers: Sequence[OfferView], trials_waiting: int,
                measures: AgentMeasures) -> Arrangement:
        """Split ``offers`` for a job with ``trials_waiting`` trials waiting (see the module
        docstring)."""
        now = measures.now
        result = Arrangement()
        usable: list[OfferView] = []
        for offer in offers:
            record = measures.agent(offer.agent_id)
            until = self.excluded_until(record, now)
            if until > now:
                self._avoid(result, offer, until - now, "excluded")
            elif self.saturated(record, now):
                self._avoid(result, offer, self.filter_seconds, "saturated")
            else:
                usable.append(offer)
        usable.sort(key=lambda o: self.speed_rank(measures.agent(o.agent_id)))
        for offer in usable:
            if trials_waiting and self._hold(offer, measures):
                if self._held_since is None:
                    self._held_since = now
                if now - self._held_since < self.patience:
                    self._avoid(result, offer, self.filter_seconds, "held")
                    continue
                self.counts["placement_patience_accepts"] += 1
            result.kept.append(offer)
        return result

    def launched(self) -> None:
        """The job launched a trial: a hold starts its patience anew."""
        self._held_since = None

    def _avoid(self, result: Arrangement, offer: OfferView, seconds: float, why: str) -> None:
        result.avoided[offer.id] = seconds
        result.reasons[offer.id] = why
        self.counts[f"placement_{why}"] += 1

    def _hold(self, offer: OfferView, measures: AgentMeasures) -> bool:
        """Whether the job's remaining trials all fit, sooner, on faster agents' slots that its
        running trials free (see the module docstring)."""
        base = measures.base_seconds
        if not base:
            return False
        here = self.ratio(measures.agent(offer.agent_id))
        sooner = 0
        for record in measures.agents.values():
            if record.agent_id == offer.agent_id or not record.running_elapsed:
                continue
            if self.excluded_until(record, measures.now) > measures.now or \
                    self.saturated(record, measures.now):
                continue
            ratio = self.ratio(record)
            if here / ratio < self.slower:
                continue
            for elapsed in record.running_elapsed:
                rest = max(0.0, ratio * base - elapsed)
                if rest + ratio * base < here * base:
                    sooner += 1
        return 0 < measures.remaining_trials <= sooner
