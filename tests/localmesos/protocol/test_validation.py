"""The checks the master and agents share: IDs and UUIDs (``src/common/validation.cpp``)."""

from __future__ import annotations

import base64
import uuid

import pytest

from disauto.localmesos.protocol.validation import valid_uuid
from disauto.localmesos.protocol.validation import validate_id


UUID = base64.b64encode(uuid.uuid4().bytes).decode()


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("ok-1.2_x", None),
        ("", "ID must not be empty"),
        (".", "'.' is disallowed"),
        ("a/b", "contains invalid characters"),
        ("tab\there", "contains invalid characters"),
        ("x" * 256, "must not be greater than 255"),
    ],
)
def test_validate_id(value: str, error: str | None) -> None:
    result = validate_id(value)
    assert (result is None) if error is None else (error in (result or ""))


def test_valid_uuid() -> None:
    assert valid_uuid(UUID)
    assert not valid_uuid("YWJj") and not valid_uuid("!!")
