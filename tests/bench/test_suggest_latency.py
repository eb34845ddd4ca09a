"""The suggestion-latency benchmark measures what it says, in both of Bayesian's modes."""

from __future__ import annotations

import pytest

from bench import suggest_latency


pytestmark = pytest.mark.integration  # starts processes or servers


@pytest.mark.parametrize("name", ["random-search", "bayesian qmc sync"])
def test_each_sample_is_one_refilled_batch(name: str) -> None:
    # 10 prefilled trials: a sync batch of 8 first completes the batch they end in (9-16).
    row = suggest_latency.measure(name, history=10, batch=8, reps=2, mode="thread")
    assert (row.algorithm, row.history, row.batch) == (name, 10, 8)
    assert len(row.samples) == 2 and all(0 < s < 60 for s in row.samples)
    cells = row.cells()
    assert cells[:4] == [name, "10", "8", "2"] and float(cells[4]) <= float(cells[5])


def test_the_table_has_a_row_per_measurement() -> None:
    rows = [suggest_latency.Row("grid-search", 10, 1, [0.001, 0.003])]
    text = suggest_latency.table(rows).splitlines()
    assert text[0].startswith("| algorithm") and text[2].split("|")[1].strip() == "grid-search"
    assert text[2].split("|")[5].strip() == "2.0"
