"""The interface between :class:`~appcore.algorithms.bayesian.BayesianSearch` and a library.

A *backend* wraps one optimization library's model (Optuna's TPE, scikit-optimize's GP, ...).
:class:`~appcore.algorithms.bayesian.BayesianSearch` owns what is the same for all of them --
settings, the synchronous and asynchronous modes, warm start, restarts -- and calls a backend
through the four methods below. Each backend lives in its own module and is found by name in
:data:`appcore.algorithms.bayesian.BACKENDS`, imported on first use.

Determinism contract: a backend's suggestion for trial ``n`` is a function of the seed, ``n``,
the known results, and the trials it was told of so far in number order (finished with their
outcome, or still pending), never of wall time or of the order results arrived in. That is
what lets a restarted AppCore replay the job store's trials and continue the original sequence.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import ClassVar

from disauto.appcore.algorithms._base import Direction
from disauto.appcore.algorithms._base import Directions
from disauto.appcore.algorithms._base import ObjectiveValue
from disauto.common.space import Assignment
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState


__all__ = ["Backend"]


class Backend(abc.ABC):
    """One library's model behind :class:`~appcore.algorithms.bayesian.BayesianSearch`.

    Call order: construction; :meth:`add_known` for each warm-start result; then any
    interleaving of :meth:`suggest` / :meth:`replay` (each trial number once, increasing) and
    :meth:`observe` (once per suggested number). Not thread-safe: the owning algorithm is called
    under the trial loop's lock.

    Args:
        space: The search space.
        seed: The search's seed.
        direction: ``"maximize"`` or ``"minimize"``, or one of them per objective (a backend
            with :attr:`MULTI_OBJECTIVE`).
        n_startup_trials: Results needed before the model is used; until then suggestions are
            random (quasi-random for QMC).
    """

    NAME: ClassVar[str]
    """The ``backend`` setting's value that selects this backend."""

    REQUIRES: ClassVar[tuple[str, str] | None] = None
    """``(module, how to install it)`` for a backend whose library is an optional extra."""

    MULTI_OBJECTIVE: ClassVar[bool] = False
    """Whether the backend optimizes several objectives at once (a Pareto front)."""

    model_window: int | None = None
    """For a backend whose model can learn from a window of the finished trials (``tpe``):
    how many it learns from at most (0: every one); None for the others (the ``tpe_window``
    setting is set on the backend when it has one)."""

    def __init__(
        self, space: SearchSpace, *, seed: int, direction: Directions, n_startup_trials: int
    ) -> None:
        self.space = space
        self.seed = seed
        self.directions: tuple[Direction, ...] = (
            (direction,) if isinstance(direction, str) else tuple(direction))
        self.direction: Direction = self.directions[0]
        self.n_startup_trials = n_startup_trials

    @classmethod
    def space_notes(cls, space: SearchSpace) -> tuple[str, ...]:
        """What the user should know, before the job starts, of how this backend treats
        ``space`` (parameters its model leaves out); none by default.

        Args:
            space: The search space.

        Returns:
            One line each.
        """
        return ()

    @abc.abstractmethod
    def add_known(self, assignment: Assignment, value: ObjectiveValue) -> None:
        """Learn a result from outside this job (``--warm-start``); it gets no trial number.

        Args:
            assignment: A valid assignment of the space.
            value: Its objective value (one per objective in a search of several).
        """

    @abc.abstractmethod
    def suggest(
        self, numbers: Sequence[int], fixed: Sequence[Assignment | None]
    ) -> list[Assignment]:
        """Suggest assignments for new trials ``numbers``, all pending from now on.

        Trials pending from earlier calls, and earlier members of this batch, are accounted for
        (the library's constant liar), so a batch does not collapse onto one point.

        Args:
            numbers: Consecutive new trial numbers.
            fixed: For each number, an assignment to issue as is (a warm-start point) or
                ``None`` to let the model choose.

        Returns:
            One assignment per number.
        """

    def replay(self, number: int, assignment: Assignment) -> Assignment:
        """Re-register trial ``number``, issued before a restart, as pending (cheaply).

        The default treats the recorded assignment as a fixed point. A backend whose state
        advances with each suggestion (a quasi-random sequence) overrides it to draw again.

        Args:
            number: The recorded trial's number.
            assignment: Its recorded assignment.

        Returns:
            What this backend would have issued (equal to ``assignment`` unless the space, seed
            or settings changed; only overriding backends can tell).
        """
        self.suggest([number], [assignment])
        return assignment

    @abc.abstractmethod
    def observe(self, number: int, value: ObjectiveValue | None, state: TrialState,
                constraints: Sequence[float] = ()) -> None:
        """Learn how a suggested trial ended.

        Args:
            number: A suggested (or replayed) trial's number.
            value: The objective for ``COMPLETED`` (a tuple in a search of several); for
                ``PRUNED`` the last intermediate value if there was one; else ``None``.
            state: How the trial ended.
            constraints: What the trial reported with its result (``<= 0``: satisfied); a
                backend whose library has no constraints ignores them.
        """
