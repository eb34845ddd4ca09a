"""A task Mesos could not run as the job's user (``--user``, the framework's user).

A Mesos agent with ``--switch_user`` (its default) runs every task as its framework's user: it
makes the task's sandbox and gives it to that user before anything runs. When it cannot (the
agent's machine has no such user; or the agent is not root and the user is another than its
own) the task never starts: the agent drops it (TASK_DROPPED, TASK_LOST to a framework that is
not PARTITION_AWARE; REASON_EXECUTOR_TERMINATED) with stout's words in its message
(apache/mesos 1.11 ``src/slave/slave.cpp`` ``Slave::__run``, ``src/slave/paths.cpp``
``createSandboxDirectory``)::

    Failed to create executor directory '<sandbox>': Failed to chown directory to 'ghost':
    No such user 'ghost'

Running it again would fail the same way, so such a task is no lost one: :func:`read` finds
the refusal, and :meth:`UserRefusal.describe` says in one line what to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import re
from typing import Any


SANDBOX_REFUSED = re.compile(r"^Failed to create executor directory '[^']*': "
                             r"Failed to chown directory to '(?P<user>[^']*)': (?P<why>.*)$",
                             re.DOTALL)
"""Mesos' message of a task whose sandbox its user could not have."""
NO_SUCH_USER = "No such user"
"""How stout says the machine has no such user (``os::chown(user, path)``)."""
NOT_PERMITTED = "Operation not permitted"
"""EPERM: the agent is not root, and the user is not its own."""


@dataclass(frozen=True)
class UserRefusal:
    """An agent could not run a task as its user."""

    user: str
    why: str
    """stout's reason: ``No such user 'x'``, ``Operation not permitted``, ..."""
    agent_id: str

    def describe(self) -> str:
        """One line: which user, which agent, why, and what to do."""
        where = f"agent {self.agent_id}" if self.agent_id else "its agent"
        head = f"Mesos cannot run the job's tasks as user '{self.user}': "
        if self.why.startswith(NO_SUCH_USER):
            return (head + f"{where} has no such user; pass --user NAME of a user the agents "
                    "have (default: your login), or run the agents with --switch_user=false")
        if self.why.startswith(NOT_PERMITTED):
            return (head + f"{where} is not root and cannot switch users ({self.why}); pass "
                    "--user NAME of the user the agent runs as, or run the agent as root")
        return head + f"{where} could not give it the task's sandbox ({self.why}); pass " \
            "--user NAME of another user"


def read(status: Mapping[str, Any]) -> UserRefusal | None:
    """The refusal a terminal TaskStatus reports, if it is one (see the module docstring)."""
    match = SANDBOX_REFUSED.match(str(status.get("message", "")))
    if match is None:
        return None
    agent = status.get("agent_id")
    agent_id = str(agent.get("value", "")) if isinstance(agent, Mapping) else ""
    return UserRefusal(match["user"], match["why"].strip(), agent_id)
