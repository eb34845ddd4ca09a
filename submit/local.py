"""``--master local``: boot the embedded cluster sized to this machine (and to the job)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
import shutil
import subprocess

from framework.spec import JobConfig
from localmesos.agent import default_mem_mb
from localmesos.cluster import ClusterConfig
from localmesos.cluster import LocalCluster


logger = logging.getLogger(__name__)


def detect_gpus() -> int:
    """The number of NVIDIA GPUs ``nvidia-smi -L`` lists (0 without the tool or a driver)."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return 0
    try:
        out = subprocess.run([tool, "-L"], capture_output=True, text=True, timeout=10,
                             check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


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


def local_cluster_config(config: JobConfig, work_dir: Path, agents: int = 1) -> ClusterConfig:
    """One or more agents with this machine's resources, never smaller than the job needs.

    A Mesos agent's cpus are shares, not cores; on a small machine the paper's
    ``--app-runner-cpus 3`` would otherwise never fit, so each agent advertises at least AppCore
    plus ``parallelism`` runners' worth (spread over the agents), and says so in the log.
    """
    parallelism = max(1, int(config.search.parallelism))
    per_agent = -(-parallelism // agents)  # ceil
    need_cpus = config.appcore.cpus + per_agent * config.runner.cpus
    need_mem = config.appcore.mem_mb + per_agent * config.runner.mem_mb
    machine_cpus = float(os.cpu_count() or 1)
    machine_mem = default_mem_mb()
    cpus = max(machine_cpus, need_cpus)
    mem = max(machine_mem, need_mem)
    if cpus > machine_cpus or mem > machine_mem:
        logger.warning(
            "local cluster oversubscribes this machine: each agent advertises %.1f cpus and "
            "%.0f MB (the machine has %.0f cpus and %.0f MB) so the job's tasks fit",
            cpus, mem, machine_cpus, machine_mem,
        )
    return ClusterConfig(
        agents=agents,
        cpus=cpus,
        mem_mb=mem,
        gpus=check_local_gpus(config),
        work_dir=work_dir,
        status_update_retry_interval=2.0,
        status_update_retry_interval_max=30.0,
    )


def start_local_cluster(config: JobConfig, work_dir: Path, agents: int = 1) -> LocalCluster:
    """Start the embedded master and agents for ``config``; the caller stops it."""
    cluster = LocalCluster(local_cluster_config(config, work_dir, agents))
    cluster.start()
    return cluster
