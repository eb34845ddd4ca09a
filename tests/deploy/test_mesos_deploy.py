"""deploy/mesos: the compose file's agents have the flags GPUs and Docker images need.

The cluster itself cannot run here (no Docker Hub, no GPU); this checks the file as data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "mesos" / "docker-compose.yml"


def services() -> dict[str, Any]:
    return dict(yaml.safe_load(COMPOSE.read_text())["services"])


def test_the_cluster_has_zookeeper_a_master_a_cpu_and_a_gpu_agent() -> None:
    found = services()
    assert {"zookeeper", "master", "agent-cpu", "agent-gpu", "registry"} <= set(found)
    master = found["master"]["environment"]
    assert master["MESOS_ZK"].startswith("zk://") and master["MESOS_ZK"].endswith(":2181/mesos")
    for name in ("agent-cpu", "agent-gpu"):
        env = found[name]["environment"]
        assert env["MESOS_MASTER"].startswith("zk://")
        assert env["MESOS_CONTAINERIZERS"] == "mesos,docker"
        assert env["MESOS_IMAGE_PROVIDERS"] == "docker"
        isolation = set(env["MESOS_ISOLATION"].split(","))
        assert {"filesystem/linux", "docker/runtime", "volume/host_path",
                "cgroups/cpu", "cgroups/mem"} <= isolation
        assert found[name]["network_mode"] == "host" and found[name]["privileged"] is True
        # The Docker containerizer bind-mounts sandboxes by their host path.
        assert "/var/lib/mesos:/var/lib/mesos" in found[name]["volumes"]
    cpu, gpu = found["agent-cpu"]["environment"], found["agent-gpu"]["environment"]
    assert {"cgroups/devices", "gpu/nvidia"} <= set(gpu["MESOS_ISOLATION"].split(","))
    assert "gpu/nvidia" not in cpu["MESOS_ISOLATION"]
    assert "gpus:" in gpu["MESOS_RESOURCES"] and "gpus" not in cpu["MESOS_RESOURCES"]
    assert gpu["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"
    (device,) = found["agent-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
    # Two agents on one host: disjoint ports.
    assert cpu["MESOS_PORT"] != gpu["MESOS_PORT"]
    assert cpu["MESOS_RESOURCES"].split("ports:")[1] != gpu["MESOS_RESOURCES"].split("ports:")[1]
