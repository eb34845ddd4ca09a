"""Warm slots: the executors of a job that run trial after trial (``--slot-mode warm``).

A slot is one DisAuto executor (``disauto.executor``, a CUSTOM ``ExecutorInfo`` with its own
small resources, :data:`EXECUTOR_CPUS` and :data:`EXECUTOR_MEM_MB`) on one agent, with an id
that is never reused (``<job>-slot-N``). Each trial is launched as a task of a free slot on the
agent of the offer it is accepted on (the trial's own resources come from the offer as usual);
a slot is started by the first task sent to it. The table only books: the scheduler calls the
driver.

Slot numbers are counted in the job's record (``on_start``), so a resumed framework never
reuses an id its predecessor gave a slot that may still run under the same FrameworkID (Mesos
refuses a task whose ExecutorInfo differs from that of a running executor with its id). It
**adopts** the slots that still run instead (:meth:`SlotTable.adopt`): they are freed when their
trial ends, reused, and shut down when idle, like its own.

A slot ends (SHUTDOWN) when the job ends, when it has been idle for ``idle_seconds``, and when
the offer policy deliberately declines an offer of its agent while it is idle (the policy says
the job should yield, e.g. its priority dropped). A slot whose executor ends (crash, kill) is
forgotten: Mesos fails its live task with REASON_EXECUTOR_TERMINATED, which the framework takes
as a lost task (queued again, at most ``max_task_retries`` times).

With ``--docker-image`` the ExecutorInfo carries the slot's container settings
(:class:`common.slots.ContainerSpec` in :data:`common.slots.SPEC_ENV`): the executor keeps one
container for the slot and runs each trial in it. A GPU trial's slot holds the trial's GPUs in
the executor's resources (the agent assigns them once, for the slot's life) and its tasks hold
none; such a slot is reused only for trials that want the same number of GPUs.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
import threading
import time
from typing import Any

from disauto.common import slots
from disauto.common.resources import Resources


EXECUTOR_CPUS = 0.05
EXECUTOR_MEM_MB = 64.0
IDLE_SECONDS = 10.0
"""How long a slot may wait without a trial before it is shut down (``da-submit
--slot-idle``)."""


def executor_resources(gpus: int = 0) -> Resources:
    """What a slot's executor holds while it lives, besides its trials' CPUs and memory: its
    own share, and the GPUs of a GPU slot."""
    return Resources({"cpus": EXECUTOR_CPUS, "mem": EXECUTOR_MEM_MB, "gpus": float(gpus)})


def carved(cpus: float, mem_mb: float) -> bool:
    """Whether a slot's executor share is carved out of its trials' own resources: when a
    trial asks for at least twice that share (``--app-runner-cpus 4`` gives the executor 0.05
    of the 4 CPUs and the trial's task 3.95), so that a slot takes exactly what a command task
    would and packs agents the same way (Tables 2-4: three 4-CPU trials per 12-CPU agent).
    Smaller trials get the share on top of theirs."""
    return cpus >= 2 * EXECUTOR_CPUS and mem_mb >= 2 * EXECUTOR_MEM_MB


@dataclass
class Slot:
    executor_id: str
    agent_id: str
    task_id: str = ""
    """The trial task it runs, "" while idle."""
    idle_since: float = 0.0
    gpus: int = 0
    """The GPUs its executor holds (its trials want exactly this many)."""
    info: dict[str, Any] | None = None
    """The ExecutorInfo it was started with: every task sent to it must carry exactly this
    one (Mesos refuses another with the same ExecutorID), so an adopted slot is reused only
    when it is known (the record keeps it); None: not known yet, or never."""
    adopted: bool = False
    role: str = "*"
    """The role its executor's resources are allocated to (the offer's it started on): it
    takes trials of offers of that role only, so that its tasks and executor stay in one."""


class SlotTable:
    """The job's slots (thread-safe).

    Args:
        job_id: names the slots.
        idle_seconds: an idle slot older than this is shut down.
        started: how many slots the job started before (in earlier framework incarnations):
            the next one is numbered from there.
        on_start: told the new count each time a slot is numbered, before it is launched
            (the runtime keeps it in the job's record).
    """

    def __init__(self, job_id: str, idle_seconds: float = IDLE_SECONDS, *, started: int = 0,
                 on_start: Callable[[int], None] | None = None) -> None:
        self._job_id = job_id
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._slots: dict[str, Slot] = {}
        self._by_task: dict[str, str] = {}
        self._task_executor: dict[str, str] = {}
        self._gone: set[str] = set()
        """Executors ended or shut down: never adopted again."""
        self._agents: dict[str, str] = {}
        """Every slot executor the table started or adopted → its agent (whose sandbox keeps
        the executor's own stdout and stderr)."""
        self._on_start = on_start or (lambda count: None)
        self.started = started
        self.adopted = 0
        """How many slots of an earlier framework incarnation this table took over."""

    def take(self, agent_id: str, task_id: str, can_start: bool,
             gpus: int = 0, *, role: str = "*") -> tuple[str, bool] | None:
        """A slot on ``agent_id`` for ``task_id`` (a trial of ``gpus`` GPUs from an offer of
        ``role``): (executor id, whether it is new), or None when none is free and
        ``can_start`` is false. Only a slot of ``role`` holding exactly ``gpus`` GPUs is
        reused."""
        with self._lock:
            slot = next((s for s in self._free(agent_id, role)
                         if s.gpus == gpus and self._reusable(s)), None)
            new = slot is None
            if slot is None:
                if not can_start:
                    return None
                slot = Slot(slots.slot_executor_id(self._job_id, self.started), agent_id,
                            gpus=gpus, role=role)
                self.started += 1
                self._on_start(self.started)
                self._slots[slot.executor_id] = slot
                self._agents[slot.executor_id] = agent_id
            slot.task_id = task_id
            self._by_task[task_id] = slot.executor_id
            self._task_executor[task_id] = slot.executor_id
            return slot.executor_id, new

    def start_idle(self, agent_id: str, *, role: str = "*") -> str:
        """Number a new slot on ``agent_id`` (of an offer of ``role``) that waits for trials
        from now (a warm-up task starts its executor): its executor id."""
        with self._lock:
            slot = Slot(slots.slot_executor_id(self._job_id, self.started), agent_id,
                        idle_since=time.monotonic(), role=role)
            self.started += 1
            self._on_start(self.started)
            self._slots[slot.executor_id] = slot
            self._agents[slot.executor_id] = agent_id
            self._task_executor[slots.warmup_task_id(slot.executor_id)] = slot.executor_id
            return slot.executor_id

    @staticmethod
    def _reusable(slot: Slot) -> bool:
        """Whether a free slot may take a trial: an adopted one only with its ExecutorInfo."""
        return not slot.adopted or slot.info is not None

    def set_info(self, executor_id: str, info: dict[str, Any]) -> None:
        """The ExecutorInfo a slot was started with (what its later tasks carry)."""
        with self._lock:
            slot = self._slots.get(executor_id)
            if slot is not None:
                slot.info = dict(info)

    def info_of(self, executor_id: str) -> dict[str, Any] | None:
        with self._lock:
            slot = self._slots.get(executor_id)
            return dict(slot.info) if slot is not None and slot.info is not None else None

    def adopt(self, executor_id: str, agent_id: str, task_id: str = "", gpus: int = 0,
              info: dict[str, Any] | None = None) -> bool:
        """Take over a slot of an earlier incarnation of the job's framework that still runs:
        busy with ``task_id`` (a live task of it), else idle from now; ``info`` is the
        ExecutorInfo it was started with (without it the slot takes no more trials and is
        shut down once idle). Whether it was new to the table; an executor of another job,
        or one that ended, is not adopted."""
        number = slots.slot_number(self._job_id, executor_id)
        if number is None:
            return False
        with self._lock:
            if executor_id in self._gone:
                return False
            if number >= self.started:  # a record written before slots were counted
                self.started = number + 1
                self._on_start(self.started)
            slot = self._slots.get(executor_id)
            new = slot is None
            if slot is None:
                slot = Slot(executor_id, agent_id, idle_since=time.monotonic(), gpus=gpus,
                            info=dict(info) if info is not None else None, adopted=True,
                            role=allocation_role(info))
                self._slots[executor_id] = slot
                self._agents[executor_id] = agent_id
                self.adopted += 1
            elif slot.info is None and info is not None:
                slot.info = dict(info)
                slot.role = allocation_role(info)
            if task_id and not slot.task_id and task_id not in self._by_task:
                slot.task_id = task_id
                self._by_task[task_id] = executor_id
                self._task_executor[task_id] = executor_id
            return new

    def task_ended(self, task_id: str) -> None:
        """The slot's task reached a terminal state: the slot is free."""
        with self._lock:
            executor_id = self._by_task.pop(task_id, None)
            slot = self._slots.get(executor_id or "")
            if slot is not None and slot.task_id == task_id:
                slot.task_id = ""
                slot.idle_since = time.monotonic()

    def executor_ended(self, executor_id: str) -> None:
        """The executor ended (lost, or shut down): forget the slot."""
        with self._lock:
            if executor_id:
                self._gone.add(executor_id)
            slot = self._slots.pop(executor_id, None)
            if slot is not None and slot.task_id:
                self._by_task.pop(slot.task_id, None)

    def _free(self, agent_id: str, role: str | None) -> list[Slot]:
        """Under the lock: the slots on ``agent_id`` (of ``role``; None: any) that wait."""
        return [s for s in self._slots.values() if s.agent_id == agent_id and not s.task_id
                and (role is None or s.role == role)]

    def has_free(self, agent_id: str, role: str | None = None) -> bool:
        """Whether a slot on ``agent_id`` (of ``role``; None: any) waits for a trial."""
        with self._lock:
            return bool(self._free(agent_id, role))

    def free_count(self, agent_id: str, role: str | None = None) -> int:
        """How many slots on ``agent_id`` (of ``role``; None: any) wait for a trial."""
        with self._lock:
            return len(self._free(agent_id, role))

    def free_gpus(self, agent_id: str, role: str | None = None) -> int:
        """The GPUs that free slots on ``agent_id`` (of ``role``; None: any) hold (their next
        trials use them)."""
        with self._lock:
            return sum(s.gpus for s in self._free(agent_id, role))

    def holds(self, executor_id: str) -> bool:
        """Whether ``executor_id`` is a slot of the table now."""
        with self._lock:
            return executor_id in self._slots

    def executor_of(self, task_id: str) -> str:
        """The slot executor that ran ``task_id`` ("" for a command task)."""
        with self._lock:
            return self._task_executor.get(task_id, "")

    def idle(self, agent_id: str | None = None, older_than: float = 0.0) -> list[Slot]:
        """Idle slots (of one agent), idle for more than ``older_than`` seconds; removed from
        the table (the caller shuts them down)."""
        now = time.monotonic()
        with self._lock:
            chosen = [s for s in self._slots.values() if not s.task_id
                      and (agent_id is None or s.agent_id == agent_id)
                      and (now - s.idle_since >= older_than or not self._reusable(s))]
            for slot in chosen:
                del self._slots[slot.executor_id]
                self._gone.add(slot.executor_id)
            return chosen

    def expired(self) -> list[Slot]:
        return self.idle(older_than=self.idle_seconds)

    def all(self) -> list[Slot]:
        """Every slot (removed from the table: at the job's end)."""
        with self._lock:
            out = list(self._slots.values())
            self._gone.update(self._slots)
            self._slots.clear()
            return out

    def ended_executors(self) -> list[tuple[str, str, bool]]:
        """``(executor_id, agent_id, False)`` of every slot executor the table started or
        adopted that has ended or was shut down (in the shape of the tasks' locations): the
        log collector copies each one's own stdout and stderr once, which is all there is to
        read of a slot whose executor failed before it ran a trial."""
        with self._lock:
            return [(executor_id, agent_id, False)
                    for executor_id, agent_id in self._agents.items()
                    if executor_id not in self._slots]

    def live(self) -> int:
        with self._lock:
            return len(self._slots)


def allocation_role(info: Mapping[str, Any] | None) -> str:
    """The role a slot's ExecutorInfo says its resources are allocated to: the
    ``allocation_info`` of its first resource (``*`` when it has none: a record of an earlier
    DisAuto, whose framework had the role ``*``)."""
    for resource in (info or {}).get("resources") or []:
        role = (resource.get("allocation_info") or {}).get("role")
        if role:
            return str(role)
    return "*"


def container_spec(image: str, force_pull: bool, host_paths: Sequence[str],
                   job_id: str) -> slots.ContainerSpec:
    """The container settings of a job's slots (``--docker-image``)."""
    return slots.ContainerSpec(image, force_pull, tuple(host_paths), EXECUTOR_CPUS,
                               EXECUTOR_MEM_MB, {"disauto.job": job_id, "disauto.role": "slot"})


def executor_info(executor_id: str, command: str, uris: Sequence[Mapping[str, Any]],
                  job_id: str, container: slots.ContainerSpec | None = None,
                  gpus: int = 0) -> dict[str, Any]:
    """The slot's CUSTOM ExecutorInfo: the job's files are fetched once, for all its trials;
    with ``container`` its trials run in one container of the image; ``gpus`` it holds for
    its life."""
    variables = [{"name": "PYTHONUNBUFFERED", "value": "1"}]
    if container is not None:
        variables.append({"name": slots.SPEC_ENV, "value": container.to_json()})
    return {
        "executor_id": {"value": executor_id},
        "type": "CUSTOM",
        "name": f"DisAuto slot {executor_id}",
        "command": {"value": command, "shell": True, "uris": [dict(u) for u in uris],
                    "environment": {"variables": variables}},
        "resources": executor_resources(gpus).to_json(),
        "labels": {"labels": [{"key": "disauto.job", "value": job_id},
                              {"key": "disauto.role", "value": "slot"}]},
    }


WARMUP_RESOURCES = Resources({"cpus": 0.01})
"""A warm-up task's own claim, besides its new executor's share (Mesos refuses a task without
resources); it gives it back when it ends, once the slot is ready."""


def warm_up_resources(trial_cpus: float, trial_mem_mb: float,
                      preload: slots.Preload | None) -> Resources:
    """What a warm-up task claims: :data:`WARMUP_RESOURCES`, and when it starts a pre-imported
    interpreter the memory a trial's task of the slot gets. The interpreter imports the
    modules under the warm-up, in the slot's container, whose memory limit the agent sets from
    the executor's share and its tasks' memory and never lowers: with the share alone (64 MB)
    an interpreter that imported scikit-learn went over it, and the agent killed the slot."""
    if preload is None:
        return WARMUP_RESOURCES
    mem = trial_mem_mb - (EXECUTOR_MEM_MB if carved(trial_cpus, trial_mem_mb) else 0.0)
    return WARMUP_RESOURCES + Resources({"mem": mem})


def warm_up_task(executor: Mapping[str, Any], agent_id: str, job_id: str, command: str,
                 environment: Mapping[str, str], trial_cpus: float, trial_mem_mb: float,
                 preload: slots.Preload | None = None) -> dict[str, Any]:
    """The task that starts a slot before its first trial (``common.slots.Warmup``): its
    executor, container and pre-imported interpreter start while AppCore does, so the first
    trials start at once instead of waiting for all of that together. ``command`` and
    ``environment`` are the trials' (the interpreter starts with that environment)."""
    executor_id = str(executor["executor_id"]["value"])
    return {
        "name": "slot warm-up",
        "task_id": {"value": slots.warmup_task_id(executor_id)},
        "agent_id": {"value": agent_id},
        "resources": warm_up_resources(trial_cpus, trial_mem_mb, preload).to_json(),
        "executor": dict(executor),
        "data": slots.task_data(command, environment, preload,
                                slots.Warmup(trial_cpus, trial_mem_mb)),
        "labels": {"labels": [{"key": "disauto.job", "value": job_id},
                              {"key": "disauto.role", "value": "slot-warm-up"}]},
    }


def as_slot_task(task: Mapping[str, Any], executor: Mapping[str, Any],
                 preload: slots.Preload | None = None) -> dict[str, Any]:
    """A trial's command TaskInfo turned into a task of ``executor``: its command and
    environment move into ``data`` (Mesos forbids a task with both a command and an
    executor), with how the slot's pre-imported interpreter runs it under ``--slot-preload``;
    its URIs are the executor's, its container (if any) the slot's, and its GPUs the
    executor's (a GPU slot holds them)."""
    out = {key: value for key, value in task.items() if key not in ("command", "container")}
    out["resources"] = [r for r in task.get("resources") or [] if r.get("name") != "gpus"]
    command = task["command"]
    env = {v["name"]: v["value"] for v in command.get("environment", {}).get("variables", [])}
    out["data"] = slots.task_data(str(command["value"]), env, preload)
    out["executor"] = dict(executor)
    return out
