"""Scheduler call parsing and validation: stout's JSON→proto conversion of a ``Call`` and Mesos'
call validation; roles, task IDs and FrameworkInfo."""

from __future__ import annotations

import base64
import json
from typing import Any
import uuid

import pytest

from disauto.localmesos.master.validation import framework_roles
from disauto.localmesos.master.validation import parse_call
from disauto.localmesos.master.validation import validate_framework_info
from disauto.localmesos.master.validation import validate_role
from disauto.localmesos.master.validation import validate_task_id
from disauto.localmesos.protocol.protojson import MAX_NESTING
from disauto.localmesos.protocol.protojson import CallError


FW = {"value": "M-0000"}
UUID = base64.b64encode(uuid.uuid4().bytes).decode()


def _parse(body: Any) -> dict[str, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return parse_call(data)


def _error(body: Any) -> str:
    with pytest.raises(CallError) as info:
        _parse(body)
    assert info.value.status == 400
    return str(info.value)


def test_pymesos_subscribe_body_parses() -> None:
    body = {
        "type": "SUBSCRIBE",
        "subscribe": {
            "framework_info": {
                "user": "nobody",
                "name": "example",
                "capabilities": [{"type": "GPU_RESOURCES"}],
                "failover_timeout": 100,
            }
        },
    }
    call = _parse(body)
    info = call["subscribe"]["framework_info"]
    assert info["failover_timeout"] == 100.0 and info["checkpoint"] is False
    assert info["capabilities"] == [{"type": "GPU_RESOURCES"}]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "Failed to parse body into JSON: "),
        (b"\xff\xfe", "Failed to parse body into JSON: "),
        (b"[1, 2]", "Failed to convert JSON into Call protobuf: Expecting a JSON object"),
        (b'{"type": NaN}', "Failed to parse body into JSON: "),
        (b'{"type": 1e999}', "Failed to parse body into JSON: "),
        ({}, "Failed to validate scheduler::Call: Expecting 'type' to be present"),
        ({"type": "BOGUS"}, "Failed to validate scheduler::Call: Expecting 'type' to be present"),
        ({"type": "TEARDOWN"}, "Expecting 'framework_id' to be present"),
        ({"type": "ACCEPT", "framework_id": FW}, "Expecting 'accept' to be present"),
        ({"type": "DECLINE", "framework_id": FW}, "Expecting 'decline' to be present"),
        ({"type": "KILL", "framework_id": FW}, "Expecting 'kill' to be present"),
        ({"type": "SHUTDOWN", "framework_id": FW}, "Expecting 'shutdown' to be present"),
        ({"type": "ACKNOWLEDGE", "framework_id": FW}, "Expecting 'acknowledge' to be present"),
        ({"type": "RECONCILE", "framework_id": FW}, "Expecting 'reconcile' to be present"),
        ({"type": "MESSAGE", "framework_id": FW}, "Expecting 'message' to be present"),
        ({"type": "REQUEST", "framework_id": FW}, "Expecting 'request' to be present"),
        (
            {"type": "UPDATE_FRAMEWORK", "framework_id": FW},
            "Expecting 'update_framework' to be present",
        ),
        ({"type": "SUBSCRIBE"}, "Expecting 'subscribe' to be present"),
        (
            {"type": "SUBSCRIBE", "subscribe": {"framework_info": {"name": "x"}}},
            "Failed to convert JSON into Call protobuf: Missing required fields: user",
        ),
        (
            {
                "type": "SUBSCRIBE",
                "framework_id": FW,
                "subscribe": {"framework_info": {"user": "u", "name": "x"}},
            },
            "'framework_id' differs from 'subscribe.framework_info.id'",
        ),
        (
            {"type": "TEARDOWN", "framework_id": 5},
            "Not expecting a JSON number for field 'framework_id'",
        ),
        ({"type": 3.5}, "Not expecting"),
        (
            {"type": "KILL", "framework_id": FW, "kill": {"task_id": ["a"]}},
            "Not expecting a JSON array for field 'task_id'",
        ),
        (
            {"type": "KILL", "framework_id": FW, "kill": {}},
            "Missing required fields: task_id",
        ),
        (
            {
                "type": "ACKNOWLEDGE",
                "framework_id": FW,
                "acknowledge": {"agent_id": FW, "task_id": FW, "uuid": "not base64!"},
            },
            "Failed to base64 decode bytes field 'uuid'",
        ),
        (
            {
                "type": "ACKNOWLEDGE",
                "framework_id": FW,
                "acknowledge": {"agent_id": FW, "task_id": FW, "uuid": "YWJj"},
            },
            "Failed to validate scheduler::Call: Not a valid UUID",
        ),
        (
            {
                "type": "DECLINE",
                "framework_id": FW,
                "decline": {"offer_ids": [], "filters": {"refuse_seconds": "soon"}},
            },
            "Failed to convert 'soon' to number for field 'refuse_seconds'",
        ),
        (
            {"type": "DECLINE", "framework_id": FW, "decline": {"filters": True}},
            "Not expecting a JSON boolean for field 'filters'",
        ),
    ],
)
def test_invalid_calls_are_400_with_mesos_messages(body: Any, message: str) -> None:
    assert message in _error(body)


def test_every_call_type_with_its_message_is_valid() -> None:
    calls = [
        {"type": "TEARDOWN"},
        {"type": "ACCEPT", "accept": {"offer_ids": [{"value": "o"}]}},
        {"type": "DECLINE", "decline": {"offer_ids": [{"value": "o"}]}},
        {"type": "REVIVE"},
        {"type": "SUPPRESS", "suppress": {"roles": ["*"]}},
        {"type": "KILL", "kill": {"task_id": {"value": "t"}}},
        {"type": "SHUTDOWN", "shutdown": {"executor_id": {"value": "e"}, "agent_id": FW}},
        {
            "type": "ACKNOWLEDGE",
            "acknowledge": {"agent_id": FW, "task_id": {"value": "t"}, "uuid": UUID},
        },
        {"type": "RECONCILE", "reconcile": {"tasks": []}},
        {"type": "MESSAGE", "message": {"agent_id": FW, "executor_id": FW, "data": "aGk="}},
        {"type": "REQUEST", "request": {"requests": []}},
        {"type": "ACCEPT_INVERSE_OFFERS", "accept_inverse_offers": {}},
        {"type": "DECLINE_INVERSE_OFFERS", "decline_inverse_offers": {}},
        {
            "type": "UPDATE_FRAMEWORK",
            "update_framework": {"framework_info": {"user": "u", "name": "n", "id": FW}},
        },
        {"type": "UNKNOWN"},
    ]
    for call in calls:
        parsed = _parse(dict(call, framework_id=FW))
        assert parsed["type"] == call["type"]


def test_conversion_drops_unknown_keys_and_nulls_and_fills_defaults() -> None:
    call = _parse(
        {
            "type": "ACCEPT",
            "framework_id": FW,
            "bogus": {"deep": [1, 2]},
            "accept": {
                "offer_ids": [{"value": "o1", "junk": 1}],
                "filters": None,
                "operations": [
                    {
                        "type": "LAUNCH",
                        "launch": {
                            "task_infos": [
                                {
                                    "name": "t",
                                    "task_id": {"value": "t"},
                                    "agent_id": {"value": "a"},
                                    "command": {"value": "true", "uris": [{"value": "/x"}]},
                                    "resources": [
                                        {
                                            "name": "cpus",
                                            "type": "SCALAR",
                                            "scalar": {"value": "0.5"},
                                        }
                                    ],
                                }
                            ]
                        },
                    }
                ],
            },
        }
    )
    assert "bogus" not in call and "filters" not in call["accept"]
    assert call["accept"]["offer_ids"] == [{"value": "o1"}]
    task = call["accept"]["operations"][0]["launch"]["task_infos"][0]
    assert task["command"]["shell"] is True  # CommandInfo.shell default
    assert task["command"]["uris"][0]["extract"] is True  # URI.extract default
    assert task["resources"][0]["scalar"]["value"] == 0.5  # numeric string accepted


def test_decline_filters_default_to_five_seconds() -> None:
    call = _parse({"type": "DECLINE", "framework_id": FW, "decline": {"filters": {}}})
    assert call["decline"]["filters"] == {"refuse_seconds": 5.0}


def test_unknown_optional_enum_values_are_dropped_and_numbers_accepted() -> None:
    call = _parse(
        {
            "type": 1,  # SUBSCRIBE by number
            "subscribe": {
                "framework_info": {
                    "user": "u",
                    "name": "n",
                    "capabilities": [{"type": "FUTURE_THING"}, {"type": "MULTI_ROLE"}],
                }
            },
        }
    )
    assert call["type"] == "SUBSCRIBE"
    assert call["subscribe"]["framework_info"]["capabilities"] == [{}, {"type": "MULTI_ROLE"}]


def test_required_enum_with_unknown_value_is_an_error() -> None:
    message = _error(
        {
            "type": "REQUEST",
            "framework_id": FW,
            "request": {"requests": [{"resources": [{"name": "x", "type": "WEIRD"}]}]},
        }
    )
    assert "Failed to find enum for 'WEIRD'" in message


def test_integers_are_range_checked() -> None:
    message = _error(
        {
            "type": "KILL",
            "framework_id": FW,
            "kill": {"task_id": FW, "kill_policy": {"grace_period": {"nanoseconds": 2**70}}},
        }
    )
    assert "out of range" in message
    assert "to integer" in _error(
        {
            "type": "KILL",
            "framework_id": FW,
            "kill": {"task_id": FW, "kill_policy": {"grace_period": {"nanoseconds": 1.5}}},
        }
    )


def test_deeply_nested_bodies_are_refused() -> None:
    deep: Any = {}
    for _ in range(MAX_NESTING + 5):
        deep = {"x": deep}
    assert "nesting" in _error({"type": "TEARDOWN", "framework_id": FW, "junk": deep})
    assert "Failed to parse body into JSON" in _error(b"[" * 100_000 + b"]" * 100_000)


def test_principal_must_match_framework_info() -> None:
    body = json.dumps(
        {
            "type": "SUBSCRIBE",
            "subscribe": {"framework_info": {"user": "u", "name": "n", "principal": "bob"}},
        }
    ).encode()
    with pytest.raises(CallError, match="Authenticated principal 'alice' does not match"):
        parse_call(body, principal="alice")
    assert parse_call(body, principal="bob")["type"] == "SUBSCRIBE"


def test_validate_task_id_messages() -> None:
    assert validate_task_id("fine") is None
    assert validate_task_id("a/b") == "TaskID 'a/b' contains invalid characters"
    assert validate_task_id("") == "'TaskInfo.task_id' is invalid: ID must not be empty"


@pytest.mark.parametrize("role", ["*", "dev", "eng/ml", "a.b", "x-1"])
def test_valid_roles(role: str) -> None:
    assert validate_role(role) is None


@pytest.mark.parametrize("role", ["", "/a", "a/", "a//b", "..", "a/./b", "-x", "a b", "a/*"])
def test_invalid_roles(role: str) -> None:
    assert validate_role(role) is not None


def test_framework_info_roles_need_multi_role() -> None:
    base = {"user": "u", "name": "n"}
    assert validate_framework_info(dict(base, roles=["a"])) == (
        "'FrameworkInfo.roles' must not be set when the framework is not MULTI_ROLE capable"
    )
    multi = dict(base, capabilities=[{"type": "MULTI_ROLE"}])
    assert validate_framework_info(dict(multi, roles=["a", "b"])) is None
    assert "must not be set" in str(validate_framework_info(dict(multi, role="a")))
    assert "duplicate" in str(validate_framework_info(dict(multi, roles=["a", "a"])))
    assert "not a valid role" in str(validate_framework_info(dict(base, role="a b")))
    assert "failover_timeout" in str(validate_framework_info(dict(base, failover_timeout=1e300)))
    assert framework_roles(dict(multi, roles=["a", "b"])) == ["a", "b"]
    assert framework_roles(base) == ["*"]
