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
import json
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


def parse_size_bytes(text: str, *, what: str = "size") -> int:
    """Parse a size as :func:`parse_size_mb` does, into bytes, exactly (``100KB`` is 102400).

    Raises:
        ResourceError: naming ``what`` and the accepted forms.
    """
    parse_size_mb(text, what=what)  # the same forms, the same one line for a bad one
    match = _SIZE_RE.match(text)
    assert match is not None
    return round(float(match.group(1)) * _SIZE_UNITS_MB[match.group(2).lower()] * 1024 * 1024)


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

    def names(self) -> set[str]:
        """The names of the scalars and ranges held."""
        return set(self._scalars) | set(self._ranges)

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


# -- reservations -----------------------------------------------------------------------------

#: The role of unreserved resources, as Mesos names it (``role: "*"`` in the old format).
UNRESERVED = "*"
#: The JSON formats of Mesos' ``Resource`` (``src/common/resources_utils.cpp``
#: ``convertResourceFormat``): ``post`` is RESERVATION_REFINEMENT's (``reservations``, no
#: ``role``), ``pre`` the old one (``role`` only), ``endpoint`` both (``/master/state``, the
#: operator API).
RESOURCE_FORMATS = ("post", "pre", "endpoint")


def _reservation_role(res: Mapping[str, Any]) -> str:
    """The role a JSON ``Resource`` is reserved for (:data:`UNRESERVED` when it is not).

    ``reservations`` (the RESERVATION_REFINEMENT format) wins over the old ``role``; a
    refined stack names its last, innermost role, as Mesos' ``reservationRole``.

    Raises:
        ResourceError: for a malformed ``reservations`` or ``role``.
    """
    name = res.get("name")
    reservations = res.get("reservations")
    if reservations is not None:
        if not isinstance(reservations, list):
            raise ResourceError(f"resource {name!r} has malformed 'reservations'")
        if reservations:
            last = reservations[-1]
            role = last.get("role") if isinstance(last, Mapping) else None
            if not isinstance(role, str) or not role or role == UNRESERVED:
                raise ResourceError(f"resource {name!r} has a reservation without a role")
            return role
    role = res.get("role", UNRESERVED)
    if not isinstance(role, str) or not role:
        raise ResourceError(f"resource {name!r} has an invalid 'role' {role!r}")
    return role


def is_subrole(role: str, of: str) -> bool:
    """Whether ``role`` is ``of`` or below it in the role tree (``a/b`` is below ``a``)."""
    return role == of or role.startswith(of + "/")


class RoleResources:
    """Resources with their reservations: unreserved ones (role ``*``) and those statically
    reserved for a role (Mesos' ``Resource.reservations`` of type STATIC, written by an
    agent's ``--resources 'cpus(ml):4'``).

    It answers what :class:`Resources` answers -- :meth:`scalar`, :attr:`scalars`,
    :meth:`ranges`, :meth:`to_state` sum over the reservations -- and keeps them apart where
    Mesos does: :meth:`contains`, ``+``, ``-`` and :meth:`to_json` compare and write each
    reservation on its own, so a task must ask for what was offered as it was offered.
    """

    __slots__ = ("_by_role",)

    def __init__(self, by_role: Mapping[str, Resources] | None = None) -> None:
        self._by_role: dict[str, Resources] = {
            role: value for role, value in (by_role or {}).items() if not value.is_empty()
        }

    @classmethod
    def unreserved(cls, resources: Resources) -> RoleResources:
        """``resources``, all unreserved."""
        return cls({UNRESERVED: resources})

    # -- conversions -----------------------------------------------------------------------

    @classmethod
    def from_json(cls, resources: Iterable[Mapping[str, Any]]) -> RoleResources:
        """Build from a JSON ``Resource`` list in any of Mesos' formats.

        Raises:
            ResourceError: as :meth:`Resources.from_json`, and for malformed reservations.
        """
        groups: dict[str, list[Mapping[str, Any]]] = {}
        for res in resources:
            if not isinstance(res, Mapping):
                raise ResourceError(f"resource {res!r} is not an object")
            groups.setdefault(_reservation_role(res), []).append(res)
        return cls({role: Resources.from_json(items) for role, items in groups.items()})

    @classmethod
    def parse(cls, text: str, default_role: str = UNRESERVED) -> RoleResources:
        """Parse Mesos' resource text, ``cpus(ml):4;gpus(ml):1;mem(*):8192;ports:[1-9]``
        (``Resources::fromSimpleString``), or a JSON ``Resource`` array (``fromJSON``).

        A name without ``(role)`` has ``default_role``. Scalars and ranges only.

        Raises:
            ResourceError: naming the part that does not parse.
        """
        stripped = text.strip()
        if stripped.startswith("["):
            try:
                items = json.loads(stripped)
            except ValueError as exc:
                raise ResourceError(f"resources {text!r} are not a JSON array: {exc}") from None
            if not isinstance(items, list):
                raise ResourceError(f"resources {text!r} are not a JSON array")
            return cls.from_json(items)
        out = cls()
        for token in filter(None, (part.strip() for part in stripped.split(";"))):
            out = out + _parse_token(token, default_role)
        return out

    def to_json(
        self, *, format: str = "post", allocation_role: str | None = None
    ) -> list[dict[str, Any]]:
        """The JSON ``Resource`` list, unreserved first, in ``format`` (see
        :data:`RESOURCE_FORMATS`), each with ``allocation_info`` when ``allocation_role`` is
        given."""
        if format not in RESOURCE_FORMATS:
            raise ValueError(f"unknown resource format {format!r}")
        out: list[dict[str, Any]] = []
        for role in sorted(self._by_role, key=lambda r: (r != UNRESERVED, r)):
            shown = UNRESERVED if format != "post" else None
            for item in self._by_role[role].to_json(role=shown):
                if role != UNRESERVED:
                    if format != "post":
                        item["role"] = role
                    if format != "pre":
                        item["reservations"] = [{"type": "STATIC", "role": role}]
                if allocation_role is not None:
                    item["allocation_info"] = {"role": allocation_role}
                out.append(item)
        return out

    def to_state(self) -> dict[str, Any]:
        """The object form of ``/master/state`` (cpus/gpus/mem/disk always present)."""
        return self.quantities().to_state()

    def __str__(self) -> str:
        """Mesos' text form: ``cpus(*):1; mem(ml):128; ports(*):[31000-31000]``."""
        parts = []
        for item in self.to_json(format="endpoint"):
            role = item["role"]
            if item["type"] == "SCALAR":
                parts.append(f"{item['name']}({role}):{item['scalar']['value']:g}")
            else:
                ranges = ", ".join(f"{r['begin']}-{r['end']}" for r in item["ranges"]["range"])
                parts.append(f"{item['name']}({role}):[{ranges}]")
        return "; ".join(parts) if parts else "{}"

    # -- queries ---------------------------------------------------------------------------

    def quantities(self) -> Resources:
        """Everything, the reservations summed away."""
        out = Resources()
        for value in self._by_role.values():
            out = out + value
        return out

    def scalar(self, name: str) -> float:
        return sum(value.scalar(name) for value in self._by_role.values())

    @property
    def scalars(self) -> dict[str, float]:
        return self.quantities().scalars

    def ranges(self, name: str) -> list[tuple[int, int]]:
        return self.quantities().ranges(name)

    def names(self) -> set[str]:
        """The resource names, whatever their reservation."""
        names: set[str] = set()
        for value in self._by_role.values():
            names |= value.names()
        return names

    def reserved_for(self, role: str) -> Resources:
        """What is reserved for exactly ``role`` (``*``: what is unreserved)."""
        return self._by_role.get(role, Resources())

    @property
    def reservation_roles(self) -> list[str]:
        """The roles something is reserved for, sorted."""
        return sorted(role for role in self._by_role if role != UNRESERVED)

    def by_role(self) -> dict[str, Resources]:
        """Reservation role (``*`` unreserved) → resources."""
        return dict(self._by_role)

    def allocatable_to(self, role: str) -> RoleResources:
        """What a framework of ``role`` may be offered: the unreserved resources and those
        reserved for ``role`` or a role above it (Mesos ``Resources::allocatableTo``)."""
        return RoleResources({r: v for r, v in self._by_role.items()
                              if r == UNRESERVED or is_subrole(role, r)})

    def is_empty(self) -> bool:
        return not self._by_role

    def contains(self, other: RoleResources | Resources) -> bool:
        """True when every resource of ``other`` is here, in the same reservation."""
        theirs = _as_roles(other)
        return all(self._by_role.get(role, Resources()).contains(value)
                   for role, value in theirs._by_role.items())

    # -- arithmetic ------------------------------------------------------------------------

    def __add__(self, other: RoleResources | Resources) -> RoleResources:
        out = dict(self._by_role)
        for role, value in _as_roles(other)._by_role.items():
            out[role] = out.get(role, Resources()) + value
        return RoleResources(out)

    def __sub__(self, other: RoleResources | Resources) -> RoleResources:
        out = dict(self._by_role)
        for role, value in _as_roles(other)._by_role.items():
            if role in out:
                out[role] = out[role] - value
        return RoleResources(out)

    def shrink_unreserved(self, limits: Mapping[str, float]) -> RoleResources:
        """The unreserved scalars cut to ``limits`` (names absent there kept whole), as
        Mesos' ``shrinkResources`` with ``ResourceLimits``; the rest unchanged."""
        free = self.reserved_for(UNRESERVED)
        scalars = {name: min(value, max(0.0, limits[name])) if name in limits else value
                   for name, value in free.scalars.items()}
        kept = Resources(scalars, {name: free.ranges(name) for name in free.names()
                                   if name not in scalars})
        return RoleResources({**self._by_role, UNRESERVED: kept})

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            other = RoleResources.unreserved(other)
        if not isinstance(other, RoleResources):
            return NotImplemented
        return self._by_role == other._by_role

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._by_role.items())))

    def __repr__(self) -> str:
        return f"RoleResources({self})"


def _as_roles(value: RoleResources | Resources) -> RoleResources:
    return value if isinstance(value, RoleResources) else RoleResources.unreserved(value)


_TOKEN_RE = re.compile(r"^\s*([^():\s]+)\s*(?:\(\s*([^()]*?)\s*\))?\s*:\s*(.+?)\s*$")


def _parse_token(token: str, default_role: str) -> RoleResources:
    """One ``name(role):value`` of Mesos' resource text."""
    match = _TOKEN_RE.match(token)
    if match is None:
        raise ResourceError(
            f"invalid resource {token!r}: expected NAME:VALUE or NAME(ROLE):VALUE, e.g. "
            "cpus(ml):4 or ports(*):[31000-32000]")
    name, role, value = match.group(1), match.group(2) or default_role, match.group(3)
    if not role or "/" in (role[0], role[-1]) or role in (".", "..") or " " in role:
        raise ResourceError(f"invalid role {role!r} in resource {token!r}")
    if value.startswith("["):
        return RoleResources({role: Resources(ranges={name: parse_ranges(value)})})
    if value.startswith("{"):
        raise ResourceError(f"resource {token!r}: set values are not supported; "
                            "use scalars or [BEGIN-END] ranges")
    try:
        amount = float(value)
    except ValueError:
        raise ResourceError(f"invalid value {value!r} of resource {token!r}: expected a "
                            "number or [BEGIN-END] ranges") from None
    if not math.isfinite(amount) or amount < 0 or amount > MAX_SCALAR:
        raise ResourceError(f"invalid value {value!r} of resource {token!r}")
    return RoleResources({role: Resources({name: amount})})
