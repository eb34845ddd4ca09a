"""What a :class:`~framework._runtime.JobRunner` runs, as its builder wired it
(``framework/_runner_builder.py``): every part made, none started.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc

from disauto.framework._fileserver import FileServer
from disauto.framework._job import JobController
from disauto.framework._job.desk import ControlDesk
from disauto.framework._log_collector import LogCollector
from disauto.framework._master_endpoint import MasterEndpoint
from disauto.framework._mesos_link import MesosLink
from disauto.framework._peers import PeerBoard
from disauto.framework._sandbox_logs import SandboxLogs
from disauto.framework._scheduler import JobScheduler
from disauto.framework._slots import SlotTable
from disauto.framework._spec import JobConfig
from disauto.framework._store import JobStore
from disauto.framework._telemetry.monitor import TelemetryLoop
from disauto.framework._telemetry.registry import TelemetryRegistry
from disauto.framework._telemetry.scheduler import TelemetryScheduler
from disauto.framework.webui.server import JobPageServer


PAGE_LINGER_SECONDS = 10.0
"""At the job's end, how long an open job page gets to fetch the final record before the page
server stops (the server stops as soon as it has; a browser that draws its plots in software
on a busy machine polls every few seconds, and a page that misses the end polls a server that
is gone)."""


@dataclass(frozen=True)
class Listeners:
    """The job's servers, bound by the builder, serving from :meth:`start` to :meth:`stop`:
    the gRPC service (AppCore, runners), the file server (the user's files and inputs) and the
    job page (its URL the FrameworkInfo's ``webui_url``, so the Mesos web UI links to it)."""

    grpc: grpc.Server
    files: FileServer
    page: JobPageServer
    framework_address: str
    """``host:port`` of the gRPC service, as tasks reach it."""
    page_url: str

    def start(self) -> None:
        self.grpc.start()
        self.files.start()
        self.page.start()

    def stop(self) -> None:
        self.grpc.stop(grace=2).wait()
        self.files.stop()
        self.page.stop(linger=PAGE_LINGER_SECONDS)


@dataclass(frozen=True)
class Telemetry:
    """The job's telemetry (``framework/_telemetry``): the built-in collector's loop (None with
    ``--telemetry-interval 0``), the registry of collectors and processors and its scheduler
    (None with telemetry off)."""

    usage: TelemetryLoop | None
    registry: TelemetryRegistry | None
    runs: TelemetryScheduler | None

    def start(self) -> None:
        if self.runs is not None:
            self.runs.start()

    def stop(self) -> None:
        if self.runs is not None:
            self.runs.stop()
        if self.usage is not None:
            self.usage.poll()  # the figures of the trials that just ended


@dataclass(frozen=True)
class RunnerParts:
    """One job's framework, wired."""

    config: JobConfig
    job_dir: Path
    master: MasterEndpoint
    resume: bool
    store: JobStore
    controller: JobController
    link: MesosLink
    scheduler: JobScheduler
    listeners: Listeners
    telemetry: Telemetry
    peers: PeerBoard | None
    slots: SlotTable | None
    sandboxes: SandboxLogs
    """Reads task sandboxes through their agents (it learns their endpoints from offers)."""
    logs: LogCollector
    desk: ControlDesk
    advertise_host: str
    checkpoint: bool = True
    """FrameworkInfo.checkpoint (``framework/_framework_info.py``): a resumed framework keeps
    what its record says it was registered with."""
