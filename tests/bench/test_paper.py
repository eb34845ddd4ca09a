"""bench.paper's and bench.paper_records' arithmetic: the paper's trimmed mean, paired ratios,
and the no-overhead bound."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

from bench.paper import busy_cpus_under_contention
from bench.paper import tables_markdown
from bench.paper_records import PARAMS
from bench.paper_records import Setup
from bench.paper_records import expected_ideal_speedups
from bench.paper_records import ideal_job_seconds
from bench.paper_records import run_seed
from bench.paper_records import trimmed_mean
from disauto.appcore.algorithms import create_algorithm
from disauto.submit.params import load_parameter_file
from examples.synthetic_cnn import model


def test_trimmed_mean_drops_the_highest_and_lowest_from_three_runs_on() -> None:
    assert trimmed_mean([10.0, 1.0, 4.0, 6.0]) == 5.0
    assert trimmed_mean([3.0, 5.0]) == 4.0


@pytest.mark.parametrize("seed", [1000, 2000, 3000])
def test_the_bound_at_parallelism_1_is_the_sum_of_the_trials_up_to_the_first_hit(
        seed: int) -> None:
    setup = Setup()
    algorithm = create_algorithm("random-search", load_parameter_file(PARAMS), seed=seed,
                                 direction="maximize", settings={})
    total, number = 0.0, 0
    while True:
        number += 1
        suggestion = algorithm.ask(number)
        assert isinstance(suggestion, dict)
        accuracy, seconds = model(suggestion)
        total += seconds * setup.time_scale
        if accuracy >= setup.target:
            break
    assert ideal_job_seconds(seed, 1, setup) == pytest.approx(total)
    for parallelism in (2, 4, 8):
        ideal = ideal_job_seconds(seed, parallelism, setup)
        # More slots never hurt, and never help more than the number of slots.
        assert total / parallelism <= ideal + 1e-9 and ideal <= total + 1e-9


def test_the_expected_bound_is_the_ratio_of_plain_means_over_the_runs_seeds() -> None:
    setup = Setup()
    seeds = [run_seed(r) for r in range(3)]
    assert seeds == [1000, 2000, 3000]
    expected = expected_ideal_speedups(setup, 3)
    sequential = sum(ideal_job_seconds(s, 1, setup) for s in seeds)
    assert expected[1] == 1.0
    for parallelism in (2, 4, 8):
        parallel = sum(ideal_job_seconds(s, parallelism, setup) for s in seeds)
        assert expected[parallelism] == pytest.approx(sequential / parallel)
        assert 1.0 < expected[parallelism] <= parallelism


def test_table_3_shows_the_expected_bound_only_when_asked() -> None:
    records = [_record(1, p, "fifo", r, 100.0 / p) for p in (1, 2, 4, 8) for r in range(2)]
    row = "| speed-up with no overhead at all, expected (the bound over 2 seeds, plain means) |"
    assert row not in tables_markdown(records, ["fifo"])
    text = tables_markdown(records, ["fifo"], bound_runs=2)
    expected = expected_ideal_speedups(Setup(), 2)
    assert row + " " + " | ".join(f"{expected[p]:.2f}" for p in (1, 2, 4, 8)) + " |" in text


def _record(jobs: int, parallelism: int, policy: str, run: int, seconds: float) -> dict[str, Any]:
    return {"cell": f"j{jobs}-p{parallelism}-{policy}", "jobs": jobs,
            "parallelism": parallelism, "policy": policy, "run": run,
            "setup": asdict(Setup()), "mean_job_seconds": seconds,
            "job_records": [{"seconds": seconds, "search_seconds": seconds, "outcome":
                             "TARGET_REACHED", "appcore_agents": ["S0"]}] * jobs}


def test_ratios_pair_the_runs_both_cells_have() -> None:
    records = [_record(1, 1, "fifo", r, 100.0 + r) for r in range(4)]
    records += [_record(1, 1, "dynamic", r, 200.0 + r) for r in range(3)]  # run 3 missing
    text = tables_markdown(records, ["fifo", "dynamic"])
    # Over runs 0-2 (the ones both have): (200+201+202)/3 trimmed = 201 over 101.
    assert f"| dynamic / fifo (ours) | {201 / 101:.3f} |" in text
    assert "| fifo (ours) | 101.5 |" in text  # the cell itself keeps all its runs


def test_busy_cpus_are_averaged_while_three_or_more_jobs_run() -> None:
    record = _record(4, 4, "fifo", 0, 10.0)
    starts, lengths = [0.5, 1.0, 1.0, 2.0], [10.0, 3.0, 6.0, 12.0]  # ends 10.5, 4, 7, 14
    record["job_records"] = [{**job, "relative_start": start, "seconds": length}
                             for job, start, length in zip(record["job_records"], starts,
                                                           lengths, strict=True)]
    # 36 CPUs; the window is [2.0 (the last start), 7.0 (the third-to-last end)].
    record["samples"] = [{"t": t, "cpus_percent": share, "mem_percent": 0.0, "declined": {}}
                         for t, share in [(1.0, 0.0), (2.0, 0.5), (4.0, 1.0), (7.0, 0.75),
                                          (9.0, 0.1)]]
    assert busy_cpus_under_contention(record) == pytest.approx((18 + 36 + 27) / 3)
    assert busy_cpus_under_contention(_record(2, 4, "fifo", 0, 10.0)) is None
    text = tables_markdown([record], ["fifo"])
    assert "| CPUs busy while 3 or more jobs run, fifo (mean) | - | - | - | 27.0 |" in text


def test_slot_modes_become_da_submit_flags_and_old_records_ran_task_mode() -> None:
    from bench.paper import _setup_key
    from bench.paper import cells_for

    assert Setup().slot_flags() == ["--slot-mode", "task"]  # not the default since issue 36
    assert Setup(slot_mode="warm").slot_flags() == ["--slot-mode", "warm"]
    assert Setup(slot_mode="preload").slot_flags() == ["--slot-mode", "warm", "--slot-preload",
                                                       "apprunner_sdk"]
    old = asdict(Setup())
    del old["slot_mode"]
    assert _setup_key({"setup": old}) == asdict(Setup())
    assert _setup_key({"setup": asdict(Setup(slot_mode="warm"))})["slot_mode"] == "warm"
    assert [(c.jobs, c.parallelism) for c in cells_for(["3"], ["fifo"], (1, 8))] == [(1, 1),
                                                                                    (1, 8)]
