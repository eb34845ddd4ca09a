"""Deadline-aware offer policy after EdgeFlow (seed paper 003; docs/deadlines.md).

Each job predicts its own end from what its record shows -- the measured duration of its ended
trials, the trials still to run and the slots it holds -- and turns that into a *standing*:

* ``min_share``: the fewest trial slots with which the predicted end meets the deadline (the
  paper's minimum satisfying share); a job below it is in tier 0 -- by default (``min_share=jit``)
  only once its slack at full parallelism, ``deadline - end(parallelism)``, is below
  ``jit_margin`` (2) of its trial times, so a job with slack does not push others early (the
  paper, ``min_share=eager``: at once) -- any other in tier 1;
* ``priority = deadline - end(A + 1)``: how far from its deadline the job would end with one
  more slot (the paper's equation 7; >= 0: it then makes it);
* ``gain = end(A) - end(A + 1)``: the time one more slot saves (the paper's rule for the GPUs
  left over after every minimum share: to whoever gains most, ``leftover=gain``);
* ``remaining_work``: the slot-seconds of work left; by default (``leftover=srpt``) tier 1 goes
  to the least first (shortest remaining processing time, what keeps the mean job time low;
  docs/deadlines.md has the figures).

Jobs publish their standing (a FrameworkInfo label, :mod:`framework._peers`) and read the others'.
For each slot of a fitting offer a job asks whether a peer that waits and could use the offer
ranks ahead of it: tier 0 before tier 1; within tier 0 the smaller ``priority`` first (closest to
missing); within tier 1 the least remaining work (or the larger ``gain``) first. If one does,
the job declines the offer with a short filter, so Mesos offers it to the others; once it has
declined for ``patience_seconds`` without launching anything it takes the next fitting offer
anyway, so a stale or wrong standing never holds resources back for long.

Heterogeneous agents: an offer whose agent carries the ``edge_attribute`` is slow (its
``slowdown_attribute`` scalar, default ``edge_slowdown``, multiplies trial times). A job whose
predicted end still meets its deadline on slow agents (``edge_ok``) prefers them and leaves
fast agents to jobs that need them (the paper's offloading rule 2); a job that would miss its
deadline on slow agents declines them; a job that misses it whatever it gets (infeasible), or
has no deadline, takes slow agents first (rule 3).

Thread safety: :meth:`DeadlinePolicy.observe`, :meth:`plan` and :meth:`standing` are called from
the pymesos IO thread and the peer publisher; the standing is an immutable snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace
import math
import statistics
from typing import Any
from typing import ClassVar

from disauto.common.resources import Resources
from disauto.common.setting_values import non_negative_number
from disauto.framework._offers import OfferView
from disauto.framework._offers import fit
from disauto.framework.policies._base import JobProgress
from disauto.framework.policies._base import LaunchRequest
from disauto.framework.policies._base import OfferPolicy
from disauto.framework.policies._base import Plan
from disauto.framework.policies._base import PolicySetting


__all__ = ["DeadlinePolicy", "Standing", "needs_share_now", "offer_slowdown", "predict_end",
           "rank_key", "remaining_work", "standing_of", "work_class"]

INF = math.inf


@dataclass(frozen=True)
class Standing:
    """What a job publishes to the others and ranks itself by (see the module docstring)."""

    job: str = ""
    deadline: float = 0.0
    """Seconds since the epoch; 0: none."""
    tier: int = 1
    priority: float = INF
    gain: float = 0.0
    waiting: int = 0
    held: int = 0
    min_share: int = 0
    feasible: bool = True
    """Whether the deadline can be met with at most ``parallelism`` fast slots."""
    edge_ok: bool = True
    """Whether the deadline is still met on slow agents (always true without a deadline)."""
    predicted_end: float = INF
    next_end: float = INF
    """The predicted end with one more slot, ``end(A + 1)``; tier 1's order under
    ``leftover=finish``."""
    remaining_work: float = INF
    """Slot-seconds of work left (running trials' rest + trials to start x trial time); INF:
    not measured yet. Tier 1's order under ``leftover=srpt``."""
    cpus: float = 0.0
    mem_mb: float = 0.0
    gpus: int = 0
    updated: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {key: (None if isinstance(value, float) and math.isinf(value) else value)
                for key, value in self.__dict__.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Standing:
        known = cls.__dataclass_fields__
        values = {key: value for key, value in data.items() if key in known}
        for key in ("priority", "gain", "predicted_end", "next_end", "remaining_work"):
            if key in values and values[key] is None:
                values[key] = INF
        return cls(**values)

    def wants(self, offer: Resources) -> bool:
        """Whether this job waits for a slot and one of its trials fits ``offer``."""
        if self.waiting <= 0:
            return False
        if self.gpus > 0 and offer.scalar("gpus") < self.gpus:
            return False
        return offer.scalar("cpus") + 1e-9 >= self.cpus and \
            offer.scalar("mem") + 1e-9 >= self.mem_mb


# -- the prediction (pure) ------------------------------------------------------------------------

def trial_seconds(progress: JobProgress) -> float | None:
    """The mean measured duration of the job's ended trials on a fast agent, or None."""
    if progress.durations:
        return statistics.fmean(progress.durations)
    return None


def remaining_work(progress: JobProgress, seconds: float, slowdown: float = 1.0) -> float:
    """Slot-seconds of work the job has left: its running trials' expected rest plus every trial
    still to start (x ``slowdown``)."""
    rests = sum(max(0.0, seconds - elapsed) for elapsed in progress.running_elapsed)
    return rests + progress.remaining_trials * seconds * slowdown


def predict_end(progress: JobProgress, slots: int, seconds: float,
                slowdown: float = 1.0) -> float:
    """When the job ends with ``slots`` slots and trials of ``seconds`` (new ones x ``slowdown``).

    A fluid estimate: the work left (:func:`remaining_work`) spread over the slots, never
    shorter than the longest running trial's rest nor than one new trial.
    """
    rests = [max(0.0, seconds - elapsed) for elapsed in progress.running_elapsed]
    if not rests and progress.remaining_trials <= 0:
        return progress.now
    if slots <= 0:
        return INF
    span = remaining_work(progress, seconds, slowdown) / slots
    floor = max(rests, default=0.0)
    if progress.remaining_trials > 0:
        floor = max(floor, seconds * slowdown)
    return progress.now + max(span, floor)


def standing_of(progress: JobProgress, held: int, waiting: int, *, edge_slowdown: float,
                safety: float, job: str = "", jit_margin: float | None = None) -> Standing:
    """A job's standing holding ``held`` slots with ``waiting`` trials waiting.

    ``jit_margin``: None, the paper's rule (a feasible job below its minimum share is in tier
    0); a number m, "just in time" -- only once its slack at full parallelism,
    ``deadline - end(parallelism)``, is below m trial times (see :func:`needs_share_now`).
    """
    base = Standing(job=job, deadline=progress.deadline, held=held, waiting=waiting,
                    cpus=progress.cpus, mem_mb=progress.mem_mb, gpus=progress.gpus,
                    updated=progress.now)
    seconds = trial_seconds(progress)
    if seconds is None:
        # Nothing measured yet: one slot to learn the trial time, the closest deadline first.
        left = progress.deadline - progress.now if progress.deadline else INF
        return replace(base, tier=0 if held < 1 else 1, min_share=1, priority=left,
                       gain=INF if held < 1 else 0.0)
    seconds *= safety
    end_now = predict_end(progress, held, seconds)
    end_more = predict_end(progress, held + 1, seconds)
    gain = end_now - end_more if math.isfinite(end_now) else INF
    base = replace(base, gain=gain, predicted_end=end_now, next_end=end_more,
                   remaining_work=remaining_work(progress, seconds))
    if not progress.deadline:
        return replace(base, tier=1)
    most = max(progress.parallelism, held)
    share = next((a for a in range(1, most + 1)
                  if predict_end(progress, a, seconds) <= progress.deadline), 0)
    feasible = share > 0
    edge_ok = predict_end(progress, max(held, 1), seconds, edge_slowdown) <= progress.deadline
    urgent = jit_margin is None or needs_share_now(progress, seconds, most, jit_margin)
    tier = 0 if feasible and held < share and urgent else 1
    return replace(base, tier=tier, priority=progress.deadline - end_more, min_share=share,
                   feasible=feasible, edge_ok=edge_ok)


def needs_share_now(progress: JobProgress, seconds: float, most: int, margin: float) -> bool:
    """Whether a deadline job must claim its minimum share now ("just in time"): its slack with
    ``most`` slots, ``deadline - end(most)``, is below ``margin`` trials of ``seconds``. A job
    with more slack could wait that long idle and still make it, so it does not yet push jobs
    that would end sooner out of the way."""
    return progress.deadline - predict_end(progress, most, seconds) < margin * seconds


LEFTOVER = ("gain", "srpt", "finish")
"""Tier 1's orders: the paper's largest ``gain`` first, or the least ``remaining_work``."""
MIN_SHARE = ("eager", "jit")
"""When a deadline job below its share enters tier 0: at once (the paper) or just in time."""


def at_least_one(text: str) -> float:
    """A finite number ``>= 1``."""
    value = non_negative_number(text)
    if value < 1.0:
        raise ValueError(text)
    return value


def one_of(names: Sequence[str]) -> Callable[[str], str]:
    """A parser of one of ``names`` (surrounding blanks allowed)."""

    def parse(text: str) -> str:
        if text.strip() not in names:
            raise ValueError(text)
        return text.strip()

    return parse


def rank_key(standing: Standing, leftover: str = "gain", band: float = 1.0
             ) -> tuple[float, float, float]:
    """Smaller goes first: tier, then (tier 0) the smaller priority or (tier 1) by ``leftover``:
    the larger gain (``"gain"``), the least remaining work (``"srpt"``; with ``band`` > 1 works
    within the same power of ``band`` count as equal and the sooner ``next_end`` goes first),
    or the sooner ``next_end`` (``"finish"``)."""
    if standing.tier == 0:
        return (0.0, standing.priority, -standing.gain)
    if leftover == "srpt":
        return (1.0, work_class(standing.remaining_work, band), -standing.gain)
    if leftover == "finish":
        return (1.0, standing.next_end, -standing.gain)
    return (1.0, -standing.gain, standing.priority)


def work_class(work: float, band: float) -> float:
    """``work`` itself (``band`` <= 1), or the power of ``band`` it falls in: estimates of
    remaining work are rough, so works within a factor of ``band`` rank as equal."""
    if band <= 1.0 or not math.isfinite(work):
        return work
    return float(math.floor(math.log(max(work, 1.0), band)))


def offer_slowdown(offer: OfferView, edge_attribute: str, slowdown_attribute: str,
                   default: float) -> float:
    """1 for a fast agent; the agent's slowdown for one carrying ``edge_attribute``."""
    name, _, value = edge_attribute.partition(":")
    found: dict[str, Any] = {}
    for attribute in offer.raw.get("attributes", []) or []:
        kind = attribute.get("type", "")
        if kind == "SCALAR":
            found[attribute.get("name", "")] = float(attribute.get("scalar", {}).get("value", 0))
        elif kind == "TEXT":
            found[attribute.get("name", "")] = str(attribute.get("text", {}).get("value", ""))
    if name not in found or (value and str(found[name]) != value):
        return 1.0
    slow = found.get(slowdown_attribute)
    return float(slow) if isinstance(slow, float) and slow >= 1.0 else default


# -- the policy -----------------------------------------------------------------------------------

class DeadlinePolicy(OfferPolicy):
    """Deadline-aware placement after EdgeFlow (see the module docstring).

    Args:
        decline_seconds: the decline filter for an offer no waiting task fits.
        settings: see :attr:`SETTINGS`.
        runner: the job's trial resources (published, so that peers know what fits).
    """

    NAME = "deadline"
    uses_progress = True
    SETTINGS: ClassVar[Mapping[str, PolicySetting]] = {
        "decline_filter_seconds": PolicySetting(
            "1", non_negative_number, "a number of seconds >= 0",
            "refuse_seconds of an offer declined for a peer that ranks ahead"),
        "patience_seconds": PolicySetting(
            "30", non_negative_number, "a number of seconds >= 0",
            "longest time a job declines fitting offers for peers before it takes one anyway "
            "(a bound on a stale or wrong standing)"),
        "safety": PolicySetting(
            "1.1", non_negative_number, "a number >= 0",
            "factor on the measured trial time in every prediction (margin for noise)"),
        "edge_attribute": PolicySetting(
            "class:edge", str, "NAME or NAME:VALUE",
            "the agent attribute that marks a slow (edge) agent"),
        "slowdown_attribute": PolicySetting(
            "slowdown", str, "an attribute name",
            "the scalar agent attribute giving a slow agent's slowdown factor"),
        "edge_slowdown": PolicySetting(
            "2", non_negative_number, "a number >= 1",
            "slowdown assumed for a slow agent that does not publish one"),
        "leftover": PolicySetting(
            "srpt", one_of(LEFTOVER), "gain or srpt",
            "order of tier 1 (slots beyond the minimum shares): the largest gain of one more "
            "slot first (the paper) or the least remaining work first (srpt)"),
        "srpt_band": PolicySetting(
            "1", at_least_one, "a number >= 1",
            "leftover=srpt: remaining works within the same power of this factor rank as equal "
            "(then the sooner end with one more slot first); 1: exact"),
        "min_share": PolicySetting(
            "jit", one_of(MIN_SHARE), "eager or jit",
            "when a deadline job below its minimum share enters tier 0: at once (eager, the "
            "paper) or once its slack at full parallelism is below jit_margin trials (jit)"),
        "jit_margin": PolicySetting(
            "2", non_negative_number, "a number >= 0",
            "min_share=jit: the slack, in the job's trial times, below which it claims its share"),
    }

    def _setup(self) -> None:
        self._progress: JobProgress | None = None
        self._peers: tuple[Standing, ...] = ()
        self._standing = Standing()
        self._declining_since: float | None = None  # when the current run of declines began
        self._seen_edge = False
        self._agents: dict[str, float] = {}  # agent id -> its slowdown, from its offers
        self._counts: dict[str, float] = {
            "accepts": 0, "peer_declines": 0, "edge_declines": 0, "fast_declines": 0,
            "patience_accepts": 0, "edge_launches": 0,
        }

    # -- inputs -------------------------------------------------------------------------------

    def observe(self, progress: JobProgress, peers: Sequence[Standing] = ()) -> None:
        """The job's progress and the other jobs' standings, before each :meth:`plan`."""
        self._progress = progress
        self._peers = tuple(p for p in peers if p.job != progress.job)
        self._standing = self._standing_at(len(progress.running_elapsed), progress.waiting)

    def standing(self) -> Standing:
        """What this job publishes (its standing at the last :meth:`plan` or :meth:`observe`)."""
        return self._standing

    def stats(self) -> dict[str, float]:
        own = self._standing
        return {**self._counts, "min_share": float(own.min_share), "tier": float(own.tier),
                "feasible": float(own.feasible), "edge_ok": float(own.edge_ok)}

    def agent_slowdown(self, agent_id: str) -> float:
        return self._agents.get(agent_id, 1.0)

    def _standing_at(self, held: int, waiting: int) -> Standing:
        if self._progress is None:
            return Standing(tier=1, waiting=waiting, held=held)
        jit = self.settings["min_share"] == "jit"
        return standing_of(self._progress, held, waiting,
                           edge_slowdown=float(self.settings["edge_slowdown"]),
                           safety=float(self.settings["safety"]), job=self._progress.job,
                           jit_margin=float(self.settings["jit_margin"]) if jit else None)

    def _slowdown(self, offer: OfferView) -> float:
        return offer_slowdown(offer, str(self.settings["edge_attribute"]),
                              str(self.settings["slowdown_attribute"]),
                              max(1.0, float(self.settings["edge_slowdown"])))

    # -- planning -----------------------------------------------------------------------------

    def plan(self, offers: Sequence[OfferView], requests: Sequence[LaunchRequest]) -> Plan:
        result = Plan()
        trials = [r for r in requests if r.trial_number is not None]
        held = len(self._progress.running_elapsed) if self._progress else 0
        self._standing = self._standing_at(held, len(trials))
        slow = {offer.id: self._slowdown(offer) for offer in offers}
        self._agents.update({offer.agent_id: slow[offer.id] for offer in offers})
        self._seen_edge = self._seen_edge or any(s > 1.0 for s in slow.values())
        remaining = list(requests)
        for offer in self._order(offers, slow):
            left = offer.available
            for request in list(remaining):
                claim = self._claim(offer, left, request)
                if claim is None:
                    continue
                if request.trial_number is not None:
                    reason = self.decline_reason(left, slow[offer.id], held)
                    if reason and self._patient():
                        self._counts[reason] += 1
                        break
                    if reason:
                        self._counts["patience_accepts"] += 1
                    held += 1
                    self._counts["edge_launches"] += slow[offer.id] > 1.0
                left = left - claim
                result.launches.setdefault(offer.id, []).append((request, claim))
                remaining.remove(request)
                self._declining_since = None
            if offer.id in result.launches:
                self._counts["accepts"] += 1
            elif any(self._claim(offer, offer.available, r) is not None for r in remaining):
                result.refuse_seconds[offer.id] = float(self.settings["decline_filter_seconds"])
                result.deliberate.add(offer.id)
            else:
                result.refuse_seconds[offer.id] = self.decline_seconds
        waiting = sum(1 for r in remaining if r.trial_number is not None)
        self._standing = self._standing_at(held, waiting)
        return result

    def _patient(self) -> bool:
        """Whether the job may still decline for peers (``patience_seconds`` since the first
        decline of this run, counted on the job's own clock, the progress' ``now``)."""
        now = self._progress.now if self._progress is not None else 0.0
        if self._declining_since is None:
            self._declining_since = now
        return now - self._declining_since < float(self.settings["patience_seconds"])

    @staticmethod
    def _claim(offer: OfferView, left: Resources, request: LaunchRequest) -> Resources | None:
        if request.resources.gpus > 0 and not offer.has_gpus:
            return None
        return fit(left, request.resources, request.ports)

    def _order(self, offers: Sequence[OfferView], slow: Mapping[str, float]) -> list[OfferView]:
        """Slow agents first for a job that may use them, fast ones first for any other; CPU
        work tries agents without GPUs first."""
        own = self._standing
        slow_first = own.edge_ok or not own.feasible
        wants_gpus = self._progress is not None and self._progress.gpus > 0
        return sorted(offers, key=lambda o: ((slow[o.id] > 1.0) != slow_first,
                                             o.has_gpus != wants_gpus))

    def decline_reason(self, offer: Resources, slowdown: float, held: int) -> str:
        """Why this job should leave one more slot of ``offer`` to others ("" : take it).

        ``edge_declines``: a slow agent would make the job miss a deadline it can still meet;
        ``fast_declines``: the job meets its deadline on slow agents (or cannot meet it at all)
        and a peer below its minimum share that would miss its deadline on slow agents waits;
        ``peer_declines``: a peer that waits and fits
        ranks ahead (tier, priority, gain).
        """
        own = self._standing_at(held, max(1, self._standing.waiting))
        slow = slowdown > 1.0
        if slow and own.deadline and own.feasible and not own.edge_ok:
            return "edge_declines"
        rivals = [p for p in self._peers if p.wants(offer) and
                  (not slow or p.edge_ok or not p.feasible)]
        if not slow and self._seen_edge and (own.edge_ok or not own.feasible) and any(
                p.deadline and p.tier == 0 and not p.edge_ok for p in rivals):
            return "fast_declines"
        leftover = str(self.settings["leftover"])
        band = float(self.settings["srpt_band"])
        mine = rank_key(own, leftover, band)
        if any(rank_key(p, leftover, band) < mine for p in rivals):
            return "peer_declines"
        return ""
