"""The pymesos Scheduler of a DisAuto job: thin callbacks over the controller and the policy.

Callbacks only read offers and statuses, ask the offer policy, record through the controller and
call the driver. They never raise: an exception in a pymesos callback kills the driver's thread.
Status updates are acknowledged explicitly, *after* the controller recorded them.

Its parts: what it learns of the master goes to the job's :class:`MesosLink` (which the job's
other parts read), whether it wants offers is :class:`OfferRevival`'s (``revival.py``), a planned
launch becomes a TaskInfo in :class:`Launcher` (``launcher.py``), and warm slots are placed,
started, adopted and ended by :class:`WarmSlots` (``warm_slots.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import logging
import threading
import time
from typing import Any

from pymesos import Scheduler

from disauto.common.resources import Resources
from disauto.common.slots import Preload
from disauto.common.task_states import has_ended_for_framework
from disauto.common.telemetry import AGENT_CPU_UTILIZATION
from disauto.framework import _meta as meta
from disauto.framework._agent_measures import AgentMeasures
from disauto.framework._agent_measures import agent_measures
from disauto.framework._authorization import registration_refusal
from disauto.framework._job import APPCORE_KEY
from disauto.framework._job.ports import SchedulerPort
from disauto.framework._job.progress import job_progress
from disauto.framework._launcher import Launcher
from disauto.framework._maintenance import HORIZON_SECONDS
from disauto.framework._maintenance import Maintenance
from disauto.framework._mesos_link import MesosLink
from disauto.framework._offer_claims import OfferClaims
from disauto.framework._offers import OfferView
from disauto.framework._offers import fit
from disauto.framework._peers import PeerBoard
from disauto.framework._revival import OfferRevival
from disauto.framework._sandbox_logs import SandboxLogs
from disauto.framework._slots import SlotTable
from disauto.framework._warm_slots import WarmSlots
from disauto.framework.policies import LaunchRequest
from disauto.framework.policies import OfferPolicy
from disauto.framework.policies import Plan
from disauto.protos import framework_pb2


logger = logging.getLogger(__name__)

IDLE_REFUSE_SECONDS = 3600.0
"""Decline filter while nothing waits (REVIVE clears it when something does)."""
LEFTOVER_REFUSE_SECONDS = 0.0
"""Filter on the unused part of an accepted offer: none, so the rest is re-offered next round."""
SPARE_REFUSE_SECONDS = 0.0
"""Filter on an offer declined while a task that fits it waits (it arrived during the callback,
or could not launch yet): none, so the offer comes back at the next allocation run instead of
after the policy's filter."""


FAILED_OVER = "Framework failed over"
REMOVED = "Framework has been removed"


def framework_lost_reason(message: str) -> str | None:
    """The one-line reason for a master ERROR that takes the framework away, else None.

    pymesos subscribes one connection at a time, so "Framework failed over" on its stream
    means another scheduler subscribed with this job's FrameworkID; "Framework has been removed"
    means the master removed it (a TEARDOWN by someone holding its id, or its failover timeout
    passed while it was away): its tasks were killed.
    """
    if message.startswith(FAILED_OVER):
        return ("the framework was taken away: another scheduler subscribed with its "
                f"FrameworkID (Mesos: {message!r}); its tasks are that scheduler's now")
    if message.startswith(REMOVED):
        return ("the framework was taken away: the Mesos master removed it and killed its "
                f"tasks (Mesos: {message!r}: torn down, or its failover timeout passed)")
    return None


class JobScheduler(Scheduler):
    """Launches AppCore and the trials of one job on the offers the policy accepts.

    Args:
        controller: the job's controller.
        policy: the offer policy.
        framework_address: host:port of the framework's gRPC service.
        uris: CommandInfo.uris that ship the user's files and inputs to each trial.
        trial_env: extra environment for trials.
        tls_env: the framework's certificate and name (``task_env.FRAMEWORK_CERT``...) for
            AppCore and the trials when the job uses TLS.
        appcore_bind: where AppCore listens; "" for the host name of its offer.
        logs: remembers agents' endpoints from offers, to read failed tasks' stderr.
        peers: the other jobs' standings, for policies that read the job's progress.
        slots: the job's warm slots (``--slot-mode warm``); None runs each trial as a Mesos
            command task.
        executor_command: how agents start a slot's executor (``-m disauto.executor``).
        preload: with ``--slot-preload``, how a slot's pre-imported interpreter runs a trial.
        master_auth: (principal, secret) for the master's HTTP endpoints (the slots a
            resumed framework adopts are read from ``/master/frameworks``).
        link: the framework's link to its master, shared with the job's other parts (by
            default its own).
        revival: when the job asks for offers again (by default its own, on ``link``).
    """

    def __init__(
        self,
        controller: SchedulerPort,
        policy: OfferPolicy,
        framework_address: str,
        uris: Sequence[Mapping[str, Any]] = (),
        trial_env: Mapping[str, str] | None = None,
        logs: SandboxLogs | None = None,
        *,
        tls_env: Mapping[str, str] | None = None,
        appcore_bind: str = "",
        peers: PeerBoard | None = None,
        slots: SlotTable | None = None,
        executor_command: str = "",
        preload: Preload | None = None,
        master_auth: tuple[str, str] | None = None,
        link: MesosLink | None = None,
        revival: OfferRevival | None = None,
    ) -> None:
        self._job = controller
        self._policy = policy
        self._logs = logs
        self._peers = peers
        self._link = link if link is not None else MesosLink()
        self._revival = revival if revival is not None else OfferRevival(self._link)
        self._launcher = Launcher(controller, self._link, framework_address, uris=uris,
                                  trial_env=trial_env, tls_env=tls_env,
                                  appcore_bind=appcore_bind)
        self.slots = slots
        self._warm = WarmSlots(slots, controller, self._link, self._launcher,
                               executor_command=executor_command, preload=preload,
                               master_auth=master_auth) if slots is not None else None
        self._maintenance = Maintenance(controller.config.trial_timeout or HORIZON_SECONDS,
                                        self._busy_on, self._release_agent)
        self.offers_seen = 0
        self.offers_declined = 0
        self.framework_lost = ""
        """Why the framework was taken away (see :func:`framework_lost_reason`), or never
        registered (its registration refused by the master's ACLs), or ""."""

    # -- what the link knows ---------------------------------------------------------------

    @property
    def framework_id(self) -> str:
        return self._link.framework_id()

    @property
    def master_address(self) -> str:
        """host:port of the master's HTTP API (from its MasterInfo at registration)."""
        return self._link.master_address()

    @property
    def master_away_at(self) -> float:
        """When (wall clock) the subscription broke; 0 while subscribed."""
        return self._link.master_away_at

    @property
    def registered_event(self) -> threading.Event:
        return self._link.registered

    def master_away_for(self) -> float:
        """Seconds since the subscription to the master broke and none took its place (0 while
        subscribed)."""
        return self._link.away_for()

    # -- registration ----------------------------------------------------------------------

    def registered(self, driver: Any, framework_id: Mapping[str, Any],
                   master_info: Mapping[str, Any]) -> None:
        self._link.subscribed(driver, str(framework_id.get("value", "")),
                              _http_address(master_info))
        try:
            self._job.store.set_meta(meta.FRAMEWORK_ID, self.framework_id)
        except Exception:  # noqa: BLE001 - never raise out of a callback
            logger.exception("cannot record the framework id")
        logger.info("registered as framework %s with master %s:%s", self.framework_id,
                    master_info.get("hostname"), master_info.get("port"))
        self._link.registered.set()

    def reregistered(self, driver: Any, master_info: Mapping[str, Any]) -> None:
        self._link.resubscribed(driver, _http_address(master_info))
        self._revival.resubscribed()
        logger.info("re-registered with master %s; reconciling tasks", master_info.get("hostname"))
        if self._warm is not None:
            self._warm.adopt_running()
        # By id, so that the master answers for tasks it does not know (a restarted master):
        # TASK_GONE / TASK_UNKNOWN / TASK_LOST, after which the trial is launched again.
        self._link.reconcile(self._job.tasks.live_tasks())
        driver.reconcileTasks([])
        # Tasks the predecessor timed out, pruned or killed, and whose end is not recorded:
        # its kill may have died with it.
        stale = self._job.tasks.kills_on_resume()
        if stale:
            logger.info("killing %d task(s) an earlier framework ended: %s", len(stale),
                        ", ".join(stale))
            self.kill(stale)
        self._link.registered.set()

    def disconnected(self, driver: Any) -> None:
        if self._link.went_away():
            logger.warning("disconnected from the Mesos master; pymesos re-subscribes")

    def error(self, driver: Any, message: str) -> None:
        logger.error("Mesos master error: %s", message)
        refused = registration_refusal(message, self._job.config.subscribed_roles)
        if refused is not None:  # pymesos would subscribe again, refused again, forever
            self.framework_lost = refused
            self._stop_driver(driver)
            self._job.finish(framework_pb2.UNSCHEDULABLE, refused)
            return
        why = framework_lost_reason(message)
        if why is None:
            self._job.finish(framework_pb2.ERROR, f"the Mesos master refused the job: {message}")
            return
        # The framework is no longer ours: subscribing again would steal it back from whoever
        # holds it now (or be refused forever), and its calls would be refused; stop the driver
        # without TEARDOWN.
        self.framework_lost = why
        self._stop_driver(driver)
        self._job.framework_lost(why)

    @staticmethod
    def _stop_driver(driver: Any) -> None:
        """Stop the driver without TEARDOWN (the framework is not ours, or never was)."""
        try:
            driver.stop(failover=True)
        except Exception:  # noqa: BLE001 - never raise out of a callback
            logger.exception("cannot stop the driver")

    # -- offers ----------------------------------------------------------------------------

    def resourceOffers(self, driver: Any, offers: Sequence[Mapping[str, Any]]) -> None:  # noqa: N802
        self._link.called(driver)
        try:
            self._on_offers(driver, offers)
        except Exception:  # noqa: BLE001 - a raising callback would kill the driver
            logger.exception("error while handling offers; declining them")
            for offer in offers:
                driver.declineOffer(offer["id"])

    def _on_offers(self, driver: Any, offers: Sequence[Mapping[str, Any]]) -> None:
        self.offers_seen += len(offers)
        if self._logs is not None:
            self._logs.remember(offers)
        roles = self._job.config.subscribed_roles
        views = self._off_maintenance(
            driver, [OfferView.from_offer(offer, roles) for offer in offers])
        requests = self._job.launch_requests()
        if not requests:
            self._decline(driver, views, IDLE_REFUSE_SECONDS)
            self._revival.suppress(driver, self._job.has_pending)
            return
        self._observe()
        if self._warm is not None:
            views = self._warm.ordered(views)
        plan = self._policy.place(views, requests)
        warm = self._warm.warm_ups_wanted(list(plan.launches.values())) \
            if self._warm is not None else 0
        for view in views:
            warm -= self._launch_or_decline(driver, view, plan, warm)
        if self._warm is not None:
            self._warm.yield_agents(views, plan.deliberate)
        if not self._job.has_pending():
            self._revival.suppress(driver, self._job.has_pending)
        elif self._arrived_since(requests):
            # A trial submitted after the plan read the requests woke nothing (the job was
            # neither suppressed nor had it filtered anything yet); what this callback left
            # unused is filtered until the master's next batch allocation (up to 1 s).
            self._revival.wake()

    def _arrived_since(self, requests: Sequence[LaunchRequest]) -> bool:
        """Whether something waits now that was not among ``requests``."""
        planned = {request.key for request in requests}
        return any(request.key not in planned for request in self._job.launch_requests())

    def _off_maintenance(self, driver: Any, views: Sequence[OfferView]) -> list[OfferView]:
        """The offers whose agent has no maintenance within the time a trial may take; the
        others are declined (``framework/_maintenance.py``)."""
        kept, blocked = self._maintenance.split(views, time.time())
        for view, refuse in blocked:
            self._decline(driver, [view], refuse)
        return kept

    def _observe(self) -> None:
        """Show the policy what it reads: the job's progress and its peers', the agents."""
        if self._policy.uses_progress:
            self._policy.observe(
                job_progress(self._job.config, self._job.trials(), time.time(),
                             self._policy.agent_slowdown),
                self._peers.standings() if self._peers is not None else ())
        if self._policy.placement is not None:
            self._policy.observe_agents(self._agent_measures())

    def _launch_or_decline(self, driver: Any, view: OfferView, plan: Plan, warm: int) -> int:
        """Launch what the plan puts on ``view`` (and up to ``warm`` slot warm-ups), or decline
        it; how many warm-ups were started."""
        launches = plan.launches.get(view.id, [])
        left = [view.available]  # what the planned claims leave: room for new slots
        for _, claim in launches:
            left[0] = left[0] - claim
        claims = OfferClaims(view)  # new slots' executors draw from it as they are made
        tasks = [task for request, claim in launches
                 if (task := self._task_for(request, view, claim, left, claims)) is not None]
        warm_ups: list[dict[str, Any]] = []
        if warm > 0 and view.id not in plan.deliberate and self._warm is not None:
            warm_ups = self._warm.warm_ups(view, left, warm, claims)
            tasks += warm_ups
        tasks = [claims.with_drawn_resources(task) for task in tasks]
        if tasks:
            logger.info("launching %s on %s", ", ".join(_launch_name(t) for t in tasks),
                        view.hostname)
            driver.launchTasks(
                [{"value": view.id}], tasks, {"refuse_seconds": LEFTOVER_REFUSE_SECONDS})
            self._revival.declined_for_want_of_tasks()
            return len(warm_ups)
        refuse = plan.refuse_seconds.get(view.id, self._policy.decline_seconds)
        if refuse > 0 and view.id not in plan.deliberate and self._fits_waiting(view):
            refuse = SPARE_REFUSE_SECONDS
        self._decline(driver, [view], refuse)
        if view.id in plan.deliberate:
            self._revival.declined_on_purpose(refuse)
        else:
            self._revival.declined_for_want_of_tasks()
        return 0

    def _task_for(self, request: LaunchRequest, view: OfferView, claim: Resources,
                  left: list[Resources], claims: OfferClaims) -> dict[str, Any] | None:
        """The task of one planned launch, recorded; None if it is no longer wanted."""
        if request.key == APPCORE_KEY:
            return self._launcher.appcore(view, claim)
        if request.trial_number is None:
            return None
        task = self._launcher.trial(request.trial_number, view, claim)
        if task is None:
            return None
        task_id = task["task_id"]["value"]
        executor_id = ""
        if self._warm is not None:
            task, executor_id = self._warm.place(task, view, left, claims)
        self._job.trial_launched(request.trial_number, task_id, view.agent_id, executor_id)
        return task

    def _agent_measures(self) -> AgentMeasures:
        """What the job's record shows of each agent, for the placement step."""
        now = time.time()
        trials = self._job.trials()
        store = self._job.store
        placement = self._policy.placement
        age = placement.sample_age if placement is not None else 0.0
        return agent_measures(
            trials, store.task_updates(),
            store.samples(AGENT_CPU_UTILIZATION, since=now - age), now,
            job_progress(self._job.config, trials, now).remaining_trials)

    def _fits_waiting(self, view: OfferView) -> bool:
        """Whether a task that could launch now fits ``view`` (AppCore submits trials while
        offers are handled; trials cannot launch before AppCore has attached)."""
        attached = bool(self._job.tasks.appcore_address())
        return any(
            (r.trial_number is None or attached)
            and fit(view.available, r.resources, r.ports) is not None
            and (r.resources.gpus == 0 or view.has_gpus)
            for r in self._job.launch_requests()
        )

    def _decline(self, driver: Any, views: Sequence[OfferView], refuse: float) -> None:
        for view in views:
            self.offers_declined += 1
            driver.declineOffer([{"value": view.id}], {"refuse_seconds": refuse})

    def wake(self) -> None:
        """Something waits for an offer (see :class:`OfferRevival`)."""
        self._revival.wake()

    def policy_stats(self) -> dict[str, float]:
        """The offer policy's counters (priority declines, idle raises...), for the job record."""
        return {**self._policy.stats(), **self._policy.placement_stats()}

    def _busy_on(self, agent_id: str) -> list[str]:
        """The job's live tasks on ``agent_id``."""
        return sorted(task for task, agent, live in self._job.tasks.task_locations()
                      if live and agent == agent_id)

    def _release_agent(self, agent_id: str, why: str) -> None:
        """Shut the job's idle slots on ``agent_id`` down."""
        if self._warm is not None:
            self._warm.shutdown(self._warm.table.idle(agent_id), why)

    def offerRescinded(self, driver: Any, offer_id: Mapping[str, Any]) -> None:  # noqa: N802
        logger.debug("offer %s rescinded", offer_id.get("value"))

    # -- maintenance -------------------------------------------------------------------------

    def inverseOffers(self, driver: Any,  # noqa: N802
                      offers: Sequence[Mapping[str, Any]]) -> None:
        """Mesos asks for agents back before their maintenance: declined while the job's
        tasks still run there (they finish), accepted once it has nothing there."""
        self._link.called(driver)
        for offer in offers:
            try:
                self._maintenance.answer(driver, offer)
            except Exception:  # noqa: BLE001 - a raising callback would kill the driver
                logger.exception("cannot answer the inverse offer %s", offer.get("id"))

    def inverseOfferRescinded(self, driver: Any,  # noqa: N802
                              offer_id: Mapping[str, Any]) -> None:
        logger.debug("inverse offer %s rescinded", offer_id.get("value"))

    # -- slots -------------------------------------------------------------------------------

    def reap_idle_slots(self) -> None:
        """Shut down the slots idle for longer than their idle time."""
        if self._warm is not None:
            self._warm.reap_idle()

    def shutdown_slots(self, slots: Sequence[Any], why: str) -> None:
        """SHUTDOWN the executors of ``slots``."""
        if self._warm is not None:
            self._warm.shutdown(slots, why)

    def executorLost(self, driver: Any, executor_id: Mapping[str, Any],  # noqa: N802
                     agent_id: Mapping[str, Any], status: int) -> None:
        if self._warm is not None:
            self._warm.executor_ended(str(executor_id.get("value", "")))
        logger.info("executor %s on %s ended (wait status %s)", executor_id.get("value"),
                    agent_id.get("value"), status)

    # -- status updates ----------------------------------------------------------------------

    def statusUpdate(self, driver: Any, status: Mapping[str, Any]) -> None:  # noqa: N802
        if self._warm is not None:
            self._warm.adopt_from(status)
        try:
            effects = self._job.on_status(status)
        except Exception:  # noqa: BLE001 - not recorded: don't ack, Mesos will resend it
            logger.exception("cannot record the status update %s", status.get("state"))
            return
        if self._warm is not None and has_ended_for_framework(str(status.get("state"))):
            self._warm.task_ended(status)
        if effects.kill:  # a stale launch runs again: one trial never has two live tasks
            self.kill(effects.kill)
            if self._warm is not None:
                self._warm.shutdown_stale(status)
        if "uuid" in status:
            driver.acknowledgeStatusUpdate(status)

    def kill(self, task_ids: Sequence[str]) -> None:
        self._link.kill(task_ids)

    def abandon(self, task_ids: Sequence[str]) -> None:
        """Tasks given up on while their agent was unreachable: KILL them (Mesos kills them
        when the agent comes back, or reconciles) and forget their warm slots."""
        self.kill(task_ids)
        if self._warm is not None:
            self._warm.tasks_abandoned(task_ids)

    def reconcile(self, tasks: Sequence[tuple[str, str]]) -> None:
        """Explicit reconciliation of ``(task_id, agent_id)``: Mesos answers each with its
        latest state (TASK_UNREACHABLE while its agent is, TASK_RUNNING once it is back)."""
        self._link.reconcile(tasks)


def _launch_name(task: Mapping[str, Any]) -> str:
    """A task as the launch line names it: ``trial-0007``, or ``trial-0007 (job-slot-3)`` for a
    task of a warm slot."""
    executor = task.get("executor")
    if executor is None:
        return str(task["name"])
    return f"{task['name']} ({executor['executor_id']['value']})"


def _http_address(master_info: Mapping[str, Any]) -> str:
    """``ip:port`` (or ``hostname:port``) of a MasterInfo; "" when it names neither."""
    address = master_info.get("address") or {}
    host = address.get("ip") or address.get("hostname") or master_info.get("hostname")
    port = address.get("port") or master_info.get("port")
    return f"{host}:{port}" if host and port else ""
