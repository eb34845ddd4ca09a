"""``--master local``: boot the embedded cluster sized to this machine (and to the job)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
import pwd
import random
import socket
import stat
import sys

from disauto.common import paths
from disauto.framework.record import JobConfig
from disauto.framework.run import EXECUTOR_CPUS
from disauto.framework.run import EXECUTOR_MEM_MB
from disauto.framework.run import carved
from disauto.localmesos.agent.config import default_mem_mb
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.containerizer import docker as docker_mod
from disauto.localmesos.containerizer.gpus import discover_gpus


logger = logging.getLogger(__name__)


def detect_gpus() -> int:
    """The number of NVIDIA GPUs of this machine (NVML or ``nvidia-smi``; 0 without a driver)."""
    return len(discover_gpus())


def free_port_range(span: int = 1000, low: int = 31000, high: int = 41000) -> tuple[int, int]:
    """The first ``span`` ports from ``low`` up (in steps of ``span``) that none listens on now.

    Mesos agents offer ``31000-32000`` by default; two embedded clusters on one machine (two
    ``--master local`` jobs) would offer the same ports, and the second job's AppCore could not
    bind its port. The ranges are tried in an order of this process's own; it falls back to
    ``low`` when every range below ``high`` is busy.
    """
    # Try the ranges in an order of this process's own, so that two jobs starting at the same
    # moment rarely probe, and take, the same one.
    starts = list(range(low, high - span + 1, span))
    random.Random(os.getpid()).shuffle(starts)
    for begin in starts:
        free = True
        for port in range(begin, begin + span):
            with socket.socket() as probe:
                try:
                    probe.bind(("0.0.0.0", port))
                except OSError:
                    free = False
                    break
        if free:
            return begin, begin + span - 1
    return low, low + span - 1


class LocalClusterError(ValueError):
    """The job cannot run on this machine's embedded cluster."""


def check_local_gpus(config: JobConfig, gpus: int | None = None) -> int:
    """The GPUs the local agent gets; raises when a trial asks for more than the machine has."""
    available = detect_gpus() if gpus is None else gpus
    if config.runner.gpus > available:
        raise LocalClusterError(
            f"--app-runner-gpus {config.runner.gpus}: this machine has {available} GPU(s) "
            "(nvidia-smi); run with fewer GPUs or on a cluster that has them (--master host:port)"
        )
    return available


def check_local_docker(config: JobConfig) -> None:
    """With ``--docker-image``/``--app-core-docker-image``, the embedded agents need a Docker
    engine: raise when none answers (the image itself is pulled by the agent if missing)."""
    if not (config.docker_image or config.appcore_docker_image):
        return
    flag = "--docker-image" if config.docker_image else "--app-core-docker-image"
    try:
        client = docker_mod.engine_client(timeout=10.0)
    except docker_mod.ContainerError as err:
        raise LocalClusterError(
            f"{flag}: the embedded cluster runs containers through the Docker engine: {err}"
        ) from None
    client.close()


def _local_gpu_devices(config: JobConfig) -> tuple[int, ...]:
    """This machine's GPU indices, after checking that the job's trials fit on them."""
    devices = discover_gpus()
    check_local_gpus(config, len(devices))
    return devices


def agent_size(config: JobConfig, agents: int = 1) -> tuple[float, float]:
    """(cpus, MB) each local agent advertises: the machine's, or what the job needs if more."""
    parallelism = int(config.search.parallelism)  # >= 1: validate.py checks it
    per_agent = -(-parallelism // agents)  # ceil
    # A warm slot of a small trial holds its executor's resources besides its trial's.
    warm = config.slot_mode == "warm" and not carved(config.runner.cpus, config.runner.mem_mb)
    slot_cpus = config.runner.cpus + (EXECUTOR_CPUS if warm else 0.0)
    slot_mem = config.runner.mem_mb + (EXECUTOR_MEM_MB if warm else 0.0)
    need_cpus = config.appcore.cpus + per_agent * slot_cpus
    need_mem = config.appcore.mem_mb + per_agent * slot_mem
    return max(float(os.cpu_count() or 1), need_cpus), max(default_mem_mb(), need_mem)


def oversubscription_note(config: JobConfig, agents: int = 1) -> str:
    """One line for the user when the local agents advertise more than this machine has."""
    cpus, mem = agent_size(config, agents)
    machine_cpus, machine_mem = float(os.cpu_count() or 1), default_mem_mb()
    if cpus <= machine_cpus and mem <= machine_mem:
        return ""
    return (f"this machine has {machine_cpus:.0f} CPUs and {machine_mem:.0f} MB; the local "
            f"cluster advertises {cpus:g} CPUs and {mem:.0f} MB per agent so that AppCore and "
            f"{config.search.parallelism} trials fit: they share the machine (cpus are shares)")


def switches_user(config: JobConfig) -> bool:
    """Whether the embedded agents run the job's tasks as another user than this process'
    (``--user``: they switch users as Mesos agents with ``--switch_user`` do, as root only)."""
    if os.geteuid() != 0:
        return False  # they cannot: a task of another user is refused (the job says so)
    try:
        return pwd.getpwnam(config.user).pw_uid != os.geteuid()
    except KeyError:
        return False  # no such user: the agents refuse its tasks (the job says so)


def cluster_work_dir(config: JobConfig, job_dir: Path) -> Path | None:
    """Where the embedded cluster keeps its sandboxes: the job's folder, unless the tasks run as
    another user, who cannot reach into it (it is its owner's alone, 0700, holding the job's
    token): then a temporary folder of the cluster's own (0755, as a Mesos work dir, each
    sandbox 0750 and its task user's), removed with the cluster. The tasks' output is copied
    into the job's ``logs/`` either way."""
    return None if switches_user(config) else job_dir / paths.CLUSTER


def task_user_note(config: JobConfig) -> str:
    """One line when the embedded agents would run the job's tasks as another user who cannot
    run this Python (AppCore, the trials and the warm slots' executors run it); "" when they
    can, or no user is switched."""
    if not switches_user(config):
        return ""
    entry = pwd.getpwnam(config.user)
    groups = set(os.getgrouplist(entry.pw_name, entry.pw_gid))
    blocker = _blocker(Path(sys.executable).resolve(), entry.pw_uid, groups)
    if blocker is None:
        return ""
    return (f"the tasks run as user '{config.user}' (--user), who cannot reach {blocker} (mode "
            f"{blocker.stat().st_mode & 0o777:o}) to run this Python ({sys.executable}): use "
            "a Python that user can run, or leave out --user")


def _blocker(path: Path, uid: int, groups: set[int]) -> Path | None:
    """The first folder on the way to ``path`` that the user cannot pass, if one is."""
    for folder in reversed(path.parents):
        try:
            info = folder.stat()
        except OSError:
            return None
        bit = stat.S_IXUSR if info.st_uid == uid else (
            stat.S_IXGRP if info.st_gid in groups else stat.S_IXOTH)
        if not info.st_mode & bit:
            return folder
    return None


def local_cluster_config(config: JobConfig, work_dir: Path | None,
                         agents: int = 1) -> ClusterConfig:
    """One or more agents with this machine's resources, never smaller than the job needs.

    A Mesos agent's cpus are shares, not cores; on a small machine the paper's
    ``--app-runner-cpus 3`` would otherwise never fit, so each agent advertises at least AppCore
    plus ``parallelism`` runners' worth (spread over the agents), and says so in the log.
    """
    cpus, mem = agent_size(config, agents)
    note = oversubscription_note(config, agents)
    if note:
        logger.warning("%s", note)
    return ClusterConfig(
        agents=agents,
        cpus=cpus,
        mem_mb=mem,
        gpu_devices=_local_gpu_devices(config),
        ports=(free_port_range(),),
        work_dir=work_dir,
        status_update_retry_interval=2.0,
        status_update_retry_interval_max=30.0,
    )


def start_local_cluster(config: JobConfig, work_dir: Path | None,
                        agents: int = 1) -> LocalCluster:
    """Start the embedded master and agents for ``config``; the caller stops it."""
    cluster = LocalCluster(local_cluster_config(config, work_dir, agents))
    cluster.start()
    return cluster
