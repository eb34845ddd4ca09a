"""What a Mesos master's ACLs refuse a job, in one line each.

A master with ``--acls`` (apache/mesos ``src/authorizer/local/authorizer.cpp``) refuses:

* a SUBSCRIBE whose principal the ``register_frameworks`` ACLs do not allow every role of:
  the scheduler gets ERROR ``Not authorized to register framework <id> with roles { ... }``
  (``checkSubscribeAuthorization``, src/master/master.cpp) and the stream closes. pymesos
  would subscribe again forever; the job ends at once instead (:func:`registration_refusal`).
* a task whose user the ``run_tasks`` ACLs do not allow the framework's principal: TASK_ERROR,
  SOURCE_MASTER, ``REASON_TASK_UNAUTHORIZED``, ``Not authorized to launch task <id> of
  framework <id> under user '<user>'`` (``Master::_accept``). Every launch of the job would get
  the same answer, so the job ends at once rather than retrying (:func:`launch_refusal`).

Both end the job ``UNSCHEDULABLE``: ``da-submit`` prints the line and exits 2, as for a task
no agent can hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any


REGISTRATION_REFUSED = "Not authorized to register framework"
LAUNCH_REFUSED_REASON = "REASON_TASK_UNAUTHORIZED"


def registration_refusal(message: str, roles: Sequence[str]) -> str | None:
    """The job's one line for a master ERROR refusing its registration, else None."""
    if not message.startswith(REGISTRATION_REFUSED):
        return None
    return (f"the Mesos master refused to register the framework (its register_frameworks "
            f"ACL): {message!r}: this job's principal may not subscribe with the role(s) "
            f"{', '.join(repr(r) for r in roles)}; use a --role the ACL allows it, or ask the "
            "cluster's operator")


def launch_refusal(status: Mapping[str, Any]) -> str | None:
    """The job's one line for a task the master refused to launch under its ACLs, else
    None."""
    if status.get("state") != "TASK_ERROR" or status.get("reason") != LAUNCH_REFUSED_REASON:
        return None
    task = str((status.get("task_id") or {}).get("value", ""))
    return (f"the Mesos master refused to launch {task} (its run_tasks ACL): "
            f"{status.get('message', '')!r}: this job's principal may not run tasks as that "
            "user; run da-submit as a user the ACL allows, or ask the cluster's operator")
