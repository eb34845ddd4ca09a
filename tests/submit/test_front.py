"""The Pareto front as da-submit's summary and da-job status say it."""

from __future__ import annotations

from disauto.common.objectives import Objectives
from disauto.submit.front import front_lines
from disauto.submit.front import front_rows
from tests.submit.test_results import PAIRS
from tests.submit.test_results import TWO


def test_the_rows_are_the_front_by_number_with_each_value() -> None:
    assert front_rows(PAIRS, TWO) == [{"trial": 1, "values": {"accuracy": 0.9, "latency": 5.0}},
                                      {"trial": 6, "values": {"accuracy": 0.85, "latency": 2.0}}]


def test_the_lines_go_best_first_by_the_first_objective_and_count_the_rest() -> None:
    rows = [{"trial": n, "values": {"accuracy": n / 10, "latency": float(n)}} for n in range(1, 8)]
    assert front_lines(rows, TWO, shown=3) == [
        "front: 7 trials of accuracy (maximize), latency (minimize)",
        "  trial-0007 accuracy=0.7 latency=7", "  trial-0006 accuracy=0.6 latency=6",
        "  trial-0005 accuracy=0.5 latency=5", "  … and 4 more"]
    down = Objectives(("latency", "accuracy"), ("minimize", "maximize"))
    assert front_lines(rows[:1], down)[0] == "front: 1 trial of latency (minimize), accuracy " \
                                             "(maximize)"


def test_an_empty_front_says_so() -> None:
    assert front_lines([], TWO) == [
        "front: none yet (no completed, feasible trial) of accuracy (maximize), latency "
        "(minimize)"]
