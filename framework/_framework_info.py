"""What a job's framework tells Mesos about itself: its FrameworkInfo.

Each capability is asked for because a production Mesos 1.11 cluster needs it
(apache/mesos ``include/mesos/v1/mesos.proto``, ``FrameworkInfo.Capability``):

* ``MULTI_ROLE``: the framework subscribes with ``roles`` (``--role``, repeatable; ``*``
  without one), so that it is offered what is reserved for them (a team's GPU agents) besides
  unreserved resources. Offers then carry ``allocation_info``, and every resource of a task
  and of a new executor must carry its offer's (``framework/_offer_claims.py``).
* ``RESERVATION_REFINEMENT``: offers speak the post-refinement format, a ``reservations``
  stack per resource, whose last role is the one a reservation is for
  (``framework/_offers.py``).
* ``PARTITION_AWARE``: a task on an agent cut off by a network partition is TASK_UNREACHABLE,
  not TASK_LOST, and keeps running: the trial waits for it (``--unreachable-timeout``) instead
  of starting over (``framework/_job/status.py``); a task of a gone agent is TASK_GONE or
  TASK_GONE_BY_OPERATOR.
* ``TASK_KILLING_STATE``: a killed task (a drain, the job's own kill) says TASK_KILLING while
  its kill grace period runs; it is not an end.
* ``GPU_RESOURCES``: pymesos adds it (a GPU agent offers only to frameworks that have it).

``checkpoint`` is always true: an agent checkpoints the tasks of a checkpointing framework, so
a restart of the ``mesos-agent`` process (an upgrade, a crash) recovers them instead of
killing every trial on it (apache/mesos ``docs/agent-recovery.md``). Mesos keeps the value a
framework was first registered with (``src/master/validation.cpp`` ``validateUpdate`` refuses a
change in UPDATE_FRAMEWORK), so a resumed framework sends what its record says it has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from disauto.common import task_env


CAPABILITIES = ("MULTI_ROLE", "RESERVATION_REFINEMENT", "PARTITION_AWARE", "TASK_KILLING_STATE")
"""The capabilities every job's framework has (pymesos adds GPU_RESOURCES)."""


def framework_info(*, user: str, name: str, hostname: str, failover_timeout: float,
                   webui_url: str, job_id: str, framework_address: str,
                   roles: Sequence[str], framework_id: str = "",
                   checkpoint: bool = True) -> dict[str, Any]:
    """The FrameworkInfo of a job's framework (JSON, as pymesos sends it).

    Args:
        roles: the roles it subscribes with (``JobConfig.subscribed_roles``).
        framework_id: a resumed job's FrameworkID (Mesos failover: the same framework, its
            tasks kept); "" for a new framework.
        checkpoint: whether its agents checkpoint its tasks (see the module's docstring).
    """
    info: dict[str, Any] = {
        "user": user,
        "name": name,
        "hostname": hostname,
        "failover_timeout": failover_timeout,
        "webui_url": webui_url,
        "roles": list(roles),
        "capabilities": [{"type": kind} for kind in CAPABILITIES],
        "checkpoint": checkpoint,
        # The address travels in a label, so that AppCore and runners whose framework moved
        # (resumed on another port) find it through the master (common.rendezvous).
        "labels": {"labels": [
            {"key": "disauto.job", "value": job_id},
            {"key": task_env.FRAMEWORK_ADDRESS_LABEL, "value": framework_address},
        ]},
    }
    if framework_id:
        info["id"] = {"value": framework_id}
    return info
