"""bench-quick's arithmetic and its table (no system is run here)."""

from __future__ import annotations

import math

import pytest

from bench.quick import KB
from bench.quick import Line
from bench.quick import growth_per_trial
from bench.quick import painted_ms
from bench.quick import per_wave
from bench.quick import slot_lines
from bench.quick import table
from bench.warm_slots import Result


def test_a_waves_cost_comes_from_the_whole_run_and_from_the_trials_span() -> None:
    # 64 trials of 1 s, 8 at a time: 8 waves; a 10.5 s whole run is 0.3125 s a wave.
    result = Result("disauto-task", parallelism=8, seconds=1.0, trials=64, wall=9.0, total=10.5)
    assert per_wave(result) == pytest.approx((0.3125, 0.125))
    whole, span = slot_lines("1 task mode", result, "0.5 -> 1.0", 2.5 / 8)
    assert whole.met is True and "10.5 s for 64 x 1 s, P = 8" in whole.figure
    assert span.met is None
    slower = Result("disauto-task", parallelism=8, seconds=1.0, trials=64, wall=9.0, total=11.0)
    assert slot_lines("1 task mode", slower, "", 2.5 / 8)[0].met is False


def test_memory_growth_is_taken_after_the_first_thousand_trials() -> None:
    memory = [(500, 100_000_000, 1), (1000, 110_000_000, 1), (1600, 112_457_600, 1)]
    assert growth_per_trial(memory) == pytest.approx(2_457_600 / 600)
    assert growth_per_trial(memory) / KB == pytest.approx(4.0)
    assert math.isnan(growth_per_trial(memory[:2]))  # one sample after 1,000: no slope


def test_each_figure_stands_beside_its_target_with_the_load() -> None:
    text = table([Line("2 preload", "turnaround p50 12 ms", "<= 20 ms", True, "0.4 -> 1.2"),
                  Line("5 cores", "not measured here: needs 16 cores", "16 slots >= 1.8 x 8",
                       None, "-")])
    assert text.splitlines()[2] == \
        "| 2 preload | turnaround p50 12 ms | <= 20 ms | yes | 0.4 -> 1.2 |"
    assert "| 5 cores | not measured here: needs 16 cores | 16 slots >= 1.8 x 8 | - | - |" in text


def test_the_first_paint_is_read_from_page_paints_cold_load() -> None:
    output = ("cold load: table painted 1356 ms after navigation (target <= 2000 ms at 10,000 "
              "trials); server CPU 0.25 s; load 24.66 -> 24.66\n"
              "warm load: table painted 509 ms after navigation (target <= 2000 ms ...)\n")
    assert painted_ms(output) == 1356.0
    assert painted_ms("page_paint: no browser: chromium is missing") is None
