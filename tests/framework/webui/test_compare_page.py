"""The comparison on ``da-job ui``'s index, in a real browser (Chromium through Playwright), in
a laptop's window: ticking jobs draws their best so far by trial number, a line each, as
``/api/compare`` gives it; the ticks live in the address, so a reload (or a shared link) draws
the same; untick to one job and the plot goes; no console error throughout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from disauto.framework import _meta as meta
from disauto.framework.webui.compare import compare_data
from disauto.framework.webui.server import JobPageServer
from disauto.submit.ui import RecordedJobs
from tests.browser import LAPTOP
from tests.browser import watched_page
from tests.conftest import SCREENSHOTS
from tests.framework.webui.records import ParetoRecorded
from tests.submit.job_cli.records import JobRecord


pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a server and a browser

TRACES = "n => (document.getElementById('plot-compare').data || []).length === n"
PLOT = """() => {
    const plot = document.getElementById('plot-compare');
    const box = plot.getBoundingClientRect();
    return {traces: plot.data.map((t) => ({name: t.name, x: [...t.x], y: [...t.y]})),
            hidden: plot.hidden, left: box.left, right: box.right,
            width: document.documentElement.scrollWidth,
            note: document.getElementById('compare-note').textContent,
            title: plot._fullLayout.yaxis.title.text};
}"""


def box(job_id: str) -> str:
    return f"input.compare-box[value='{job_id}']"


def test_ticked_jobs_are_drawn_best_so_far_by_trial_number(browser: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    JobRecord(home, "job-a", state="ended")
    JobRecord(home, "job-b", state="ended", completed=2)
    ParetoRecorded(home / "jobs" / "job-p", state=meta.ENDED)
    jobs = RecordedJobs(home / "jobs")
    expected = {line["job_id"]: line["points"]
                for line in compare_data(jobs, ["job-a", "job-b", "job-p"])}
    server = JobPageServer(lambda: jobs, "127.0.0.1", "127.0.0.1")
    server.start()
    try:
        with watched_page(browser) as (page, errors):
            page.goto(server.url)
            page.check(box("job-a"))
            assert page.locator("#plot-compare").is_hidden()
            assert page.locator("#compare-note").text_content() == (
                "Tick two jobs or more to draw their best so far by trial number.")
            page.check(box("job-b"))
            page.wait_for_function(TRACES, arg=2)
            drawn = page.evaluate(PLOT)
            assert [t["name"] for t in drawn["traces"]] == ["job-a", "job-b"]
            for trace in drawn["traces"]:
                assert [[x, y] for x, y in zip(trace["x"], trace["y"], strict=True)] == \
                    expected[trace["name"]]
            assert drawn["title"] == "accuracy (best so far)"
            assert drawn["note"] == ("2 jobs: the best accuracy (maximize) so far by trial "
                                     "number.")
            assert 0 <= drawn["left"] and drawn["right"] <= LAPTOP["width"]
            assert drawn["width"] <= LAPTOP["width"]
            assert page.url.endswith("/?compare=job-a%2Cjob-b")
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "compare-index.png"), full_page=True)

            # The address keeps the ticks: a reload draws the same; a job of two objectives
            # joins by its first, and says so.
            page.reload()
            page.wait_for_function(TRACES, arg=2)
            assert page.is_checked(box("job-a")) and page.is_checked(box("job-b"))
            assert not page.is_checked(box("job-p"))
            page.check(box("job-p"))
            page.wait_for_function(TRACES, arg=3)
            drawn = page.evaluate(PLOT)
            assert drawn["traces"][2]["name"] == "job-p (accuracy)"
            assert drawn["note"] == ("3 jobs: the best accuracy (maximize) so far by trial "
                                     "number (a job of several objectives by its first).")
            page.uncheck(box("job-a"))
            page.uncheck(box("job-p"))
            page.wait_for_selector("#plot-compare", state="hidden")
            assert page.url.endswith("/?compare=job-b")
            assert errors == []
    finally:
        server.stop()
