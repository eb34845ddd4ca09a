"""Runs one job: the job store, the file server, the gRPC service and the pymesos driver.

``JobRunner`` is what ``da-submit`` drives: ``start()`` subscribes to the master, ``wait()``
returns when the job ends, ``stop()`` kills what still runs and tears the framework down.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
import getpass
import json
import logging
import os
from pathlib import Path
import shutil
import socket
import time
from typing import Any
from urllib.error import HTTPError
from urllib.request import urlopen

from pymesos import MesosSchedulerDriver

from disauto.common import paths
from disauto.common import task_env
from disauto.common.certificates import Identity
from disauto.common.durations import format_duration
from disauto.common.master_http import master_request
from disauto.common.processes import start_time
from disauto.common.python_command import parse_python_command
from disauto.common.slots import EXECUTOR_MODULE
from disauto.common.slots import Preload
from disauto.common.slots import preload_modules
from disauto.common.tokens import new_job_token
from disauto.framework.capacity import agent_totals
from disauto.framework.capacity import unfit
from disauto.framework.deadline_status import deadline_note
from disauto.framework.errors import FailedPreconditionError
from disauto.framework.errors import NotFoundError
from disauto.framework.fileserver import FileServer
from disauto.framework.job import APPCORE_KEY
from disauto.framework.job import JobController
from disauto.framework.job_update import REQUEST_KEY
from disauto.framework.job_update import RESULT_KEY
from disauto.framework.job_update import UpdateRefusedError
from disauto.framework.job_update import UpdateRequest
from disauto.framework.job_update import UpdateResult
from disauto.framework.log_collector import LogCollector
from disauto.framework.peers import PeerBoard
from disauto.framework.policies import create_policy
from disauto.framework.sandbox_logs import SandboxLogs
from disauto.framework.scheduler import JobScheduler
from disauto.framework.service import make_server
from disauto.framework.slots import SlotTable
from disauto.framework.spec import JobConfig
from disauto.framework.store import JobStore
from disauto.framework.telemetry.monitor import COLLECTOR_NAME
from disauto.framework.telemetry.monitor import StatisticsCollector
from disauto.framework.telemetry.monitor import TaskPlace
from disauto.framework.telemetry.monitor import TelemetryLoop
from disauto.framework.telemetry.processors import builtin_processors
from disauto.framework.telemetry.registry import BuiltinCollector
from disauto.framework.telemetry.registry import Registry
from disauto.framework.telemetry.scheduler import TelemetryScheduler
from disauto.framework.webui import report
from disauto.framework.webui.server import JobPageServer
from disauto.framework.webui.sources import KILL_TRIALS_KEY
from disauto.framework.webui.sources import KILLED_FROM_PAGE
from disauto.framework.webui.sources import LiveJob
from disauto.framework.webui.views import read_record
from disauto.protos import framework_pb2


logger = logging.getLogger(__name__)

PAGE_LINGER_SECONDS = 10.0
"""At the job's end, how long an open job page gets to fetch the final record before the page
server stops (the server stops as soon as it has; a browser that draws its plots in software
on a busy machine polls every few seconds, and a page that misses the end polls a server that
is gone)."""


class MasterUnreachableError(ConnectionError):
    """The Mesos master cannot be reached or refuses the framework."""


class MasterAwayError(ConnectionError):
    """The master has been away longer than the job's ``master_timeout``; the framework gave up
    (the job is left interrupted: ``da-job resume`` carries it on once the master is back)."""


@dataclass(frozen=True)
class MasterEndpoint:
    """Where the Mesos master is, and how to authenticate to it."""

    uri: str
    """``host:port`` or ``zk://host:port/mesos``."""
    principal: str | None = None
    secret: str | None = None


def check_master(uri: str, timeout: float = 5.0) -> str:
    """GET /version of a ``host:port`` master; return its version.

    Raises:
        MasterUnreachableError: naming the address and the cause.
    """
    if uri.startswith(("zk://", "zoo://")):
        return ""
    address = uri if ":" in uri else f"{uri}:5050"
    try:
        with urlopen(f"http://{address}/version", timeout=timeout) as response:  # noqa: S310
            return str(json.loads(response.read())["version"])
    except (OSError, ValueError, KeyError) as err:
        raise MasterUnreachableError(
            f"cannot reach the Mesos master at {address} ({err}); check --master"
        ) from None


def check_credentials(uri: str, principal: str | None, secret: str | None,
                      timeout: float = 5.0) -> None:
    """Ask the scheduler endpoint whether these credentials (or none) are accepted.

    A master authenticates a scheduler call before anything else, so a GET answers 401 for
    missing or wrong credentials and 405 (POST expected) for accepted ones; pymesos would
    otherwise retry a refused SUBSCRIBE until its registration timeout.

    Raises:
        MasterUnreachableError: the master refuses them, naming what to give.
    """
    if uri.startswith(("zk://", "zoo://")):
        return
    address = uri if ":" in uri else f"{uri}:5050"
    request = master_request(f"http://{address}/api/v1/scheduler", principal or "",
                             secret or "")
    try:
        with urlopen(request, timeout=timeout):  # noqa: S310 - the master's URL
            return
    except HTTPError as err:
        if err.code != 401:
            return  # 405 and the like: the credentials passed
    except OSError:
        return  # reachability was checked; pymesos reports what follows
    if principal:
        raise MasterUnreachableError(
            f"the Mesos master at {address} refused principal {principal!r}; check "
            "--principal and --secret-file") from None
    raise MasterUnreachableError(
        f"the Mesos master at {address} requires authentication; give --principal and "
        "--secret-file") from None


def advertise_host_for(master_uri: str) -> str:
    """The address of this machine as seen from the master's network."""
    target = master_uri.split("://", 1)[-1].split("/", 1)[0].split(",", 1)[0]
    host, _, port = target.partition(":")
    if host in ("127.0.0.1", "localhost", "::1"):
        return "127.0.0.1"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((host, int(port or 5050)))
            return str(probe.getsockname()[0])
    except OSError:
        return socket.getfqdn()


class JobRunner:
    """One job on one master.

    Args:
        config: the job.
        job_dir: ``$DISAUTO_HOME/jobs/<job-id>``.
        master: the master endpoint.
        offer_policy: a name from ``framework.policies.POLICIES``.
        advertise_host: how tasks reach this machine (default: derived from the master).
        bind_host: where the framework's gRPC service, its file server and AppCore listen:
            ``127.0.0.1`` in local mode, ``0.0.0.0`` with ``--bind-all``; None (a cluster)
            binds the framework's to ``advertise_host`` and AppCore to its agent's host name.
        tls: the framework's certificate and key: its gRPC service serves TLS alone, AppCore
            makes its own certificate and serves TLS, and every task trusts just these
            certificates. None: plain gRPC.
        resume: carry on a job recorded in ``job_dir`` whose framework died (``da-job
            resume``): the same job token and, where free, the same ports, so that AppCore and
            runners still running reach the new framework; on the same master the recorded
            FrameworkID is re-subscribed (Mesos failover) and its tasks reconciled, on a new
            one (``--master local`` boots a fresh cluster) the trials in flight run again.
        telemetry: run the registry of collectors and processors (``framework/telemetry``)
            on its scheduler while the job runs, and serve it at the job page's
            ``api/registry``; False: the data service only reads what the record holds.
    """

    def __init__(
        self,
        config: JobConfig,
        job_dir: Path,
        master: MasterEndpoint,
        *,
        offer_policy: str = "fifo",
        advertise_host: str | None = None,
        bind_host: str | None = None,
        tls: Identity | None = None,
        resume: bool = False,
        telemetry: bool = True,
    ) -> None:
        self.config = config
        self.job_dir = job_dir
        self.master = master
        self.resume = resume
        self.store = JobStore(job_dir / paths.JOB_DB)
        previous = {key: self.store.get_meta(key) or "" for key in
                    ("master", "framework_id", "grpc_port", "files_port", "webui_port")}
        self._same_master = resume and previous["master"] == master.uri
        self._framework_id = previous["framework_id"] if self._same_master else ""
        meta = {"job_id": config.job_id, "config": config.to_json(), "master": master.uri,
                "offer_policy": offer_policy, "state": "RUNNING", "pid": str(os.getpid()),
                "pid_start": start_time(os.getpid()), "host": socket.gethostname(),
                "control": "", "framework_registered": "", "interrupted_reason": "",
                KILL_TRIALS_KEY: ""}
        if not resume:
            meta["started_at"] = str(time.time())
        else:
            meta["resumed_at"] = str(time.time())
        self.store.set_meta_many(meta)
        self._advertise = advertise_host or advertise_host_for(master.uri)
        self._logs = SandboxLogs()
        self._recorded_agents: dict[str, str] = {}
        self.controller = JobController(
            config, self.store, _job_token(job_dir, resume),
            on_pending=self._wake,
            log_tail=lambda status: self._logs.tail(
                status, self.scheduler.framework_id,
                slot=self._slot_of(str(status.get("task_id", {}).get("value", "")))),
            on_kill=lambda task_ids: self.scheduler.kill(task_ids),
        )
        if resume and not self._same_master:
            self.controller.requeue_in_flight("the job resumed on a new cluster")
        elif resume:
            self.controller.adopt_appcore()
        bind = bind_host or self._advertise
        self._files = FileServer(job_dir, self._advertise, bind,
                                 port=_int(previous["files_port"]) if resume else 0)
        self._server, grpc_port = _bind(self.controller, bind,
                                        _int(previous["grpc_port"]) if resume else 0, tls)
        # The job page (framework/webui): bound like the file server, its URL the
        # FrameworkInfo's webui_url, so the Mesos web UI links to it.
        self.page = JobPageServer(
            lambda: {config.job_id: self._page_source}, bind, self._advertise,
            port=_int(previous["webui_port"]) if resume else 0, single=config.job_id)
        # Telemetry (framework/telemetry): the registry is kept in the record, so a resumed
        # job has the entries its user added; the built-in collector (the agents'
        # /monitor/statistics every --telemetry-interval, 0: none) keeps each trial's usage.
        self._usage = TelemetryLoop(
            [StatisticsCollector(self._logs.endpoints, lambda: self.scheduler.framework_id,
                                 self._task_places)],
            self.controller) if telemetry and config.telemetry_interval > 0 else None
        collectors = [BuiltinCollector(COLLECTOR_NAME, config.telemetry_interval,
                                       self._usage.measure)] if self._usage is not None else []
        if self._usage is not None:
            self.controller.memory_note = self._usage.memory_note
            self.controller.exact_usage = self._usage.record_exact
            # GPU samples come from the trials' own runners (apprunner_sdk.gpu), where the GPU
            # is, through AppCore: stored and folded into the usage like the agents' figures.
            self.controller.gpu_samples = self._usage.record_samples
        self.telemetry = Registry(self.store, collectors=collectors,
                                  processors=builtin_processors(),
                                  workdir=job_dir) if telemetry else None
        self._telemetry_runs = TelemetryScheduler(self.telemetry) \
            if self.telemetry is not None else None
        self._page_source = LiveJob(self.controller, job_dir,
                                    lambda task_ids: self.scheduler.kill(task_ids),
                                    self.telemetry)
        self.page_url = self.page.job_url(config.job_id)
        self._page_kills: set[int] = set()
        self.store.set_meta_many({"grpc_port": str(grpc_port),
                                  "files_port": str(self._files.port),
                                  "webui_port": str(self.page.port),
                                  "webui_url": self.page_url,
                                  "bind_host": bind,
                                  "tls_fingerprint": tls.fingerprint if tls else ""})
        self.framework_address = f"{self._advertise}:{grpc_port}"
        policy = create_policy(offer_policy, config.offer_policy_settings, runner=config.runner)
        # Policies that rank jobs (deadline) exchange standings through the master alone.
        self.peers = PeerBoard(policy.standing, lambda: self._driver,
                               lambda: self.scheduler.master_address,
                               lambda: self.scheduler.framework_id) \
            if policy.uses_progress else None
        # Slots are numbered across framework incarnations (the count is in the record): a
        # resumed framework's new slots never take the id of one its predecessor started.
        self.slots = SlotTable(
            config.job_id, config.slot_idle,
            started=_int(self.store.get_meta(SLOTS_STARTED_KEY) or "0"),
            on_start=lambda count: self.store.set_meta(SLOTS_STARTED_KEY, str(count)),
        ) if config.slot_mode == "warm" else None
        self.scheduler = JobScheduler(
            self.controller,
            policy,
            self.framework_address,
            peers=self.peers,
            uris=self._files.uris(config.files, config.inputs),
            logs=self._logs,
            tls_env=_tls_env(tls),
            appcore_bind=bind_host or "",
            slots=self.slots,
            executor_command=config.executor_command or f"python3 -m {EXECUTOR_MODULE}",
            preload=_preload(config),
            master_auth=(master.principal, master.secret or "") if master.principal else None,
        )
        self.logs = LogCollector(self._logs, lambda: self.scheduler.framework_id,
                                 self.controller.task_locations, job_dir / paths.TASK_LOGS,
                                 slot_of=self._slot_of)
        self._driver: MesosSchedulerDriver | None = None
        self._stopped = False

    def _slot_of(self, task_id: str) -> str:
        """The warm slot's executor that ran ``task_id`` ("" for a command task): as this
        framework launched it, else as the record says (a task launched before a resume)."""
        slot = self.slots.executor_of(task_id) if self.slots is not None else ""
        return slot or self.controller.executor_of(task_id)

    def _wake(self) -> None:
        if self._driver is not None:
            self.scheduler.wake()

    def start(self, register_timeout: float = 60.0) -> None:
        """Serve, subscribe, and wait until the master registered the framework.

        Raises:
            MasterUnreachableError: the master is unreachable or does not register us in time.
        """
        check_master(self.master.uri)
        check_credentials(self.master.uri, self.master.principal, self.master.secret)
        self._server.start()
        self._files.start()
        self.page.start()
        framework_info = {
            "user": self.config.user or getpass.getuser(),
            "name": self.config.app_name,
            "hostname": self._advertise,
            "failover_timeout": self.config.failover_timeout,
            "webui_url": self.page_url,
            # The address travels in a label, so that AppCore and runners whose framework
            # moved (resumed on another port) find it through the master (common.rendezvous).
            "labels": {"labels": [
                {"key": "disauto.job", "value": self.config.job_id},
                {"key": task_env.FRAMEWORK_ADDRESS_LABEL, "value": self.framework_address},
            ]},
        }
        if self._framework_id:  # Mesos failover: the same framework, its tasks kept
            framework_info["id"] = {"value": self._framework_id}
        self._driver = MesosSchedulerDriver(
            self.scheduler,
            framework_info,
            self.master.uri,
            use_addict=False,
            implicit_acknowledgements=False,
            principal=self.master.principal,
            secret=self.master.secret,
        )
        if self._framework_id:
            self.scheduler.framework_id = self._framework_id
        self._driver.start()
        if not self.scheduler.registered_event.wait(register_timeout):
            self._driver.stop(failover=True)  # nothing was launched: no TEARDOWN needed
            self._driver.join()
            self._driver = None
            self._stopped = True
            self._shutdown_services()
            raise MasterUnreachableError(
                f"the Mesos master at {self.master.uri} did not register the framework within "
                f"{register_timeout:.0f} s"
            )
        self.logs.start()
        if self._telemetry_runs is not None:
            self._telemetry_runs.start()
        if self.peers is not None:
            self.peers.start()
        self.check_capacity(every_task=True)

    def wait(self, poll: Callable[[], None] | None = None, interval: float = 0.5,
             capacity_interval: float = 15.0) -> None:
        """Block until the job ends, calling ``poll`` every ``interval`` seconds.

        Meanwhile the job ends itself when its time budget (``max_duration``) is spent, and
        when a task waiting for an offer could never fit any agent (checked every
        ``capacity_interval`` seconds while something waits: agents can leave).
        """
        started = time.monotonic() - self._elapsed_before()
        next_capacity_check = time.monotonic() + capacity_interval
        while not self.controller.wait(interval):
            now = time.monotonic()
            self._check_master()
            self._check_control()
            self._record_agents()
            self.scheduler.reap_idle_slots()
            expired = self.controller.expire_trials()
            if expired:
                self.scheduler.kill(expired)
            budget = self.config.max_duration
            if budget and now - started >= budget:
                done = self.controller.progress().done
                self.controller.finish(
                    framework_pb2.TIME_LIMIT_REACHED,
                    f"the time budget of {format_duration(budget)} (--max-duration) is spent "
                    f"after {done} finished trials",
                )
            elif now >= next_capacity_check:
                next_capacity_check = now + capacity_interval
                self.check_capacity()
            if poll is not None:
                poll()
        if poll is not None:
            poll()

    def _elapsed_before(self) -> float:
        """Seconds the job ran before this framework took it over (0 for a new job)."""
        if not self.resume:
            return 0.0
        try:
            return max(0.0, time.time() - float(self.store.get_meta("started_at") or time.time()))
        except ValueError:
            return 0.0

    def _record_agents(self) -> None:
        """Keep the agents' endpoints in the record when they change (``da-job logs`` of a
        task still running after its framework died reads through them)."""
        endpoints = self._logs.endpoints()
        if endpoints != self._recorded_agents:
            self.store.set_meta("agent_endpoints", json.dumps(endpoints, sort_keys=True))
            self._recorded_agents = endpoints

    def master_note(self) -> str:
        """What the progress line says while the master is away, and where the job stands
        against its deadline (empty when neither applies)."""
        if self.scheduler.master_away_for() < 5.0:
            return deadline_note(self.config, self.controller.trials(), time.time())
        since = time.strftime("%H:%M:%S", time.localtime(self.scheduler.master_away_at))
        return (f"the Mesos master is away since {since}; retrying, the job stops after "
                f"{format_duration(self.config.master_timeout)} without it")

    def _check_master(self) -> None:
        """Give up on a master that has been away longer than ``master_timeout``.

        Raises:
            MasterAwayError: it has.
        """
        away = self.scheduler.master_away_for()
        if away >= self.config.master_timeout:
            raise MasterAwayError(
                f"the Mesos master at {self.master.uri} has been away for "
                f"{format_duration(round(away))} (--master-timeout "
                f"{format_duration(self.config.master_timeout)}); the job is interrupted, not "
                f"ended: da-job resume {self.config.job_id} carries it on once the master is "
                "back")

    def abandon(self, reason: str) -> None:
        """Leave the job interrupted without a master: nothing can be killed or torn down, so
        the framework fails over (its tasks keep running on their agents, and a resume on the
        same master re-subscribes and adopts them); the record keeps every trial as it was and
        says why."""
        if self._stopped:
            return
        self._stopped = True
        self.store.set_meta("interrupted_reason", reason)
        self.logs.stop()
        if self.peers is not None:
            self.peers.stop()
        if self._driver is not None:
            self._driver.stop(failover=True)  # no TEARDOWN: the framework stays for a resume
            self._driver.join()
        self._shutdown_services()
        self._record_offer_counts()
        report.write(self.job_dir, read_record(self.store, "interrupted"))

    def _check_control(self) -> None:
        """Act on a request another shell left in the record (``da-job kill``, ``update``)."""
        if self.store.get_meta("control") == "kill":
            self.controller.finish(framework_pb2.JOB_KILLED, "killed with da-job kill")
        self._check_trial_kills()
        self._check_update()

    def _check_trial_kills(self) -> None:
        """Kill the trials a job page served by ``da-job ui`` asked to (each once)."""
        text = self.store.get_meta(KILL_TRIALS_KEY)
        if not text:
            return
        try:
            asked = [int(number) for number in json.loads(text)]
        except (ValueError, TypeError):
            logger.warning("ignoring an unreadable request to kill trials: %r", text)
            self.store.set_meta(KILL_TRIALS_KEY, "")
            return
        for number in asked:
            if number in self._page_kills:
                continue
            self._page_kills.add(number)
            try:
                tasks = self.controller.kill_trial(number, KILLED_FROM_PAGE)
            except (NotFoundError, FailedPreconditionError) as err:
                logger.info("not killing trial %d: %s", number, err)
                continue
            if tasks:
                self.scheduler.kill(tasks)

    def _check_update(self) -> None:
        """Apply a ``da-job update`` request not answered yet, and answer it in the record."""
        text = self.store.get_meta(REQUEST_KEY)
        if not text:
            return
        answered = self.store.get_meta(RESULT_KEY)
        try:
            request = UpdateRequest.from_json(text)
            if answered and UpdateResult.from_json(answered).id == request.id:
                return
        except (ValueError, KeyError, TypeError) as err:
            logger.warning("ignoring an unreadable da-job update request: %s", err)
            self.store.set_meta(REQUEST_KEY, "")
            return
        try:
            result = UpdateResult(request.id, True, self.controller.update_search(request))
        except UpdateRefusedError as err:
            result = UpdateResult(request.id, False, str(err))
        self.store.set_meta(RESULT_KEY, result.to_json())

    def check_capacity(self, *, every_task: bool = False) -> None:
        """End the job (UNSCHEDULABLE) if a task that waits for an offer fits no agent.

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
            agents = agent_totals(address, auth=auth)
        except (OSError, ValueError) as err:
            logger.debug("cannot ask the master for its agents: %s", err)
            return
        why = unfit(tasks, agents)
        if why:
            self.controller.finish(framework_pb2.UNSCHEDULABLE, why)

    def stop(self, outcome: int = framework_pb2.STOPPED, message: str = "stopped by the user",
             grace: float = 15.0, finishing_grace: float = 10.0) -> None:
        """End the job: kill its tasks, wait for them (up to ``grace`` s), tear down.

        A task whose trial already sent its final result (the trial that reached the target,
        writing its ``--output``) has ``finishing_grace`` seconds to exit on its own first.
        """
        if self._stopped:
            return
        self._stopped = True
        self.controller.finish(outcome, message)
        if self.scheduler.framework_lost:
            self._stop_lost()
            return
        finishing = set(self.controller.finishing_task_ids())
        # AppCore stays while they finish: it still has to answer their final reports.
        kept = finishing | ({self.controller.appcore_task_id()} if finishing else set())
        live = self.controller.live_task_ids()
        if [t for t in live if t not in kept]:
            self.scheduler.kill([t for t in live if t not in kept])
        deadline = time.monotonic() + finishing_grace
        while finishing & set(live) and time.monotonic() < deadline:
            time.sleep(0.2)
            live = self.controller.live_task_ids()
        if kept & set(live):
            self.scheduler.kill(sorted(kept & set(live)))
        deadline = time.monotonic() + grace
        while live and time.monotonic() < deadline:
            time.sleep(0.2)
            live = self.controller.live_task_ids()
        if live:
            logger.warning("tasks still running at teardown: %s", ", ".join(live))
        if self.slots is not None:  # TEARDOWN would end them too; say so explicitly first
            self.scheduler.shutdown_slots(self.slots.all(), "the job ended")
        self.logs.stop()
        if self.peers is not None:
            self.peers.stop()
        self._collect_best_output()
        if self._driver is not None:
            self._driver.stop()  # TEARDOWN: the master kills whatever is left
            self._driver.join()
        self._shutdown_services()
        self._record_offer_counts()
        # Before the record says ENDED: whoever sees the job ended finds its report.
        report.write(self.job_dir, read_record(self.store, "ended"))
        self.store.set_meta("state", "ENDED")

    def _stop_lost(self) -> None:
        """End a job whose framework was taken away: its tasks are not ours to kill or wait
        for, and a TEARDOWN would be refused (or remove someone else's framework)."""
        self.logs.stop()
        if self.peers is not None:
            self.peers.stop()
        self._collect_best_output()
        if self._driver is not None:
            self._driver.stop(failover=True)
            self._driver.join()
        self._shutdown_services()
        self._record_offer_counts()
        self.store.set_meta("state", "ENDED")

    def _record_offer_counts(self) -> None:
        """Keep the offer policy's counters in the job's record (offers seen, declined, ...)."""
        counts = {"offers_seen": self.scheduler.offers_seen,
                  "offers_declined": self.scheduler.offers_declined,
                  **self.scheduler.policy_stats()}
        self.store.set_meta("offer_counts", json.dumps(counts, sort_keys=True))

    def _task_places(self) -> list[TaskPlace]:
        """Where the job's trials run now (the telemetry collector measures those)."""
        places = []
        for trial in self.controller.trials():
            if not trial.task_id or not trial.agent_id or not trial.state.is_in_flight():
                continue
            slot = self._slot_of(trial.task_id)
            places.append(TaskPlace(trial.agent_id, slot or trial.task_id, trial.number,
                                    shared=bool(slot)))
        return places

    def _shutdown_services(self) -> None:
        if self._telemetry_runs is not None:
            self._telemetry_runs.stop()
        if self._usage is not None:
            self._usage.poll()  # the figures of the trials that just ended
        self._server.stop(grace=2).wait()
        self._files.stop()
        self.page.stop(linger=PAGE_LINGER_SECONDS)

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
        self.store.set_meta("best_output", str(target))


SLOTS_STARTED_KEY = "slots_started"
"""The record's count of the warm slots the job started, across framework incarnations."""


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def _bind(controller: JobController, host: str, port: int,
          tls: Identity | None) -> tuple[Any, int]:
    """The framework's gRPC server on ``host``: on ``port`` (a resumed job's), else on a free
    port; TLS alone with ``tls``."""
    key_cert = (tls.key_pem, tls.cert_pem) if tls else None
    if port:
        try:
            return make_server(controller, host, port, tls=key_cert)
        except OSError:
            logger.warning("port %d of the framework's gRPC service is taken; AppCore and "
                           "runners still running will not find this framework", port)
    return make_server(controller, host, tls=key_cert)


def _preload(config: JobConfig) -> Preload | None:
    """How a slot's pre-imported interpreter runs a trial (``--slot-preload``), or None."""
    if config.slot_mode != "warm" or not config.slot_preload:
        return None
    return Preload(parse_python_command(config.launch_cmd),
                   preload_modules(config.slot_preload))


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
