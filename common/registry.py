"""Named implementations, found by name: search algorithms, early-stopping rules, offer
policies, Bayesian backends.

A :class:`Registry` maps a name (what the user types: ``--tuning-type random-search``) to a
class, given directly or as ``"module:Class"`` and imported on first use, so that a library an
implementation needs (Optuna, scikit-optimize) loads only for the jobs that use it. An unknown
name raises the registry's error with one line that lists the valid names.

How to add an implementation, and the contract suite that tests every registered one:
docs/extending.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping
import importlib
from typing import Generic
from typing import TypeVar


__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Mapping[str, type[T]], Generic[T]):
    """A read-only mapping of names to classes, each imported when first looked up.

    Args:
        kind: What an entry is, for messages: ``"search algorithm"``.
        plural: What the entries are: ``"algorithms"``.
        entries: name → a class, or ``"module:Class"`` to import on first use.
        error: The exception an unknown name raises (a ``LookupError`` or ``ValueError``
            subclass the caller maps to its one-line error).
        aliases: other names for entries (``""`` → ``"none"``), not listed as valid names.
    """

    def __init__(self, kind: str, plural: str, entries: Mapping[str, type[T] | str],
                 error: type[Exception] = LookupError,
                 aliases: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self.plural = plural
        self._entries = dict(entries)
        self._error = error
        self._aliases = dict(aliases or {})

    def __getitem__(self, name: str) -> type[T]:
        key = self._aliases.get(name, name) if isinstance(name, str) else name
        try:
            entry = self._entries[key]
        except (KeyError, TypeError):
            raise self._error(
                f"unknown {self.kind} {name!r}; valid {self.plural}: {', '.join(self._entries)}"
            ) from None
        if isinstance(entry, str):
            module_name, _, class_name = entry.partition(":")
            entry = getattr(importlib.import_module(module_name), class_name)
            self._entries[key] = entry
        return entry

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._aliases

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def location(self, name: str) -> str:
        """``module`` of an entry, without importing it (to check its library is installed)."""
        entry = self._entries[self._aliases.get(name, name)]
        return entry.partition(":")[0] if isinstance(entry, str) else entry.__module__
