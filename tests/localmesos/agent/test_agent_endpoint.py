"""The agent endpoints a framework uses to find a task's files: offer url → /slave(N)/state."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import running_cluster


pytestmark = pytest.mark.integration  # starts processes or servers


def test_offer_url_leads_to_the_task_sandbox_and_its_stderr() -> None:
    with running_cluster(agents=2) as cluster:
        framework = RawFramework(cluster.address, auto_acknowledge=True)
        framework.subscribe()
        try:
            offer = framework.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            url = offer["url"]
            assert url["address"]["port"] == cluster.port
            assert url["path"] in ("/slave(1)", "/slave(2)")
            framework.launch(offer, [command_task(offer, "t1", "echo oops >&2; exit 2")])
            framework.wait_event(lambda e: e["type"] == "UPDATE"
                                 and e["update"]["status"]["state"] == "TASK_FAILED")
            state = get_json(cluster, f"{url['path']}/state")
            assert state["id"] == offer["agent_id"]["value"]
            ours = [f for f in state["frameworks"] if f["id"] == framework.framework_id]
            executors = ours[0]["completed_executors"]
            assert [e["id"] for e in executors] == ["t1"]
            directory = executors[0]["directory"]
            read = get_json(cluster, "/files/read?" + urlencode(
                {"path": f"{directory}/stderr", "offset": 0}))
            assert "oops" in read["data"]
            master = get_json(cluster, "/master/state")
            pids = {s["id"]: s["pid"] for s in master["slaves"]}
            assert pids[offer["agent_id"]["value"]].startswith(url["path"].lstrip("/") + "@")
        finally:
            framework.close()


def test_unknown_agent_path_is_404() -> None:
    import http.client

    with running_cluster() as cluster:
        conn = http.client.HTTPConnection(*cluster.address.split(":"), timeout=5)
        conn.request("GET", "/slave(7)/state")
        assert conn.getresponse().status == 404
        conn.close()
