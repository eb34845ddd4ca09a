"""Master behaviour seen by a raw v1 HTTP scheduler: offers, ACCEPT, updates, failover."""

from __future__ import annotations

import time
from typing import Any

import pytest

from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.master.calls import _BODY_HANDLERS
from disauto.localmesos.master.calls import _HANDLERS
from disauto.localmesos.master.master import Master
from disauto.localmesos.master.validation import CALL_TYPES
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import framework_state
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import offered
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import scalar
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration  # starts processes or servers


def _offers(raw: RawFramework, count: int = 1, start: int = 0) -> list[dict[str, Any]]:
    wait_until(lambda: len(raw.offers(start)) >= count)
    return raw.offers(start)


def _state_of(raw: RawFramework, task_id: str, state: str) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        for status in raw.updates(task_id):
            if status["state"] == state:
                return status
        return None

    return dict(wait_until(find))


def test_offer_shape_and_attributes() -> None:
    agent = AgentConfig(cpus=2.0, mem_mb=512.0, disk_mb=100.0, attributes={"rack": "r1", "n": 3})
    with running_cluster(agent_configs=(agent,)) as cluster:
        raw = RawFramework(cluster.address)
        raw.subscribe()
        offer = _offers(raw)[0]
        assert offer["framework_id"] == {"value": raw.framework_id}
        assert offer["agent_id"] == {"value": cluster.agents[0].id}
        assert offer["url"]["path"] == "/slave(1)"
        # Agents are reachable at the master's port, which serves their /files endpoints.
        assert offer["url"]["address"] == {
            "hostname": "127.0.0.1", "ip": "127.0.0.1", "port": cluster.port,
        }
        slave = get_json(cluster, "/master/state")["slaves"][0]
        assert slave["pid"] == f"slave(1)@{cluster.address}"
        assert "allocation_info" not in offer and "executor_ids" not in offer
        names = {r["name"]: r for r in offer["resources"]}
        assert names["ports"]["ranges"] == {"range": [{"begin": 31000, "end": 32000}]}
        assert all(r["role"] == "*" for r in offer["resources"])
        assert {a["name"]: a for a in offer["attributes"]} == {
            "rack": {"name": "rack", "type": "TEXT", "text": {"value": "r1"}},
            "n": {"name": "n", "type": "SCALAR", "scalar": {"value": 3}},
        }
        raw.close()


def test_multi_role_offers_carry_allocation_info_per_role() -> None:
    with running_cluster(agents=2) as cluster:
        raw = RawFramework(cluster.address, capabilities=["MULTI_ROLE"], roles=["a", "b"])
        raw.subscribe()
        offers = _offers(raw, 2)
        assert sorted(o["allocation_info"]["role"] for o in offers) == ["a", "b"]
        for offer in offers:
            role = offer["allocation_info"]["role"]
            assert all(r["allocation_info"] == {"role": role} for r in offer["resources"])
        fw = framework_state(cluster, str(raw.framework_id))
        assert fw is not None and fw["roles"] == ["a", "b"] and "role" not in fw
        raw.close()


def test_reservation_refinement_framework_gets_post_refinement_resources() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address, capabilities=["RESERVATION_REFINEMENT"])
        raw.subscribe()
        assert all("role" not in r for r in _offers(raw)[0]["resources"])
        raw.close()


def test_subscribe_revive_and_agent_add_allocate_at_once_decline_does_not() -> None:
    with running_cluster(allocation_interval=30.0) as cluster:
        raw = RawFramework(cluster.address)
        start = time.monotonic()
        raw.subscribe()
        offer = _offers(raw)[0]
        assert time.monotonic() - start < 2  # not after the 30 s batch interval
        raw.decline([offer["id"]["value"]], refuse_seconds=0)
        time.sleep(0.5)
        assert len(raw.offers()) == 1  # a decline waits for the next batch
        assert raw.call("REVIVE") == 202
        _offers(raw, 2)
        cluster.add_agent()
        _offers(raw, 3)
        raw.close()


def test_accept_leftovers_are_filtered_for_five_seconds_by_default() -> None:
    with running_cluster(cpus=2.0) as cluster:
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        raw.subscribe()
        offer = _offers(raw)[0]
        raw.launch(offer, [command_task(offer, "a", "sleep 30", cpus=1.0)])
        time.sleep(0.6)  # six allocation intervals
        assert len(raw.offers()) == 1
        fw = framework_state(cluster, str(raw.framework_id))
        assert fw is not None and fw["offers"] == []

    with running_cluster(cpus=2.0) as cluster:
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        raw.subscribe()
        offer = _offers(raw)[0]
        raw.launch(offer, [command_task(offer, "a", "sleep 30", cpus=1.0)], refuse_seconds=0)
        leftover = _offers(raw, 2)[1]
        assert offered(leftover, "cpus") == 1.0
        assert offered(leftover, "mem") == 2048.0 - 32.0
        raw.call("TEARDOWN")
        raw.close()


def test_offers_from_two_agents_are_invalid_and_are_recovered() -> None:
    with running_cluster(agents=2) as cluster:
        raw = RawFramework(cluster.address)
        raw.subscribe()
        offers = _offers(raw, 2)
        ids = [o["id"]["value"] for o in offers]
        task = command_task(offers[0], "t", "true")
        raw.accept(ids, [{"type": "LAUNCH", "launch": {"task_infos": [task]}}])
        lost = _state_of(raw, "t", "TASK_LOST")
        assert lost["reason"] == "REASON_INVALID_OFFERS" and "uuid" not in lost
        assert "Aggregated offers must belong to one single agent" in lost["message"]
        # Both offers were discarded without a filter: they come back with the next batch.
        _offers(raw, 4)
        raw.close()


def test_duplicate_and_foreign_offers_are_invalid() -> None:
    with running_cluster(agents=2) as cluster:
        mine = RawFramework(cluster.address, name="mine")
        mine.subscribe()
        offer = _offers(mine)[0]
        oid = offer["id"]["value"]
        launch = [{"type": "LAUNCH", "launch": {"task_infos": [command_task(offer, "d", "x")]}}]
        mine.accept([oid, oid], launch)
        assert _state_of(mine, "d", "TASK_LOST")["message"].endswith(
            f"Duplicate offer {oid} in offer list"
        )
        other = RawFramework(cluster.address, name="other")
        other.subscribe()
        # The other agent's offer is still outstanding with "mine"; "other" cannot use it.
        foreign = next(o for o in mine.offers() if o["id"]["value"] != oid)
        task = command_task(foreign, "f", "x")
        operation = {"type": "LAUNCH", "launch": {"task_infos": [task]}}
        other.accept([foreign["id"]["value"]], [operation])
        message = _state_of(other, "f", "TASK_LOST")["message"]
        assert f"has invalid framework {mine.framework_id}" in message
        assert framework_state(cluster, str(mine.framework_id))["offers"]  # still mine
        for raw in (mine, other):
            raw.close()


def test_partition_aware_frameworks_see_the_precise_states() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address, capabilities=["PARTITION_AWARE"])
        raw.subscribe()
        offer = _offers(raw)[0]
        raw.call(
            "RECONCILE",
            reconcile={
                "tasks": [
                    {"task_id": {"value": "x"}},
                    {"task_id": {"value": "y"}, "agent_id": offer["agent_id"]},
                ]
            },
        )
        assert _state_of(raw, "x", "TASK_UNKNOWN")["message"] == "Reconciliation: Task is unknown"
        gone = _state_of(raw, "y", "TASK_GONE")
        assert gone["message"] == "Reconciliation: Task is unknown to the agent"
        raw.launch({"id": {"value": "stale"}, "agent_id": offer["agent_id"]},
                   [command_task(offer, "z", "true")])
        assert _state_of(raw, "z", "TASK_DROPPED")["reason"] == "REASON_INVALID_OFFERS"
        raw.close()


def test_updates_are_retried_in_order_until_acknowledged() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address)
        raw.subscribe()
        offer = _offers(raw)[0]
        raw.launch(offer, [command_task(offer, "t", "sleep 0.2")])
        first = _state_of(raw, "t", "TASK_STARTING")
        # No acknowledgement: the same update (same uuid) comes again, and nothing after it.
        wait_until(lambda: len(raw.updates("t")) >= 2, timeout=5)
        again = raw.updates("t")
        assert {s["uuid"] for s in again} == {first["uuid"]}
        assert {s["state"] for s in again} == {"TASK_STARTING"}
        # The master already knows the task finished (the agent's latest state).
        wait_until(
            lambda: framework_state(cluster, str(raw.framework_id))["tasks"][0]["state"]
            == "TASK_FINISHED"
        )
        assert raw.acknowledge(first) == 202
        running = _state_of(raw, "t", "TASK_RUNNING")
        assert raw.acknowledge(running) == 202
        finished = _state_of(raw, "t", "TASK_FINISHED")
        fw = framework_state(cluster, str(raw.framework_id))
        assert fw is not None and [t["id"] for t in fw["tasks"]] == ["t"]  # not acked yet
        # An acknowledgement with another uuid does not complete the task.
        assert raw.acknowledge(dict(finished, uuid=first["uuid"])) == 202
        fw = framework_state(cluster, str(raw.framework_id))
        assert fw is not None and fw["tasks"] and fw["completed_tasks"] == []
        assert raw.acknowledge(finished) == 202
        wait_until(lambda: framework_state(cluster, str(raw.framework_id))["completed_tasks"])
        raw.close()


def test_kill_with_wrong_agent_is_ignored() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        raw.subscribe()
        offer = _offers(raw)[0]
        raw.launch(offer, [command_task(offer, "t", "sleep 30")])
        _state_of(raw, "t", "TASK_RUNNING")
        raw.call("KILL", kill={"task_id": {"value": "t"}, "agent_id": {"value": "other"}})
        time.sleep(0.3)
        assert "TASK_KILLED" not in {s["state"] for s in raw.updates("t")}
        raw.call(
            "KILL",
            kill={
                "task_id": {"value": "t"},
                "kill_policy": {"grace_period": {"nanoseconds": 100_000_000}},
            },
        )
        _state_of(raw, "t", "TASK_KILLED")
        raw.close()


def test_custom_executor_resources_executor_ids_and_shutdown() -> None:
    with running_cluster(cpus=2.0) as cluster:
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        raw.subscribe()
        offer = _offers(raw)[0]
        executor = {
            "executor_id": {"value": "exec-1"},
            "type": "CUSTOM",
            "command": {"value": "sleep 30"},
            "resources": [scalar("cpus", 0.5), scalar("mem", 64)],
        }
        task = command_task(offer, "e1", "unused")
        del task["command"]
        task["executor"] = executor
        raw.launch(offer, [task], refuse_seconds=0)
        leftover = _offers(raw, 2)[1]  # e1 stays STAGING: "sleep 30" never subscribes
        assert leftover["executor_ids"] == [{"value": "exec-1"}]
        assert offered(leftover, "cpus") == pytest.approx(2.0 - 0.1 - 0.5)
        fw = framework_state(cluster, str(raw.framework_id))
        # Mesos' model(ExecutorInfo): ids as strings, resources in the object form.
        assert fw is not None and fw["executors"][0]["executor_id"] == "exec-1"
        assert fw["executors"][0]["framework_id"] == raw.framework_id
        assert fw["executors"][0]["resources"]["cpus"] == pytest.approx(0.5)
        assert fw["tasks"][0]["executor_id"] == "exec-1"
        raw.call(
            "SHUTDOWN",
            shutdown={"executor_id": {"value": "exec-1"}, "agent_id": offer["agent_id"]},
        )
        # "sleep 30" never subscribes: it is killed after the shutdown grace period and the
        # agent fails its task (Mesos _shutdownExecutor, executorTerminated).
        failed = _state_of(raw, "e1", "TASK_FAILED")
        assert failed["reason"] == "REASON_EXECUTOR_TERMINATED"
        failure = raw.wait_event(lambda e: e["type"] == "FAILURE")["failure"]
        assert failure["executor_id"] == {"value": "exec-1"}
        raw.close()


def test_task_validation_errors() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address)
        raw.subscribe()
        offer = _offers(raw)[0]
        both = dict(command_task(offer, "both", "x"), executor={"executor_id": {"value": "e"}})
        neither = command_task(offer, "neither", "x")
        del neither["command"]
        wrong_agent = dict(command_task(offer, "wrong-agent", "x"), agent_id={"value": "S9"})
        bad_id = command_task(offer, "a/b", "x")
        negative = dict(
            command_task(offer, "neg", "x"),
            kill_policy={"grace_period": {"nanoseconds": -1}},
        )
        huge = command_task(offer, "huge", "x", cpus=1e308)
        raw.launch(offer, [both, neither, wrong_agent, bad_id, negative, huge])
        expected = {
            "both": "Task should have at least one (but not both) of CommandInfo or "
            "ExecutorInfo present",
            "neither": "Task should have at least one (but not both) of CommandInfo or "
            "ExecutorInfo present",
            "wrong-agent": f"Task uses invalid agent S9 while agent {offer['agent_id']['value']}"
            " is expected",
            "a/b": "TaskID 'a/b' contains invalid characters",
            "neg": "Task's 'kill_policy.grace_period' must be non-negative",
            "huge": "Task uses invalid resources: Invalid resources: scalar resource 'cpus' "
            "has invalid value 1e+308",
        }
        for task_id, message in expected.items():
            error = _state_of(raw, task_id, "TASK_ERROR")
            assert error["message"] == message and error["reason"] == "REASON_TASK_INVALID"
        # None of them took resources: everything comes back after the filter.
        raw.call("REVIVE")
        assert offered(_offers(raw, 2)[1], "cpus") == 2.0
        raw.close()


def _group(offer: dict[str, Any], commands: dict[str, str], **executor: Any) -> dict[str, Any]:
    info = {
        "executor_id": {"value": "group-exec"},
        "type": "DEFAULT",
        "resources": [scalar("cpus", 0.1), scalar("mem", 32), scalar("disk", 10)],
    }
    info.update(executor)
    return {
        "type": "LAUNCH_GROUP",
        "launch_group": {
            "executor": info,
            "task_group": {
                "tasks": [command_task(offer, tid, cmd) for tid, cmd in commands.items()]
            },
        },
    }


def test_launch_group_runs_all_and_kills_the_rest_when_one_fails() -> None:
    with running_cluster(default_kill_grace=0.5) as cluster:
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        raw.subscribe()
        offer = _offers(raw)[0]
        operation = _group(offer, {"g1": "sleep 30", "g2": "sleep 0.3; exit 1"})
        raw.accept([offer["id"]["value"]], [operation])
        _state_of(raw, "g1", "TASK_RUNNING")
        _state_of(raw, "g2", "TASK_FAILED")
        _state_of(raw, "g1", "TASK_KILLED")
        fw = framework_state(cluster, str(raw.framework_id))
        assert fw is not None
        assert all(t["executor_id"] == "group-exec" for t in fw["tasks"] + fw["completed_tasks"])
        raw.close()


def test_invalid_launch_group_fails_every_task() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address)
        raw.subscribe()
        offer = _offers(raw)[0]
        operation = _group(offer, {"g1": "true", "g2": "true"}, resources=[scalar("cpus", 0.1)])
        raw.accept([offer["id"]["value"]], [operation])
        for task_id in ("g1", "g2"):
            error = _state_of(raw, task_id, "TASK_ERROR")
            assert "uses less memory" in error["message"]
        raw.close()


def _group_cases(offer: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """(LAUNCH_GROUP operation, the start of the error each of its tasks gets)."""
    docker = {"type": "DOCKER", "docker": {"image": "busybox"}}
    no_disk = [scalar("cpus", 0.1), scalar("mem", 32)]
    dup = _group(offer, {"dup": "true"})
    foreign = _group(offer, {"foreign": "true"})
    docker_task = _group(offer, {"docker-task": "true"})
    untyped = _group(offer, {"untyped": "true"})
    big = _group(offer, {})
    tasks = [op["launch_group"]["task_group"]["tasks"] for op in (dup, foreign, docker_task, big)]
    tasks[0].append(command_task(offer, "dup", "true"))
    tasks[1][0]["executor"] = {"executor_id": {"value": "other"}, "type": "DEFAULT"}
    tasks[2][0]["container"] = docker
    tasks[3].append(command_task(offer, "big", "true", cpus=64))
    del untyped["launch_group"]["executor"]["type"]
    return [
        (dup, "Task group has duplicate task IDs: dup"),
        (foreign, "The `ExecutorInfo` of task 'foreign' is different from executor 'group-exec'"),
        (docker_task, "Task 'docker-task' is invalid: Docker ContainerInfo is not supported on "
         "the task"),
        (untyped, "'ExecutorInfo.type' must be set"),
        (_group(offer, {"exec-docker": "true"}, container=docker),
         "Docker ContainerInfo is not supported on the executor"),
        (_group(offer, {"few-cpus": "true"}, resources=[scalar("cpus", 0.001), *no_disk[1:]]),
         "Executor 'group-exec' uses less CPUs (0.001) than the minimum required (0.01)"),
        (_group(offer, {"no-disk": "true"}, resources=no_disk),
         "Executor 'group-exec' uses no disk"),
        (big, "Total resources cpus(*):64.1; mem(*):64; disk(*):10 required by task group and "
         "its executor are more than available"),
    ]


def _executor_cases(offer: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """(LAUNCH operation of a task with an ExecutorInfo, the start of the error it gets)."""
    def launch(task_id: str, cpus: float = 0.1, **executor: Any) -> dict[str, Any]:
        task = command_task(offer, task_id, "unused", cpus=cpus)
        task["executor"] = {"executor_id": {"value": f"exec-{task_id}"}, **executor}
        del task["command"]
        return {"type": "LAUNCH", "launch": {"task_infos": [task]}}

    command = {"value": "sleep 30"}
    return [
        (launch("default", type="DEFAULT", command=command),
         "'ExecutorInfo.command' must not be set for 'DEFAULT' executor"),
        (launch("not-custom", type="DEFAULT"), "'ExecutorInfo.type' must be 'CUSTOM'"),
        (launch("commandless"), "'ExecutorInfo.command' must be set"),
        (launch("large", cpus=64, command=command, resources=[scalar("cpus", 0.5)]),
         "Total resources cpus(*):64.5; mem(*):32 required by task and its executor is more "
         "than available"),
    ]


def test_launch_group_and_executor_errors_name_the_first_problem() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address)
        raw.subscribe()
        cases = [*_group_cases(_offers(raw)[0]), *_executor_cases(_offers(raw)[0])]
        for index, (operation, message) in enumerate(cases):
            offer = _offers(raw, index + 1)[index]
            raw.accept([offer["id"]["value"]], [operation], refuse_seconds=0)
            group = operation.get("launch_group")
            tasks = group["task_group"]["tasks"] if group else operation["launch"]["task_infos"]
            for task in tasks:
                error = _state_of(raw, task["task_id"]["value"], "TASK_ERROR")
                assert error["message"].startswith(message), (message, error["message"])
                assert error["reason"] == "REASON_TASK_INVALID"
        raw.close()


def test_disconnect_rescinds_offers_and_another_framework_gets_them() -> None:
    with running_cluster() as cluster:
        first = RawFramework(cluster.address, name="first", failover_timeout=30.0)
        first.subscribe()
        _offers(first)
        second = RawFramework(cluster.address, name="second")
        second.subscribe()
        time.sleep(0.3)
        assert second.offers() == []
        first.disconnect()
        _offers(second)
        fw = framework_state(cluster, str(first.framework_id))
        assert fw is not None and not fw["connected"] and fw["offers"] == []
        for raw in (first, second):
            raw.close()


def test_resubscribe_discards_offers_without_rescind_and_unsuppresses() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address, failover_timeout=30.0)
        fid = raw.subscribe()
        _offers(raw)
        raw.call("SUPPRESS")
        again = RawFramework(cluster.address, framework_id=fid, failover_timeout=30.0)
        again.subscribe()
        assert raw.wait_event(lambda e: e["type"] == "ERROR")["error"]["message"] == (
            "Framework failed over"
        )
        assert raw.of_type("RESCIND") == []
        _offers(again)  # the old offer's resources, offered again: no longer suppressed
        for r in (raw, again):
            r.close()


def test_removed_framework_cannot_resubscribe_and_completed_keeps_its_tasks() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        fid = raw.subscribe()
        offer = _offers(raw)[0]
        raw.launch(offer, [command_task(offer, "t", "sleep 30")])
        _state_of(raw, "t", "TASK_RUNNING")
        assert raw.call("TEARDOWN") == 202
        assert raw.ended.wait(5)
        again = RawFramework(cluster.address, framework_id=fid)
        with pytest.raises(AssertionError, match="Framework has been removed"):
            again.subscribe()
        state = get_json(cluster, "/master/state")
        fw = state["completed_frameworks"][0]
        task = fw["completed_tasks"][0]
        assert task["state"] == "TASK_KILLED" and task["statuses"][-1]["state"] == "TASK_KILLED"
        wait_until(lambda: cluster.agents[0].running_tasks() == [])
        for r in (raw, again):
            r.close()


def test_unknown_framework_id_is_recovered_as_after_a_master_failover() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address, framework_id="from-an-old-master")
        assert raw.subscribe() == "from-an-old-master"
        _offers(raw)
        raw.close()


def test_suppress_with_unknown_role_is_dropped_and_update_framework_suppresses() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address)
        fid = raw.subscribe()
        offer = _offers(raw)[0]
        raw.call("SUPPRESS", suppress={"roles": ["not-mine"]})
        raw.decline([offer["id"]["value"]], refuse_seconds=0)
        _offers(raw, 2)  # still offered: the whole SUPPRESS was dropped
        info = dict(raw.info, id={"value": fid})
        raw.call("UPDATE_FRAMEWORK",
                 update_framework={"framework_info": info, "suppressed_roles": ["*"]})
        raw.decline([raw.offers()[1]["id"]["value"]], refuse_seconds=0)
        count = len(raw.offers())
        time.sleep(0.4)
        assert len(raw.offers()) == count
        raw.call("UPDATE_FRAMEWORK", update_framework={"framework_info": info})
        _offers(raw, count + 1)
        raw.close()


def test_unsupported_operations_with_an_id_get_operation_error() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address)
        raw.subscribe()
        offer = _offers(raw)[0]
        nameless = {"type": "RESERVE", "id": {"value": ""}, "reserve": {}}
        reserve = {"type": "RESERVE", "id": {"value": "op-1"}, "reserve": {}}
        raw.accept([offer["id"]["value"]], [nameless, reserve])
        # The empty id names no operation (found by the fuzz test): only op-1 gets a status.
        event = raw.wait_event(lambda e: e["type"] == "UPDATE_OPERATION_STATUS")
        status = event["update_operation_status"]["status"]
        assert status["operation_id"] == {"value": "op-1"}
        assert status["state"] == "OPERATION_ERROR" and "uuid" not in status
        time.sleep(0.3)
        assert sum(e["type"] == "UPDATE_OPERATION_STATUS" for e in raw.events) == 1
        raw.close()


def test_message_request_and_inverse_offer_calls_are_accepted() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address)
        raw.subscribe()
        offer = _offers(raw)[0]
        message = {"agent_id": offer["agent_id"], "executor_id": {"value": "e"}, "data": "aGk="}
        assert raw.call("MESSAGE", message=message) == 202
        request = {"requests": [{"agent_id": offer["agent_id"], "resources": [scalar("cpus", 1)]}]}
        assert raw.call("REQUEST", request=request) == 202
        assert raw.call("ACCEPT_INVERSE_OFFERS", accept_inverse_offers={}) == 202
        assert raw.call("DECLINE_INVERSE_OFFERS", decline_inverse_offers={}) == 202
        metrics = get_json(cluster, "/metrics/snapshot")
        assert metrics["master/messages_framework_to_executor"] == 1
        assert metrics["master/messages_resource_request"] == 1
        raw.close()


def test_stop_closes_streams() -> None:
    with running_cluster() as cluster:
        raw = RawFramework(cluster.address)
        raw.subscribe()
    assert raw.ended.wait(5)
    raw.close()


def test_every_call_type_but_subscribe_and_unknown_has_a_handler_on_the_master() -> None:
    assert set(_HANDLERS) == set(CALL_TYPES) - {"SUBSCRIBE", "UNKNOWN"}
    methods = [*_HANDLERS.values(), "_on_unknown", *(m for m, _ in _BODY_HANDLERS.values())]
    calls = Master().calls
    assert [m for m in methods if not callable(getattr(calls, m, None))] == []
