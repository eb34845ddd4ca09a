"""Agents scheduled for maintenance, as Mesos' maintenance primitives tell a framework
(apache/mesos ``docs/maintenance.md``; ``include/mesos/v1/mesos.proto`` ``Unavailability``,
``InverseOffer``).

Once an operator schedules a machine's maintenance, every offer of its agent carries the
``unavailability`` (a start and, maybe, a duration), and every framework with resources there
gets inverse offers asking for them back. The job's answers:

* **No new task where it would be cut off.** An offer whose unavailability overlaps the time a
  trial may take (``--trial-timeout``; without one, :data:`HORIZON_SECONDS`) from now gets no
  trial, no AppCore and no warm slot: it is declined for :data:`REFUSE_SECONDS` at most (so that
  a cancelled schedule is noticed) and the job's idle slots there are shut down.
* **Running trials finish.** Nothing is killed for maintenance: a trial the operator's drain
  kills runs again elsewhere (``framework/_job/status.py``, evictions).
* **The inverse offer is answered**: declined (DECLINE_INVERSE_OFFERS: the job cannot give the
  agent back now, its tasks still run there) for :data:`INVERSE_REFUSE_SECONDS`, after which
  Mesos asks again; accepted (ACCEPT_INVERSE_OFFERS) once the job has nothing there. Either is
  a hint to the operator, who decides (docs/maintenance.md).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
import logging
import time
from typing import Any

from disauto.common.durations import format_duration
from disauto.framework._offers import OfferView


logger = logging.getLogger("disauto.framework._scheduler")


HORIZON_SECONDS = 3600.0
"""Without ``--trial-timeout``: an agent whose maintenance starts within this long gets no new
task (an hour: longer than most trials; a job whose trials take longer should say so with
``--trial-timeout``)."""
REFUSE_SECONDS = 60.0
"""The longest decline filter on an offer of an agent under maintenance: a schedule changed or
cancelled is seen within a minute."""
INVERSE_REFUSE_SECONDS = 30.0
"""Decline filter on an inverse offer while the job's tasks still run on its agent: Mesos asks
again after it, and the job accepts once they ended."""

_NANOS = 1e9


@dataclass(frozen=True)
class Unavailability:
    """When an agent may become unavailable: from ``start`` until ``end`` (None: for good),
    seconds since the epoch."""

    start: float
    end: float | None

    @classmethod
    def read(cls, data: Any) -> Unavailability | None:
        """The ``Unavailability`` JSON of an offer or inverse offer (None: absent or bad)."""
        if not isinstance(data, Mapping):
            return None
        try:
            start = int(data["start"]["nanoseconds"]) / _NANOS
            duration = data.get("duration")
            end = start + int(duration["nanoseconds"]) / _NANOS if duration else None
        except (KeyError, TypeError, ValueError):
            return None
        return cls(start, end)

    def overlaps(self, begin: float, end: float) -> bool:
        """Whether it overlaps the time from ``begin`` to ``end``."""
        return self.start < end and (self.end is None or self.end > begin)

    def describe(self) -> str:
        """``from 14:00:00 for 1h`` (``... for good`` without a duration)."""
        start = time.strftime("%H:%M:%S", time.localtime(self.start))
        if self.end is None:
            return f"from {start}, with no end"
        return f"from {start} for {format_duration(max(1, round(self.end - self.start)))}"


def unavailability_of(offer: Mapping[str, Any]) -> Unavailability | None:
    """An offer's (or inverse offer's) ``unavailability``, if it has one."""
    return Unavailability.read(offer.get("unavailability"))


class Maintenance:
    """The scheduler's part for agents scheduled for maintenance.

    Args:
        horizon: seconds a trial may take (``--trial-timeout``, else :data:`HORIZON_SECONDS`).
        busy_on: the job's live tasks on an agent.
        release: shuts the job's idle warm slots on an agent down (with why).
    """

    def __init__(self, horizon: float, busy_on: Callable[[str], list[str]],
                 release: Callable[[str, str], None]) -> None:
        self.horizon = horizon
        self._busy_on = busy_on
        self._release = release

    def blocking(self, offer: Mapping[str, Any], now: float) -> Unavailability | None:
        """The unavailability that keeps new tasks off ``offer``'s agent now, or None."""
        window = unavailability_of(offer)
        if window is None or not window.overlaps(now, now + self.horizon):
            return None
        return window

    def split(self, views: Sequence[OfferView],
              now: float) -> tuple[list[OfferView], list[tuple[OfferView, float]]]:
        """The offers new tasks may use, and those kept off their agent's maintenance with
        how long to decline each (the job's idle slots there are shut down)."""
        kept: list[OfferView] = []
        blocked: list[tuple[OfferView, float]] = []
        for view in views:
            window = self.blocking(view.raw, now)
            if window is None:
                kept.append(view)
                continue
            logger.info("no new task on %s: it is scheduled for maintenance %s", view.hostname,
                        window.describe())
            self._release(view.agent_id, "its agent is scheduled for maintenance")
            blocked.append((view, refuse_seconds(window, now)))
        return kept, blocked

    def answer(self, driver: Any, offer: Mapping[str, Any]) -> None:
        """Answer one inverse offer: declined while the job's tasks still run on its agent
        (they finish), accepted once it has nothing there."""
        agent_id = str((offer.get("agent_id") or {}).get("value", ""))
        window = unavailability_of(offer)
        when = window.describe() if window is not None else "soon"
        busy = self._busy_on(agent_id) if agent_id else []
        if agent_id:
            self._release(agent_id, "its agent is scheduled for maintenance")
        if busy:
            logger.info("agent %s is scheduled for maintenance %s: %s still run there "
                        "(declining its inverse offer; they finish, no new task starts there)",
                        agent_id, when, ", ".join(busy))
            driver.declineInverseOffer([dict(offer["id"])],
                                       {"refuse_seconds": INVERSE_REFUSE_SECONDS})
        else:
            logger.info("agent %s is scheduled for maintenance %s: the job has nothing there "
                        "(accepting its inverse offer)", agent_id, when)
            driver.acceptInverseOffers([dict(offer["id"])])


def refuse_seconds(window: Unavailability, now: float) -> float:
    """How long to decline an offer kept off by ``window``: until the agent is usable again,
    at most :data:`REFUSE_SECONDS`."""
    if window.end is None:
        return REFUSE_SECONDS
    return max(1.0, min(REFUSE_SECONDS, window.end - now))
