"""``da-job logs``: a trial's (or AppCore's) output, from the job folder's copy, or from its
agent while an interrupted job's task still runs there."""

from __future__ import annotations

import argparse
import json
import time
from typing import IO

from disauto.common import paths
from disauto.common.trial_state import TrialState
from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.jobs import Job
from disauto.submit.jobs import find


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


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
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


COMMAND = Command(
    name="logs", help="a trial's (or AppCore's) output", run=run,
    arguments=(
        JOB,
        arg("trial", nargs="?", default="appcore",
            help="a trial number, or appcore (default)"),
        arg("--stderr", action="store_true", help="stderr instead of stdout"),
        arg("-f", "--follow", action="store_true", help="follow while the job runs"),
    ))
