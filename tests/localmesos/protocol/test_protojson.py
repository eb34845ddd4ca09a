"""JSON → proto conversion of the shared messages, and how an API adds its own."""

from __future__ import annotations

import pytest

from disauto.localmesos.protocol import protojson
from disauto.localmesos.protocol.protojson import CallError
from disauto.localmesos.protocol.protojson import ConvertError
from disauto.localmesos.protocol.protojson import convert
from disauto.localmesos.protocol.protojson import decode_json


def test_convert_other_messages() -> None:
    assert convert("Filters", {}) == {"refuse_seconds": 5.0}
    with pytest.raises(ValueError, match="Missing required fields: value"):
        convert("ID", {})


def test_shared_messages_are_known_without_any_api() -> None:
    """mesos.proto's messages are registered with the converter itself, so the executor API and
    the master read TaskInfos alike whichever of them was imported first."""
    task = convert("TaskInfo", {"name": "t", "task_id": {"value": "1"},
                                "agent_id": {"value": "a"}, "command": {"value": "true"}})
    assert task["command"] == {"value": "true", "shell": True}
    assert protojson.message_fields("CommandInfo.URI")["extract"].default is True
    assert "SCALAR" in protojson.enum_values("Value.Type")


def test_an_api_adds_messages_with_defaults_and_enums() -> None:
    protojson.add_messages(
        {"Probe.Call": {"id": "msg:ID!", "kind": "enum:Probe.Kind!", "wait": ("double", 2.5),
                        "tags": "[string]"}},
        {"Probe.Kind": {0: "UNKNOWN", 1: "PING"}},
    )
    assert convert("Probe.Call", {"id": {"value": "x"}, "kind": 1}) == {
        "id": {"value": "x"}, "kind": "PING", "wait": 2.5}
    assert convert("Probe.Call", {"id": {"value": "x"}, "kind": "PING", "wait": "4",
                                  "tags": ["a", None], "junk": 1})["tags"] == ["a"]
    with pytest.raises(ConvertError, match="Failed to find enum for 'PONG'"):
        convert("Probe.Call", {"id": {"value": "x"}, "kind": "PONG"})
    with pytest.raises(ConvertError, match="Missing required fields: id"):
        convert("Probe.Call", {"kind": "PING"})
    with pytest.raises(ConvertError, match="Not expecting a JSON array for field 'wait'"):
        convert("Probe.Call", {"id": {"value": "x"}, "kind": 1, "wait": [1]})


@pytest.mark.parametrize("body", [b"{", b"\xff", b'{"a": NaN}', b"[1e999]"])
def test_bodies_that_are_not_json_are_refused_as_mesos_words_it(body: bytes) -> None:
    with pytest.raises(CallError) as info:
        decode_json(body)
    assert info.value.status == 400
    assert str(info.value).startswith("Failed to parse body into JSON: ")
