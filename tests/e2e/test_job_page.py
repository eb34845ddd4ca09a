"""The job page in a real browser (Chromium through Playwright): a running ``--master local``
job's page, its live updates, plots, log tail and kill buttons; ``da-job ui`` and report.html
for the ended job; and the page of a job on a ``da-cluster`` master, linked from its state.

Screenshots go to ``SCREENSHOTS`` (build/screenshots); docs/img keeps copies for the README.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import json
import os
from pathlib import Path
import re
import sqlite3
import subprocess
import sys
import time
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request
from urllib.request import urlopen

import pytest

from tests.browser import box_of
from tests.conftest import SCREENSHOTS
from tests.e2e.conftest import ROOT
from tests.e2e.conftest import DaCluster
from tests.e2e.conftest import master_state


pytestmark = [pytest.mark.slow, pytest.mark.integration]

# Prints a line every 0.3 s (with what the test writes into `say`), reports a step each time,
# and ends with its final result once the test releases it (release-N or release-all); at least
# one step, however early it is released (a loaded machine starts it late).
RUNNER = '''
import os, pathlib, time
from apprunner_sdk import get_params, report
control = pathlib.Path({control!r})
number = os.environ["DISAUTO_TRIAL_NUMBER"]
x = float(get_params()["x"])
accuracy = 1.0 - (x - 0.3) ** 2
step = 0
while True:
    said = (control / "say").read_text() if (control / "say").exists() else ""
    print(f"trial {{number}} tick {{step}} {{said}}", flush=True)
    report(accuracy=accuracy * (step + 1) / (step + 2), step=step)
    step += 1
    if (control / f"release-{{number}}").exists() or (control / "release-all").exists():
        break
    time.sleep(0.3)
report(accuracy=accuracy, final=True)
'''
PAGE_LINE = r"^  (http://\S+/)#token=(\S+)$"
"""The line that gives the job page with the job token: its URL and the token."""
HISTORY_POINTS = "((document.getElementById('plot-history').data || [])[0] || {x: []}).x.length"
"""The points of "Objective by trial" (0 until Plotly, which loads on its own, has drawn it)."""


@pytest.fixture
def control(tmp_path: Path) -> Path:
    folder = tmp_path / "control"
    folder.mkdir()
    (tmp_path / "runner.py").write_text(RUNNER.format(control=str(folder)))
    (tmp_path / "params.json").write_text(json.dumps(
        {"parameters": [{"name": "x", "type": "bound", "value": [0.0, 1.0]},
                        {"name": "k", "type": "choice", "value": ["a", "b"]}]}))
    return folder


def flags(tmp_path: Path, *extra: str) -> list[str]:
    return ["--app-name", "page-e2e", "--files", str(tmp_path / "runner.py"),
            "--app-runner-launch-cmd", "python runner.py",
            "--app-runner-cpus", "0.5", "--app-runner-memory", "128M",
            "--app-core-cpus", "0.5", "--app-core-memory", "128M",
            "--tuning-type", "random-search", "--tuning-parameters",
            str(tmp_path / "params.json"), "--seed", "5", *extra]


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1800})
    opened = context.new_page()
    opened.on("dialog", lambda dialog: dialog.accept())
    yield opened
    context.close()


def shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def row(page: Any, number: int, state: str, timeout: float = 60.0) -> None:
    page.wait_for_selector(f'#trials tr[data-number="{number}"][data-state="{state}"]',
                           timeout=timeout * 1000)


def plot_points(page: Any) -> dict[str, Any]:
    """What the plots hold, read from Plotly's own data on each plot's element."""
    return page.evaluate("""() => {
        const data = (id) => document.getElementById(id).data || [];
        return {
            history: data("plot-history")[0].x.length,
            best: data("plot-history")[1].y,
            time: data("plot-time")[0].x.length,
            intermediate: data("plot-intermediate").map((t) => t.name),
            parallel: data("plot-parallel")[0].dimensions.map((d) => d.values.length),
            importance_note: document.getElementById("importance-note").textContent,
            rows: document.querySelectorAll("#trials tbody tr").length,
        };
    }""")


def record(job_dir: Path, number: int) -> tuple[str, str]:
    with sqlite3.connect(job_dir / "job.db") as db:
        state, message = db.execute("SELECT state, message FROM trials WHERE number = ?",
                                    (number,)).fetchone()
    return str(state), str(message)


def test_a_running_jobs_page_end_to_end(submit: Any, tmp_path: Path, control: Path,
                                        page: Any) -> None:
    job = submit(*flags(tmp_path, "--trail-steps", "8", "--parallelism", "2"))
    url, token = job.wait_for_line(PAGE_LINE, timeout=90).groups()
    job_dir = job.job_dir()
    assert f"da-submit: job page {url}" in job.output
    assert url.startswith("http://127.0.0.1:") and token == (job_dir / "job.token").read_text()

    # Opened read-only (no token): the running trials are listed.
    page.goto(url)
    page.evaluate("window.__notReloaded = true")
    row(page, 1, "RUNNING")
    row(page, 2, "RUNNING")
    assert page.text_content("#job-state") == "running"
    assert page.text_content("#token-state") == "read-only"

    # Trials end: the table follows without a reload.
    (control / "release-1").touch()
    row(page, 1, "COMPLETED")
    row(page, 3, "RUNNING")
    (control / "release-3").touch()
    row(page, 3, "COMPLETED")
    assert page.evaluate("window.__notReloaded") is True

    # A trial's log follows what it prints after the page opened.
    page.click('#trials tr[data-number="2"] button.show-log')
    said = f"said-after-opening-{time.time():.0f}"
    (control / "say").write_text(said)
    page.wait_for_function(f"document.getElementById('log').textContent.includes({said!r})",
                           timeout=30_000)
    assert page.text_content("#log-title") == "trial 2"

    # Without the token nothing is killed.
    page.click('#trials tr[data-number="2"] button.kill-trial')
    page.wait_for_function(
        "document.getElementById('action-message').textContent.includes('needs the job token')")
    assert record(job_dir, 2)[0] == "RUNNING"
    page.fill("#token", "not-the-token")
    page.click("#token-form button")
    page.click('#trials tr[data-number="2"] button.kill-trial')
    page.wait_for_function(
        "document.getElementById('action-message').textContent === 'wrong job token'")
    assert record(job_dir, 2)[0] == "RUNNING"

    # With it, the trial is killed, recorded, and its slot refilled.
    page.fill("#token", token)
    page.click("#token-form button")
    assert page.text_content("#token-state") == "token set: actions enabled"
    page.click('#trials tr[data-number="2"] button.kill-trial')
    row(page, 2, "KILLED")
    assert record(job_dir, 2) == ("KILLED", "killed from the job page")
    row(page, 5, "RUNNING")  # trials 4 and 5 hold the two slots

    # The plots hold one point per completed trial.
    page.wait_for_function(f"{HISTORY_POINTS} === 2")
    points = plot_points(page)
    assert points["history"] == points["time"] == 2
    assert points["parallel"] == [2, 2, 2]  # x, k and the objective
    assert len(points["best"]) == 2 and points["best"][1] >= points["best"][0]
    assert {"trial 1", "trial 2", "trial 3"} <= set(points["intermediate"])
    assert "needs at least 4 completed or pruned trials (2 completed, 0 pruned so far)" \
        in points["importance_note"]
    assert page.locator("#telemetry-note").text_content().startswith("Resource use")
    shot(page, "job-page")

    # Killing the job (the same path as da-job kill) ends it: exit 5, outcome JOB_KILLED.
    page.click("#kill-job")
    assert job.wait(60) == 5
    with sqlite3.connect(job_dir / "job.db") as db:
        outcome = dict(db.execute("SELECT key, value FROM meta WHERE key = 'outcome'"))
    assert outcome == {"outcome": "JOB_KILLED"}
    assert record(job_dir, 4)[0] == "KILLED"

    # report.html opens from disk, offline, and shows the trials and plots.
    report = job_dir / "report.html"
    page.goto(report.as_uri())
    page.wait_for_selector('#trials tr[data-number="3"][data-state="COMPLETED"]')
    points = plot_points(page)
    assert points["rows"] == 5 and points["history"] == 2
    assert page.text_content("#job-state") == "ended"
    assert page.is_hidden("#actions") and page.is_visible("#offline-note")
    shot(page, "report-html")

    # da-job ui serves the ended job from its record.
    _da_job_ui(page, job.home, job_dir.name)


def test_a_cpu_only_jobs_page_from_start_to_end_has_no_console_error(
        submit: Any, tmp_path: Path, control: Path, browser: Any) -> None:
    """In a laptop's window (1,366 px): the trials' actions stay inside it, nothing the page
    asks is refused (this job has no GPU samples) and nothing is asked once the job ended."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    problems: list[str] = []
    asked: list[str] = []
    page.on("console", lambda m: problems.append(f"console: {m.text}")
            if m.type == "error" else None)
    page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
    page.on("response", lambda r: problems.append(f"{r.status}: {r.url}")
            if r.status >= 400 else None)
    page.on("request", lambda r: asked.append(r.url))
    try:
        job = submit(*flags(tmp_path, "--trail-steps", "3", "--parallelism", "2"))
        url, _ = job.wait_for_line(PAGE_LINE, timeout=90).groups()
        page.goto(url)
        row(page, 1, "RUNNING")
        expect(page.locator("#plot-memory")).to_have_attribute("data-points", re.compile(
            r"[1-9]\d*"), timeout=30_000)  # the running trial's measured memory
        box = box_of(page.locator('#trials tr[data-number="1"] td.actions'))
        assert box["x"] + box["width"] <= 1366
        (control / "release-all").touch()
        assert job.wait(90) == 0
        expect(page.locator("#job-state")).to_have_text("ended", timeout=15_000)
        count = len(asked)
        page.wait_for_timeout(5000)
        assert asked[count:] == []
        assert not [u for u in asked if "gpu" in u]
        assert problems == []
        shot(page, "job-page-ended")
    finally:
        context.close()


@contextlib.contextmanager
def _da_job_ui_server(home: Path) -> Iterator[str]:
    """A ``da-job ui`` process on any free port; its root URL."""
    environ = {**os.environ, "DISAUTO_HOME": str(home),
               "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen(
        [sys.executable, "-m", "disauto.submit.job_cli", "ui", "--port", "0"], env=environ,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        said = process.stdout.readline() + process.stdout.readline()
        match = re.search(r"open in a browser:\n  (http://127\.0\.0\.1:\d+/)\n", said)
        assert match, said
        yield match.group(1)
    finally:
        process.terminate()
        process.wait(10)


def _post(url: str, token: str) -> tuple[int, Any]:
    request = Request(url, data=b"{}", method="POST",
                      headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
            return response.status, json.loads(response.read())
    except HTTPError as error:
        return error.code, json.loads(error.read())


def _da_job_ui(page: Any, home: Path, job_id: str) -> None:
    with _da_job_ui_server(home) as root:
        page.goto(root)
        page.click(f"text={job_id}")
        row(page, 3, "COMPLETED")
        assert page.text_content("#job-state") == "ended"
        assert "job killed" in page.text_content("#job-outcome")
        page.wait_for_function(f"{HISTORY_POINTS} === 2")
        shot(page, "da-job-ui")
        page.goto(root)
        page.wait_for_selector(f"#jobs a:has-text('{job_id}')")
        shot(page, "da-job-ui-index")


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
def test_the_page_of_a_job_on_a_da_cluster_master(submit: Any, tmp_path: Path, control: Path,
                                                  page: Any, da_cluster: DaCluster) -> None:
    address = da_cluster.start()
    job = submit(*flags(tmp_path, "--master", address, "--trail-steps", "4",
                        "--parallelism", "1"))
    url, _ = job.wait_for_line(PAGE_LINE, timeout=90).groups()
    # The master's state carries the page as the framework's webui_url (the Mesos UI links it).
    frameworks = master_state(f"http://{address}")["frameworks"]
    assert [f["webui_url"] for f in frameworks if f["name"] == "page-e2e"] == [url]
    page.goto(url)
    row(page, 1, "RUNNING")
    for number in (1, 2, 3):
        (control / f"release-{number}").touch()
    row(page, 3, "COMPLETED")
    row(page, 4, "RUNNING")
    page.wait_for_function(f"{HISTORY_POINTS} === 3")
    assert page.text_content("#job-state") == "running"
    shot(page, "job-page-da-cluster")

    # da-job ui, another process, kills trial 4 through the record; the run loop carries it out.
    job_dir = job.job_dir()
    with _da_job_ui_server(job.home) as root:
        refused = _post(f"{root}jobs/{job_dir.name}/api/trials/4/kill", "")
        assert refused == (401, {"error": "this action needs the job token (Authorization: "
                                          "Bearer <token>; it is in the job folder's job.token)"})
        answer = _post(f"{root}jobs/{job_dir.name}/api/trials/4/kill",
                       (job_dir / "job.token").read_text())
        assert answer == (200, {"ok": True, "message": "killing trial 4"})
    row(page, 4, "KILLED")
    assert record(job_dir, 4) == ("KILLED", "killed from the job page")
    assert job.wait(60) == 0  # the budget of 4 is spent; the killed trial is not a failure
