"""Whether a task can ever fit the agents the job's roles may use: reservations as Mesos 1.11's
``/master/slaves`` writes them (src/master/readonly_handler.cpp ``SlaveWriter``)."""

from __future__ import annotations

from typing import Any

import pytest

from disauto.framework._capacity import AgentCapacity
from disauto.framework._capacity import capacities
from disauto.framework._capacity import unfit
from disauto.framework._spec import TaskResources


def agent(hostname: str, unreserved: dict[str, Any],
          reserved: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One agent of /master/slaves, its totals and its reservations by role."""
    total = dict(unreserved)
    for resources in reserved.values():
        for name, value in resources.items():
            if name != "ports":
                total[name] = total.get(name, 0.0) + value
    return {"id": f"S-{hostname}", "hostname": hostname, "active": True,
            "resources": total, "unreserved_resources": unreserved,
            "reserved_resources": reserved}


SLAVES = {"slaves": [
    agent("cpu1", {"cpus": 8.0, "mem": 16384.0, "gpus": 0.0, "disk": 1000.0,
                   "ports": "[31000-32000]"}, {}),
    agent("gpu1", {"cpus": 2.0, "mem": 2048.0, "gpus": 0.0, "disk": 0.0},
          {"ml": {"cpus": 6.0, "mem": 30720.0, "gpus": 4.0, "disk": 0.0}}),
    {**agent("gpu2", {"cpus": 1.0, "mem": 1.0, "gpus": 0.0, "disk": 0.0},
             {"vision": {"cpus": 8.0, "mem": 8192.0, "gpus": 8.0, "disk": 0.0}}),
     "active": False},  # disconnected: not judged
], "recovered_slaves": []}

GPU_TRIAL = {"--app-runner": TaskResources(cpus=2, mem_mb=4096, gpus=1)}


def test_the_master_s_reservations_are_read_by_role() -> None:
    cpu1, gpu1 = capacities(SLAVES)
    assert cpu1.reserved == {} and cpu1.unreserved["cpus"] == 8.0
    assert gpu1.hostname == "gpu1" and gpu1.reserved["ml"]["gpus"] == 4.0
    assert gpu1.usable(["*"])["gpus"] == 0.0 and gpu1.usable(["ml"])["gpus"] == 4.0
    assert gpu1.usable(["ml/team"])["gpus"] == 4.0  # a role below "ml" may use it
    assert gpu1.total["cpus"] == 8.0


def test_a_task_that_fits_only_another_roles_reservation_names_that_role() -> None:
    why = unfit(GPU_TRIAL, capacities(SLAVES))
    assert why == ("a --app-runner task (cpus=2, mem=4096 MB, gpus=1) fits only resources "
                   "reserved for the role 'ml', on gpu1, and this job's roles are '*': add "
                   "--role ml")
    assert unfit(GPU_TRIAL, capacities(SLAVES), ("ml",)) == ""
    assert unfit(GPU_TRIAL, capacities(SLAVES), ("ml/team", "*")) == ""


def test_a_task_too_big_even_with_every_reservation_is_told_so_as_before() -> None:
    why = unfit({"--app-runner": TaskResources(cpus=2, mem_mb=4096, gpus=5)},
                capacities(SLAVES), ("ml",))
    assert why.startswith("no agent of the cluster can ever run a --app-runner task")
    assert "--app-runner-gpus" in why


def test_several_roles_that_would_do_are_named() -> None:
    agents = [AgentCapacity({"cpus": 1.0, "mem": 1024.0}, {"b": {"gpus": 1.0}}, "h2"),
              AgentCapacity({"cpus": 1.0, "mem": 1024.0}, {"a": {"gpus": 1.0}}, "h1")]
    why = unfit({"--app-runner": TaskResources(cpus=1, mem_mb=512, gpus=1)}, agents)
    assert "reserved for the role 'a' (or 'b'), on h1" in why and why.endswith("--role a")


def test_a_master_without_reservation_fields_counts_every_resource_as_unreserved() -> None:
    (only,) = capacities({"slaves": [{"hostname": "h", "resources": {"cpus": 4, "mem": 512}}]})
    assert only.unreserved["cpus"] == 4.0 and only.reserved == {}


@pytest.mark.parametrize("answer", [{}, {"slaves": "x"}, []])
def test_an_answer_without_agents_is_refused(answer: Any) -> None:
    with pytest.raises(ValueError, match="no 'slaves' list"):
        capacities(answer)


def hidden_ml(reserved: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """An agent whose cpus and mem are all reserved for ``ml``, as /master/slaves shows it to a
    reader whose view_roles ACL hides ``ml``: the total whole, the reservation left out."""
    shown = agent("ml1", {"cpus": 0.0, "mem": 0.0, "gpus": 0.0, "disk": 100.0},
                  {"ml": {"cpus": 8.0, "mem": 8192.0, "gpus": 0.0, "disk": 0.0}})
    shown["reserved_resources"] = reserved or {}
    return {"slaves": [shown]}


def test_reservations_the_master_hides_are_not_judged_for_a_job_with_its_own_role() -> None:
    trial = {"--app-runner": TaskResources(cpus=2, mem_mb=1024)}
    agents = capacities(hidden_ml())
    assert agents[0].hidden == {"cpus": 8.0, "mem": 8192.0}
    assert unfit(trial, agents, ["ml"]) == ""  # it may well be ml's: Mesos will offer it
    assert unfit(trial, agents, ["dev"]) == ""
    line = unfit(trial, agents, ["*"])  # a '*' job can never use a reservation
    assert "does not show this job's principal" in line and "view_roles" in line
    # Larger than even the hidden part: judged as before.
    huge = {"--app-runner": TaskResources(cpus=64, mem_mb=1024)}
    assert "no agent of the cluster can ever run" in unfit(huge, agents, ["ml"])


def test_nothing_is_hidden_when_every_reservation_is_shown() -> None:
    shown = hidden_ml({"ml": {"cpus": 8.0, "mem": 8192.0, "gpus": 0.0, "disk": 0.0}})
    (only,) = capacities(shown)
    assert only.hidden == {}
    trial = {"--app-runner": TaskResources(cpus=2, mem_mb=1024)}
    assert "add --role ml" in unfit(trial, [only], ["*"])
