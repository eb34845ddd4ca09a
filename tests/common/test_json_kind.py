"""The kind of a JSON value, bare (Mesos' messages) and with an article (ours)."""

from __future__ import annotations

import pytest

from disauto.common.json_kind import json_kind
from disauto.common.json_kind import json_kind_with_article


@pytest.mark.parametrize(("value", "bare", "article"), [
    (True, "boolean", "a boolean"), (3, "number", "a number"), (2.5, "number", "a number"),
    ("x", "string", "a string"), ([1], "array", "a list"), ({}, "object", "an object"),
    (None, "null", "null"),
])
def test_kinds(value: object, bare: str, article: str) -> None:
    assert json_kind(value) == bare and json_kind_with_article(value) == article
