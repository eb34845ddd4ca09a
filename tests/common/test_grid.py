"""Tests for common.grid: the grid of a space is exactly its valid combinations, each once."""

from __future__ import annotations

import itertools
import json

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace


def _valid_combinations(space: SearchSpace, points: int) -> set[str]:
    """By brute force: every product point, inactive parameters dropped, kept if valid."""
    axes = [param.grid_axis(points) for param in space]
    found = set()
    for values in itertools.product(*axes):
        full = dict(zip(space.names, values, strict=True))
        kept: dict[str, object] = {}
        for param in space.evaluation_order:
            if space.conditions.is_active(param.name, kept):
                kept[param.name] = full[param.name]
        found.add(json.dumps(kept, sort_keys=True))
    return found


def _grid_points(space: SearchSpace, points: int) -> list[str]:
    grid = space.grid(points)
    return [json.dumps(grid.point(i), sort_keys=True) for i in range(grid.size)]


def test_an_unconditional_grid_is_the_product_in_row_major_order() -> None:
    space = SearchSpace((CategoricalParam("a", ("x", "y")), IntParam("b", 1, 3)))
    grid = space.grid(5)
    assert grid.size == 6 == space.grid_size(5)
    assert [grid.point(i) for i in range(6)] == [
        {"a": a, "b": b} for a, b in itertools.product(("x", "y"), (1, 2, 3))]


def test_a_conditional_grid_has_only_the_valid_combinations() -> None:
    space = SearchSpace((
        CategoricalParam("optimizer", ("sgd", "adam")),
        RealParam("momentum", 0.5, 0.9),
        CategoricalParam("layers", (1, 2)),
    ), {"momentum": {"optimizer": "sgd"}})
    points = [space.grid(3).point(i) for i in range(space.grid_size(3))]
    assert points == [
        {"optimizer": "sgd", "momentum": 0.5, "layers": 1},
        {"optimizer": "sgd", "momentum": 0.5, "layers": 2},
        {"optimizer": "sgd", "momentum": 0.7, "layers": 1},
        {"optimizer": "sgd", "momentum": 0.7, "layers": 2},
        {"optimizer": "sgd", "momentum": 0.9, "layers": 1},
        {"optimizer": "sgd", "momentum": 0.9, "layers": 2},
        {"optimizer": "adam", "layers": 1},
        {"optimizer": "adam", "layers": 2},
    ]
    for point in points:
        space.validate_assignment(point)


def test_an_index_outside_the_grid_is_refused() -> None:
    grid = SearchSpace((IntParam("a", 1, 2),)).grid(5)
    with pytest.raises(IndexError):
        grid.point(2)


def test_a_huge_conditional_grid_is_indexed_without_listing_it() -> None:
    space = SearchSpace((
        CategoricalParam("kind", ("a", "b")),
        *(RealParam(f"r{i}", 0.0, 1.0, step=0.001) for i in range(6)),
    ), {"r0": {"kind": "a"}})
    grid = space.grid(5)
    assert grid.size == 1001 ** 6 + 1001 ** 5
    assert grid.point(grid.size - 1) == {"kind": "b", **{f"r{i}": 1.0 for i in range(1, 6)}}


@st.composite
def _spaces(draw: st.DrawFn) -> SearchSpace:
    count = draw(st.integers(2, 5))
    params = []
    for i in range(count):
        if draw(st.booleans()):
            params.append(CategoricalParam(f"p{i}", tuple(range(draw(st.integers(1, 3))))))
        else:
            params.append(IntParam(f"p{i}", 0, draw(st.integers(0, 2))))
    when: dict[str, dict[str, object]] = {}
    for i, param in enumerate(params):
        parents = [p for p in params[:i] if isinstance(p, CategoricalParam)]
        if parents and draw(st.booleans()):
            parent = draw(st.sampled_from(parents))
            assert isinstance(parent, CategoricalParam)
            values = draw(st.lists(st.sampled_from(parent.choices), min_size=1, unique=True))
            when[param.name] = {parent.name: values}
    order = draw(st.permutations(params))
    return SearchSpace(tuple(order), when)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(_spaces())
def test_every_grid_is_its_valid_combinations_each_once(space: SearchSpace) -> None:
    points = _grid_points(space, 2)
    assert len(points) == len(set(points)) == space.grid_size(2)
    assert set(points) == _valid_combinations(space, 2)
