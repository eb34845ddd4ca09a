"""What an agent checkpoints for the frameworks that ask for it, and reading it back.

Mesos' meta directory layout (apache/mesos ``src/slave/paths.cpp``, ``src/slave/state.cpp``),
under ``<work_dir>/meta/slaves/<agent id>/``::

    slave.info                                  AgentInfo
    drain.config                                DrainConfig, while draining
    frameworks/<framework>/framework.info       FrameworkInfo (``checkpoint: true`` only)
      executors/<executor>/executor.info        ExecutorInfo (a command task's: generated)
        runs/latest -> <container>
        runs/<container>/pids/forked.pid        the executor's (command task's) pid
        runs/<container>/http.marker            an HTTP executor subscribed once
        runs/<container>/gpus                   the GPU indices of the run
        runs/<container>/tasks/<task>/task.info     TaskInfo
        runs/<container>/tasks/<task>/task.updates  its updates and acknowledgements

Mesos writes protobuf records; these files are JSON (``task.updates``: one JSON object a line,
``{"update": TaskStatus}`` or ``{"ack": uuid}``). The ``.info`` files are replaced atomically
(written aside, then renamed); updates are appended and flushed, not fsynced: the embedded
agent's restarts are restarts of its object, not of the machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping
import contextlib
from dataclasses import dataclass
from dataclasses import field
import json
import logging
import os
from pathlib import Path
import shutil
from typing import Any


logger = logging.getLogger("disauto.localmesos.agent")

TERMINAL = frozenset({"TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_ERROR", "TASK_LOST",
                      "TASK_DROPPED", "TASK_GONE", "TASK_GONE_BY_OPERATOR"})


def _write(path: Path, value: Any) -> None:
    """Replace ``path`` with ``value`` as JSON, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(value, separators=(",", ":")), encoding="utf-8")
    os.replace(temporary, path)


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


@dataclass
class TaskState:
    """A checkpointed task: its TaskInfo, its updates in order, the uuids acknowledged."""

    info: dict[str, Any]
    updates: list[dict[str, Any]] = field(default_factory=list)
    acks: set[str] = field(default_factory=set)

    @property
    def task_id(self) -> str:
        return str(self.info["task_id"]["value"])

    @property
    def state(self) -> str:
        """The latest state the agent reported (TASK_STAGING before any)."""
        return str(self.updates[-1]["state"]) if self.updates else "TASK_STAGING"

    @property
    def pending(self) -> list[dict[str, Any]]:
        """The updates not yet acknowledged, oldest first."""
        return [u for u in self.updates if u.get("uuid") not in self.acks]

    @property
    def completed(self) -> bool:
        """Terminal and acknowledged: Mesos completes it at recovery."""
        return self.state in TERMINAL and not self.pending


@dataclass
class RunState:
    """The latest run (container) of an executor."""

    executor_info: dict[str, Any]
    container_id: str
    pid: int | None
    http: bool
    gpus: tuple[int, ...]
    tasks: list[TaskState]


@dataclass
class FrameworkState:
    info: dict[str, Any]
    runs: list[RunState]


class MetaDir:
    """The meta directory of one agent.

    Args:
        work_dir: the agent's work dir.
        agent_id: the agent.
    """

    def __init__(self, work_dir: Path, agent_id: str) -> None:
        self.root = Path(work_dir) / "meta" / "slaves" / agent_id

    # -- paths -----------------------------------------------------------------------------

    def framework(self, framework_id: str) -> Path:
        return self.root / "frameworks" / framework_id

    def executor(self, framework_id: str, executor_id: str) -> Path:
        return self.framework(framework_id) / "executors" / executor_id

    def run(self, framework_id: str, executor_id: str, container_id: str) -> Path:
        return self.executor(framework_id, executor_id) / "runs" / container_id

    def task(self, framework_id: str, executor_id: str, container_id: str, task_id: str) -> Path:
        return self.run(framework_id, executor_id, container_id) / "tasks" / task_id

    # -- writes ----------------------------------------------------------------------------

    def write_agent(self, info: Mapping[str, Any]) -> None:
        _write(self.root / "slave.info", dict(info))

    def write_drain(self, config: Mapping[str, Any] | None) -> None:
        path = self.root / "drain.config"
        if config is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        else:
            _write(path, dict(config))

    def write_run(self, framework_info: Mapping[str, Any], executor_info: Mapping[str, Any],
                  container_id: str, gpus: tuple[int, ...] = ()) -> None:
        """The framework, the executor and its new latest run."""
        fid = str(framework_info["id"]["value"])
        eid = str(executor_info["executor_id"]["value"])
        _write(self.framework(fid) / "framework.info", dict(framework_info))
        _write(self.executor(fid, eid) / "executor.info", dict(executor_info))
        run = self.run(fid, eid, container_id)
        run.mkdir(parents=True, exist_ok=True)
        _write(run / "gpus", list(gpus))
        latest = run.parent / "latest"
        temporary = run.parent / ".latest.tmp"
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        temporary.symlink_to(container_id)
        os.replace(temporary, latest)

    def write_pid(self, framework_id: str, executor_id: str, container_id: str,
                  pid: int) -> None:
        _write(self.run(framework_id, executor_id, container_id) / "pids" / "forked.pid", pid)

    def mark_http(self, framework_id: str, executor_id: str, container_id: str) -> None:
        path = self.run(framework_id, executor_id, container_id) / "http.marker"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()

    def write_task(self, framework_id: str, executor_id: str, container_id: str,
                   info: Mapping[str, Any]) -> None:
        path = self.task(framework_id, executor_id, container_id,
                         str(info["task_id"]["value"]))
        _write(path / "task.info", dict(info))

    def append_update(self, framework_id: str, executor_id: str, container_id: str,
                      task_id: str, record: Mapping[str, Any]) -> None:
        """Append ``{"update": status}`` or ``{"ack": uuid}`` to the task's updates."""
        path = self.task(framework_id, executor_id, container_id, task_id) / "task.updates"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(dict(record), separators=(",", ":")) + "\n")

    def remove_framework(self, framework_id: str) -> None:
        """Forget a framework (it was removed, or has nothing left here)."""
        shutil.rmtree(self.framework(framework_id), ignore_errors=True)

    def remove_executor(self, framework_id: str, executor_id: str) -> None:
        shutil.rmtree(self.executor(framework_id, executor_id), ignore_errors=True)
        with contextlib.suppress(OSError):
            (self.framework(framework_id) / "executors").rmdir()
            self.remove_framework(framework_id)

    # -- reads -----------------------------------------------------------------------------

    def agent_info(self) -> dict[str, Any] | None:
        info = _read(self.root / "slave.info")
        return info if isinstance(info, dict) else None

    def drain_config(self) -> dict[str, Any] | None:
        config = _read(self.root / "drain.config")
        return config if isinstance(config, dict) else None

    def frameworks(self) -> Iterator[FrameworkState]:
        """Every checkpointed framework with the latest run of each of its executors."""
        for directory in sorted(_dirs(self.root / "frameworks")):
            info = _read(directory / "framework.info")
            if not isinstance(info, dict):
                logger.warning("Skipping framework %s: its info cannot be recovered",
                               directory.name)
                continue
            runs = [run for run in (self._latest_run(d) for d in
                                    sorted(_dirs(directory / "executors"))) if run is not None]
            yield FrameworkState(info, runs)

    def _latest_run(self, executor_dir: Path) -> RunState | None:
        info = _read(executor_dir / "executor.info")
        latest = executor_dir / "runs" / "latest"
        if not isinstance(info, dict) or not latest.is_symlink():
            logger.warning("Skipping executor %s: its latest run or info cannot be recovered",
                           executor_dir.name)
            return None
        container_id = os.readlink(latest)
        run = executor_dir / "runs" / container_id
        pid = _read(run / "pids" / "forked.pid")
        gpus = _read(run / "gpus") or []
        tasks = [task for task in (_task(d) for d in sorted(_dirs(run / "tasks")))
                 if task is not None]
        return RunState(info, container_id, pid if isinstance(pid, int) else None,
                        (run / "http.marker").exists(), tuple(gpus), tasks)


def _dirs(path: Path) -> list[Path]:
    with contextlib.suppress(OSError):
        return [p for p in path.iterdir() if p.is_dir() and not p.is_symlink()]
    return []


def _task(directory: Path) -> TaskState | None:
    info = _read(directory / "task.info")
    if not isinstance(info, dict):
        return None
    task = TaskState(info)
    with contextlib.suppress(OSError):
        for line in (directory / "task.updates").read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut short when the agent died while writing it
            if "update" in record:
                task.updates.append(record["update"])
            elif "ack" in record:
                task.acks.add(str(record["ack"]))
    return task
