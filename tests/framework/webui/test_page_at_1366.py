"""The job page at 1,366 px (issue 36, item 9), in a real browser (Chromium through Playwright)
at a laptop's 1366×768 and at 1920×1080, served from a constructed record by a real page
server: every row of a 24-trial job is reached by scrolling the page (no box of its own that
hides them), and no column is hidden under the columns kept at the table's left and a failure's
message shows whole. None of them has a console error."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from disauto.framework.webui.server import JobPageServer
from disauto.framework.webui.sources import JobSource
from disauto.framework.webui.sources import LiveJob
from tests.browser import LAPTOP
from tests.browser import box_of
from tests.browser import watched_page
from tests.framework.webui.records import Recorded
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
