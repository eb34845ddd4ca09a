"""The sample line: how a command collector or processor hands samples to the framework.

A command prints one JSON object per line on its stdout::

    {"data_name": "gpu_temperature", "node": "agent-1", "value": 61.5, "trial": 3,
     "time": 1735689600.25}

``data_name`` (letters, digits, ``_ . : -``; at most 64), ``node`` (a non-empty string, at most
200) and ``value`` (a finite number) are required; ``trial`` (an integer >= 0, or null for a
figure of the whole node) and ``time`` (Unix seconds; default: when the line was read) are
optional; any other key is an error. Blank lines are skipped. A processor command receives its
input samples the same way, one line each, on its stdin (``time`` and ``trial`` always given).

Every bad line is reported as a :class:`LineError` naming the line, what is wrong and what is
valid; it never stops the lines after it.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
import json
import math
import re
from typing import Any

from disauto.common.telemetry import Sample


NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
"""A valid data name (and registry entry name)."""
REQUIRED = ("data_name", "node", "value")
OPTIONAL = ("trial", "time")
MAX_LINE = 4096


class LineError(ValueError):
    """One bad sample line; the message is one line."""


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)


def parse_line(text: str, now: float) -> Sample:
    """The sample on one line.

    Raises:
        LineError: the line is not a valid sample (the message says why and what is valid).
    """
    if len(text) > MAX_LINE:
        raise LineError(f"longer than {MAX_LINE} characters")
    try:
        data = json.loads(text)
    except ValueError:
        raise LineError(f"not JSON: {text[:80]!r} (a sample line is one JSON object, e.g. "
                        '{"data_name": "x", "node": "agent-1", "value": 1.5})') from None
    if not isinstance(data, dict):
        raise LineError(f"a sample line is a JSON object, not {type(data).__name__}")
    missing = [key for key in REQUIRED if key not in data]
    if missing:
        raise LineError(f"missing {', '.join(missing)} (required: {', '.join(REQUIRED)}; "
                        f"optional: {', '.join(OPTIONAL)})")
    unknown = sorted(set(data) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise LineError(f"unknown key {', '.join(unknown)} (valid: "
                        f"{', '.join(REQUIRED + OPTIONAL)})")
    name, node, value = data["data_name"], data["node"], data["value"]
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise LineError(f"bad data_name {name!r}: 1-64 of letters, digits, _ . : -")
    if not isinstance(node, str) or not node or len(node) > 200:
        raise LineError(f"bad node {node!r}: a non-empty string of at most 200 characters")
    if not _number(value):
        raise LineError(f"bad value {value!r} of {name}: a finite number")
    trial = data.get("trial")
    if trial is not None and (not isinstance(trial, int) or isinstance(trial, bool)
                              or trial < 0):
        raise LineError(f"bad trial {trial!r}: an integer >= 0, or null")
    when = data.get("time", now)
    if not _number(when) or when < 0:
        raise LineError(f"bad time {when!r}: Unix seconds, a finite number >= 0")
    return Sample(data_name=name, node=node, time=float(when), value=float(value), trial=trial)


def parse_lines(lines: Iterable[str], now: float) -> tuple[list[Sample], list[str]]:
    """The samples of the good lines, and one message per bad line (``line N: why``)."""
    samples: list[Sample] = []
    errors: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            samples.append(parse_line(line.strip(), now))
        except LineError as err:
            errors.append(f"line {number}: {err}")
    return samples, errors


def format_lines(samples: Sequence[Sample]) -> str:
    """Samples as sample lines (a processor command's stdin)."""
    return "".join(json.dumps({"data_name": s.data_name, "node": s.node, "value": s.value,
                               "trial": s.trial, "time": s.time}) + "\n" for s in samples)


def sample_json(sample: Sample) -> dict[str, Any]:
    """A sample as the data service answers it."""
    return {"data_name": sample.data_name, "node": sample.node, "trial": sample.trial,
            "time": sample.time, "value": sample.value}
