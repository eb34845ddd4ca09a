"""The master's web UI in a real browser, over a real cluster and framework: what a user sees.

The page is opened once and never reloaded: every change below (a task starting, resources
used, the task ending, a line written to its stdout) must reach it through its own polling.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
import re
import time
from typing import Any

import pytest

from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.cluster import LocalCluster
from tests.browser import watched_page
from tests.conftest import SCREENSHOTS
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import operator_call
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration  # starts a cluster and a browser

WEBUI_URL = "http://127.0.0.1:8765/jobs/42"
#: Prints one line, then another each time the test drops a file named ``go`` in its sandbox.
TAILED = (
    "echo started; while true; do if [ -f go ]; then rm go; echo written-after-open; fi; "
    "sleep 0.1; done"
)


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    with running_cluster(agents=2, cpus=2.0, mem_mb=1024.0) as c:
        yield c


@pytest.fixture
def framework(cluster: LocalCluster) -> Iterator[RawFramework]:
    raw = RawFramework(cluster.address, name="hpo-job", auto_acknowledge=True, webui_url=WEBUI_URL)
    raw.subscribe()
    yield raw
    raw.call("TEARDOWN")
    raw.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A laptop-sized page whose console must stay free of errors."""
    with watched_page(browser, failed_requests=False) as (opened, errors):
        yield opened
    assert errors == []


def _shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"webui-{name}.png"), full_page=True)


def _sandbox(cluster: LocalCluster, task_id: str) -> Path:
    """The real sandbox directory of a task, from the agents' served roots."""
    for agent in cluster.agents:
        for virtual, real in agent.file_roots().items():
            if virtual.startswith("/slaves/") and f"/executors/{task_id}/" in virtual:
                return Path(real)
    raise AssertionError(f"no sandbox for {task_id}")


def test_pages_follow_the_cluster_live(
    cluster: LocalCluster, framework: RawFramework, page: Any
) -> None:
    from playwright.sync_api import expect

    page.goto(f"http://{cluster.address}/")
    row = page.locator(f'#active-frameworks tr[data-framework="{framework.framework_id}"]')
    expect(row).to_contain_text("hpo-job")
    expect(row.locator("a.webui")).to_have_attribute("href", WEBUI_URL)
    agents = page.locator("#agents tr[data-agent]")
    expect(agents).to_have_count(2)
    expect(page.locator('#resources tr[data-resource="cpus"]')).to_contain_text("0")

    offer = framework.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
    agent_id = offer["agent_id"]["value"]
    labels = {"labels": [{"key": "trial", "value": "7"},
                         {"key": "disauto.assignment", "value": '{"x": 0.5, "lr": 0.01}'}]}
    framework.launch(offer, [command_task(offer, "tailed", TAILED, cpus=0.5, labels=labels)])

    # Used and free CPUs of the task's agent change without a reload.
    busy = page.locator(f'#agents tr[data-agent="{agent_id}"]')
    expect(busy.locator('td[data-used="cpus"]')).to_have_text("0.50 / 2")
    expect(busy.locator('td[data-free="cpus"]')).to_have_text("1.50")
    _shot(page, "overview")

    # The menu's Agents, then the task's agent: its resources and its tasks.
    page.click("header nav a:has-text('Agents')")
    expect(page).to_have_url(re.compile(r"#/agents$"))
    expect(page.locator("header nav a.current")).to_have_text("Agents")
    expect(page.locator("#agents tr[data-agent]")).to_have_count(2)
    page.locator(f'#agents tr[data-agent="{agent_id}"] a.agent').click()
    expect(page.locator("h1")).to_contain_text("Agent ")
    expect(page.locator('#agent-resources tr[data-resource="cpus"]')).to_contain_text("0.50")
    expect(page.locator(f'#agent-frameworks tr[data-framework="{framework.framework_id}"]')
           ).to_contain_text("hpo-job")
    on_agent = page.locator('#active-tasks tr[data-task="tailed"]')
    expect(on_agent).to_contain_text("TASK_RUNNING")
    _shot(page, "agent")

    page.click("header nav a:has-text('Frameworks')")
    expect(page.locator("header nav a.current")).to_have_text("Frameworks")
    row = page.locator(f'#active-frameworks tr[data-framework="{framework.framework_id}"]')
    row.locator("a").first.click()
    task = page.locator('#active-tasks tr[data-task="tailed"]')
    expect(task).to_contain_text("TASK_RUNNING")
    expect(task).to_contain_text("trial: 7")
    expect(task).to_contain_text("disauto.assignment: x=0.5, lr=0.01")  # not raw JSON
    expect(task.locator("a.agent")).to_have_attribute("href", f"#/agents/{agent_id}")
    expect(page.locator("a.webui")).to_have_attribute("href", WEBUI_URL)
    _shot(page, "framework")

    task.locator("a.sandbox").click()
    stdout = page.locator('#listing tr[data-file="stdout"]')
    expect(stdout).to_be_visible()
    download = stdout.locator("a.download").get_attribute("href")
    assert download is not None and download.startswith("/files/download?path=")
    assert b"started" in page.request.get(f"http://{cluster.address}{download}").body()
    _shot(page, "sandbox")

    stdout.locator("a").first.click()
    tail = page.locator("#tail")
    expect(tail).to_contain_text("started")
    (_sandbox(cluster, "tailed") / "go").touch()
    expect(tail).to_contain_text("written-after-open")
    _shot(page, "tail")

    # The task ends: the framework page moves it to the completed tasks by itself.
    page.go_back()
    page.go_back()
    framework.call("KILL", kill={"task_id": {"value": "tailed"}, "agent_id": offer["agent_id"]})
    done = page.locator('#completed-tasks tr[data-task="tailed"]')
    expect(done).to_contain_text("TASK_KILLED", timeout=15000)
    expect(page.locator('#active-tasks tr[data-task="tailed"]')).to_have_count(0)
    wait_until(lambda: not cluster.master.frameworks[framework.framework_id].tasks, timeout=15)


def test_every_route_has_its_page_and_nothing_is_refused(cluster: LocalCluster,
                                                         page: Any) -> None:
    from playwright.sync_api import expect

    refused: list[str] = []
    page.on("response", lambda r: refused.append(f"{r.status} {r.url}")
            if r.status >= 400 else None)
    page.goto(f"http://{cluster.address}/#/nowhere")
    expect(page.locator("h1")).to_have_text("No such page")
    for route, heading in (("#/frameworks", "Frameworks"), ("#/agents", "Agents"),
                           ("#/agents/no-such-agent", "Agent no-such-agent"),
                           ("#/agents/a/b", "No such page"), ("#/", "Master ")):
        page.goto(f"http://{cluster.address}/{route}")
        expect(page.locator("h1")).to_contain_text(heading)
    assert page.locator("link[rel=icon]").get_attribute("href").startswith("data:image/svg")
    page.wait_for_timeout(1500)  # a poll or two
    assert refused == []


def test_a_webui_url_that_is_not_http_is_shown_as_text(cluster: LocalCluster, page: Any) -> None:
    from playwright.sync_api import expect

    raw = RawFramework(cluster.address, name="sly", webui_url="javascript:alert(1)")
    raw.subscribe()
    try:
        page.goto(f"http://{cluster.address}/")
        row = page.locator(f'tr[data-framework="{raw.framework_id}"]')
        expect(row).to_contain_text("sly")
        expect(row.locator("a.webui")).to_have_count(0)
    finally:
        raw.call("TEARDOWN")
        raw.close()


def test_an_ended_frameworks_web_ui_is_text_marked_ended(cluster: LocalCluster,
                                                        page: Any) -> None:
    from playwright.sync_api import expect

    raw = RawFramework(cluster.address, name="done", webui_url=WEBUI_URL)
    raw.subscribe()
    page.goto(f"http://{cluster.address}/#/frameworks")
    row = page.locator(f'tr[data-framework="{raw.framework_id}"]')
    expect(row.locator("a.webui")).to_have_attribute("href", WEBUI_URL)
    raw.call("TEARDOWN")
    raw.close()
    # The list follows the teardown by itself: the URL stays, as text, no longer a link.
    ended = page.locator(f'#completed-frameworks tr[data-framework="{raw.framework_id}"]')
    expect(ended).to_contain_text(f"{WEBUI_URL} (ended)")
    expect(ended.locator("a.webui")).to_have_count(0)
    ended.locator("a.framework").click()
    expect(page.locator(".webui-ended")).to_have_text(f"{WEBUI_URL} (ended)")
    expect(page.locator("a.webui")).to_have_count(0)
    _shot(page, "ended-framework")


def test_agents_of_one_machine_are_told_apart_by_ordinal(
        cluster: LocalCluster, framework: RawFramework, page: Any) -> None:
    from playwright.sync_api import expect

    ids = sorted((a.id for a in cluster.agents), key=lambda i: int(i.rsplit("-S", 1)[1]))
    page.goto(f"http://{cluster.address}/#/agents")
    for ordinal, agent_id in enumerate(ids):
        name = page.locator(f'#agents tr[data-agent="{agent_id}"] a.agent')
        expect(name).to_have_text(f"agent {ordinal} (…-S{ordinal})")
        expect(name).to_have_attribute("title", agent_id)
    # Wherever an agent is linked: a task's row on its framework's page.
    offer = framework.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
    ordinal = ids.index(offer["agent_id"]["value"])
    framework.launch(offer, [command_task(offer, "t", "sleep 60", cpus=0.5)])
    page.goto(f"http://{cluster.address}/#/frameworks/{framework.framework_id}")
    expect(page.locator('#active-tasks tr[data-task="t"] a.agent')).to_have_text(
        f"agent {ordinal} (…-S{ordinal})")
    page.locator('#active-tasks tr[data-task="t"] a.agent').click()
    expect(page.locator("h1")).to_have_text(f"Agent {ordinal} on 127.0.0.1")


def test_agents_of_two_hostnames_are_linked_with_theirs(page: Any) -> None:
    from playwright.sync_api import expect

    configs = tuple(AgentConfig(cpus=1.0, mem_mb=256.0, disk_mb=100.0, hostname=name,
                                ports=((31000 + 10 * i, 31009 + 10 * i),))
                    for i, name in enumerate(["localhost", "127.0.0.1"]))
    with running_cluster(agent_configs=configs) as cluster:
        page.goto(f"http://{cluster.address}/#/agents")
        first, second = (page.locator(f'#agents tr[data-agent="{a.id}"] a.agent')
                         for a in cluster.agents)
        expect(first).to_have_text("agent 0 (…-S0) on localhost")
        expect(second).to_have_text("agent 1 (…-S1) on 127.0.0.1")


def test_roles_and_offers_pages_show_the_masters_roles_and_outstanding_offers(
        cluster: LocalCluster, page: Any) -> None:
    from playwright.sync_api import expect

    assert operator_call(cluster, {"type": "UPDATE_QUOTA", "update_quota": {"quota_configs": [
        {"role": "dev", "guarantees": {"cpus": {"value": 1}},
         "limits": {"cpus": {"value": 3}}}]}}) == (200, "")
    raw = RawFramework(cluster.address, name="offered", roles=["dev"],
                       capabilities=["MULTI_ROLE"])
    raw.subscribe()
    try:
        offer = raw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        page.goto(f"http://{cluster.address}/")
        page.click("header nav a:has-text('Roles')")
        expect(page.locator("header nav a.current")).to_have_text("Roles")
        role = page.locator('#roles tr[data-role="dev"]')
        expect(role).to_contain_text("cpus 1")  # the guarantee
        expect(role).to_contain_text("cpus 3")  # the limit
        expect(role.locator("a.framework")).to_have_text(raw.framework_id)
        _shot(page, "roles")
        page.click("header nav a:has-text('Offers')")
        row = page.locator(f'#offers tr[data-offer="{offer["id"]["value"]}"]')
        expect(row).to_contain_text("offered")
        expect(row).to_contain_text("dev")
        expect(row.locator("a.agent")).to_have_attribute(
            "href", f"#/agents/{offer['agent_id']['value']}")
        _shot(page, "offers")
    finally:
        raw.call("TEARDOWN")
        raw.close()


def test_maintenance_page_shows_the_schedule_and_a_drained_agent(cluster: LocalCluster,
                                                                page: Any) -> None:
    from playwright.sync_api import expect

    start = {"nanoseconds": int((time.time() + 3600) * 1e9)}
    # Another machine: a drained agent may not be part of a maintenance schedule.
    schedule = {"windows": [{"machine_ids": [{"hostname": "gpu-box", "ip": "10.0.0.7"}],
                             "unavailability": {"start": start,
                                                "duration": {"nanoseconds": 3600 * 10**9}}}]}
    assert operator_call(cluster, {"type": "UPDATE_MAINTENANCE_SCHEDULE",
                                   "update_maintenance_schedule": {"schedule": schedule}}
                         ) == (200, "")
    drained = cluster.agents[1].id
    assert operator_call(cluster, {"type": "DRAIN_AGENT", "drain_agent": {
        "agent_id": {"value": drained}}}) == (200, "")
    page.goto(f"http://{cluster.address}/#/maintenance")
    expect(page.locator("header nav a.current")).to_have_text("Maintenance")
    window = page.locator('#maintenance-windows tr[data-machine="gpu-box / 10.0.0.7"]')
    expect(window).to_be_visible()
    expect(page.locator('#maintenance-machines tr[data-machine="gpu-box / 10.0.0.7"]')
           ).to_contain_text("draining")
    drain = page.locator(f'#drains tr[data-agent="{drained}"]')
    expect(drain).to_contain_text(re.compile("DRAIN(ING|ED)"))
    expect(drain).to_contain_text("deactivated")
    _shot(page, "maintenance")
