"""The search-algorithm contract (:class:`~appcore.algorithms.SearchAlgorithm`) as checks that any
implementation can be put through, and :class:`SearchAlgorithmContract`, a pytest base class
that runs them all on one registered algorithm (a plug-in's, outside the tree, too).

The tree's ``tests/appcore/algorithms/test_contract.py`` runs every check on every registered
algorithm (the Bayesian one with every registered backend in each mode), so a new algorithm is
tested by being registered, and runs each check on a made-up implementation that breaks its
rule, so that no check passes vacuously. A check raises ``AssertionError`` saying which rule
was broken.

The rules are those AppCore's trial loop (``appcore/loop.py``) and a restarted AppCore
(``appcore/__main__.py``) rely on:

* every assignment is valid for the space, with its types (float, int, the choice itself);
* the same seed gives the same sequence, another seed another one (unless ``USES_SEED`` is
  False); any int is a seed;
* ``ask`` never answers "nothing now" (``None``) while no trial is in flight: the loop would
  wait for an event that never comes;
* :meth:`~SearchAlgorithm.restore` from the record continues the original sequence and never
  issues a recorded assignment again (a restart must not rerun a trial);
* a finite algorithm (``size`` not None) issues exactly ``size`` distinct assignments, then
  :data:`~appcore.algorithms.FINISHED` for every later number; an infinite one never finishes;
* ``tell`` takes every way a trial ends; trial numbers start at 1;
* settings, budget, seed, direction and parallelism are checked before a job starts, each bad
  one refused with :class:`~common.errors.InvalidSettingsError` in one line naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import logging
import math
import random
from typing import ClassVar
from typing import Protocol

import pytest

from disauto.appcore.algorithms import FINISHED
from disauto.appcore.algorithms import SearchAlgorithm
from disauto.appcore.algorithms import TrialRecord
from disauto.appcore.algorithms import algorithm_class
from disauto.appcore.algorithms import create_algorithm
from disauto.common.errors import InvalidAssignmentError
from disauto.common.errors import InvalidSettingsError
from disauto.common.space import Assignment
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import Param
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.space import Value
from disauto.common.trial_state import TrialState


SPACE = SearchSpace((
    RealParam("lr", 1e-4, 1e-1, log=True),
    RealParam("momentum", 0.1, 0.9),
    RealParam("dropout", 0.0, 0.5, step=0.1),
    IntParam("layers", 1, 4),
    IntParam("units", 16, 256, log=True),
    IntParam("batch", 32, 128, step=32),
    CategoricalParam("act", ("relu", "tanh")),
    CategoricalParam("mixed", (1, 0.5, "auto")),
))
"""Every kind of parameter: log and stepped reals and integers, mixed-type choices."""

SMALL = SearchSpace((IntParam("a", 1, 3), CategoricalParam("b", ("x", "y"))))
"""A space of 6 points, for the end of a finite search."""

LENGTH = 6
"""Trials per run: scikit-optimize's GP takes up to a second per suggestion once its model is
used, so the runs are short (the Bayesian variants use their model from trial 5)."""

BAD_VALUES = ("not a value", "", "-7", "1e400", "nan")
"""Texts a setting may refuse; one it refuses must be refused in one line."""


class Make(Protocol):
    """A fresh instance of the algorithm under test."""

    def __call__(self, *, seed: int = 7, space: SearchSpace = SPACE,
                 parallelism: int = 1) -> SearchAlgorithm: ...


def draw(param: Param, rng: random.Random) -> Value:
    """A valid value of ``param`` drawn from ``rng``, for made-up implementations."""
    if isinstance(param, RealParam):
        if param.step is not None:
            return rng.choice(list(param.step_points()))
        if param.log:
            return min(param.high, max(param.low, math.exp(
                rng.uniform(math.log(param.low), math.log(param.high)))))
        return rng.uniform(param.low, param.high)
    if isinstance(param, IntParam):
        return rng.choice(range(param.low, param.high + 1, param.step))
    return rng.choice(param.choices)


def outcome(number: int) -> tuple[float | None, TrialState]:
    """How trial ``number`` ends in these checks: completed, failed or pruned, by turns."""
    state = (TrialState.COMPLETED, TrialState.FAILED, TrialState.PRUNED)[number % 3]
    return (None if state == TrialState.FAILED else float(number % 7)), state


class Driver:
    """AppCore's loop in miniature: keeps up to ``parallelism`` trials in flight, asks each new
    number again after "nothing now" once the oldest trial in flight has ended, stops at
    :data:`FINISHED`; every assignment it gets is checked against the space.

    Args:
        algorithm: The algorithm driven.
        parallelism: Trials in flight at once.
        flying: Numbers in flight already (restored trials still running).
    """

    def __init__(self, algorithm: SearchAlgorithm, parallelism: int,
                 flying: Sequence[int] = ()) -> None:
        self.algorithm = algorithm
        self.space = algorithm.space
        self.parallelism = parallelism
        self.flying = list(flying)
        self.told: dict[int, tuple[float | None, TrialState]] = {}
        self.finished = False

    def end_oldest(self) -> None:
        number = self.flying.pop(0)
        value, state = outcome(number)
        self.algorithm.tell(number, value, state)
        self.told[number] = (value, state)

    def run(self, numbers: range) -> list[tuple[int, Assignment]]:
        """The assignments issued for ``numbers`` (fewer if the search finished)."""
        issued = []
        for number in numbers:
            while len(self.flying) >= self.parallelism:
                self.end_oldest()
            answer = self.algorithm.ask(number)
            while answer is None:
                assert self.flying, (
                    f"ask({number}) answered 'nothing now' with no trial in flight: the trial "
                    "loop would wait forever")
                self.end_oldest()
                answer = self.algorithm.ask(number)
            if answer is FINISHED:
                self.finished = True
                return issued
            assert isinstance(answer, dict), f"ask({number}) answered {answer!r}"
            check_suggestions_fit_the_space([(number, answer)], self.space)
            issued.append((number, answer))
            self.flying.append(number)
        return issued


def sequence(make: Make, seed: int = 7, length: int = LENGTH, space: SearchSpace = SPACE,
             parallelism: int = 1) -> list[tuple[int, Assignment]]:
    """What a fresh instance issues for trials ``1..length``."""
    algorithm = make(seed=seed, space=space, parallelism=parallelism)
    return Driver(algorithm, parallelism).run(range(1, length + 1))


def check_suggestions_fit_the_space(issued: Sequence[tuple[int, Assignment]],
                                    space: SearchSpace = SPACE) -> None:
    """Every assignment gives each parameter of ``space`` a valid value of its type."""
    assert issued, "issued nothing on a space with points"
    for number, assignment in issued:
        try:
            space.validate_assignment(assignment)
        except InvalidAssignmentError as err:
            raise AssertionError(f"trial {number}: {err}") from None


def check_seed_is_honoured(make: Make, uses_seed: bool, parallelism: int = 1) -> None:
    """The same seed, the same sequence; another seed, another (if the algorithm uses it)."""
    first = sequence(make, seed=3, parallelism=parallelism)
    assert sequence(make, seed=3, parallelism=parallelism) == first, \
        "the same seed gave another sequence"
    other = sequence(make, seed=4, parallelism=parallelism)
    if uses_seed:
        assert other != first, "another seed gave the same sequence (USES_SEED is True)"
    else:
        assert other == first, "another seed gave another sequence (USES_SEED is False)"
    for seed in (0, -1, 2**63 - 1, 2**70):
        assert sequence(make, seed=seed, length=1), f"seed {seed} gave nothing"


def check_restore_continues(make: Make, done: int, more: int = 2, parallelism: int = 2) -> None:
    """An instance restored from the record of ``done`` trials (those still in flight recorded
    RUNNING) issues what the original issues next, and nothing recorded again."""
    original = Driver(make(parallelism=parallelism), parallelism)
    issued = original.run(range(1, done + 1))
    history = []
    for number, assignment in issued:
        value, state = original.told.get(number, (None, TrialState.RUNNING))
        history.append(TrialRecord(number, assignment, value, state))
    restored = Driver(make(parallelism=parallelism), parallelism, original.flying)
    restored.algorithm.restore(history)
    last = issued[-1][0] if issued else 0
    expected = original.run(range(last + 1, last + 1 + more))
    after = restored.run(range(last + 1, last + 1 + more))
    assert after == expected, (
        f"after a restart at trial {last} the search issued {after}, the original {expected}")
    earlier = [record.assignment for record in history]
    again = [number for number, assignment in after if assignment in earlier]
    assert not again, f"after a restart trial {again[0]} got a recorded trial's assignment"


def check_finite_or_not(make: Make, cls: type[SearchAlgorithm],
                        settings: Mapping[str, str]) -> None:
    """``size`` is the number of distinct assignments issued before :data:`FINISHED`, which
    every later number gets too; with ``size`` None the search never finishes."""
    size = cls.size(SMALL, settings)
    wanted = 8  # more than SMALL's 6 points
    algorithm = make(space=SMALL)
    driver = Driver(algorithm, 1)
    issued = driver.run(range(1, wanted + 1))
    check_suggestions_fit_the_space(issued, SMALL)
    if size is None:
        assert len(issued) == wanted and not driver.finished, \
            f"finished after {len(issued)} trials although size() is None"
        return
    distinct = {tuple(sorted(a.items(), key=lambda item: item[0])) for _, a in issued}
    assert driver.finished and len(issued) == size, \
        f"size() is {size} but it issued {len(issued)} before finishing"
    assert len(distinct) == size, f"issued {size - len(distinct)} assignments twice"
    for number in (size + 1, size + 2, size + 7):
        assert algorithm.ask(number) is FINISHED, f"trial {number} after the end: not FINISHED"


def check_tell_takes_every_outcome(make: Make) -> None:
    """A trial may end completed, failed, pruned (with or without a value) or killed."""
    algorithm = make()
    endings = ((1.0, TrialState.COMPLETED), (None, TrialState.FAILED),
               (0.5, TrialState.PRUNED), (None, TrialState.PRUNED), (None, TrialState.KILLED))
    for number, (value, state) in enumerate(endings, start=1):
        assert isinstance(algorithm.ask(number), dict), f"trial {number}: no assignment"
        algorithm.tell(number, value, state)
    assert isinstance(algorithm.ask(len(endings) + 1), dict), "no assignment after the endings"


def check_trial_numbers_start_at_one(make: Make) -> None:
    for number in (0, -1, 1.0, True):
        try:
            make().ask(number)  # type: ignore[arg-type]
        except ValueError as err:
            assert "start at 1" in str(err), f"ask({number!r}): {err}"
        else:
            raise AssertionError(f"ask({number!r}) was accepted")


def _refused_in_one_line(call: object, args: tuple[object, ...], *needles: str) -> str:
    try:
        call(*args)  # type: ignore[operator]
    except InvalidSettingsError as err:
        text = str(err)
        assert "\n" not in text, f"the error is not one line: {text!r}"
        for needle in needles:
            assert needle in text, f"the error {text!r} does not say {needle!r}"
        return text
    raise AssertionError(f"{args!r} was accepted")


def check_settings_are_checked(cls: type[SearchAlgorithm]) -> None:
    """Defaults parse; an unknown setting is refused listing the valid ones; a value a setting
    refuses is refused in one line naming the setting and what is valid, never by another
    exception."""
    parsed = cls.parse_settings({})
    assert set(parsed) == set(cls.SETTINGS), "the defaults do not give every setting"
    cls.validate(SPACE, {}, 10)
    cls.validate(SPACE, {key: spec.default for key, spec in cls.SETTINGS.items()}, None)
    valid = ", ".join(sorted(cls.SETTINGS)) or "none"
    _refused_in_one_line(cls.validate, (SPACE, {"bogus": "1"}, 10),
                         f"unknown setting 'bogus' for algorithm '{cls.NAME}'",
                         f"valid settings: {valid}")
    for name, spec in cls.SETTINGS.items():
        assert spec.valid and spec.help, f"setting {name!r} has no valid text or no help"
        for text in BAD_VALUES:
            try:
                cls.validate(SPACE, {name: text}, 10)
            except InvalidSettingsError as err:
                assert "\n" not in str(err) and f"setting {name!r}" in str(err) \
                    and spec.valid in str(err), f"setting {name!r} = {text!r}: {err}"
            except Exception as err:  # noqa: BLE001 - what escapes is what is wrong
                raise AssertionError(f"setting {name!r} = {text!r} raised "
                                     f"{type(err).__name__}: {err}") from None


def check_job_values_are_checked(cls: type[SearchAlgorithm]) -> None:
    """The budget, direction, seed and parallelism are refused in one line when bad."""
    for budget in (0, -5, 2.5, True):
        _refused_in_one_line(cls.validate, (SPACE, {}, budget), "trial budget")

    def build(seed: object = 0, direction: object = "maximize", parallelism: object = 1
              ) -> SearchAlgorithm:
        return cls(SPACE, seed=seed, direction=direction, settings={},  # type: ignore[arg-type]
                   parallelism=parallelism)  # type: ignore[arg-type]

    _refused_in_one_line(build, (0, "max"), "direction")
    _refused_in_one_line(build, ("1",), "seed")
    for parallelism in (0, -1, 1.5):
        _refused_in_one_line(build, (0, "maximize", parallelism), "parallelism")


def restore_warning(make: Make) -> str:
    """What restoring a trial 1 this search would not issue logs (at WARNING)."""
    first = make().ask(1)
    assert isinstance(first, dict), "trial 1: no assignment"
    changed = {**first, "act": "relu" if first["act"] == "tanh" else "tanh"}
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("disauto.appcore.algorithms")
    logger.addHandler(handler)
    try:
        make().restore([TrialRecord(1, changed, None, TrialState.RUNNING)])
    finally:
        logger.removeHandler(handler)
    return "\n".join(record.getMessage() for record in records)


def check_restore_says_when_the_record_differs_from_the_search(make: Make) -> None:
    """A record the search would not have issued (another space, seed, settings) is kept as
    it is, and the user hears of it."""
    text = restore_warning(make)
    assert "would not give them (first: trial 1)" in text, \
        f"restoring a changed trial 1 logged {text!r}"


# -- the suite as a pytest base class ---------------------------------------------------------


def maker(name: str, settings: Mapping[str, str]) -> Make:
    """Fresh instances of the algorithm registered as ``name``, with ``settings``."""

    def make(*, seed: int = 7, space: SearchSpace = SPACE,
             parallelism: int = 1) -> SearchAlgorithm:
        return create_algorithm(name, space, seed=seed, direction="maximize",
                                settings=settings, parallelism=parallelism)

    return make


Variant = tuple[str, Make, type[SearchAlgorithm], Mapping[str, str]]
"""The registered name, a fresh instance's maker, the class, the settings."""


class SearchAlgorithmContract:
    """Every check of this module, as the tests of a subclass (pytest collects ``Test*``).

    Name the registered algorithm in ``NAME`` (and settings it runs with in ``SETTINGS``)::

        class TestMySearch(SearchAlgorithmContract):
            NAME = "my-search"

    A suite over several algorithms or settings overrides the ``variant`` fixture with
    parameters (the tree's ``tests/appcore/algorithms/test_contract.py`` does).
    """

    NAME: ClassVar[str] = ""
    SETTINGS: ClassVar[Mapping[str, str]] = {}

    @pytest.fixture
    def variant(self) -> Variant:
        """What the checks run on: ``NAME`` with ``SETTINGS``."""
        return variant_of(self.NAME, self.SETTINGS)

    def test_the_registry_names_the_class_by_its_name(self, variant: Variant) -> None:
        name, _, cls, _ = variant
        assert issubclass(cls, SearchAlgorithm) and cls.NAME == name, \
            f"{name!r} is registered as {cls!r}, whose NAME is {cls.NAME!r}"

    def test_suggestions_fit_the_space(self, variant: Variant) -> None:
        """At parallelism 3 (synchronous batches, pending trials); the other checks' runs, at
        parallelism 1 and 2, check every assignment too."""
        check_suggestions_fit_the_space(sequence(variant[1], parallelism=3))

    def test_the_seed_is_honoured(self, variant: Variant) -> None:
        check_seed_is_honoured(variant[1], variant[2].USES_SEED)

    @pytest.mark.parametrize("done", [0, 1, 4])
    def test_restore_continues_the_original_sequence(self, variant: Variant, done: int) -> None:
        check_restore_continues(variant[1], done)

    def test_a_finite_search_ends_and_an_infinite_one_does_not(self, variant: Variant) -> None:
        _, make, cls, settings = variant
        check_finite_or_not(make, cls, settings)

    def test_tell_takes_every_outcome(self, variant: Variant) -> None:
        check_tell_takes_every_outcome(variant[1])

    def test_trial_numbers_start_at_one(self, variant: Variant) -> None:
        check_trial_numbers_start_at_one(variant[1])

    def test_restore_says_when_the_record_differs_from_the_search(self, variant: Variant
                                                                  ) -> None:
        check_restore_says_when_the_record_differs_from_the_search(variant[1])

    def test_settings_are_checked(self, variant: Variant) -> None:
        check_settings_are_checked(variant[2])

    def test_the_budget_seed_direction_and_parallelism_are_checked(self, variant: Variant
                                                                    ) -> None:
        check_job_values_are_checked(variant[2])


def variant_of(name: str, settings: Mapping[str, str]) -> Variant:
    """The registered algorithm ``name`` with ``settings``, as the suite's checks take it."""
    return name, maker(name, settings), algorithm_class(name), dict(settings)
