"""Conformance suite: every registered search algorithm honours the SearchAlgorithm contract."""

from __future__ import annotations

from collections.abc import Iterator
import logging
import subprocess
import sys

import pytest

from disauto.appcore.algorithms import ALGORITHMS
from disauto.appcore.algorithms import FINISHED
from disauto.appcore.algorithms import RecordState
from disauto.appcore.algorithms import SearchAlgorithm
from disauto.appcore.algorithms import TrialRecord
from disauto.appcore.algorithms import algorithm_class
from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.algorithms.bayesian import BACKENDS
from disauto.appcore.algorithms.bayesian import MODES
from disauto.common.errors import InvalidSettingsError
from disauto.common.errors import SearchInputError
from disauto.common.errors import UnknownAlgorithmError
from disauto.common.space import Assignment
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState


pytestmark = pytest.mark.integration  # starts processes or servers


SPACE = SearchSpace(
    (
        RealParam("lr", 1e-4, 1e-1, log=True),
        RealParam("momentum", 0.1, 0.9),
        RealParam("dropout", 0.0, 0.5, step=0.1),
        IntParam("layers", 1, 4),
        IntParam("units", 16, 256, log=True),
        IntParam("batch", 32, 128, step=32),
        CategoricalParam("act", ("relu", "tanh")),
        CategoricalParam("mixed", (1, 0.5, "auto")),
    )
)
EXPECTED_TYPES = {
    "lr": float,
    "momentum": float,
    "dropout": float,
    "layers": int,
    "units": int,
    "batch": int,
}
N = 40


# Every registered algorithm, and the bayesian one with each backend in each mode.
VARIANTS: dict[str, tuple[str, dict[str, str]]] = {
    name: (name, {}) for name in sorted(ALGORITHMS) if name != "bayesian"
}
VARIANTS.update({
    f"bayesian-{backend}-{mode}": ("bayesian", {"backend": backend, "mode": mode})
    for backend in BACKENDS for mode in MODES
})


@pytest.fixture(params=sorted(ALGORITHMS))
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=sorted(VARIANTS))
def variant(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _length(variant: str, wanted: int) -> int:
    """How many trials a test runs: scikit-optimize's GP fits for ~0.4 s per suggestion, so
    its variants run 13 (10 random, 3 from the model) to keep the suite fast."""
    return min(wanted, 13) if "-gp-" in variant else wanted


def _make(variant: str, seed: int = 7, space: SearchSpace = SPACE) -> SearchAlgorithm:
    name, settings = VARIANTS[variant]
    return create_algorithm(name, space, seed=seed, direction="maximize", settings=settings)


def _run(algorithm: SearchAlgorithm, numbers: range) -> Iterator[tuple[int, Assignment]]:
    """Ask for each number, telling a result after each ask (as a sequential loop would)."""
    for number in numbers:
        suggestion = algorithm.ask(number)
        if suggestion is FINISHED:
            return
        assert suggestion is not None  # grid and random never answer "nothing now"
        yield number, suggestion
        algorithm.tell(number, float(len(str(suggestion))), TrialState.COMPLETED)


def test_registry_names_match_classes(name: str) -> None:
    cls = algorithm_class(name)
    assert issubclass(cls, SearchAlgorithm)
    assert cls.NAME == name


def test_every_value_keeps_its_type_and_fits_the_space(variant: str) -> None:
    seen = list(_run(_make(variant), range(1, _length(variant, N) + 1)))
    assert seen
    for _, assignment in seen:
        SPACE.validate_assignment(assignment)
        for param, expected in EXPECTED_TYPES.items():
            assert type(assignment[param]) is expected, (param, assignment[param])
        for param in ("act", "mixed"):
            choices = SPACE[param].choices  # type: ignore[union-attr]
            assert any(
                type(c) is type(assignment[param]) and c == assignment[param] for c in choices
            )


def test_same_seed_gives_the_same_sequence(variant: str) -> None:
    assert list(_run(_make(variant, seed=3), range(1, _length(variant, N) + 1))) == list(
        _run(_make(variant, seed=3), range(1, _length(variant, N) + 1))
    )


def test_another_seed_gives_another_sequence_iff_the_algorithm_uses_it(variant: str) -> None:
    three = list(_run(_make(variant, seed=3), range(1, _length(variant, N) + 1)))
    four = list(_run(_make(variant, seed=4), range(1, _length(variant, N) + 1)))
    if algorithm_class(VARIANTS[variant][0]).USES_SEED:
        assert three != four
    else:  # e.g. grid search: the order is the product's, whatever the seed
        assert three == four


@pytest.mark.parametrize("done", [0, 1, 12])
def test_restore_continues_the_original_sequence(variant: str, done: int) -> None:
    """A restarted AppCore told what the job store holds continues the original sequence.

    The original is told each trial's outcome right after asking, except the last one or two,
    which are still running when AppCore restarts (and end after it); the history holds
    exactly what the original was told.
    """

    running = 1 if variant.endswith("-sync") else 2  # a sync batch of 1 waits for its trial

    def outcome(number: int) -> tuple[float | None, RecordState]:
        if number > done - running:
            return None, TrialState.RUNNING
        state = (TrialState.COMPLETED, TrialState.FAILED, TrialState.PRUNED)[number % 3]
        return (None if state == TrialState.FAILED else float(number % 7)), state

    more = 3 if "-gp-" in variant else 15  # trials asked after the restart
    original = _make(variant)
    history = []
    for number in range(1, done + 1):
        assignment = original.ask(number)
        assert isinstance(assignment, dict)
        value, state = outcome(number)
        history.append(TrialRecord(number, assignment, value, state))
        if state != TrialState.RUNNING:
            original.tell(number, value, state)
    restored = _make(variant)
    restored.restore(history)
    # The trials that were running end after the restart (a sync batch waits for them).
    for record in history:
        if record.state == TrialState.RUNNING:
            for algorithm in (original, restored):
                algorithm.tell(record.number, 0.5, TrialState.COMPLETED)
    continued = list(_run(original, range(done + 1, done + 1 + more)))
    after_restart = list(_run(restored, range(done + 1, done + 1 + more)))

    assert after_restart == continued
    if VARIANTS[variant][0] != "random-search":  # independent draws may repeat by chance
        earlier = [record.assignment for record in history]
        assert all(assignment not in earlier for _, assignment in after_restart)


def test_tell_accepts_every_outcome(variant: str) -> None:
    algorithm = _make(variant)
    finished = (TrialState.COMPLETED, TrialState.FAILED, TrialState.PRUNED, TrialState.KILLED)
    for number, state in enumerate(finished, start=1):
        algorithm.ask(number)
        algorithm.tell(number, 1.0 if state == TrialState.COMPLETED else None, state)


@pytest.mark.parametrize("number", [0, -1, 1.0, True])
def test_trial_numbers_start_at_one(variant: str, number: object) -> None:
    with pytest.raises(ValueError, match="start at 1"):
        _make(variant).ask(number)


def test_defaults_of_every_setting_parse(name: str) -> None:
    cls = algorithm_class(name)
    parsed = cls.parse_settings({})
    assert set(parsed) == set(cls.SETTINGS)
    cls.validate(SPACE, {}, max_trials=10)
    cls.validate(SPACE, {key: spec.default for key, spec in cls.SETTINGS.items()}, None)


def test_unknown_settings_are_rejected_with_the_valid_ones(name: str) -> None:
    cls = algorithm_class(name)
    valid = ", ".join(sorted(cls.SETTINGS)) or "none"
    message = f"unknown setting 'bogus' for algorithm '{name}'; valid settings: {valid}"
    with pytest.raises(InvalidSettingsError) as caught:
        cls.validate(SPACE, {"bogus": "1"}, max_trials=10)
    assert str(caught.value) == message
    with pytest.raises(InvalidSettingsError, match="unknown setting 'bogus'"):
        create_algorithm(name, SPACE, seed=0, direction="maximize", settings={"bogus": "1"})


def test_bad_setting_values_are_rejected(name: str) -> None:
    cls = algorithm_class(name)
    for setting, spec in cls.SETTINGS.items():
        with pytest.raises(InvalidSettingsError) as caught:
            cls.validate(SPACE, {setting: "not a value"}, max_trials=10)
        assert f"setting '{setting}' for algorithm '{name}' must be {spec.valid}" in str(
            caught.value
        )


@pytest.mark.parametrize("budget", [0, -5, 2.5, True])
def test_bad_budgets_are_rejected(name: str, budget: object) -> None:
    with pytest.raises(InvalidSettingsError, match="trial budget must be a positive integer"):
        algorithm_class(name).validate(SPACE, {}, max_trials=budget)


def test_direction_and_seed_are_checked(name: str) -> None:
    with pytest.raises(InvalidSettingsError, match="direction must be 'maximize' or 'minimize'"):
        create_algorithm(name, SPACE, seed=0, direction="max", settings={})
    with pytest.raises(InvalidSettingsError, match="seed .* must be an integer"):
        create_algorithm(name, SPACE, seed="1", direction="minimize", settings={})


def test_any_int_seed_works(variant: str) -> None:
    for seed in (0, -1, 2**63 - 1, 2**70):
        assert list(_run(_make(variant, seed=seed), range(1, 4)))


def test_size_is_none_or_the_number_of_assignments(variant: str) -> None:
    space = SearchSpace((IntParam("a", 1, 3), CategoricalParam("b", ("x", "y"))))
    size = algorithm_class(VARIANTS[variant][0]).size(space, {})
    wanted = _length(variant, 19)
    issued = list(_run(_make(variant, space=space), range(1, wanted + 1)))
    if size is None:
        assert len(issued) == wanted
    else:
        assert len(issued) == size == 6


def test_restore_logs_a_history_it_would_not_have_issued(
    variant: str, caplog: pytest.LogCaptureFixture
) -> None:
    algorithm = _make(variant)
    first = algorithm.ask(1)
    assert isinstance(first, dict)
    changed = {**first, "act": "relu" if first["act"] == "tanh" else "tanh"}
    with caplog.at_level(logging.WARNING, logger="disauto.appcore.algorithms"):
        _make(variant).restore([TrialRecord(1, changed, None, TrialState.RUNNING)])
    assert "would not give them (first: trial 1)" in caplog.text


def test_unknown_algorithm_lists_the_valid_names() -> None:
    with pytest.raises(UnknownAlgorithmError) as caught:
        algorithm_class("bayes")
    assert str(caught.value) == (
        "unknown search algorithm 'bayes'; valid algorithms: grid-search, random-search, "
        "bayesian"
    )
    assert isinstance(caught.value, SearchInputError)
    assert isinstance(caught.value, ValueError)
    with pytest.raises(UnknownAlgorithmError):
        create_algorithm("", SPACE, seed=0, direction="maximize", settings={})


def test_registry_imports_algorithms_lazily() -> None:
    code = (
        "import sys, appcore.algorithms as a\n"
        "assert 'optuna' not in sys.modules, 'optuna imported eagerly'\n"
        "assert 'disauto.appcore.algorithms.random' not in sys.modules\n"
        "a.algorithm_class('grid-search')\n"
        "assert 'optuna' not in sys.modules, 'grid search needs no optuna'\n"
        "a.algorithm_class('random-search')\n"
        "assert 'optuna' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
