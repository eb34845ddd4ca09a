"""What an embedded agent shows: its ``AgentInfo``, its ``/state``, its executors' usage
(``/monitor/statistics``), its sandboxes and its tasks' states.

The agent's ``views`` part (:mod:`localmesos.agent.parts`): each view reads the agent's tables
under its lock and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from disauto.localmesos.agent import sandbox as sandbox_mod
from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.containerizer.docker import ContainerProcess
from disauto.localmesos.containerizer.monitor import ExecutorEntry
from disauto.localmesos.containerizer.monitor import mem_limit_bytes


AGENT_PORT = 5051  # AgentInfo.port default


def _scalars(infos: list[Mapping[str, Any]]) -> dict[str, float]:
    """The summed scalar resources of TaskInfos/ExecutorInfos (malformed ones count 0)."""
    total: dict[str, float] = {}
    for info in infos:
        for resource in info.get("resources") or []:
            value = (resource.get("scalar") or {}).get("value") if isinstance(resource, Mapping) \
                else None
            if isinstance(value, int | float) and not isinstance(value, bool):
                name = str(resource.get("name"))
                total[name] = total.get(name, 0.0) + float(value)
    return total


def agent_info(config: AgentConfig, agent_id: str | None = None) -> dict[str, Any]:
    """The ``AgentInfo`` JSON of an agent of ``config`` (without ``id`` before the master
    gave it one: ``RegisterSlaveMessage``)."""
    attributes: list[dict[str, Any]] = []
    for name, value in config.attributes.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes.append({"name": name, "type": "SCALAR", "scalar": {"value": value}})
        else:
            text = str(value).lower() if isinstance(value, bool) else str(value)
            attributes.append({"name": name, "type": "TEXT", "text": {"value": text}})
    info: dict[str, Any] = {
        "hostname": config.hostname,
        "port": AGENT_PORT,
        "resources": config.total().to_json(format="pre"),
        "attributes": attributes,
    }
    return info if agent_id is None else {"id": {"value": agent_id}, **info}


class AgentViews:
    """The agent's read-only views (part of :class:`localmesos.agent.agent.Agent`)."""

    def __init__(self, state: AgentState, parts: AgentParts) -> None:
        self.state = state
        self.parts = parts

    _file_roots_cache: tuple[int, dict[str, Path]] | None = None
    """(sandboxes when built, :meth:`file_roots`' answer); callers do not change it."""

    def info(self) -> dict[str, Any]:
        """The ``AgentInfo`` JSON of this agent."""
        return agent_info(self.state.config, self.state.id)

    def task_sandbox(self, framework_id: str, task_id: str) -> Path | None:
        """The sandbox directory of a task launched here (kept after it ends), if any."""
        with self.state.lock:
            entry = self.state.sandboxes.get((framework_id, task_id))
        return entry[1] if entry else None

    def file_roots(self) -> dict[str, Path]:
        """Virtual path -> sandbox, for :func:`localmesos.agent.sandbox.browse`/``read`` (the
        same mapping while no sandbox was added: read it, do not change it).

        Every sandbox is served under its real path and under Mesos'
        ``/slaves/<agent>/frameworks/<fw>/executors/<executor>/runs/latest``.
        """
        with self.state.lock:
            # The table only grows (a task's sandbox is kept after it ends), so its size says
            # whether the roots changed: a warm slot's thousands of tasks share one sandbox,
            # and building the roots from every task on each /files request made the log
            # collector's calls cost in proportion to the tasks ever run.
            cached = self._file_roots_cache
            if cached is not None and cached[0] == len(self.state.sandboxes):
                return cached[1]
            size = len(self.state.sandboxes)
            entries = {(key[0], executor, path)
                       for key, (executor, path) in self.state.sandboxes.items()}
        roots: dict[str, Path] = {}
        for framework_id, executor_id, path in entries:
            roots[str(path)] = path
            roots[sandbox_mod.latest_virtual_path(self.state.id, framework_id, executor_id)] = (
                path.parent / "latest"
            )
        with self.state.lock:
            self._file_roots_cache = (size, roots)
        return roots

    def monitor_statistics(self) -> list[dict[str, Any]]:
        """``/monitor/statistics``: what each executor running here uses (Mesos'
        ``ResourceUsage`` per executor; :mod:`localmesos.containerizer.monitor`).

        A command task is its own executor (the executor id is the task id), measured as its
        process session; a custom executor is measured as its own session, which holds the
        processes of the tasks it runs; a container task from its cgroup. ``cpus_limit`` and
        ``mem_limit_bytes`` are the resources of the executor and its live tasks.
        """
        entries = []
        with self.state.lock:
            for task in self.state.tasks.values():
                if task.terminal or task.process is None or task.info.get("executor"):
                    continue
                scalars = _scalars([task.info])
                entries.append(ExecutorEntry(
                    framework_id=task.framework_id, executor_id=task.executor_id,
                    executor_name=f"Command Executor (Task: {task.task_id})",
                    source=task.task_id, pid=task.process.pid,
                    container=isinstance(task.process, ContainerProcess),
                    cpus_limit=scalars.get("cpus"),
                    mem_limit_bytes=mem_limit_bytes(scalars.get("mem", 0.0)),
                    cgroups=task.process.cgroups
                    if isinstance(task.process, ContainerProcess) else None,
                ))
            for run in self.state.executors.values():
                if run.process is None or run.process.exited:
                    continue
                infos = [run.info] + [
                    self.state.tasks[(run.framework_id, task_id)].info for task_id in run.launched
                    if (run.framework_id, task_id) in self.state.tasks
                    and not self.state.tasks[(run.framework_id, task_id)].terminal
                ]
                scalars = _scalars(infos)
                entries.append(ExecutorEntry(
                    framework_id=run.framework_id, executor_id=run.executor_id,
                    executor_name=str(run.info.get("name", "")),
                    source=str(run.info.get("source", "")), pid=run.process.pid,
                    container=False, cpus_limit=scalars.get("cpus"),
                    mem_limit_bytes=mem_limit_bytes(scalars.get("mem", 0.0)),
                ))
        return self.state.monitor.statistics(entries)

    def running_tasks(self) -> list[tuple[str, str]]:
        """``(framework_id, task_id)`` of every task that has not reached a terminal state."""
        with self.state.lock:
            return [key for key, task in self.state.tasks.items() if not task.terminal]

    def state_json(self) -> dict[str, Any]:
        """The agent's ``/state`` as a Mesos agent serves it (the parts tools read).

        ``frameworks[].executors[]`` lists executors with a live task and
        ``completed_executors[]`` the others, each with its sandbox ``directory`` — what the
        web UI and DisAuto's framework use to find a task's stdout/stderr.
        """
        with self.state.lock:
            sandboxes = dict(self.state.sandboxes)
            live = {key: task.state for key, task in self.state.tasks.items() if not task.terminal}
            runs = {run.sandbox: run for run in self.state.executors.values()}
            for run in runs.values():  # an executor with no task yet is listed too
                sandboxes.setdefault((run.framework_id, ""), (run.executor_id, run.sandbox))
        frameworks: dict[str, dict[str, Any]] = {}
        executors: dict[tuple[str, Path], dict[str, Any]] = {}
        for (framework_id, task_id), (executor_id, path) in sorted(
            sandboxes.items(), key=lambda item: (item[0][0], item[0][1], str(item[1][1]))
        ):
            framework = frameworks.setdefault(
                framework_id,
                {"id": framework_id, "executors": [], "completed_executors": []},
            )
            executor = executors.get((framework_id, path))
            if executor is None:
                run = runs.get(path)
                source = str(run.info.get("source", "")) if run is not None else task_id
                executor = {"id": executor_id, "directory": str(path), "source": source,
                            "tasks": []}
                executors[(framework_id, path)] = executor
                active = run is not None or (framework_id, task_id) in live
                framework["executors" if active else "completed_executors"].append(executor)
            if (framework_id, task_id) in live:
                executor["tasks"].append({"id": task_id, "state": live[(framework_id, task_id)]})
        return {
            "id": self.state.id,
            "hostname": self.state.config.hostname,
            "resources": self.state.total.to_state(),
            "frameworks": list(frameworks.values()),
            "completed_frameworks": [],
        }

    def latest_state(self, framework_id: str, task_id: str) -> str | None:
        """The task's current state on this agent (which may be ahead of the updates the
        framework has acknowledged), or ``None`` once forgotten."""
        with self.state.lock:
            task = self.state.tasks.get((framework_id, task_id))
            return task.state if task else None

    def unacknowledged_updates(self, framework_id: str, task_id: str) -> list[dict[str, Any]]:
        """Copies of the task's updates not yet acknowledged, oldest first."""
        return self.state.updates.pending(framework_id, task_id)

    @property
    def free_gpus(self) -> tuple[int, ...]:
        """GPU indices not assigned to a running task."""
        with self.state.lock:
            return tuple(sorted(self.state.free_gpus))
