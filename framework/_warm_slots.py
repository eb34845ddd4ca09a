"""The scheduler's part for warm slots (``--slot-mode warm``, docs/warm-slots.md).

A trial planned on an agent runs on a free slot of the job there, else on a new one when the
offer has room for its executor, else as a command task. In the round that launches AppCore
slots are started before their trials (warm-ups), up to the job's parallelism. A resumed
framework adopts the slots its predecessor left running, from the master's state and the
record; slots idle past their idle time, or on an agent the job yields, are shut down. The
slots themselves are booked in ``framework/_slots.py``'s :class:`SlotTable`.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import logging
from typing import Any

from disauto.common import task_env
from disauto.common.resources import Resources
from disauto.common.slots import ContainerSpec
from disauto.common.slots import Preload
from disauto.common.slots import is_warmup_task
from disauto.common.task_states import has_ended_for_framework
from disauto.framework import _meta as meta
from disauto.framework._job import APPCORE_KEY
from disauto.framework._job.ports import SchedulerPort
from disauto.framework._launcher import Launcher
from disauto.framework._mesos_link import MesosLink
from disauto.framework._offer_claims import OfferClaims
from disauto.framework._offers import OfferView
from disauto.framework._slot_adoption import running_slots
from disauto.framework._slots import SlotTable
from disauto.framework._slots import as_slot_task
from disauto.framework._slots import carved
from disauto.framework._slots import container_spec
from disauto.framework._slots import executor_info
from disauto.framework._slots import executor_resources
from disauto.framework._slots import warm_up_resources
from disauto.framework._slots import warm_up_task
from disauto.framework.policies import LaunchRequest


logger = logging.getLogger("disauto.framework._scheduler")

SLOT_ENDED_REASONS = frozenset({"REASON_EXECUTOR_TERMINATED",
                                "REASON_EXECUTOR_REGISTRATION_TIMEOUT"})
"""Reasons of a slot task's end that mean its executor is gone (the slot with it)."""


class WarmSlots:
    """One job's warm slots, as its scheduler places, starts, adopts and ends them.

    Args:
        table: the job's slots.
        controller: the job's controller.
        link: the framework's link to its master.
        launcher: builds the job's tasks (a warm-up carries a trial's environment).
        executor_command: how agents start a slot's executor (``-m disauto.executor``).
        preload: with ``--slot-preload``, how a slot's pre-imported interpreter runs a trial.
        master_auth: (principal, secret) for the master's HTTP endpoints (the slots a
            resumed framework adopts are read from ``/master/frameworks``).
    """

    def __init__(self, table: SlotTable, controller: SchedulerPort, link: MesosLink,
                 launcher: Launcher, *, executor_command: str, preload: Preload | None,
                 master_auth: tuple[str, str] | None) -> None:
        self.table = table
        self._job = controller
        self._link = link
        self._launcher = launcher
        self._executor_command = executor_command
        self._preload = preload
        self._master_auth = master_auth

    # -- offers ------------------------------------------------------------------------------

    def ordered(self, views: Sequence[OfferView]) -> list[OfferView]:
        """Offers of agents with a free slot first (a policy that fills offers in order then
        reuses slots before it starts new ones elsewhere), each with its free slots' room."""
        ordered = sorted(views, key=lambda view: not self.table.has_free(view.agent_id,
                                                                         view.role))
        return [self._with_slot_room(view) for view in ordered]

    def _with_slot_room(self, view: OfferView) -> OfferView:
        """``view`` with what its agent's free slots hold for their next trials: they are not
        offered (their executors hold them), but a trial planned on them runs on such a slot.
        That is a GPU slot's GPUs and, when slots are carved out of their trials
        (``framework/_slots.py`` carved), each free slot's executor share: a trial that reuses
        the slot needs only the rest of its claim from the offer. Every trial of a job wants as
        much, so the trials planned beyond the free slots use offered resources."""
        held = {"gpus": float(self.table.free_gpus(view.agent_id, view.role))}
        runner = self._job.config.runner
        if carved(runner.cpus, runner.mem_mb):
            free = self.table.free_count(view.agent_id, view.role)
            share = executor_resources()
            held.update(cpus=free * share.scalar("cpus"), mem=free * share.scalar("mem"))
        held = {name: value for name, value in held.items() if value}
        if not held:
            return view
        return dataclasses.replace(view, available=view.available + Resources(held))

    def place(self, task: dict[str, Any], view: OfferView, left: list[Resources],
              claims: OfferClaims) -> tuple[dict[str, Any], str]:
        """``task`` as a task of a slot on the offer's agent (a free one of the offer's role,
        else a new one when the offer has room for its executor, whose resources are drawn
        from ``claims``): (the task, the slot's executor id). With neither, the trial runs as
        a command task, so that a job never waits for room for a slot."""
        claim = Resources.from_json(task.get("resources") or [])
        gpus = int(claim.scalar("gpus"))
        share = executor_resources()
        # A slot of a big enough trial is carved out of its trial's claim (framework/_slots.py
        # carved); else its executor needs room besides. A new slot's GPUs are its trial's
        # (moved to the executor).
        carve = carved(claim.scalar("cpus"), claim.scalar("mem"))
        room = carve or left[0].contains(share)
        taken = self.table.take(view.agent_id, task["task_id"]["value"], room, gpus,
                                role=view.role)
        if taken is None:
            logger.info("no room for a slot on %s: %s runs as a command task", view.hostname,
                        task["name"])
            return task, ""
        executor_id, new = taken
        if carve:
            # Its executor's share comes out of the claim: a new slot's executor takes it; a
            # free slot's holds it already and was counted into the offer (_with_slot_room).
            task = {**task, "resources": (claim - share).to_json()}
        elif new:
            left[0] = left[0] - share
        executor = None if new else self.table.info_of(executor_id)
        if executor is None:
            executor = executor_info(executor_id, self._executor_command, self._launcher.uris,
                                     self._job.config.job_id, self._container(), gpus)
            # It lives on the offer's (reserved) resources.
            executor = claims.with_drawn_resources(executor)
            self._keep_info(executor_id, executor)
        if new:
            logger.info("starting slot %s on %s", executor_id, view.hostname)
        return as_slot_task(task, executor, self._preload), executor_id

    def warm_ups_wanted(self, launches: Sequence[Sequence[tuple[LaunchRequest, Any]]]) -> int:
        """How many slots to start before their trials: in the round that launches AppCore,
        up to the job's parallelism (its first trials come once AppCore runs). Not for GPU
        trials: a slot would hold its GPUs, which other jobs may want, before any trial."""
        if self._job.config.runner.gpus:
            return 0
        if not any(request.key == APPCORE_KEY for planned in launches for request, _ in planned):
            return 0
        return max(0, int(self._job.config.search.parallelism) - self.table.live())

    def warm_ups(self, view: OfferView, left: list[Resources], most: int,
                 claims: OfferClaims) -> list[dict[str, Any]]:
        """Warm-up tasks for at most ``most`` slots ``view`` has room for: each where a trial
        will fit beside the slots started before it (``framework/_slots.py`` warm_up_task),
        its executor's resources drawn from ``claims``."""
        config = self._job.config
        runner = config.runner
        share = executor_resources()
        own = share + warm_up_resources(runner.cpus, runner.mem_mb, self._preload)
        trial = Resources({"cpus": runner.cpus, "mem": runner.mem_mb})
        if not carved(runner.cpus, runner.mem_mb):
            trial = trial + share
        room = left[0]
        container = self._container()
        env = {**self._launcher.runner_environment(), task_env.JOB_ID: config.job_id}
        tasks: list[dict[str, Any]] = []
        while len(tasks) < most and room.contains(trial) and left[0].contains(own):
            executor_id = self.table.start_idle(view.agent_id, role=view.role)
            executor = claims.with_drawn_resources(executor_info(
                executor_id, self._executor_command, self._launcher.uris, config.job_id,
                container))
            self._keep_info(executor_id, executor)
            tasks.append(warm_up_task(executor, view.agent_id, config.job_id,
                                      config.launch_cmd, env, runner.cpus, runner.mem_mb,
                                      self._preload))
            room = room - trial
            left[0] = left[0] - own
            logger.info("starting slot %s on %s before its first trial", executor_id,
                        view.hostname)
        return tasks

    def yield_agents(self, views: Sequence[OfferView], deliberate: set[str]) -> None:
        """An offer the policy declined on purpose: the job yields that agent, so its idle
        slots go too."""
        for view in views:
            if view.id in deliberate:
                self.shutdown(self.table.idle(view.agent_id), "the job yields")

    def _keep_info(self, executor_id: str, executor: dict[str, Any]) -> None:
        """Remember a slot's ExecutorInfo, here and in the record (a resumed framework that
        adopts the slot sends exactly it with its tasks)."""
        self.table.set_info(executor_id, executor)
        self._job.store.set_meta(meta.SLOT_EXECUTOR.key(executor_id), executor)

    def _container(self) -> ContainerSpec | None:
        """The container of the job's slots (``--docker-image``), or None."""
        config = self._job.config
        if not config.docker_image:
            return None
        return container_spec(
            config.docker_image, False,
            [config.output.destination] if config.output is not None else [], config.job_id)

    # -- statuses and the master ---------------------------------------------------------------

    def adopt_running(self) -> None:
        """Take over the job's slots that run under its FrameworkID (a resumed framework's
        predecessor started them): busy with the trial the record says runs on each, else
        idle from now (shut down after the idle time unless reused). Before the tasks are
        reconciled, so that their statuses free the slots they ran on."""
        master = self._link.master_address()
        if not master:
            return
        try:
            running = running_slots(master, self._link.framework_id(), self._job.config.job_id,
                                    auth=self._master_auth, timeout=3.0)
        except (OSError, ValueError) as err:  # statuses of their live tasks adopt them still
            logger.warning("cannot list the job's running slots: %s", err)
            return
        busy = self._job.tasks.slot_tasks_in_flight()
        for slot in running:
            if self.table.adopt(slot.executor_id, slot.agent_id, busy.get(slot.executor_id, ""),
                                slot.gpus, self._recorded_info(slot.executor_id)):
                logger.info("adopting slot %s on %s (%s)", slot.executor_id, slot.agent_id,
                            f"running {busy[slot.executor_id]}" if slot.executor_id in busy
                            else "idle")

    def adopt_from(self, status: Mapping[str, Any]) -> None:
        """A live task of a slot this framework did not start (its predecessor did): the
        agent names the executor, which therefore runs; adopt the slot, busy with it."""
        executor_id = str((status.get("executor_id") or {}).get("value", ""))
        task_id = str((status.get("task_id") or {}).get("value", ""))
        if not executor_id or executor_id == task_id or is_warmup_task(task_id) \
                or has_ended_for_framework(str(status.get("state"))):
            return  # a warm-up task does not keep its slot from trials
        agent_id = str((status.get("agent_id") or {}).get("value", ""))
        info = self._recorded_info(executor_id)
        gpus = int(Resources.from_json(info.get("resources") or []).scalar("gpus")) if info else 0
        if self.table.adopt(executor_id, agent_id, task_id, gpus, info):
            logger.info("adopting slot %s on %s (running %s)", executor_id, agent_id, task_id)

    def _recorded_info(self, executor_id: str) -> dict[str, Any] | None:
        """The ExecutorInfo the record says a slot was started with (None: not recorded)."""
        try:
            return self._job.store.get_meta(meta.SLOT_EXECUTOR.key(executor_id))
        except Exception:  # noqa: BLE001 - never raise out of a callback
            logger.warning("cannot read the recorded ExecutorInfo of %s", executor_id,
                           exc_info=True)
            return None

    def task_ended(self, status: Mapping[str, Any]) -> None:
        """A task ended (recorded): its slot is free again, or gone with its executor."""
        task_id = str(status.get("task_id", {}).get("value", ""))
        if str(status.get("reason", "")) in SLOT_ENDED_REASONS:
            self.table.executor_ended(self.table.executor_of(task_id))
        else:
            self.table.task_ended(task_id)

    def executor_ended(self, executor_id: str) -> None:
        self.table.executor_ended(executor_id)

    def tasks_abandoned(self, task_ids: Sequence[str]) -> None:
        """Tasks given up on while their agent was unreachable: their slots are gone with it
        (a slot that comes back is shut down when its task shows up: :meth:`shutdown_stale`)."""
        for task_id in task_ids:
            executor_id = self.table.executor_of(task_id)
            if executor_id:
                self.table.executor_ended(executor_id)

    def shutdown_stale(self, status: Mapping[str, Any]) -> None:
        """A stale task that runs again was killed: SHUTDOWN its slot too when the table no
        longer holds it (it was forgotten with its unreachable agent)."""
        executor_id = str((status.get("executor_id") or {}).get("value", ""))
        task_id = str((status.get("task_id") or {}).get("value", ""))
        agent_id = str((status.get("agent_id") or {}).get("value", ""))
        if executor_id and executor_id != task_id and not self.table.holds(executor_id):
            logger.info("shutting slot %s down (it came back with a stale task)", executor_id)
            self._link.shutdown_executor(executor_id, agent_id)

    def reap_idle(self) -> None:
        """Shut down the slots idle for longer than their idle time."""
        self.shutdown(self.table.expired(), "idle")

    def shutdown(self, slots: Sequence[Any], why: str) -> None:
        """SHUTDOWN the executors of ``slots``."""
        for slot in slots:
            logger.info("shutting slot %s down (%s)", slot.executor_id, why)
            self._link.shutdown_executor(slot.executor_id, slot.agent_id)
