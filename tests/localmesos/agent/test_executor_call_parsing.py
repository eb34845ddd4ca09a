"""An executor's call is parsed as Mesos parses it (stout's JSON into the ``executor::Call``
protobuf): a field the protobuf lacks is left out, a required one missing is refused with 400,
so nothing malformed reaches a framework in an UPDATE (the fuzz test found a limitation whose
resource's ``provider_id`` and ``allocation_info`` carried fields of their own, forwarded as
sent)."""

from __future__ import annotations

import base64
import json
from typing import Any
import uuid

import pytest

from disauto.localmesos.agent.executor_api import CallError
from disauto.localmesos.agent.executor_api import parse_call


def update(resource: dict[str, Any]) -> bytes:
    return json.dumps({
        "type": "UPDATE", "executor_id": {"value": "e"}, "framework_id": {"value": "f"},
        "update": {"status": {
            "task_id": {"value": "t"}, "state": "TASK_FAILED", "source": "SOURCE_EXECUTOR",
            "uuid": base64.b64encode(uuid.uuid4().bytes).decode(),
            "limitation": {"resources": [resource]}}}}).encode()


MEM = {"name": "mem", "type": "SCALAR", "scalar": {"value": 128.0}}


def test_a_limitation_of_well_formed_resources_is_taken() -> None:
    call = parse_call(update({**MEM, "provider_id": {"value": "p"},
                              "allocation_info": {"role": "ml"}}))
    [resource] = call["update"]["status"]["limitation"]["resources"]
    assert resource["provider_id"] == {"value": "p"}
    assert resource["allocation_info"] == {"role": "ml"}


def test_fields_the_protobuf_lacks_are_left_out_as_mesos_parses_json() -> None:
    call = parse_call(update({**MEM, "provider_id": {"value": "p", "else": 1},
                              "allocation_info": {"role": "ml", "2": "x"}}))
    [resource] = call["update"]["status"]["limitation"]["resources"]
    assert resource["provider_id"] == {"value": "p"}
    assert resource["allocation_info"] == {"role": "ml"}


def test_a_provider_id_without_its_value_is_refused() -> None:
    with pytest.raises(CallError, match="Failed to convert JSON into Call protobuf: Missing "
                                        "required fields: value"):
        parse_call(update({**MEM, "provider_id": {}}))
