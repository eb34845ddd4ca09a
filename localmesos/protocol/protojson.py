"""JSON bodies into proto messages, the way a Mesos 1.11 master or agent reads them.

A call goes through the stages of ``Master::Http::scheduler`` and ``Http::executor``
(apache/mesos ``src/master/http.cpp``, ``src/slave/http.cpp``); the first two are here, and each
failure gives the same kind of ``400`` message:

1. JSON decoding (:func:`decode_json`): ``"Failed to parse body into JSON: ..."``.
2. JSON → protobuf conversion (:func:`convert`, stout's ``protobuf::parse``): field types are
   checked against the proto schema, unknown keys are dropped, ``null`` means unset, unknown
   names of optional enums are dropped, numbers may come as numeric strings, ``bytes`` must be
   base64, and required fields must be present; the caller prefixes the message with
   ``"Failed to convert JSON into Call protobuf: "``.

The third stage, validating the call, belongs to each API (:mod:`localmesos.master.validation`,
:mod:`localmesos.agent.executor_api`).

The result of :func:`convert` is a *normalized* message: a plain dict holding only the fields the
schema knows, with the defaults Mesos writes back out (``CommandInfo.shell: true``,
``URI.extract: true``, ``Filters.refuse_seconds: 5``...). The master and agents act on that dict
only, so nothing they read can have an unexpected type.

The schema starts with the messages of ``mesos.proto`` that are read
(:mod:`localmesos.protocol.messages`); each API adds its calls with :func:`add_messages`. Only
the messages that are read are described field by field; message fields passed through
untouched (health checks, discovery, volumes...) are accepted as any JSON object, as long as
they are not nested absurdly deep (see :data:`MAX_NESTING`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
import json
import math
from typing import Any

from disauto.common.json_kind import json_kind
from disauto.localmesos.protocol.messages import ENUMS
from disauto.localmesos.protocol.messages import MESSAGES


#: Deepest JSON nesting accepted in a body. No Mesos message is nested anywhere near this deep,
#: so a deeper body can only be garbage; refusing it keeps every later ``json.dumps`` safe.
MAX_NESTING = 64

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
UINT32 = (0, 2**32 - 1)
UINT64 = (0, 2**64 - 1)
_INTEGER_RANGES = {"int32": INT32, "int64": INT64, "uint32": UINT32, "uint64": UINT64}


class CallError(ValueError):
    """A call answered with an HTTP error; ``str()`` is the response body.

    Attributes:
        status: the HTTP status code (400 unless said otherwise).
    """

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ConvertError(ValueError):
    """A JSON value that does not fit the proto schema (stout's conversion errors)."""


# -- the schema --------------------------------------------------------------------------------

#: A field's spec: ``"string!"`` required, ``"[msg:Resource]"`` repeated, ``"double"``
#: optional, or ``(spec, default)`` for a field whose default Mesos writes back out. Kinds:
#: string, bytes, double, int32, int64, uint32, uint64, bool, ``enum:<E>``, ``msg:<M>``,
#: ``map:<M>`` (``map<string, M>``) and ``any`` (any JSON object).
FieldSpec = str | tuple[str, Any]


@dataclass(frozen=True)
class Field:
    """One field of a message, parsed from its :data:`FieldSpec`."""

    kind: str
    repeated: bool = False
    required: bool = False
    default: Any = None

    @classmethod
    def parse(cls, spec: FieldSpec) -> Field:
        text, default = spec if isinstance(spec, tuple) else (spec, None)
        repeated = text.startswith("[")
        kind = text.strip("[]")
        required = kind.endswith("!")
        return cls(kind.rstrip("!"), repeated, required, default)


_SCHEMA: dict[str, dict[str, Field]] = {}
_ENUMS: dict[str, tuple[str, ...]] = {}
_ENUM_NUMBERS: dict[str, dict[int, str]] = {}


def add_messages(
    messages: Mapping[str, Mapping[str, FieldSpec]],
    enums: Mapping[str, Mapping[int, str]] | None = None,
) -> None:
    """Teach :func:`convert` more messages (an API's calls, e.g. the executor API's).

    Args:
        messages: message name -> field name -> :data:`FieldSpec`; names already known are
            replaced.
        enums: enum name -> number -> value name, for the ``enum:`` specs.
    """
    for name, numbers in (enums or {}).items():
        _ENUM_NUMBERS[name] = dict(numbers)
        _ENUMS[name] = tuple(numbers.values())
    for name, fields in messages.items():
        _SCHEMA[name] = {key: Field.parse(spec) for key, spec in fields.items()}


def message_fields(message: str) -> dict[str, Field]:
    """The fields of a known message, by name (a copy)."""
    return dict(_SCHEMA[message])


def enum_values(enum: str) -> tuple[str, ...]:
    """The value names of a known enum."""
    return _ENUMS[enum]


add_messages(MESSAGES, ENUMS)


# -- conversion -------------------------------------------------------------------------------


def _not_expecting(value: Any, name: str) -> ConvertError:
    return ConvertError(f"Not expecting a JSON {json_kind(value)} for field '{name}'")


def _convert_string(field: Field, value: Any, name: str) -> Any:
    if isinstance(value, str):
        return value
    raise _not_expecting(value, name)


def _convert_bytes(field: Field, value: Any, name: str) -> Any:
    if not isinstance(value, str):
        raise _not_expecting(value, name)
    try:
        base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise ConvertError(f"Failed to base64 decode bytes field '{name}': {exc}") from None
    return value


def _convert_bool(field: Field, value: Any, name: str) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    raise _not_expecting(value, name)


def _convert_double(field: Field, value: Any, name: str) -> Any:
    if isinstance(value, bool):
        raise _not_expecting(value, name)
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            raise ConvertError(
                f"Failed to convert '{value}' to number for field '{name}'"
            ) from None
    else:
        raise _not_expecting(value, name)
    if math.isnan(number):
        raise ConvertError(f"Failed to convert '{value}' to number for field '{name}'")
    return number


def _convert_integer(field: Field, value: Any, name: str) -> Any:
    low, high = _INTEGER_RANGES[field.kind]
    if isinstance(value, bool):
        raise _not_expecting(value, name)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ConvertError(
                f"Failed to convert '{value}' to integer for field '{name}'"
            ) from None
    if isinstance(value, float):
        if not value.is_integer():
            raise ConvertError(f"Failed to convert '{value}' to integer for field '{name}'")
        value = int(value)
    if not isinstance(value, int):
        raise _not_expecting(value, name)
    if not low <= value <= high:
        raise ConvertError(f"Value {value} out of range for field '{name}'")
    return value


def _convert_enum(field: Field, value: Any, name: str) -> Any:
    enum = field.kind[5:]
    if isinstance(value, str):
        if value in _ENUMS[enum]:
            return value
    elif isinstance(value, int) and not isinstance(value, bool):
        if value in _ENUM_NUMBERS[enum]:
            return _ENUM_NUMBERS[enum][value]
    else:
        raise _not_expecting(value, name)
    if field.required:
        raise ConvertError(f"Failed to find enum for '{value}'")
    return None  # stout drops unknown values of optional enums


def _convert_any(field: Field, value: Any, name: str) -> Any:
    if not isinstance(value, dict):
        raise _not_expecting(value, name)
    return value


_SCALARS: dict[str, Callable[[Field, Any, str], Any]] = {
    "string": _convert_string,
    "bytes": _convert_bytes,
    "bool": _convert_bool,
    "double": _convert_double,
    **dict.fromkeys(_INTEGER_RANGES, _convert_integer),
    "any": _convert_any,
}


def _convert_scalar(field: Field, value: Any, name: str) -> Any:
    """One non-repeated value of a non-message field; ``None`` means "drop it"."""
    if field.kind.startswith("enum:"):
        return _convert_enum(field, value, name)
    converter = _SCALARS.get(field.kind)
    if converter is None:  # pragma: no cover - the schema names only the kinds above
        raise AssertionError(f"unknown field kind {field.kind}")
    return converter(field, value, name)


def _convert_map(message: str, value: Any, name: str) -> dict[str, Any]:
    """A ``map<string, message>`` field: a JSON object of messages (stout's map support)."""
    if not isinstance(value, dict):
        raise _not_expecting(value, name)
    return {key: _convert_message(message, item, name) for key, item in value.items()}


def _convert_repeated(field: Field, raw: Any, key: str) -> list[Any]:
    if not isinstance(raw, list):
        raise _not_expecting(raw, key)
    items = []
    for item in raw:
        if item is None:
            continue
        if field.kind.startswith("msg:"):
            items.append(_convert_message(field.kind[4:], item, key))
        else:
            converted = _convert_scalar(field, item, key)
            if converted is not None:
                items.append(converted)
    return items


def _convert_message(message: str, value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _not_expecting(value, name)
    schema = _SCHEMA[message]
    out: dict[str, Any] = {}
    for key, raw in value.items():
        field = schema.get(key)
        if field is None or raw is None:
            continue  # unknown keys are ignored; null means unset
        if field.repeated:
            out[key] = _convert_repeated(field, raw, key)
        elif isinstance(raw, list):
            raise _not_expecting(raw, key)
        elif field.kind.startswith("map:"):
            out[key] = _convert_map(field.kind[4:], raw, key)
        elif field.kind.startswith("msg:"):
            out[key] = _convert_message(field.kind[4:], raw, key)
        else:
            converted = _convert_scalar(field, raw, key)
            if converted is not None:
                out[key] = converted
    missing = [key for key, field in schema.items() if field.required and key not in out]
    if missing:
        raise ConvertError("Missing required fields: " + ", ".join(missing))
    for key, field in schema.items():
        if field.default is not None and key not in out:
            out[key] = field.default
    return out


def convert(message: str, value: Any) -> dict[str, Any]:
    """Convert a JSON value into the normalized form of the proto message named ``message``.

    Raises:
        ConvertError: with stout's wording when the value does not fit the schema.
    """
    if not isinstance(value, dict):
        raise ConvertError("Expecting a JSON object")
    return _convert_message(message, value, message)


# -- decoding ---------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid literal {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _depth(value: Any) -> int:
    """Nesting depth of a decoded JSON value, computed without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def decode_json(body: bytes) -> Any:
    """Decode a request body as JSON.

    Raises:
        CallError: ``"Failed to parse body into JSON: ..."`` for bodies that are not UTF-8
            JSON, use ``NaN``/``Infinity`` literals, or nest deeper than :data:`MAX_NESTING`.
    """
    try:
        value = json.loads(
            body.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        text = str(exc) if not isinstance(exc, RecursionError) else "nesting too deep"
        raise CallError(f"Failed to parse body into JSON: {text}") from None
    if _depth(value) > MAX_NESTING:
        raise CallError(
            f"Failed to parse body into JSON: nesting deeper than {MAX_NESTING} levels"
        )
    return value
