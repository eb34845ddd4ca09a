"""``da-job logs``: what a job's tasks print, from the job folder's copies (``logs/``), or from
its agent while an interrupted job's task still runs there.

``da-job logs JOB TRIAL`` is one trial's stdout (``13``, ``trial-0013``, or ``trial-0013.1``
for the task of its first retry); ``da-job logs JOB appcore`` is AppCore's stderr (it logs
there, its stdout is empty). Without a trial it shows what helps: the end of each running
trial's output (or, when none runs, the best trial's, else the last trial's: its stderr when it
failed), then the end of
AppCore's log, each under a ``==> ... <==`` heading as ``tail`` has it; ``-f`` follows them all.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
import time
from typing import IO

from disauto.common import paths
from disauto.common.trial_state import TrialState
from disauto.framework.record import TrialRow
from disauto.framework.record import meta
from disauto.submit.exit_status import ExitStatus
from disauto.submit.fit import wrap
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.job_cli.base import find_trial
from disauto.submit.job_cli.base import trial_name
from disauto.submit.jobs import Job
from disauto.submit.jobs import find


OVERVIEW_LINES = 10
"""Lines of each log the overview (no trial named) shows."""
POLL_SECONDS = 0.5
IN_FLIGHT = (TrialState.LAUNCHING, TrialState.RUNNING)
FAILURES = (TrialState.FAILED, TrialState.TIMEOUT)


@dataclass(frozen=True)
class Source:
    """One log to show: its heading's words, its task, and whether that task may still run."""

    label: str
    task: str
    stream: str
    live: bool
    agent: str = ""
    slot: str = ""
    ended: str = ""
    """How the task ended ("FAILED: why"), "" while it may still write or for AppCore."""

    def path(self, job: Job) -> Path:
        return job.folder / paths.TASK_LOGS / f"{self.task}.{self.stream}"

    def slot_path(self, job: Job) -> Path | None:
        """The copy of the same stream of the warm slot's executor the task ran on, if any."""
        return job.folder / paths.TASK_LOGS / f"{self.slot}.{self.stream}" if self.slot else None

    def heading(self) -> str:
        return f"==> {self.label} <=="


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    if args.lines is not None and args.lines < 0:
        raise JobCommandError(f"--lines must be 0 or more, got {args.lines}")
    job = find(args.job)
    if args.trial is None:
        return _overview(job, args, out)
    source = _named(job, args.trial, args.stream)
    endpoints = job.meta[meta.AGENT_ENDPOINTS]
    if job.state == "interrupted" and source.live and source.agent in endpoints:
        # No framework copies its output now, but the task may still run on its agent.
        return _logs_from_agent(job, source, endpoints, args.follow, out,
                                _agent_auth(job, args.agent_secret_file))
    path = source.path(job)
    if not path.exists() and not args.follow:
        return _nothing_copied(job, source, args.lines, out)
    offset = _print_end(path, args.lines, out)
    while args.follow and job.state == "running":
        time.sleep(POLL_SECONDS)
        job = find(job.job_id)
        offset = _print_from(path, offset, out)
    return ExitStatus.SUCCESS


def _nothing_copied(job: Job, source: Source, lines: int | None, out: IO[str]) -> ExitStatus:
    """A task of which no output was copied: how it ended, and what the warm slot's executor
    it ran on printed (a slot whose executor failed at its start leaves nothing else).

    Raises:
        JobCommandError: nothing is known yet (the task may still write).
    """
    path = source.path(job)
    slot_path = source.slot_path(job)
    slot_wrote = slot_path is not None and slot_path.exists() and slot_path.stat().st_size > 0
    if not source.ended and not slot_wrote:
        raise JobCommandError(f"no output of {path.stem} ({source.stream}) yet ({path})",
                              ExitStatus.ERROR)
    said = f"{path.stem} wrote nothing to {source.stream}" + (
        f"; it ended {source.ended}" if source.ended else "")
    print("\n".join(wrap(said, indent="  ")), file=out)
    if slot_wrote and slot_path is not None:
        print(f"==> {source.slot} {source.stream} (the warm slot's executor it ran on) <==",
              file=out)
        _print_end(slot_path, OVERVIEW_LINES if lines is None else lines, out)
    return ExitStatus.SUCCESS


def _named(job: Job, which: str, stream: str | None) -> Source:
    """The log of ``appcore``, of a warm slot's executor (its id, as ``da-job logs`` names it
    after a trial that failed on it), or of a trial as named (``13``, ``trial-0013``,
    ``trial-0013.1``)."""
    if "-slot-" in which and any(
            (job.folder / paths.TASK_LOGS / f"{which}.{name}").exists()
            for name in ("stdout", "stderr")):
        return Source(f"{which} {stream or 'stderr'} (a warm slot's executor)", which,
                      stream or "stderr", False)
    if which.lower() == "appcore":
        appcore = job.appcore_run
        task = appcore.get("task_id", "")
        if not task:
            raise JobCommandError(f"job {job.job_id} has not launched AppCore yet")
        return Source(f"{task} {stream or 'stderr'} (AppCore)", task, stream or "stderr",
                      appcore.get("state") in ("LAUNCHING", "RUNNING", "ATTACHED"),
                      str(appcore.get("agent_id", "")))
    trial, task = find_trial(job, which, "or 'appcore'")
    stream = stream or "stdout"
    live = trial.state in IN_FLIGHT and task == trial.task_id
    # The task named has ended: an earlier try of the trial, or the trial finished.
    earlier = bool(trial.task_id) and task != trial.task_id
    ended = ""
    if earlier:
        ended = "as an earlier try (da-job status shows how each try ended)"
    elif not live and trial.state.is_finished():
        ended = f"{trial.state}: {trial.message}" if trial.message else str(trial.state)
    return Source(f"{task} {stream}", task, stream, live, trial.agent_id or "",
                  "" if earlier else trial.executor_id, ended)


def _overview(job: Job, args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    """The end of each log that helps now, then, with ``-f``, each as it grows (new running
    trials joining)."""
    lines = OVERVIEW_LINES if args.lines is None else args.lines
    sources = _helpful(job, args.stream)
    offsets: dict[str, int] = {}
    for source in sources:
        print(source.heading(), file=out)
        path = source.path(job)
        if not path.exists():
            print("(nothing yet)", file=out)
        offsets[source.task + source.stream] = _print_end(path, lines, out)
        print("", file=out)
    last = ""
    while args.follow and job.state == "running":
        time.sleep(POLL_SECONDS)
        job = find(job.job_id)
        known = {s.task + s.stream for s in sources}
        sources += [s for s in _helpful(job, args.stream) if s.task + s.stream not in known]
        for source in sources:
            key = source.task + source.stream
            if _read(source.path(job), offsets.get(key, 0)):
                if last != key:
                    print(f"\n{source.heading()}", file=out)
                    last = key
                offsets[key] = _print_from(source.path(job), offsets.get(key, 0), out)
    return ExitStatus.SUCCESS


def _helpful(job: Job, stream: str | None) -> list[Source]:
    """The running trials (or the best, else the last trial) and AppCore."""
    running = [t for t in job.trials if t.state in IN_FLIGHT]
    best = job.best()
    chosen: list[tuple[TrialRow, str]] = [(t, "running") for t in running]
    if not chosen and best is not None:
        chosen = [(best, f"best, {job.config.search.objective}={best.objective:.6g}")]
    elif not chosen and job.trials:
        last = max(job.trials, key=lambda t: t.number)
        chosen = [(last, f"{str(last.state).lower()}, the last trial")]
    sources = []
    for trial, why in chosen:
        # A failed trial's stderr says why (its stdout is often empty).
        shown = stream or ("stderr" if trial.state in FAILURES else "stdout")
        source = Source(f"{trial_name(trial)} {shown} ({why})",
                        trial.task_id or trial_name(trial), shown, trial.state in IN_FLIGHT,
                        slot=trial.executor_id)
        slot_path = source.slot_path(job)
        if not source.live and not source.path(job).exists() and slot_path is not None \
                and slot_path.exists():
            # Nothing of the trial's own: its slot's executor failed (at its start, often).
            source = Source(f"{source.slot} {shown} (the warm slot's executor that "
                            f"{trial_name(trial)} ran on; {why})", source.slot, shown, False)
        sources.append(source)
    appcore = job.appcore_run
    if appcore.get("task_id"):
        task = appcore["task_id"]
        sources.append(Source(f"{task} {stream or 'stderr'} (AppCore)", task,
                              stream or "stderr", True))
    return sources


def _read(path: Path, offset: int) -> bytes:
    """What ``path`` holds from ``offset`` on (nothing while it does not exist)."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read()
    except FileNotFoundError:
        return b""


def _print_end(path: Path, lines: int | None, out: IO[str]) -> int:
    """Print ``path`` (its last ``lines`` lines when given); the offset printed up to."""
    data = _read(path, 0)
    shown = data if lines is None else b"".join(data.splitlines(keepends=True)[-lines:]) \
        if lines > 0 else b""
    out.write(shown.decode("utf-8", "replace"))
    if shown and not shown.endswith(b"\n"):
        out.write("\n")
    out.flush()
    return len(data)


def _print_from(path: Path, offset: int, out: IO[str]) -> int:
    data = _read(path, offset)
    out.write(data.decode("utf-8", "replace"))
    out.flush()
    return offset + len(data)


def _agent_auth(job: Job, secret_file: str | None) -> tuple[str, str] | None:
    """(the job's agent principal, its secret from ``secret_file``), or None.

    Raises:
        JobCommandError: the file cannot be read, or there is no principal to send it for.
    """
    if secret_file is None:
        return None
    principal = job.meta[meta.AGENT_PRINCIPAL] or job.meta[meta.PRINCIPAL]
    if not principal:
        raise JobCommandError(f"--agent-secret-file: job {job.job_id} has no agent principal "
                              "(--agent-principal or --principal was not given)")
    try:
        return principal, Path(secret_file).read_text().strip()
    except OSError as err:
        raise JobCommandError(f"--agent-secret-file: cannot read {secret_file}: "
                              f"{err.strerror or err}") from None


def _logs_from_agent(job: Job, source: Source, endpoints: dict[str, str], follow: bool,
                     out: IO[str], auth: tuple[str, str] | None = None) -> ExitStatus:
    """A live task's stream read through its agent's ``/files`` API (a real Mesos agent's or
    the embedded one's) with the job's agent credentials, followed while the job stays
    interrupted. A warm slot's task's sandbox is a folder of its slot's executor's
    (``source.slot``)."""
    from disauto.framework.run import SandboxLogs

    logs = SandboxLogs(endpoints=endpoints, auth=auth)
    framework_id = job.meta[meta.FRAMEWORK_ID]
    task, agent = source.task, source.agent
    try:
        root, directory = logs.task_sandbox(agent, framework_id, task, source.slot)
    except (OSError, ValueError, KeyError) as err:
        hint = "; give --agent-secret-file" if "401" in str(err) and auth is None else ""
        raise JobCommandError(f"cannot reach agent {agent} of task {task}: {err}{hint}",
                              ExitStatus.ERROR) from None
    if not directory:
        raise JobCommandError(f"agent {agent} no longer has the sandbox of task {task}",
                              ExitStatus.ERROR)
    offset = 0
    while True:
        try:
            data, offset = logs.read_from(root, f"{directory}/{source.stream}", offset)
        except (OSError, ValueError, KeyError) as err:
            if not follow:
                raise JobCommandError(f"cannot read {source.stream} of task {task} on agent "
                                      f"{agent}: {err}", ExitStatus.ERROR) from None
            return ExitStatus.SUCCESS  # the agent or the sandbox went away: nothing to follow
        out.write(data)
        out.flush()
        if not follow or find(job.job_id).state != "interrupted":
            return ExitStatus.SUCCESS
        time.sleep(POLL_SECONDS)


COMMAND = Command(
    name="logs", help="what a job's trials and AppCore print", run=run,
    description="A trial's stdout, or AppCore's stderr (its log). Without TRIAL: the end of "
                "each running trial's output (none running: the best trial's, else the last "
                "trial's: its stderr if it failed) and of AppCore's log, each under a heading; -f "
                "follows them all.",
    arguments=(
        JOB,
        arg("trial", nargs="?", metavar="TRIAL",
            help="a trial (13, trial-0013, or trial-0013.1: the task of its first retry) or "
                 "appcore; none: the running trials and AppCore"),
        arg("--stdout", dest="stream", action="store_const", const="stdout", exclusive="stream",
            help="stdout (a trial's default)"),
        arg("--stderr", dest="stream", action="store_const", const="stderr", exclusive="stream",
            help="stderr (AppCore's default: it logs there)"),
        arg("-n", "--lines", type=int, metavar="N",
            help=f"only the last N lines (default: all of a named log, {OVERVIEW_LINES} of "
                 "each without TRIAL)"),
        arg("-f", "--follow", action="store_true", help="follow while the job runs"),
        arg("--agent-secret-file", metavar="FILE",
            help="the secret of the job's agent principal, to read a live task of an "
                 "interrupted job from an agent that authenticates reads"),
    ))
