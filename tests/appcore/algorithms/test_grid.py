"""Tests for grid search: the exact Cartesian product, its order, sizes and axis rules."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from disauto.appcore.algorithms import FINISHED
from disauto.appcore.algorithms.grid import GridSearch
from disauto.common.errors import InvalidSettingsError
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import Param
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace


def _grid(space: SearchSpace, **settings: str) -> GridSearch:
    return GridSearch(space, seed=0, direction="maximize", settings=settings)


def _all(search: GridSearch) -> list[dict[str, object]]:
    points = []
    number = 1
    while (point := search.ask(number)) is not FINISHED:
        assert isinstance(point, dict)
        points.append(point)
        number += 1
    return points


def _axis(param: Param, points: int = 5) -> list[object]:
    return list(param.grid_axis(points))


def test_paper_example_is_the_exact_product() -> None:
    space = SearchSpace(
        (RealParam("momentum", 0.1, 0.3), CategoricalParam("learningRate", (0.1, 0.2, 0.3)))
    )
    points = _all(_grid(space))
    momentum = [0.1, 0.15, 0.2, 0.25, 0.3]
    assert points == [
        {"momentum": m, "learningRate": r} for m, r in itertools.product(momentum, (0.1, 0.2, 0.3))
    ]
    assert GridSearch.size(space, {}) == space.grid_size(5) == 15


def test_first_parameter_changes_slowest_like_itertools_product() -> None:
    space = SearchSpace(
        (
            CategoricalParam("a", ("x", "y")),
            IntParam("b", 1, 3),
            RealParam("c", 0.0, 1.0, step=0.5),
            CategoricalParam("d", (1, 2.5)),
        )
    )
    axes = [_axis(param) for param in space]
    expected = [dict(zip(space.names, combo, strict=True)) for combo in itertools.product(*axes)]
    points = _all(_grid(space))
    assert points == expected
    assert len(points) == 2 * 3 * 3 * 2 == GridSearch.size(space, {})
    assert len({tuple(point.values()) for point in points}) == len(points)  # nothing twice


def test_finished_past_the_end_and_stays_finished() -> None:
    search = _grid(SearchSpace((CategoricalParam("a", ("x", "y")),)))
    assert search.ask(1) == {"a": "x"}
    assert search.ask(2) == {"a": "y"}
    assert search.ask(3) is FINISHED
    assert search.ask(4) is FINISHED
    assert search.ask(1000) is FINISHED
    assert search.grid_size == 2


def test_asking_again_gives_the_same_point() -> None:
    search = _grid(SearchSpace((IntParam("a", 0, 100), RealParam("b", 0.0, 1.0))))
    assert search.ask(7) == search.ask(7) == _grid(search.space).ask(7)


def test_huge_grids_are_indexed_not_materialized() -> None:
    space = SearchSpace(
        (
            RealParam("a", 0.0, 1.0, step=1e-9),
            IntParam("b", 0, 10**12, step=3),
            IntParam("c", 1, 2),
        )
    )
    search = _grid(space)
    size = 1_000_000_001 * (10**12 // 3 + 1) * 2
    assert search.grid_size == size == GridSearch.size(space, {})
    assert search.ask(1) == {"a": 0.0, "b": 0, "c": 1}
    assert search.ask(2) == {"a": 0.0, "b": 0, "c": 2}
    assert search.ask(3) == {"a": 0.0, "b": 3, "c": 1}
    assert search.ask(size) == {"a": 1.0, "b": 999_999_999_999, "c": 2}
    assert search.ask(size + 1) is FINISHED


@pytest.mark.parametrize(
    ("param", "expected"),
    [
        (RealParam("x", 0.1, 0.3, step=0.1), [0.1, 0.2, 0.3]),  # float error must not drop 0.3
        (RealParam("x", 0.0, 1.0, step=0.3), [0.0, 0.3, 0.6, 0.9]),  # high off the step
        (RealParam("x", 0.0, 1.0, step=0.25), [0.0, 0.25, 0.5, 0.75, 1.0]),
        (RealParam("x", 0, 1, step=1), [0.0, 1.0]),
        (RealParam("x", 0.0, 1.0), [0.0, 0.25, 0.5, 0.75, 1.0]),
        (RealParam("x", -1.0, 1.0), [-1.0, -0.5, 0.0, 0.5, 1.0]),
        (RealParam("x", 1e-4, 1.0, log=True), [1e-4, 1e-3, 1e-2, 1e-1, 1.0]),
        (IntParam("x", 1, 5), [1, 2, 3, 4, 5]),  # as many integers as points: all of them
        (IntParam("x", 1, 3), [1, 2, 3]),
        (IntParam("x", 0, 100), [0, 25, 50, 75, 100]),  # more: evenly spaced
        (IntParam("x", 1, 10_000, log=True), [1, 10, 100, 1000, 10_000]),
        (IntParam("x", 1, 8, log=True), [1, 2, 3, 5, 8]),  # rounded 1, 1.7, 2.8, 4.8, 8
        (IntParam("x", 0, 10, step=3), [0, 3, 6, 9]),  # a step: every step point
        (IntParam("x", 0, 100, step=10), list(range(0, 101, 10))),
        (CategoricalParam("x", ("b", 3, 0.5)), ["b", 3, 0.5]),
    ],
)
def test_axis_rules(param: Param, expected: list[object]) -> None:
    axis = _axis(param)
    assert axis == expected
    assert [type(value) for value in axis] == [type(value) for value in expected]


def test_points_per_range_setting() -> None:
    assert _axis(RealParam("x", 0.0, 1.0), points=11) == [i / 10 for i in range(11)]
    assert _axis(RealParam("x", 0.0, 0.3), points=4) == [
        0.0,
        0.1,
        0.2,
        0.3,
    ]  # no 0.30000000000000004
    assert _axis(IntParam("x", 1, 20), points=20) == list(range(1, 21))
    space = SearchSpace((RealParam("x", 0.0, 1.0), IntParam("y", 0, 100)))
    assert GridSearch.size(space, {"grid_points_per_range": "3"}) == 9
    assert _all(_grid(space, grid_points_per_range="2")) == [
        {"x": 0.0, "y": 0},
        {"x": 0.0, "y": 100},
        {"x": 1.0, "y": 0},
        {"x": 1.0, "y": 100},
    ]


def test_dedup_keeps_order_for_narrow_integer_log_ranges() -> None:
    param = IntParam("x", 1, 12, log=True)
    raw = [int(v) for v in np.rint(np.geomspace(1, 12, 10))]
    assert len(set(raw)) < len(raw)
    assert _axis(param, points=10) == list(dict.fromkeys(raw))


@pytest.mark.parametrize("value", ["1", "0", "-3", "10001", "five", "", "2.5"])
def test_bad_points_per_range_are_rejected(value: str) -> None:
    space = SearchSpace((RealParam("x", 0.0, 1.0),))
    message = (
        f"setting 'grid_points_per_range' for algorithm 'grid-search' must be an integer "
        f"from 2 to 10000, got '{value}'"
    )
    with pytest.raises(InvalidSettingsError) as caught:
        GridSearch.validate(space, {"grid_points_per_range": value}, max_trials=5)
    assert str(caught.value) == message
    with pytest.raises(InvalidSettingsError):
        GridSearch.size(space, {"grid_points_per_range": value})
    with pytest.raises(InvalidSettingsError):
        _grid(space, grid_points_per_range=value)


def test_a_budget_smaller_or_larger_than_the_grid_is_fine() -> None:
    space = SearchSpace((IntParam("x", 1, 3),))
    GridSearch.validate(space, {}, max_trials=1)
    GridSearch.validate(space, {}, max_trials=1000)
