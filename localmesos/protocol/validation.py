"""The checks a Mesos master and its agents share (apache/mesos ``src/common/validation.cpp``):
IDs, UUIDs and health checks.

Each check returns the error message, or ``None`` for a valid value; the caller words the
answer (a 400 body, a TASK_ERROR message).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any


NAME_MAX = 255
#: ``HealthCheck.Type`` by number.
HEALTH_CHECK_TYPES = {0: "UNKNOWN", 1: "COMMAND", 2: "HTTP", 3: "TCP"}


def valid_uuid(b64: str) -> bool:
    """True when ``b64`` decodes to the 16 bytes of a UUID (Mesos ``UUID::fromBytes``)."""
    try:
        return len(base64.b64decode(b64.encode("ascii"), validate=True)) == 16
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return False


def invalid_id_char(char: str) -> bool:
    """A character no Mesos ID may hold: a control character, ``/`` or ``\\``."""
    return ord(char) < 32 or ord(char) == 127 or char in "/\\"


def validate_id(value: str) -> str | None:
    """Mesos ``common::validation::validateID``: the error, or ``None`` for a valid ID."""
    if not value:
        return "ID must not be empty"
    if len(value) > NAME_MAX:
        return f"ID must not be greater than {NAME_MAX} characters"
    if value in (".", ".."):
        return f"'{value}' is disallowed"
    if any(invalid_id_char(c) for c in value):
        return f"'{value}' contains invalid characters"
    return None


# -- health checks ----------------------------------------------------------------------------


def health_check_type(spec: Mapping[str, Any]) -> str | None:
    """A ``HealthCheck``'s type name (given by name or number), or None when it has none."""
    kind = spec.get("type")
    if isinstance(kind, int) and not isinstance(kind, bool):
        return HEALTH_CHECK_TYPES.get(kind)
    return kind if isinstance(kind, str) else None


def _kind_error(kind: str | None, spec: Mapping[str, Any]) -> str | None:
    if kind == "COMMAND":
        command = spec.get("command")
        if not isinstance(command, Mapping):
            return "Expecting 'command' to be set for COMMAND health check"
        if not command.get("value"):
            shell = command.get("shell", True)
            return ("Command health check must contain "
                    + ("'shell command'" if shell else "'executable path'"))
        return None
    if kind == "HTTP":
        http = spec.get("http")
        if not isinstance(http, Mapping):
            return "Expecting 'http' to be set for HTTP health check"
        if http.get("scheme") not in (None, "http", "https"):
            return f"Unsupported HTTP health check scheme: '{http['scheme']}'"
        path = http.get("path")
        if path is not None and not str(path).startswith("/"):
            return f"The path '{path}' of HTTP health check must start with '/'"
        return None
    if kind == "TCP":
        return None if isinstance(spec.get("tcp"), Mapping) else (
            "Expecting 'tcp' to be set for TCP health check")
    return f"'{kind}' is not a valid health check type"


def validate_health_check(spec: Any) -> str | None:
    """Mesos' ``validateHealthCheck`` of a master: the TASK_ERROR message, or None."""
    if not isinstance(spec, Mapping):
        return "Task uses invalid health check: HealthCheck must specify 'type'"
    kind = health_check_type(spec)
    error = "HealthCheck must specify 'type'" if kind is None else _kind_error(kind, spec)
    if error is None:
        for name in ("delay_seconds", "grace_period_seconds", "interval_seconds",
                     "timeout_seconds"):
            value = spec.get(name)
            if isinstance(value, int | float) and value < 0:
                error = f"Expecting '{name}' to be non-negative"
                break
    return None if error is None else f"Task uses invalid health check: {error}"
