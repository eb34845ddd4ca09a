"""The parts of the embedded master and what each offers the others: named interfaces.

The master is composed, not inherited: :class:`~localmesos.master.master.Master` makes one
:class:`~localmesos.master.state.MasterState` and one object per part below, each given the
state and the :class:`MasterParts` (this table), and a part calls another only through the
protocol named here, as Mesos' ``src/master/`` keeps its allocator, registrar and HTTP apart.
The parts' modules never import each other. No part calls the ``quota`` part, so the
table has no entry for it; the façade calls it.

========================  ==================================================================
part                      module and concern
========================  ==================================================================
``subscriptions``         :mod:`~.subscriptions`: SUBSCRIBE, disconnection, failover timers
``calls``                 :mod:`~.calls`: the other scheduler calls and their dispatch
``launch``                :mod:`~.launch`: ACCEPT (offer checks, task launch, executors)
``tasks``                 :mod:`~.tasks`: status updates, removing tasks, offers, frameworks
``allocation``            :mod:`~.offers`: allocation runs, offers, agent paths, file roots
``quota``                 :mod:`~.quota_master`: the quota operator calls
``maintenance``           :mod:`~.maintenance`: the schedule, machine modes, inverse offers
``drain``                 :mod:`~.drain`: draining, deactivating and reactivating agents
``partitions``            :mod:`~.partitions`: agents' pings, unreachability, re-registration
========================  ==================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Protocol

from disauto.common.resources import RoleResources
from disauto.localmesos.master.records import AgentRecord
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.records import OfferRecord
from disauto.localmesos.master.records import TaskRecord


class TaskKeeping(Protocol):
    """What the ``tasks`` part offers: removing tasks, offers and frameworks."""

    def recover_task(self, fw: FrameworkRecord, task: TaskRecord) -> None: ...

    def remove_task(self, fw: FrameworkRecord, task: TaskRecord) -> None: ...

    def remove_framework(self, fw: FrameworkRecord) -> None: ...

    def remove_offer(self, offer: OfferRecord) -> None: ...

    def rescind(self, offer: OfferRecord) -> None: ...


class Maintaining(Protocol):
    """What the ``maintenance`` part offers: machine states and inverse offers."""

    def unavailability_of(self, agent: AgentRecord) -> dict[str, Any] | None: ...

    def machine_is_down(self, info: Mapping[str, Any]) -> bool: ...

    def make_inverse_offers(self, now: float) -> None: ...

    def answer_inverse_offers(
        self, fw: FrameworkRecord, body: Mapping[str, Any], status: str
    ) -> None: ...

    def rescind_inverse_offers(
        self, agent_id: str | None = None, framework_id: str | None = None
    ) -> None: ...


class Subscribing(Protocol):
    """What the ``subscriptions`` part offers: adding a framework, taking its new info."""

    def add_framework(
        self, fid: str, info: dict[str, Any], *, recovered: bool
    ) -> FrameworkRecord: ...

    def apply_framework_info(self, fw: FrameworkRecord, info: dict[str, Any]) -> None: ...


class Launching(Protocol):
    """What the ``launch`` part offers: ACCEPT, recovering resources, charging executors."""

    def accept(self, fw: FrameworkRecord, accept: Mapping[str, Any]) -> None: ...

    def recover_with_filter(
        self, fw: FrameworkRecord, role: str, agent_id: str, unused: RoleResources,
        refuse_seconds: float | None,
    ) -> None: ...

    def register_executor(
        self, fw: FrameworkRecord, agent: AgentRecord, role: str, executor: dict[str, Any],
        *, hosted: bool = False,
    ) -> str: ...


class Calling(Protocol):
    """What the ``calls`` part offers: master-generated status updates."""

    def send_master_update(
        self, fw: FrameworkRecord, *, task_id: str, state: str, reason: str, message: str,
        agent_id: str | None = None, executor_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None: ...


class Draining(Protocol):
    """What the ``drain`` part offers: noticing that a draining agent is drained."""

    def check_drained(self, record: AgentRecord) -> None: ...


class Allocating(Protocol):
    """What the ``allocation`` part offers: allocation runs and agents' paths."""

    def allocate(self) -> None: ...

    def agent_path(self, agent_id: str) -> str: ...


class Partitioning(Protocol):
    """What the ``partitions`` part offers: deactivating and removing agents."""

    def deactivate(self, record: AgentRecord) -> None: ...

    def remove_agent_by_operator(
        self, record: AgentRecord, message: str, *, gone: bool = False
    ) -> None: ...


@dataclass(eq=False)
class MasterParts:
    """The master's parts by name; the façade fills it in once, before anything runs."""

    subscriptions: Subscribing = field(init=False)
    calls: Calling = field(init=False)
    launch: Launching = field(init=False)
    tasks: TaskKeeping = field(init=False)
    allocation: Allocating = field(init=False)
    maintenance: Maintaining = field(init=False)
    drain: Draining = field(init=False)
    partitions: Partitioning = field(init=False)
