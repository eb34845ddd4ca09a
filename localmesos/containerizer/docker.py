"""Container tasks of the embedded agent, run through the Docker Engine API.

What a Mesos agent's containerizers do for a TaskInfo with a ``ContainerInfo`` that names an
image — ``type: DOCKER`` (the Docker containerizer) or ``type: MESOS`` with ``mesos.image``
of type DOCKER (the Mesos containerizer with the ``docker`` image provider) — the embedded agent
does with the local Docker engine, through the ``docker`` Python package (the Engine API, no
CLI). Both kinds run the same way here:

* **Image.** The engine's local image is used; it is pulled only when missing, or always with
  ``DockerInfo.force_pull_image`` / ``Image.cached: false``. An image that is neither local nor
  pullable fails the launch with one line naming the image and the engine's reason.
* **Command.** ``shell`` (the default) runs ``/bin/sh -c <value>`` in place of the image's
  entrypoint, as Mesos does (MESOS-1770). ``shell: false`` keeps the image's entrypoint and
  passes ``value`` plus ``arguments`` to it (DOCKER), or runs ``value`` with ``arguments[1:]``
  (MESOS, whose ``arguments`` are the whole argv); a MESOS task without a value runs the image's
  own entrypoint and command.
* **Sandbox.** The task's sandbox (already fetched into by the agent) is bind-mounted at
  ``/mnt/mesos/sandbox``, which is the working directory and ``MESOS_SANDBOX``. Host-path volumes
  of ``ContainerInfo.volumes`` (legacy ``host_path`` or ``source.type: HOST_PATH``) are
  bind-mounted too; a relative ``container_path`` is relative to the sandbox.
* **Environment.** Only what Mesos gives a container: ``MESOS_SANDBOX``, ``MESOS_TASK_ID``,
  ``MESOS_FRAMEWORK_ID``, ``MESOS_EXECUTOR_ID``, ``MESOS_AGENT_ID``, ``MESOS_CONTAINER_NAME``,
  then ``CommandInfo.environment`` (which wins); never the agent's own environment.
* **Network.** Host networking (Mesos' default for both containerizers), so a runner reaches
  AppCore and the framework on ``127.0.0.1``; DockerInfo ``BRIDGE``/``NONE`` are honoured.
* **Resources.** ``cpus`` become CPU shares (1024 per CPU, at least 2, as Mesos sets them) and,
  with ``cfs_quota`` (Mesos' ``--cgroups_enable_cfs``), a hard CFS quota capped at the machine's
  cores; ``mem`` becomes a hard memory limit (at least 32 MB) with no extra swap. A container
  the kernel kills for memory ends TASK_FAILED with ``REASON_CONTAINER_LIMITATION_MEMORY``.
* **GPUs.** The GPU indices the agent assigned become one NVIDIA device request for exactly those
  devices (``docker run --gpus '"device=1,3"'``), and ``NVIDIA_VISIBLE_DEVICES`` names them; a
  task without GPUs gets ``NVIDIA_VISIBLE_DEVICES=void``, so an image that asks for all GPUs
  (``nvidia/cuda`` sets ``all``) sees none even where the NVIDIA runtime is the engine's default.
  ``CUDA_VISIBLE_DEVICES`` is not set: inside the container its GPUs are numbered from 0.
* **Labels and name.** ``mesos-<container id>``, labelled with the framework, task, executor,
  agent and container ids (``localmesos.*``) and the TaskInfo's own labels.
* **Logs.** The agent attaches to the container *before* starting it (as the DTES paper does)
  and appends stdout/stderr to the sandbox's ``stdout``/``stderr`` as the bytes arrive, so
  ``/files/read`` shows them while the task runs. The engine keeps at most 10 MB of its own copy.
* **Kill.** ``docker stop`` with the grace period (SIGTERM, then SIGKILL). The container runs
  under the engine's init (tini) with ``TINI_KILL_PROCESS_GROUP``, so SIGTERM reaches the
  command's whole process group (a shell's children too), not just PID 1.
* **End.** The exit code decides the state; the container is removed once its logs are in the
  sandbox.
* **Orphans.** Every container is labelled with its agent's process (host, boot id, pid, start
  time). :meth:`DockerContainerizer.reap_orphans` (run when an agent starts) removes containers
  whose agent process is gone, so an agent that died leaves nothing running once another one
  starts; :meth:`DockerContainerizer.remove_own` (run when an agent stops) removes what is left
  of its own.

Not supported (the launch fails with a message saying so): APPC images, port mappings, USER
networks and CNI ``network_infos``, ``DockerInfo.parameters``, volumes other than host paths.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
import logging
import math
import os
from pathlib import Path
import socket
import threading
from typing import Any
import uuid

from disauto.common.logrotate import UNCAPPED
from disauto.common.logrotate import RotatingFile
from disauto.common.logrotate import Rotation
from disauto.common.logrotate import SandboxLogging
from disauto.localmesos.containerizer.monitor import container_cgroups
from disauto.localmesos.containerizer.request import CPU_SHARES_PER_CPU
from disauto.localmesos.containerizer.request import ENGINE_LOG_MAX
from disauto.localmesos.containerizer.request import INSTALL_HINT
from disauto.localmesos.containerizer.request import LABEL_AGENT
from disauto.localmesos.containerizer.request import LABEL_CONTAINER
from disauto.localmesos.containerizer.request import LABEL_EXECUTOR
from disauto.localmesos.containerizer.request import LABEL_FRAMEWORK
from disauto.localmesos.containerizer.request import LABEL_INSTANCE
from disauto.localmesos.containerizer.request import LABEL_OWNER
from disauto.localmesos.containerizer.request import LABEL_TASK
from disauto.localmesos.containerizer.request import MIN_CPU_SHARES
from disauto.localmesos.containerizer.request import MIN_MEMORY_MB
from disauto.localmesos.containerizer.request import SANDBOX_PATH
from disauto.localmesos.containerizer.request import ContainerError
from disauto.localmesos.containerizer.request import ContainerRequest
from disauto.localmesos.containerizer.request import ImageRef
from disauto.localmesos.containerizer.request import build_request
from disauto.localmesos.containerizer.request import container_image
from disauto.localmesos.containerizer.request import is_container_task


logger = logging.getLogger(__name__)
__all__ = [
    "CPU_SHARES_PER_CPU", "ContainerError", "ContainerRequest", "ENGINE_LOG_MAX",
    "INSTALL_HINT", "ImageRef", "LABEL_AGENT", "LABEL_CONTAINER", "LABEL_EXECUTOR",
    "LABEL_FRAMEWORK", "LABEL_INSTANCE", "LABEL_OWNER", "LABEL_TASK", "MIN_CPU_SHARES",
    "MIN_MEMORY_MB", "SANDBOX_PATH", "build_request", "container_image", "is_container_task",
    "ContainerProcess", "DockerContainerizer", "describe_exit", "engine_client",
    "engine_available",
]


# -- the engine -------------------------------------------------------------------------------


def engine_client(timeout: float = 60.0) -> Any:
    """A low-level Engine API client from the environment (``DOCKER_HOST``, ...).

    Raises:
        ContainerError: without the ``docker`` package or a reachable engine.
    """
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        raise ContainerError(
            f"Container tasks need the Python package 'docker' on the agent: {INSTALL_HINT}"
        ) from None
    try:
        client = docker.APIClient(
            **docker.utils.kwargs_from_env(), version="auto", timeout=int(timeout)
        )
    except DockerException as exc:
        where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        raise ContainerError(
            f"Cannot reach the Docker engine at {where}: {_reason(exc)}; start dockerd or set "
            "DOCKER_HOST"
        ) from None
    return client


def _reason(exc: BaseException) -> str:
    """The engine's own explanation of an error, on one line."""
    text = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return " ".join(str(text).split())


def _engine_errors() -> tuple[type[BaseException], ...]:
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    return (DockerException, RequestException, OSError)


def _not_found() -> type[BaseException]:
    from docker.errors import NotFound

    return NotFound


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _start_time(pid: int) -> str | None:
    """The kernel's start time of a process (``/proc/<pid>/stat`` field 22), if it exists."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def process_owner(pid: int | None = None) -> str:
    """The owner label of a process: ``<hostname>/<boot id>/<pid>/<start time>``."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}/{_boot_id()}/{pid}/{_start_time(pid) or '?'}"


def owner_is_gone(owner: str) -> bool:
    """Whether the agent process an owner label names is no longer running on this host.

    Containers of another host (a shared remote engine) are never judged gone.
    """
    parts = owner.split("/")
    if len(parts) != 4:
        return False
    host, boot, pid_text, started = parts
    if host != socket.gethostname():
        return False
    if boot != _boot_id():
        return True
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    return _start_time(pid) != started


@dataclass
class ContainerExit:
    """How a container ended."""

    status: int
    oom_killed: bool = False
    error: str = ""


def describe_exit(result: ContainerExit) -> str:
    """The status message of a container's end."""
    if result.oom_killed:
        return f"Memory limit exceeded: the container was OOM-killed (exit status {result.status})"
    if result.error:
        return f"Container exited with status {result.status}: {result.error}"
    return f"Container exited with status {result.status}"


class ContainerProcess:
    """One created container: start it with its logs streaming, wait for it, kill it.

    Thread safety: :meth:`start` and :meth:`wait` are called by the task's thread; :meth:`kill`
    may be called from any thread at any time, also before the start or after the end.
    """

    def __init__(self, client: Any, container_id: str, name: str, stdout: Path,
                 stderr: Path, logs: SandboxLogging | None = None) -> None:
        self._client = client
        self._logs = logs
        self.id = container_id
        self.name = name
        self.pid: int | None = None
        self.cgroups: dict[str, str] = {}
        """The container's cgroups, read right after its start (``monitor.container_cgroups``)."""
        self._stdout = stdout
        self._stderr = stderr
        self._lock = threading.Lock()
        self._killed = False
        self._started = False
        self._exited = threading.Event()
        self._reader: threading.Thread | None = None
        self._read_error: str = ""

    def start(self) -> None:
        """Attach to the container's output, then start it (unless it was killed already).

        Raises:
            ContainerError: with the engine's reason when it cannot be started.
        """
        errors = _engine_errors()
        try:
            stream = self._client.attach(
                self.id, stdout=True, stderr=True, stream=True, logs=False, demux=True
            )
        except errors as exc:
            raise ContainerError(
                f"Failed to attach to container {self.name}: {_reason(exc)}"
            ) from None
        self._reader = threading.Thread(
            target=self._copy_output, args=(stream,), name=f"logs-{self.name}", daemon=True
        )
        self._reader.start()
        with self._lock:
            if self._killed:
                return
            try:
                self._client.start(self.id)
            except errors as exc:
                raise ContainerError(
                    f"Failed to start container {self.name}: {_reason(exc)}"
                ) from None
            self._started = True
        unreadable: tuple[type[BaseException], ...] = (*errors, KeyError, TypeError, ValueError)
        try:
            self.pid = int(self._client.inspect_container(self.id)["State"]["Pid"]) or None
        except unreadable:
            self.pid = None
        if self.pid:
            self.cgroups = container_cgroups(self.pid, self.id)

    def _copy_output(self, stream: Any) -> None:
        """Append every chunk of output to the sandbox files as it arrives."""
        logs = self._logs or SandboxLogging(Rotation(UNCAPPED), Rotation(UNCAPPED))
        out = RotatingFile(self._stdout, logs.stdout)
        err = RotatingFile(self._stderr, logs.stderr)
        try:
            for chunk_out, chunk_err in stream:
                out.write(chunk_out or b"")
                err.write(chunk_err or b"")
        except Exception as exc:  # noqa: BLE001 - a broken stream must not kill the agent
            self._read_error = _reason(exc)
            logger.warning("Container %s: output stream broke: %s", self.name, self._read_error)
        finally:
            out.close()
            err.close()

    @property
    def started(self) -> bool:
        """Whether the container was started."""
        with self._lock:
            return self._started

    def kill(self, grace_period: float) -> None:
        """Stop the container: SIGTERM, SIGKILL after ``grace_period`` seconds (rounded up to
        the engine's whole seconds). Blocks until it stopped; run it on its own thread."""
        with self._lock:
            self._killed = True
            started = self._started
        if not started or self._exited.is_set():
            return
        try:
            if grace_period <= 0:
                self._client.kill(self.id)
            else:
                self._client.stop(self.id, timeout=math.ceil(grace_period))
        except _engine_errors() as exc:
            logger.debug("Container %s: stop: %s", self.name, _reason(exc))

    def kill_after(self, seconds: float) -> None:
        """SIGKILL the container unless it ends within ``seconds`` (a kill's escalation, which
        a later kill may bring forward, while the engine's stop still waits). Blocks up to
        ``seconds``."""
        if self._exited.wait(max(0.0, seconds)) or not self.started:
            return
        try:
            self._client.kill(self.id)
        except _engine_errors() as exc:
            logger.debug("Container %s: kill: %s", self.name, _reason(exc))

    def wait(self) -> ContainerExit:
        """Wait for the container to end and for its output to be in the sandbox; how it ended.

        A container killed before its start reports status 137 without having run.

        Raises:
            ContainerError: when the engine loses the container.
        """
        errors = _engine_errors()
        with self._lock:
            started = self._started
        if not started:
            self._exited.set()
            self._join_reader(0.0)
            return ContainerExit(137, error="killed before it started")
        try:
            answer = self._client.wait(self.id, timeout=None)
        except errors as exc:
            raise ContainerError(f"Lost container {self.name}: {_reason(exc)}") from None
        finally:
            self._exited.set()
        self._join_reader(30.0)
        result = ContainerExit(int(answer.get("StatusCode", -1)))
        try:
            state = self._client.inspect_container(self.id).get("State") or {}
            result.oom_killed = bool(state.get("OOMKilled"))
            result.error = str(state.get("Error") or "")
        except errors:
            pass
        if not result.error and self._read_error:
            result.error = f"its output stream broke: {self._read_error}"
        return result

    def _join_reader(self, timeout: float) -> None:
        if self._reader is not None:
            self._reader.join(timeout)

    def remove(self) -> None:
        """Remove the container (forcibly); errors are logged, not raised."""
        try:
            self._client.remove_container(self.id, force=True)
        except _engine_errors() as exc:
            if not isinstance(exc, _not_found()):
                logger.warning("Cannot remove container %s: %s", self.name, _reason(exc))
        finally:
            self._join_reader(5.0)
            try:
                self._client.close()
            except Exception:  # noqa: BLE001 - closing a session never matters
                pass


@dataclass
class DockerContainerizer:
    """The container runtime of one embedded agent (see the module docstring).

    Attributes:
        agent_id: the agent's id (a label of its containers).
        cfs_quota: cap CPU time with a CFS quota as well as weighing it with shares.
        pull_timeout: socket timeout of image pulls, in seconds.
    """

    agent_id: str
    cfs_quota: bool = True
    pull_timeout: float = 600.0
    instance: str = field(default_factory=lambda: uuid.uuid4().hex)
    owner: str = field(default_factory=process_owner)

    @property
    def labels(self) -> dict[str, str]:
        """The ownership labels of this agent's containers."""
        return {LABEL_OWNER: self.owner, LABEL_INSTANCE: self.instance}

    def launch(self, request: ContainerRequest, stdout: Path, stderr: Path,
               logs: SandboxLogging | None = None) -> ContainerProcess:
        """Make the image available and create the container (not started).

        Raises:
            ContainerError: the engine is unreachable, the image cannot be had, or the
                container cannot be created.
        """
        client = engine_client()
        try:
            self._ensure_image(client, request.image, request.force_pull)
            created = client.create_container(**request.create_kwargs(client.api_version))
        except ContainerError:
            client.close()
            raise
        except _engine_errors() as exc:
            client.close()
            raise ContainerError(
                f"Failed to create container {request.name} from image '{request.image}': "
                f"{_reason(exc)}"
            ) from None
        return ContainerProcess(client, str(created["Id"]), request.name, stdout, stderr, logs)

    def _ensure_image(self, client: Any, image: str, force_pull: bool) -> None:
        """The local image, pulled only when missing (or when ``force_pull``)."""
        errors = _engine_errors()
        if not force_pull:
            try:
                client.inspect_image(image)
                return
            except _not_found():
                pass
            except errors as exc:
                raise ContainerError(
                    f"Cannot inspect image '{image}' on the Docker engine: {_reason(exc)}"
                ) from None
        from docker.utils import parse_repository_tag

        repository, tag = parse_repository_tag(image)
        logger.info("Pulling image %s", image)
        where = "could not be pulled (force_pull_image)" if force_pull else (
            "is not on this machine and pulling it failed")
        try:
            for line in client.pull(repository, tag=tag or "latest", stream=True, decode=True):
                if isinstance(line, Mapping) and line.get("error"):
                    raise ContainerError(
                        f"Failed to launch container: image '{image}' {where}: "
                        f"{' '.join(str(line['error']).split())}"
                    )
            client.inspect_image(image if tag or "@" in image else f"{image}:latest")
        except errors as exc:
            raise ContainerError(
                f"Failed to launch container: image '{image}' {where}: {_reason(exc)}"
            ) from None

    def _remove_where(self, label_filter: list[str], keep: Any) -> list[str]:
        """Remove the containers matching ``label_filter`` unless ``keep(labels)``."""
        try:
            client = engine_client(timeout=30.0)
        except ContainerError:
            return []
        removed: list[str] = []
        errors = _engine_errors()
        try:
            found = client.containers(all=True, filters={"label": label_filter})
            for entry in found:
                labels = entry.get("Labels") or {}
                if keep(labels):
                    continue
                try:
                    client.remove_container(entry["Id"], force=True)
                    removed.append(str((entry.get("Names") or [entry["Id"]])[0]).lstrip("/"))
                except errors as exc:
                    if not isinstance(exc, _not_found()):
                        logger.warning("Cannot remove container %s: %s", entry["Id"],
                                       _reason(exc))
        except errors as exc:
            logger.warning("Cannot list containers on the Docker engine: %s", _reason(exc))
        finally:
            client.close()
        return removed

    def reap_orphans(self) -> list[str]:
        """Remove containers left by agent processes that are gone; their names.

        Containers of live agents (in this process or another) are left alone. Without the
        ``docker`` package or a reachable engine there is nothing to do.
        """
        removed = self._remove_where(
            [LABEL_OWNER], lambda labels: not owner_is_gone(labels.get(LABEL_OWNER, ""))
        )
        if removed:
            logger.warning("Removed %d orphaned container(s) of dead agents: %s",
                           len(removed), ", ".join(removed))
        return removed

    def remove_own(self) -> list[str]:
        """Remove every container this containerizer created that still exists; their names."""
        removed = self._remove_where([f"{LABEL_INSTANCE}={self.instance}"], lambda _: False)
        if removed:
            logger.warning("Removed %d leftover container(s) of agent %s: %s",
                           len(removed), self.agent_id, ", ".join(removed))
        return removed


def engine_available() -> bool:
    """Whether the ``docker`` package is installed and an engine socket is configured, i.e.
    whether asking the engine anything is worth a try."""
    try:
        import docker  # noqa: F401
    except ImportError:
        return False
    host = os.environ.get("DOCKER_HOST", "")
    if host and not host.startswith("unix://"):
        return True
    path = host[len("unix://"):] if host else "/var/run/docker.sock"
    return os.path.exists(path)
