"""Named implementations, found by name: search algorithms, early-stopping rules, offer
policies, Bayesian backends.

A :class:`Registry` maps a name (what the user types: ``--tuning-type random-search``) to a
class, given as ``"module:Class"`` and imported on first use, so that a library an
implementation needs (Optuna, scikit-optimize) loads only for the jobs that use it. An unknown
name raises the registry's error with one line that lists the valid names and, for a near miss,
the name meant (``did you mean 'bayesian'?``). A plug-in outside the tree adds its own with
:meth:`Registry.register`.

:func:`lazy_attributes` is the same idea for a package's ``__init__``: the names it gives,
each by where it lives, imported when first read (PEP 562's module ``__getattr__``), so that
importing the package imports none of them.

How to add an implementation, and the contract suite that tests every registered one:
docs/extending.md.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
import importlib
import sys
from typing import Any
from typing import Generic
from typing import TypeVar


__all__ = ["Registry", "did_you_mean", "lazy_attributes", "load"]

T = TypeVar("T")


def load(where: str) -> Any:
    """What ``where`` names: ``"module:attr"`` (an attribute of a module) or ``"module"``
    (the module itself), importing the module."""
    module_name, _, attr = where.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def did_you_mean(name: object, names: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``names`` to a mistyped ``name``; ``""``
    when none is close."""
    if not isinstance(name, str):
        return ""
    import difflib  # only on the error path: a registry lookup that succeeds needs none of it

    close = difflib.get_close_matches(name, list(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Registry(Mapping[str, type[T]], Generic[T]):
    """A read-only mapping of names to classes, each imported when first looked up.

    Args:
        kind: What an entry is, for messages: ``"search algorithm"``.
        plural: What the entries are: ``"algorithms"``.
        entries: name → ``"module:Class"`` to import on first use (or a class itself, for a
            registry made in a test).
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
                f"unknown {self.kind} {name!r}{did_you_mean(name, list(self._entries))}; "
                f"valid {self.plural}: {', '.join(self._entries)}"
            ) from None
        if isinstance(entry, str):
            entry = load(entry)
            self._entries[key] = entry
        return entry

    def register(self, name: str, entry: type[T] | str) -> None:
        """Add an implementation from outside the tree (a plug-in), as ``"module:Class"``.

        It is then looked up, listed and put through the contract suites
        (:mod:`disauto.testing`) as the shipped ones are, in this process: a plug-in registers
        itself where it is imported (its package's ``__init__``, a test's ``conftest.py``).

        Raises:
            ValueError: ``name`` is taken (by an entry or an alias), or ``entry`` is a string
                that does not say ``"module:Class"``.
        """
        if name in self:
            raise ValueError(f"{self.kind} {name!r} is registered already; "
                             f"taken: {', '.join([*self._entries, *self._aliases])}")
        if isinstance(entry, str) and not all(entry.partition(":")[::2]):
            raise ValueError(f"{self.kind} {name!r}: {entry!r} is not 'module:Class'")
        self._entries[name] = entry

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


def lazy_attributes(package: str, homes: Mapping[str, str]
                    ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` giving ``homes``' names, each loaded when
    first read.

    Args:
        package: The package's ``__name__``.
        homes: Each name the package gives → where it lives: ``"module:attr"``, or
            ``"module"`` for a module itself.

    Example (a package's ``__init__``)::

        __getattr__, __dir__ = lazy_attributes(__name__, {
            "JobController": "disauto.framework._job.controller:JobController"})
    """

    def __getattr__(name: str) -> Any:
        where = homes.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return load(where)

    def __dir__() -> list[str]:
        """The public names (``__all__``, those loaded on first use among them) and the
        module's dunders: what ``dir()`` and a notebook's completion show, not its imports."""
        module = vars(sys.modules[package])
        return sorted({*module.get("__all__", homes), *(n for n in module if n.startswith("__"))})

    return __getattr__, __dir__
