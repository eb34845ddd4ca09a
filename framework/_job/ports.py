"""The controller's faces: one port a kind of caller, each with only what that caller uses.

:class:`~disauto.framework._job.controller.JobController` has one method for every question a
part of the framework asks of the job; no caller needs them all. Each caller is typed against
its port instead, so what it may ask is written down, and a change to the controller's other
methods cannot reach it:

* :class:`TrialService`: AppCore's gRPC servicer (``framework/_service.py``);
* :class:`SchedulerPort`: the Mesos scheduler's callbacks (``framework/_scheduler.py``) and the
  launcher and warm slots they use (``_launcher.py``, ``_warm_slots.py``);
* :class:`PageView`: the job page's live source (``framework/webui/sources.py``);
* :class:`JobControl`: the control channel's reader (``framework/_job/desk.py``).

``tests/framework/job/test_ports.py`` checks that each caller asks nothing of its port that the
port does not list, and that the controller satisfies every port.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol


if TYPE_CHECKING:
    from disauto.common.gpu_samples import GpuReading
    from disauto.common.report import Report
    from disauto.framework._job.intake import Start
    from disauto.framework._job.intake import Submission
    from disauto.framework._job.status import StatusEffects
    from disauto.framework._job.task_view import JobTasks
    from disauto.framework._spec import JobConfig
    from disauto.framework._store import JobStore
    from disauto.framework._store import TrialRow
    from disauto.framework.control import UpdateSearch
    from disauto.framework.policies import LaunchRequest
    from disauto.protos import common_pb2
    from disauto.protos import framework_pb2


class TrialService(Protocol):
    """What AppCore's servicer asks: attach, submit (a PBT replacement from another trial's
    checkpoint: the trials it reads), report, prune, watch, finish."""

    job_token: str
    tasks: JobTasks

    def attach_appcore(self, address: str,
                       certificate: str = "") -> framework_pb2.AttachAppCoreReply: ...

    def submit_trials(self, trials: Sequence[Submission],
                      starts: Mapping[int, Start] | None = None) -> list[common_pb2.Trial]: ...

    def rows_to_read(self) -> list[TrialRow]: ...

    def record_report(self, report: Report) -> common_pb2.Trial: ...

    def prune_trial(self, number: int, message: str) -> common_pb2.Trial: ...

    def watch(self, after: int,
              is_active: Callable[[], bool]) -> Iterator[framework_pb2.TrialEvent]: ...

    def finish_search(self, outcome: int, message: str) -> None: ...

    def record_gpu_samples(self, number: int, readings: Sequence[GpuReading]) -> int: ...


class SchedulerPort(Protocol):
    """What the Mesos scheduler's callbacks ask: what waits for an offer, a launch recorded, a
    status update, the job's end when Mesos ends it."""

    config: JobConfig
    store: JobStore
    job_token: str
    tasks: JobTasks

    def trials(self) -> list[TrialRow]: ...

    def launch_requests(self) -> list[LaunchRequest]: ...

    def has_pending(self) -> bool: ...

    def next_appcore_task_id(self) -> str: ...

    def appcore_launched(self, task_id: str, agent_id: str) -> bool: ...

    def trial_for_launch(self, number: int) -> TrialRow | None: ...

    def trial_launched(self, number: int, task_id: str, agent_id: str,
                       executor_id: str = "") -> None: ...

    def on_status(self, status: Mapping[str, Any]) -> StatusEffects: ...

    def finish(self, outcome: int, message: str) -> None: ...

    def framework_lost(self, message: str) -> None: ...


class PageView(Protocol):
    """What the job page reads of the running job, and the one thing it changes (a trial's
    kill; the job's goes through the control channel)."""

    config: JobConfig
    store: JobStore
    job_token: str

    @property
    def outcome(self) -> tuple[int, str] | None: ...

    def rows_to_read(self) -> list[TrialRow]: ...

    def version(self) -> int: ...

    def kill_trial(self, number: int, message: str = "killed from the job page") -> list[str]: ...


class JobControl(Protocol):
    """What the control channel's requests do: kill the job or a trial, change the search."""

    config: JobConfig

    @property
    def outcome(self) -> tuple[int, str] | None: ...

    def kill_trial(self, number: int, message: str = "killed from the job page") -> list[str]: ...

    def update_search(self, request: UpdateSearch) -> str: ...

    def finish(self, outcome: int, message: str) -> None: ...


PORTS: tuple[type, ...] = (TrialService, SchedulerPort, PageView, JobControl)
"""Every port, for the check that the controller satisfies them."""
