"""The pymesos Scheduler of a DisAuto job: thin callbacks over the controller and the policy.

Callbacks only read offers and statuses, ask the offer policy, record through the controller and
call the driver. They never raise: an exception in a pymesos callback kills the driver's thread.
Status updates are acknowledged explicitly, *after* the controller recorded them.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import logging
import threading
import time
from typing import Any

from pymesos import Scheduler

from disauto.common import task_env
from disauto.common.resources import Resources
from disauto.common.slots import ContainerSpec as SlotContainerSpec
from disauto.common.slots import Preload
from disauto.common.slots import is_warmup_task
from disauto.common.task_states import has_ended_for_framework
from disauto.common.telemetry import AGENT_CPU_UTILIZATION
from disauto.common.tokens import trial_token
from disauto.framework import meta
from disauto.framework.agent_measures import AgentMeasures
from disauto.framework.agent_measures import agent_measures
from disauto.framework.containers import container_info
from disauto.framework.containers import task_environment
from disauto.framework.job import APPCORE_KEY
from disauto.framework.job import JobController
from disauto.framework.job.progress import job_progress
from disauto.framework.offers import OfferView
from disauto.framework.offers import fit
from disauto.framework.peers import PeerBoard
from disauto.framework.policies import LaunchRequest
from disauto.framework.policies import OfferPolicy
from disauto.framework.sandbox_logs import SandboxLogs
from disauto.framework.slot_adoption import running_slots
from disauto.framework.slots import WARMUP_RESOURCES
from disauto.framework.slots import SlotTable
from disauto.framework.slots import as_slot_task
from disauto.framework.slots import carved
from disauto.framework.slots import container_spec
from disauto.framework.slots import executor_info
from disauto.framework.slots import executor_resources
from disauto.framework.slots import warm_up_task
from disauto.framework.tasks import appcore_task
from disauto.framework.tasks import trial_task
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


SLOT_ENDED_REASONS = frozenset({"REASON_EXECUTOR_TERMINATED",
                                "REASON_EXECUTOR_REGISTRATION_TIMEOUT"})
"""Reasons of a slot task's end that mean its executor is gone (the slot with it)."""

REVIVE_WINDOW = 5.0
"""Seconds after the job last declined an offer for want of a task (or left part of one
unused) during which a newly waiting task REVIVEs, so that the master's filter on those
resources (a 0 s filter still lasts until its next batch allocation, up to an allocation
interval) does not keep it waiting; never while a deliberate decline (the policy yields) is in
force."""

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
    """

    def __init__(
        self,
        controller: JobController,
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
    ) -> None:
        self._job = controller
        self._policy = policy
        self._framework_address = framework_address
        self._uris = list(uris)
        self._tls_env = dict(tls_env or {})
        self._trial_env = {**(trial_env or {}), **self._tls_env}
        self._appcore_bind = appcore_bind
        self._logs = logs
        self._peers = peers
        self.slots = slots
        self._executor_command = executor_command
        self._preload = preload
        self._master_auth = master_auth
        self._driver: Any = None
        self._suppressed = False
        self._spare_declined_at = float("-inf")
        """When an offer (or part of one) was last declined only because no task waited."""
        self._yielding_until = float("-inf")
        """Until when a deliberate decline of the policy is in force (no REVIVE before)."""
        self._lock = threading.Lock()
        self.registered_event = threading.Event()
        self.framework_id = ""
        self.master_address = ""
        """host:port of the master's HTTP API (from its MasterInfo at registration)."""
        self.offers_seen = 0
        self.offers_declined = 0
        self._away_since: float | None = None
        self.master_away_at = 0.0
        """When (wall clock) the subscription broke; 0 while subscribed."""
        self.framework_lost = ""
        """Why the framework was taken away (see :func:`framework_lost_reason`), or ""."""

    # -- registration ----------------------------------------------------------------------

    def registered(self, driver: Any, framework_id: Mapping[str, Any],
                   master_info: Mapping[str, Any]) -> None:
        self._driver = driver
        self.framework_id = str(framework_id.get("value", ""))
        self.master_address = _http_address(master_info)
        try:
            self._job.store.set_meta(meta.FRAMEWORK_ID, self.framework_id)
        except Exception:  # noqa: BLE001 - never raise out of a callback
            logger.exception("cannot record the framework id")
        self._back()
        logger.info("registered as framework %s with master %s:%s", self.framework_id,
                    master_info.get("hostname"), master_info.get("port"))
        self.registered_event.set()

    def reregistered(self, driver: Any, master_info: Mapping[str, Any]) -> None:
        self._driver = driver
        self.master_address = _http_address(master_info) or self.master_address
        with self._lock:
            self._suppressed = False  # a re-subscribe un-suppresses (Mesos allocator semantics)
            self._away_since = None
            self.master_away_at = 0.0
        logger.info("re-registered with master %s; reconciling tasks", master_info.get("hostname"))
        self._adopt_slots()
        # By id, so that the master answers for tasks it does not know (a restarted master):
        # TASK_GONE / TASK_UNKNOWN / TASK_LOST, after which the trial is launched again.
        live = self._job.live_tasks()
        if live:
            driver.reconcileTasks([{"task_id": {"value": task_id}, "agent_id": {"value": agent}}
                                   for task_id, agent in live])
        driver.reconcileTasks([])
        # Tasks the predecessor timed out, pruned or killed, and whose end is not recorded:
        # its kill may have died with it.
        stale = self._job.kills_on_resume()
        if stale:
            logger.info("killing %d task(s) an earlier framework ended: %s", len(stale),
                        ", ".join(stale))
            self.kill(stale)
        self.registered_event.set()

    def _adopt_slots(self) -> None:
        """Take over the job's slots that run under its FrameworkID (a resumed framework's
        predecessor started them): busy with the trial the record says runs on each, else
        idle from now (shut down after the idle time unless reused). Before the tasks are
        reconciled, so that their statuses free the slots they ran on."""
        if self.slots is None or not self.master_address:
            return
        try:
            running = running_slots(self.master_address, self.framework_id,
                                    self._job.config.job_id, auth=self._master_auth,
                                    timeout=3.0)
        except (OSError, ValueError) as err:  # statuses of their live tasks adopt them still
            logger.warning("cannot list the job's running slots: %s", err)
            return
        busy = self._job.slot_tasks_in_flight()
        for slot in running:
            if self.slots.adopt(slot.executor_id, slot.agent_id, busy.get(slot.executor_id, ""),
                                slot.gpus, self._recorded_info(slot.executor_id)):
                logger.info("adopting slot %s on %s (%s)", slot.executor_id, slot.agent_id,
                            f"running {busy[slot.executor_id]}" if slot.executor_id in busy
                            else "idle")

    def _recorded_info(self, executor_id: str) -> dict[str, Any] | None:
        """The ExecutorInfo the record says a slot was started with (None: not recorded)."""
        try:
            return self._job.store.get_meta(meta.SLOT_EXECUTOR.key(executor_id))
        except Exception:  # noqa: BLE001 - never raise out of a callback
            logger.warning("cannot read the recorded ExecutorInfo of %s", executor_id,
                           exc_info=True)
            return None

    def disconnected(self, driver: Any) -> None:
        logger.warning("disconnected from the Mesos master; pymesos re-subscribes")
        with self._lock:
            if self._away_since is None:
                self._away_since = time.monotonic()
                self.master_away_at = time.time()

    def master_away_for(self) -> float:
        """Seconds since the subscription to the master broke and none took its place (0 while
        subscribed)."""
        with self._lock:
            return 0.0 if self._away_since is None else time.monotonic() - self._away_since

    def _back(self) -> None:
        with self._lock:
            self._away_since = None
            self.master_away_at = 0.0

    def error(self, driver: Any, message: str) -> None:
        logger.error("Mesos master error: %s", message)
        why = framework_lost_reason(message)
        if why is None:
            self._job.finish(framework_pb2.ERROR, f"the Mesos master refused the job: {message}")
            return
        # The framework is no longer ours: subscribing again would steal it back from whoever
        # holds it now (or be refused forever), and its calls would be refused; stop the driver
        # without TEARDOWN.
        self.framework_lost = why
        try:
            driver.stop(failover=True)
        except Exception:  # noqa: BLE001 - never raise out of a callback
            logger.exception("cannot stop the driver")
        self._job.framework_lost(why)

    # -- offers ----------------------------------------------------------------------------

    def resourceOffers(self, driver: Any, offers: Sequence[Mapping[str, Any]]) -> None:  # noqa: N802
        self._driver = driver
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
        views = [OfferView.from_offer(offer) for offer in offers]
        requests = self._job.launch_requests()
        if not requests:
            self._decline(driver, views, IDLE_REFUSE_SECONDS)
            self._suppress(driver)
            return
        if self._policy.uses_progress:
            self._policy.observe(
                job_progress(self._job.config, self._job.trials(), time.time(),
                             self._policy.agent_slowdown),
                self._peers.standings() if self._peers is not None else ())
        if self._policy.placement is not None:
            self._policy.observe_agents(self._agent_measures())
        if self.slots is not None:
            # Offers of agents with a free slot first: a policy that fills offers in order
            # then reuses slots before it starts new ones elsewhere.
            slots = self.slots
            views.sort(key=lambda view: not slots.has_free(view.agent_id))
            views = [self._with_slot_room(view) for view in views]
        plan = self._policy.place(views, requests)
        warm = self._warm_up_wanted(plan.launches.values())
        for view in views:
            launches = plan.launches.get(view.id, [])
            left = [view.available]  # what the planned claims leave: room for new slots
            for _, claim in launches:
                left[0] = left[0] - claim
            tasks = [
                task for request, claim in launches
                if (task := self._task_for(request, view, claim, left)) is not None
            ]
            if warm > 0 and view.id not in plan.deliberate:
                warm_ups = self._warm_ups(view, left, warm)
                warm -= len(warm_ups)
                tasks += warm_ups
            if tasks:
                logger.info("launching %s on %s", ", ".join(_launch_name(t) for t in tasks),
                            view.hostname)
                driver.launchTasks(
                    [{"value": view.id}], tasks, {"refuse_seconds": LEFTOVER_REFUSE_SECONDS}
                )
                self._declined_spare()
            else:
                refuse = plan.refuse_seconds.get(view.id, self._policy.decline_seconds)
                if refuse > 0 and view.id not in plan.deliberate and self._fits_waiting(view):
                    refuse = SPARE_REFUSE_SECONDS
                self._decline(driver, [view], refuse)
                if view.id in plan.deliberate:
                    with self._lock:
                        self._yielding_until = max(self._yielding_until,
                                                   time.monotonic() + refuse)
                else:
                    self._declined_spare()
        if self.slots is not None:
            # An offer the policy declined on purpose: the job should yield that agent, so
            # its idle slots go too.
            for view in views:
                if view.id in plan.deliberate:
                    self.shutdown_slots(self.slots.idle(view.agent_id), "the job yields")
        if not self._job.has_pending():
            self._suppress(driver)

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

    def _with_slot_room(self, view: OfferView) -> OfferView:
        """``view`` with what its agent's free slots hold for their next trials: they are not
        offered (their executors hold them), but a trial planned on them runs on such a slot.
        That is a GPU slot's GPUs and, when slots are carved out of their trials
        (``framework/slots.py`` carved), each free slot's executor share: a trial that reuses
        the slot needs only the rest of its claim from the offer. Every trial of a job wants as
        much, so the trials planned beyond the free slots use offered resources."""
        assert self.slots is not None
        held = {"gpus": float(self.slots.free_gpus(view.agent_id))}
        runner = self._job.config.runner
        if carved(runner.cpus, runner.mem_mb):
            free = self.slots.free_count(view.agent_id)
            share = executor_resources()
            held.update(cpus=free * share.scalar("cpus"), mem=free * share.scalar("mem"))
        held = {name: value for name, value in held.items() if value}
        if not held:
            return view
        return dataclasses.replace(view, available=view.available + Resources(held))

    def _fits_waiting(self, view: OfferView) -> bool:
        """Whether a task that could launch now fits ``view`` (AppCore submits trials while
        offers are handled; trials cannot launch before AppCore has attached)."""
        attached = bool(self._job.appcore_address())
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

    def _rendezvous_env(self) -> dict[str, str]:
        """Where a task asks for this framework's address if it moves (common.rendezvous)."""
        return {task_env.MASTER_ADDR: self.master_address,
                task_env.FRAMEWORK_ID: self.framework_id}

    def _task_for(self, request: LaunchRequest, view: OfferView, claim: Resources,
                  left: list[Resources]) -> dict[str, Any] | None:
        config = self._job.config
        if request.key == APPCORE_KEY:
            appcore_container = (
                container_info(config.appcore_docker_image, config.containerizer)
                if config.appcore_docker_image else None
            )
            task_id = self._job.next_appcore_task_id()
            task = appcore_task(
                task_id=task_id,
                agent_id=view.agent_id,
                hostname=view.hostname,
                claim=claim,
                command=config.appcore_command,
                job_id=config.job_id,
                framework_address=self._framework_address,
                job_token=self._job.job_token,
                bind_host=self._appcore_bind,
                extra_env=task_environment({**config.extra_env, **self._tls_env,
                                            **self._rendezvous_env()},
                                           appcore_container),
                container=appcore_container,
            )
            return task if self._job.appcore_launched(task_id, view.agent_id) else None
        if request.trial_number is None:
            return None
        trial = self._job.trial_for_launch(request.trial_number)
        appcore, appcore_certificate = self._job.appcore_endpoint()
        if trial is None or not appcore:
            return None
        output_dir = ""
        if config.output is not None:
            output_dir = f"{config.output.destination}/trial-{trial.number:04d}"
        runner_container = self._runner_container()
        task = trial_task(
            trial_number=trial.number,
            agent_id=view.agent_id,
            claim=claim,
            launch_cmd=config.launch_cmd,
            job_id=config.job_id,
            assignment=trial.assignment,
            trial_token=trial_token(self._job.job_token, trial.number),
            appcore_address=appcore,
            appcore_certificate=appcore_certificate,
            framework_address=self._framework_address,
            uris=self._uris,
            output_dir=output_dir,
            output_name=config.output.name if config.output else "",
            extra_env=task_environment({**config.extra_env, **self._trial_env,
                                        **self._rendezvous_env()}, runner_container),
            container=runner_container,
            retries=trial.retries,
        )
        task_id = task["task_id"]["value"]
        executor_id = ""
        if self.slots is not None:
            task, executor_id = self._on_slot(task, view, left)
        self._job.trial_launched(trial.number, task_id, view.agent_id, executor_id)
        return task

    def _runner_container(self) -> dict[str, Any] | None:
        """The ContainerInfo of the job's trials (``--docker-image``), or None."""
        config = self._job.config
        if not config.docker_image:
            return None
        return container_info(
            config.docker_image, config.containerizer,
            host_paths=[config.output.destination] if config.output is not None else [])

    def _on_slot(self, task: dict[str, Any], view: OfferView,
                 left: list[Resources]) -> tuple[dict[str, Any], str]:
        """``task`` as a task of a slot on the offer's agent (a free one, else a new one when
        the offer has room for its executor): (the task, the slot's executor id). With neither,
        the trial runs as a command task, so that a job never waits for room for a slot."""
        assert self.slots is not None
        claim = Resources.from_json(task.get("resources") or [])
        gpus = int(claim.scalar("gpus"))
        share = executor_resources()
        # A slot of a big enough trial is carved out of its trial's claim (framework/slots.py
        # carved); else its executor needs room besides. A new slot's GPUs are its trial's
        # (moved to the executor).
        carve = carved(claim.scalar("cpus"), claim.scalar("mem"))
        room = carve or left[0].contains(share)
        taken = self.slots.take(view.agent_id, task["task_id"]["value"], room, gpus)
        if taken is None:
            logger.info("no room for a slot on %s: %s runs as a command task", view.hostname,
                        task["name"])
            return task, ""
        executor_id, new = taken
        if carve:
            # Its executor's share comes out of the claim: a new slot's executor takes it; a
            # free slot's holds it already and was counted into the offer (_with_slot_room).
            task = {**task, "resources": (claim - share).to_json()}
        elif new:
            left[0] = left[0] - share
        executor = None if new else self.slots.info_of(executor_id)
        if executor is None:
            executor = executor_info(executor_id, self._executor_command, self._uris,
                                     self._job.config.job_id, self._slot_container(), gpus)
            self.slots.set_info(executor_id, executor)
            self._job.store.set_meta(meta.SLOT_EXECUTOR.key(executor_id), executor)
        if new:
            logger.info("starting slot %s on %s", executor_id, view.hostname)
        return as_slot_task(task, executor, self._preload), executor_id

    def _warm_up_wanted(self, launches: Any) -> int:
        """How many slots to start before their trials: in the round that launches AppCore,
        up to the job's parallelism (its first trials come once AppCore runs). Not for GPU
        trials: a slot would hold its GPUs, which other jobs may want, before any trial."""
        if self.slots is None or self._job.config.runner.gpus:
            return 0
        if not any(request.key == APPCORE_KEY for planned in launches for request, _ in planned):
            return 0
        return max(0, int(self._job.config.search.parallelism) - self.slots.live())

    def _warm_ups(self, view: OfferView, left: list[Resources],
                  most: int) -> list[dict[str, Any]]:
        """Warm-up tasks for at most ``most`` slots ``view`` has room for: each where a trial
        will fit beside the slots started before it (``framework/slots.py`` warm_up_task)."""
        assert self.slots is not None
        config = self._job.config
        runner = config.runner
        share = executor_resources()
        own = share + WARMUP_RESOURCES
        trial = Resources({"cpus": runner.cpus, "mem": runner.mem_mb})
        if not carved(runner.cpus, runner.mem_mb):
            trial = trial + share
        room = left[0]
        container = self._slot_container()
        env = {**task_environment({**config.extra_env, **self._trial_env,
                                   **self._rendezvous_env()}, self._runner_container()),
               task_env.JOB_ID: config.job_id}
        tasks: list[dict[str, Any]] = []
        while len(tasks) < most and room.contains(trial) and left[0].contains(own):
            executor_id = self.slots.start_idle(view.agent_id)
            executor = executor_info(executor_id, self._executor_command, self._uris,
                                     config.job_id, container)
            self.slots.set_info(executor_id, executor)
            self._job.store.set_meta(meta.SLOT_EXECUTOR.key(executor_id), executor)
            tasks.append(warm_up_task(executor, view.agent_id, config.job_id,
                                      config.launch_cmd, env, runner.cpus, runner.mem_mb,
                                      self._preload))
            room = room - trial
            left[0] = left[0] - own
            logger.info("starting slot %s on %s before its first trial", executor_id,
                        view.hostname)
        return tasks

    def _slot_container(self) -> SlotContainerSpec | None:
        """The container of the job's slots (``--docker-image``), or None."""
        config = self._job.config
        if not config.docker_image:
            return None
        return container_spec(
            config.docker_image, False,
            [config.output.destination] if config.output is not None else [], config.job_id)

    def reap_idle_slots(self) -> None:
        """Shut down the slots idle for longer than their idle time."""
        if self.slots is not None:
            self.shutdown_slots(self.slots.expired(), "idle")

    def shutdown_slots(self, slots: Sequence[Any], why: str) -> None:
        """SHUTDOWN the executors of ``slots`` (pymesos 0.3.15 has no shutdownExecutor: the
        raw v1 call)."""
        driver = self._driver
        for slot in slots:
            logger.info("shutting slot %s down (%s)", slot.executor_id, why)
            if driver is None or not self.framework_id:
                continue
            try:
                driver._send({  # noqa: SLF001 - the call pymesos lacks
                    "type": "SHUTDOWN",
                    "framework_id": {"value": self.framework_id},
                    "shutdown": {"executor_id": {"value": slot.executor_id},
                                 "agent_id": {"value": slot.agent_id}},
                })
            except Exception:  # noqa: BLE001 - the master is away; TEARDOWN or it ends them
                logger.warning("cannot shut slot %s down", slot.executor_id, exc_info=True)

    def executorLost(self, driver: Any, executor_id: Mapping[str, Any],  # noqa: N802
                     agent_id: Mapping[str, Any], status: int) -> None:
        if self.slots is not None:
            self.slots.executor_ended(str(executor_id.get("value", "")))
        logger.info("executor %s on %s ended (wait status %s)", executor_id.get("value"),
                    agent_id.get("value"), status)

    def policy_stats(self) -> dict[str, float]:
        """The offer policy's counters (priority declines, idle raises...), for the job record."""
        return {**self._policy.stats(), **self._policy.placement_stats()}

    def offerRescinded(self, driver: Any, offer_id: Mapping[str, Any]) -> None:  # noqa: N802
        logger.debug("offer %s rescinded", offer_id.get("value"))

    # -- suppress / revive -------------------------------------------------------------------

    def _suppress(self, driver: Any) -> None:
        with self._lock:
            if self._suppressed:
                return
            self._suppressed = True
        logger.debug("nothing waits: suppressing offers")
        driver.suppressOffers()
        if self._job.has_pending():  # a task arrived after we looked: its wake() saw no suppress
            self.wake()

    def _declined_spare(self) -> None:
        with self._lock:
            self._spare_declined_at = time.monotonic()

    def wake(self) -> None:
        """Something waits for an offer: revive if offers are suppressed, or if the job
        filtered resources for want of a task a moment ago (:data:`REVIVE_WINDOW`)."""
        now = time.monotonic()
        with self._lock:
            if self._driver is None:
                return
            filtered = (now - self._spare_declined_at < REVIVE_WINDOW
                        and now >= self._yielding_until)
            if not self._suppressed and not filtered:
                return
            self._suppressed = False
            self._spare_declined_at = float("-inf")
            driver = self._driver
        logger.debug("reviving offers")
        driver.reviveOffers()

    # -- status updates ----------------------------------------------------------------------

    def statusUpdate(self, driver: Any, status: Mapping[str, Any]) -> None:  # noqa: N802
        if self.slots is not None:
            self._adopt_from(status)
        try:
            self._job.on_status(status)
        except Exception:  # noqa: BLE001 - not recorded: don't ack, Mesos will resend it
            logger.exception("cannot record the status update %s", status.get("state"))
            return
        if self.slots is not None and has_ended_for_framework(str(status.get("state"))):
            task_id = str(status.get("task_id", {}).get("value", ""))
            if str(status.get("reason", "")) in SLOT_ENDED_REASONS:
                self.slots.executor_ended(self.slots.executor_of(task_id))
            else:
                self.slots.task_ended(task_id)
        if "uuid" in status:
            driver.acknowledgeStatusUpdate(status)

    def _adopt_from(self, status: Mapping[str, Any]) -> None:
        """A live task of a slot this framework did not start (its predecessor did): the
        agent names the executor, which therefore runs; adopt the slot, busy with it."""
        assert self.slots is not None
        executor_id = str((status.get("executor_id") or {}).get("value", ""))
        task_id = str((status.get("task_id") or {}).get("value", ""))
        if not executor_id or executor_id == task_id or is_warmup_task(task_id) \
                or has_ended_for_framework(str(status.get("state"))):
            return  # a warm-up task does not keep its slot from trials
        agent_id = str((status.get("agent_id") or {}).get("value", ""))
        info = self._recorded_info(executor_id)
        gpus = int(Resources.from_json(info.get("resources") or []).scalar("gpus")) if info else 0
        if self.slots.adopt(executor_id, agent_id, task_id, gpus, info):
            logger.info("adopting slot %s on %s (running %s)", executor_id, agent_id, task_id)

    def kill(self, task_ids: Sequence[str]) -> None:
        if self._driver is None:
            return
        for task_id in task_ids:
            self._driver.killTask({"value": task_id})


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
