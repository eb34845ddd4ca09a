"""The job page as a person sees it, in a real browser (Chromium through Playwright), served
from a constructed record by a real page server: the trials table inside a laptop's window,
a loading sign before the data and the plots, no request the server must refuse (a job
without GPUs) and none after the job ended, and plots that read well."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
import re
import time
from typing import Any

import pytest

from disauto.common.trial_state import TrialState
from disauto.framework import _meta as meta
from disauto.framework.webui.server import JobPageServer
from disauto.framework.webui.sources import LiveJob
from disauto.framework.webui.sources import RecordedJob
from disauto.protos import framework_pb2
from tests.browser import box_of
from tests.framework.webui.records import TOKEN
from tests.framework.webui.records import Recorded
from tests.framework.webui.records import extra_name
from tests.framework.webui.records import record_pace
from tests.framework.webui.records import record_telemetry


pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a server and a browser

LAPTOP = {"width": 1366, "height": 768}
AGENT_ID = "04fbafe2-db01-4433-89a2-0b6909d05e8e-S0"
FAILURE_MESSAGE = ("Command exited with status 1; stderr: "
           "Traceback (most recent call last): |   File \"/home/u/.disauto/jobs/j/cluster/slaves/"
           f"{AGENT_ID}/frameworks/04fbafe2-db01-4433-89a2-0b6909d05e8e-0000/executors/"
           "trial-0014/runs/925b64d6-2996-4671-8e89-7a0fa20c9f37/train.py\", line 3, in "
           "<module> |     x = p[\"hidden\"] | KeyError: 'hidden'")
FAILURE = f"TASK_FAILED REASON_COMMAND_EXECUTOR_FAILED: {FAILURE_MESSAGE}"


@dataclass
class Served:
    recorded: Recorded
    server: JobPageServer
    url: str


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """A job of 12 completed trials (and a pruned, a failed, a running and a pending one),
    with six long-named parameters more, its agent ids and a failure as long as real ones."""
    recorded = Recorded(tmp_path / "job-test", completed=12, extra=6, agent=AGENT_ID,
                        failure=FAILURE_MESSAGE,
                        failure_reason="REASON_COMMAND_EXECUTOR_FAILED")
    record_telemetry(recorded)  # memory and CPU: no GPU in this job
    source = LiveJob(recorded.controller, recorded.folder, lambda _: None)
    server = JobPageServer(lambda: {"job-test": source}, "127.0.0.1", "127.0.0.1",
                           single="job-test")
    url = server.job_url("job-test")
    recorded.store.set_meta(meta.WEBUI_URL, url)  # the framework's own server, as da-submit's
    server.start()
    yield Served(recorded, server, url)
    server.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=LAPTOP)
    opened = context.new_page()
    yield opened
    context.close()


def watch(page: Any) -> dict[str, list[str]]:
    """What the page asks and what goes wrong, as it happens: requests (path and query),
    console errors, failed requests and answers of 400 or more."""
    seen: dict[str, list[str]] = {"requests": [], "errors": [], "failed": [], "refused": []}
    page.on("request", lambda r: seen["requests"].append(re.sub(r"^http://[^/]+", "", r.url)))
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("requestfailed", lambda r: seen["failed"].append(r.url))
    page.on("response", lambda r: seen["refused"].append(f"{r.status} {r.url}")
            if r.status >= 400 else None)
    return seen


def test_state_and_actions_stay_in_a_laptops_window(served: Served, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(served.url)
    running = served.recorded.running
    row = page.locator(f'#trials tr[data-number="{running}"]')
    expect(row).to_be_visible(timeout=30_000)
    for cell in (row.locator("td.actions"), row.locator('td[data-key="state"]'),
                 row.locator("button.kill-trial")):
        box = box_of(cell)
        assert 0 <= box["x"] and box["x"] + box["width"] <= LAPTOP["width"]
    # The table is wider than the window: it scrolls in its box, the actions stay put.
    wrap = page.locator(".table-wrap")
    assert page.evaluate("() => { const w = document.querySelector('.table-wrap');"
                         " return w.scrollWidth > w.clientWidth; }")
    wrap.evaluate("w => { w.scrollLeft = w.scrollWidth; }")
    box = box_of(row.locator("td.actions"))
    assert box["x"] + box["width"] <= LAPTOP["width"]
    assert box_of(row.locator('td[data-key="state"]'))["x"] >= 0
    # The agent is its short name (the whole id on hover); the failure shows its cause first.
    agent = row.locator('td[data-key="agent"]')
    expect(agent).to_have_text("…-S0")
    expect(agent).to_have_attribute("title", AGENT_ID)
    message = page.locator('#trials tr[data-number="14"] td[data-key="message"]')
    expect(message).to_contain_text("KeyError: 'hidden' (TASK_FAILED")
    assert "/runs/" not in str(message.text_content())
    expect(message).to_have_attribute("title", FAILURE)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= LAPTOP["width"]


def test_killing_a_trial_asks_first(served: Served, page: Any) -> None:
    from playwright.sync_api import expect

    asked: list[str] = []
    answers = iter([False, True])

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        if next(answers):
            dialog.accept()
        else:
            dialog.dismiss()

    page.on("dialog", answer)
    page.goto(f"{served.url}#token={TOKEN}")
    running = served.recorded.running
    kill = page.locator(f'#trials tr[data-number="{running}"] button.kill-trial')
    kill.click()
    assert asked and asked[0].startswith(f"Kill trial {running}?")
    time.sleep(1.0)
    states = {t.number: t.state for t in served.recorded.store.trials()}
    assert states[running] == TrialState.RUNNING  # dismissed: nothing was asked
    kill.click()
    expect(page.locator(f'#trials tr[data-number="{running}"]')).to_have_attribute(
        "data-state", "KILLED", timeout=15_000)
    assert len(asked) == 2


def test_a_loading_sign_then_the_trials_before_plotly(served: Served, page: Any) -> None:
    from playwright.sync_api import expect

    held: dict[str, Any] = {}
    page.route("**/static/plotly.min.js", lambda route: held.__setitem__("plotly", route))
    page.route("**/api/page*", lambda route: held.setdefault("page", route)
               if "page" not in held else route.continue_())
    page.goto(served.url, wait_until="domcontentloaded")
    expect(page.locator("#loading")).to_be_visible()
    expect(page.locator("#loading")).to_have_text("Loading the job…")
    expect(page.locator("#plots-note")).to_be_visible()
    deadline = time.monotonic() + 15
    while "page" not in held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    held["page"].continue_()
    # The data came, Plotly not yet: the facts and the table show, the plots say they load.
    expect(page.locator('#trials tr[data-number="1"]')).to_be_visible(timeout=15_000)
    expect(page.locator("#loading")).to_be_hidden()
    assert page.evaluate("() => window.Plotly === undefined")
    expect(page.locator("#plots-note")).to_have_text("Loading the plots (plotly.min.js)…")
    held["plotly"].continue_()
    expect(page.locator("#plots-note")).to_be_hidden(timeout=30_000)
    page.wait_for_function("document.getElementById('plot-history').data !== undefined")


def test_a_job_without_gpus_asks_for_nothing_it_lacks_nor_after_it_ended(
        served: Served, page: Any) -> None:
    from playwright.sync_api import expect

    seen = watch(page)
    page.goto(served.url)
    expect(page.locator("#plot-memory")).to_have_attribute("data-points", "10",
                                                           timeout=30_000)
    page.wait_for_timeout(4000)  # a few polls of a running job
    assert any("/api/page?" in r for r in seen["requests"])
    assert not [r for r in seen["requests"] if "gpu" in r]
    served.recorded.controller.finish(framework_pb2.BUDGET_SPENT, "the budget is spent")
    expect(page.locator("#job-state")).to_have_text("ended", timeout=15_000)
    served.server.stop(linger=3.0)  # as da-submit stops it
    asked = len(seen["requests"])
    page.wait_for_timeout(6000)
    assert seen["requests"][asked:] == []  # nothing asked of a server that is gone
    expect(page.locator("#action-message")).to_contain_text("da-job ui serves its record")
    assert (seen["errors"], seen["failed"], seen["refused"]) == ([], [], [])


def test_the_plots_read_well(served: Served, page: Any) -> None:
    page.goto(served.url)
    page.wait_for_function("document.getElementById('plot-importance').data !== undefined",
                           timeout=30_000)
    drawn = page.evaluate("""() => {
        const plot = (id) => document.getElementById(id);
        const ticks = (id) => [...plot(id).querySelectorAll('.xtick text')]
            .map(t => t.textContent);
        const inside = (id) => {
            const box = plot(id).getBoundingClientRect();
            return [...plot(id).querySelectorAll('.ytick text')].every(
                t => t.getBoundingClientRect().left >= box.left);
        };
        const parallel = plot('plot-parallel').data[0].dimensions;
        return {
            intermediate_legend: plot('plot-intermediate')._fullLayout.showlegend,
            intermediate_height: plot('plot-intermediate')._fullLayout._size.h,
            history_ticks: ticks('plot-history'), step_ticks: ticks('plot-intermediate'),
            importance_labels_whole: inside('plot-importance'),
            importance_labels: [...plot('plot-importance').querySelectorAll('.ytick text')]
                .map(t => t.textContent),
            lr: parallel.find(d => d.label.startsWith('lr')),
            note: document.getElementById('importance-note').textContent,
        };
    }""")
    assert drawn["intermediate_legend"] is False and drawn["intermediate_height"] > 200
    assert all(re.fullmatch(r"\d+", tick) for tick in drawn["history_ticks"]), drawn
    assert all(re.fullmatch(r"\d+", tick) for tick in drawn["step_ticks"]), drawn
    assert drawn["importance_labels_whole"], drawn["importance_labels"]
    assert extra_name(0) in drawn["importance_labels"] or len(drawn["importance_labels"]) == 9
    lr = drawn["lr"]
    assert lr["label"] == "lr (log)" and lr["ticktext"][:2] == ["0.002", "0.005"]
    assert min(lr["values"]) == pytest.approx(-2.69897, abs=1e-4)  # log10(0.002)
    assert drawn["note"] == ("Optuna's get_param_importances over 12 completed trials and 1 "
                             "pruned (each counted with its last intermediate value).")


def test_the_facts_show_the_rate_and_eta_without_a_console_error(tmp_path: Path,
                                                                  page: Any) -> None:
    from playwright.sync_api import expect

    recorded = Recorded(tmp_path / "job-test")
    record_pace(recorded, time.time())  # 0.6 trials a minute, an ETA of 60 s, for minutes
    source = RecordedJob("job-test", recorded.folder, lambda: "running")
    server = JobPageServer(lambda: {"job-test": source}, "127.0.0.1", "127.0.0.1",
                           single="job-test")
    server.start()
    try:
        seen = watch(page)
        page.goto(server.job_url("job-test"))
        fact = page.locator("#job-facts div")
        eta = fact.filter(has=page.locator("dt", has_text=re.compile("^ETA$"))).locator("dd")
        expect(eta).to_have_text(re.compile(r"^1m0s \(about \d\d:\d\d"), timeout=30_000)
        rate = fact.filter(has=page.locator("dt", has_text=re.compile("^rate$"))).locator("dd")
        expect(rate).to_have_text("0.6 trials/min")
        box = box_of(eta)
        assert 0 <= box["x"] and box["x"] + box["width"] <= LAPTOP["width"]
        assert box["y"] + box["height"] <= LAPTOP["height"]  # in the first screenful
        page.wait_for_function("document.getElementById('plot-history').data !== undefined",
                               timeout=30_000)
        assert (seen["errors"], seen["failed"], seen["refused"]) == ([], [], [])
    finally:
        server.stop()
