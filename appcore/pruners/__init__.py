"""Early-stopping rules (``--early-stopping``) behind one interface, found by name.

Each rule is a :class:`Pruner` in its own module; :data:`PRUNERS` maps its name to where it
lives, imported on first use. The trial loop feeds every intermediate report of the objective
to the job's pruner and, when it answers True, tells the framework to record the trial PRUNED
and answers the runner ``should_stop``.

Example::

    pruner = create_pruner("median", direction="maximize", settings={})
    if pruner.report(7, step=3, value=0.61):
        ...  # stop trial 7
"""

from __future__ import annotations

from collections.abc import Mapping
import importlib
from types import MappingProxyType

from appcore.algorithms._base import Direction
from appcore.pruners._base import Pruner
from appcore.pruners._base import PrunerRecord
from common.errors import UnknownAlgorithmError


__all__ = ["PRUNERS", "Pruner", "PrunerRecord", "create_pruner", "pruner_class"]

PRUNERS: Mapping[str, str] = MappingProxyType(
    {
        "none": "appcore.pruners.none:NoPruner",
        "median": "appcore.pruners.median:MedianRule",
        "asha": "appcore.pruners.asha:AsynchronousSuccessiveHalving",
    }
)
"""Rule name to ``"module:Class"``, imported on first use. ``""`` means ``"none"``."""


def pruner_class(name: str) -> type[Pruner]:
    """Return the rule registered as ``name`` (``""`` is ``"none"``), importing its module.

    Args:
        name: A registered name.

    Returns:
        The :class:`Pruner` subclass.

    Raises:
        UnknownAlgorithmError: If no rule has that name; the message lists the valid ones.
    """
    try:
        target = PRUNERS[name or "none"]
    except (KeyError, TypeError):
        raise UnknownAlgorithmError(
            f"unknown early-stopping rule {name!r}; valid rules: {', '.join(PRUNERS)}"
        ) from None
    module_name, _, class_name = target.partition(":")
    cls: type[Pruner] = getattr(importlib.import_module(module_name), class_name)
    return cls


def create_pruner(name: str, *, direction: Direction, settings: Mapping[str, str]) -> Pruner:
    """Create the rule registered as ``name``.

    Args:
        name: A registered name (``""`` for none).
        direction: Whether the objective is maximized or minimized.
        settings: The rule's settings by name, as strings.

    Returns:
        A new pruner.

    Raises:
        UnknownAlgorithmError: If no rule has that name.
        InvalidSettingsError: If a setting is unknown or invalid.
    """
    return pruner_class(name)(direction=direction, settings=settings)
