"""The search-algorithm interface every algorithm module implements."""

from __future__ import annotations

import abc
from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
import enum
import logging
import operator
from typing import Any
from typing import ClassVar
from typing import Final
from typing import TypeAlias

import numpy as np

from disauto.common.errors import InvalidSettingsError
from disauto.common.objectives import Direction
from disauto.common.setting_values import Configurable
from disauto.common.setting_values import SettingSpec
from disauto.common.space import Assignment
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState


__all__ = [
    "FINISHED",
    "Direction",
    "Directions",
    "Finished",
    "ObjectiveValue",
    "SearchAlgorithm",
    "SettingSpec",
    "TrialRecord",
    "trial_seed",
]

_logger = logging.getLogger(__name__)

Directions: TypeAlias = Direction | Sequence[Direction]
"""One direction, or one per objective for a search of several (``--objective a,b``)."""

ObjectiveValue: TypeAlias = float | tuple[float, ...]
"""A trial's result: its objective's value, or one value per objective (in their order)."""

_DIRECTIONS: Final = ("maximize", "minimize")


class Finished(enum.Enum):
    """The type of :data:`FINISHED`: an algorithm has nothing left to suggest."""

    FINISHED = "finished"

    def __repr__(self) -> str:
        return "FINISHED"


FINISHED: Final = Finished.FINISHED
"""Returned by :meth:`SearchAlgorithm.ask` when the space is exhausted: no trial, now or later."""


def trial_seed(seed: int, number: int) -> int:
    """A 32-bit seed for trial ``number`` of a search seeded with ``seed`` (any int).

    Uses :class:`numpy.random.SeedSequence` (entropy ``seed mod 2**64``, spawn key ``(n,)``):
    independent, well-mixed streams per trial, the same on every machine.

    Args:
        seed: The search's seed.
        number: The trial number.

    Returns:
        An int in ``[0, 2**32)``.
    """
    sequence = np.random.SeedSequence(seed % 2**64, spawn_key=(number,))
    return int(sequence.generate_state(1, dtype=np.uint32)[0])


@dataclass(frozen=True)
class TrialRecord:
    """One trial as the job store holds it, for :meth:`SearchAlgorithm.restore`.

    Attributes:
        number: The trial number (from 1, unique within the job).
        assignment: The assignment the trial ran (or runs) with.
        value: The objective's value (a tuple of one per objective in a search of several),
            if the trial reported it.
        state: ``TrialState.RUNNING`` for a trial still in flight, else how it ended.
        constraints: What the trial reported with its result (``<= 0``: satisfied).
        parent: The trial whose checkpoint this one started from (Population Based Training's
            exploit), or None: it started from scratch.
    """

    number: int
    assignment: Assignment
    value: ObjectiveValue | None
    state: TrialState
    constraints: tuple[float, ...] = ()
    parent: int | None = None


class SearchAlgorithm(Configurable, abc.ABC):
    """A search algorithm: suggests assignments for numbered trials and learns their results.

    Each algorithm lives in its own module under :mod:`appcore.algorithms` and is registered by
    name (:data:`NAME`) in the registry there, which imports it lazily.

    Call order:
        1. Construction (which validates the settings like :meth:`validate`).
        2. If AppCore is restarting a job: :meth:`restore` once, with the job store's trials,
           before any other call.
        3. Any interleaving of :meth:`ask` and :meth:`tell`. Trial numbers start at 1 and each
           is asked for at most once, in increasing order, continuing after the highest restored
           number; :meth:`tell` is called at most once per asked trial, when it ends.

    ``ask`` answers an assignment, ``None`` ("nothing now": e.g. a synchronous Bayesian batch
    waits for its trials; ask again after the next ``tell``) or :data:`FINISHED` ("nothing ever
    again": the space is exhausted; the job ends when its running trials end). An assignment
    holds every parameter of the space with its type preserved (``float`` for real, ``int`` for
    integer, the choice itself for categorical) and is valid for the space.

    Thread safety:
        Instances are not thread-safe. The caller (AppCore's trial loop, or its gRPC servicer
        under one lock) serializes every call on an instance.

    Determinism:
        The same space, settings, seed and sequence of calls give the same assignments, and
        :meth:`restore` followed by further asks gives what the original run would have given:
        no assignment is issued twice after a restart.

    Ownership:
        The instance owns its search state; the job store (reached through the framework) is
        the system of record, and the algorithm never writes to it.

    Settings:
        :data:`SETTINGS` declares every accepted setting; anything else is rejected by
        :meth:`validate` and the constructor with :class:`~common.errors.InvalidSettingsError`.

    Objectives: a search of several objectives (``direction`` a sequence, one per objective)
    gets a tuple of values in :meth:`tell`; an algorithm that cannot use them says so in
    :meth:`_validate_objectives`. A trial's ``constraints`` (``<= 0``: satisfied) come with its
    result; algorithms that can use them do.

    Args:
        space: The search space.
        seed: Seeds every random choice (any int; reduced modulo ``2**64`` where needed).
        direction: ``"maximize"`` or ``"minimize"`` the objective, or one of them per objective.
        settings: Algorithm settings by name, as strings.
        parallelism: How many trials the caller keeps in flight at once (``--parallelism``).
            Algorithms that use feedback size synchronous batches with it and account for
            that many pending trials; the others ignore it.

    Raises:
        InvalidSettingsError: If a setting is unknown or invalid, the space is unsuitable for
            the algorithm, the seed is not an int, the direction is not one of the two or the
            parallelism is not a positive int.
    """

    KIND = "algorithm"
    SETTINGS_ERROR = InvalidSettingsError

    USES_SEED: ClassVar[bool] = True
    """False where the sequence does not depend on the seed (grid search), so a UI can say so."""

    def __init__(
        self,
        space: SearchSpace,
        *,
        seed: int,
        direction: Directions,
        settings: Mapping[str, str],
        parallelism: int = 1,
    ) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InvalidSettingsError(
                f"the seed of algorithm {self.NAME!r} must be an integer, got {seed!r}"
            )
        directions = (direction,) if isinstance(direction, str) else tuple(direction)
        if not directions or any(d not in _DIRECTIONS for d in directions):
            raise InvalidSettingsError(
                f"direction must be 'maximize' or 'minimize', got {direction!r}"
            )
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise InvalidSettingsError(
                f"the parallelism of algorithm {self.NAME!r} must be a positive integer, "
                f"got {parallelism!r}"
            )
        self.parallelism: int = parallelism
        self.space: SearchSpace = space
        self.seed: int = operator.index(seed)
        self.directions: tuple[Direction, ...] = directions
        self.direction: Direction = directions[0]
        self.settings: Mapping[str, Any] = self.parse_settings(settings)
        self._validate_space(space, self.settings, None)
        self._validate_objectives(self.settings, len(directions))
        self._settings_given: dict[str, str] = dict(settings)
        self._setup()

    def _setup(self) -> None:  # noqa: B027 -- an optional hook: most algorithms need none
        """Build the algorithm's own state once the common fields are set and checked.

        Subclasses set up here rather than override ``__init__``, so every algorithm is
        constructed with the same checked arguments (``space``, ``seed``, ``direction``,
        ``settings``, ``parallelism``).
        """

    @abc.abstractmethod
    def ask(self, trial_number: int) -> Assignment | None | Finished:
        """Suggest the assignment for trial ``trial_number``.

        Args:
            trial_number: The new trial's number (from 1; see the call order above).

        Returns:
            An assignment, ``None`` for "nothing now", or :data:`FINISHED`.
        """

    def tell(  # noqa: B027 -- an optional hook: algorithms without feedback ignore it
        self, trial_number: int, value: ObjectiveValue | None, state: TrialState,
        constraints: Sequence[float] = (),
    ) -> None:
        """Learn how trial ``trial_number`` ended. The default ignores it.

        Args:
            trial_number: An asked trial's number.
            value: The objective's value, a tuple of one per objective in a search of several
                (``None`` unless ``state`` is ``COMPLETED``, or for a pruned trial its last
                intermediate value if there is one).
            state: How the trial ended.
            constraints: What the trial reported with its result; ``<= 0`` is satisfied.
        """

    def intermediate(self, trial_number: int, step: int, value: float, *,
                     may_replace: bool) -> bool:
        """Learn an intermediate result of a trial in flight (its objective at ``step``); True
        when the trial should be stopped and replaced. The default ignores it (False).

        An algorithm that replaces trials (Population Based Training) answers True only when
        ``may_replace`` (the budget allows one more trial): the loop then stops the trial
        (recorded PRUNED) and the next trial asked is its replacement, started from the
        checkpoint of the trial :meth:`parent_of` names.

        Args:
            trial_number: An asked trial still in flight.
            step: The step of the report.
            value: The objective's value at that step.
            may_replace: Whether a new trial may be submitted in its place.
        """
        return False

    def parent_of(self, trial_number: int) -> int | None:
        """The trial whose latest checkpoint the asked trial ``trial_number`` starts from, or
        None (the default): it starts from scratch."""
        return None

    @abc.abstractmethod
    def restore(self, history: Sequence[TrialRecord]) -> None:
        """Rebuild the search state from the job store after AppCore restarts.

        Called once, before any ask/tell. Afterwards the instance must behave as the original
        did after issuing these trials and learning the finished ones' results: the next
        :meth:`ask` continues the original sequence and never repeats an issued assignment
        for another number.

        Args:
            history: Every trial issued so far, sorted by number; still-running trials have
                state ``RUNNING`` and no value.
        """

    @classmethod
    def validate(
        cls, space: SearchSpace, settings: Mapping[str, str], max_trials: int | None,
        *, objectives: int = 1,
    ) -> None:
        """Check, before a job starts, that this algorithm can run it.

        ``da-submit`` calls this before touching the cluster and AppCore's service before
        starting a search; both report the error as is.

        Args:
            space: The search space.
            settings: Setting name to string value.
            max_trials: The trial budget, or ``None`` for none.
            objectives: How many objectives the search optimizes.

        Raises:
            InvalidSettingsError: Naming the unknown or invalid setting, the bad budget, or why
                the space or the objectives do not suit the algorithm.
        """
        parsed = cls.parse_settings(settings)
        if max_trials is not None and (
            isinstance(max_trials, bool) or not isinstance(max_trials, int) or max_trials < 1
        ):
            raise InvalidSettingsError(
                f"the trial budget must be a positive integer, got {max_trials!r}"
            )
        cls._validate_space(space, parsed, max_trials)
        cls._validate_objectives(parsed, objectives)

    @classmethod
    def notes(cls, space: SearchSpace, settings: Mapping[str, str]) -> tuple[str, ...]:
        """What the user should know, before the job starts, of how the algorithm with these
        settings searches ``space``, one line each (``da-submit`` prints and logs them); none
        by default.

        Args:
            space: The search space (valid for the algorithm: see :meth:`validate`).
            settings: Setting name to string value.

        Raises:
            InvalidSettingsError: As :meth:`parse_settings` (where the algorithm reads them).
        """
        return ()

    @classmethod
    def size(cls, space: SearchSpace, settings: Mapping[str, str]) -> int | None:
        """How many distinct assignments the algorithm can issue, if it is finite.

        Args:
            space: The search space.
            settings: Setting name to string value.

        Returns:
            The number (grid search: the grid's size), or ``None`` if the algorithm never
            answers :data:`FINISHED`.

        Raises:
            InvalidSettingsError: As :meth:`parse_settings`.
        """
        cls.parse_settings(settings)
        return None

    @classmethod  # noqa: B027 -- an optional hook: the default accepts every space
    def _validate_space(
        cls, space: SearchSpace, settings: Mapping[str, Any], max_trials: int | None
    ) -> None:
        """Hook for algorithm-specific checks of the space and budget; the default accepts all.

        Args:
            space: The search space.
            settings: The parsed settings.
            max_trials: The trial budget, or ``None``.

        Raises:
            InvalidSettingsError: If the algorithm cannot search ``space``.
        """

    @classmethod  # noqa: B027 -- an optional hook: the default takes any number
    def _validate_objectives(cls, settings: Mapping[str, Any], count: int) -> None:
        """Hook for algorithms that use results: refuse a number of objectives they cannot
        optimize. The default (algorithms that ignore results) accepts any.

        Args:
            settings: The parsed settings.
            count: How many objectives the search has.

        Raises:
            InvalidSettingsError: Saying why and what would work.
        """

    def _check_trial_number(self, trial_number: int) -> int:
        if isinstance(trial_number, bool) or not isinstance(trial_number, int) or trial_number < 1:
            raise ValueError(f"trial numbers start at 1, got {trial_number!r}")
        return trial_number

    def _check_history_replays(self, history: Sequence[TrialRecord]) -> None:
        """For algorithms whose ask is a pure function of the trial number: ask each recorded
        number again and log the trials that differ (:meth:`_warn_if_replay_differs`)."""
        self._warn_if_replay_differs(
            {record.number for record in history if self.ask(record.number) != record.assignment}
        )

    def _warn_if_replay_differs(self, differing: Collection[int]) -> None:
        """Log restored trials whose recorded assignments this search would not give them.

        The recorded trials stand as they are; a difference means the job restarted with
        another space, seed or settings, which the user should hear about.
        """
        if differing:
            _logger.warning(
                "%s: %d restored trial(s) have assignments this search would not give them "
                "(first: trial %d); was the space, seed or settings changed?",
                self.NAME,
                len(differing),
                min(differing),
            )
