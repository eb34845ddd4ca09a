"""The job page's resource use in a real browser (Chromium through Playwright): the usage
columns of the trials table and the charts of a trial's memory and CPU, from samples written
into a real job store and served by a real page server; report.html shows the columns."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from disauto.common.telemetry import GPU_MEMORY_USED
from disauto.common.telemetry import GPU_UTILIZATION
from disauto.common.telemetry import Sample
from disauto.framework import _meta as meta
from disauto.framework.webui import report
from disauto.framework.webui.server import JobPageServer
from disauto.framework.webui.sources import LiveJob
from disauto.framework.webui.views import read_record
from tests.conftest import SCREENSHOTS
from tests.framework.webui.records import AGENT
from tests.framework.webui.records import Recorded
from tests.framework.webui.records import record_telemetry


pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a server and a browser


@pytest.fixture
def recorded(tmp_path: Path) -> Recorded:
    recorded = Recorded(tmp_path / "job-test")
    record_telemetry(recorded)
    # Trial 2 held a GPU: its runner's samples (apprunner_sdk.gpu), ten of each.
    when = (recorded.store.get_meta(meta.STARTED_AT) or 0.0) + 100.0
    recorded.store.add_samples(
        [Sample(GPU_UTILIZATION, AGENT, when + i, 40.0 + i % 5, 2) for i in range(10)]
        + [Sample(GPU_MEMORY_USED, AGENT, when + i, (500 + i) * 2**20, 2) for i in range(10)])
    return recorded


@pytest.fixture
def page_url(recorded: Recorded) -> Iterator[str]:
    source = LiveJob(recorded.controller, recorded.folder, lambda _: None)
    server = JobPageServer(lambda: {"job-test": source}, "127.0.0.1", "127.0.0.1",
                           single="job-test")
    server.start()
    yield server.job_url("job-test")
    server.stop()


def cell(page: Any, trial: int, key: str) -> str:
    return str(page.locator(f'#trials tr[data-number="{trial}"] td[data-key="{key}"]')
               .text_content())


def test_usage_columns_and_a_trials_charts(browser: Any, page_url: str) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1400, "height": 2200})
    try:
        page.goto(page_url)
        expect(page.locator('#trials tr[data-number="3"]')).to_be_visible(timeout=30_000)
        assert cell(page, 3, "peak_rss") == "39.0 MiB"
        assert cell(page, 3, "cpu_seconds") == "6"
        assert cell(page, 2, "gpu") == "42.0 %" and cell(page, 3, "gpu") == ""
        assert cell(page, 8, "peak_rss") == ""  # running: not summed up yet
        headings = page.locator("#trials thead th").all_text_contents()
        assert {"peak memory", "CPU s", "mean GPU"} <= set(headings)

        # The running trial (8) is charted first; choosing trial 3 charts its samples.
        expect(page.locator("#usage-title")).to_have_text("trial 8", timeout=30_000)
        expect(page.locator("#plot-memory")).to_have_attribute("data-points", "10")
        page.select_option("#usage-trial", "3")
        expect(page.locator("#usage-title")).to_have_text("trial 3")
        expect(page.locator("#plot-memory")).to_have_attribute("data-points", "10")
        expect(page.locator("#plot-cpu")).to_have_attribute("data-points", "10")
        # Plotly drew a line of ten points in each chart.
        expect(page.locator("#plot-memory .scatterlayer .point")).to_have_count(10)
        expect(page.locator("#plot-cpu .scatterlayer .point")).to_have_count(10)
        # Trial 3 had no GPU: no GPU charts. Trial 2's runner sent GPU samples: charted.
        assert page.locator(".usage-gpu").first.is_hidden()
        page.select_option("#usage-trial", "2")
        expect(page.locator("#plot-gpu")).to_have_attribute("data-points", "10")
        expect(page.locator("#plot-gpu-memory")).to_have_attribute("data-points", "10")
        expect(page.locator("#plot-gpu .scatterlayer .point")).to_have_count(10)
        expect(page.locator(".usage-gpu").first).to_be_visible()
        # A trial with no samples says so in the chart.
        page.select_option("#usage-trial", "9")
        expect(page.locator("#plot-memory")).to_have_attribute("data-points", "0")
        expect(page.locator("#plot-memory")).to_contain_text("no samples of this trial")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.select_option("#usage-trial", "3")
        expect(page.locator("#plot-cpu")).to_have_attribute("data-points", "10")
        page.locator("#resources").screenshot(path=str(SCREENSHOTS / "job-page-usage.png"))
    finally:
        page.close()


def test_report_html_shows_the_usage_columns(browser: Any, recorded: Recorded) -> None:
    from playwright.sync_api import expect

    written = report.write(recorded.folder, read_record(recorded.store, "ended"))
    assert written is not None
    page = browser.new_page()
    try:
        page.goto(written.as_uri())
        expect(page.locator('#trials tr[data-number="5"]')).to_be_visible(timeout=30_000)
        assert cell(page, 5, "peak_rss") == "59.0 MiB" and cell(page, 5, "cpu_seconds") == "10"
        assert cell(page, 4, "gpu") == "44.0 %"
        assert page.is_hidden("#usage-plots")
        expect(page.locator("#telemetry-note")).to_contain_text("measured usage is in the "
                                                                "trials table")
    finally:
        page.close()
