"""The job page's lineage view (Population Based Training): which trial descends from which,
from the record's lineage, as the page server sends it and as a real browser (Chromium through
Playwright) draws it at a laptop's 1366 px: a tree, each descent saying the parent's step and
the parameters explored, no console error and nothing wider than the window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from disauto.framework.webui.server import JobPageServer
from disauto.framework.webui.sources import LiveJob
from disauto.framework.webui.views import LINEAGE_MOST
from disauto.framework.webui.views import lineage_view
from tests.browser import LAPTOP
from tests.browser import watched_page
from tests.framework.webui.records import Recorded
from tests.framework.webui.records import assignment


def descend(recorded: Recorded, number: int, parent: int, step: int | None) -> None:
    """Submit trial ``number`` as PBT's exploit does: ``parent``'s assignment with its lr
    explored, resuming from ``parent``'s checkpoint at ``step`` (None: it had none)."""
    old = recorded.controller.trials()[parent - 1].assignment
    new = {**old, "lr": old["lr"] * 1.2}
    point = None if step is None else {"trial": parent, "step": step, "name": "x.ckpt"}
    recorded.controller.submit_trials(
        [(number, new, 0)],
        {number: ({"parent": parent, "from_step": step, "parent_assignment": old}, point)})


def pbt_job(tmp_path: Path) -> Recorded:
    """Trials 1-9 of :class:`Recorded`; 10 descends from 1 (step 1), 11 from 10 (step 3),
    12 from 2 with no checkpoint."""
    recorded = Recorded(tmp_path / "job-test", budget=20)
    descend(recorded, 10, 1, 1)
    descend(recorded, 11, 10, 3)
    descend(recorded, 12, 2, None)
    return recorded


def test_the_view_names_each_descent_and_its_trials(tmp_path: Path) -> None:
    recorded = pbt_job(tmp_path)
    view = lineage_view(recorded.controller.trials())
    assert view is not None
    assert [(e["trial"], e["parent"], e["from_step"]) for e in view["edges"]] == [
        (10, 1, 1), (11, 10, 3), (12, 2, None)]
    lr = assignment(1)["lr"]
    assert view["edges"][0]["explored"] == {"lr": {"old": lr, "new": pytest.approx(lr * 1.2)}}
    assert set(view["trials"]) == {"1", "2", "10", "11", "12"}
    assert view["trials"]["1"]["state"] == "COMPLETED"
    assert lineage_view(Recorded(tmp_path / "plain").controller.trials()) is None


def test_the_view_is_bounded(tmp_path: Path) -> None:
    recorded = pbt_job(tmp_path)
    rows = recorded.controller.trials()
    many = [rows[9]] * (LINEAGE_MOST + 5)
    view = lineage_view(many)
    assert view is not None
    assert len(view["edges"]) == LINEAGE_MOST and view["total"] == LINEAGE_MOST + 5


@pytest.mark.integration
@pytest.mark.slow
def test_the_page_draws_the_lineage_tree_at_1366_px(tmp_path: Path, browser: Any) -> None:
    from playwright.sync_api import expect

    recorded = pbt_job(tmp_path)
    sources = {"job-test": LiveJob(recorded.controller, recorded.folder, lambda _: None)}
    server = JobPageServer(lambda: sources, "127.0.0.1", "127.0.0.1", single="job-test")
    server.start()
    try:
        with watched_page(browser, LAPTOP) as (page, errors):
            page.goto(server.job_url("job-test"))
            box = page.locator("#lineage-box")
            expect(box).to_be_visible(timeout=30_000)
            grandchild = page.locator(
                '#lineage > li[data-trial="1"] > ul > li[data-trial="10"] > ul > '
                'li[data-trial="11"]')
            expect(grandchild).to_have_count(1)
            expect(grandchild).to_contain_text("from trial 10's step 3")
            expect(grandchild).to_contain_text("lr ")
            expect(grandchild).to_contain_text("→")
            scratch = page.locator('#lineage > li[data-trial="2"] > ul > li[data-trial="12"]')
            expect(scratch).to_contain_text("from scratch: trial 2 had no checkpoint")
            expect(page.locator("#lineage-note")).to_contain_text(
                "3 trials started from another's checkpoint")
            assert page.evaluate("() => document.documentElement.scrollWidth") \
                <= LAPTOP["width"]
            assert errors == []
    finally:
        server.stop()
