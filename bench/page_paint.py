"""The job page's first paint of a recorded job, in a real browser (issue 38, target 4).

``python -m bench.page_paint FOLDER`` serves the job folder ``FOLDER`` as ``da-job ui`` does
(its record read into the page's mirror on the first call, in this process), opens the page in
headless Chromium (Playwright, as the UI tests) and reads the page's own Performance API mark
``disauto:table-painted`` (``framework/webui/static/job.js``: the browser has painted the
facts and the table): milliseconds since the navigation began. The first load reads the cold
record; ``--loads`` more read the mirror. Printed with this process's CPU seconds over each load
(the server's share: the browser is another process) and the load average around it, since a
wall-clock figure on a shared machine says little. The 10,000-trial record of
``bench.scale --trials 10000`` (or of the tests' ``big_record``) is the target's.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import os
from pathlib import Path
import subprocess
import sys
import time

from disauto.framework.webui.server import JobPageServer
from disauto.framework.webui.sources import RecordedJob
from disauto.framework.webui.views import compute_importance_in_worker
from disauto.framework.webui.views import stop_importance_worker


ROOT = Path(__file__).resolve().parents[1]
PAINTED = ("() => new Promise((done) => { const find = () => { const m = performance"
           ".getEntriesByName('disauto:table-painted'); if (m.length) done(m[0].startTime);"
           " else setTimeout(find, 20); }; find(); })")
TIMELINE = ("() => [['DOM', performance.getEntriesByType('navigation')[0]"
            ".domContentLoadedEventEnd], ...performance.getEntriesByType('resource')"
            ".filter((r) => /api\\/page|\\.js/.test(r.name)).map((r) => [r.name.split('/')"
            ".pop().split('?')[0], r.startTime, r.responseEnd])].map((e) => e[0] + ' ' + "
            "e.slice(1).map((t) => Math.round(t)).join('-') + ' ms')")
"""What the page loaded when (ms since navigation): its scripts and its first data call."""
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _chromium() -> str:
    found = subprocess.run(["bash", str(ROOT / "tools" / "ensure_browser.sh")],
                           capture_output=True, text=True, timeout=900, check=False)
    if found.returncode != 0:
        raise SystemExit(f"page_paint: no browser: {found.stderr.strip()}")
    return found.stdout.strip().splitlines()[-1]


def measure(folder: Path, loads: int) -> list[str]:
    """One line a load: the table painted (ms since navigation), this process's CPU, the load."""
    from playwright.sync_api import sync_playwright

    job_id = folder.name
    compute_importance_in_worker()  # as da-job ui does
    server = JobPageServer(lambda: {job_id: RecordedJob(job_id, folder, lambda: "ended")},
                           "127.0.0.1", "127.0.0.1", single=job_id)
    server.start()
    lines = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=_chromium(), headless=True,
                                                 args=FLAGS)
            for n in range(1 + loads):
                context = browser.new_context(viewport={"width": 1366, "height": 768})
                page = context.new_page()
                before, load = time.process_time(), _load()
                page.goto(server.job_url(job_id), wait_until="domcontentloaded",
                          timeout=120_000)
                painted = float(page.evaluate(PAINTED))
                cpu = time.process_time() - before
                lines.append(f"{'cold' if n == 0 else 'warm'} load: table painted "
                             f"{painted:.0f} ms after navigation (target <= 2000 ms at 10,000 "
                             f"trials); server CPU {cpu:.2f} s; load {load} -> {_load()}; "
                             + ", ".join(page.evaluate(TIMELINE)))
                context.close()
            browser.close()
    finally:
        server.stop()
        stop_importance_worker()
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a job folder (its job.db)")
    parser.add_argument("--loads", type=int, default=2, help="loads after the first (warm)")
    args = parser.parse_args(argv)
    if not (args.folder / "job.db").is_file():
        print(f"page_paint: {args.folder} holds no job.db (give a job folder)", file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for line in measure(args.folder.resolve(), args.loads):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
