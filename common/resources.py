"""Mesos resources: parsing sizes, and arithmetic on the JSON ``Resource`` lists of the v1 API.

A :class:`Resources` value holds unreserved scalars (``cpus``, ``mem``, ``disk``, ``gpus``, any
custom scalar) and ranges (``ports``). It converts from and to the Mesos JSON form
(``[{"name": "cpus", "type": "SCALAR", "scalar": {"value": 4}, "role": "*"}, ...]``) and to the
object form of ``/master/state`` (``{"cpus": 4, "mem": 1024, "ports": "[31000-32000]"}``).
Scalars use Mesos' fixed-point precision of three decimals. ``mem`` and ``disk`` are MB.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import math
import re
from typing import Any


SCALAR_NAMES = ("cpus", "gpus", "mem", "disk")
_PRECISION = 1000  # Mesos keeps scalars as fixed point with three decimals.
#: Largest scalar the fixed point holds (int64 thousandths); larger values are invalid.
MAX_SCALAR = float(2**63 // _PRECISION)

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_SIZE_UNITS_MB = {
    "": 1.0,
    "b": 1.0 / (1024 * 1024),
    "k": 1.0 / 1024,
    "kb": 1.0 / 1024,
    "m": 1.0,
    "mb": 1.0,
    "g": 1024.0,
    "gb": 1024.0,
    "t": 1024.0 * 1024,
    "tb": 1024.0 * 1024,
}
SIZE_HELP = (
    "a number with an optional unit B, KB, MB, GB or TB (e.g. 512MB, 5G, 20GB); no unit means MB"
)


class ResourceError(ValueError):
    """A resource value or size that cannot be understood."""


def parse_size_mb(text: str | float | int, *, what: str = "size") -> float:
    """Parse a Mesos-style size (``20GB``, ``512MB``, ``5G``, ``1024``) into megabytes.

    Raises:
        ResourceError: naming ``what`` and the accepted forms.
    """
    if isinstance(text, bool):
        raise ResourceError(f"invalid {what} {text!r}: expected {SIZE_HELP}")
    if isinstance(text, int | float):
        value, unit = float(text), ""
    else:
        match = _SIZE_RE.match(str(text))
        if not match or match.group(2).lower() not in _SIZE_UNITS_MB:
            raise ResourceError(f"invalid {what} {text!r}: expected {SIZE_HELP}")
        value, unit = float(match.group(1)), match.group(2).lower()
    mb = value * _SIZE_UNITS_MB[unit]
    if not math.isfinite(mb) or mb <= 0:
        raise ResourceError(f"invalid {what} {text!r}: must be greater than zero")
    return round(mb, 3)


def _round(value: float) -> float:
    return round(value * _PRECISION) / _PRECISION


def parse_ranges(text: str) -> list[tuple[int, int]]:
    """Parse ``[31000-32000,33000-33010]`` (brackets optional) into sorted, merged ranges."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    ranges: list[tuple[int, int]] = []
    for part in filter(None, (p.strip() for p in body.split(","))):
        bounds = part.split("-")
        try:
            if len(bounds) == 1:
                begin = end = int(bounds[0])
            elif len(bounds) == 2:
                begin, end = int(bounds[0]), int(bounds[1])
            else:
                raise ValueError(part)
        except ValueError:
            raise ResourceError(
                f"invalid range {part!r} in {text!r}: expected BEGIN-END, e.g. [31000-32000]"
            ) from None
        if begin < 0 or end < begin:
            raise ResourceError(f"invalid range {part!r} in {text!r}: need 0 <= BEGIN <= END")
        ranges.append((begin, end))
    return _merge(ranges)


def _merge(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for begin, end in sorted(ranges):
        if merged and begin <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    return merged


def _subtract_ranges(
    have: list[tuple[int, int]], take: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    result = list(have)
    for t_begin, t_end in take:
        nxt: list[tuple[int, int]] = []
        for begin, end in result:
            if t_end < begin or t_begin > end:
                nxt.append((begin, end))
                continue
            if begin < t_begin:
                nxt.append((begin, t_begin - 1))
            if t_end < end:
                nxt.append((t_end + 1, end))
        result = nxt
    return result


def _ranges_contain(have: list[tuple[int, int]], want: list[tuple[int, int]]) -> bool:
    return all(any(b <= w_b and w_e <= e for b, e in have) for w_b, w_e in want)


def format_ranges(ranges: Iterable[tuple[int, int]]) -> str:
    """Format ranges as ``/master/state`` does: ``[31000-31005, 31010-31010]``."""
    return "[" + ", ".join(f"{b}-{e}" for b, e in ranges) + "]"


class Resources:
    """An immutable bag of unreserved scalar and range resources."""

    __slots__ = ("_scalars", "_ranges")

    def __init__(
        self,
        scalars: Mapping[str, float] | None = None,
        ranges: Mapping[str, Iterable[tuple[int, int]]] | None = None,
    ) -> None:
        self._scalars: dict[str, float] = {
            name: _round(value) for name, value in (scalars or {}).items() if _round(value) > 0
        }
        self._ranges: dict[str, list[tuple[int, int]]] = {}
        for name, value in (ranges or {}).items():
            merged = _merge(value)
            if merged:
                self._ranges[name] = merged

    # -- conversions -----------------------------------------------------------------------

    @classmethod
    def from_json(cls, resources: Iterable[Mapping[str, Any]]) -> Resources:
        """Build from a Mesos JSON ``Resource`` list.

        Raises:
            ResourceError: for a resource without a name, of an unsupported type, or with a
                negative, non-finite or malformed value.
        """
        scalars: dict[str, float] = {}
        ranges: dict[str, list[tuple[int, int]]] = {}
        for res in resources:
            if not isinstance(res, Mapping):
                raise ResourceError(f"resource {res!r} is not an object")
            name = res.get("name")
            kind = res.get("type")
            if not isinstance(name, str) or not name:
                raise ResourceError(f"resource {dict(res)!r} has no 'name'")
            if kind == "SCALAR":
                try:
                    value = float(res["scalar"]["value"])
                except (KeyError, TypeError, ValueError):
                    raise ResourceError(f"scalar resource {name!r} lacks scalar.value") from None
                if not math.isfinite(value) or value < 0 or value > MAX_SCALAR:
                    raise ResourceError(f"scalar resource {name!r} has invalid value {value}")
                scalars[name] = scalars.get(name, 0.0) + value
            elif kind == "RANGES":
                try:
                    items = res["ranges"]["range"]
                    parsed = [(int(r["begin"]), int(r["end"])) for r in items]
                except (KeyError, TypeError, ValueError):
                    raise ResourceError(
                        f"ranges resource {name!r} lacks ranges.range[].begin/end"
                    ) from None
                if any(b < 0 or e < b for b, e in parsed):
                    raise ResourceError(f"ranges resource {name!r} has an invalid range")
                ranges.setdefault(name, []).extend(parsed)
            else:
                raise ResourceError(
                    f"resource {name!r} has unsupported type {kind!r}: expected SCALAR or RANGES"
                )
        return cls(scalars, ranges)

    def to_json(self, role: str | None = "*") -> list[dict[str, Any]]:
        """The Mesos JSON ``Resource`` list (``role: "*"``, pre-refinement format)."""
        out: list[dict[str, Any]] = []
        for name in sorted(self._scalars, key=_scalar_order):
            item: dict[str, Any] = {
                "name": name,
                "type": "SCALAR",
                "scalar": {"value": self._scalars[name]},
            }
            if role is not None:
                item["role"] = role
            out.append(item)
        for name in sorted(self._ranges):
            item = {
                "name": name,
                "type": "RANGES",
                "ranges": {"range": [{"begin": b, "end": e} for b, e in self._ranges[name]]},
            }
            if role is not None:
                item["role"] = role
            out.append(item)
        return out

    def to_state(self) -> dict[str, Any]:
        """The object form used by ``/master/state``: cpus/gpus/mem/disk always present."""
        out: dict[str, Any] = {name: 0.0 for name in SCALAR_NAMES}
        out.update(self._scalars)
        for name, value in self._ranges.items():
            out[name] = format_ranges(value)
        return out

    # -- queries ---------------------------------------------------------------------------

    def scalar(self, name: str) -> float:
        return self._scalars.get(name, 0.0)

    def ranges(self, name: str) -> list[tuple[int, int]]:
        return list(self._ranges.get(name, []))

    @property
    def scalars(self) -> dict[str, float]:
        return dict(self._scalars)

    def is_empty(self) -> bool:
        return not self._scalars and not self._ranges

    def contains(self, other: Resources) -> bool:
        """True when every resource of ``other`` is available here."""
        for name, value in other._scalars.items():
            if self._scalars.get(name, 0.0) + 1e-9 < value:
                return False
        return all(
            _ranges_contain(self._ranges.get(name, []), value)
            for name, value in other._ranges.items()
        )

    # -- arithmetic ------------------------------------------------------------------------

    def __add__(self, other: Resources) -> Resources:
        scalars = dict(self._scalars)
        for name, value in other._scalars.items():
            scalars[name] = scalars.get(name, 0.0) + value
        ranges = {name: list(value) for name, value in self._ranges.items()}
        for name, value in other._ranges.items():
            ranges.setdefault(name, []).extend(value)
        return Resources(scalars, ranges)

    def __sub__(self, other: Resources) -> Resources:
        scalars = dict(self._scalars)
        for name, value in other._scalars.items():
            scalars[name] = max(0.0, scalars.get(name, 0.0) - value)
        ranges = {
            name: _subtract_ranges(value, other._ranges.get(name, []))
            for name, value in self._ranges.items()
        }
        return Resources(scalars, ranges)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resources):
            return NotImplemented
        return self._scalars == other._scalars and self._ranges == other._ranges

    def __hash__(self) -> int:
        return hash((tuple(sorted(self._scalars.items())), tuple(sorted(
            (k, tuple(v)) for k, v in self._ranges.items()))))

    def __repr__(self) -> str:
        parts = [f"{k}:{v:g}" for k, v in sorted(self._scalars.items())]
        parts += [f"{k}:{format_ranges(v)}" for k, v in sorted(self._ranges.items())]
        return f"Resources({'; '.join(parts)})"


def _scalar_order(name: str) -> tuple[int, str]:
    return (SCALAR_NAMES.index(name) if name in SCALAR_NAMES else len(SCALAR_NAMES), name)
