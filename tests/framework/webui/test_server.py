"""The job page's HTTP server: routes, one-line JSON errors, the job token on every POST."""

from __future__ import annotations

from collections.abc import Iterator
import json
from pathlib import Path
import threading
import time

import pytest

from disauto.common.trial_state import TrialState
from disauto.framework.control import ControlChannel
from disauto.framework.control import KillJob
from disauto.framework.control import KillTrial
from disauto.framework.webui.server import JobPageServer
from disauto.framework.webui.sources import LiveJob
from disauto.framework.webui.sources import RecordedJob
from tests.framework.webui.records import TOKEN
from tests.framework.webui.records import Client
from tests.framework.webui.records import Recorded
from tests.framework.webui.records import record_pace


pytestmark = pytest.mark.integration  # starts an HTTP server


@pytest.fixture
def recorded(tmp_path: Path) -> Recorded:
    return Recorded(tmp_path / "job-test")


@pytest.fixture
def live(recorded: Recorded) -> Iterator[tuple[Client, list[list[str]]]]:
    killed: list[list[str]] = []
    source = LiveJob(recorded.controller, recorded.folder, killed.append)
    server = JobPageServer(lambda: {"job-test": source}, "127.0.0.1", "127.0.0.1",
                           single="job-test")
    server.start()
    yield Client(server.port), killed
    server.stop()


def test_the_root_leads_to_the_one_job_and_the_page_is_served(
        live: tuple[Client, list[list[str]]]) -> None:
    client, _ = live
    status, _, headers = client.request("GET", "/")
    assert status == 302 and headers["Location"] == "/jobs/job-test/"
    status, body, headers = client.request("GET", "/jobs/job-test/")
    assert status == 200 and b"plot-history" in body
    assert headers["Content-Type"].startswith("text/html")
    status, body, _ = client.request("GET", "/static/plotly.min.js")
    assert status == 200 and len(body) > 4_000_000
    status, body, _ = client.request("GET", "/static/job.js")
    assert status == 200 and b"api/page" in body


def test_the_data_endpoint_answers_the_views(live: tuple[Client, list[list[str]]]) -> None:
    client, _ = live
    status, data, _ = client.request("GET", "/jobs/job-test/api/page")
    assert status == 200 and data["job"]["state"] == "running" and len(data["trials"]) == 9


@pytest.mark.parametrize(("method", "path", "status", "error"), [
    ("GET", "/nope", 404, "no such page: /nope"),
    ("GET", "/jobs/other/", 404, "no job 'other' here"),
    ("GET", "/jobs/job-test/api/nothing", 404, "no such page: /jobs/job-test/api/nothing"),
    ("GET", "/static/../job.py", 404, "no such file: /static/../job.py"),
    ("GET", "/jobs/job-test/api/trials/99/log", 404, "job job-test has no trial 99"),
    ("GET", "/jobs/job-test/api/trials/1/log?stream=x", 400, "unknown stream 'x': stdout or "
                                                             "stderr"),
    ("GET", "/jobs/job-test/api/trials/1/log?offset=x", 400, "offset must be an integer"),
    ("GET", "/jobs/job-test/api/kill", 405, "GET is not allowed on /jobs/job-test/api/kill"),
    ("POST", "/jobs/job-test/api/page", 405, "POST is not allowed on /jobs/job-test/api/page"),
    ("PUT", "/jobs/job-test/api/kill", 405, "PUT is not allowed on /jobs/job-test/api/kill"),
    ("PATCH", "/jobs/job-test/api/kill", 405, "method not allowed"),
])
def test_bad_requests_are_one_line_json_errors(live: tuple[Client, list[list[str]]],
                                               method: str, path: str, status: int,
                                               error: str) -> None:
    client, _ = live
    answer, data, headers = client.request(method, path, token=TOKEN)
    assert (answer, data) == (status, {"error": error})
    assert headers["Content-Type"] == "application/json"


def test_a_malformed_request_line_is_a_json_error_too(
        live: tuple[Client, list[list[str]]]) -> None:
    import socket

    client, _ = live
    with socket.create_connection(("127.0.0.1", client.port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1 trailing-junk\r\n\r\n")
        answer = sock.recv(4096).decode()
    body = answer.split("\r\n\r\n", 1)[-1]  # an HTTP/0.9-looking request gets no headers
    assert json.loads(body) == {"error": "Bad request version ('trailing-junk')"}
    assert "Traceback" not in answer


@pytest.mark.parametrize("path", ["/jobs/job-test/api/kill",
                                  "/jobs/job-test/api/trials/8/kill"])
def test_posts_need_the_job_token(live: tuple[Client, list[list[str]]], recorded: Recorded,
                                  path: str) -> None:
    client, killed = live
    status, data, _ = client.request("POST", path)
    assert status == 401 and data["error"].startswith("this action needs the job token")
    status, data, _ = client.request("POST", path, token="wrong")
    assert (status, data) == (403, {"error": "wrong job token"})
    assert killed == [] and ControlChannel(recorded.store).unanswered() == []
    assert recorded.store.trial(8).state == TrialState.RUNNING  # type: ignore[union-attr]


def test_the_page_gets_a_refusal_in_the_body_not_as_an_error_status(
        live: tuple[Client, list[list[str]]], recorded: Recorded) -> None:
    # A browser logs every answer of 400 or more as a console error: the page asks for its
    # refusals (a trial that ended meanwhile, no token) in a 200 answer instead.
    client, killed = live
    prefer = {"Prefer": "status-in-body"}
    status, data, headers = client.request("POST", "/jobs/job-test/api/trials/1/kill",
                                            b"{}", TOKEN, prefer)
    assert (status, data) == (200, {"ok": False, "status": 409,
                                    "error": "trial 1 has already ended (COMPLETED)"})
    assert headers["Preference-Applied"] == "status-in-body"
    status, data, _ = client.request("POST", "/jobs/job-test/api/kill", headers={
        "Prefer": "respond-async, status-in-body"})
    assert (status, data["ok"], data["status"]) == (200, False, 401)
    assert data["error"].startswith("this action needs the job token")
    status, data, _ = client.request("POST", "/jobs/job-test/api/trials/8/kill", b"{}", TOKEN,
                                     prefer)
    assert (status, data) == (200, {"ok": True, "message": "trial 8 killed"})
    assert killed == [["trial-0008"]]
    # Only a POST's refusal: a page that is not there is still 404.
    assert client.request("GET", "/nope", headers=prefer)[0] == 404


def test_the_favicon_is_no_404(live: tuple[Client, list[list[str]]]) -> None:
    client, _ = live
    status, body, _ = client.request("GET", "/favicon.ico")
    assert (status, body) == (204, b"")
    status, body, _ = client.request("GET", "/jobs/job-test/")
    assert b'<link rel="icon" href="data:,">' in body


def test_bad_json_bodies_are_refused(live: tuple[Client, list[list[str]]]) -> None:
    client, killed = live
    path = "/jobs/job-test/api/trials/8/kill"
    assert client.request("POST", path, b"{nope", TOKEN)[:2] == (
        400, {"error": "the request body is not valid JSON"})
    assert client.request("POST", path, b"[1]", TOKEN)[:2] == (
        400, {"error": "the request body must be a JSON object"})
    assert client.request("POST", path, b"x" * (65 << 10), TOKEN)[0] == 413
    assert killed == []


def test_with_the_token_a_trial_is_killed_and_recorded(
        live: tuple[Client, list[list[str]]], recorded: Recorded) -> None:
    client, killed = live
    status, data, _ = client.request("POST", "/jobs/job-test/api/trials/8/kill", b"{}", TOKEN)
    assert (status, data) == (200, {"ok": True, "message": "trial 8 killed"})
    assert killed == [["trial-0008"]]
    trial = recorded.store.trial(8)
    assert trial is not None and trial.state == TrialState.KILLED
    assert trial.message == "killed from the job page"
    status, data, _ = client.request("POST", "/jobs/job-test/api/trials/8/kill", token=TOKEN)
    assert (status, data) == (409, {"error": "trial 8 has already ended (KILLED)"})
    status, data, _ = client.request("POST", "/jobs/job-test/api/trials/99/kill", token=TOKEN)
    assert (status, data) == (404, {"error": "trial 99 does not exist"})


def test_with_the_token_the_job_is_killed_as_da_job_kill_does(
        live: tuple[Client, list[list[str]]], recorded: Recorded) -> None:
    client, _ = live
    status, data, _ = client.request("POST", "/jobs/job-test/api/kill", token=TOKEN)
    assert (status, data) == (200, {"ok": True, "message": "killing job job-test"})
    # On the control channel, as da-job kill asks (the run loop ends the job), saying who.
    assert [a.request for a in ControlChannel(recorded.store).unanswered()] == [
        KillJob("killed from the job page")]


def test_the_log_tail_follows_the_collected_file(
        live: tuple[Client, list[list[str]]], recorded: Recorded) -> None:
    client, _ = live
    path = "/jobs/job-test/api/trials/8/log?stream=stdout"
    status, data, _ = client.request("GET", path)
    assert status == 200 and data["exists"] is False
    log = recorded.folder / "logs" / "trial-0008.stdout"
    log.parent.mkdir()
    log.write_text("epoch 1\n")
    data = client.request("GET", path)[1]
    assert (data["data"], data["offset"]) == ("epoch 1\n", 8)
    with log.open("a") as handle:
        handle.write("epoch 2 é\n")
    data = client.request("GET", path + "&offset=8")[1]
    assert data["data"] == "epoch 2 é\n" and data["offset"] == log.stat().st_size


def test_a_recorded_job_serves_the_same_page_and_kills_through_the_record(
        recorded: Recorded) -> None:
    states = {"state": "running"}
    source = RecordedJob("job-test", recorded.folder, lambda: states["state"])
    server = JobPageServer(lambda: {"job-test": source}, "127.0.0.1", "127.0.0.1")
    server.start()
    try:
        client = Client(server.port)
        status, body, _ = client.request("GET", "/")
        assert status == 200 and b"DisAuto jobs" in body
        assert b'<link rel="icon" href="data:,">' in body  # no /favicon.ico asked for
        status, jobs, _ = client.request("GET", "/api/jobs")
        assert status == 200 and [j["job_id"] for j in jobs] == ["job-test"]
        assert client.request("POST", "/jobs/job-test/api/trials/8/kill", token="x")[0] == 403
        status, data, _ = client.request("POST", "/jobs/job-test/api/trials/8/kill",
                                         token=TOKEN)
        assert (status, data["message"]) == (200, "killing trial 8")
        assert [a.request for a in ControlChannel(recorded.store).unanswered()] == [
            KillTrial(8)]
        states["state"] = "ended"
        status, data, _ = client.request("POST", "/jobs/job-test/api/kill", token=TOKEN)
        assert (status, data) == (409, {"error": "job job-test has already ended"})
        assert client.request("GET", "/jobs/job-test/api/page")[1]["job"]["state"] == "ended"
    finally:
        server.stop()


def test_an_open_page_gets_the_final_record_before_the_server_stops(recorded: Recorded) -> None:
    """stop(linger) waits for an open page's next poll (at most ``linger`` s), so the page
    shows how its job ended; with no page open it stops at once."""
    source = LiveJob(recorded.controller, recorded.folder, lambda ids: None)
    server = JobPageServer(lambda: {"job-test": source}, "127.0.0.1", "127.0.0.1",
                           single="job-test")
    server.start()
    started = time.monotonic()
    server.stop(linger=5.0)  # no page has polled: nothing to wait for
    assert time.monotonic() - started < 1.0

    server = JobPageServer(lambda: {"job-test": source}, "127.0.0.1", "127.0.0.1",
                           single="job-test")
    server.start()
    client = Client(server.port)
    assert client.request("GET", "/jobs/job-test/api/page")[0] == 200  # a page is open
    polled: list[int] = []
    poll = threading.Timer(0.5, lambda: polled.append(
        client.request("GET", "/jobs/job-test/api/page")[0]))
    poll.start()
    started = time.monotonic()
    server.stop(linger=5.0)
    waited = time.monotonic() - started
    poll.join()
    assert polled == [200] and 0.4 < waited < 4.0  # it served that poll, then stopped
    started = time.monotonic()
    late = JobPageServer(lambda: {"job-test": source}, "127.0.0.1", "127.0.0.1",
                         single="job-test")
    late.start()
    Client(late.port).request("GET", "/jobs/job-test/api/page")
    late.stop(linger=0.3)  # the page never comes back: at most the linger
    assert time.monotonic() - started < 2.0


def test_the_page_data_carries_the_rate_and_eta(live: tuple[Client, list[list[str]]],
                                                 recorded: Recorded) -> None:
    client, _ = live
    # Before a trial has a measured time the rate is known (trials ended) and the ETA not.
    pace = client.request("GET", "/jobs/job-test/api/page")[1]["job"]["pace"]
    assert set(pace) == {"trials_per_minute", "eta_seconds", "eta_at", "trial_seconds",
                         "window_seconds"}
    record_pace(recorded, time.time())  # 0.6 trials a minute, trials of 60 s, an ETA of 60 s
    source = RecordedJob("job-test", recorded.folder, lambda: "running")
    server = JobPageServer(lambda: {"job-test": source}, "127.0.0.1", "127.0.0.1")
    server.start()
    try:
        status, data, _ = Client(server.port).request("GET", "/jobs/job-test/api/page")
    finally:
        server.stop()
    pace = data["job"]["pace"]
    assert status == 200 and pace["trials_per_minute"] == 0.6
    assert (pace["trial_seconds"], pace["eta_seconds"]) == (60.0, 60.0)
    assert pace["eta_at"] == pytest.approx(data["generated_at"] + pace["eta_seconds"], abs=1)
