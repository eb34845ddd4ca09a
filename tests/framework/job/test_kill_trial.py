"""JobController.kill_trial: a trial killed by the user (the job page)."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.common.trial_state import TrialState
from disauto.framework._errors import FailedPreconditionError
from disauto.framework._errors import NotFoundError
from disauto.protos import framework_pb2
from tests.framework.webui.records import Recorded


@pytest.fixture
def recorded(tmp_path: Path) -> Recorded:
    return Recorded(tmp_path / "job")


def test_a_running_trial_is_killed_at_once_and_its_task_returned(recorded: Recorded) -> None:
    before = recorded.controller.events_after(0, 0)[0][-1].sequence
    tasks = recorded.controller.kill_trial(recorded.running, "killed from the job page")
    assert tasks == ["trial-0008"]
    trial = recorded.store.trial(recorded.running)
    assert trial is not None and trial.state == TrialState.KILLED
    assert trial.message == "killed from the job page" and trial.ended_at is not None
    events, _ = recorded.controller.events_after(before, 0)  # AppCore refills its slot
    assert [e.trial.number for e in events] == [recorded.running]
    assert "trial-0008" in recorded.controller.tasks.live_task_ids()  # until Mesos says it ended
    recorded.status(recorded.running, "TASK_KILLED")
    assert "trial-0008" not in recorded.controller.tasks.live_task_ids()
    assert recorded.store.trial(recorded.running).state == TrialState.KILLED  # type: ignore[union-attr]


def test_a_pending_trial_is_killed_without_a_task(recorded: Recorded) -> None:
    assert recorded.controller.kill_trial(recorded.pending) == []
    assert recorded.store.trial(recorded.pending).state == TrialState.KILLED  # type: ignore[union-attr]
    assert all(r.trial_number != recorded.pending
               for r in recorded.controller.launch_requests())


def test_a_killed_trial_is_not_a_failure(recorded: Recorded) -> None:
    failed = recorded.controller.progress().failed
    recorded.controller.kill_trial(recorded.running)
    assert recorded.controller.progress().failed == failed


@pytest.mark.parametrize(("number", "error", "text"), [
    (99, NotFoundError, "trial 99 does not exist"),
    (1, FailedPreconditionError, "trial 1 has already ended (COMPLETED)"),
    (6, FailedPreconditionError, "trial 6 has already ended (PRUNED)"),
])
def test_what_cannot_be_killed(recorded: Recorded, number: int, error: type[Exception],
                               text: str) -> None:
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)")):
        recorded.controller.kill_trial(number)


def test_a_trial_with_its_final_result_is_not_killed(recorded: Recorded) -> None:
    recorded.report(recorded.running, 0.9, final=True)
    with pytest.raises(FailedPreconditionError, match="already reported its final result"):
        recorded.controller.kill_trial(recorded.running)


def test_nothing_is_killed_once_the_job_ended(recorded: Recorded) -> None:
    recorded.controller.finish(framework_pb2.JOB_KILLED, "killed")
    with pytest.raises(FailedPreconditionError, match="the job has ended"):
        recorded.controller.kill_trial(recorded.running)
