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

from disauto.appcore.algorithms import Direction
from disauto.appcore.pruners._base import Pruner
from disauto.appcore.pruners._base import PrunerRecord
from disauto.common.errors import UnknownRuleError
from disauto.common.registry import Registry


__all__ = ["PRUNERS", "Pruner", "PrunerRecord", "create_pruner", "pruner_class"]

PRUNERS: Registry[Pruner] = Registry("early-stopping rule", "rules", {
    "none": "disauto.appcore.pruners.none:NoPruner",
    "median": "disauto.appcore.pruners.median:MedianRule",
    "asha": "disauto.appcore.pruners.asha:AsynchronousSuccessiveHalving",
    "hyperband": "disauto.appcore.pruners.hyperband:Hyperband",
}, error=UnknownRuleError, aliases={"": "none"})
"""Rule name to its class, imported on first use. ``""`` means ``"none"``."""


def pruner_class(name: str) -> type[Pruner]:
    """The rule registered as ``name`` (``""`` is ``"none"``), importing its module.

    Raises:
        UnknownRuleError: If no rule has that name; the message lists the valid ones.
    """
    return PRUNERS[name]


def create_pruner(name: str, *, direction: Direction, settings: Mapping[str, str]) -> Pruner:
    """Create the rule registered as ``name``.

    Args:
        name: A registered name (``""`` for none).
        direction: Whether the objective is maximized or minimized.
        settings: The rule's settings by name, as strings.

    Returns:
        A new pruner.

    Raises:
        UnknownRuleError: If no rule has that name.
        InvalidSettingsError: If a setting is unknown or invalid.
    """
    return pruner_class(name)(direction=direction, settings=settings)
