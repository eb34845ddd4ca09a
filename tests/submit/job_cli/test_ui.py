"""``da-job ui``'s view of $DISAUTO_HOME and its flags (no server started here)."""

from __future__ import annotations

import os
from pathlib import Path
import re
import subprocess
import sys
import time

import pytest

from disauto.framework import _meta as meta
from disauto.submit import job_cli
from disauto.submit.job_cli import ui
from disauto.submit.run import job_page_lines
from disauto.submit.ui import RecordedJobs
from tests.framework.webui.records import Recorded


def test_the_jobs_are_the_folders_with_a_record(tmp_path: Path) -> None:
    Recorded(tmp_path / "jobs" / "job-a")
    Recorded(tmp_path / "jobs" / "job-b")
    (tmp_path / "jobs" / "not-a-job").mkdir()
    jobs = RecordedJobs(tmp_path / "jobs")
    assert list(jobs) == ["job-a", "job-b"] and len(jobs) == 2
    assert jobs["job-a"].folder == tmp_path / "jobs" / "job-a"
    for name in ("not-a-job", "..", ".", "job-a/../job-b", "nothing"):
        assert jobs.get(name) is None
    assert list(RecordedJobs(tmp_path / "none")) == []


def test_a_recorded_jobs_state_comes_from_its_process(tmp_path: Path) -> None:
    recorded = Recorded(tmp_path / "jobs" / "job-a")
    recorded.store.set_meta_many({meta.PID: 999999999, meta.HOST: "elsewhere"})
    record = RecordedJobs(tmp_path / "jobs")["job-a"].record()
    assert record.state == "interrupted" and len(record.trials) == 9


def test_a_bad_port_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert job_cli.main(["ui", "--port", "70000"]) == 2
    assert capsys.readouterr().err == "da-job: error: --port must be 0-65535, got 70000\n"
    assert job_cli.main(["ui", "--port", "x"]) == 2


def test_the_printed_link_carries_the_token_in_the_fragment_only() -> None:
    lines = job_page_lines("http://127.0.0.1:9/jobs/j/", "secret").splitlines()
    assert lines == ["da-submit: job page http://127.0.0.1:9/jobs/j/",
                     "da-submit: to kill trials or the job from it, open it with the job token:",
                     "  http://127.0.0.1:9/jobs/j/#token=secret"]
    assert "?" not in "".join(lines) and max(len(line) for line in lines[:2]) <= 80


def test_ui_is_a_da_job_command() -> None:
    args = job_cli.build_parser().parse_args(["ui", "--port", "8080", "--host", "0.0.0.0"])
    assert (args.command, args.port, args.host) == ("ui", 8080, "0.0.0.0")
    assert ui.COMMAND in job_cli.COMMANDS and ui.COMMAND.run is ui.run


@pytest.mark.integration  # starts da-job ui and the "browser"
def test_open_hands_the_address_to_the_browser(tmp_path: Path) -> None:
    opened = tmp_path / "opened"
    environ = {**os.environ, "DISAUTO_HOME": str(tmp_path / "home"), "COLUMNS": "80",
               "BROWSER": f"sh -c 'echo %s > {opened}'"}
    process = subprocess.Popen([sys.executable, "-m", "disauto.submit.job_cli", "ui", "--open"],
                               env=environ, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first, second = process.stdout.readline(), process.stdout.readline()
        assert first.startswith("da-job ui: 0 jobs of /tmp/")
        assert first.endswith("/home/jobs, served until Ctrl-C; open in a browser:\n")
        assert len(first) <= 81
        assert re.fullmatch(r"  http://127\.0\.0\.1:\d+/\n", second)
        deadline = time.monotonic() + 10
        while not (opened.exists() and opened.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert opened.read_text().strip() == second.strip()
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.integration
def test_the_index_says_the_front_of_a_job_of_several_objectives(tmp_path: Path) -> None:
    from disauto.framework.webui.server import JobPageServer
    from tests.framework.webui.records import Client
    from tests.framework.webui.records import ParetoRecorded

    ParetoRecorded(tmp_path / "jobs" / "job-p", state=meta.ENDED)
    Recorded(tmp_path / "jobs" / "job-a")
    jobs = RecordedJobs(tmp_path / "jobs")
    server = JobPageServer(lambda: jobs, "127.0.0.1", "127.0.0.1")
    server.start()
    try:
        status, listed, _ = Client(server.port).request("GET", "/api/jobs")
    finally:
        server.stop()
    assert status == 200
    shown = {job["job_id"]: job for job in listed}
    assert shown["job-p"]["front"] == {"size": 4, "first": [4, 7, 2]}
    assert shown["job-test"]["front"] is None and shown["job-test"]["best"] is not None
