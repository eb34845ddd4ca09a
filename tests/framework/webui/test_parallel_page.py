"""The parallel-coordinates plot on the job page, in a real browser (Chromium through
Playwright), issue 36: a conditional bound parameter gets a numeric axis with an "inactive" tick
below its values (not a categorical one of 16-digit labels and "undefined"), an integer one
whole-number ticks, and every objective an axis."""

from __future__ import annotations

from pathlib import Path
import re
from typing import Any

import pytest

from tests.browser import LAPTOP
from tests.browser import watched_page
from tests.conftest import SCREENSHOTS
from tests.framework.webui.records import ParetoRecorded
from tests.framework.webui.records import conditional_assignment
from tests.framework.webui.test_pareto_page import serve


pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a server and a browser

DRAWN = "document.getElementById('plot-parallel').data !== undefined"
AXES = """() => {
    const plot = document.getElementById('plot-parallel');
    const axes = {};
    for (const d of plot._fullData[0].dimensions) {
        axes[d.label] = {values: [...d.values], tickvals: d.tickvals ? [...d.tickvals] : null,
                         ticktext: d.ticktext ? [...d.ticktext] : null,
                         range: d.range ? [...d.range] : null};
    }
    const drawn = [...plot.querySelectorAll('.y-axis .tick text')].map(t => t.textContent);
    return {axes, drawn, right: plot.getBoundingClientRect().right};
}"""


def test_the_axes_are_numeric_integer_and_one_per_objective(
        tmp_path: Path, browser: Any) -> None:
    made = ParetoRecorded(tmp_path / "job-parallel", conditional=True)
    server, url = serve(made)
    try:
        with watched_page(browser) as (tab, errors):
            tab.goto(url)
            tab.wait_for_function(DRAWN, timeout=30_000)
            drawn = tab.evaluate(AXES)
            axes = drawn["axes"]
            assert list(axes) == ["lr (log)", "layers", "act", "momentum", "accuracy", "latency"]
            # The conditional bound: numbers where active, an "inactive" tick below them.
            momentum = axes["momentum"]
            assert "inactive" in momentum["ticktext"] and "undefined" not in momentum["ticktext"]
            inactive = momentum["tickvals"][momentum["ticktext"].index("inactive")]
            active = [conditional_assignment(n).get("momentum") for n in range(1, 9)]
            assert min(v for v in active if v is not None) > inactive
            assert inactive in momentum["values"] and momentum["range"][0] <= inactive
            assert {round(v, 9) for v in momentum["values"] if v != inactive} \
                <= {round(v, 9) for v in active if v is not None}
            labels = drawn["drawn"]
            assert "inactive" in labels
            assert not [t for t in labels if re.search(r"\d{6,}", t)], labels  # no 16-digit labels
            # The integer parameter: whole ticks only.
            assert axes["layers"]["tickvals"] and all(float(v).is_integer()
                                                      for v in axes["layers"]["tickvals"])
            assert all(float(t).is_integer() for t in axes["layers"]["ticktext"])
            # Each objective an axis, of the trials' values.
            assert sorted(axes["latency"]["values"]) == sorted(
                [10.0, 20.0, 25.0, 40.0, 30.0, 15.0, 35.0, 50.0])
            assert drawn["right"] <= LAPTOP["width"] and errors == []
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            tab.locator("#plot-parallel").screenshot(
                path=str(SCREENSHOTS / "job-page-parallel.png"))
    finally:
        server.stop()
