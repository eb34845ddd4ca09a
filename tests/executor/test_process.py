from __future__ import annotations

from disauto.executor.process import describe_exit


def test_exit_is_worded_as_mesos_command_executor() -> None:
    assert describe_exit(0) == "Command exited with status 0"
    assert describe_exit(3) == "Command exited with status 3"
    assert describe_exit(-9) == "Command terminated with signal SIGKILL"
