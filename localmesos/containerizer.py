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
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import logging
import math
import os
from pathlib import Path
import posixpath
import socket
import threading
from typing import Any
import uuid

from common.resources import Resources
from localmesos import executor as executor_mod
from localmesos.executor import LaunchError
from localmesos.executor import RunAs
from localmesos.executor import TaskIds


logger = logging.getLogger(__name__)

SANDBOX_PATH = "/mnt/mesos/sandbox"
"""Where the sandbox appears inside a container (Mesos' ``MESOS_SANDBOX`` for containers)."""
CPU_SHARES_PER_CPU = 1024
MIN_CPU_SHARES = 2
MIN_MEMORY_MB = 32.0
ENGINE_LOG_MAX = "10m"
"""The engine's own copy of a container's output is capped; the sandbox files hold it all."""

LABEL_FRAMEWORK = "localmesos.framework_id"
LABEL_TASK = "localmesos.task_id"
LABEL_EXECUTOR = "localmesos.executor_id"
LABEL_AGENT = "localmesos.agent_id"
LABEL_CONTAINER = "localmesos.container_id"
LABEL_OWNER = "localmesos.owner"
"""``<hostname>/<boot id>/<pid>/<start time>`` of the agent process that created the container."""
LABEL_INSTANCE = "localmesos.agent_instance"
"""A random id of the :class:`DockerContainerizer` (one per agent object)."""

_NETWORKS = {"HOST": "host", "BRIDGE": "bridge", "NONE": "none"}
INSTALL_HINT = "pip install 'disauto[docker]'"


class ContainerError(Exception):
    """A container cannot be set up or run; the message is one line saying why."""


# -- reading a ContainerInfo ------------------------------------------------------------------


@dataclass(frozen=True)
class ImageRef:
    """The image a container task names."""

    name: str
    force_pull: bool = False
    kind: str = "DOCKER"
    """``DOCKER`` (Docker containerizer) or ``MESOS`` (Mesos containerizer with an image)."""


def container_image(container: Mapping[str, Any] | None) -> ImageRef | None:
    """The image of a ``ContainerInfo``, or ``None`` when it runs no image (a MESOS container
    without ``mesos.image`` runs on the agent's own file system, like a command task).

    Raises:
        ContainerError: for a DOCKER container without ``docker.image`` or a non-Docker image.
    """
    if not container:
        return None
    kind = container.get("type")
    if kind == "DOCKER":
        docker = container.get("docker") or {}
        name = docker.get("image")
        if not isinstance(name, str) or not name:
            raise ContainerError(
                "DockerInfo 'docker.image' is not set for a DOCKER typed ContainerInfo"
            )
        return ImageRef(name, bool(docker.get("force_pull_image", False)), "DOCKER")
    image = (container.get("mesos") or {}).get("image")
    if not image:
        return None
    if image.get("type", "DOCKER") != "DOCKER":
        raise ContainerError(
            f"Image type {image.get('type')!r} is not supported by the embedded agent; "
            "use type DOCKER"
        )
    name = (image.get("docker") or {}).get("name")
    if not isinstance(name, str) or not name:
        raise ContainerError("Image 'docker.name' is not set for the container's DOCKER image")
    return ImageRef(name, image.get("cached", True) is False, "MESOS")


def is_container_task(container: Mapping[str, Any] | None) -> bool:
    """Whether a ``ContainerInfo`` makes a task a container task (DOCKER, or MESOS with an
    image); an invalid one counts, so that its launch fails with the reason."""
    if not container:
        return False
    if container.get("type") == "DOCKER":
        return True
    return bool((container.get("mesos") or {}).get("image"))


def _command_argv(
    command: Mapping[str, Any], kind: str
) -> tuple[list[str] | None, list[str] | None]:
    """``(entrypoint, cmd)`` for the engine; ``None`` keeps the image's own."""
    value = command.get("value")
    if command.get("shell", True):
        if not isinstance(value, str) or not value:
            raise ContainerError("Shell specified but no command value provided")
        return ["/bin/sh", "-c"], [value]
    arguments = command.get("arguments") or []
    if not isinstance(arguments, list) or not all(isinstance(a, str) for a in arguments):
        raise ContainerError("The command's 'arguments' must be a list of strings")
    if value is not None and not isinstance(value, str):
        raise ContainerError("The command's 'value' must be a string")
    if kind == "DOCKER":
        argv = ([value] if value else []) + list(arguments)
        return None, argv or None
    if not value:
        return None, None
    return [value], list(arguments[1:])


def _volume_binds(volumes: Any, sandbox: Path) -> list[str]:
    """``host:container:mode`` binds for ``ContainerInfo.volumes`` (host paths only)."""
    if not volumes:
        return []
    if not isinstance(volumes, list):
        raise ContainerError("ContainerInfo 'volumes' must be a list")
    binds: list[str] = []
    for index, volume in enumerate(volumes):
        if not isinstance(volume, Mapping):
            raise ContainerError(f"Volume {index} must be an object")
        target = volume.get("container_path")
        if not isinstance(target, str) or not target:
            raise ContainerError(f"Volume {index} has no 'container_path'")
        source = volume.get("source") or {}
        host = volume.get("host_path")
        if source:
            if source.get("type") != "HOST_PATH":
                raise ContainerError(
                    f"Volume {index} ({target}): source type {source.get('type')!r} is not "
                    "supported by the embedded agent; use HOST_PATH or 'host_path'"
                )
            host = (source.get("host_path") or {}).get("path")
        if not isinstance(host, str) or not host:
            raise ContainerError(
                f"Volume {index} ({target}): only host-path volumes are supported by the "
                "embedded agent; set 'host_path' or source HOST_PATH"
            )
        mode = volume.get("mode", "RW")
        if mode not in ("RW", "RO"):
            raise ContainerError(f"Volume {index} ({target}): mode must be RW or RO")
        host_path = Path(host) if os.path.isabs(host) else sandbox / host
        container_path = posixpath.join(SANDBOX_PATH, target)  # absolute targets stay as given
        for text in (str(host_path), container_path):
            if ":" in text or "\0" in text:
                raise ContainerError(f"Volume {index}: path {text!r} must not contain ':'")
        binds.append(f"{host_path}:{container_path}:{mode.lower()}")
    return binds


# -- the request ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContainerRequest:
    """Everything the agent decided about one container: what :meth:`create_kwargs` sends.

    Attributes:
        name: the container's name (``mesos-<container id>``).
        image: the image reference.
        force_pull: pull even when the image is local.
        entrypoint: replaces the image's entrypoint (``None`` keeps it).
        command: the command (``None`` keeps the image's).
        environment: the container's whole environment (on top of the image's).
        working_dir: the working directory inside the container.
        user: ``uid:gid`` to run as, or ``None`` for the image's user.
        labels: the container's labels.
        binds: ``host:container:mode`` bind mounts (the sandbox first).
        network_mode: ``host``, ``bridge`` or ``none``.
        hostname: the container's host name (not with host networking).
        cpu_shares: relative CPU weight.
        nano_cpus: hard CPU limit in 1e-9 CPUs, or ``None`` for none.
        mem_bytes: hard memory limit in bytes, or ``None`` for none.
        gpus: host GPU indices to give the container.
        privileged: ``DockerInfo.privileged``.
        stop_grace: seconds between SIGTERM and SIGKILL when the engine stops it.
    """

    name: str
    image: str
    force_pull: bool
    entrypoint: list[str] | None
    command: list[str] | None
    environment: dict[str, str]
    working_dir: str
    user: str | None
    labels: dict[str, str]
    binds: list[str]
    network_mode: str = "host"
    hostname: str | None = None
    cpu_shares: int | None = None
    nano_cpus: int | None = None
    mem_bytes: int | None = None
    gpus: tuple[int, ...] = ()
    privileged: bool = False
    stop_grace: float = 3.0

    def create_kwargs(self, api_version: str) -> dict[str, Any]:
        """Keyword arguments of ``docker.APIClient.create_container`` for this request.

        Args:
            api_version: the engine API version the client speaks (``client.api_version``).
        """
        from docker.types import DeviceRequest
        from docker.types import HostConfig
        from docker.types import LogConfig

        host_config: dict[str, Any] = {
            "binds": list(self.binds),
            "network_mode": self.network_mode,
            "init": True,
            "privileged": self.privileged,
            "log_config": LogConfig(
                type="json-file", config={"max-size": ENGINE_LOG_MAX, "max-file": "1"}
            ),
        }
        if self.cpu_shares is not None:
            host_config["cpu_shares"] = self.cpu_shares
        if self.nano_cpus is not None:
            host_config["nano_cpus"] = self.nano_cpus
        if self.mem_bytes is not None:
            host_config["mem_limit"] = self.mem_bytes
            host_config["memswap_limit"] = self.mem_bytes  # no swap beyond the limit
        if self.gpus:
            host_config["device_requests"] = [
                DeviceRequest(
                    driver="nvidia",
                    device_ids=[str(index) for index in self.gpus],
                    capabilities=[["gpu"]],
                )
            ]
        kwargs: dict[str, Any] = {
            "image": self.image,
            "command": self.command,
            "entrypoint": self.entrypoint,
            "environment": dict(self.environment),
            "working_dir": self.working_dir,
            "labels": dict(self.labels),
            "name": self.name,
            "detach": True,
            "stdin_open": False,
            "tty": False,
            "stop_timeout": max(0, math.ceil(self.stop_grace)),
            "host_config": HostConfig(version=api_version, **host_config),
        }
        if self.user is not None:
            kwargs["user"] = self.user
        if self.hostname is not None:
            kwargs["hostname"] = self.hostname
        return kwargs


def build_request(
    *,
    info: Mapping[str, Any],
    container: Mapping[str, Any],
    command: Mapping[str, Any],
    sandbox: Path,
    ids: TaskIds,
    container_id: str,
    resources: Resources,
    gpus: Sequence[int] = (),
    run_as: RunAs | None = None,
    stop_grace: float = 3.0,
    cfs_quota: bool = True,
    host_cpus: int | None = None,
    extra_labels: Mapping[str, str] | None = None,
) -> ContainerRequest:
    """Decide the container of a task (see the module docstring for each rule).

    Args:
        info: the TaskInfo (its ``labels`` become container labels).
        container: its ``ContainerInfo`` (DOCKER, or MESOS with an image).
        command: its ``CommandInfo`` (of the task, or of its executor).
        sandbox: the sandbox directory on the host.
        ids: the task's framework, executor, task and agent ids.
        container_id: the agent's id for this run (the sandbox's ``runs/<id>``).
        resources: the task's (and executor's) resources.
        gpus: the host GPU indices the agent assigned.
        run_as: the user the agent would switch a command task to, if any; by default the
            container runs as the agent's own user when that is not root, else as the image's.
        stop_grace: the kill grace period in seconds.
        cfs_quota: also cap CPU time (CFS quota), not only weigh it (shares).
        host_cpus: the machine's cores, the cap of the CFS quota (default: detected).
        extra_labels: more labels (the containerizer's ownership labels).

    Raises:
        ContainerError: for a ContainerInfo or command this agent cannot run.
    """
    image = container_image(container)
    if image is None:
        raise ContainerError("The ContainerInfo names no image")
    entrypoint, cmd = _command_argv(command, image.kind)
    name = f"mesos-{container_id}"

    network_mode = "host"
    hostname: str | None = None
    if image.kind == "DOCKER":
        docker = container.get("docker") or {}
        network = docker.get("network", "HOST")
        if network not in _NETWORKS:
            raise ContainerError(
                f"Docker network {network!r} is not supported by the embedded agent; "
                "use HOST, BRIDGE or NONE"
            )
        network_mode = _NETWORKS[network]
        if docker.get("port_mappings"):
            raise ContainerError(
                "Docker port_mappings are not supported by the embedded agent; use HOST "
                "networking and the offered ports"
            )
        if docker.get("parameters"):
            keys = ", ".join(str(p.get("key")) for p in docker["parameters"])
            raise ContainerError(
                f"Docker parameters ({keys}) are not supported by the embedded agent"
            )
        privileged = bool(docker.get("privileged", False))
    else:
        privileged = False
    if container.get("network_infos"):
        raise ContainerError(
            "ContainerInfo 'network_infos' (CNI networks) are not supported by the embedded "
            "agent; leave it empty for host networking"
        )
    if network_mode != "host" and container.get("hostname"):
        hostname = str(container["hostname"])

    binds = [f"{sandbox}:{SANDBOX_PATH}:rw", *_volume_binds(container.get("volumes"), sandbox)]

    try:
        task_env = executor_mod.command_environment(command)
    except LaunchError as exc:
        raise ContainerError(str(exc)) from None
    environment = {
        "MESOS_SANDBOX": SANDBOX_PATH,
        **ids.environment(),
        "MESOS_CONTAINER_NAME": name,
        **task_env,
        # The engine's init forwards SIGTERM to the command's whole process group.
        "TINI_KILL_PROCESS_GROUP": "1",
        # The agent decides which GPUs a container sees; "void" means none to the NVIDIA runtime.
        "NVIDIA_VISIBLE_DEVICES": ",".join(str(i) for i in gpus) if gpus else "void",
    }

    user: str | None = None
    if run_as is not None:
        user = f"{run_as.uid}:{run_as.gid}"
    elif os.geteuid() != 0:
        user = f"{os.geteuid()}:{os.getegid()}"
    if user is not None and "HOME" not in task_env:
        environment["HOME"] = SANDBOX_PATH  # an arbitrary uid has no home in the image

    labels = {
        str(label["key"]): str(label.get("value", ""))
        for label in (info.get("labels") or {}).get("labels") or []
        if isinstance(label, Mapping) and label.get("key")
    }
    labels.update(extra_labels or {})
    labels.update({
        LABEL_FRAMEWORK: ids.framework_id,
        LABEL_TASK: ids.task_id,
        LABEL_EXECUTOR: ids.executor_id,
        LABEL_AGENT: ids.agent_id,
        LABEL_CONTAINER: container_id,
    })

    cpus = resources.scalar("cpus")
    mem = resources.scalar("mem")
    cores = host_cpus if host_cpus is not None else (os.cpu_count() or 1)
    cpu_shares = max(MIN_CPU_SHARES, int(CPU_SHARES_PER_CPU * cpus)) if cpus > 0 else None
    nano_cpus = None
    if cfs_quota and cpus > 0:
        nano_cpus = int(round(max(0.01, min(cpus, float(cores))) * 1e9))
    mem_bytes = int(max(MIN_MEMORY_MB, mem) * 1024 * 1024) if mem > 0 else None

    return ContainerRequest(
        name=name,
        image=image.name,
        force_pull=image.force_pull,
        entrypoint=entrypoint,
        command=cmd,
        environment=environment,
        working_dir=SANDBOX_PATH,
        user=user,
        labels=labels,
        binds=binds,
        network_mode=network_mode,
        hostname=hostname,
        cpu_shares=cpu_shares,
        nano_cpus=nano_cpus,
        mem_bytes=mem_bytes,
        gpus=tuple(gpus),
        privileged=privileged,
        stop_grace=stop_grace,
    )


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
                 stderr: Path) -> None:
        self._client = client
        self.id = container_id
        self.name = name
        self.pid: int | None = None
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

    def _copy_output(self, stream: Any) -> None:
        """Append every chunk of output to the sandbox files as it arrives."""
        out = os.open(self._stdout, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        err = os.open(self._stderr, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            for chunk_out, chunk_err in stream:
                for fd, data in ((out, chunk_out), (err, chunk_err)):
                    view = memoryview(data or b"")
                    while view:
                        view = view[os.write(fd, view):]
        except Exception as exc:  # noqa: BLE001 - a broken stream must not kill the agent
            self._read_error = _reason(exc)
            logger.warning("Container %s: output stream broke: %s", self.name, self._read_error)
        finally:
            os.close(out)
            os.close(err)

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

    def launch(self, request: ContainerRequest, stdout: Path, stderr: Path) -> ContainerProcess:
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
        return ContainerProcess(client, str(created["Id"]), request.name, stdout, stderr)

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
