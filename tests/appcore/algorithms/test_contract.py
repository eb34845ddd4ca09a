"""Every registered search algorithm keeps the contract (``disauto/testing/algorithms.py``); the
Bayesian one with every registered backend, in each mode. A made-up algorithm that keeps it
passes every check, and one that breaks a rule fails the check of that rule."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import itertools
import random

import pytest

from disauto.appcore.algorithms import ALGORITHMS
from disauto.appcore.algorithms import FINISHED
from disauto.appcore.algorithms import Finished
from disauto.appcore.algorithms import SearchAlgorithm
from disauto.appcore.algorithms import TrialRecord
from disauto.appcore.algorithms.bayesian import BACKENDS
from disauto.appcore.algorithms.bayesian import MODES
from disauto.appcore.algorithms.bayesian import BayesianSearch
from disauto.common.setting_values import SettingSpec
from disauto.common.setting_values import int_setting
from disauto.common.space import Assignment
from disauto.common.space import SearchSpace
from disauto.testing.algorithms import SPACE
from disauto.testing.algorithms import Make
from disauto.testing.algorithms import SearchAlgorithmContract
from disauto.testing.algorithms import Variant
from disauto.testing.algorithms import check_finite_or_not
from disauto.testing.algorithms import check_job_values_are_checked
from disauto.testing.algorithms import check_restore_continues
from disauto.testing.algorithms import check_restore_says_when_the_record_differs_from_the_search
from disauto.testing.algorithms import check_seed_is_honoured
from disauto.testing.algorithms import check_settings_are_checked
from disauto.testing.algorithms import check_suggestions_fit_the_space
from disauto.testing.algorithms import check_tell_takes_every_outcome
from disauto.testing.algorithms import check_trial_numbers_start_at_one
from disauto.testing.algorithms import draw
from disauto.testing.algorithms import sequence
from disauto.testing.algorithms import variant_of


def _variants() -> dict[str, tuple[str, dict[str, str]]]:
    """Every registered algorithm with its defaults; the Bayesian one once per backend and mode
    instead, its model used after 4 trials."""
    variants = {name: (name, {}) for name in ALGORITHMS if name != BayesianSearch.NAME}
    variants.update({
        f"{BayesianSearch.NAME}-{backend}-{mode}": (
            BayesianSearch.NAME, {"backend": backend, "mode": mode, "n_startup_trials": "4"})
        for backend in BACKENDS for mode in MODES
    })
    return variants


VARIANTS = _variants()


class TestEveryRegisteredAlgorithm(SearchAlgorithmContract):
    """:class:`SearchAlgorithmContract` (``disauto.testing``, what a plug-in runs too) over
    :data:`VARIANTS`."""

    @pytest.fixture(params=sorted(VARIANTS))
    def variant(self, request: pytest.FixtureRequest) -> Variant:
        algorithm, settings = VARIANTS[str(request.param)]
        return variant_of(algorithm, settings)


def test_every_registered_name_is_a_variant() -> None:
    assert set(ALGORITHMS) - {BayesianSearch.NAME} <= set(VARIANTS)
    assert {name for name, _ in VARIANTS.values()} == set(ALGORITHMS)


# -- the checks are not vacuous -------------------------------------------------------------------


class Sound(SearchAlgorithm):
    """A made-up algorithm that keeps the contract: draws from one seeded stream, so its state
    advances with each ask and a restart must replay the record."""

    NAME = "sound"
    SETTINGS: Mapping[str, SettingSpec] = {"spread": int_setting(1, 1, "a made-up setting")}

    def _setup(self) -> None:
        self._rng = random.Random(self.seed)

    def ask(self, trial_number: int) -> Assignment | None | Finished:
        self._check_trial_number(trial_number)
        return {param.name: draw(param, self._rng) for param in self.space}

    def restore(self, history: Sequence[TrialRecord]) -> None:
        self._check_history_replays(history)


class Enumerates(SearchAlgorithm):
    """A made-up finite algorithm that keeps the contract: the grid's points in order."""

    NAME = "enumerates"
    USES_SEED = False

    def _points(self) -> list[Assignment]:
        axes = [param.grid_axis(2) for param in self.space]
        return [dict(zip(self.space.names, point, strict=True))
                for point in itertools.product(*axes)]

    def ask(self, trial_number: int) -> Assignment | None | Finished:
        points = self._points()
        index = self._check_trial_number(trial_number) - 1
        return points[index] if index < len(points) else FINISHED

    def restore(self, history: Sequence[TrialRecord]) -> None:
        self._check_history_replays(history)

    @classmethod
    def size(cls, space: SearchSpace, settings: Mapping[str, str]) -> int:
        return space.grid_size(2)


class OutOfSpace(Sound):
    def ask(self, trial_number: int) -> Assignment | None | Finished:
        drawn = super().ask(trial_number)
        assert isinstance(drawn, dict)
        return {**drawn, "lr": 10.0}


class IgnoresTheSeed(Sound):
    def _setup(self) -> None:
        self._rng = random.Random(0)


class NotReproducible(Sound):
    def _setup(self) -> None:
        self._rng = random.Random()


class WaitsForNothing(Sound):
    def ask(self, trial_number: int) -> Assignment | None | Finished:
        return None if trial_number % 3 == 0 else super().ask(trial_number)


class ForgetsTheRecord(Sound):
    def restore(self, history: Sequence[TrialRecord]) -> None:
        pass


class WrapsAround(Enumerates):
    def ask(self, trial_number: int) -> Assignment | None | Finished:
        points = self._points()
        return points[(self._check_trial_number(trial_number) - 1) % len(points)]


class NumbersFromZero(Sound):
    def ask(self, trial_number: int) -> Assignment | None | Finished:
        return {param.name: draw(param, self._rng) for param in self.space}


def _crash(text: str) -> int:
    return {"1": 1}[text]  # a KeyError for anything else


class LeaksAnError(Sound):
    SETTINGS: Mapping[str, SettingSpec] = {"spread": SettingSpec("1", _crash, "1", "made up")}


class LetsZeroSlotsIn(Sound):
    def __init__(self, space: SearchSpace, *, seed: int, direction: str,  # type: ignore[override]
                 settings: Mapping[str, str], parallelism: int = 1) -> None:
        super().__init__(space, seed=seed, direction=direction,  # type: ignore[arg-type]
                         settings=settings, parallelism=max(1, parallelism))


def _make(cls: type[SearchAlgorithm]) -> Make:
    def make(*, seed: int = 7, space: SearchSpace = SPACE,
             parallelism: int = 1) -> SearchAlgorithm:
        return cls(space, seed=seed, direction="maximize", settings={}, parallelism=parallelism)

    return make


Check = Callable[[type[SearchAlgorithm]], None]
CHECKS: dict[str, Check] = {
    "fit": lambda cls: check_suggestions_fit_the_space(sequence(_make(cls))),
    "seed": lambda cls: check_seed_is_honoured(_make(cls), cls.USES_SEED),
    "restore": lambda cls: check_restore_continues(_make(cls), 4),
    "finite": lambda cls: check_finite_or_not(_make(cls), cls, {}),
    "numbers": lambda cls: check_trial_numbers_start_at_one(_make(cls)),
    "told": lambda cls: check_tell_takes_every_outcome(_make(cls)),
    "warns": lambda cls: check_restore_says_when_the_record_differs_from_the_search(_make(cls)),
    "settings": check_settings_are_checked,
    "job values": check_job_values_are_checked,
}
BROKEN: dict[type[SearchAlgorithm], str] = {
    OutOfSpace: "fit", IgnoresTheSeed: "seed", NotReproducible: "seed", WaitsForNothing: "fit",
    ForgetsTheRecord: "restore", WrapsAround: "finite", NumbersFromZero: "numbers",
    LeaksAnError: "settings", LetsZeroSlotsIn: "job values",
}


@pytest.mark.parametrize("sound", [Sound, Enumerates], ids=lambda cls: cls.NAME)
def test_a_made_up_algorithm_that_keeps_the_contract_passes_every_check(
        sound: type[SearchAlgorithm]) -> None:
    for check in CHECKS.values():
        check(sound)


@pytest.mark.parametrize("broken", sorted(BROKEN, key=lambda cls: cls.__name__),
                         ids=lambda cls: cls.__name__)
def test_an_algorithm_that_breaks_a_rule_fails_its_check(broken: type[SearchAlgorithm]) -> None:
    with pytest.raises(AssertionError):
        CHECKS[BROKEN[broken]](broken)
