"""``da-job status``: a job's trials by state, its best, budget and parallelism, the running
tasks and their agents, AppCore's address."""

from __future__ import annotations

import argparse
import json
import time
from typing import IO

from disauto.common.trial_state import TrialState
from disauto.framework.deadline_status import deadline_note
from disauto.framework.telemetry.usage import megabytes
from disauto.submit import results as results_mod
from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import arg
from disauto.submit.job_cli.base import ended_at
from disauto.submit.job_cli.base import fmt_seconds
from disauto.submit.job_cli.base import state_text
from disauto.submit.jobs import find


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
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
                                       ended_at(job)),
        "usage": results_mod.usage_summary(job.trials, config.runner.mem_mb),
    }
    if args.json:
        print(json.dumps(status, indent=2), file=out)
        return ExitStatus.SUCCESS
    best = status["best"]
    print(f"job {job.job_id} ({config.app_name}): {state_text(job)}", file=out)
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
              f"{task['agent']} ({task['state']}{usage_text(task['usage'])})", file=out)
    print(f"  master {status['master']}, framework {status['framework_id'] or '-'}, "
          f"elapsed {fmt_seconds(status['duration_seconds'])}", file=out)
    print(f"  folder {job.folder}", file=out)
    return ExitStatus.SUCCESS


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
