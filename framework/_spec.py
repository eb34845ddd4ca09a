"""The job's configuration: what da-submit validated and the framework runs.

``JobConfig`` is the framework's whole view of a job (resources, commands, files, the search);
``search_spec()`` is the part AppCore receives over gRPC. It round-trips through JSON so the job
store keeps it verbatim.
"""

from __future__ import annotations

from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from dataclasses import fields
import json
from typing import Any

from google.protobuf import json_format

from disauto.common.checkpoints import DEFAULT_KEEP
from disauto.common.checkpoints import DEFAULT_MAX_BYTES
from disauto.protos import common_pb2


DEFAULT_MASTER_TIMEOUT = 600.0
"""How long a framework waits for a master that went away before it gives up (10 min: the time
AppCore waits for a framework that went away, ``appcore.__main__.FRAMEWORK_WAIT``)."""
DEFAULT_TRIAL_EXIT_GRACE = 30.0
"""How long a trial's task may run on after its final report before it is killed (its result
kept): long enough to write a model after reporting, short enough that a runner that does not
exit (a leftover non-daemon thread, a data loader's worker) does not hold its slot for long."""
DEFAULT_UNREACHABLE_TIMEOUT = 300.0
"""How long a trial whose agent Mesos marked unreachable (TASK_UNREACHABLE) is waited for before
it runs again elsewhere: 5 min. Mesos marks an agent unreachable only after it missed
``--agent_ping_timeout`` x ``--max_agent_ping_timeouts`` pings (15 s x 5 = 75 s by default), and
keeps an unreachable agent's tasks for ``--registry_max_agent_age`` (2 weeks), far longer than
any trial is worth waiting for; so a partition shorter than about 6 minutes costs a trial
nothing, and a longer one at most 5 minutes of it (docs/design.md, "How a trial ends")."""


@dataclass(frozen=True)
class TaskResources:
    """What one task asks of an offer."""

    cpus: float
    mem_mb: float
    gpus: int = 0
    disk_mb: float = 0.0


@dataclass(frozen=True)
class InputSpec:
    """``--input SRC#NAME``: the data at SRC appears as NAME in each task's sandbox."""

    source: str
    name: str


@dataclass(frozen=True)
class OutputSpec:
    """``--output DST#NAME``: trials write NAME in DST/trial-NNNN; the best lands at DST/NAME."""

    destination: str
    name: str


@dataclass(frozen=True)
class JobConfig:
    """Everything the framework needs to run one job."""

    job_id: str
    app_name: str
    launch_cmd: str
    runner: TaskResources
    appcore: TaskResources
    search: common_pb2.JobSpec
    files: tuple[str, ...] = ()
    inputs: tuple[InputSpec, ...] = ()
    output: OutputSpec | None = None
    appcore_command: str = ""
    """The command that starts AppCore on an agent (default: ``python3 -m disauto.appcore``)."""
    max_appcore_restarts: int = 3
    max_task_retries: int = 2
    """Launches of a trial again after its task was lost (agent gone, TASK_LOST/GONE/DROPPED/
    UNKNOWN): the trial keeps its number and assignment and counts once toward the budget."""
    trial_retries: int = 0
    """``--trial-retries``: launches of a trial again after its script failed (the same number
    and assignment, each try's failure kept in the trial's ``tries``); only a trial that failed
    every try counts toward ``--max-failed-trials``."""
    failover_timeout: float = 7 * 24 * 3600.0
    user: str = ""
    """``--user``: the user Mesos runs the job's tasks as (FrameworkInfo.user; da-submit
    records the submitter's login without it); empty (older records): the login of whoever
    runs the framework."""
    extra_env: dict[str, str] = field(default_factory=dict)
    docker_image: str = ""
    """Run the trials in this Docker image (``--docker-image``); empty: on the agents' hosts."""
    appcore_docker_image: str = ""
    """Run AppCore in this Docker image (``--app-core-docker-image``); empty: on the host."""
    containerizer: str = "mesos"
    """How Mesos runs the images: ``mesos`` (MESOS + Docker image, GPUs) or ``docker``."""
    offer_policy_settings: dict[str, str] = field(default_factory=dict)
    """The offer policy's own ``--policy-setting`` items (Algorithm 1's go to AppCore in
    ``search.priority_settings``)."""
    trial_timeout: float = 0.0
    """Seconds a trial may run (from TASK_RUNNING) before it is killed as TIMEOUT (COMPLETED
    when its final result is in); 0: none."""
    trial_exit_grace: float = DEFAULT_TRIAL_EXIT_GRACE
    """``--trial-exit-grace``: seconds a trial's task may run on after its final report; then
    the trial is COMPLETED, its slot refilled, and its task killed (framework/_job/exits.py)."""
    max_duration: float = 0.0
    """Seconds after which the job ends with TIME_LIMIT_REACHED (``--max-duration``); 0: none."""
    deadline: float = 0.0
    """When the search should be done, seconds since the epoch (``--deadline``); 0: none. The
    ``deadline`` offer policy schedules by it; every policy reports whether it is kept."""
    slot_mode: str = "task"
    """``--slot-mode``: ``task`` runs each trial as a Mesos command task; ``warm`` runs trials
    as tasks of long-lived DisAuto executors, one per slot (framework/_slots.py)."""
    executor_command: str = ""
    """How agents start a warm slot's executor (default: ``python3 -m disauto.executor``)."""
    slot_idle: float = 10.0
    """Seconds a warm slot may stay without a trial before it is shut down."""
    slot_preload: tuple[str, ...] = ()
    """``--slot-preload``: the modules a warm slot's interpreter imports before it forks each
    trial (the SDK first); empty (and not :attr:`slot_preload_auto`): each trial is
    ``/bin/sh -c '<launch command>'``."""
    slot_preload_auto: bool = False
    """``--slot-preload auto`` (the default for a ``python SCRIPT`` job): a warm slot's
    interpreter imports the SDK, then :attr:`slot_preload_optional` where it can."""
    slot_preload_optional: tuple[str, ...] = ()
    """With ``auto``: the script's top-level imports to preload, each skipped on the slot when
    it cannot be imported or leaves the interpreter unsafe to fork (common/auto_preload.py)."""
    telemetry_interval: float = 1.0
    """Seconds between polls of the agents' ``/monitor/statistics`` (``--telemetry-interval``,
    framework/_telemetry); 0: no telemetry."""
    master_timeout: float = DEFAULT_MASTER_TIMEOUT
    """Seconds the master may be away (the framework disconnected) before the framework gives
    up (``--master-timeout``): it stops, leaves the job interrupted and exits 3."""
    roles: tuple[str, ...] = ()
    """``--role``: the Mesos roles the framework subscribes with (MULTI_ROLE); it is offered
    resources reserved for them besides unreserved ones. Empty: the default role ``*``."""
    unreachable_timeout: float = DEFAULT_UNREACHABLE_TIMEOUT
    """Seconds a trial (or AppCore) whose agent is unreachable is waited for before it runs
    again elsewhere (``--unreachable-timeout``)."""
    checkpoint_dir: str = ""
    """``--checkpoint-dir``: a folder the agents and the framework share, where trials write
    their checkpoints (under the job's id); "": they are uploaded to the job's folder."""
    checkpoint_max_bytes: int = DEFAULT_MAX_BYTES
    """``--checkpoint-max-size``: the largest checkpoint kept, in bytes."""
    checkpoint_keep: int = DEFAULT_KEEP
    """``--checkpoint-keep``: how many of its checkpoints a trial keeps (the oldest dropped)."""

    @property
    def subscribed_roles(self) -> tuple[str, ...]:
        """The roles the framework subscribes with: ``--role``'s, else ``("*",)``."""
        return self.roles or ("*",)

    def search_spec(self) -> common_pb2.JobSpec:
        spec = common_pb2.JobSpec()
        spec.CopyFrom(self.search)
        return spec

    def to_json(self) -> str:
        data: dict[str, Any] = asdict(self)  # type: ignore[arg-type]
        data["search"] = json_format.MessageToDict(
            self.search, preserving_proto_field_name=True
        )
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> JobConfig:
        data = json.loads(text)
        # A record written by another version may have fields this one does not know.
        known = {f.name for f in fields(cls)}
        data = {key: value for key, value in data.items() if key in known}
        search = json_format.ParseDict(data.pop("search"), common_pb2.JobSpec())
        output = data.pop("output")
        return cls(
            runner=TaskResources(**data.pop("runner")),
            appcore=TaskResources(**data.pop("appcore")),
            inputs=tuple(InputSpec(**i) for i in data.pop("inputs")),
            output=OutputSpec(**output) if output else None,
            files=tuple(data.pop("files")),
            slot_preload=tuple(data.pop("slot_preload", ())),
            slot_preload_optional=tuple(data.pop("slot_preload_optional", ())),
            roles=tuple(data.pop("roles", ())),
            search=search,
            **data,
        )
