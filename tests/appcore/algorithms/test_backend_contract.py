"""Every registered Bayesian backend keeps the contract (``disauto/testing/backends.py``: its
rules are listed there), checked on the backend itself (``test_contract.py`` checks it through
the algorithm). A made-up backend that keeps these passes every check; one that breaks a rule
fails its check.
"""

from __future__ import annotations

from collections.abc import Sequence
import importlib.util
import random

import pytest

from disauto.appcore.algorithms._base import trial_seed
from disauto.appcore.algorithms.bayesian import BACKENDS
from disauto.appcore.algorithms.bayesian import Backend
from disauto.appcore.algorithms.bayesian import backend_class
from disauto.common.space import Assignment
from disauto.common.trial_state import TrialState
from disauto.testing.algorithms import draw
from disauto.testing.backends import CHECKS
from disauto.testing.backends import BackendContract
from disauto.testing.backends import maker


class TestEveryRegisteredBackend(BackendContract):
    """:class:`BackendContract` (``disauto.testing``, what a plug-in runs too) over every
    registered backend."""

    @pytest.fixture(params=sorted(BACKENDS))
    def backend_type(self, request: pytest.FixtureRequest) -> type[Backend]:
        return backend_class(str(request.param))


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_the_development_environment_has_every_backends_library(name: str) -> None:
    cls = backend_class(name)
    if cls.REQUIRES is not None:
        module, how = cls.REQUIRES
        assert how and importlib.util.find_spec(module) is not None, \
            f"the development environment lacks {module!r} ({how})"


# -- the checks are not vacuous -------------------------------------------------------------------


class Sound(Backend):
    """A made-up backend that keeps the contract: trial ``n`` draws from its own seeded stream
    (no model), a fixed point stands."""

    NAME = "sound"

    def add_known(self, assignment: Assignment, value: float) -> None:
        pass

    def _draw(self, number: int) -> Assignment:
        rng = random.Random(trial_seed(self.seed, number))
        return {param.name: draw(param, rng) for param in self.space}

    def suggest(self, numbers: Sequence[int], fixed: Sequence[Assignment | None]
                ) -> list[Assignment]:
        return [dict(point) if point is not None else self._draw(number)
                for number, point in zip(numbers, fixed, strict=True)]

    def observe(self, number: int, value: float | None, state: TrialState) -> None:
        pass


class OutOfSpace(Sound):
    def _draw(self, number: int) -> Assignment:
        return {**super()._draw(number), "layers": 99}


class DropsFixedPoints(Sound):
    def suggest(self, numbers: Sequence[int], fixed: Sequence[Assignment | None]
                ) -> list[Assignment]:
        return [self._draw(number) for number in numbers]


class Collapses(Sound):
    def suggest(self, numbers: Sequence[int], fixed: Sequence[Assignment | None]
                ) -> list[Assignment]:
        return [dict(point) if point is not None else self._draw(numbers[0])
                for point in fixed]


class Unseeded(Sound):
    def _draw(self, number: int) -> Assignment:
        rng = random.Random()
        return {param.name: draw(param, rng) for param in self.space}


class MindsTheArrivals(Sound):
    """Its draws depend on the order results arrived in."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._arrivals: list[int] = []

    def observe(self, number: int, value: float | None, state: TrialState) -> None:
        self._arrivals.append(number)

    def _draw(self, number: int) -> Assignment:
        rng = random.Random(f"{trial_seed(self.seed, number)} {self._arrivals}")
        return {param.name: draw(param, rng) for param in self.space}


BROKEN: dict[type[Backend], str] = {
    OutOfSpace: "fit", DropsFixedPoints: "fit", Collapses: "fit", Unseeded: "seed",
    MindsTheArrivals: "replay",
}


def test_a_made_up_backend_that_keeps_the_contract_passes_every_check() -> None:
    for check in CHECKS.values():
        check(maker(Sound))


@pytest.mark.parametrize("broken", sorted(BROKEN, key=lambda cls: cls.__name__),
                         ids=lambda cls: cls.__name__)
def test_a_backend_that_breaks_a_rule_fails_its_check(broken: type[Backend]) -> None:
    with pytest.raises(AssertionError):
        CHECKS[BROKEN[broken]](maker(broken))
