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
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import json
import os

from disauto.common.python_command import NotAPythonCommandError
from disauto.common.python_command import PythonCommand


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


SPEC_ENV = "DISAUTO_SLOT_CONTAINER"
"""The executor's environment variable that holds its container's :class:`ContainerSpec`
(JSON), set by the framework in the slot's ExecutorInfo."""


class ContainerSpecError(ValueError):
    """:data:`SPEC_ENV` is not what the framework sends; the message says what is wrong."""


@dataclass(frozen=True)
class ContainerSpec:
    """What the framework decides about a slot's container (:data:`SPEC_ENV`).

    Attributes:
        image: the Docker image reference.
        force_pull: pull it when the container is created even if it is local.
        host_paths: absolute host folders mounted read-write at the same path.
        executor_cpus: the executor's own CPUs (part of the container's limit).
        executor_mem_mb: the executor's own memory, in MB.
        labels: labels of the container (the job's).
    """

    image: str
    force_pull: bool = False
    host_paths: tuple[str, ...] = ()
    executor_cpus: float = 0.0
    executor_mem_mb: float = 0.0
    labels: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"image": self.image, "force_pull": self.force_pull,
                           "host_paths": list(self.host_paths),
                           "executor_cpus": self.executor_cpus,
                           "executor_mem_mb": self.executor_mem_mb,
                           "labels": dict(self.labels)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ContainerSpec:
        """Read :data:`SPEC_ENV`.

        Raises:
            ContainerSpecError: naming what is wrong with it.
        """
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ContainerSpecError(f"{SPEC_ENV} is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ContainerSpecError(f"{SPEC_ENV} must be a JSON object")
        image = data.get("image")
        if not isinstance(image, str) or not image.strip() or any(c.isspace() for c in image):
            raise ContainerSpecError(
                f"{SPEC_ENV}: 'image' must be an image reference, not {image!r}")
        paths = data.get("host_paths", [])
        if not isinstance(paths, list) or not all(
                isinstance(p, str) and os.path.isabs(p) and ":" not in p for p in paths):
            raise ContainerSpecError(
                f"{SPEC_ENV}: 'host_paths' must be absolute paths without ':'")
        labels = data.get("labels", {})
        if not isinstance(labels, dict):
            raise ContainerSpecError(f"{SPEC_ENV}: 'labels' must be an object")
        try:
            cpus = float(data.get("executor_cpus", 0.0))
            mem = float(data.get("executor_mem_mb", 0.0))
        except (TypeError, ValueError):
            raise ContainerSpecError(
                f"{SPEC_ENV}: 'executor_cpus' and 'executor_mem_mb' must be numbers") from None
        return cls(image, bool(data.get("force_pull", False)), tuple(paths), cpus, mem,
                   {str(k): str(v) for k, v in labels.items()})


def slot_executor_id(job_id: str, number: int) -> str:
    """The ExecutorID of a job's slot: ``<job>-slot-3``."""
    return f"{job_id}-slot-{number}"


def slot_number(job_id: str, executor_id: str) -> int | None:
    """N of ``<job>-slot-N``, or None when ``executor_id`` names no slot of that job."""
    prefix = f"{job_id}-slot-"
    tail = executor_id[len(prefix):] if executor_id.startswith(prefix) else ""
    return int(tail) if tail.isdigit() and tail.isascii() else None


def task_sandbox(task_id: str) -> str:
    """A slot task's sandbox, relative to its executor's: ``tasks/<task id>``."""
    if not task_id or "/" in task_id or task_id in (".", ".."):
        raise TaskDataError(f"task id {task_id!r} cannot name a folder")
    return f"{TASKS_DIR}/{task_id}"


@dataclass(frozen=True)
class Preload:
    """``da-submit --slot-preload``: run the trial by forking the slot's interpreter that has
    imported ``modules``, instead of ``/bin/sh -c`` (``executor/forkserver.py``)."""

    program: PythonCommand
    """The launch command as one Python program (``common/python_command.py``)."""
    modules: tuple[str, ...]
    optional: tuple[str, ...] = ()
    """``--slot-preload auto``: the script's imports, imported after ``modules`` when they can
    be and leave the interpreter safe to fork, skipped otherwise (``common/auto_preload.py``)."""


@dataclass(frozen=True)
class SlotTask:
    """What a slot task's ``data`` carries."""

    command: str
    environment: dict[str, str]
    preload: Preload | None = None
    warmup: Warmup | None = None
    """Set on a slot's warm-up task: the executor prepares the slot for trials like this one
    and ends the task, without running ``command``."""


@dataclass(frozen=True)
class Warmup:
    """A warm-up task (``framework/_slots.py`` warm_up_task): the slot starts what its trials
    will share -- its container, sized for trials of ``cpus`` and ``mem_mb``, and its
    pre-imported interpreter -- before the first trial is sent, and the task then ends
    TASK_FINISHED (TASK_FAILED with the reason when the slot cannot be prepared)."""

    cpus: float
    mem_mb: float


WARMUP_SUFFIX = "-warmup"
"""A warm-up task's id is its slot's executor id with this suffix."""


def warmup_task_id(executor_id: str) -> str:
    return executor_id + WARMUP_SUFFIX


def is_warmup_task(task_id: str) -> bool:
    return task_id.endswith(WARMUP_SUFFIX) and "-slot-" in task_id


def task_data(command: str, environment: Mapping[str, str],
              preload: Preload | None = None, warmup: Warmup | None = None) -> str:
    """``TaskInfo.data`` of a slot task: the shell command, its environment and, with
    ``--slot-preload``, the program and the modules the slot's interpreter imports; a warm-up
    task says so and what its trials will take."""
    body: dict[str, object] = {"command": command, "environment": dict(environment)}
    if preload is not None:
        body["preload"] = {"program": preload.program.to_json(),
                           "modules": list(preload.modules),
                           **({"optional": list(preload.optional)} if preload.optional else {})}
    if warmup is not None:
        body["warmup"] = {"cpus": warmup.cpus, "mem_mb": warmup.mem_mb}
    return base64.b64encode(json.dumps(body, sort_keys=True).encode()).decode()


def read_slot_task(data: str) -> SlotTask:
    """The slot task a task's ``data`` describes."""
    try:
        body = json.loads(base64.b64decode(data, validate=True))
        command = body["command"]
        environment = body.get("environment", {})
        preload = body.get("preload")
        warmup = body.get("warmup")
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise TaskDataError(f"the task's data is not a DisAuto slot task ({err})") from None
    if not isinstance(command, str) or not command or not isinstance(environment, dict):
        raise TaskDataError("the task's data names no command")
    return SlotTask(command, {str(k): str(v) for k, v in environment.items()},
                    _read_preload(preload) if preload is not None else None,
                    _read_warmup(warmup) if warmup is not None else None)


def _read_warmup(body: object) -> Warmup:
    try:
        cpus, mem_mb = float(body["cpus"]), float(body["mem_mb"])  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        raise TaskDataError("the task's warmup is not an object with numbers 'cpus' and "
                            "'mem_mb'") from None
    if not (cpus >= 0 and mem_mb >= 0):
        raise TaskDataError("the task's warmup 'cpus' and 'mem_mb' must be >= 0")
    return Warmup(cpus, mem_mb)


def _read_preload(body: object) -> Preload:
    if not isinstance(body, dict) or not isinstance(body.get("modules", []), list) \
            or not isinstance(body.get("optional", []), list):
        raise TaskDataError("the task's preload is not an object with lists of modules")
    try:
        program = PythonCommand.from_json(body.get("program"))
    except NotAPythonCommandError as err:
        raise TaskDataError(f"the task's preload program is not one: {err}") from None
    return Preload(program, tuple(str(m) for m in body.get("modules", [])),
                   tuple(str(m) for m in body.get("optional", [])))


def preload_modules(declared: Sequence[str]) -> tuple[str, ...]:
    """The modules a slot's interpreter imports: the SDK (whose gRPC import is most of a small
    trial's start) and then the user's, each once, in order."""
    out: list[str] = []
    for name in ("apprunner_sdk", *declared):
        if name not in out:
            out.append(name)
    return tuple(out)
