"""Settings of named implementations (``--tuning-setting``, ``--early-stopping-setting``,
``--policy-setting``): their declarations, the value parsers, and one way to check them.

Settings arrive as text. Each implementation declares what it accepts as :class:`SettingSpec`
entries; :func:`parse_settings` rejects unknown names, parses every value (defaults filled in)
and raises the caller's error with one line that names the setting, its owner and what is
valid. The parsers below take text and raise ``ValueError`` for anything invalid. Search
algorithms, early-stopping rules and offer policies derive from :class:`Configurable`, so each
declares its settings and its error and parses them the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
import math
from typing import Any
from typing import ClassVar


__all__ = ["Configurable", "SettingSpec", "int_at_least", "int_setting", "non_negative_number",
           "parse_settings", "positive_numbers"]


@dataclass(frozen=True)
class SettingSpec:
    """One setting an implementation accepts.

    Attributes:
        default: The value used when the setting is not given, as text.
        parse: Turns the text into the typed value; raises ``ValueError`` if it is invalid.
        valid: What a valid value is, for error messages ("an integer from 2 to 10000").
        help: One line for ``--help`` and docs.
    """

    default: str
    parse: Callable[[str], Any]
    valid: str
    help: str = ""


def int_setting(default: int, low: int, help: str, *,  # noqa: A002 - a field
                high: int | None = None) -> SettingSpec:
    """An integer setting ``>= low`` (and ``<= high`` if given); its ``valid`` text follows."""
    valid = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
    return SettingSpec(str(default), int_at_least(low, at_most=high), valid, help)


def parse_settings(specs: Mapping[str, SettingSpec], settings: Mapping[str, str], *,
                   owner: str, error: type[Exception] = ValueError,
                   skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Every declared setting, parsed from ``settings`` or its default.

    Args:
        specs: The accepted settings by name.
        settings: Name → text, as given.
        owner: Whose settings, for messages: ``"algorithm 'grid-search'"``.
        error: The exception to raise.
        skip: Names that are valid but belong to someone else: left out, not rejected.

    Raises:
        error: ``unknown setting 'x' for <owner>; valid settings: a, b`` or
            ``setting 'a' for <owner> must be <valid>, got '<text>'``.
    """
    for name in settings:
        if name not in specs and name not in skip:
            valid = ", ".join(sorted({*specs, *skip})) or "none"
            raise error(f"unknown setting {name!r} for {owner}; valid settings: {valid}")
    parsed: dict[str, Any] = {}
    for name, spec in specs.items():
        raw = settings.get(name, spec.default)
        try:
            if not isinstance(raw, str):
                raise ValueError(raw)
            parsed[name] = spec.parse(raw)
        except (ValueError, TypeError, AttributeError):
            raise error(f"setting {name!r} for {owner} must be {spec.valid}, got {raw!r}") \
                from None
    return parsed


class Configurable:
    """A named implementation with declared settings: an algorithm, a rule, an offer policy.

    Subclasses set :attr:`NAME`, :attr:`KIND`, :attr:`SETTINGS` and :attr:`SETTINGS_ERROR`;
    :meth:`parse_settings` checks given settings against them and :meth:`_check_settings` adds
    checks across settings.
    """

    NAME: ClassVar[str]
    """The registry name, e.g. ``"grid-search"``."""

    KIND: ClassVar[str]
    """What the implementation is, for messages: ``"algorithm"``."""

    SETTINGS: ClassVar[Mapping[str, SettingSpec]] = {}
    """The accepted settings by name."""

    SETTINGS_ERROR: ClassVar[type[Exception]] = ValueError
    """What an unknown or invalid setting raises (the caller maps it to its one-line error)."""

    @classmethod
    def parse_settings(cls, settings: Mapping[str, str], *,
                       others: frozenset[str] = frozenset()) -> dict[str, Any]:
        """Every declared setting, parsed from ``settings`` or its default.

        Args:
            settings: Setting name to text.
            others: Names that are valid but belong to someone else; they are skipped.

        Raises:
            SETTINGS_ERROR: Naming an unknown setting (and the valid ones), or a value that does
                not parse (and what is valid), or what :meth:`_check_settings` rejects.
        """
        parsed = parse_settings(cls.SETTINGS, settings, owner=f"{cls.KIND} {cls.NAME!r}",
                                error=cls.SETTINGS_ERROR, skip=others)
        cls._check_settings(parsed)
        return parsed

    @classmethod  # noqa: B027 -- an optional hook: the default accepts every combination
    def _check_settings(cls, settings: Mapping[str, Any]) -> None:
        """Hook for checks across the parsed settings; raises :attr:`SETTINGS_ERROR`."""


def int_at_least(low: int, *, at_most: int | None = None) -> Callable[[str], int]:
    """A parser of integers ``>= low`` and ``<= at_most`` if given (surrounding blanks allowed)."""

    def parse(text: str) -> int:
        value = int(text.strip())
        if value < low or (at_most is not None and value > at_most):
            raise ValueError(text)
        return value

    return parse


def non_negative_number(text: str) -> float:
    """A finite number ``>= 0``."""
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError(text)
    return value


def positive_numbers(text: str) -> tuple[float, ...]:
    """Comma-separated finite numbers ``> 0``, at least one."""
    values = tuple(float(part) for part in text.split(","))
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(text)
    return values
