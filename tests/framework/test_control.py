"""The control channel through a real record: typed requests written by one store (da-job's) are
read by another (the framework's) and answered once; what cannot be read is answered with one
line and never acted on; a record of an earlier version, with its control keys in meta, stays
readable by da-job and none of its old requests is acted on."""

from __future__ import annotations

from pathlib import Path
import sqlite3
import threading
import time

import pytest

from disauto.common.trial_state import TrialState
from disauto.framework._job.desk import ControlDesk
from disauto.framework._store import JobStore
from disauto.framework.control import Answer
from disauto.framework.control import ControlChannel
from disauto.framework.control import KillJob
from disauto.framework.control import KillTrial
from disauto.framework.control import NoAnswerError
from disauto.framework.control import Request
from disauto.framework.control import UpdateSearch
from disauto.submit import job_cli
from tests.framework.webui.records import Recorded


REQUESTS: list[Request] = [KillJob(), KillJob("killed from the job page"), KillTrial(7),
                           UpdateSearch(max_trials=8), UpdateSearch(parallelism=3),
                           UpdateSearch(12, 4)]


@pytest.fixture
def recorded(tmp_path: Path) -> Recorded:
    return Recorded(tmp_path / "home" / "jobs" / "job-test")


def test_typed_requests_round_trip_through_the_record(tmp_path: Path) -> None:
    asking = JobStore(tmp_path / "job.db")  # da-job's
    reading = JobStore(tmp_path / "job.db")  # the framework's, another connection
    ids = [ControlChannel(asking).ask(request) for request in REQUESTS]
    found = ControlChannel(reading).unanswered()
    assert [(a.id, a.request, a.error) for a in found] == [
        (i, r, "") for i, r in zip(ids, REQUESTS, strict=True)]
    assert ControlChannel(asking).answer_of(ids[0]) is None
    ControlChannel(reading).answer(ids[0], Answer(True, "killing job j\nsecond line"))
    ControlChannel(reading).answer(ids[0], Answer(False, "a second answer"))  # ignored
    assert ControlChannel(asking).answer_of(ids[0]) == Answer(True, "killing job j")
    assert [a.id for a in ControlChannel(reading).unanswered()] == ids[1:]
    asking.close()
    reading.close()


@pytest.mark.parametrize(("kind", "body", "error"), [
    ("pause_job", "{}", "unknown request 'pause_job' (this framework takes kill_job, "
                        "kill_trial, update_search)"),
    ("kill_trial", "{not json", "garbled kill_trial request: Expecting property name"),
    ("kill_trial", '{"number": "8"}', "garbled kill_trial request: number must be an "
                                      "integer, not '8'"),
    ("kill_trial", "{}", "garbled kill_trial request: number must be an integer, not None"),
    ("kill_trial", '{"number": true}', "garbled kill_trial request: number must be an "
                                       "integer, not True"),
    ("update_search", "[8]", "garbled update_search request: not a JSON object"),
    ("kill_job", '{"message": ""}', "garbled kill_job request: message must be one line of "
                                    "1 to 200 characters, not ''"),
    ("kill_job", '{"message": "a\\nb"}', "garbled kill_job request: message must be one line"),
    ("update_search", '{"max_trials": 2.5}', "garbled update_search request: max_trials "
                                             "must be an integer, not 2.5"),
])
def test_what_cannot_be_read_is_answered_in_one_line_and_not_acted_on(
        recorded: Recorded, kind: str, body: str, error: str) -> None:
    asked = recorded.store.add_control_request(kind, body)  # another version, or a broken one
    before = [(t.number, t.state) for t in recorded.store.trials()]
    killed: list[list[str]] = []
    desk = ControlDesk(ControlChannel(recorded.store), recorded.controller, killed.append)
    assert desk.serve() == 1
    answer = ControlChannel(recorded.store).answer_of(asked)
    assert answer is not None and not answer.ok and answer.message.startswith(error)
    assert "\n" not in answer.message and "Traceback" not in answer.message
    assert [(t.number, t.state) for t in recorded.store.trials()] == before
    assert killed == [] and recorded.controller.outcome is None
    assert desk.serve() == 0  # answered: not read again


def test_the_asker_waits_for_the_answer_or_says_why_none_came(recorded: Recorded) -> None:
    channel = ControlChannel(recorded.store)
    desk = ControlDesk(channel, recorded.controller, lambda task_ids: None)
    asked = channel.ask(UpdateSearch(parallelism=5))
    threading.Timer(0.3, desk.serve).start()  # the run loop, a moment later
    assert channel.wait(asked, 10, running=lambda: True) == Answer(
        True, "parallelism 4 → 5")
    unanswered = channel.ask(KillTrial(8))
    started = time.monotonic()
    with pytest.raises(NoAnswerError) as late:
        channel.wait(unanswered, 0.3, running=lambda: True)
    assert not late.value.ended and time.monotonic() - started < 3
    with pytest.raises(NoAnswerError) as gone:
        channel.wait(unanswered, 10, running=lambda: False)
    assert gone.value.ended


def _as_an_earlier_version_left_it(recorded: Recorded) -> None:
    """The record as the previous version wrote it: no control table, its requests in meta."""
    recorded.store.close()
    with sqlite3.connect(recorded.folder / "job.db") as db:
        db.execute("DROP TABLE control")
        db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [
            ("control", "kill"), ("kill_trials", "[8]"),
            ("update_request", '{"id": "abc", "max_trials": 30, "parallelism": null}'),
            ("update_result", ""), ("pid", "0"), ("state", "RUNNING")])


def test_a_record_of_an_earlier_version_stays_readable_and_its_requests_are_not_acted_on(
        recorded: Recorded, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _as_an_earlier_version_left_it(recorded)
    monkeypatch.setenv("DISAUTO_HOME", str(recorded.folder.parent.parent))
    for command in (["list"], ["status", "job-test"], ["results", "job-test"],
                    ["status", "job-test", "--json"]):
        assert job_cli.main(command) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "job job-test (" in out and "interrupted" in out and "trial-0008" in out
    store = JobStore(recorded.folder / "job.db")  # opening it adds the control table
    assert ControlChannel(store).unanswered() == []  # the old keys are not requests
    killed: list[list[str]] = []
    assert ControlDesk(ControlChannel(store), recorded.controller, killed.append).serve() == 0
    assert killed == [] and recorded.controller.outcome is None
    trial = store.trial(8)
    assert trial is not None and trial.state == TrialState.RUNNING
    assert recorded.controller.config.search.max_trials == 20
    store.close()
