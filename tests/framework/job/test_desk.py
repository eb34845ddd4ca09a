"""The run loop's reader of the control channel: each request carried out once through the
controller, and its typed answer in the record (a real store and controller, no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.common.trial_state import TrialState
from disauto.framework import _meta as meta
from disauto.framework._job.desk import ControlDesk
from disauto.framework.control import Answer
from disauto.framework.control import ControlChannel
from disauto.framework.control import KillJob
from disauto.framework.control import KillTrial
from disauto.framework.control import Request
from disauto.framework.control import UpdateSearch
from disauto.protos import framework_pb2
from tests.framework.webui.records import Recorded


class Desk:
    """A recorded job (tests/framework/webui/records.py), its channel and the run loop's desk."""

    def __init__(self, folder: Path) -> None:
        self.job = Recorded(folder)
        self.channel = ControlChannel(self.job.store)
        self.killed: list[list[str]] = []
        self.desk = ControlDesk(self.channel, self.job.controller, self.killed.append)

    def ask(self, request: Request) -> Answer | None:
        """Ask, let the run loop serve once, and read the answer."""
        asked = self.channel.ask(request)
        self.desk.serve()
        return self.channel.answer_of(asked)


@pytest.fixture
def desk(tmp_path: Path) -> Desk:
    return Desk(tmp_path / "job")


def test_a_kill_ends_the_job_as_da_job_kill_says(desk: Desk) -> None:
    assert desk.ask(KillJob()) == Answer(True, "killing job job-test")
    assert desk.job.controller.outcome == (framework_pb2.JOB_KILLED, "killed with da-job kill")
    assert desk.job.store.get_meta(meta.OUTCOME) == "JOB_KILLED"
    # A second kill while the job ends is no error: the asker waits for the end as before.
    assert desk.ask(KillJob()) == Answer(True, "job job-test is already ending (JOB_KILLED)")


def test_a_kill_from_the_page_is_recorded_as_the_pages(desk: Desk) -> None:
    # A kill from the job page, or from an earlier version's record (no message: da-job's).
    assert desk.ask(KillJob("killed from the job page")) == Answer(True, "killing job job-test")
    assert desk.job.controller.outcome == (framework_pb2.JOB_KILLED, "killed from the job page")
    assert desk.job.store.get_meta(meta.OUTCOME_MESSAGE) == "killed from the job page"


def test_a_kill_request_of_an_earlier_version_is_da_job_kills(desk: Desk) -> None:
    asked = desk.job.store.add_control_request("kill_job", "{}")
    desk.desk.serve()
    assert desk.channel.answer_of(asked) == Answer(True, "killing job job-test")
    assert desk.job.controller.outcome == (framework_pb2.JOB_KILLED, "killed with da-job kill")


def test_a_trial_kill_is_carried_out_and_its_task_killed(desk: Desk) -> None:
    running = desk.job.running
    assert desk.ask(KillTrial(running)) == Answer(True, f"trial {running} killed")
    assert desk.killed == [[f"trial-{running:04d}"]]
    trial = desk.job.store.trial(running)
    assert trial is not None and trial.state == TrialState.KILLED
    assert trial.message == "killed from the job page"
    assert desk.ask(KillTrial(desk.job.pending)) == Answer(True, f"trial {desk.job.pending} "
                                                                 "killed")
    assert desk.killed == [[f"trial-{running:04d}"]]  # a pending trial has no task


@pytest.mark.parametrize(("number", "why"), [
    (99, "trial 99 does not exist"),
    (1, "trial 1 has already ended (COMPLETED)"),
])
def test_a_trial_that_cannot_be_killed_is_answered_why(desk: Desk, number: int,
                                                       why: str) -> None:
    assert desk.ask(KillTrial(number)) == Answer(False, why)
    assert desk.killed == []


def test_an_update_is_applied_once_and_a_refusal_says_why(desk: Desk) -> None:
    assert desk.desk.serve() == 0  # nothing asked
    assert desk.ask(UpdateSearch(max_trials=25)) == Answer(True, "trial budget 20 → 25")
    assert desk.desk.serve() == 0  # answered: not applied again
    specs = [e for e in desk.job.controller.events_after(0, timeout=0)[0]
             if e.WhichOneof("change") == "spec"]
    assert len(specs) == 1 and specs[0].spec.max_trials == 25
    refused = desk.ask(UpdateSearch(max_trials=2))
    assert refused is not None and not refused.ok
    assert "the smallest valid budget is 9" in refused.message
    config = desk.job.store.get_meta(meta.CONFIG)
    assert config is not None and config.search.max_trials == 25


@pytest.mark.parametrize("parallelism", [0, -2])
def test_an_update_to_a_parallelism_below_one_is_refused_and_changes_nothing(
        desk: Desk, parallelism: int) -> None:
    before = desk.job.store.get_meta(meta.CONFIG)
    refused = desk.ask(UpdateSearch(max_trials=25, parallelism=parallelism))
    assert refused == Answer(False, f"a parallelism of {parallelism} runs no trial; it must "
                                    "be at least 1")
    assert desk.job.store.get_meta(meta.CONFIG) == before


def test_requests_are_served_in_the_order_asked(desk: Desk) -> None:
    first = desk.channel.ask(UpdateSearch(parallelism=6))
    second = desk.channel.ask(KillJob())
    third = desk.channel.ask(UpdateSearch(parallelism=7))  # after the kill: the job ended
    assert desk.desk.serve() == 3
    assert desk.channel.answer_of(first) == Answer(True, "parallelism 4 → 6")
    assert desk.channel.answer_of(second) == Answer(True, "killing job job-test")
    assert desk.channel.answer_of(third) == Answer(False, "the job has ended")
