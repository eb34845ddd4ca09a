"""Reading Mesos' refusal to run a task as its user (framework/_job/task_user.py)."""

from __future__ import annotations

from disauto.framework._job import task_user
from disauto.testing.inprocess import task_status


MESSAGE = ("Failed to create executor directory '/var/lib/mesos/slaves/S0/frameworks/F/"
           "executors/trial-0001/runs/C': Failed to chown directory to '{user}': {why}")


def test_a_missing_user_is_read_from_mesos_message() -> None:
    refusal = task_user.read(task_status(
        "trial-0001", "TASK_LOST", agent_id="S0",
        message=MESSAGE.format(user="ghost", why="No such user 'ghost'")))
    assert refusal == task_user.UserRefusal("ghost", "No such user 'ghost'", "S0")
    assert refusal.describe().startswith(
        "Mesos cannot run the job's tasks as user 'ghost': agent S0 has no such user; pass "
        "--user NAME")


def test_other_failures_are_no_refusal() -> None:
    for message in ("Command exited with status 1", "Executor terminated",
                    "Failed to create executor directory '/x': Failed to create directory: "
                    "No space left on device", ""):
        assert task_user.read(task_status("t", "TASK_FAILED", message=message)) is None


def test_an_unknown_reason_still_names_the_user_and_the_flag() -> None:
    refusal = task_user.read(task_status(
        "t", "TASK_DROPPED", message=MESSAGE.format(user="bob", why="Read-only file system")))
    assert refusal is not None
    assert "user 'bob'" in refusal.describe() and "--user NAME" in refusal.describe()
    assert "Read-only file system" in refusal.describe()
