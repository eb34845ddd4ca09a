"""Tests for common.conditions and conditional search spaces: the checks, activity, the order,
assignments and the proto form."""

from __future__ import annotations

import pytest

from disauto.common.errors import InvalidAssignmentError
from disauto.common.errors import SearchSpaceError
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.space import space_from_proto
from disauto.common.space import space_to_proto


def _space(when: dict[str, dict[str, object]]) -> SearchSpace:
    return SearchSpace((
        CategoricalParam("optimizer", ("sgd", "adam")),
        RealParam("momentum", 0.5, 0.99),
        CategoricalParam("schedule", ("step", "cosine")),
        IntParam("step_size", 1, 10),
        CategoricalParam("layers", (1, 2, 3)),
    ), when)  # type: ignore[arg-type]


CHAIN = {"momentum": {"optimizer": "sgd"}, "schedule": {"optimizer": ["sgd"]},
         "step_size": {"schedule": "step"}}


def test_a_space_without_when_is_unconditional() -> None:
    space = _space({})
    assert not space.conditional
    assert space.conditions.order == space.names


def test_activity_follows_chains() -> None:
    conditions = _space(CHAIN).conditions
    assert conditions.is_active("momentum", {"optimizer": "sgd"})
    assert not conditions.is_active("momentum", {"optimizer": "adam"})
    assert conditions.is_active("step_size", {"optimizer": "sgd", "schedule": "step"})
    # An absent parent is inactive, and so is its child.
    assert not conditions.is_active("step_size", {"optimizer": "adam"})
    assert conditions.is_active("layers", {})
    assert conditions.describe("momentum") == "optimizer = 'sgd'"


def test_values_match_by_type_as_well() -> None:
    space = _space({"momentum": {"layers": [2, 3]}})
    assert space.conditions.is_active("momentum", {"layers": 2})
    assert not space.conditions.is_active("momentum", {"layers": 2.0})
    assert space.conditions.describe("momentum") == "layers in (2, 3)"


def test_a_child_before_its_parent_is_decided_after_it() -> None:
    space = SearchSpace((RealParam("momentum", 0.5, 0.9), CategoricalParam("opt", ("sgd", "a"))),
                        {"momentum": {"opt": "sgd"}})
    assert space.conditions.order == ("opt", "momentum")
    assert [p.name for p in space.evaluation_order] == ["opt", "momentum"]


@pytest.mark.parametrize(("when", "message"), [
    ({"momentum": {"optimiser": "sgd"}},
     "parameter 'momentum': \"when\" names unknown parameter 'optimiser'; parameters: "
     "optimizer, momentum, schedule, step_size, layers"),
    ({"momentum": {"optimizer": "adamw"}},
     "parameter 'momentum': \"when\" gives optimizer = 'adamw', which is not one of its values "
     "'sgd', 'adam'"),
    ({"momentum": {"layers": 2.0}},
     "parameter 'momentum': \"when\" gives layers = 2.0, which is not one of its values 1, 2, 3"),
    ({"schedule": {"step_size": 3}},
     "parameter 'schedule': \"when\" names 'step_size', a range; a parent must be a list of "
     "values (\"number\" or \"choice\")"),
    ({"schedule": {"schedule": "step"}},
     "parameter 'schedule': \"when\" names the parameter itself"),
    ({"schedule": {"layers": 1}, "layers": {"optimizer": "sgd"},
      "optimizer": {"schedule": "step"}},
     "parameter 'optimizer': its \"when\" conditions form a cycle: "
     "optimizer -> schedule -> layers -> optimizer"),
    ({"momentum": {}}, "parameter 'momentum': \"when\" needs at least one parameter"),
    ({"momentum": {"optimizer": []}}, "parameter 'momentum': \"when\" gives no value of "
                                      "'optimizer'"),
    ({"nope": {"optimizer": "sgd"}}, "\"when\" is given for unknown parameter 'nope'"),
])
def test_bad_conditions_are_one_line_errors(when: dict[str, dict[str, object]],
                                             message: str) -> None:
    with pytest.raises(SearchSpaceError) as caught:
        _space(when)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_assignments_hold_exactly_the_active_parameters() -> None:
    space = _space(CHAIN)
    space.validate_assignment({"optimizer": "adam", "layers": 1})
    space.validate_assignment({"optimizer": "sgd", "momentum": 0.6, "schedule": "cosine",
                               "layers": 2})
    with pytest.raises(InvalidAssignmentError, match="missing parameter 'step_size'"):
        space.validate_assignment({"optimizer": "sgd", "momentum": 0.6, "schedule": "step",
                                   "layers": 2})
    with pytest.raises(InvalidAssignmentError,
                       match="'momentum' has a value but is inactive: it exists only when "
                             "optimizer = 'sgd'"):
        space.validate_assignment({"optimizer": "adam", "momentum": 0.6, "layers": 1})


def test_the_proto_form_keeps_the_conditions() -> None:
    space = _space(CHAIN)
    back = space_from_proto(space_to_proto(space))
    assert back == space
    assert back.conditions == space.conditions
    assert hash(back) == hash(space)
    assert _space({}) != space


def test_an_unconditional_proto_has_no_when() -> None:
    message = space_to_proto(_space({}))
    assert all(not parameter.when for parameter in message.parameters)
