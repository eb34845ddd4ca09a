"""Whether a task can ever fit the cluster's agents: constructed agents and a real master."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.framework._capacity import agent_capacities
from disauto.framework._capacity import unfit
from disauto.framework._spec import TaskResources
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster


pytestmark = pytest.mark.integration  # starts processes or servers


SMALL = {"cpus": 4.0, "mem": 4096.0, "gpus": 0.0, "disk": 10000.0}
BIG = {"cpus": 16.0, "mem": 65536.0, "gpus": 2.0, "disk": 10000.0}


def test_a_task_that_fits_one_agent_is_fine() -> None:
    tasks = {"--app-runner": TaskResources(cpus=8, mem_mb=5120, gpus=1),
             "--app-core": TaskResources(cpus=1, mem_mb=1024)}
    assert unfit(tasks, [SMALL, BIG]) == ""


def test_no_agents_yet_is_not_judged() -> None:
    assert unfit({"--app-runner": TaskResources(cpus=1000, mem_mb=1)}, []) == ""


def test_too_many_cpus_names_the_flag_and_the_largest_agent() -> None:
    why = unfit({"--app-runner": TaskResources(cpus=8, mem_mb=512)}, [SMALL, SMALL])
    assert why == ("no agent of the cluster can ever run a --app-runner task (cpus=8, "
                   "mem=512 MB): the largest agent has cpus=4, mem=4096 MB; lower "
                   "--app-runner-cpus or add larger agents (2 agent(s) registered)")


def test_each_resource_must_fit_on_the_same_agent() -> None:
    # cpus fit the first agent, memory the second: neither holds the whole task.
    agents = [{**SMALL, "cpus": 16.0}, {**SMALL, "mem": 65536.0}]
    why = unfit({"--app-core": TaskResources(cpus=8, mem_mb=8192)}, agents)
    assert "--app-core-cpus / --app-core-memory" in why


def test_gpus_count() -> None:
    why = unfit({"--app-runner": TaskResources(cpus=1, mem_mb=64, gpus=1)}, [SMALL])
    assert "--app-runner-gpus" in why and "gpus=1" in why


def test_agent_capacities_from_a_real_master(tmp_path: Path) -> None:
    cluster = LocalCluster(ClusterConfig(agents=2, cpus=3, mem_mb=2048, disk_mb=1000,
                                         work_dir=tmp_path)).start()
    try:
        agents = [agent.total for agent in agent_capacities(cluster.address)]
    finally:
        cluster.stop()
    assert [(a["cpus"], a["mem"], a["gpus"], a["disk"]) for a in agents] == [
        (3.0, 2048.0, 0.0, 1000.0)] * 2


def test_an_unreachable_master_raises_oserror() -> None:
    with pytest.raises(OSError):
        agent_capacities("127.0.0.1:9", timeout=2)
