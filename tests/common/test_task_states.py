"""Mesos task states: terminal as Mesos says, lost as a job reads it."""

from __future__ import annotations

from disauto.common.task_states import TERMINAL_TASK_STATES
from disauto.common.task_states import has_ended_for_framework
from disauto.common.task_states import was_lost


def test_terminal_states_are_mesos_is_terminal_state() -> None:
    assert TERMINAL_TASK_STATES == {
        "TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_ERROR", "TASK_LOST",
        "TASK_DROPPED", "TASK_GONE", "TASK_GONE_BY_OPERATOR"}
    for state in ("TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING",
                  "TASK_UNREACHABLE", "TASK_UNKNOWN"):
        assert state not in TERMINAL_TASK_STATES


def test_a_framework_stops_waiting_for_an_unknown_task() -> None:
    assert has_ended_for_framework("TASK_UNKNOWN")
    assert not has_ended_for_framework("TASK_UNREACHABLE")


def test_lost_means_the_cluster_ended_the_task() -> None:
    assert was_lost("TASK_GONE") and was_lost("TASK_UNKNOWN")
    assert was_lost("TASK_FAILED", "REASON_AGENT_REMOVED")
    assert not was_lost("TASK_FAILED", "REASON_COMMAND_EXECUTOR_FAILED")
    assert not was_lost("TASK_KILLED") and not was_lost("TASK_ERROR")


def test_an_agent_reregistering_does_not_make_a_scripts_end_a_loss() -> None:
    """Mesos forwards a re-registered agent's task state with REASON_AGENT_REREGISTERED,
    whatever that state is: a task the script failed or finished ended by the script, not by
    the cluster. Only a lost state is a loss with that reason."""
    assert not was_lost("TASK_FAILED", "REASON_AGENT_REREGISTERED")
    assert not was_lost("TASK_FINISHED", "REASON_AGENT_REREGISTERED")
    assert was_lost("TASK_LOST", "REASON_AGENT_REREGISTERED")
    assert was_lost("TASK_GONE", "REASON_AGENT_REREGISTERED")
