"""GPU discovery and how the embedded cluster hands GPUs to its agents."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from disauto.localmesos.cli import UsageError
from disauto.localmesos.cli import build_parser
from disauto.localmesos.cli import config_from_args
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.containerizer.gpus import NVIDIA_SMI_QUERY
from disauto.localmesos.containerizer.gpus import discover_gpus
from disauto.localmesos.containerizer.gpus import parse_nvidia_smi_indices
from disauto.localmesos.containerizer.gpus import split_devices


pytestmark = pytest.mark.integration  # starts processes or servers


def test_nvidia_smi_index_output_is_parsed() -> None:
    # What `nvidia-smi --query-gpu=index --format=csv,noheader,nounits` prints, and what a
    # machine without a working driver prints instead.
    assert parse_nvidia_smi_indices("0\n1\n3\n") == (0, 1, 3)
    assert parse_nvidia_smi_indices(" 2 \r\n0\n\n") == (0, 2)
    assert parse_nvidia_smi_indices(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n") == ()


def test_discovery_matches_what_nvidia_smi_says_on_this_machine() -> None:
    tool = shutil.which("nvidia-smi")
    if tool is None:
        expected: tuple[int, ...] = ()  # this machine's case: no driver, no GPU
    else:
        result = subprocess.run([tool, *NVIDIA_SMI_QUERY], capture_output=True, text=True,
                                check=False)
        expected = parse_nvidia_smi_indices(result.stdout) if result.returncode == 0 else ()
    assert discover_gpus() == expected


def test_devices_are_split_into_disjoint_slices() -> None:
    devices = (0, 1, 2, 3, 4)
    slices = [split_devices(devices, 2, i) for i in range(2)]
    assert slices == [(0, 1), (2, 3, 4)]
    assert [split_devices((5,), 3, i) for i in range(3)] == [(), (), (5,)]


def test_agents_of_one_machine_never_share_a_gpu() -> None:
    config = ClusterConfig(agents=2, cpus=1.0, mem_mb=512.0, disk_mb=512.0,
                           gpu_devices=(0, 2, 3))
    agents = config.agent_list()
    assert [(a.gpus, a.gpu_devices) for a in agents] == [(1, (0,)), (2, (2, 3))]
    with LocalCluster(config) as cluster:
        totals = [agent.total.scalar("gpus") for agent in cluster.agents]
        assert totals == [1.0, 2.0]
        assert [agent.free_gpus for agent in cluster.agents] == [(0,), (2, 3)]


def test_da_cluster_gpus_auto_discovers_and_n_declares() -> None:
    parser = build_parser()
    auto = config_from_args(parser.parse_args([]))
    assert auto.gpu_devices == discover_gpus()
    declared = config_from_args(parser.parse_args(["--gpus", "2", "--agents", "2"]))
    assert declared.gpu_devices is None
    assert [a.gpu_devices for a in declared.agent_list()] == [(0, 1), (0, 1)]
    with pytest.raises(UsageError, match=r"^--gpus: invalid value 'many': expected auto or a "
                                         r"whole number >= 0$"):
        config_from_args(parser.parse_args(["--gpus", "many"]))
