"""The warm-slot contract between the framework and the DisAuto executor (``disauto.executor``).

A warm slot is one Mesos CUSTOM executor that runs trial after trial of one job: each trial is a
task of that executor. Mesos forbids a TaskInfo with both ``command`` and ``executor``, so the
trial's command and environment travel in ``TaskInfo.data`` (base64 JSON, :func:`task_data`);
the job's files are fetched once per slot into the executor's sandbox. Each task runs in its own
sandbox ``<executor sandbox>/tasks/<task id>/`` (as Mesos' default executor gives each task its
own), where its ``stdout`` and ``stderr`` are, so the agent's ``/files`` API reads them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
import json


EXECUTOR_MODULE = "disauto.executor"
"""What the slot's executor command runs: ``python3 -m disauto.executor``."""

TASKS_DIR = "tasks"
"""The folder of the executor's sandbox that holds one sandbox per task."""

DEFAULT_KILL_GRACE = 3.0
"""Seconds between SIGTERM and SIGKILL of a task's process group when its KILL names none."""

SLOT_MODES = ("task", "warm")
"""``da-submit --slot-mode``: a Mesos command task per trial, or warm slots."""


class TaskDataError(ValueError):
    """A slot task's ``data`` is not what the framework sends."""


def slot_executor_id(job_id: str, number: int) -> str:
    """The ExecutorID of a job's slot: ``<job>-slot-3``."""
    return f"{job_id}-slot-{number}"


def task_sandbox(task_id: str) -> str:
    """A slot task's sandbox, relative to its executor's: ``tasks/<task id>``."""
    if not task_id or "/" in task_id or task_id in (".", ".."):
        raise TaskDataError(f"task id {task_id!r} cannot name a folder")
    return f"{TASKS_DIR}/{task_id}"


def task_data(command: str, environment: Mapping[str, str]) -> str:
    """``TaskInfo.data`` of a slot task: the shell command and its environment."""
    body = json.dumps({"command": command, "environment": dict(environment)}, sort_keys=True)
    return base64.b64encode(body.encode()).decode()


def read_task_data(data: str) -> tuple[str, dict[str, str]]:
    """(command, environment) of a slot task's ``data``."""
    try:
        body = json.loads(base64.b64decode(data, validate=True))
        command = body["command"]
        environment = body.get("environment", {})
    except (ValueError, TypeError, KeyError) as err:
        raise TaskDataError(f"the task's data is not a DisAuto slot task ({err})") from None
    if not isinstance(command, str) or not command or not isinstance(environment, dict):
        raise TaskDataError("the task's data names no command")
    return command, {str(k): str(v) for k, v in environment.items()}
