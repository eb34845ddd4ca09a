"""``da-job``: list, inspect, follow, stop and resume DisAuto jobs from any shell.

    da-job list [--json] [--master HOST:PORT [--principal P --secret-file FILE]]
    da-job status JOB [--json]
    da-job logs JOB [TRIAL|appcore] [--stderr] [-f]
    da-job results JOB [--format table|csv|json]
    da-job kill JOB
    da-job update JOB [--trial-steps N] [--parallelism P]
    da-job resume JOB [--detach] [--secret-file FILE]
    da-job ui [--port N] [--host H]

JOB is a job id or any unique prefix of one. Every error is one line and a documented exit
status (:class:`~disauto.submit.exit_status.ExitStatus`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import csv
import io
import json
import os
from pathlib import Path
import sys
import time
from typing import IO
from typing import Any

from disauto.common import paths
from disauto.common.trial_state import TrialState
from disauto.framework import meta
from disauto.framework.control import KillJob
from disauto.framework.control import NoAnswerError
from disauto.framework.deadline_status import deadline_note
from disauto.framework.store import JobStore
from disauto.framework.telemetry.usage import megabytes
from disauto.submit import results as results_mod
from disauto.submit.exit_status import ExitStatus
from disauto.submit.jobs import Job
from disauto.submit.jobs import JobLookupError
from disauto.submit.jobs import MasterQueryError
from disauto.submit.jobs import all_jobs
from disauto.submit.jobs import ask
from disauto.submit.jobs import find
from disauto.submit.jobs import master_frameworks


PROG = "da-job"


class JobCommandError(Exception):
    """What a subcommand cannot do, in one line; carries its exit status."""

    def __init__(self, message: str, status: ExitStatus = ExitStatus.USAGE) -> None:
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise JobCommandError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG,
                     description="List, inspect, follow, change, stop and resume jobs.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    listing = commands.add_parser("list", help="every job under $DISAUTO_HOME")
    listing.add_argument("--json", action="store_true")
    listing.add_argument("--master", metavar="HOST:PORT",
                         help="also the frameworks this Mesos master knows")
    listing.add_argument("--principal", help="with --master: Mesos principal (HTTP basic auth)")
    listing.add_argument("--secret-file", metavar="FILE", help="with --master: its secret")
    status = commands.add_parser("status", help="a job's trials, best, tasks")
    status.add_argument("job")
    status.add_argument("--json", action="store_true")
    logs = commands.add_parser("logs", help="a trial's (or AppCore's) output")
    logs.add_argument("job")
    logs.add_argument("trial", nargs="?", default="appcore",
                      help="a trial number, or appcore (default)")
    logs.add_argument("--stderr", action="store_true", help="stderr instead of stdout")
    logs.add_argument("-f", "--follow", action="store_true", help="follow while the job runs")
    results = commands.add_parser("results", help="the trials, best first")
    results.add_argument("job")
    results.add_argument("--format", choices=("table", "csv", "json"), default="table")
    kill = commands.add_parser("kill", help="end a running job (tasks killed, record kept)")
    kill.add_argument("job")
    kill.add_argument("--wait", type=float, default=60.0, metavar="SECONDS",
                      help="how long to wait for the job to end (default 60)")
    update = commands.add_parser("update", help="change a job's trial budget or parallelism")
    update.add_argument("job")
    update.add_argument("--trail-steps", "--trial-steps", dest="trial_steps", metavar="N",
                        help="the new trial budget")
    update.add_argument("--parallelism", metavar="P", help="the new number of trials at once")
    update.add_argument("--wait", type=float, default=60.0, metavar="SECONDS",
                        help="how long to wait for the job to take it (default 60)")
    resume = commands.add_parser("resume", help="carry on a job whose framework died")
    resume.add_argument("job")
    resume.add_argument("--detach", action="store_true", help="in the background")
    resume.add_argument("--secret-file", metavar="FILE",
                        help="the principal's secret, for a master that authenticates")
    ui = commands.add_parser("ui", help="every job's page in the browser, from the records")
    ui.add_argument("--port", type=int, default=0, metavar="N",
                    help="the port to listen on (default: any free one, printed)")
    ui.add_argument("--host", default="127.0.0.1", metavar="H",
                    help="the address to listen on (default 127.0.0.1: this machine only)")
    return parser


# -- the subcommands ----------------------------------------------------------------------------


def _fmt_seconds(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def _state_text(job: Job) -> str:
    if job.state == "ended":
        return f"ended ({job.outcome.lower().replace('_', ' ') or 'unknown'})"
    return job.state


def cmd_list(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    jobs = all_jobs()
    rows = [job.summary() for job in jobs]
    frameworks = _master_frameworks(args) if args.master else None
    if args.json:
        listed: Any = rows if frameworks is None else {"jobs": rows, "master": args.master,
                                                       "frameworks": frameworks}
        print(json.dumps(listed, indent=2), file=out)
        return ExitStatus.SUCCESS
    if not jobs:
        print(f"no jobs under {paths.jobs_dir()}", file=out)
    else:
        _print_jobs(jobs, rows, out)
    if frameworks is not None:
        _print_frameworks(args.master, frameworks, {job.job_id for job in jobs}, out)
    return ExitStatus.SUCCESS


def _master_frameworks(args: argparse.Namespace) -> list[dict[str, Any]]:
    secret = None
    if args.secret_file:
        try:
            secret = Path(args.secret_file).read_text().strip()
        except OSError as err:
            raise JobCommandError(f"--secret-file: cannot read {args.secret_file}: "
                                  f"{err.strerror}") from None
    try:
        return master_frameworks(args.master, args.principal, secret)
    except MasterQueryError as err:
        raise JobCommandError(str(err), ExitStatus.MASTER_UNREACHABLE) from None


def _print_frameworks(master: str, frameworks: Sequence[dict[str, Any]], here: set[str],
                      out: IO[str]) -> None:
    print(f"\nframeworks on the Mesos master at {master}:", file=out)
    if not frameworks:
        print("  none", file=out)
        return
    table = [["framework", "name", "state", "running tasks", "DisAuto job"]]
    for row in frameworks:
        job = row["job_id"] or "-"
        if row["job_id"]:
            job += " (here)" if row["job_id"] in here else " (another machine or home)"
        table.append([row["framework_id"], row["name"], row["state"],
                      str(row["running_tasks"]), job])
    _print_table(table, out)


def _print_jobs(jobs: Sequence[Job], rows: Sequence[dict[str, Any]], out: IO[str]) -> None:
    table = [["job", "name", "state", "trials", "best", "started", "duration"]]
    for job, row in zip(jobs, rows, strict=True):
        best = row["best"]
        table.append([
            row["job_id"], row["name"], _state_text(job), f"{row['done']}/{row['budget']}",
            "-" if best is None else f"{row['objective']}={best['value']:.6g} (#{best['trial']})",
            time.strftime("%Y-%m-%d %H:%M", time.localtime(row["started_at"])),
            _fmt_seconds(row["duration_seconds"]),
        ])
    _print_table(table, out)


def _print_table(table: Sequence[Sequence[str]], out: IO[str]) -> None:
    widths = [max(len(str(row[i])) for row in table) for i in range(len(table[0]))]
    for index, row in enumerate(table):
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(),
              file=out)
        if index == 0:
            print("  ".join("-" * w for w in widths), file=out)


def _ended_at(job: Job) -> float | None:
    """When the job ended, or None while it runs (or was interrupted)."""
    try:
        return float(job.meta["ended_at"])
    except (KeyError, ValueError):
        return None


def cmd_status(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    job = find(args.job)
    config = job.config
    appcore = json.loads(job.meta.get("appcore", "{}"))
    running = [{"trial": t.number, "task": t.task_id, "agent": t.agent_id, "state": str(t.state),
                "usage": t.usage.as_columns()}
               for t in job.trials if t.state in (TrialState.LAUNCHING, TrialState.RUNNING)]
    status = {
        **job.summary(), "trials": job.counts(), "message": job.meta.get("outcome_message", ""),
        "running": running, "appcore": {"task": appcore.get("task_id", ""),
                                        "address": appcore.get("address", ""),
                                        "state": appcore.get("state", "")},
        "master": job.meta.get("master", ""), "framework_id": job.meta.get("framework_id", ""),
        "folder": str(job.folder),
        "interrupted_reason": job.meta.get("interrupted_reason", "")
        if job.state == "interrupted" else "",
        "deadline": config.deadline or None,
        "deadline_note": deadline_note(config, job.trials, time.time(),
                                       _ended_at(job)),
        "usage": results_mod.usage_summary(job.trials, config.runner.mem_mb),
    }
    if args.json:
        print(json.dumps(status, indent=2), file=out)
        return ExitStatus.SUCCESS
    best = status["best"]
    print(f"job {job.job_id} ({config.app_name}): {_state_text(job)}", file=out)
    if status["message"]:
        print(f"  outcome: {status['message']}", file=out)
    if status["interrupted_reason"]:
        print(f"  interrupted: {status['interrupted_reason']}", file=out)
    if status["deadline_note"]:
        print(f"  {status['deadline_note']}", file=out)
    print(f"  trials: {status['done']}/{status['budget']} done, parallelism "
          f"{status['parallelism']}; "
          + ", ".join(f"{n} {s.lower()}" for s, n in status["trials"].items() if n), file=out)
    if best is not None:
        print(f"  best: trial-{best['trial']:04d} {config.search.objective}={best['value']:.6g}",
              file=out)
    print(f"  AppCore: {status['appcore']['task'] or '-'} "
          f"{status['appcore']['address'] or ''} {status['appcore']['state']}".rstrip(), file=out)
    for line in results_mod.usage_lines(job.trials, config.runner.mem_mb):
        print(f"  usage: {line}", file=out)
    for task in running:
        print(f"  running: trial-{task['trial']:04d} task {task['task']} on agent "
              f"{task['agent']} ({task['state']}{_usage_text(task['usage'])})", file=out)
    print(f"  master {status['master']}, framework {status['framework_id'] or '-'}, "
          f"elapsed {_fmt_seconds(status['duration_seconds'])}", file=out)
    print(f"  folder {job.folder}", file=out)
    return ExitStatus.SUCCESS


def _usage_text(usage: dict[str, float | None]) -> str:
    """``, peak 213 MB, CPU 1.2 s`` of a trial's measured usage ("" when not measured)."""
    text = ""
    if usage.get("peak_rss_bytes") is not None:
        text += f", peak {megabytes(float(usage['peak_rss_bytes'] or 0))}"
    if usage.get("cpu_seconds") is not None:
        text += f", CPU {usage['cpu_seconds']:.1f} s"
    if usage.get("mean_gpu_utilization") is not None:
        text += f", GPU {usage['mean_gpu_utilization']:.0f} %"
    if usage.get("peak_gpu_memory_bytes") is not None:
        text += f", GPU memory {megabytes(float(usage['peak_gpu_memory_bytes'] or 0))}"
    return text


def _log_task(job: Job, which: str) -> tuple[str, str, bool, str]:
    """(task id, agent id, whether its task may still run, the warm slot's executor it runs
    on or "") of ``appcore`` or a trial number."""
    if which == "appcore":
        appcore = json.loads(job.meta.get("appcore", "{}"))
        task = appcore.get("task_id", "")
        if not task:
            raise JobCommandError(f"job {job.job_id} has not launched AppCore yet")
        return task, str(appcore.get("agent_id", "")), appcore.get("state") in (
            "LAUNCHING", "RUNNING", "ATTACHED"), ""
    try:
        number = int(which)
    except ValueError:
        raise JobCommandError(f"invalid trial {which!r}: expected a trial number or "
                              "'appcore'") from None
    trial = next((t for t in job.trials if t.number == number), None)
    if trial is None:
        raise JobCommandError(f"job {job.job_id} has no trial {number} (it has "
                              f"{len(job.trials)})")
    live = trial.state in (TrialState.LAUNCHING, TrialState.RUNNING)
    return trial.task_id or f"trial-{number:04d}", trial.agent_id or "", live, \
        trial.executor_id


def cmd_logs(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    job = find(args.job)
    stream = "stderr" if args.stderr else "stdout"
    task, agent, live, slot = _log_task(job, args.trial)
    endpoints = json.loads(job.meta.get("agent_endpoints") or "{}")
    if job.state == "interrupted" and live and agent in endpoints:
        # No framework copies its output now, but the task may still run on its agent.
        return _logs_from_agent(job, task, agent, endpoints, stream, args.follow, out, slot)
    path = job.folder / paths.TASK_LOGS / f"{task}.{stream}"
    offset = 0
    while True:
        if path.exists():
            with path.open("rb") as handle:
                handle.seek(offset)
                data = handle.read()
            offset += len(data)
            out.write(data.decode("utf-8", "replace"))
            out.flush()
        if not args.follow or job.state != "running":
            if not path.exists() and not args.follow:
                raise JobCommandError(f"no output of {path.stem} yet ({path})", ExitStatus.ERROR)
            return ExitStatus.SUCCESS
        time.sleep(0.5)
        job = find(job.job_id)


def _logs_from_agent(job: Job, task: str, agent: str, endpoints: dict[str, str], stream: str,
                     follow: bool, out: IO[str], slot: str = "") -> ExitStatus:
    """A live task's ``stream`` read through its agent's ``/files`` API (a real Mesos agent's
    or the embedded one's), followed while the job stays interrupted. ``slot``: the warm
    slot's executor the task runs on (its sandbox is a folder of that executor's)."""
    from disauto.framework.sandbox_logs import SandboxLogs

    logs = SandboxLogs(endpoints=endpoints)
    framework_id = job.meta.get("framework_id", "")
    try:
        root, directory = logs.task_sandbox(agent, framework_id, task, slot)
    except (OSError, ValueError, KeyError) as err:
        raise JobCommandError(f"cannot reach agent {agent} of task {task}: {err}",
                              ExitStatus.ERROR) from None
    if not directory:
        raise JobCommandError(f"agent {agent} no longer has the sandbox of task {task}",
                              ExitStatus.ERROR)
    offset = 0
    while True:
        try:
            data, offset = logs.read_from(root, f"{directory}/{stream}", offset)
        except (OSError, ValueError, KeyError) as err:
            if not follow:
                raise JobCommandError(f"cannot read {stream} of task {task} on agent {agent}: "
                                      f"{err}", ExitStatus.ERROR) from None
            return ExitStatus.SUCCESS  # the agent or the sandbox went away: nothing to follow
        out.write(data)
        out.flush()
        if not follow or find(job.job_id).state != "interrupted":
            return ExitStatus.SUCCESS
        time.sleep(0.5)


def cmd_results(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    job = find(args.job)
    config = job.config
    order = [p.name for p in config.search.space.parameters]
    objective = config.search.objective
    if args.format == "json":
        saved = job.folder / paths.RESULTS_JSON
        if job.state == "ended" and saved.exists():
            out.write(saved.read_text() + "\n")
        else:
            print(json.dumps({**job.summary(), "trials": [results_mod.trial_dict(t) for t in
                                                          job.trials]}, indent=2), file=out)
    elif args.format == "csv":
        buffer = io.StringIO()
        results_mod.write_csv(buffer, job.trials, job.maximize, order)
        out.write(buffer.getvalue())
    else:
        print(results_mod.table(job.trials, objective, job.maximize, limit=10_000,
                                param_order=order), file=out)
    return ExitStatus.SUCCESS


def cmd_kill(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    job = find(args.job)
    if job.state == "ended":
        raise JobCommandError(f"job {job.job_id} has already ended ({job.outcome})")
    if job.state == "interrupted":
        store = JobStore(job.folder / paths.JOB_DB)
        try:  # nothing runs its framework: close its record here
            _close_interrupted(store)
        finally:
            store.close()
        print(f"{PROG}: job {job.job_id} was interrupted; its record is closed (KILLED)",
              file=out)
        return ExitStatus.SUCCESS
    print(f"{PROG}: killing job {job.job_id}…", file=out)
    deadline = time.monotonic() + args.wait
    try:  # the run loop answers within a second, then kills the job's tasks
        answer = ask(job, KillJob(), args.wait)
    except NoAnswerError:
        answer = None  # it ended meanwhile, or never answered: its state says which
    if answer is not None and not answer.ok:
        raise JobCommandError(f"job {job.job_id} refused to end: {answer.message}",
                              ExitStatus.ERROR)
    while time.monotonic() < deadline:
        if find(job.job_id).state != "running":
            print(f"{PROG}: job {job.job_id} ended (killed)", file=out)
            return ExitStatus.SUCCESS
        time.sleep(0.3)
    raise JobCommandError(f"job {job.job_id} did not end within {args.wait:g} s; its "
                          "framework still runs", ExitStatus.ERROR)


def _close_interrupted(store: JobStore) -> None:
    now = time.time()
    for trial in store.trials():
        if trial.state.is_in_flight():
            store.update_trial(trial.number, state=TrialState.KILLED, ended_at=now,
                               message="the job was killed while interrupted")
    store.set_meta_many({meta.STATE: meta.ENDED, meta.OUTCOME: "JOB_KILLED",
                         meta.ENDED_AT: now,
                         meta.OUTCOME_MESSAGE: "killed with da-job kill while interrupted"})


def cmd_update(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    from disauto.submit import update

    job = find(args.job)
    if job.state == "ended":
        raise JobCommandError(f"job {job.job_id} has ended ({job.outcome}); nothing to update")
    try:
        request = update.requested(job, args.trial_steps, args.parallelism)
        if job.state == "interrupted":
            change = update.update_interrupted(job, request)
            print(f"{PROG}: job {job.job_id} is interrupted; its record now says {change} "
                  "(da-job resume carries it on with it)", file=out)
            return ExitStatus.SUCCESS
        change = update.update_running(job, request, args.wait)
    except update.UpdateError as error:
        raise JobCommandError(str(error), error.status) from None
    print(f"{PROG}: job {job.job_id} updated: {change}", file=out)
    return ExitStatus.SUCCESS


def cmd_resume(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    from disauto.submit.resume import resume

    job = find(args.job)
    if job.state == "running":
        raise JobCommandError(f"job {job.job_id} is running (pid {job.meta.get('pid')}); "
                              "nothing to resume")
    if job.state == "ended":
        raise JobCommandError(f"job {job.job_id} has ended ({job.outcome}); nothing to resume")
    return resume(job, detach_it=args.detach, secret_file=args.secret_file, out=out,
                  err=sys.stderr)


def cmd_ui(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    from disauto.submit.ui import serve

    if not 0 <= args.port <= 65535:
        raise JobCommandError(f"--port must be 0-65535, got {args.port}")
    try:
        serve(args.host, args.port, out)
    except OSError as error:
        raise JobCommandError(f"cannot serve on {args.host}:{args.port}: {error}",
                              ExitStatus.ERROR) from None
    return ExitStatus.SUCCESS


COMMANDS = {"ui": cmd_ui, "list": cmd_list, "status": cmd_status, "logs": cmd_logs,
            "results": cmd_results,
            "kill": cmd_kill, "update": cmd_update, "resume": cmd_resume}


def main(argv: Sequence[str] | None = None) -> int:
    """The da-job console script: one error funnel, one line per error."""
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        return COMMANDS[args.command](args, sys.stdout)
    except JobLookupError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return ExitStatus.USAGE
    except JobCommandError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return error.status
    except KeyboardInterrupt:
        return ExitStatus.CTRL_C
    except BrokenPipeError:  # `da-job results JOB | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitStatus.SUCCESS
    except (OSError, ValueError, csv.Error) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return ExitStatus.ERROR


if __name__ == "__main__":
    sys.exit(main())
