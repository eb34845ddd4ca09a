"""bench.deadline_sim's tools: policy settings in ``--policies`` and the ``alone`` ceiling."""

from __future__ import annotations

import pytest

from bench.deadline_sim import CPU
from bench.deadline_sim import Agent
from bench.deadline_sim import Simulation
from bench.deadline_sim import Workload
from bench.deadline_sim import alone_run
from bench.deadline_sim import markdown
from bench.deadline_sim import policy_spec
from disauto.framework.policies import DeadlinePolicy
from disauto.framework.policies import PolicySettingsError


def jobs() -> list[Workload]:
    """Two budget jobs that each fill the one agent: together the second waits."""
    first = Workload(name="first", arrival=0.0, parallelism=2, budget=6, seconds=20.0,
                     runner=CPU, kind="budget")
    second = Workload(name="second", arrival=5.0, parallelism=2, budget=6, seconds=20.0,
                      runner=CPU, kind="budget", deadline=5.0 + 100.0)
    return [first, second]


AGENTS = [Agent("only", 10.0, 32768.0)]


def test_policy_spec_reads_settings_after_the_name() -> None:
    assert policy_spec("fifo") == ("fifo", {})
    assert policy_spec("deadline:leftover=gain:min_share=jit") == \
        ("deadline", {"leftover": "gain", "min_share": "jit"})
    assert policy_spec("deadline:edge_attribute=") == ("deadline", {"edge_attribute": ""})
    with pytest.raises(ValueError, match="NAME=VALUE"):
        policy_spec("deadline:leftover")


def test_the_simulation_hands_the_settings_to_the_policy() -> None:
    sim = Simulation(AGENTS, jobs(), "deadline:leftover=gain:jit_margin=3", seed=1)
    policy = sim.jobs[0].policy
    assert isinstance(policy, DeadlinePolicy)
    assert (policy.settings["leftover"], policy.settings["jit_margin"]) == ("gain", 3.0)
    with pytest.raises(PolicySettingsError, match="leftover"):
        Simulation(AGENTS, jobs(), "deadline:leftover=most", seed=1)


def test_alone_each_job_runs_its_own_trials_on_the_whole_cluster() -> None:
    # 6 trials of ~20 s at parallelism 2: about 60 s alone, well within the 100 s deadline;
    # behind the first job (FIFO) the second gets no slot until the first ends.
    alone = alone_run(AGENTS, jobs(), seed=3)
    together = Simulation(AGENTS, jobs(), "fifo", seed=3).run()
    assert alone["hit_rate"] == 1.0
    assert alone["mean"] < together["mean"]
    assert together["hit_rate"] <= alone["hit_rate"]
    ends = []
    for index, spec in enumerate(jobs()):
        sim = Simulation(AGENTS, [spec], "fifo", seed=3, draws=[index])
        sim.run()
        ends.append((sim.jobs[0].ended or 0.0) - spec.arrival)
    assert alone["mean"] == pytest.approx(sum(ends) / 2)
    # The second job alone draws its own trials (index 1), not the first job's.
    assert ends[0] != ends[1]


def test_the_alone_row_has_no_makespan_or_utilisation() -> None:
    figures = {"fifo": {"hit_rate": 0.5, "mean": 100.0, "p95": 150.0, "makespan": 200.0,
                        "utilisation": 0.5},
               "alone": alone_run(AGENTS, jobs(), seed=3)}
    row = markdown("test", figures).splitlines()[-1]
    assert row.startswith("| alone | 1.000 |") and "| - | - | 2.00 |" in row
