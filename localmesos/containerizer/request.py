"""What container a task gets: its image, command, environment, labels, mounts and limits.

:func:`build_request` turns a task's ``ContainerInfo`` and ``CommandInfo`` into a
:class:`ContainerRequest` for the Docker engine (the rules are in
:mod:`localmesos.containerizer.docker`'s docstring); nothing here talks to the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
import math
import os
from pathlib import Path
import posixpath
from typing import Any

from disauto.common.resources import Resources
from disauto.localmesos.containerizer import command as command_mod
from disauto.localmesos.containerizer.command import LaunchError
from disauto.localmesos.containerizer.command import RunAs
from disauto.localmesos.containerizer.command import TaskIds


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
    network_mode, hostname, privileged = _network(container, image.kind)
    environment, user = _environment(command, ids, name, gpus, run_as)
    # ``src/docker/docker.cpp`` (``Docker::RunOptions::create``) and the command executor
    # (``src/launcher/executor.cpp``) set it over the command's own variables.
    environment["MESOS_ALLOCATION_ROLE"] = command_mod.allocation_role(info, {})
    labels = _labels(info, ids, container_id, extra_labels)
    cpu_shares, nano_cpus, mem_bytes = _limits(resources, cfs_quota, host_cpus)
    return ContainerRequest(
        name=name, image=image.name, force_pull=image.force_pull, entrypoint=entrypoint,
        command=cmd, environment=environment, working_dir=SANDBOX_PATH, user=user,
        labels=labels,
        binds=[f"{sandbox}:{SANDBOX_PATH}:rw", *_volume_binds(container.get("volumes"), sandbox)],
        network_mode=network_mode, hostname=hostname, cpu_shares=cpu_shares,
        nano_cpus=nano_cpus, mem_bytes=mem_bytes, gpus=tuple(gpus), privileged=privileged,
        stop_grace=stop_grace,
    )


def _labels(info: Mapping[str, Any], ids: TaskIds, container_id: str,
            extra: Mapping[str, str] | None) -> dict[str, str]:
    """The container's labels: the task's own, then ``extra`` (the containerizer's ownership
    labels), then the run's ids; each later group wins, so no task label can mask them."""
    labels = {
        str(label["key"]): str(label.get("value", ""))
        for label in (info.get("labels") or {}).get("labels") or []
        if isinstance(label, Mapping) and label.get("key")
    }
    labels.update(extra or {})
    labels.update({LABEL_FRAMEWORK: ids.framework_id, LABEL_TASK: ids.task_id,
                   LABEL_EXECUTOR: ids.executor_id, LABEL_AGENT: ids.agent_id,
                   LABEL_CONTAINER: container_id})
    return labels


def _network(container: Mapping[str, Any], kind: str) -> tuple[str, str | None, bool]:
    """(network mode, hostname, privileged) of a ContainerInfo; host networking by default."""
    network_mode = "host"
    privileged = False
    if kind == "DOCKER":
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
    if container.get("network_infos"):
        raise ContainerError(
            "ContainerInfo 'network_infos' (CNI networks) are not supported by the embedded "
            "agent; leave it empty for host networking"
        )
    hostname = str(container["hostname"]) \
        if network_mode != "host" and container.get("hostname") else None
    return network_mode, hostname, privileged


def _environment(command: Mapping[str, Any], ids: TaskIds, name: str, gpus: Sequence[int],
                 run_as: RunAs | None) -> tuple[dict[str, str], str | None]:
    """The container's environment and the user it runs as (``uid:gid``, or the image's)."""
    try:
        task_env = command_mod.command_environment(command)
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
    return environment, user


def _limits(resources: Resources, cfs_quota: bool,
            host_cpus: int | None) -> tuple[int | None, int | None, int | None]:
    """(CPU shares, CFS quota in nano-CPUs, memory bytes) of the task's resources."""
    cpus = resources.scalar("cpus")
    mem = resources.scalar("mem")
    cores = host_cpus if host_cpus is not None else (os.cpu_count() or 1)
    cpu_shares = max(MIN_CPU_SHARES, int(CPU_SHARES_PER_CPU * cpus)) if cpus > 0 else None
    nano_cpus = None
    if cfs_quota and cpus > 0:
        nano_cpus = int(round(max(0.01, min(cpus, float(cores))) * 1e9))
    mem_bytes = int(max(MIN_MEMORY_MB, mem) * 1024 * 1024) if mem > 0 else None
    return cpu_shares, nano_cpus, mem_bytes

