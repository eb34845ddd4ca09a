"""The ContainerInfo of DisAuto's tasks: which image, which Mesos containerizer, which volumes.

``--docker-image IMAGE`` runs every trial in a container of IMAGE (``--app-core-docker-image``
does the same for AppCore). Mesos has two ways to run a Docker image, and they differ in what
they support (Mesos' containerizer and GPU documentation):

* ``--containerizer mesos`` (the default): ``type: MESOS`` with ``mesos.image`` of type DOCKER,
  run by the Mesos (unified) containerizer. The only way Mesos gives a task GPUs in a container:
  the agent needs ``--isolation=filesystem/linux,docker/runtime,...,gpu/nvidia`` and
  ``--image_providers=docker``; the image comes from a registry (``--docker_registry``), not
  from the agent's Docker daemon.
* ``--containerizer docker``: ``type: DOCKER`` with ``docker.image`` and host networking, run by
  the Docker containerizer through the agent's Docker daemon (``--containerizers=docker,...``).
  It cannot give a task GPUs, so a job with ``--app-runner-gpus`` > 0 refuses it.

Both put the sandbox at ``/mnt/mesos/sandbox`` (the working directory) and keep the task's
``CommandInfo`` (its shell command and environment). Where ``--output`` names a folder, it is
mounted read-write at the same path, so ``apprunner_sdk.output_path()`` works unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any


CONTAINERIZERS = ("mesos", "docker")
DEFAULT_CONTAINERIZER = "mesos"
SANDBOX_PATH = "/mnt/mesos/sandbox"


class ContainerConfigError(ValueError):
    """A container setting that cannot work; the message names the flag and what is valid."""


def check_container_flags(image: str, containerizer: str, gpus: int,
                          *, image_flag: str = "--docker-image") -> None:
    """Check an image/containerizer/GPU combination before anything starts.

    Raises:
        ContainerConfigError: for an unknown containerizer, an image reference with spaces or
            none where one is needed, or GPUs with the Docker containerizer.
    """
    if containerizer not in CONTAINERIZERS:
        raise ContainerConfigError(
            f"--containerizer: unknown containerizer {containerizer!r}; valid: "
            f"{', '.join(CONTAINERIZERS)}"
        )
    if image and (image != image.strip() or any(c.isspace() for c in image)):
        raise ContainerConfigError(
            f"{image_flag}: invalid image {image!r}: expected a reference like "
            "registry.example.com/disauto/apprunner:1.0"
        )
    if image and containerizer == "docker" and gpus > 0:
        raise ContainerConfigError(
            f"--containerizer docker cannot run --app-runner-gpus {gpus}: the Docker "
            "containerizer has no GPU support in Mesos; use --containerizer mesos (the Mesos "
            "containerizer with a Docker image and the gpu/nvidia isolator)"
        )


def container_info(
    image: str,
    containerizer: str = DEFAULT_CONTAINERIZER,
    *,
    host_paths: Sequence[str] = (),
    force_pull: bool = False,
) -> dict[str, Any]:
    """The Mesos ``ContainerInfo`` JSON that runs a task in ``image``.

    Args:
        image: a Docker image reference.
        containerizer: ``mesos`` (MESOS with a Docker image) or ``docker`` (DOCKER).
        host_paths: absolute host folders mounted read-write at the same path.
        force_pull: pull the image at every launch (``force_pull_image`` / ``cached: false``).

    Raises:
        ContainerConfigError: for an unknown containerizer.
    """
    check_container_flags(image, containerizer, 0)
    volumes: list[dict[str, Any]]
    if containerizer == "docker":
        volumes = [{"container_path": path, "host_path": path, "mode": "RW"}
                   for path in host_paths]
        info: dict[str, Any] = {
            "type": "DOCKER",
            "docker": {"image": image, "network": "HOST", "force_pull_image": force_pull},
        }
    else:
        volumes = [{"container_path": path, "mode": "RW",
                    "source": {"type": "HOST_PATH", "host_path": {"path": path}}}
                   for path in host_paths]
        info = {
            "type": "MESOS",
            "mesos": {"image": {"type": "DOCKER", "docker": {"name": image},
                                "cached": not force_pull}},
        }
    if volumes:
        info["volumes"] = volumes
    return info


def task_environment(env: Mapping[str, str], container: Mapping[str, Any] | None
                     ) -> dict[str, str]:
    """A task's extra environment, less what means nothing inside an image.

    A ``PATH`` of the submitting machine (local mode puts this interpreter's folder first) would
    replace the image's own ``PATH``, so a containerized task does not get it.
    """
    if not container:
        return dict(env)
    return {name: value for name, value in env.items() if name != "PATH"}
