"""``da-job update`` against job records in a temporary ``$DISAUTO_HOME``, no process started.

A "running" job's record names this test's own process (alive on this host); a thread plays its
framework, answering the request on the record's control channel with the framework's own code
(a JobController and the run loop's ControlDesk).
"""

from __future__ import annotations

from collections.abc import Iterator
import os
from pathlib import Path
import socket
import threading
import time

import pytest

from disauto.common.processes import start_time
from disauto.common.space import CategoricalParam
from disauto.common.space import SearchSpace
from disauto.framework import _meta as meta
from disauto.framework._job import JobController
from disauto.framework._job.desk import ControlDesk
from disauto.framework._spec import JobConfig
from disauto.framework._store import JobStore
from disauto.framework.control import Asked
from disauto.framework.control import ControlChannel
from disauto.framework.control import UpdateSearch
from disauto.protos import framework_pb2
from disauto.submit import job_cli
from disauto.testing.inprocess import job_config


JOB = "update-job"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DISAUTO_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def record(home: Path, *, state: str = "running", submitted: int = 2,
           config: JobConfig | None = None) -> JobStore:
    """A job's record: ``running`` (this process), ``interrupted`` or ``ended``."""
    config = config or job_config(job_id=JOB, max_trials=4, parallelism=1)
    store = JobStore(home / "jobs" / JOB / "job.db")
    alive = state == "running"
    store.set_meta_many({meta.JOB_ID: JOB, meta.CONFIG: config, meta.STARTED_AT: 1.0,
                         meta.PID: os.getpid() if alive else 0, meta.HOST: socket.gethostname(),
                         meta.PID_START: start_time(os.getpid()) if alive else "",
                         meta.STATE: meta.ENDED if state == "ended" else meta.RUNNING,
                         meta.OUTCOME: "BUDGET_SPENT" if state == "ended" else ""})
    store.add_trials([(n, {"lr": 0.01 * n, "layers": 1, "act": "relu"}, 0)
                      for n in range(1, submitted + 1)])
    return store


def recorded(store: JobStore) -> tuple[int, int]:
    config = store.get_meta(meta.CONFIG)
    assert config is not None
    search = config.search
    return int(search.max_trials), int(search.parallelism)


def asked(store: JobStore) -> list[Asked]:
    """The requests on the job's control channel not answered yet."""
    return ControlChannel(store).unanswered()


def da_job(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = job_cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def framework(home: Path) -> Iterator[JobController]:
    """The running job's framework, answering update requests every 50 ms."""
    store = record(home)
    config = store.get_meta(meta.CONFIG)
    assert config is not None
    controller = JobController(config, store, "t")
    desk = ControlDesk(ControlChannel(store), controller, kill_tasks=lambda task_ids: None)
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(0.05):
            desk.serve()

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    yield controller
    stop.set()
    thread.join(5)


def test_a_running_job_takes_the_change_and_says_what_changed(
        framework: JobController, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = da_job(capsys, "update", JOB[:8], "--trial-steps", "8",
                            "--parallelism", "2")
    assert (code, err) == (0, "")
    assert out == f"da-job: job {JOB} updated: trial budget 4 → 8, parallelism 1 → 2\n"
    assert recorded(framework.store) == (8, 2)
    assert (framework.config.search.max_trials, framework.config.search.parallelism) == (8, 2)
    code, out, _ = da_job(capsys, "status", JOB)
    assert code == 0 and "trials: 0/8 done, parallelism 2;" in out


def test_a_budget_below_the_trials_submitted_is_a_one_line_error_and_changes_nothing(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = record(home, submitted=3)
    code, out, err = da_job(capsys, "update", JOB, "--trial-steps", "2", "--parallelism", "2")
    assert (code, out) == (2, "")
    assert err == ("da-job: error: a trial budget of 2 is below the 3 trials already "
                   "submitted; the smallest valid budget is 3\n")
    assert recorded(store) == (4, 1) and asked(store) == []


@pytest.mark.parametrize(("args", "error"), [
    ((), "give --trial-steps N, --parallelism P or both"),
    (("--trial-steps", "0"), "--trail-steps: invalid value '0': expected an integer > 0 and "
                             "<= 1e+06"),
    (("--trial-steps", "2.5"), "--trail-steps: invalid value '2.5': expected an integer"),
    (("--parallelism", "x"), "--parallelism: invalid value 'x': expected an integer > 0"),
    (("--parallelism", "20000"), "--parallelism: invalid value '20000'"),
])
def test_bad_values_are_one_line_errors(home: Path, capsys: pytest.CaptureFixture[str],
                                        args: tuple[str, ...], error: str) -> None:
    store = record(home)
    code, out, err = da_job(capsys, "update", JOB, *args)
    assert code == 2 and out == "" and err.startswith(f"da-job: error: {error}")
    assert len(err.splitlines()) == 1 and asked(store) == []


def test_grid_search_budget_is_bounded_by_its_grid(home: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    grid = SearchSpace((CategoricalParam("act", ("relu", "tanh", "gelu")),))
    store = record(home, submitted=1, config=job_config(
        job_id=JOB, space=grid, tuning_type="grid-search", max_trials=2, parallelism=1))
    code, _, err = da_job(capsys, "update", JOB, "--trial-steps", "4")
    assert code == 2 and err == ("da-job: error: --trail-steps: invalid value 4: grid-search "
                                 "has 3 points to try; the largest valid budget is 3\n")
    assert recorded(store) == (2, 1)


def test_an_interrupted_job_keeps_the_change_for_resume(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = record(home, state="interrupted")
    code, out, err = da_job(capsys, "update", JOB, "--parallelism", "3")
    assert (code, err) == (0, "")
    assert out == (f"da-job: job {JOB} is interrupted; its record now says parallelism 1 → 3 "
                   "(da-job resume carries it on with it)\n")
    assert recorded(store) == (4, 3)


def test_an_ended_job_is_not_updated(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record(home, state="ended")
    code, _, err = da_job(capsys, "update", JOB, "--trial-steps", "9")
    assert code == 2
    assert err == f"da-job: error: job {JOB} has ended (BUDGET_SPENT); nothing to update\n"


def test_the_framework_refusal_is_printed_with_its_reason(
        framework: JobController, capsys: pytest.CaptureFixture[str]) -> None:
    framework.finish(framework_pb2.STOPPED, "stopped")  # ended; its process not yet gone
    code, _, err = da_job(capsys, "update", JOB, "--trial-steps", "9")
    assert code == 2
    assert err == f"da-job: error: job {JOB} refused the change: the job has ended\n"


def test_no_answer_within_the_wait_is_an_error(home: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    store = record(home)
    started = time.monotonic()
    code, _, err = da_job(capsys, "update", JOB, "--trial-steps", "9", "--wait", "0.3")
    assert code == 1 and time.monotonic() - started < 5
    assert err == (f"da-job: error: job {JOB} did not answer within 0.3 s; its framework "
                   "applies the change when it reads it\n")
    # Left for the framework, which applies it when it reads it:
    assert [a.request for a in asked(store)] == [UpdateSearch(max_trials=9)]
