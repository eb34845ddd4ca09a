"""The one line a job ends with when a Mesos master's ACLs refuse it."""

from __future__ import annotations

from disauto.framework._authorization import launch_refusal
from disauto.framework._authorization import registration_refusal


def test_a_refused_registration_names_the_acl_and_the_roles() -> None:
    line = registration_refusal("Not authorized to register framework  with roles { ml }",
                                ["ml"])
    assert line is not None and "\n" not in line
    assert "register_frameworks ACL" in line and "{ ml }" in line and "'ml'" in line
    assert registration_refusal("Framework has been removed", ["ml"]) is None


def test_a_refused_launch_names_the_acl_and_the_task() -> None:
    status = {"state": "TASK_ERROR", "reason": "REASON_TASK_UNAUTHORIZED",
              "task_id": {"value": "trial-0001"},
              "message": "Not authorized to launch task trial-0001 of framework F under user "
                         "'bob'"}
    line = launch_refusal(status)
    assert line is not None and "\n" not in line
    assert "run_tasks ACL" in line and "trial-0001" in line and "under user 'bob'" in line
    assert launch_refusal({**status, "reason": "REASON_TASK_INVALID"}) is None
    assert launch_refusal({**status, "state": "TASK_FAILED"}) is None
