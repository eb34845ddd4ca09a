"""``da-job status``: a job's trials by state, its best (with several objectives: its Pareto
front), budget and parallelism, the running tasks and their agents, AppCore's address."""

from __future__ import annotations

import argparse
import json
import time
from typing import IO
from typing import Any

from disauto.common.durations import format_duration
from disauto.common.messages import cause_first
from disauto.common.objectives import Objectives
from disauto.common.trial_state import TrialState
from disauto.framework.record import RATE_WINDOW
from disauto.framework.record import Pace
from disauto.framework.record import deadline_note
from disauto.framework.record import job_pace
from disauto.framework.record import megabytes
from disauto.framework.record import meta
from disauto.framework.record import unreachable_note
from disauto.submit import results as results_mod
from disauto.submit.exit_status import ExitStatus
from disauto.submit.fit import clip
from disauto.submit.fit import columns
from disauto.submit.fit import short_path
from disauto.submit.fit import wrap
from disauto.submit.front import front_lines
from disauto.submit.front import front_rows
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import arg
from disauto.submit.job_cli.base import ended_at
from disauto.submit.job_cli.base import fmt_seconds
from disauto.submit.job_cli.base import state_text
from disauto.submit.jobs import Job
from disauto.submit.jobs import find


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    job = find(args.job)
    config = job.config
    appcore = job.appcore_run
    running = [{"trial": t.number, "task": t.task_id, "agent": t.agent_id, "state": str(t.state),
                "usage": t.usage.as_columns(), "unreachable_since": t.unreachable_since}
               for t in job.trials if t.state in (TrialState.LAUNCHING, TrialState.RUNNING)]
    # An interrupted job's framework died: what it recorded of AppCore is what it last knew.
    known = job.state != "interrupted" or not appcore.get("state")
    now = ended_at(job) or time.time()
    pace = job_pace(config, job.trials, now, ended=job.state != "running")
    status = {
        **job.summary(), "trials": job.counts(), "message": job.meta[meta.OUTCOME_MESSAGE],
        "running": running, "appcore": {"task": appcore.get("task_id", ""),
                                        "address": appcore.get("address", ""),
                                        "state": appcore.get("state", "") if known
                                        else "UNKNOWN",
                                        "recorded_state": appcore.get("state", "")},
        "master": job.meta[meta.MASTER], "framework_id": job.meta[meta.FRAMEWORK_ID],
        "roles": list(config.subscribed_roles),
        "unreachable": unreachable_note(job.trials, config.unreachable_timeout),
        "folder": str(job.folder),
        "interrupted_reason": job.meta[meta.INTERRUPTED_REASON]
        if job.state == "interrupted" else "",
        "deadline": config.deadline or None,
        "deadline_note": deadline_note(config, job.trials, time.time(),
                                       ended_at(job)),
        "pace": pace.as_json(now),
        "usage": results_mod.usage_summary(job.trials, config.runner.mem_mb),
        "trial_retries": int(config.trial_retries),
        "retried": [{"trial": t.number, "state": str(t.state), "task": t.task_id,
                     "tries": list(t.tries), "resumed_from": t.resumed_from}
                    for t in job.trials if t.tries],
        "last_failure": _last_failure(job),
    }
    objectives = Objectives.from_spec(config.search)
    if objectives.several:  # no one best: the Pareto front, each trial with every objective
        status["front"] = front_rows(job.trials, objectives)
    if args.json:
        print(json.dumps(status, indent=2), file=out)
        return ExitStatus.SUCCESS
    _print_status(job, status, out)
    return ExitStatus.SUCCESS


def _last_failure(job: Job) -> dict[str, Any] | None:
    """The trial that failed last (the highest number among FAILED and TIMEOUT): its number,
    task, state and why (with the end of its stderr, or of its warm slot's executor's, as
    the framework recorded it), or None."""
    failed = [t for t in job.trials if t.state in (TrialState.FAILED, TrialState.TIMEOUT)]
    if not failed:
        return None
    trial = max(failed, key=lambda t: t.number)
    return {"trial": trial.number, "task": trial.task_id or f"trial-{trial.number:04d}",
            "state": str(trial.state), "message": trial.message}


def _print_status(job: Job, status: dict[str, Any], out: IO[str]) -> None:
    """The status for people, each line fitted to the terminal: the cause of a failure first,
    ids and paths shortened."""
    config = job.config

    def say(text: str, max_lines: int = 0) -> None:
        lines = wrap(text, indent="    ")
        if max_lines and len(lines) > max_lines:
            rest = " ".join(line.strip() for line in lines[max_lines - 1:])
            lines = [*lines[:max_lines - 1], "    " + clip(rest, columns() - 4)]
        print("\n".join(lines), file=out)

    say(f"job {job.job_id} ({config.app_name}): {state_text(job)}")
    if status["message"]:
        say(f"  outcome: {cause_first(status['message'])}", max_lines=3)
    if status["interrupted_reason"]:
        say(f"  interrupted: {status['interrupted_reason']}")
    if status["deadline_note"]:
        say(f"  {status['deadline_note']}")
    say(f"  trials: {status['done']}/{status['budget']} done, parallelism "
        f"{status['parallelism']}; "
        + ", ".join(f"{n} {s.lower()}" for s, n in status["trials"].items() if n))
    say(f"  pace: {pace_text(pace_of(status['pace']), job.state == 'running')}")
    best = status["best"]
    if "front" in status:
        for line in front_lines(status["front"], Objectives.from_spec(config.search)):
            say(f"  {line}")
    elif best is not None:
        say(f"  best: trial-{best['trial']:04d} {config.search.objective}={best['value']:.6g}")
    appcore = status["appcore"]
    state = appcore["state"]
    if state == "UNKNOWN":
        state = f"(unknown: {appcore['recorded_state']} when its framework died)"
    say("  AppCore: " + " ".join(part for part in (appcore["task"] or "-", appcore["address"],
                                                   state) if part))
    if status["unreachable"]:
        say(f"  unreachable: {status['unreachable']}")
    for line in results_mod.usage_lines(job.trials, config.runner.mem_mb):
        say(f"  usage: {line}")
    running = "running" if job.state == "running" else "was running"
    for line in results_mod.retried_lines(job.trials):
        say(f"  retried: {line}", max_lines=3)
    failure = status["last_failure"]
    if failure is not None and failure["message"] not in status["message"]:
        say(f"  last failure: trial-{failure['trial']:04d} ({failure['task']}) "
            f"{failure['state']}: {cause_first(failure['message'])}", max_lines=3)
        say(f"    (its output: da-job logs {job.job_id} {failure['task']} --stderr)")
    for task in status["running"]:
        name = f"trial-{task['trial']:04d}"
        said = f" (task {task['task']})" if task["task"] not in ("", name) else ""
        away = "" if task["unreachable_since"] is None else \
            f", agent unreachable since {clock(task['unreachable_since'])}"
        say(f"  {running}: {name}{said} on agent {short_id(task['agent'])} "
            f"({task['state']}{away}{usage_text(task['usage'])})")
    roles = status["roles"]
    say(f"  master {status['master']}, framework {short_id(status['framework_id']) or '-'}, "
        f"role{'s' if len(roles) > 1 else ''} {', '.join(roles)}, "
        f"elapsed {fmt_seconds(status['duration_seconds'])}")
    say(f"  folder {short_path(job.folder, columns() - 9)}")


def pace_of(figures: dict[str, Any]) -> Pace:
    """The :class:`Pace` of ``--json``'s ``pace`` figures."""
    return Pace(figures["trials_per_minute"], figures["eta_seconds"], figures["trial_seconds"])


def pace_text(pace: Pace, running: bool) -> str:
    """``2.4 trials/min in the last 10m, ETA 12m30s (trials of 1m30s on average)``; an ended
    or interrupted job's rate alone, up to when it stopped."""
    if pace.per_minute is None:
        return "no trial has ended yet, ETA —" if running else "no trial ended"
    window = format_duration(RATE_WINDOW)
    if not running:
        return f"{pace.rate_text()} in its last {window}"
    mean = "" if pace.trial_seconds is None else \
        f" (trials of {format_duration(pace.trial_seconds)} on average)"
    return f"{pace.rate_text()} in the last {window}, ETA {pace.eta_text()}{mean}"


def clock(seconds: float) -> str:
    """``14:03:07``: a time of day, local."""
    return time.strftime("%H:%M:%S", time.localtime(seconds))


def short_id(mesos_id: str) -> str:
    """A Mesos agent or framework id as people tell them apart: the number after its master's
    id (``…-S0``, ``…-0003``); other ids as they are."""
    master, dash, number = mesos_id.rpartition("-")
    if dash and len(master) >= 36 and len(number) <= 8:
        return f"…-{number}"
    return mesos_id


def usage_text(usage: dict[str, float | None]) -> str:
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


COMMAND = Command(
    name="status", help="a job's trials, best, tasks", run=run,
    arguments=(JOB, arg("--json", action="store_true", help="as one JSON object")))
