"""Running a validated job to its end: the job folder, the embedded cluster if asked, the
framework, a progress line while it runs, and the results at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
import logging
import os
from pathlib import Path
import signal
import subprocess
import sys
import threading
import time
from types import FrameType
from typing import IO
from typing import TYPE_CHECKING
from typing import Any

from disauto.common import paths
from disauto.common.certificates import CertificateError
from disauto.common.certificates import Identity
from disauto.common.certificates import generate
from disauto.common.messages import cause_first
from disauto.common.objectives import Objectives
from disauto.common.tls import FRAMEWORK_SERVER_NAME
from disauto.common.trial_state import TrialState
from disauto.framework.record import DiskFullError
from disauto.framework.record import JobRecord
from disauto.framework.record import is_disk_full
from disauto.framework.record import meta
from disauto.framework.run import describe_capacity
from disauto.framework.run import keep_tls_identity
from disauto.framework.run import kept_tls_identity
from disauto.protos import common_pb2
from disauto.protos import framework_pb2
from disauto.submit.exit_status import ExitStatus
from disauto.submit.exit_status import for_outcome
from disauto.submit.fit import clip
from disauto.submit.fit import columns
from disauto.submit.fit import short_path
from disauto.submit.fit import wrap
from disauto.submit.front import front_lines
from disauto.submit.front import front_rows
from disauto.submit.job_lock import JobLock
from disauto.submit.job_lock import JobLockedError
from disauto.submit.jobs import load
from disauto.submit.parser import PROG
from disauto.submit.startup_hint import startup_hint
from disauto.submit.validate import Submission


if TYPE_CHECKING:
    from disauto.framework.record import RecordedEnd
    from disauto.framework.record import TrialRow
    from disauto.framework.run import JobRunner


logger = logging.getLogger(__name__)


class _LogFile(logging.FileHandler):
    """The job's log file; a line that cannot be written (a full disk) is dropped, not turned
    into a traceback on the terminal for every line logged: the job's record says what went
    wrong, and the run loop stops a job whose disk is full."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        if not isinstance(sys.exc_info()[1], OSError):
            super().handleError(record)


def _log_thread_crash(args: threading.ExceptHookArgs) -> None:
    """An exception that ends one of the job's threads goes to the job's log, not the
    terminal (--debug shows it there too); a full disk is the run loop's to say."""
    if isinstance(args.exc_value, DiskFullError):
        return
    logger.error("thread %s ended with an error", getattr(args.thread, "name", "?"),
                 exc_info=(args.exc_type, args.exc_value, args.exc_traceback))


def _configure_logging(debug: bool, log_file: Path | None) -> None:
    # pymesos gives its logger a terminal handler of its own when imported (pymesos/__init__.py):
    # a master's failover printed its tracebacks and every redirect on the user's terminal.
    # Its records go to the job's log like everyone's (the terminal shows them with --debug).
    import pymesos

    for own in list(pymesos.logger.handlers):
        pymesos.logger.removeHandler(own)
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    if log_file is not None:
        handler = _LogFile(log_file)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    if debug:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(console)


class _Stop(KeyboardInterrupt):
    """A signal asked the job to stop; the message says which, for the record."""


_STOP_MESSAGES = {
    signal.SIGINT: "stopped with Ctrl-C",
    signal.SIGTERM: "stopped by SIGTERM",
    signal.SIGHUP: "stopped: the terminal closed (SIGHUP)",
}


class _StopSignals:
    """SIGINT, SIGTERM and SIGHUP stop the job: the first raises :class:`_Stop` where the main
    thread is; once the job is stopping (a signal arrived, or it ends on its own) the others
    are only counted, so that however many arrive the stop finishes and its record is written.
    """

    def __init__(self) -> None:
        self.stopping = False
        self.ignored = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.stopping:  # nothing printed here: the main thread may be printing
            self.ignored += 1
            return
        self.stopping = True
        raise _Stop(_STOP_MESSAGES.get(signal.Signals(signum), "stopped by a signal"))


def spawn(job_id: str, python_args: Sequence[str],
          lock: JobLock | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``python <python_args>`` as a background process of its own session (it outlives
    this terminal), its output appended to the job folder's; the process and where its output
    begins in that file. It inherits the job's lock (``lock``, else taken here), so that no
    other run of the job starts between this check and its start.

    Raises:
        JobLockedError: another process runs the job.
    """
    job_dir = paths.job_dir(job_id)
    job_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(job_dir, 0o700)
    lock = lock if lock is not None else JobLock.take(job_dir)
    output = job_dir / paths.DETACHED_OUT
    started_at = output.stat().st_size if output.exists() else 0
    fd, env = lock.hand_over()
    try:
        with output.open("ab") as log:
            process = subprocess.Popen(  # noqa: S603 - this Python, DisAuto's own module
                [sys.executable, *python_args], stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(fd,),
                env={**os.environ, **env},
            )
    finally:
        lock.close()  # the child holds it now (or nobody, if it could not start)
    return process, started_at


def output_since(job_id: str, offset: int) -> str:
    """What the job's background process wrote from ``offset`` on (its output file)."""
    try:
        with (paths.job_dir(job_id) / paths.DETACHED_OUT).open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def detach(job_id: str, python_args: Sequence[str], out: IO[str],
           timeout: float = 90.0, lock: JobLock | None = None) -> ExitStatus:
    """Start ``python <python_args>`` in the background (:func:`spawn`); return once its
    framework is registered, saying how to follow it, or with its own exit status and last
    lines if it ended first.

    Raises:
        JobLockedError: another process runs the job.
    """
    job_dir = paths.job_dir(job_id)
    process, started_at = spawn(job_id, python_args, lock)
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline \
            and not _registered(job_dir, process.pid):
        time.sleep(0.1)
    if process.poll() is not None:  # it ended at once: a bad master, an unschedulable job...
        out.write(output_since(job_id, started_at))
        codes = {int(status) for status in ExitStatus}
        return ExitStatus(process.returncode) if process.returncode in codes else ExitStatus.ERROR
    print(f"{PROG}: job {job_id} runs in the background (pid {process.pid})", file=out)
    page = JobRecord.peek(job_dir / paths.JOB_DB)[meta.WEBUI_URL]
    if page:
        print(job_page_lines(page, (job_dir / paths.TOKEN).read_text().strip()), file=out)
    # One command a line, and only commands that do no harm when the whole block is pasted:
    # the kill is named inside a sentence (a line that starts "da-submit:" runs nothing).
    print(f"{PROG}: follow it with:", file=out)
    print(f"  da-job status {job_id}", file=out)
    print(f"  da-job logs {job_id} -f", file=out)
    print(f"{PROG}: to stop it, run da-job kill {job_id}", file=out)
    print(f"{PROG}: its output: {job_dir / paths.DETACHED_OUT}", file=out)
    return ExitStatus.SUCCESS


def job_page_lines(url: str, token: str) -> str:
    """The lines that give the job page: its link, then the link with the job token in the
    fragment (which no server sees nor logs), which lets the page kill trials and the job;
    each link on a line of its own, whole (no terminal is wide enough for the second)."""
    return (f"{PROG}: job page {url}\n"
            f"{PROG}: to kill trials or the job from it, open it with the job token:\n"
            f"  {url}#token={token}")


def _registered(job_dir: Path, pid: int) -> bool:
    """Whether the process ``pid`` runs the job in ``job_dir`` and its framework registered."""
    db = job_dir / paths.JOB_DB
    if not db.exists():
        return False
    recorded = JobRecord.peek(db)
    return recorded[meta.PID] == pid and recorded[meta.FRAMEWORK_REGISTERED]


def run(submission: Submission, out: IO[str], err: IO[str], *,
        resume: bool = False, lock: JobLock | None = None) -> ExitStatus:
    """Run a validated job to its end and report it (``resume``: carry on a recorded one),
    holding the job's lock (``lock``, else the one inherited or taken here) throughout.

    It is the whole work of the process that calls it: SIGINT, SIGTERM and SIGHUP stop the job
    while it runs and are ignored once it returned (the process exits with the job's status).
    """
    job_dir = paths.job_dir(submission.config.job_id)
    job_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(job_dir, 0o700)  # the record and the job's token are the user's alone
    try:
        lock = lock if lock is not None else JobLock.acquire(job_dir)
    except JobLockedError as error:
        print(f"{PROG}: error: {error}", file=err)
        return ExitStatus.USAGE
    try:
        return _run_locked(submission, job_dir, resume, out, err)
    finally:
        lock.close()


def _run_locked(submission: Submission, job_dir: Path, resume: bool, out: IO[str],
                err: IO[str]) -> ExitStatus:
    _configure_logging(submission.debug, job_dir / paths.LOG)
    _announce(submission, job_dir, resume, out, err)
    try:
        tls = job_identity(job_dir, submission, resume)
    except CertificateError as error:
        print(f"{PROG}: error: {error}", file=err)
        return ExitStatus.USAGE
    if tls is not None:
        print(f"{PROG}: gRPC over TLS, certificate SHA-256 {tls.fingerprint}", file=out)
    return _Run(submission, job_dir, tls, resume, out, err).run()


def _announce(submission: Submission, job_dir: Path, resume: bool, out: IO[str],
              err: IO[str]) -> None:
    """The job's first lines: what it is, where its folder is, the notes on its flags."""
    config = submission.config
    _print(out, f"{PROG}: {'resuming' if resume else 'job'} {config.job_id} "
                f"({config.search.tuning_type}, {config.search.max_trials} trials, parallelism "
                f"{config.search.parallelism}, seed {config.search.seed})")
    print(f"{PROG}: job folder {short_path(job_dir, 10**6)}", file=out)
    if submission.slot_line:
        print(f"{PROG}: {submission.slot_line}", file=out)
        logger.info("%s", submission.slot_line)
    if config.slot_preload_auto:
        logger.info("--slot-preload auto: the script's modules to preload: %s",
                    ", ".join(config.slot_preload_optional) or "none")
    for note in submission.notes:
        logger.info("note: %s", note)  # the job's log keeps what the terminal was told
        _print(err, f"{PROG}: note: {note}")


class _Run:
    """One run of a job in this process, in phases: the embedded cluster if asked, the
    framework built and subscribed, the job followed to its end; whatever ends it (the job, a
    signal, an error), its tasks are stopped and its results reported."""

    def __init__(self, submission: Submission, job_dir: Path, tls: Identity | None,
                 resume: bool, out: IO[str], err: IO[str]) -> None:
        self._submission = submission
        self._job_dir = job_dir
        self._tls = tls
        self._resume = resume
        self._out = out
        self._err = err
        self._cluster: Any = None  # localmesos' LocalCluster (only submit/local.py knows it)
        self._runner: JobRunner | None = None
        self._ending: RecordedEnd | None = None
        self._status = ExitStatus.ERROR
        self._signals = _StopSignals()

    def run(self) -> ExitStatus:
        # Our own handlers, also for SIGINT: a job started in the background by a script
        # inherits SIGINT ignored, and a terminal that closes sends SIGHUP; each stops the job.
        previous = {signum: signal.signal(signum, self._signals) for signum in _STOP_MESSAGES}
        hook, threading.excepthook = threading.excepthook, _log_thread_crash
        try:
            self._status = self._phases()
        except DiskFullError:  # nothing more can be recorded: left interrupted, tasks killed
            self._signals.stopping = True
            if self._runner is not None:
                self._runner.abandon("the disk is full")
            self._status = ExitStatus.ERROR
        except KeyboardInterrupt as stop:
            self._signals.stopping = True  # a KeyboardInterrupt not of our handler's making
            _say(self._err, f"\n{PROG}: stopping the job (killing its tasks)…")
            if self._runner is not None:
                self._runner.stop(framework_pb2.STOPPED,
                                  str(stop) or _STOP_MESSAGES[signal.SIGINT])
            self._status = ExitStatus.CTRL_C
        except Exception as error:
            # Whatever broke (e.g. the pymesos driver aborted), kill what runs, keep the record.
            self._signals.stopping = True
            if self._runner is not None:
                self._runner.stop(framework_pb2.ERROR, f"da-submit failed: {error}")
            raise
        finally:
            self._signals.stopping = True  # the report is written whatever arrives now
            try:
                self._close()
            finally:
                threading.excepthook = hook
                # The job is over and its record written; the process exits with its status:
                # a late signal must not turn that into a death by signal.
                for signum in previous:
                    signal.signal(signum, signal.SIG_IGN)
        return self._status

    def _phases(self) -> ExitStatus:
        from disauto.framework.record import needs_no_master

        if self._resume and needs_no_master(self._job_dir, self._submission.master == "local"):
            return self._finish_recorded()
        master = self._start_cluster()
        runner = self._build(master)
        failed = self._subscribe(runner)
        return failed if failed is not None else self._follow(runner)

    def _finish_recorded(self) -> ExitStatus:
        """A job whose framework died after its end was recorded and after which nothing of
        it runs: finished from its record alone (its report, results and closed record)."""
        from disauto.framework.record import RecordedEnd

        ending = self._ending = RecordedEnd(self._submission.config, self._job_dir)
        _print(self._out, f"{PROG}: the job had ended before its framework died; finishing its "
                          "record (no master needed)")
        ending.stop()
        return _exit_status(ending.controller)

    def _start_cluster(self) -> str:
        """The master's address: the embedded cluster's, booted here, with ``--master local``."""
        from disauto.submit.local import cluster_work_dir
        from disauto.submit.local import oversubscription_note
        from disauto.submit.local import start_local_cluster
        from disauto.submit.local import task_user_note

        submission = self._submission
        if submission.master != "local":
            return submission.master
        for note in (oversubscription_note(submission.config, submission.local_agents),
                     task_user_note(submission.config)):
            if note:
                _print(self._err, f"{PROG}: note: {note}")
        self._cluster = start_local_cluster(
            submission.config, cluster_work_dir(submission.config, self._job_dir),
            submission.local_agents)
        _print(self._out, f"{PROG}: embedded Mesos master at http://{self._cluster.address}/ "
                          "(its web page lists the tasks; it stops with the job)")
        return str(self._cluster.address)

    def _build(self, master: str) -> JobRunner:
        """The job's framework, wired (framework/_runner_builder.py), and how it was asked for
        in the record (``da-job resume`` submits it so again)."""
        from disauto.framework.run import MasterEndpoint
        from disauto.framework.run import RunnerOptions
        from disauto.framework.run import build_runner  # imports pymesos

        submission = self._submission
        runner = self._runner = build_runner(
            submission.config, self._job_dir,
            MasterEndpoint(master, submission.principal, submission.secret,
                           submission.agent_principal, submission.agent_secret),
            RunnerOptions(offer_policy=submission.offer_policy,
                          advertise_host=submission.advertise_host,
                          bind_host=bind_host(submission), tls=self._tls, resume=self._resume))
        runner.store.set_meta_many({meta.SUBMITTED_MASTER: submission.master,
                                    meta.LOCAL_AGENTS: submission.local_agents,
                                    meta.PRINCIPAL: submission.principal or "",
                                    meta.ADVERTISE_HOST: submission.advertise_host or "",
                                    meta.BIND_ALL: submission.bind_all})
        return runner

    def _subscribe(self, runner: JobRunner) -> ExitStatus | None:
        """Serve and subscribe; an exit status when the master would not have it."""
        from disauto.framework.run import MasterUnreachableError

        job_id = self._submission.config.job_id
        try:
            runner.start()
        except MasterUnreachableError as error:
            if self._resume:  # nothing is lost by waiting: the job stays interrupted, resumable
                runner.store.set_meta(meta.INTERRUPTED_REASON, f"{error}; da-job resume "
                                      f"{job_id} carries it on once the master is back")
                return ExitStatus.MASTER_UNREACHABLE
            runner.controller.finish(framework_pb2.ERROR, str(error))
            runner.store.set_meta(meta.STATE, meta.ENDED)
            return ExitStatus.MASTER_UNREACHABLE
        if runner.scheduler.framework_lost:  # the master took it away: the job ends at once
            return None
        print(f"{PROG}: framework {runner.scheduler.framework_id} registered", file=self._out)
        print(job_page_lines(runner.page_url, runner.controller.job_token), file=self._out)
        runner.store.set_meta(meta.FRAMEWORK_REGISTERED, True)
        return None

    def _follow(self, runner: JobRunner) -> ExitStatus:
        """Show the job's progress until it ends; its exit status."""
        from disauto.framework.run import MasterAwayError

        config = self._submission.config
        show = _ProgressPrinter(self._out, config.search.objective, quiet=self._submission.quiet,
                                wants=describe_capacity(config.runner))
        try:
            runner.wait(poll=lambda: show(runner.controller.progress(), runner.master_note()))
        except MasterAwayError as error:
            show.done()
            self._signals.stopping = True
            runner.abandon(str(error))  # interrupted, not ended: resumable
            return ExitStatus.MASTER_UNREACHABLE
        show.done()
        self._signals.stopping = True  # the job ended: a signal now cannot cut its stop short
        runner.stop(framework_pb2.STOPPED, "stopped")  # kills leftovers, tears down
        return _exit_status(runner.controller)

    def _close(self) -> None:
        """Report the job (whatever ended it), then close its record (last: a framework
        killed before leaves it for da-job resume to finish), and stop the embedded cluster."""
        config = self._submission.config
        job = self._runner if self._runner is not None else self._ending
        try:
            if job is not None:
                _report(job, self._job_dir, self._out, self._err, config.search.objective,
                        config.search.direction != common_pb2.MINIMIZE, self._status)
                if job.store.full:  # interrupted, its record whole: resumed once there is room
                    self._status = ExitStatus.ERROR
                else:
                    job.close_record()
        finally:
            if self._cluster is not None:
                self._cluster.stop()


def _exit_status(controller: Any) -> ExitStatus:
    """da-submit's exit status for the job's outcome (an ending without an answer is not a
    success)."""
    outcome, _ = controller.outcome or (framework_pb2.ERROR, "unknown")
    status = for_outcome(outcome)
    if status == ExitStatus.SUCCESS and controller.best_trial() is None:
        status = ExitStatus.NO_RESULT
    return status


def bind_host(submission: Submission) -> str | None:
    """Where the job's servers listen: loopback in local mode, every interface with
    ``--bind-all``, else (None) the advertised address and AppCore's agent's host name."""
    if submission.master == "local":
        return "127.0.0.1"
    return "0.0.0.0" if submission.bind_all else None  # noqa: S104 - asked for explicitly


def job_identity(job_dir: Path, submission: Submission, resume: bool) -> Identity | None:
    """The framework's TLS identity: a resumed job's own (the tasks still running trust
    exactly it), else the user's pair or a new self-signed one, kept in the job folder.

    Raises:
        CertificateError: a resumed job's kept files are unusable.
    """
    if resume:
        return kept_tls_identity(job_dir)
    if submission.tls is None:
        return None
    identity = submission.tls.identity or generate(FRAMEWORK_SERVER_NAME)
    keep_tls_identity(job_dir, identity)
    return identity


def _print(stream: IO[str], text: str, max_lines: int = 0) -> None:
    """Print ``text`` wrapped to the terminal's width, a path or URL never broken; with
    ``max_lines``, the last line cut short (``…``) where there would be more."""
    width = columns()
    lines = wrap(text, width)
    if max_lines and len(lines) > max_lines:
        rest = " ".join(line.strip() for line in lines[max_lines - 1:])
        indent = "  " if max_lines > 1 else ""
        lines = [*lines[:max_lines - 1], indent + clip(rest, width - len(indent))]
    print("\n".join(lines), file=stream)


def _say(stream: IO[str], text: str) -> None:
    """Print, unless the terminal is gone (SIGHUP): the record matters, not this line."""
    try:
        print(text, file=stream, flush=True)
    except OSError:
        pass


class _ProgressPrinter:
    """A live progress line: rewritten in place on a terminal, a line per change otherwise."""

    def __init__(self, out: IO[str], objective: str, quiet: bool, wants: str = "") -> None:
        self._out = out
        self._objective = objective
        self._wants = wants
        self._quiet = quiet
        self._tty = bool(getattr(out, "isatty", lambda: False)())
        self._last = ""
        self._last_time = 0.0

    def __call__(self, progress: Any, note: str | Sequence[str] = "") -> None:
        if self._quiet:
            return
        from disauto.submit.results import progress_line

        # On a terminal one column short of its width: a line that fills it would wrap when
        # the cursor stays after its last character, and \r would rewrite only the wrap.
        width = columns() - 1 if self._tty else columns()
        line = progress_line(progress, self._objective, self._wants, note, width)
        core = line.split("] ", 1)[-1]
        if self._tty:
            self._out.write("\r" + line.ljust(min(len(self._last), width)))
            self._out.flush()
            self._last = line
        elif core != self._last or time.monotonic() - self._last_time > 30:
            print(line, file=self._out, flush=True)
            self._last = core
            self._last_time = time.monotonic()

    def done(self) -> None:
        if self._tty and not self._quiet and self._last:
            self._out.write("\n")


def _say_no_result(trials: Sequence[TrialRow], err: IO[str]) -> None:
    """Why no trial has a result: the first failure's cause, on a line of its own (its whole
    message is in results.json)."""
    failed = [t for t in trials if t.state == TrialState.FAILED]
    if failed:
        print(f"{PROG}: error: no trial produced a result; the first failure, "
              f"trial-{failed[0].number:04d}:", file=err)
        _print(err, f"  {cause_first(failed[0].message)}", max_lines=2)
    else:
        print(f"{PROG}: error: no trial produced a result", file=err)


def _report(runner: Any, job_dir: Path, out: IO[str], err: IO[str], objective: str,
            maximize: bool, status: ExitStatus) -> None:
    from disauto.submit import results

    controller = runner.controller
    outcome = controller.outcome
    outcome_name = framework_pb2.JobOutcome.Name(outcome[0]) if outcome else "UNKNOWN"
    message = outcome[1] if outcome else ""
    if runner.store.full:
        _say_disk_full(runner, err)
        return
    interrupted = runner.store.get_meta(meta.INTERRUPTED_REASON)
    if outcome is None and interrupted:  # the framework gave up on its master: resumable
        outcome_name, message = "INTERRUPTED", interrupted
    trials = controller.trials()
    best = controller.best_trial()
    job = load(job_dir)
    state = "interrupted" if outcome_name == "INTERRUPTED" else "ended"
    order = [p.name for p in runner.config.search.space.parameters]
    objectives = Objectives.from_spec(runner.config.search)
    facts = job.meta.with_values({meta.OUTCOME: outcome_name, meta.OUTCOME_MESSAGE: message})
    record = results.JobFacts(runner.config, facts, trials, state, int(status))
    try:
        json_path, csv_path = results.write(job_dir, record, order)
    except OSError as error:
        if not is_disk_full(error):
            raise
        runner.store.note_full(job_dir / paths.RESULTS_JSON, error)
        _say_disk_full(runner, err)
        return
    search = results.search_keys(trials, objectives)
    try:  # the record is written; the terminal may be gone (SIGHUP)
        if outcome_name in ("UNSCHEDULABLE", "FRAMEWORK_LOST") \
                or status == ExitStatus.MASTER_UNREACHABLE:
            print(f"{PROG}: error: {message}", file=err)  # one line, as a bad flag gets
            return
        if trials:
            print("", file=out)
            print(results.table(trials, objective, maximize, param_order=order,
                                objectives=objectives, width=columns()), file=out)
        print("", file=out)
        _print(out, f"{PROG}: {outcome_name.lower().replace('_', ' ')}: "
                    f"{cause_first(message)}", max_lines=3)
        if best is not None:
            _say_best(out, best, objective, trials, objectives)
        elif status != ExitStatus.CTRL_C:
            _say_no_result(trials, err)
        for line in results.search_lines(search, objectives, front=False):
            print(f"{PROG}: {line}", file=out)
        for line in results.usage_lines(trials, runner.config.runner.mem_mb):
            _print(out, f"{PROG}: {line}")
        hint = startup_hint(runner.config, trials, runner.store.first_reports())
        if hint:
            _print(out, f"{PROG}: {hint}")
        _print(out, f"{PROG}: {json_path.name} and {csv_path.name} in "
                    f"{short_path(json_path.parent, 10**6)}/")
    except OSError:
        pass


def _say_best(out: IO[str], best: TrialRow, objective: str, trials: Sequence[TrialRow],
              objectives: Objectives) -> None:
    """The best trial and its parameters; with several objectives, the Pareto front instead
    (a trial a line with every objective: no one trial is the best)."""
    if objectives.several:
        for line in front_lines(front_rows(trials, objectives), objectives):
            _print(out, f"{PROG}: {line}")
        return
    params = ", ".join(f"{k}={v!r}" for k, v in best.assignment.items())
    _print(out, f"{PROG}: best trial-{best.number:04d}: {objective}="
                f"{best.objective:.6g} with {params}")


def _say_disk_full(runner: Any, err: IO[str]) -> None:
    """The one line of a job stopped by a full disk: which disk, which path, what to do."""
    _say(err, f"{PROG}: error: {runner.store.full}; the job is interrupted with its record "
              f"kept: make room, then da-job resume {runner.config.job_id} carries it on")
