"""Search algorithms behind one interface, found by name in a lazy registry.

Each algorithm is a :class:`SearchAlgorithm` in its own module; :data:`ALGORITHMS` maps its name
(the ``--tuning-type``) to where it lives, and the module is imported only when the algorithm is
first used, so an algorithm's library (Optuna, scikit-optimize) loads only for jobs that use it.
Adding one is one module and one registry line; ``"bayesian"`` has its own lazy registry of
backends (Optuna's TPE and QMC, scikit-optimize's GP) in :mod:`appcore.algorithms.bayesian`.

Example::

    algorithm = create_algorithm(
        "grid-search", space, seed=0, direction="maximize", settings={}
    )
    assignment = algorithm.ask(1)
"""

from __future__ import annotations

from collections.abc import Mapping

from disauto.appcore.algorithms._base import FINISHED
from disauto.appcore.algorithms._base import Direction
from disauto.appcore.algorithms._base import Directions
from disauto.appcore.algorithms._base import Finished
from disauto.appcore.algorithms._base import ObjectiveValue
from disauto.appcore.algorithms._base import SearchAlgorithm
from disauto.appcore.algorithms._base import TrialRecord
from disauto.common.errors import UnknownAlgorithmError
from disauto.common.registry import Registry
from disauto.common.space import SearchSpace


__all__ = [
    "ALGORITHMS",
    "FINISHED",
    "Direction",
    "Directions",
    "Finished",
    "ObjectiveValue",
    "SearchAlgorithm",
    "TrialRecord",
    "algorithm_class",
    "create_algorithm",
]

ALGORITHMS: Registry[SearchAlgorithm] = Registry("search algorithm", "algorithms", {
    "grid-search": "disauto.appcore.algorithms.grid:GridSearch",
    "random-search": "disauto.appcore.algorithms.random:RandomSearch",
    "bayesian": "disauto.appcore.algorithms.bayesian:BayesianSearch",
    "pbt": "disauto.appcore.algorithms.pbt:PopulationBasedTraining",
}, error=UnknownAlgorithmError)
"""Algorithm name to its class, imported on first use."""


def algorithm_class(name: str) -> type[SearchAlgorithm]:
    """The class registered as ``name``, importing its module if needed.

    Raises:
        UnknownAlgorithmError: If no algorithm has that name; the message lists the valid ones.
    """
    return ALGORITHMS[name]


def create_algorithm(
    name: str,
    space: SearchSpace,
    *,
    seed: int,
    direction: Directions,
    settings: Mapping[str, str],
    parallelism: int = 1,
) -> SearchAlgorithm:
    """Create the algorithm registered as ``name``.

    Args:
        name: A registered name.
        space: The search space.
        seed: The search's seed.
        direction: ``"maximize"`` or ``"minimize"``, or one of them per objective.
        settings: Algorithm settings by name, as strings.
        parallelism: Trials in flight at once (sizes synchronous batches).

    Returns:
        A new instance, ready for :meth:`~SearchAlgorithm.restore` or
        :meth:`~SearchAlgorithm.ask`.

    Raises:
        UnknownAlgorithmError: If no algorithm has that name.
        InvalidSettingsError: If the settings, seed or direction are invalid.
    """
    return algorithm_class(name)(space, seed=seed, direction=direction, settings=settings,
                                 parallelism=parallelism)
