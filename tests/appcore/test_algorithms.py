"""Conformance suite: every registered search algorithm honours the SearchAlgorithm contract."""

from __future__ import annotations

from collections.abc import Iterator
import logging
import subprocess
import sys

import pytest

from appcore.algorithms import ALGORITHMS
from appcore.algorithms import FINISHED
from appcore.algorithms import SearchAlgorithm
from appcore.algorithms import TrialRecord
from appcore.algorithms import algorithm_class
from appcore.algorithms import create_algorithm
from appcore.errors import InvalidSettingsError
from appcore.errors import SearchInputError
from appcore.errors import UnknownAlgorithmError
from appcore.space import Assignment
from appcore.space import CategoricalParam
from appcore.space import IntParam
from appcore.space import RealParam
from appcore.space import SearchSpace


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


@pytest.fixture(params=sorted(ALGORITHMS))
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _make(name: str, seed: int = 7, space: SearchSpace = SPACE) -> SearchAlgorithm:
    return create_algorithm(name, space, seed=seed, direction="maximize", settings={})


def _run(algorithm: SearchAlgorithm, numbers: range) -> Iterator[tuple[int, Assignment]]:
    """Ask for each number, telling a result after each ask (as a sequential loop would)."""
    for number in numbers:
        suggestion = algorithm.ask(number)
        if suggestion is FINISHED:
            return
        assert suggestion is not None  # grid and random never answer "nothing now"
        yield number, suggestion
        algorithm.tell(number, float(len(str(suggestion))), "completed")


def test_registry_names_match_classes(name: str) -> None:
    cls = algorithm_class(name)
    assert issubclass(cls, SearchAlgorithm)
    assert cls.NAME == name


def test_every_value_keeps_its_type_and_fits_the_space(name: str) -> None:
    seen = list(_run(_make(name), range(1, N + 1)))
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


def test_same_seed_gives_the_same_sequence(name: str) -> None:
    assert list(_run(_make(name, seed=3), range(1, N + 1))) == list(
        _run(_make(name, seed=3), range(1, N + 1))
    )


def test_another_seed_gives_another_sequence_iff_the_algorithm_uses_it(name: str) -> None:
    three = list(_run(_make(name, seed=3), range(1, N + 1)))
    four = list(_run(_make(name, seed=4), range(1, N + 1)))
    if algorithm_class(name).USES_SEED:
        assert three != four
    else:  # e.g. grid search: the order is the product's, whatever the seed
        assert three == four


@pytest.mark.parametrize("done", [0, 1, 10])
def test_restore_continues_the_original_sequence(name: str, done: int) -> None:
    original = _make(name)
    issued = list(_run(original, range(1, done + 1)))
    # The last two issued trials are still running when AppCore restarts.
    history = [
        TrialRecord(
            number,
            assignment,
            None if number > done - 2 else float(number),
            "running" if number > done - 2 else ("completed", "failed", "pruned")[number % 3],
        )
        for number, assignment in issued
    ]
    continued = list(_run(original, range(done + 1, done + 16)))

    restored = _make(name)
    restored.restore(history)
    after_restart = list(_run(restored, range(done + 1, done + 16)))

    assert after_restart == continued
    earlier = [assignment for _, assignment in issued]
    assert all(assignment not in earlier for _, assignment in after_restart)


def test_tell_accepts_every_outcome(name: str) -> None:
    algorithm = _make(name)
    for number, state in enumerate(("completed", "failed", "pruned", "killed"), start=1):
        algorithm.ask(number)
        algorithm.tell(number, 1.0 if state == "completed" else None, state)  # type: ignore[arg-type]


@pytest.mark.parametrize("number", [0, -1, 1.0, True])
def test_trial_numbers_start_at_one(name: str, number: object) -> None:
    with pytest.raises(ValueError, match="start at 1"):
        _make(name).ask(number)  # type: ignore[arg-type]


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
        algorithm_class(name).validate(SPACE, {}, max_trials=budget)  # type: ignore[arg-type]


def test_direction_and_seed_are_checked(name: str) -> None:
    with pytest.raises(InvalidSettingsError, match="direction must be 'maximize' or 'minimize'"):
        create_algorithm(name, SPACE, seed=0, direction="max", settings={})  # type: ignore[arg-type]
    with pytest.raises(InvalidSettingsError, match="seed .* must be an integer"):
        create_algorithm(name, SPACE, seed="1", direction="minimize", settings={})  # type: ignore[arg-type]


def test_any_int_seed_works(name: str) -> None:
    for seed in (0, -1, 2**63 - 1, 2**70):
        assert list(_run(_make(name, seed=seed), range(1, 4)))


def test_size_is_none_or_the_number_of_assignments(name: str) -> None:
    space = SearchSpace((IntParam("a", 1, 3), CategoricalParam("b", ("x", "y"))))
    size = algorithm_class(name).size(space, {})
    issued = list(_run(_make(name, space=space), range(1, 20)))
    if size is None:
        assert len(issued) == 19
    else:
        assert len(issued) == size == 6


def test_restore_logs_a_history_it_would_not_have_issued(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    algorithm = _make(name)
    first = algorithm.ask(1)
    assert isinstance(first, dict)
    changed = {**first, "act": "relu" if first["act"] == "tanh" else "tanh"}
    with caplog.at_level(logging.WARNING, logger="appcore.algorithms"):
        _make(name).restore([TrialRecord(1, changed, None, "running")])
    assert "would not give them (first: trial 1)" in caplog.text


def test_unknown_algorithm_lists_the_valid_names() -> None:
    with pytest.raises(UnknownAlgorithmError) as caught:
        algorithm_class("bayes")
    assert str(caught.value) == (
        "unknown search algorithm 'bayes'; valid algorithms: grid-search, random-search"
    )
    assert isinstance(caught.value, SearchInputError)
    assert isinstance(caught.value, ValueError)
    with pytest.raises(UnknownAlgorithmError):
        create_algorithm("", SPACE, seed=0, direction="maximize", settings={})


def test_registry_imports_algorithms_lazily() -> None:
    code = (
        "import sys, appcore.algorithms as a\n"
        "assert 'optuna' not in sys.modules, 'optuna imported eagerly'\n"
        "assert 'appcore.algorithms.random' not in sys.modules\n"
        "a.algorithm_class('grid-search')\n"
        "assert 'optuna' not in sys.modules, 'grid search needs no optuna'\n"
        "a.algorithm_class('random-search')\n"
        "assert 'optuna' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
