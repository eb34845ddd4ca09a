"""The builder of a :class:`~framework._runtime.JobRunner`: every part wired before any serves.

In named phases, each making what the next needs, so that no part is given a collaborator after
it was made and no callback reaches for one that does not exist yet:

1. the record: the job store opened, what an earlier framework of the job recorded read back,
   this framework's facts written (``_open_record``);
2. the master's side: the link to the master (a resumed job's FrameworkID), offer revival,
   the agents' sandboxes, the warm slots (``_master_side``);
3. the trials: the trial book, telemetry keeping usage on it, the controller, a resumed job's
   trials requeued or its AppCore adopted (``_trials``);
4. the job's own servers bound (not serving): the gRPC service, the file server, the job page
   over the registry and the live page source (``_listen``) — their addresses are what the
   scheduler hands to tasks, so they are bound just before it;
5. the scheduler, the peer board, the log collector and the control desk (``_scheduling``).

Nothing serves, subscribes or polls until :meth:`JobRunner.start`.
"""

from __future__ import annotations

from dataclasses import dataclass
import logging
import os
from pathlib import Path
import socket
import time
from typing import Any

import grpc

from disauto.common import paths
from disauto.common import task_env
from disauto.common.certificates import Identity
from disauto.common.processes import start_time
from disauto.common.python_command import parse_python_command
from disauto.common.slots import EXECUTOR_MODULE
from disauto.common.slots import Preload
from disauto.common.slots import preload_modules
from disauto.common.tokens import new_job_token
from disauto.framework import _meta as meta
from disauto.framework._checkpoints import JobCheckpoints
from disauto.framework._checkpoints import running_try
from disauto.framework._fileserver import FileServer
from disauto.framework._job import JobController
from disauto.framework._job.book import TrialBook
from disauto.framework._job.desk import ControlDesk
from disauto.framework._log_collector import LogCollector
from disauto.framework._master_endpoint import MasterEndpoint
from disauto.framework._master_endpoint import advertise_host_for
from disauto.framework._mesos_link import MesosLink
from disauto.framework._peers import PeerBoard
from disauto.framework._revival import OfferRevival
from disauto.framework._runner_parts import Listeners
from disauto.framework._runner_parts import RunnerParts
from disauto.framework._runner_parts import Telemetry
from disauto.framework._runtime import JobRunner
from disauto.framework._sandbox_logs import SandboxLogs
from disauto.framework._scheduler import JobScheduler
from disauto.framework._service import make_server
from disauto.framework._slots import SlotTable
from disauto.framework._spec import JobConfig
from disauto.framework._store import JobStore
from disauto.framework._task_places import TaskPlaces
from disauto.framework._telemetry.monitor import COLLECTOR_NAME
from disauto.framework._telemetry.monitor import StatisticsCollector
from disauto.framework._telemetry.monitor import TelemetryLoop
from disauto.framework._telemetry.processors import builtin_processors
from disauto.framework._telemetry.registry import BuiltinCollector
from disauto.framework._telemetry.registry import TelemetryRegistry
from disauto.framework._telemetry.scheduler import TelemetryScheduler
from disauto.framework.control import ControlChannel
from disauto.framework.policies import create_policy
from disauto.framework.webui.server import JobPageServer
from disauto.framework.webui.sources import LiveJob


logger = logging.getLogger("disauto.framework._runtime")


@dataclass(frozen=True)
class RunnerOptions:
    """How to run the job (``da-submit``'s flags that are not the job's configuration).

    Attributes:
        offer_policy: a name from ``framework.policies.POLICIES``.
        advertise_host: how tasks reach this machine (default: derived from the master).
        bind_host: where the framework's gRPC service, its file server and AppCore listen:
            ``127.0.0.1`` in local mode, ``0.0.0.0`` with ``--bind-all``; None (a cluster)
            binds the framework's to ``advertise_host`` and AppCore to its agent's host name.
        tls: the framework's certificate and key: its gRPC service serves TLS alone, AppCore
            makes its own certificate and serves TLS, and every task trusts just these
            certificates. None: plain gRPC.
        resume: carry on a job recorded in the job folder whose framework died (``da-job
            resume``): the same job token and, where free, the same ports, so that AppCore and
            runners still running reach the new framework; on the same master the recorded
            FrameworkID is re-subscribed (Mesos failover) and its tasks reconciled, on a new
            one (``--master local`` boots a fresh cluster) the trials in flight run again.
        telemetry: run the registry of collectors and processors (``framework/_telemetry``)
            on its scheduler while the job runs, and serve it at the job page's
            ``api/registry``; False: the data service only reads what the record holds.
    """

    offer_policy: str = "fifo"
    advertise_host: str | None = None
    bind_host: str | None = None
    tls: Identity | None = None
    resume: bool = False
    telemetry: bool = True


@dataclass(frozen=True)
class _OpenedRecord:
    """The record as this framework found it."""

    store: JobStore
    previous: meta.JobMeta
    same_master: bool
    """A resumed job on the master it ran on (Mesos failover: its tasks are adopted)."""
    checkpoint: bool
    """FrameworkInfo.checkpoint: true for a new framework; a framework failing over keeps what
    it was registered with (a record of an earlier DisAuto says none: it did not ask)."""


def build_runner(config: JobConfig, job_dir: Path, master: MasterEndpoint,
                 options: RunnerOptions | None = None) -> JobRunner:
    """The runner of ``config``'s job in ``job_dir`` on ``master``, wired and not started."""
    options = options or RunnerOptions()
    opened = _open_record(config, job_dir, master, options)
    link, revival, sandboxes, slots = _master_side(config, opened, master)
    controller, places, usage, checkpoints = _trials(config, job_dir, opened, options, link,
                                                     revival, sandboxes, slots)
    advertise = options.advertise_host or advertise_host_for(master.uri)
    telemetry = _telemetry(opened.store, job_dir, usage, config, options)
    listeners = _listen(config, job_dir, opened, options, (controller, checkpoints), link,
                        telemetry, advertise)
    policy = create_policy(options.offer_policy, config.offer_policy_settings,
                           runner=config.runner)
    # Policies that rank jobs (deadline) exchange standings through the master alone.
    auth = (master.principal, master.secret or "") if master.principal else None
    peers = PeerBoard(policy.standing, link.driver, link.master_address,
                      link.framework_id, auth=auth) if policy.uses_progress else None
    scheduler = JobScheduler(
        controller, policy, listeners.framework_address, peers=peers,
        uris=listeners.files.uris(config.files, config.inputs), logs=sandboxes,
        tls_env=_tls_env(options.tls), appcore_bind=options.bind_host or "", slots=slots,
        executor_command=config.executor_command or f"python3 -m {EXECUTOR_MODULE}",
        preload=_preload(config),
        master_auth=(master.principal, master.secret or "") if master.principal else None,
        link=link, revival=revival)
    locations = controller.tasks.task_locations if slots is None else (
        lambda: controller.tasks.task_locations() + slots.ended_executors())
    logs = LogCollector(sandboxes, link.framework_id, locations,
                        job_dir / paths.TASK_LOGS, slot_of=places.slot_of,
                        on_full=opened.store.note_full)
    desk = ControlDesk(ControlChannel(opened.store), controller, link.kill)
    return JobRunner(RunnerParts(
        config=config, job_dir=job_dir, master=master, resume=options.resume,
        store=opened.store, controller=controller, link=link, scheduler=scheduler,
        listeners=listeners, telemetry=telemetry, peers=peers, slots=slots,
        sandboxes=sandboxes, logs=logs, desk=desk, advertise_host=advertise,
        checkpoint=opened.checkpoint))


def _open_record(config: JobConfig, job_dir: Path, master: MasterEndpoint,
                 options: RunnerOptions) -> _OpenedRecord:
    """Open the job's record, read what an earlier framework of it left, write this one's."""
    store = JobStore(job_dir / paths.JOB_DB)
    previous = store.meta()
    same_master = options.resume and previous[meta.MASTER] == master.uri
    checkpoint = previous[meta.FRAMEWORK_CHECKPOINT] \
        if same_master and previous[meta.FRAMEWORK_ID] else True
    opening: dict[meta.MetaKey[Any], Any] = {
        meta.JOB_ID: config.job_id, meta.CONFIG: config, meta.MASTER: master.uri,
        meta.OFFER_POLICY: options.offer_policy, meta.STATE: meta.RUNNING,
        meta.PID: os.getpid(), meta.PID_START: start_time(os.getpid()),
        meta.HOST: socket.gethostname(), meta.FRAMEWORK_REGISTERED: False,
        meta.INTERRUPTED_REASON: "", meta.FRAMEWORK_CHECKPOINT: checkpoint,
        meta.AGENT_PRINCIPAL: master.agent_principal or "",
        meta.RESUMED_AT if options.resume else meta.STARTED_AT: time.time()}
    store.set_meta_many(opening)
    return _OpenedRecord(store, previous, same_master, checkpoint)


def _master_side(config: JobConfig, opened: _OpenedRecord, master: MasterEndpoint) -> tuple[
        MesosLink, OfferRevival, SandboxLogs, SlotTable | None]:
    """The link to the master, offer revival, the agents' sandboxes (read with the job's agent
    credentials) and the warm slots."""
    link = MesosLink(opened.previous[meta.FRAMEWORK_ID] if opened.same_master else "")
    store = opened.store
    # Slots are numbered across framework incarnations (the count is in the record): a
    # resumed framework's new slots never take the id of one its predecessor started.
    slots = SlotTable(
        config.job_id, config.slot_idle, started=store.get_meta(meta.SLOTS_STARTED),
        on_start=lambda count: store.set_meta(meta.SLOTS_STARTED, count),
    ) if config.slot_mode == "warm" else None
    return link, OfferRevival(link), SandboxLogs(auth=master.agent_auth), slots


def _trials(config: JobConfig, job_dir: Path, opened: _OpenedRecord, options: RunnerOptions,
            link: MesosLink, revival: OfferRevival, sandboxes: SandboxLogs,
            slots: SlotTable | None
            ) -> tuple[JobController, TaskPlaces, TelemetryLoop | None, JobCheckpoints]:
    """The trial book, telemetry keeping each trial's usage on it, the controller, and the
    trials' checkpoints (a try run again resumes from its trial's latest)."""
    checkpoints = JobCheckpoints(config, job_dir, lambda number: running_try(book, number))
    book = TrialBook(opened.store, checkpoints.resume_point)
    places = TaskPlaces(book, slots, sandboxes, link)
    # The built-in collector: the agents' /monitor/statistics every --telemetry-interval.
    usage = TelemetryLoop([StatisticsCollector(sandboxes.endpoints, link.framework_id,
                                               places.measured, fetch=sandboxes.get_json)],
                          book) \
        if options.telemetry and config.telemetry_interval > 0 else None
    controller = JobController(config, opened.store, _job_token(job_dir, options.resume),
                               on_pending=revival.wake, log_tail=places.stderr_tail,
                               on_kill=link.kill, book=book, measures=usage)
    if controller.outcome is not None:
        pass  # its end is recorded: the resumed framework only finishes it
    elif options.resume and not opened.same_master:
        controller.requeue_in_flight("the job resumed on a new cluster")
    elif options.resume:
        controller.adopt_appcore()
    return controller, places, usage, checkpoints


def _telemetry(store: JobStore, job_dir: Path, usage: TelemetryLoop | None,
               config: JobConfig, options: RunnerOptions) -> Telemetry:
    """The registry of collectors and processors (kept in the record, so a resumed job has the
    entries its user added) and its scheduler."""
    collectors = [BuiltinCollector(COLLECTOR_NAME, config.telemetry_interval,
                                   usage.measure)] if usage is not None else []
    registry = TelemetryRegistry(store, collectors=collectors, processors=builtin_processors(),
                        workdir=job_dir) if options.telemetry else None
    return Telemetry(usage, registry,
                     TelemetryScheduler(registry) if registry is not None else None)


def _listen(config: JobConfig, job_dir: Path, opened: _OpenedRecord, options: RunnerOptions,
            served: tuple[JobController, JobCheckpoints], link: MesosLink,
            telemetry: Telemetry, advertise: str) -> Listeners:
    """Bind the job's servers (a resumed job's ports where free) and record where they are."""
    controller = served[0]
    previous = opened.previous if options.resume else meta.JobMeta()
    bind = options.bind_host or advertise
    files = FileServer(job_dir, advertise, bind, port=previous[meta.FILES_PORT])
    server, grpc_port = _bind(served, bind, previous[meta.GRPC_PORT], options.tls)
    source = LiveJob(controller, job_dir, link.kill, telemetry.registry)
    page = JobPageServer({config.job_id: source}.copy, bind, advertise,
                         port=previous[meta.WEBUI_PORT], single=config.job_id)
    listeners = Listeners(server, files, page, f"{advertise}:{grpc_port}",
                          page.job_url(config.job_id))
    opened.store.set_meta_many({
        meta.GRPC_PORT: grpc_port, meta.FILES_PORT: files.port, meta.WEBUI_PORT: page.port,
        meta.WEBUI_URL: listeners.page_url, meta.BIND_HOST: bind,
        meta.TLS_FINGERPRINT: options.tls.fingerprint if options.tls else ""})
    return listeners


def _bind(served: tuple[JobController, JobCheckpoints], host: str, port: int,
          tls: Identity | None) -> tuple[grpc.Server, int]:
    """The framework's gRPC server on ``host``: on ``port`` (a resumed job's), else on a free
    port; TLS alone with ``tls``."""
    key_cert = (tls.key_pem, tls.cert_pem) if tls else None
    controller, checkpoints = served
    if port:
        try:
            return make_server(controller, host, port, tls=key_cert, checkpoints=checkpoints)
        except OSError:
            logger.warning("port %d of the framework's gRPC service is taken; AppCore and "
                           "runners still running will not find this framework", port)
    return make_server(controller, host, tls=key_cert, checkpoints=checkpoints)


def _preload(config: JobConfig) -> Preload | None:
    """How a slot's pre-imported interpreter runs a trial (``--slot-preload``), or None."""
    if config.slot_mode != "warm" or not (config.slot_preload or config.slot_preload_auto):
        return None
    modules = preload_modules(config.slot_preload)
    return Preload(parse_python_command(config.launch_cmd), modules,
                   tuple(m for m in config.slot_preload_optional if m not in modules)
                   if config.slot_preload_auto else ())


def _tls_env(tls: Identity | None) -> dict[str, str]:
    """What tasks need to trust the framework: its certificate (never its key) and name."""
    if tls is None:
        return {}
    return {task_env.FRAMEWORK_CERT: tls.cert_pem.decode(),
            task_env.FRAMEWORK_TLS_NAME: tls.server_name}


def _job_token(job_dir: Path, resume: bool) -> str:
    """The job's token: a new one, kept in the job folder (0600) for ``da-job resume``."""
    path = job_dir / paths.TOKEN
    if resume and path.exists():
        return path.read_text().strip()
    token = new_job_token()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(token)
    return token
