"""A cluster's agents run each task as its user, as Mesos agents with ``--switch_user`` do
(the agent's side: tests/localmesos/agent/test_switch_user.py): a real cluster, a real
framework, the task's own word (``id -u``) read back through ``/files``."""

from __future__ import annotations

import os
import pwd
from typing import Any

import pytest

from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import running_cluster


pytestmark = pytest.mark.integration  # starts a cluster and processes

GHOST = f"disauto-ghost-{os.getpid()}"
NOBODY = pwd.getpwnam("nobody").pw_uid


def run_task(user: str, **cluster: Any) -> tuple[dict[str, Any], str]:
    """A task ``id -u`` of a framework of ``user``: its last status and its stdout."""
    with running_cluster(**cluster) as live:
        raw = RawFramework(live.address, auto_acknowledge=True, user=user,
                           capabilities=["PARTITION_AWARE"])
        try:
            raw.subscribe()
            offer = raw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            raw.launch(offer, [command_task(offer, "who", "id -u")])
            ended = raw.wait_event(lambda e: e["type"] == "UPDATE" and e["update"]["status"][
                "state"] in ("TASK_FINISHED", "TASK_FAILED", "TASK_DROPPED"))["update"]["status"]
            stdout = ""
            if ended["state"] == "TASK_FINISHED":
                sandbox = live.agents[0].task_sandbox(str(raw.framework_id), "who")
                stdout = get_json(live, f"/files/read?path={sandbox}/stdout&offset=0")["data"]
            return ended, stdout
        finally:
            raw.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
def test_a_task_of_nobody_runs_as_nobody() -> None:
    ended, stdout = run_task("nobody")
    assert ended["state"] == "TASK_FINISHED" and stdout == f"{NOBODY}\n"


def test_a_task_of_a_user_the_machine_lacks_is_dropped_with_mesos_reason() -> None:
    ended, _ = run_task(GHOST)
    assert (ended["state"], ended["source"], ended["reason"]) == (
        "TASK_DROPPED", "SOURCE_AGENT", "REASON_EXECUTOR_TERMINATED")
    assert ended["message"].startswith("Failed to create executor directory '")
    assert ended["message"].endswith(
        f"': Failed to chown directory to '{GHOST}': No such user '{GHOST}'")


def test_without_switch_user_the_task_runs_as_the_clusters_user() -> None:
    ended, stdout = run_task(GHOST, switch_user=False)
    assert ended["state"] == "TASK_FINISHED" and stdout == f"{os.geteuid()}\n"
