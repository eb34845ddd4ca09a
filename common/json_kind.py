"""The kind of a parsed JSON value, for messages that say what was found instead."""

from __future__ import annotations

from typing import Any


def json_kind(value: Any) -> str:
    """``boolean``, ``number``, ``string``, ``array``, ``object`` or ``null``."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def json_kind_with_article(value: Any) -> str:
    """``an object``, ``a list``, ``a string``, ``a boolean``, ``a number`` or ``null``."""
    kind = json_kind(value)
    return {"object": "an object", "array": "a list", "null": "null"}.get(kind, f"a {kind}")
