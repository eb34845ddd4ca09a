"""Loading the parameter file (``--tuning-parameters``) into a search space.

The format is the paper's (Fig. 3)::

    {
      "parameters": [
        {"name": "momentum", "type": "bound", "value": [0.1, 0.3]},
        {"name": "learningRate", "type": "number", "value": [0.1, 0.2, 0.3]}
      ],
    }

with these types (every parameter has ``"name"``, ``"type"`` and ``"value"``; ``"description"``
is allowed and ignored):

* ``"bound"``: ``[low, high]``, numbers with low < high -> :class:`~common.space.RealParam`;
* ``"int"`` or ``"integer"``: ``[low, high]``, whole numbers with low <= high ->
  :class:`~common.space.IntParam`;
* ``"number"``: a non-empty list of distinct numbers -> :class:`~common.space.CategoricalParam`;
* ``"choice"`` or ``"categorical"``: a non-empty list of distinct strings or numbers ->
  :class:`~common.space.CategoricalParam`.

Ranges also take ``"log": true`` (needs low > 0) and ``"step": x`` (0 < x <= high - low; a whole
number for integers), but not both. Any parameter takes ``"when": {"optimizer": "sgd"}`` (a value
or a list of values per parent; several parents must all hold): it then exists only in trials
where those parents have those values (:mod:`common.conditions`: a parent must be a ``"number"``
or ``"choice"`` parameter, the values among its own, and the conditions free of cycles).

Numbers keep their JSON type: in ``"number"`` and ``"choice"`` lists ``1`` stays an int and
``1.0`` a float; ``"bound"`` accepts integer bounds and is still continuous. Booleans and
``null`` are not values (the wire format has no such type).

As printed in the paper, the example has a trailing comma before the closing brace; trailing
commas before ``]`` and ``}`` are accepted (a string-aware pre-pass blanks them, keeping every
line and column where it was, then :func:`json.loads` parses). Everything else is strict JSON.

Every problem raises :class:`~submit.errors.ParameterFileError` with a one-line message naming the
file, the parameter (by name, or by 1-based position) and what is wrong and valid.
"""

from __future__ import annotations

from collections.abc import Mapping
import json
import math
import os
from pathlib import Path
from typing import Any

from disauto.common.errors import SearchSpaceError
from disauto.common.json_kind import json_kind_with_article as _kind
from disauto.common.space import MAX_EXACT_INT
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import Param
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.space import Value
from disauto.submit.errors import ParameterFileError


__all__ = [
    "PARAMETER_TYPES",
    "ParameterFileError",
    "load_parameter_file",
    "parse_parameter_document",
    "strip_trailing_commas",
]

PARAMETER_TYPES: tuple[str, ...] = ("bound", "number", "int", "integer", "choice", "categorical")
"""The accepted ``"type"`` values, in the order error messages list them."""

_RANGE_TYPES = frozenset({"bound", "int", "integer"})
_RANGE_KEYS = ("name", "type", "value", "log", "step", "when", "description")
_LIST_KEYS = ("name", "type", "value", "when", "description")
_TOP_LEVEL_KEYS = ("parameters",)
_MAX_SHOWN = 60


class _JsonObject(dict[str, Any]):
    """A JSON object that remembers which keys appeared more than once."""

    duplicates: tuple[str, ...] = ()


def _object_pairs(pairs: list[tuple[str, Any]]) -> _JsonObject:
    result = _JsonObject()
    duplicates = []
    for key, value in pairs:
        if key in result:
            duplicates.append(key)
        result[key] = value
    result.duplicates = tuple(duplicates)
    return result


def _show(value: object) -> str:
    """Render a JSON value as the user wrote it (NaN, true, "text"), cut to one short line."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _quoted(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def strip_trailing_commas(text: str) -> str:
    """Blank out commas that directly precede ``]`` or ``}`` (whitespace between allowed).

    Commas inside strings (escapes included) are left alone, and so is a comma that does not
    follow a value (``[,]`` stays invalid). Each removed comma becomes a space, so the line and
    column of any later JSON error are unchanged.

    Args:
        text: JSON text, possibly with trailing commas.

    Returns:
        The text with those commas replaced by spaces.
    """
    chars = list(text)
    in_string = escaped = False
    previous = ""  # last character outside strings that is not whitespace
    pending: int | None = None  # index of a comma that only whitespace has followed so far
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char in " \t\r\n":
            continue
        if char in "]}" and pending is not None:
            chars[pending] = " "
        pending = None
        if char == "," and previous not in ("", "[", "{", ","):
            pending = index
        elif char == '"':
            in_string = True
        previous = char
    return "".join(chars)


MAX_FILE_BYTES = 1 << 20
"""The largest parameter file: its space travels to AppCore in one gRPC message (4 MiB at most),
and a search space of that size is a mistake, not a search."""


def load_parameter_file(path: str | os.PathLike[str]) -> SearchSpace:
    """Load and validate a parameter file.

    Args:
        path: The file (named in every error message as given).

    Returns:
        The search space, parameters in the file's order.

    Raises:
        ParameterFileError: If the file is missing, a directory, unreadable, not UTF-8, empty,
            not JSON (with line and column), or not a valid parameter document.
    """
    label = os.fspath(path)
    file = Path(label)
    if file.is_dir():
        raise ParameterFileError(label, "is a directory, not a parameter file")
    try:
        size = file.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ParameterFileError(label, f"is {size} bytes; a parameter file may hold at "
                                            f"most {MAX_FILE_BYTES} bytes (1 MiB)")
        raw = file.read_bytes()
    except FileNotFoundError:
        raise ParameterFileError(label, "no such file") from None
    except OSError as error:
        raise ParameterFileError(label, f"cannot read: {error.strerror or error}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ParameterFileError(
            label, f"not UTF-8 text (bad byte at offset {error.start})"
        ) from None
    if not text.strip():
        raise ParameterFileError(label, 'file is empty; expected {"parameters": [...]}')
    try:
        document = json.loads(strip_trailing_commas(text), object_pairs_hook=_object_pairs)
    except json.JSONDecodeError as error:
        raise ParameterFileError(
            label, f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        ) from None
    except RecursionError:
        raise ParameterFileError(label, "invalid JSON: nested too deeply") from None
    return parse_parameter_document(document, source=label)


def parse_parameter_document(document: object, source: str = "<parameters>") -> SearchSpace:
    """Validate an already-parsed parameter document and build its search space.

    Args:
        document: The parsed JSON (``{"parameters": [...]}``).
        source: Names the document in error messages (the file path).

    Returns:
        The search space.

    Raises:
        ParameterFileError: Naming ``source``, the parameter and the problem.
    """
    if not isinstance(document, dict):
        raise ParameterFileError(
            source,
            f'the top level must be an object {{"parameters": [...]}}, got {_kind(document)}',
        )
    _check_keys(document, _TOP_LEVEL_KEYS, source, None, "top-level key")
    if "parameters" not in document:
        raise ParameterFileError(
            source, 'missing "parameters": a list of {"name", "type", "value"} objects'
        )
    entries = document["parameters"]
    if not isinstance(entries, list):
        raise ParameterFileError(
            source, f'"parameters" must be a list of objects, got {_kind(entries)}'
        )
    if not entries:
        raise ParameterFileError(source, '"parameters" is empty; give at least one parameter')
    params: list[Param] = []
    positions: dict[str, int] = {}
    when: dict[str, dict[str, Value | list[Value]]] = {}
    for position, entry in enumerate(entries, start=1):
        param = _parse_parameter(entry, position, source)
        if param.name in positions:
            raise ParameterFileError(
                source,
                f"duplicate name (parameter #{positions[param.name]} has it too); "
                "names must be unique",
                param.name,
            )
        positions[param.name] = position
        params.append(param)
        if "when" in entry:
            when[param.name] = _parse_when(entry["when"], param.name, source)
    try:
        return SearchSpace(tuple(params), when)
    except SearchSpaceError as error:  # a condition naming another parameter, or a cycle
        name, _, detail = str(error).partition(": ")
        named = next((n for n in when if name == f"parameter {n!r}"), None)
        raise ParameterFileError(source, detail if named else str(error), named) from None


def _parse_when(raw: object, name: str, source: str) -> dict[str, Value | list[Value]]:
    """The shape of ``"when"``: ``{"parent": value or [values]}``; the rest is the space's."""
    example = '{"optimizer": "sgd"} or {"optimizer": ["sgd", "rmsprop"]}'
    if not isinstance(raw, dict) or not raw:
        raise ParameterFileError(
            source, f'"when" must be an object naming parents and their values, e.g. {example}; '
                    f"got {_show(raw)}", name)
    _check_keys(raw, tuple(raw), source, name, "key")  # duplicate parents
    for parent, values in raw.items():
        items = values if isinstance(values, list) else [values]
        if not items or not all(_is_number(v) or isinstance(v, str) for v in items):
            raise ParameterFileError(
                source, f'"when": the values of {_show(parent)} must be a string or a number, '
                        f"or a non-empty list of them, got {_show(values)}", name)
    return dict(raw)


def _check_keys(
    entry: Mapping[str, Any],
    valid: tuple[str, ...],
    source: str,
    where: str | int | None,
    what: str,
    suffix: str = "",
) -> None:
    duplicates = getattr(entry, "duplicates", ())
    if duplicates:
        raise ParameterFileError(source, f"duplicate key {_show(duplicates[0])}", where)
    for key in entry:
        if key not in valid:
            raise ParameterFileError(
                source, f"unknown {what} {_show(key)}{suffix}; valid keys: {_quoted(valid)}",
                where
            )


def _parse_parameter(entry: object, position: int, source: str) -> Param:
    if not isinstance(entry, dict):
        raise ParameterFileError(
            source,
            f'must be an object with "name", "type" and "value", got {_kind(entry)}',
            position,
        )
    if "name" not in entry:
        raise ParameterFileError(source, 'missing "name"', position)
    name = entry["name"]
    if not isinstance(name, str) or not name.strip():
        raise ParameterFileError(
            source, f'"name" must be a non-empty string, got {_show(name)}', position
        )
    if "type" not in entry:
        raise ParameterFileError(
            source, f'missing "type"; valid types: {_quoted(PARAMETER_TYPES)}', name
        )
    kind = entry["type"]
    if kind not in PARAMETER_TYPES:
        raise ParameterFileError(
            source, f"unknown type {_show(kind)}; valid types: {_quoted(PARAMETER_TYPES)}", name
        )
    valid_keys = _RANGE_KEYS if kind in _RANGE_TYPES else _LIST_KEYS
    _check_keys(entry, valid_keys, source, name, "key", f' for type "{kind}"')
    if "value" not in entry:
        raise ParameterFileError(source, f'missing "value"; {_needs(kind)}', name)
    try:
        if kind == "bound":
            return _parse_bound(entry, name, source)
        if kind in ("int", "integer"):
            return _parse_int(entry, kind, name, source)
        return _parse_list(entry, kind, name, source)
    except SearchSpaceError as error:  # a rule only the domain checks
        detail = str(error).removeprefix(f"parameter {name!r}: ")
        raise ParameterFileError(source, detail, name) from None


def _needs(kind: str) -> str:
    if kind == "bound":
        return '"bound" needs "value": [low, high] with low < high'
    if kind in ("int", "integer"):
        return f'"{kind}" needs "value": [low, high] with integers low <= high'
    if kind == "number":
        return '"number" needs "value": a non-empty list of distinct numbers'
    return f'"{kind}" needs "value": a non-empty list of distinct strings or numbers'


def _range_bounds(entry: Mapping[str, Any], kind: str, name: str, source: str) -> list[Any]:
    value = entry["value"]
    if not isinstance(value, list) or len(value) != 2:
        raise ParameterFileError(source, f"{_needs(kind)}, got {_show(value)}", name)
    if not all(_is_number(bound) for bound in value):
        raise ParameterFileError(
            source, f"{_needs(kind)}; the bounds must be numbers, got {_show(value)}", name
        )
    if not all(_is_finite(bound) for bound in value):
        raise ParameterFileError(
            source, f"{_needs(kind)}; the bounds must be finite, got {_show(value)}", name
        )
    return value


def _log_flag(entry: Mapping[str, Any], name: str, source: str) -> bool:
    log = entry.get("log", False)
    if not isinstance(log, bool):
        raise ParameterFileError(source, f'"log" must be true or false, got {_show(log)}', name)
    return log


def _parse_bound(entry: Mapping[str, Any], name: str, source: str) -> RealParam:
    low, high = (float(bound) for bound in _range_bounds(entry, "bound", name, source))
    if not low < high:
        raise ParameterFileError(source, f"{_needs('bound')}, got {_show(entry['value'])}", name)
    log = _log_flag(entry, name, source)
    if log and low <= 0:
        raise ParameterFileError(
            source, f'"log": true needs low > 0, got {_show(entry["value"])}', name
        )
    step: float | None = None
    if "step" in entry:
        raw = entry["step"]
        if not _is_number(raw) or not _is_finite(raw) or raw <= 0:
            raise ParameterFileError(
                source, f'"step" must be a positive number, got {_show(raw)}', name
            )
        if log:
            raise ParameterFileError(source, '"log" and "step" cannot be combined; drop one', name)
        step = float(raw)
    return RealParam(name, low, high, log=log, step=step)


def _whole(value: float | int) -> int | None:
    if isinstance(value, int):
        return value
    return int(value) if value.is_integer() else None


def _parse_int(entry: Mapping[str, Any], kind: str, name: str, source: str) -> IntParam:
    bounds = [_whole(bound) for bound in _range_bounds(entry, kind, name, source)]
    low, high = bounds
    if low is None or high is None or low > high:
        raise ParameterFileError(source, f"{_needs(kind)}, got {_show(entry['value'])}", name)
    if max(abs(low), abs(high)) > MAX_EXACT_INT:
        raise ParameterFileError(
            source, f"integer bounds must be within +-2**53, got {_show(entry['value'])}", name
        )
    log = _log_flag(entry, name, source)
    if log and low < 1:
        raise ParameterFileError(
            source, f'"log": true needs low >= 1, got {_show(entry["value"])}', name
        )
    step = 1
    if "step" in entry:
        raw = entry["step"]
        whole = _whole(raw) if _is_number(raw) and _is_finite(raw) else None
        if whole is None or whole < 1:
            raise ParameterFileError(
                source, f'"step" must be a positive whole number, got {_show(raw)}', name
            )
        if log and whole != 1:
            raise ParameterFileError(source, '"log" and "step" cannot be combined; drop one', name)
        step = whole
    return IntParam(name, low, high, log=log, step=step)


def _parse_list(entry: Mapping[str, Any], kind: str, name: str, source: str) -> CategoricalParam:
    value = entry["value"]
    if not isinstance(value, list) or not value:
        raise ParameterFileError(source, f"{_needs(kind)}, got {_show(value)}", name)
    numbers_only = kind == "number"
    seen: dict[Value, int] = {}
    for position, item in enumerate(value, start=1):
        if numbers_only and not _is_number(item):
            hint = '; use "choice" for strings' if isinstance(item, str) else ""
            raise ParameterFileError(
                source,
                f'"number" values must be numbers, got {_show(item)} at position {position}{hint}',
                name,
            )
        if not (_is_number(item) or isinstance(item, str)):
            raise ParameterFileError(
                source,
                f'"{kind}" values must be strings or numbers, got {_show(item)} at position '
                f'{position} (write booleans as "true"/"false" or 1/0)',
                name,
            )
        if isinstance(item, float) and not math.isfinite(item):
            raise ParameterFileError(
                source, f"values must be finite, got {_show(item)} at position {position}", name
            )
        if item in seen:
            raise ParameterFileError(
                source,
                f"duplicate value {_show(item)} at positions {seen[item]} and {position}; "
                "values must be distinct",
                name,
            )
        seen[item] = position
    return CategoricalParam(name, tuple(value))
