"""The Bayesian-backend contract (:class:`~appcore.algorithms.bayesian.Backend`, the model behind
``--tuning-type bayesian``: an Optuna sampler or scikit-optimize's GP) as checks on the backend
itself, and :class:`BackendContract`, a pytest base class that runs them on one registered
backend (a plug-in's too). The algorithm's suite (:mod:`disauto.testing.algorithms`) checks
the shipped backends through the algorithm as well. The rules:

* one valid, typed assignment per number; a fixed (warm-start) point issued as given;
* the members of a batch differ (pending trials are accounted for: the constant liar);
* the same seed and calls give the same suggestions, another seed others;
* what it suggests next depends on the trials it was told of, never on the order results
  arrived in: a backend that replays the record (:meth:`Backend.replay`, each finished trial's
  outcome after its replay) suggests what the original suggests next -- what lets a restarted
  AppCore continue the original sequence;
* known results (``--warm-start``) and every outcome are taken.

The tree's ``tests/appcore/algorithms/test_backend_contract.py`` runs every check on every
registered backend, and shows that a made-up backend that keeps these passes every check and
one that breaks a rule fails its check.
"""

from __future__ import annotations

from collections.abc import Callable
import json
import random
from typing import ClassVar

import pytest

from disauto.appcore.algorithms.bayesian import Backend
from disauto.appcore.algorithms.bayesian import backend_class
from disauto.common.errors import InvalidAssignmentError
from disauto.common.space import Assignment
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState
from disauto.testing.algorithms import draw
from disauto.testing.algorithms import outcome


SPACE = SearchSpace((
    RealParam("lr", 1e-4, 1e-1, log=True),
    RealParam("dropout", 0.0, 0.5, step=0.1),
    IntParam("units", 16, 256, log=True),
    CategoricalParam("mixed", (1, 0.5, "auto")),
))
"""Each kind of parameter once: scikit-optimize's GP takes a fifth of the time per suggestion
it takes on the algorithms' eight-parameter space."""

STARTUP = 3
"""Results before a backend uses its model: the checks reach the model within a few trials."""

Make = Callable[[int], Backend]
"""A fresh backend with the given seed."""


def maker(cls: type[Backend]) -> Make:
    """Fresh instances of ``cls`` on :data:`SPACE`, using their model after :data:`STARTUP`."""
    return lambda seed: cls(SPACE, seed=seed, direction="maximize", n_startup_trials=STARTUP)


def _valid(number: int, assignment: Assignment) -> None:
    try:
        SPACE.validate_assignment(assignment)
    except InvalidAssignmentError as err:
        raise AssertionError(f"trial {number}: {err}") from None


def _key(assignment: Assignment) -> str:
    return json.dumps(assignment, sort_keys=True)


def run(backend: Backend, first: int, last: int) -> list[Assignment]:
    """Suggest ``first..last`` one by one, each ending (:func:`outcome`) before the next."""
    issued = []
    for number in range(first, last + 1):
        (assignment,) = backend.suggest([number], [None])
        _valid(number, assignment)
        issued.append(assignment)
        backend.observe(number, *outcome(number))
    return issued


def check_suggestions_fit_and_fixed_points_stand(make: Make) -> None:
    backend = make(7)
    run(backend, 1, STARTUP + 2)
    fixed = {param.name: draw(param, random.Random(5)) for param in SPACE}
    numbers = [STARTUP + 3, STARTUP + 4, STARTUP + 5]
    batch = backend.suggest(numbers, [None, fixed, None])
    assert len(batch) == len(numbers), f"{len(numbers)} numbers, {len(batch)} assignments"
    for number, assignment in zip(numbers, batch, strict=True):
        _valid(number, assignment)
    assert batch[1] == fixed, f"the fixed point {fixed} was issued as {batch[1]}"
    assert len({_key(a) for a in batch}) == len(batch), "the members of a batch collapsed"


def check_the_seed_is_honoured(make: Make) -> None:
    first = run(make(3), 1, STARTUP + 2)
    assert run(make(3), 1, STARTUP + 2) == first, "the same seed gave another sequence"
    assert run(make(4), 1, STARTUP + 2) != first, "another seed gave the same sequence"


def follow(backend: Backend, schedule: str) -> tuple[list[Assignment], list[int]]:
    """Suggest (``s3``) and end (``e3``) trials as ``schedule`` says, e.g. ``"s1 s2 e2 e1"``;
    the assignments in number order and the trials ended, in the order they ended."""
    issued: dict[int, Assignment] = {}
    ended = []
    for event in schedule.split():
        number = int(event[1:])
        if event[0] == "s":
            (issued[number],) = backend.suggest([number], [None])
            _valid(number, issued[number])
        else:
            backend.observe(number, *outcome(number))
            ended.append(number)
    return [issued[number] for number in sorted(issued)], ended


IN_ORDER = "s1 e1 s2 e2 s3 e3 s4 e4 s5 e5"
OUT_OF_ORDER = "s1 s2 s3 e2 s4 e1 e4 s5"
"""Two ways the record of trials 1-5 came about: sequentially, and with trials in flight at
once ending out of order (3 and 5 still running at the restart)."""


def check_replay_continues_whatever_the_order_results_arrived_in(make: Make,
                                                                  schedule: str) -> None:
    """The original follows ``schedule``; the replica replays the record, then the finished
    trials' outcomes in number order, as a restart does (``BayesianSearch.restore``); the
    trials still running end after the restart in both. Both then suggest the same."""
    original = make(7)
    issued, ended = follow(original, schedule)
    replica = make(7)
    for number, assignment in enumerate(issued, start=1):
        replica.replay(number, assignment)
        if number in ended:
            replica.observe(number, *outcome(number))
    running = [number for number in range(1, len(issued) + 1) if number not in ended]
    for number in running:
        for backend in (original, replica):
            backend.observe(number, *outcome(number))
    last = len(issued)
    expected = run(original, last + 1, last + 2)
    assert run(replica, last + 1, last + 2) == expected, (
        f"after replaying the record of {schedule!r} the suggestions differ")


def check_known_results_and_every_outcome_are_taken(make: Make) -> None:
    backend = make(7)
    for index in range(STARTUP - 1):  # the model is used after the first ending
        point = {param.name: draw(param, random.Random(index)) for param in SPACE}
        backend.add_known(point, float(index))
    endings = ((1.0, TrialState.COMPLETED), (None, TrialState.FAILED),
               (0.5, TrialState.PRUNED), (None, TrialState.PRUNED), (None, TrialState.KILLED))
    for number, (value, state) in enumerate(endings, start=1):
        (assignment,) = backend.suggest([number], [None])
        _valid(number, assignment)
        backend.observe(number, value, state)
    (assignment,) = backend.suggest([len(endings) + 1], [None])
    _valid(len(endings) + 1, assignment)


CHECKS: dict[str, Callable[[Make], None]] = {
    "fit": check_suggestions_fit_and_fixed_points_stand,
    "seed": check_the_seed_is_honoured,
    "replay": lambda make: check_replay_continues_whatever_the_order_results_arrived_in(
        make, OUT_OF_ORDER),
    "replay in order": lambda make: check_replay_continues_whatever_the_order_results_arrived_in(
        make, IN_ORDER),
    "told": check_known_results_and_every_outcome_are_taken,
}


class BackendContract:
    """Every check of this module, as the tests of a subclass (pytest collects ``Test*``)::

        class TestMyBackend(BackendContract):
            NAME = "my-backend"

    A suite over several backends overrides the ``backend_type`` fixture with parameters (the
    tree's ``tests/appcore/algorithms/test_backend_contract.py`` does).
    """

    NAME: ClassVar[str] = ""

    @pytest.fixture
    def backend_type(self) -> type[Backend]:
        """What the checks run on: the backend registered as ``NAME``."""
        return backend_class(self.NAME)

    def test_the_registry_names_the_backend_by_its_name(self, backend_type: type[Backend]
                                                        ) -> None:
        assert issubclass(backend_type, Backend), f"{backend_type!r} is not a Backend"
        assert backend_class(backend_type.NAME) is backend_type, \
            f"{backend_type!r} is not registered as its NAME {backend_type.NAME!r}"

    @pytest.mark.parametrize("check", sorted(CHECKS))
    def test_it_keeps_the_contract(self, backend_type: type[Backend], check: str) -> None:
        CHECKS[check](maker(backend_type))
