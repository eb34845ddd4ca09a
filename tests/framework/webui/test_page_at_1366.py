"""The job page at 1,366 px (issue 36, item 9), in a real browser (Chromium through Playwright)
at a laptop's 1366×768 and at 1920×1080, served from a constructed record by a real page
server: every row of a 24-trial job is reached by scrolling the page (no box of its own that
hides them), no column is hidden under the columns kept at the table's left and a failure's
message shows whole, a kill from the page is recorded as the page's, a trial whose final result
is in is drawn finishing (no kill button) and a refused kill is one line, the index and the
pages ask for no missing icon, and a job with no result yet says so instead of drawing empty
plots. None of them, nor any other page (a job of two objectives, report.html from disk), has a
console error at either size."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
import threading
from typing import Any

import pytest

from disauto.common.report import Report
from disauto.framework import _meta as meta
from disauto.framework._job import JobController
from disauto.framework._job.desk import ControlDesk
from disauto.framework._tasks import trial_task_id
from disauto.framework.control import ControlChannel
from disauto.framework.webui import report
from disauto.framework.webui.server import JobPageServer
from disauto.framework.webui.sources import JobSource
from disauto.framework.webui.sources import LiveJob
from disauto.framework.webui.sources import RecordedJob
from disauto.framework.webui.views import read_record
from disauto.testing.inprocess import task_status
from tests.browser import LAPTOP
from tests.browser import box_of
from tests.browser import watched_page
from tests.framework.webui.records import TOKEN
from tests.framework.webui.records import ParetoRecorded
from tests.framework.webui.records import Recorded
from tests.framework.webui.records import fresh_record
from tests.framework.webui.test_page_layout import AGENT_ID
from tests.framework.webui.test_page_layout import FAILURE_MESSAGE


pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a server and a browser

WIDE = {"width": 1920, "height": 1080}
SIZES = pytest.mark.parametrize("viewport", [LAPTOP, WIDE], ids=["1366x768", "1920x1080"])


@contextmanager
def serving(sources: dict[str, JobSource], single: str = "") -> Iterator[JobPageServer]:
    server = JobPageServer(lambda: sources, "127.0.0.1", "127.0.0.1", single=single)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def live(recorded: Recorded) -> dict[str, JobSource]:
    return {"job-test": LiveJob(recorded.controller, recorded.folder, lambda _: None)}


def big_job(tmp_path: Path, extra: int) -> Recorded:
    """24 trials: 20 completed, a pruned, a failed (a failure as long as real ones), a running
    and a pending one, with ``extra`` long-named parameters more."""
    return Recorded(tmp_path / "job-test", completed=20, extra=extra, agent=AGENT_ID,
                    failure=FAILURE_MESSAGE, failure_reason="REASON_COMMAND_EXECUTOR_FAILED",
                    budget=30)


@SIZES
def test_every_row_of_a_24_trial_job_is_reached_by_scrolling_the_page(
        tmp_path: Path, browser: Any, viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    recorded = big_job(tmp_path, extra=6)
    with serving(live(recorded), "job-test") as server, \
            watched_page(browser, viewport) as (page, errors):
        page.goto(server.job_url("job-test"))
        rows = page.locator("#trials tbody tr")
        expect(rows).to_have_count(24, timeout=30_000)
        # The table is as tall as its rows: nothing scrolls inside its box but sideways.
        heights = page.evaluate("""() => {
            const wrap = document.querySelector('.table-wrap');
            return [wrap.scrollHeight, wrap.clientHeight];
        }""")
        assert heights[0] <= heights[1] + 1, heights
        # Scrolled to (the page's scroll), the last row is drawn whole in the window, and what
        # is drawn there is the row itself, not another box over it.
        last = page.evaluate("""() => {
            const cell = document.querySelector(
                '#trials tr[data-number="24"] td[data-key="state"]');
            cell.scrollIntoView({block: 'center'});
            const r = cell.getBoundingClientRect();
            const there = document.elementFromPoint((r.left + r.right) / 2,
                                                    (r.top + r.bottom) / 2);
            return {top: r.top, bottom: r.bottom, row: there.closest('tr')?.dataset.number,
                    scrolled: window.scrollY};
        }""")
        assert 0 <= last["top"] and last["bottom"] <= viewport["height"], last
        assert last["row"] == "24" and last["scrolled"] > 0, last
        last = page.locator('#trials tr[data-number="24"]')
        expect(last.locator('td[data-key="state"]')).to_have_text("PENDING")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= viewport["width"]
        assert errors == []


COVERED = """() => {
    // The headings whose middle lies inside the table's box, right of the columns kept at its
    // left (the others scroll under those), but under another cell (a column kept in place
    // drawn over it); and those whose text is cut.
    const wrap = document.querySelector('.table-wrap').getBoundingClientRect();
    const heads = [...document.querySelectorAll('#trials thead th')];
    const kept = heads.filter((th) => getComputedStyle(th).position === 'sticky'
        && th.getBoundingClientRect().left < wrap.left + wrap.width / 2);
    const keptRight = Math.max(...kept.map((th) => th.getBoundingClientRect().right));
    const covered = [], cut = [];
    for (const th of heads.filter((th) => th.dataset.key && !kept.includes(th))) {
        const r = th.getBoundingClientRect();
        const x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
        if (x > keptRight && x < wrap.right && document.elementFromPoint(x, y) !== th) {
            covered.push(th.dataset.key);
        }
        if (!th.dataset.key.startsWith('p:') && th.scrollWidth > th.clientWidth) {
            cut.push(th.dataset.key);
        }
    }
    return {covered, cut};
}"""


@SIZES
def test_no_column_hides_under_another_and_a_failures_message_shows_whole(
        tmp_path: Path, browser: Any, viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    recorded = big_job(tmp_path, extra=2)  # a little wider than a laptop's window
    failed = recorded.running - 1
    with serving(live(recorded), "job-test") as server, \
            watched_page(browser, viewport) as (page, errors):
        page.goto(server.job_url("job-test"))
        row = page.locator(f'#trials tr[data-number="{failed}"]')
        expect(row).to_be_visible(timeout=30_000)
        assert page.evaluate(COVERED) == {"covered": [], "cut": []}
        page.locator(".table-wrap").evaluate("w => { w.scrollLeft = w.scrollWidth; }")
        assert page.evaluate(COVERED) == {"covered": [], "cut": []}
        agent = row.locator('td[data-key="agent"]')
        expect(agent).to_have_text("…-S0")
        assert agent.evaluate("td => td.scrollWidth <= td.clientWidth")
        # The message wraps (its cause first); a click shows it whole, another its start again.
        message = row.locator('td[data-key="message"]')
        text = message.locator(".message-text")
        expect(text).to_contain_text("KeyError: 'hidden' (TASK_FAILED")
        cell = box_of(message)
        assert cell["x"] + cell["width"] <= viewport["width"]
        message.click()
        expect(message).to_have_class("expanded")
        page.wait_for_timeout(2000)  # a poll or two redraw the table: it stays whole
        expect(message).to_have_class("expanded")
        assert text.evaluate("t => t.scrollHeight <= t.clientHeight + 1")
        assert text.evaluate("t => t.getBoundingClientRect().right") <= viewport["width"]
        expect(text).to_contain_text('x = p["hidden"])')
        message.click()
        expect(message).not_to_have_class("expanded")
        assert errors == []


def test_killing_the_job_from_the_page_is_recorded_as_the_pages(
        tmp_path: Path, browser: Any) -> None:
    from playwright.sync_api import expect

    recorded = Recorded(tmp_path / "job-test")
    desk = ControlDesk(ControlChannel(recorded.store), recorded.controller, lambda _: None)
    stop = threading.Event()

    def run_loop() -> None:  # the run loop's reading of the control channel
        while not stop.wait(0.2):
            desk.serve()

    loop = threading.Thread(target=run_loop, daemon=True)
    loop.start()
    try:
        with serving(live(recorded), "job-test") as server, \
                watched_page(browser) as (page, errors):
            page.on("dialog", lambda dialog: dialog.accept())
            page.goto(f"{server.job_url('job-test')}#token={TOKEN}")
            expect(page.locator("#job-state")).to_have_text("running", timeout=30_000)
            page.click("#kill-job")
            expect(page.locator("#job-outcome")).to_have_text(
                "job killed: killed from the job page", timeout=15_000)
            assert errors == []
    finally:
        stop.set()
        loop.join()
    assert recorded.store.get_meta(meta.OUTCOME_MESSAGE) == "killed from the job page"


def final_report(controller: JobController, number: int) -> None:
    controller.record_report(Report(number, {"accuracy": 0.9}, None, True, 1.0))


@SIZES
def test_a_trial_whose_result_is_in_is_finishing_and_a_refused_kill_is_one_line(
        tmp_path: Path, browser: Any, viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    recorded = Recorded(tmp_path / "job-test")
    running = recorded.running
    row = f'#trials tr[data-number="{running}"]'
    with serving(live(recorded), "job-test") as server, \
            watched_page(browser, viewport) as (page, errors):
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(f"{server.job_url('job-test')}#token={TOKEN}")
        expect(page.locator(f"{row} button.kill-trial")).to_be_visible(timeout=30_000)
        # The page draws what it last heard: held here, its next polls do not come back...
        held: list[Any] = []
        page.route("**/api/page*", lambda route: held.append(route))
        final_report(recorded.controller, running)  # ...while the trial's final result comes
        page.click(f"{row} button.kill-trial")
        message = page.locator("#action-message")
        expect(message).to_have_text(f"trial {running} already reported its final result",
                                     timeout=15_000)
        expect(message).to_have_class("error")
        page.route("**/api/page*", lambda route: route.continue_())  # the polls come back
        for route in held:
            route.continue_()
        # Once heard of, it is finishing: its task is still running, it cannot be killed.
        state = page.locator(f'{row} td[data-key="state"]')
        expect(state).to_have_text("FINISHING", timeout=15_000)
        expect(state).to_have_attribute("title", "its final result is in: COMPLETED once its "
                                                 "task exits")
        expect(page.locator(f"{row} button.kill-trial")).to_have_count(0)
        expect(page.locator(f"{row} button.show-log")).to_be_visible()
        recorded.status(running, "TASK_FINISHED")
        expect(page.locator(row)).to_have_attribute("data-state", "COMPLETED", timeout=15_000)
        expect(state).to_have_text("COMPLETED")
        assert errors == []


@SIZES
def test_the_index_and_a_jobs_page_ask_for_no_missing_icon(
        tmp_path: Path, browser: Any, viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    recorded = Recorded(tmp_path / "job-test")
    source = RecordedJob("job-test", recorded.folder, lambda: "running")
    with serving({"job-test": source}) as server, \
            watched_page(browser, viewport) as (page, errors):  # da-job ui's: an index
        refused: list[str] = []
        page.on("response", lambda r: refused.append(f"{r.status} {r.url}")
                if r.status >= 400 else None)
        page.goto(server.url)
        expect(page.locator("#jobs tbody tr")).to_have_count(1, timeout=30_000)
        page.wait_for_timeout(1000)  # the browser asks for an icon after the page loaded
        page.click("#jobs a")
        expect(page.locator('#trials tr[data-number="1"]')).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1000)
        answer = page.request.get(f"{server.url}favicon.ico")
        assert answer.status == 204
        assert (errors, refused) == ([], [])


@SIZES
def test_a_job_with_no_result_says_so_instead_of_empty_plots(
        tmp_path: Path, browser: Any, viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    controller = fresh_record(tmp_path / "job-fresh")
    source = LiveJob(controller, tmp_path / "job-fresh", lambda _: None)
    with serving({"job-fresh": source}, "job-fresh") as server, \
            watched_page(browser, viewport) as (page, errors):
        page.goto(server.job_url("job-fresh"))
        note = page.locator("#no-results")
        expect(note).to_be_visible(timeout=30_000)
        expect(note).to_have_text("No results yet: the plots appear once a trial reports its "
                                  "final result.")
        for plot in ("plot-history", "plot-time", "plot-intermediate", "plot-parallel",
                     "plot-importance"):
            expect(page.locator(f"#{plot}")).to_be_hidden()
        # A step reported: its curve shows; a final result: the plots take the line's place.
        controller.record_report(Report(1, {"accuracy": 0.5}, 0, False, 1.0))
        expect(page.locator("#plot-intermediate")).to_be_visible(timeout=15_000)
        expect(note).to_be_visible()
        final_report(controller, 1)
        controller.on_status(task_status(trial_task_id(1, 0), "TASK_FINISHED"))
        expect(note).to_be_hidden(timeout=15_000)
        page.wait_for_function("document.getElementById('plot-history').data !== undefined",
                               timeout=30_000)
        for plot in ("plot-history", "plot-time", "plot-parallel"):
            expect(page.locator(f"#{plot}")).to_be_visible()
        assert errors == []


def test_an_ended_job_with_no_result_says_none_came(tmp_path: Path, browser: Any) -> None:
    from playwright.sync_api import expect

    controller = fresh_record(tmp_path / "job-fresh")
    source = RecordedJob("job-fresh", tmp_path / "job-fresh", lambda: "ended")
    written = report.write(tmp_path / "job-fresh", read_record(controller.store, "ended"))
    assert written is not None
    with serving({"job-fresh": source}) as server:
        for url in (server.job_url("job-fresh"), written.as_uri()):  # da-job ui, report.html
            with watched_page(browser) as (page, errors):
                page.goto(url)
                expect(page.locator("#no-results")).to_have_text(
                    "No results: no trial reported its final result.", timeout=30_000)
                expect(page.locator("#plot-history")).to_be_hidden()
                assert errors == []


@SIZES
def test_every_page_at_either_size_has_no_console_error(
        tmp_path: Path, browser: Any, viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    recorded = big_job(tmp_path, extra=2)
    pareto = ParetoRecorded(tmp_path / "job-pareto")
    fresh = fresh_record(tmp_path / "job-fresh")
    sources: dict[str, JobSource] = {
        "job-test": RecordedJob("job-test", recorded.folder, lambda: "running"),
        "job-pareto": LiveJob(pareto.controller, pareto.folder, lambda _: None),
        "job-fresh": LiveJob(fresh, tmp_path / "job-fresh", lambda _: None)}
    written = report.write(recorded.folder, read_record(recorded.store, "ended"))
    assert written is not None
    with serving(sources) as server:
        # Each in a window of its own: leaving a page cuts its poll short (a failed request).
        with watched_page(browser, viewport) as (page, errors):
            page.goto(server.url)
            expect(page.locator("#jobs tbody tr")).to_have_count(3, timeout=30_000)
            page.wait_for_timeout(1000)  # the browser asks for an icon after the page loaded
            assert errors == []
        for job in sources:
            with watched_page(browser, viewport) as (page, errors):
                page.goto(server.job_url(job))
                expect(page.locator('#trials tr[data-number="1"]')).to_be_visible(
                    timeout=30_000)
                page.wait_for_function("document.getElementById('plots-note').hidden",
                                       timeout=30_000)
                page.wait_for_timeout(1500)  # a poll
                assert errors == [], job
    with watched_page(browser, viewport) as (page, errors):
        page.goto(written.as_uri())
        expect(page.locator('#trials tr[data-number="24"]')).to_be_attached(timeout=30_000)
        page.wait_for_function("document.getElementById('plot-history').data !== undefined",
                               timeout=30_000)
        assert errors == []
