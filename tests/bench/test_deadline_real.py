"""bench.deadline_real: the arrival schedule, the trials' draws, the job records it reads, and one
small real run."""

from __future__ import annotations

import json
import math
from pathlib import Path
import sqlite3
import time

import pytest

from bench.deadline_real import Setup
from bench.deadline_real import agent_configs
from bench.deadline_real import arrivals
from bench.deadline_real import draws
from bench.deadline_real import figures
from bench.deadline_real import parse_seeds
from bench.deadline_real import policy_flags
from bench.deadline_real import read_jobs
from bench.deadline_real import reduced
from bench.deadline_real import run_real
from bench.deadline_real import submit_args
from bench.deadline_sim import CPU
from bench.deadline_sim import GPU
from bench.deadline_sim import Agent
from bench.deadline_sim import Workload
from bench.deadline_sim import alone_seconds
from bench.deadline_sim import feasible_jobs
from bench.deadline_sim import trial_draw
from bench.deadline_trial import agent_slowdown
from bench.deadline_trial import trial_plan


def two_jobs() -> list[Workload]:
    late = Workload(name="late", arrival=100.0, parallelism=2, budget=4, seconds=20.0,
                    runner=CPU, kind="budget", deadline=100.0 + 80.0)
    early = Workload(name="early", arrival=40.0, parallelism=2, budget=4, seconds=20.0,
                     runner=GPU, kind="random", p_first=0.1, p_last=0.1)
    return [late, early]


def test_jobs_arrive_in_order_at_scaled_offsets_from_the_first() -> None:
    assert arrivals(two_jobs(), 0.05) == [(0.0, 1), (pytest.approx(3.0), 0)]


def test_real_trial_n_gets_the_simulations_draw_of_trial_n_minus_1() -> None:
    spec = feasible_jobs(3)[2]
    table = json.loads(json.dumps(draws(3, 2, spec)))  # as the trial reads it from its file
    assert sorted(map(int, table)) == list(range(1, spec.budget + 1))
    for number in (1, 2, spec.budget):
        seconds, _, objective = trial_draw(3, 2, number - 1, spec)
        assert trial_plan(table, number, 1.0, 1.0) == (pytest.approx(seconds), objective)
        assert trial_plan(table, number, 2.0, 0.05) == (pytest.approx(seconds * 0.1), objective)


def test_a_trial_takes_its_agents_slowdown_from_the_masters_attributes() -> None:
    slaves = [{"id": "S0", "attributes": {"class": "fast"}},
              {"id": "S1", "attributes": {"class": "edge", "slowdown": 2.0}}]
    assert agent_slowdown(slaves, "S0") == 1.0
    assert agent_slowdown(slaves, "S1") == 2.0
    with pytest.raises(LookupError, match="S9"):
        agent_slowdown(slaves, "S9")


def test_the_embedded_agents_carry_the_simulated_ones_resources_and_attributes() -> None:
    fast, edge = agent_configs([Agent("f", 12.0, 4096.0, gpus=2),
                                Agent("e", 12.0, 4096.0, slowdown=2.0)], 40000)
    assert (fast.cpus, fast.gpus, dict(fast.attributes)) == (12.0, 2, {"class": "fast"})
    assert dict(edge.attributes) == {"class": "edge", "slowdown": 2.0}
    assert fast.ports[0][1] < edge.ports[0][0]  # disjoint port ranges


def test_a_reduced_workload_keeps_each_deadlines_slack() -> None:
    jobs = feasible_jobs(0)
    small = reduced(jobs, 3, 0.5)
    assert [j.name for j in small] == ["job0", "job1", "job2"]
    for big, little in zip(jobs, small, strict=False):
        assert little.budget == max(big.parallelism, round(big.budget * 0.5))
        if big.deadline:
            assert (little.deadline - little.arrival) / alone_seconds(little) == \
                pytest.approx((big.deadline - big.arrival) / alone_seconds(big))
    assert reduced(jobs) == jobs


def test_time_settings_are_scaled_like_the_trials_and_the_policys_own_are_kept() -> None:
    setup = Setup(time_scale=0.1)
    assert policy_flags("fifo", setup) == ["--offer-policy", "fifo"]
    flags = policy_flags("deadline:leftover=gain", setup)
    assert flags[:2] == ["--offer-policy", "deadline"]
    settings = [flags[i + 1] for i, f in enumerate(flags) if f == "--policy-setting"]
    assert settings == ["decline_filter_seconds=0.1", "patience_seconds=3", "leftover=gain"]


def test_a_job_is_submitted_with_its_deadline_target_and_trial_resources(tmp_path: Path) -> None:
    late, early = two_jobs()
    args = submit_args(early, tmp_path / "d.json", tmp_path / "p.json", "127.0.0.1:5050",
                       "fifo", Setup(), None)
    assert "--deadline" not in args and args[args.index("--target") + 1] == "0.95"
    assert args[args.index("--app-runner-gpus") + 1] == "1"
    before = time.time()
    args = submit_args(late, tmp_path / "d.json", tmp_path / "p.json", "127.0.0.1:5050",
                       "deadline", Setup(), before + 42.5)
    assert "--target" not in args
    given = args[args.index("--deadline") + 1]  # from now: a moment could pass at start-up
    assert given.endswith("s") and 42.0 <= float(given[:-1]) <= 42.5


def _job_db(home: Path, name: str, ended_at: float | None, outcome: str,
            deadline: float) -> None:
    folder = home / "jobs" / f"{name}-1"
    folder.mkdir(parents=True)
    with sqlite3.connect(folder / "job.db") as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("CREATE TABLE trials (number INTEGER PRIMARY KEY)")
        conn.executemany("INSERT INTO trials VALUES (?)", [(1,), (2,)])
        meta = {"config": json.dumps({"app_name": name, "deadline": deadline}),
                "outcome": outcome}
        if ended_at is not None:
            meta["ended_at"] = str(ended_at)
        conn.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
    conn.close()


def test_records_become_the_simulations_figures_in_workload_seconds(tmp_path: Path) -> None:
    start = 1_000.0  # the wall time of the first arrival (early's, at 40)
    _job_db(tmp_path, "late", start + 7.0, "BUDGET_SPENT", start + 7.0)  # ends at 40 + 140
    _job_db(tmp_path, "early", start + 3.0, "BUDGET_SPENT", 0.0)  # ends at 40 + 60
    records = read_jobs(tmp_path)
    assert records["late"] == {"ended_at": 1007.0, "deadline": 1007.0,
                               "outcome": "BUDGET_SPENT", "trials": 2}
    result = figures(two_jobs(), records, start, 0.05, stopped=start + 20.0)
    assert result["hit_rate"] == 1.0  # late ends at 180, its deadline
    assert result["mean"] == pytest.approx((80.0 + 60.0) / 2)
    assert result["makespan"] == pytest.approx(140.0)


def test_a_failed_or_unfinished_job_misses_and_ends_when_the_run_stopped(tmp_path: Path) -> None:
    _job_db(tmp_path, "late", 1_001.0, "TOO_MANY_FAILURES", 0.0)
    result = figures(two_jobs(), read_jobs(tmp_path), 1_000.0, 0.05, stopped=1_010.0)
    assert result["hit_rate"] == 0.0
    assert result["makespan"] == pytest.approx(200.0)  # early has no record at all
    assert result["mean"] == pytest.approx(((240.0 - 100.0) + 200.0) / 2)


def test_seeds_are_a_count_or_a_list() -> None:
    assert parse_seeds("2") == [0, 1]
    assert parse_seeds("3,5") == [3, 5]
    with pytest.raises(ValueError):
        parse_seeds("0")


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
@pytest.mark.slow
def test_a_small_real_run_of_two_deadline_jobs_gives_every_figure(tmp_path: Path) -> None:
    setup = Setup(workload="feasible", time_scale=0.01, jobs=2, budget_scale=0.2,
                  run_timeout=50.0)
    record = run_real(setup, "deadline", 0, tmp_path)
    assert record["exit_codes"] == [0, 0]
    assert {r["outcome"] for r in record["jobs"].values()} == {"BUDGET_SPENT"}
    result = record["figures"]
    assert 0.0 <= result["hit_rate"] <= 1.0
    assert result["mean"] > 0 and result["makespan"] >= result["p95"] > 0
    assert 0.0 < result["utilisation"] <= 1.0
    assert not any(math.isnan(v) for v in result.values())
