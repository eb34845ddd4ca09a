"""A recorded failure as a person reads it: the cause first, sandbox paths relative."""

from __future__ import annotations

from disauto.common import messages


RUN = ("/home/u/.disauto/jobs/m-1/cluster/slaves/04fbafe2-db01-4433-89a2-0b6909d05e8e-S0/"
       "frameworks/04fbafe2-db01-4433-89a2-0b6909d05e8e-0000/executors/trial-0001/runs/"
       "925b64d6-2996-4671-8e89-7a0fa20c9f37")
MESSAGE = ("TASK_FAILED REASON_COMMAND_EXECUTOR_FAILED: Command exited with status 1; stderr: "
           f'Traceback (most recent call last): |   File "{RUN}/bad.py", line 3, in <module> | '
           '    print(p["hidden"]) |           ~^^^^^^^^^^ | KeyError: \'hidden\'')


def test_the_cause_is_the_last_line_of_stderr() -> None:
    assert messages.cause(MESSAGE) == "KeyError: 'hidden'"
    assert messages.cause("TASK_LOST: the agent was removed") == \
        "TASK_LOST: the agent was removed"


def test_cause_first_keeps_the_rest_with_short_paths() -> None:
    assert messages.cause_first(MESSAGE) == (
        "KeyError: 'hidden' (TASK_FAILED REASON_COMMAND_EXECUTOR_FAILED: Command exited with "
        'status 1; stderr: Traceback (most recent call last): | File "bad.py", line 3, in '
        '<module> | print(p["hidden"]) | ~^^^^^^^^^^)')
    assert messages.cause_first("finished without a result") == "finished without a result"


def test_a_warm_slots_task_folder_is_part_of_its_sandbox() -> None:
    text = f'File "{RUN}/tasks/trial-0002/train.py", line 1'
    assert messages.short_sandbox_paths(text) == 'File "train.py", line 1'
