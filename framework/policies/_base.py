"""The offer-policy interface: the framework's second-level scheduling.

A policy receives the offers of one ``resourceOffers`` callback and the tasks waiting to launch,
and answers which tasks to launch on which offer and how long to refuse the rest. It neither calls
the driver nor mutates the requests or offers.

One policy instance serves one job for the job's whole life, so a policy may keep state across
calls: the dynamic priority policy counts the offers it declined and remembers what each agent
offered, to notice an idle cluster. Its decisions are counted in events (offers), not in time:
the master's allocation interval and decline filters set the pace.

Thread safety: the scheduler calls a policy from the pymesos IO thread only; :meth:`stats` may be
read from another thread (it returns a copy).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import ClassVar

from disauto.common.resources import Resources
from disauto.common.setting_values import Configurable
from disauto.common.setting_values import SettingSpec
from disauto.framework._agent_measures import AgentMeasures
from disauto.framework._offers import OfferView
from disauto.framework._spec import TaskResources
from disauto.framework.policies.placement import PLACEMENT_SETTINGS
from disauto.framework.policies.placement import Placement


@dataclass(frozen=True)
class LaunchRequest:
    """A task waiting for resources: AppCore or a trial."""

    key: str
    """``appcore`` or ``trial-NNNN``."""
    resources: TaskResources
    ports: int = 0
    priority: int = 0
    trial_number: int | None = None


@dataclass(frozen=True)
class JobProgress:
    """What a job's record shows of its progress, for policies that predict its end."""

    now: float
    """Wall-clock seconds since the epoch."""
    job: str = ""
    deadline: float = 0.0
    """Seconds since the epoch (``--deadline``); 0: none."""
    parallelism: int = 1
    remaining_trials: float = 0.0
    """Trials still to start (an estimate for a job with a target; docs/deadlines.md)."""
    running_elapsed: tuple[float, ...] = ()
    """Seconds each launched, unfinished trial has run (its slots: the job's share)."""
    durations: tuple[float, ...] = ()
    """Measured durations of ended trials, divided by their agent's slowdown."""
    waiting: int = 0
    """Trials waiting for a slot (pending in the record)."""
    cpus: float = 0.0
    mem_mb: float = 0.0
    gpus: int = 0


@dataclass
class Plan:
    """A policy's answer for one batch of offers."""

    launches: dict[str, list[tuple[LaunchRequest, Resources]]] = field(default_factory=dict)
    """Offer id → the requests to launch on it with the resources each claims."""
    refuse_seconds: dict[str, float] = field(default_factory=dict)
    """Offer id → the decline filter for offers not launched on (default: ``decline_seconds``)."""
    deliberate: set[str] = field(default_factory=set)
    """Offers declined on purpose although a waiting task fits them (priority, placement): the
    scheduler keeps their filter. Any other offer that a waiting task fits is declined without a
    filter, so it comes back at the next allocation run."""


PolicySetting = SettingSpec
"""One setting a policy accepts (``--policy-setting NAME=VALUE``)."""


class PolicySettingsError(ValueError):
    """A policy setting is unknown or invalid; the message names it and what would be valid."""


class OfferPolicy(Configurable, abc.ABC):
    """Decides which offers to accept for which waiting tasks.

    Args:
        decline_seconds: the decline filter for an offer that no waiting task fits.
        settings: the policy's settings by name, as strings (see :attr:`SETTINGS`).
        runner: the resources of one trial of the job (policies that plan placement use it).

    Raises:
        PolicySettingsError: for a setting the policy does not have or an invalid value.
    """

    KIND = "offer policy"
    SETTINGS_ERROR = PolicySettingsError
    uses_priority: ClassVar[bool] = False
    """Whether the policy reads trial priorities (AppCore then runs Algorithm 1)."""
    uses_progress: ClassVar[bool] = False
    """Whether the policy reads the job's progress and its peers' standings (:meth:`observe`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Placement is a step of every policy: each accepts its settings.
        cls.SETTINGS = {**cls.SETTINGS, **PLACEMENT_SETTINGS}

    def __init__(
        self,
        decline_seconds: float = 5.0,
        *,
        settings: Mapping[str, str] | None = None,
        runner: TaskResources | None = None,
    ) -> None:
        self.decline_seconds = decline_seconds
        self.settings = self.parse_settings(settings or {})
        self.runner = runner
        self.placement: Placement | None = (
            Placement(self.settings) if self.settings["placement"] == "capability" else None)
        """The placement step (``placement=capability``), or None."""
        self._measures: AgentMeasures | None = None
        self._setup()

    def _setup(self) -> None:  # noqa: B027 -- an optional hook: most policies need none
        """Build the policy's own state once the common fields are set (instead of overriding
        ``__init__``)."""

    def observe(self, progress: JobProgress, peers: Sequence[Any] = ()) -> None:  # noqa: B027
        """The job's progress and the other jobs' published standings, before each :meth:`plan`
        (only for policies with :attr:`uses_progress`; default: ignored)."""

    def observe_agents(self, measures: AgentMeasures) -> None:
        """What the job measured of each agent, before each :meth:`place` (only read with a
        :attr:`placement` step)."""
        self._measures = measures

    def speed_rank(self, agent_id: str) -> int:
        """The agent's measured speed class for policies that sort offers themselves (0 without
        placement or measurements; negative: faster)."""
        if self.placement is None or self._measures is None:
            return 0
        return self.placement.speed_rank(self._measures.agent(agent_id))

    def place(self, offers: Sequence[OfferView], requests: Sequence[LaunchRequest]) -> Plan:
        """:meth:`plan`, after the placement step where there is one: the offers it avoids are
        declined on purpose with its filters; the rest go to :meth:`plan` fastest first."""
        if self.placement is None or self._measures is None:
            return self.plan(offers, requests)
        waiting = sum(1 for r in requests if r.trial_number is not None)
        arranged = self.placement.arrange(offers, waiting, self._measures)
        result = self.plan(arranged.kept, requests)
        for offer_id, seconds in arranged.avoided.items():
            result.refuse_seconds[offer_id] = seconds
            result.deliberate.add(offer_id)
        if any(r.trial_number is not None for launches in result.launches.values()
               for r, _ in launches):
            self.placement.launched()
        return result

    def placement_stats(self) -> dict[str, float]:
        """The placement step's counters (empty without one)."""
        return dict(self.placement.counts) if self.placement is not None else {}

    def agent_slowdown(self, agent_id: str) -> float:
        """How much slower than a fast agent trials run on ``agent_id`` (1: as fast)."""
        return 1.0

    def standing(self) -> Any:
        """What the job publishes to the other jobs (a FrameworkInfo label); default none."""
        return None

    @abc.abstractmethod
    def plan(self, offers: Sequence[OfferView], requests: Sequence[LaunchRequest]) -> Plan:
        """Assign waiting requests (in priority order) to offers."""

    def stats(self) -> dict[str, float]:
        """Counters of the policy's decisions, for the job's record (a copy; default none)."""
        return {}
