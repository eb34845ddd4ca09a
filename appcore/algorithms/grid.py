"""Grid search (``grid-search``): every point of the space's Cartesian product, once.

The grid is the product of one *axis* per parameter (the rules live with the parameters, in
:mod:`common.space`, so that :meth:`~common.space.SearchSpace.grid_size` agrees):

* categorical (``"number"``, ``"choice"``): every value, in the file's order;
* real with a step: ``low, low + step, ... <= high``, computed in decimal so float error neither
  drops nor adds the last point;
* real without a step: ``grid_points_per_range`` evenly spaced points including both bounds
  (geometrically spaced on a log scale);
* integer with ``step > 1``: every step point; with no step: every integer if there are at most
  ``grid_points_per_range`` of them, else that many evenly (or geometrically) spaced points
  rounded to integers, duplicates dropped.

Order is row-major in the file's parameter order (the first parameter changes slowest), exactly
:func:`itertools.product` over the axes. A conditional parameter (``"when"``) takes part only in
the combinations where it is active, so the grid holds exactly the valid combinations, each once
(:mod:`common.grid`; a parent is decided before its children). Trial ``n`` gets point ``n - 1``
of that order and trials beyond the grid get :data:`~appcore.algorithms.FINISHED`, so the
algorithm is stateless: :meth:`GridSearch.ask` is a pure function of the trial number, nothing is
issued twice and :meth:`GridSearch.restore` has nothing to rebuild. The point is found by
mixed-radix indexing rather than by materializing the grid, so asking costs about the number of
parameters (plus the values of the parents) however large the grid. A trial budget smaller than
the grid runs its first points; one larger ends when the grid is exhausted.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from disauto.appcore.algorithms._base import FINISHED
from disauto.appcore.algorithms._base import Finished
from disauto.appcore.algorithms._base import SearchAlgorithm
from disauto.appcore.algorithms._base import SettingSpec
from disauto.appcore.algorithms._base import TrialRecord
from disauto.common.errors import InvalidSettingsError
from disauto.common.setting_values import int_setting
from disauto.common.space import Assignment
from disauto.common.space import SearchSpace


__all__ = ["GridSearch", "MAX_POINTS_PER_RANGE"]

MAX_POINTS_PER_RANGE = 10_000
"""Upper limit of the ``grid_points_per_range`` setting."""


class GridSearch(SearchAlgorithm):
    """Exhaustive search over the space's grid, in a fixed order (see the module docstring).

    Needs no feedback (:meth:`tell` is ignored) and ignores the seed and direction. Settings:

    * ``grid_points_per_range`` (default 5): points per unstepped real range, and the most
      integers an unstepped integer range contributes.

    Thread safety and call order: as :class:`~appcore.algorithms.SearchAlgorithm`. Asking the
    same number twice returns the same point.
    """

    NAME = "grid-search"
    USES_SEED = False
    SETTINGS: Mapping[str, SettingSpec] = {
        "grid_points_per_range": int_setting(
            5, 2, "points per continuous range (and most integers per integer range) without step",
            high=MAX_POINTS_PER_RANGE),
    }

    def _setup(self) -> None:
        self._grid = self.space.grid(self.settings["grid_points_per_range"])
        self._size = self._grid.size

    @property
    def grid_size(self) -> int:
        """The number of points in the grid."""
        return self._size

    def ask(self, trial_number: int) -> Assignment | None | Finished:
        """Return grid point ``trial_number - 1``, or :data:`FINISHED` past the end.

        Args:
            trial_number: The trial's number, from 1.

        Returns:
            The point, or :data:`FINISHED`.

        Raises:
            ValueError: If ``trial_number`` is not a positive int.
        """
        index = self._check_trial_number(trial_number) - 1
        if index >= self._size:
            return FINISHED
        return self._grid.point(index)

    def restore(self, history: Sequence[TrialRecord]) -> None:
        """Nothing to rebuild (trial ``n`` always gets point ``n - 1``); logs a changed grid.

        Args:
            history: The job store's trials, sorted by number.
        """
        self._check_history_replays(history)

    @classmethod
    def size(cls, space: SearchSpace, settings: Mapping[str, str]) -> int:
        """The grid's size for ``space`` under ``settings``.

        Args:
            space: The search space.
            settings: Setting name to string value.

        Returns:
            The number of grid points.

        Raises:
            InvalidSettingsError: As :meth:`parse_settings`.
        """
        parsed = cls.parse_settings(settings)
        return space.grid_size(parsed["grid_points_per_range"])

    @classmethod
    def _validate_space(
        cls, space: SearchSpace, settings: Mapping[str, Any], max_trials: int | None
    ) -> None:
        size = space.grid_size(settings["grid_points_per_range"])
        if size < 1:
            raise InvalidSettingsError(f"algorithm {cls.NAME!r}: the grid of this space is empty")
