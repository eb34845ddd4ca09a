"""Mesos task states as DisAuto reads them: one definition for the masters, agents and jobs.

``TERMINAL_TASK_STATES`` is Mesos' own ``isTerminalState``: after one of these a task never
changes, and the master forgets it once acknowledged. ``TASK_UNKNOWN`` is not terminal for Mesos
(the agent may come back), but a job cannot wait for that: for a framework a task in
``LOST_TASK_STATES``, or ended for one of ``LOST_TASK_REASONS``, was lost by the cluster rather
than failed by the program it ran.
"""

from __future__ import annotations


TERMINAL_TASK_STATES = frozenset({
    "TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_ERROR", "TASK_LOST", "TASK_DROPPED",
    "TASK_GONE", "TASK_GONE_BY_OPERATOR",
})

LOST_TASK_STATES = frozenset({
    "TASK_LOST", "TASK_GONE", "TASK_DROPPED", "TASK_UNKNOWN", "TASK_GONE_BY_OPERATOR",
})

LOST_TASK_REASONS = frozenset({
    "REASON_AGENT_REMOVED", "REASON_AGENT_RESTARTED", "REASON_AGENT_DISCONNECTED",
    "REASON_SLAVE_REMOVED", "REASON_SLAVE_RESTARTED", "REASON_SLAVE_DISCONNECTED",
})
"""Reasons that say the cluster ended the task, whatever its state. Not
``REASON_AGENT_REREGISTERED``: with it Mesos 1.11 (``Master::__reregisterSlave``) forwards a
re-registered agent's task in the state the agent reports, so a TASK_FAILED or TASK_FINISHED
with it is the script's own end (a task the agent lost comes with a lost state)."""


def has_ended_for_framework(state: str) -> bool:
    """Whether a framework stops waiting for a task in ``state`` (terminal, or unknown)."""
    return state in TERMINAL_TASK_STATES or state == "TASK_UNKNOWN"


def was_lost(state: str, reason: str = "") -> bool:
    """Whether the cluster, not the task's program, ended the task."""
    return state in LOST_TASK_STATES or reason in LOST_TASK_REASONS
