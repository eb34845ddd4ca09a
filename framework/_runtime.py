"""Runs one job: the framework's parts, as ``framework/_runner_builder.py`` wired them.

``JobRunner`` is what ``da-submit`` drives: ``start()`` serves and subscribes to the master,
``wait()`` runs the loop until the job ends, ``stop()`` kills what still runs and tears the
framework down; ``abandon()`` leaves it interrupted for ``da-job resume``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
import getpass
import logging
from pathlib import Path
import shutil
import time

from disauto.common.durations import format_duration
from disauto.framework import _meta as meta
from disauto.framework._capacity import agent_capacities
from disauto.framework._capacity import unfit
from disauto.framework._deadline_status import deadline_forms
from disauto.framework._framework_info import framework_info
from disauto.framework._job import APPCORE_KEY
from disauto.framework._job.progress import unreachable_note
from disauto.framework._master_endpoint import MasterUnreachableError
from disauto.framework._master_endpoint import check_credentials
from disauto.framework._master_endpoint import check_master
from disauto.framework._runner_parts import RunnerParts
from disauto.framework._scheduler_driver import JobSchedulerDriver
from disauto.framework._store import DiskFullError
from disauto.framework.webui import report
from disauto.framework.webui.views import compute_importance_in_worker
from disauto.framework.webui.views import read_record
from disauto.framework.webui.views import stop_importance_worker
from disauto.protos import framework_pb2


logger = logging.getLogger(__name__)


class MasterAwayError(ConnectionError):
    """The master has been away longer than the job's ``master_timeout``; the framework gave up
    (the job is left interrupted: ``da-job resume`` carries it on once the master is back)."""


UNREACHABLE_RECONCILE_SECONDS = 30.0
"""How often the tasks on unreachable agents, and the launches Mesos has said nothing of
(``framework/_job/silence.py``), are reconciled explicitly (Mesos' advice to a PARTITION_AWARE
framework, apache/mesos docs/reconciliation.md): the answer says when one is back
(TASK_RUNNING), or gone for good (the trial runs again)."""


@dataclass
class _Clock:
    """The run loop's times (``time.monotonic``): when the job started, counting the time an
    earlier framework ran it, and when the next capacity check and the next reconciliation of
    unreachable tasks are due."""

    started: float
    next_capacity_check: float
    capacity_interval: float
    next_reconcile: float = 0.0


class JobRunner:
    """One job on one master (made by :func:`framework._runner_builder.build_runner`).

    Args:
        parts: the job's framework, wired and not started.
    """

    def __init__(self, parts: RunnerParts) -> None:
        self.config = parts.config
        self.job_dir = parts.job_dir
        self.master = parts.master
        self.resume = parts.resume
        self.store = parts.store
        self.controller = parts.controller
        self.scheduler = parts.scheduler
        self.page_url = parts.listeners.page_url
        self.framework_address = parts.listeners.framework_address
        self._parts = parts
        self._link = parts.link
        self._listeners = parts.listeners
        self._telemetry = parts.telemetry
        self._recorded_agents: dict[str, str] = {}
        self._driver: JobSchedulerDriver | None = None
        self._stopped = False
        self._importance_worker = False  # this job asked for the page's importance worker

    # -- starting ------------------------------------------------------------------------------

    def start(self, register_timeout: float = 60.0) -> None:
        """Serve, subscribe, and wait until the master registered the framework.

        Raises:
            MasterUnreachableError: the master is unreachable or does not register us in time.
        """
        check_master(self.master.uri)
        check_credentials(self.master.uri, self.master.principal, self.master.secret)
        self._listeners.start()
        self._driver = JobSchedulerDriver(
            self.scheduler, self._framework_info(), self.master.uri, link=self._link,
            use_addict=False, implicit_acknowledgements=False, principal=self.master.principal,
            secret=self.master.secret)
        self._driver.start()
        if not self._registered(register_timeout):
            self._driver.stop(failover=True)  # nothing was launched: no TEARDOWN needed
            self._driver.join()
            self._driver = None
            self._stopped = True
            self._shutdown_services()
            raise MasterUnreachableError(
                f"the Mesos master at {self.master.uri} did not register the framework within "
                f"{register_timeout:.0f} s")
        if self.scheduler.framework_lost:  # the job has ended (FRAMEWORK_LOST, or as recorded)
            return
        self._parts.logs.start()
        compute_importance_in_worker()  # it imports Optuna's evaluators while the job runs
        self._importance_worker = True
        self._telemetry.start()
        if self._parts.peers is not None:
            self._parts.peers.start()
        self.check_capacity(every_task=True)

    def _registered(self, timeout: float) -> bool:
        """Wait until the master registered the framework, or took it away (the master's
        ERROR comes at once: a removed framework's resume does not wait out ``timeout``)."""
        deadline = time.monotonic() + timeout
        while not self._link.registered.wait(0.1):
            if self.scheduler.framework_lost:
                return True
            if time.monotonic() >= deadline:
                return False
        return True

    def _framework_info(self) -> dict[str, object]:
        return framework_info(
            user=self.config.user or getpass.getuser(), name=self.config.app_name,
            hostname=self._parts.advertise_host, failover_timeout=self.config.failover_timeout,
            webui_url=self.page_url, job_id=self.config.job_id,
            framework_address=self.framework_address, roles=self.config.subscribed_roles,
            framework_id=self._link.framework_id(), checkpoint=self._parts.checkpoint)

    # -- the run loop --------------------------------------------------------------------------

    def wait(self, poll: Callable[[], None] | None = None, interval: float = 0.5,
             capacity_interval: float = 15.0) -> None:
        """Block until the job ends, calling ``poll`` every ``interval`` seconds after each
        :meth:`step`.

        Raises:
            MasterAwayError: the master has been away longer than ``master_timeout``.
        """
        now = time.monotonic()
        clock = _Clock(now - self._elapsed_before(), now + capacity_interval, capacity_interval)
        while not self.controller.wait(interval):
            self.step(clock)
            if poll is not None:
                poll()
        if poll is not None:
            poll()

    def step(self, clock: _Clock) -> None:
        """One round of the run loop, in its phases.

        Raises:
            MasterAwayError: the master has been away longer than ``master_timeout``.
            DiskFullError: a write found the job's disk full (nothing more can be recorded).
        """
        if self.store.full:
            raise DiskFullError(self.store.full)
        self._check_master()  # away too long: interrupted, not ended
        self._parts.desk.serve()  # what da-job and the job page asked for
        self._record_agents()
        self.scheduler.reap_idle_slots()
        self._expire_trials()
        self._see_to_unreachable(clock)
        self._check_budgets(clock)

    def _expire_trials(self) -> None:
        """Trials past ``--trial-timeout`` end TIMEOUT, those whose task outlives their final
        report by ``--trial-exit-grace`` (or the timeout) COMPLETED; their tasks are killed."""
        expired = self.controller.expire_trials()
        if expired:
            self.scheduler.kill(expired)

    def _see_to_unreachable(self, clock: _Clock) -> None:
        """Tasks unreachable past ``--unreachable-timeout`` are given up on (their trials run
        again); those still unreachable, and the launches still unheard of, are reconciled
        every :data:`UNREACHABLE_RECONCILE_SECONDS`."""
        abandoned = self.controller.expire_unreachable().abandoned
        if abandoned:
            self.scheduler.abandon(abandoned)
        now = time.monotonic()
        if now >= clock.next_reconcile:
            clock.next_reconcile = now + UNREACHABLE_RECONCILE_SECONDS
            self.scheduler.reconcile(self.controller.unreachable_tasks()
                                     + self.controller.silent_launches())

    def _check_budgets(self, clock: _Clock) -> None:
        """End the job when its time budget (``max_duration``) is spent, or when a task that
        waits for an offer could never fit any agent (checked every ``capacity_interval``
        seconds: agents can leave)."""
        now = time.monotonic()
        budget = self.config.max_duration
        if budget and now - clock.started >= budget:
            done = self.controller.progress().done
            self.controller.finish(
                framework_pb2.TIME_LIMIT_REACHED,
                f"the time budget of {format_duration(budget)} (--max-duration) is spent "
                f"after {done} finished trials")
        elif now >= clock.next_capacity_check:
            clock.next_capacity_check = now + clock.capacity_interval
            self.check_capacity()

    def _elapsed_before(self) -> float:
        """Seconds the job ran before this framework took it over (0 for a new job)."""
        if not self.resume:
            return 0.0
        return max(0.0, time.time() - (self.store.get_meta(meta.STARTED_AT) or time.time()))

    def _record_agents(self) -> None:
        """Keep the agents' endpoints in the record when they change (``da-job logs`` of a
        task still running after its framework died reads through them)."""
        endpoints = self._parts.sandboxes.endpoints()
        if endpoints != self._recorded_agents:
            self.store.set_meta(meta.AGENT_ENDPOINTS, endpoints)
            self._recorded_agents = endpoints

    def master_note(self) -> tuple[str, ...]:
        """What the progress line says while the master is away, else the trials on
        unreachable agents and where the job stands against its deadline: the note in its
        forms, longest first (the deadline's shorter ones leave the rate and the ETA room); ()
        when none of that applies."""
        if self.scheduler.master_away_for() < 5.0:
            # The trials are copied only for the notes that read them (every poll; 10,000).
            trials = self.controller.trials() if self.config.deadline \
                else self.controller.tasks.unreachable_trials()
            unreachable = unreachable_note(trials, self.config.unreachable_timeout)
            deadline = deadline_forms(self.config, trials, time.time()) or ("",)
            return tuple(" | ".join(note for note in (unreachable, form) if note)
                         for form in deadline if unreachable or form)
        since = time.strftime("%H:%M:%S", time.localtime(self.scheduler.master_away_at))
        return (f"the Mesos master is away since {since}; retrying, the job stops after "
                f"{format_duration(self.config.master_timeout)} without it",)

    def _check_master(self) -> None:
        """Give up on a master that has been away longer than ``master_timeout`` (counted from
        the last event heard from it); drop the stream of one silent for too many heartbeats,
        so that the framework subscribes again.

        Raises:
            MasterAwayError: it has.
        """
        self._link.check_heartbeats()
        away = self.scheduler.master_away_for()
        if away >= self.config.master_timeout:
            raise MasterAwayError(
                f"the Mesos master at {self.master.uri} has been away for "
                f"{format_duration(round(away))} (--master-timeout "
                f"{format_duration(self.config.master_timeout)}); the job is interrupted, not "
                f"ended: da-job resume {self.config.job_id} carries it on once the master is "
                "back")

    # -- ending -------------------------------------------------------------------------------

    def abandon(self, reason: str) -> None:
        """Leave the job interrupted without a master: nothing can be killed or torn down, so
        the framework fails over (its tasks keep running on their agents, and a resume on the
        same master re-subscribes and adopts them); the record keeps every trial as it was and
        says why."""
        if self._stopped:
            return
        self._stopped = True
        self._keep(lambda: self.store.set_meta(meta.INTERRUPTED_REASON, reason))
        self._stop_helpers(last_copy=False)  # a master away may mean agents that hang too
        self._release_driver(teardown=False)  # the framework stays for a resume
        self._shutdown_services()
        self._keep(self._record_offer_counts)
        if not self.store.full:  # a report of megabytes has no room on a full disk
            report.write(self.job_dir, read_record(self.store, "interrupted"))

    @staticmethod
    def _keep(write: Callable[[], None]) -> None:
        """Record what an interrupted job's framework knows, if there is room for it: the
        record stays whole either way, and a resume carries the job on."""
        try:
            write()
        except DiskFullError as err:
            logger.warning("not recorded: %s", err)

    def check_capacity(self, *, every_task: bool = False) -> None:
        """End the job (UNSCHEDULABLE) if a task that waits for an offer fits no agent, or
        only resources reserved for a role the job lacks.

        With ``every_task`` (at the start) AppCore and the trials are judged whether or not
        they wait yet. Best effort: a master that cannot be asked leaves the job as it was.
        """
        waiting = {request.key for request in self.controller.launch_requests()}
        if every_task:
            waiting |= {APPCORE_KEY, "trial"}
        tasks = {}
        if any(key != APPCORE_KEY for key in waiting):
            tasks["--app-runner"] = self.config.runner
        if APPCORE_KEY in waiting:
            tasks["--app-core"] = self.config.appcore
        address = self.scheduler.master_address or (
            "" if "://" in self.master.uri else self.master.uri)
        if not tasks or not address:
            return
        auth = (self.master.principal, self.master.secret or "") if self.master.principal \
            else None
        try:
            agents = agent_capacities(address, auth=auth)
        except (OSError, ValueError) as err:
            logger.debug("cannot ask the master for its agents: %s", err)
            return
        why = unfit(tasks, agents, self.config.subscribed_roles)
        if why:
            self.controller.finish(framework_pb2.UNSCHEDULABLE, why)

    def stop(self, outcome: int = framework_pb2.STOPPED, message: str = "stopped by the user",
             grace: float = 15.0, finishing_grace: float = 10.0) -> None:
        """End the job: kill its tasks, wait for them (up to ``grace`` s), tear down, write its
        report; :meth:`close_record` then says it ended.

        The end is recorded first (the outcome, then that the framework is torn down), the
        report (megabytes) last: a framework killed in between leaves the job interrupted with
        its end recorded, and ``da-job resume`` finishes it (without a master once torn down).

        A task whose trial already sent its final result (the trial that reached the target,
        writing its ``--output``) has ``finishing_grace`` seconds to exit on its own first (no
        more than ``--trial-exit-grace``, as while the job runs).
        """
        if self._stopped:
            return
        if self.store.full:  # nothing can be recorded: left interrupted (abandon) instead
            raise DiskFullError(self.store.full)
        self.controller.finish(outcome, message)  # DiskFullError: not stopped, abandon it
        self._stopped = True
        if self.scheduler.framework_lost:
            self._stop_lost()
            return
        self._end_tasks(grace, min(finishing_grace, self.config.trial_exit_grace))
        self._stop_helpers()
        self._collect_best_output()
        self._release_driver(teardown=True)  # TEARDOWN: the master kills whatever is left
        if self._driver is not None:
            self._keep(lambda: self.store.set_meta(meta.TORN_DOWN, True))
        self._shutdown_services()
        self._keep(self._record_offer_counts)
        self._write_report()

    def close_record(self) -> None:
        """Say in the record that the job ended, last of all: whoever sees it ended finds its
        report and results written. Nothing for a job left interrupted (:meth:`abandon`)."""
        if self.controller.outcome is not None and not self.store.full:
            self.store.set_meta(meta.STATE, meta.ENDED)

    def _write_report(self) -> None:
        """Write report.html, its parameter importance computed by the page's worker, which
        then ends (a da-submit of one job exits soon after; a notebook's goes on)."""
        try:
            if not self.store.full:
                report.write(self.job_dir, read_record(self.store, "ended"))
        finally:
            if self._importance_worker:
                self._importance_worker = False
                stop_importance_worker()

    def _end_tasks(self, grace: float, finishing_grace: float) -> None:
        """Kill the job's tasks (those writing a final result after ``finishing_grace``) and
        wait up to ``grace`` seconds for them to end; then its slots."""
        finishing = set(self.controller.tasks.finishing_task_ids())
        # AppCore stays while they finish: it still has to answer their final reports.
        kept = finishing | ({self.controller.tasks.appcore_task_id()} if finishing else set())
        live = self.controller.tasks.live_task_ids()
        if [t for t in live if t not in kept]:
            self.scheduler.kill([t for t in live if t not in kept])
        deadline = time.monotonic() + finishing_grace
        while finishing & set(live) and time.monotonic() < deadline and not self.store.full:
            time.sleep(0.2)
            live = self.controller.tasks.live_task_ids()
        if kept & set(live):
            self.scheduler.kill(sorted(kept & set(live)))
        deadline = time.monotonic() + grace
        while live and time.monotonic() < deadline and not self.store.full:
            time.sleep(0.2)
            live = self.controller.tasks.live_task_ids()
        if live:
            logger.warning("tasks still running at teardown: %s", ", ".join(live))
        slots = self._parts.slots
        if slots is not None:  # TEARDOWN would end them too; say so explicitly first
            self.scheduler.shutdown_slots(slots.all(), "the job ended")

    def _stop_lost(self) -> None:
        """End a job whose framework was taken away: its tasks are not ours to kill or wait
        for, and a TEARDOWN would be refused (or remove someone else's framework)."""
        self._stop_helpers()
        self._collect_best_output()
        self._release_driver(teardown=False)
        self._shutdown_services()
        self._keep(self._record_offer_counts)
        self._write_report()

    def _record_offer_counts(self) -> None:
        """Keep the offer policy's counters in the job's record (offers seen, declined, ...)."""
        counts = {"offers_seen": self.scheduler.offers_seen,
                  "offers_declined": self.scheduler.offers_declined,
                  **self.scheduler.policy_stats()}
        self.store.set_meta(meta.OFFER_COUNTS, counts)

    def _stop_helpers(self, last_copy: bool = True) -> None:
        """Stop copying task logs (``last_copy``: after copying what is new) and exchanging
        standings."""
        self._parts.logs.stop(last_copy)
        if self._parts.peers is not None:
            self._parts.peers.stop()

    def _release_driver(self, *, teardown: bool) -> None:
        """Stop the driver: with TEARDOWN (the framework ends), or failing over (it stays)."""
        if self._driver is not None:
            self._driver.stop(failover=not teardown)
            self._driver.join()

    def _shutdown_services(self) -> None:
        self._keep(self._telemetry.stop)  # it records the last figures
        self._listeners.stop()

    def _collect_best_output(self) -> None:
        """Copy the best trial's output to ``DST/NAME`` (``--output DST#NAME``)."""
        output = self.config.output
        best = self.controller.best_trial()
        if output is None or best is None:
            return
        source = Path(output.destination) / f"trial-{best.number:04d}" / output.name
        target = Path(output.destination) / output.name
        try:
            if source.is_dir():
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(source, target)
            elif source.exists():
                shutil.copy2(source, target)
            else:
                return
        except OSError as err:
            logger.warning("cannot copy the best output %s to %s: %s", source, target, err)
            return
        self.store.set_meta(meta.BEST_OUTPUT, str(target))
