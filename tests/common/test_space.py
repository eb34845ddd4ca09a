"""Tests for common.space: parameters, search space, assignments, proto conversions."""

from __future__ import annotations

import math

import pytest

from disauto.common.errors import InvalidAssignmentError
from disauto.common.errors import SearchSpaceError
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.space import assignment_from_proto
from disauto.common.space import assignment_to_proto
from disauto.common.space import space_from_proto
from disauto.common.space import space_to_proto
from disauto.common.space import value_from_proto
from disauto.common.space import value_to_proto
from disauto.protos import common_pb2


def _space() -> SearchSpace:
    return SearchSpace(
        (
            RealParam("lr", 1e-4, 1e-1, log=True),
            RealParam("momentum", 0.1, 0.9, step=0.2),
            IntParam("layers", 1, 4),
            IntParam("units", 16, 256, log=True),
            IntParam("batch", 32, 128, step=32),
            CategoricalParam("act", ("relu", "tanh")),
            CategoricalParam("dropout", (0, 0.25, 0.5)),
        )
    )


# --- parameters -------------------------------------------------------------------------------


def test_real_param_stores_int_bounds_as_floats() -> None:
    param = RealParam("x", 0, 2, step=1)
    assert (type(param.low), type(param.high), type(param.step)) == (float, float, float)


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: RealParam("x", 0.3, 0.1), "low < high"),
        (lambda: RealParam("x", 0.1, 0.1), "low < high"),
        (lambda: RealParam("x", math.nan, 1.0), "finite"),
        (lambda: RealParam("x", 0.0, math.inf), "finite"),
        (lambda: RealParam("x", "0", 1.0), "must be a number"),  # type: ignore[arg-type]
        (lambda: RealParam("x", True, 1.0), "must be a number"),
        (lambda: RealParam("x", 0.0, 1.0, log=True), "low > 0"),
        (lambda: RealParam("x", 1.0, 2.0, log=True, step=0.5), "cannot be combined"),
        (lambda: RealParam("x", 0.0, 1.0, step=0.0), "step must be > 0"),
        (lambda: RealParam("x", 0.0, 1.0, step=1.5), "<= high - low"),
        (lambda: RealParam("x", 0.0, 1.0, log="yes"), "log must be"),  # type: ignore[arg-type]
        (lambda: IntParam("x", 5, 1), "low <= high"),
        (lambda: IntParam("x", 1.5, 3), "must be an integer"),  # type: ignore[arg-type]
        (lambda: IntParam("x", 0, 10, log=True), "low >= 1"),
        (lambda: IntParam("x", 1, 10, log=1), "log must be"),  # type: ignore[arg-type]
        (lambda: IntParam("x", 1, 10, log=True, step=2), "cannot be combined"),
        (lambda: IntParam("x", 0, 10, step=0), "positive integer"),
        (lambda: IntParam("x", 0, 10, step=11), "<= high - low"),
        (lambda: IntParam("x", 0, 2**60), "2**53"),
        (lambda: CategoricalParam("x", ()), "at least one choice"),
        (lambda: CategoricalParam("x", (1, 1.0)), "duplicate choice"),
        (lambda: CategoricalParam("x", ("a", True)), "number or a string"),
        (lambda: CategoricalParam("x", (None,)), "number or a string"),  # type: ignore[arg-type]
        (lambda: CategoricalParam("x", (math.nan,)), "finite"),
        (lambda: CategoricalParam("x", (2**64,)), "64 bits"),
        (lambda: CategoricalParam("x", "ab"), "list of values"),
    ],
)
def test_invalid_parameters_name_the_parameter(make, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SearchSpaceError) as caught:
        make()
    assert "parameter 'x'" in str(caught.value)
    assert fragment in str(caught.value)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: RealParam("x", 0.0, 1.0, log=True), "a log scale needs low > 0, got low = 0.0"),
    (lambda: IntParam("x", 0, 10, log=True), "a log scale needs low >= 1, got low = 0"),
    (lambda: RealParam("x", 1.0, 2.0, log=True, step=0.5),
     "log scale and step cannot be combined; drop one"),
])
def test_log_scale_errors_say_what_the_range_needs(  # type: ignore[no-untyped-def]
    make, message: str
) -> None:
    with pytest.raises(SearchSpaceError) as caught:
        make()
    assert str(caught.value) == f"parameter 'x': {message}"


@pytest.mark.parametrize("name", ["", "  ", 3])
def test_parameter_names_must_be_non_empty_strings(name: object) -> None:
    with pytest.raises(SearchSpaceError, match="non-empty string"):
        RealParam(name, 0.0, 1.0)  # type: ignore[arg-type]


def test_step_needs_no_float_luck() -> None:
    # 0.3 - 0.1 = 0.19999999999999998 in binary; the step 0.2 must still fit.
    assert list(RealParam("x", 0.1, 0.3, step=0.2).step_points()) == [0.1, 0.3]
    assert list(RealParam("x", 0.1, 0.3, step=0.1).step_points()) == [0.1, 0.2, 0.3]


def test_step_points_is_a_lazy_sequence() -> None:
    points = RealParam("x", 0.0, 1.0, step=1e-9).step_points()
    assert len(points) == 1_000_000_001
    assert points[0] == 0.0
    assert points[-1] == 1.0
    assert points[123_456_789] == pytest.approx(0.123456789)
    assert points[1:3] == (1e-9, 2e-9)
    with pytest.raises(IndexError):
        points[len(points)]
    with pytest.raises(ValueError, match="no step"):
        RealParam("x", 0.0, 1.0).step_points()


def test_one_value_integer_range_is_valid() -> None:
    assert list(IntParam("x", 3, 3).grid_axis(5)) == [3]


# --- search space -----------------------------------------------------------------------------


def test_space_is_ordered_sized_and_indexable() -> None:
    space = _space()
    assert space.names == ("lr", "momentum", "layers", "units", "batch", "act", "dropout")
    assert len(space) == 7
    assert [param.name for param in space] == list(space.names)
    assert space["units"] == IntParam("units", 16, 256, log=True)
    with pytest.raises(KeyError, match="no parameter 'nope'; parameters: lr, momentum"):
        space["nope"]


def test_space_is_immutable_and_hashable() -> None:
    assert hash(_space()) == hash(_space())
    assert _space() == _space()
    with pytest.raises(AttributeError):
        _space().params = ()  # type: ignore[misc]


def test_space_accepts_a_list() -> None:
    space = SearchSpace([RealParam("a", 0.0, 1.0)])  # type: ignore[arg-type]
    assert isinstance(space.params, tuple)


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ((), "at least one parameter"),
        ((RealParam("a", 0.0, 1.0), IntParam("a", 0, 1)), "duplicate parameter name 'a'"),
        ((RealParam("a", 0.0, 1.0), "b"), "item 1 is not a parameter"),
    ],
)
def test_invalid_spaces(params: tuple[object, ...], fragment: str) -> None:
    with pytest.raises(SearchSpaceError, match=fragment):
        SearchSpace(params)  # type: ignore[arg-type]


def test_grid_size_is_the_product_of_the_axes() -> None:
    # lr 5 (log), momentum 5 (steps 0.1..0.9), layers 4, units 5, batch 4, act 2, dropout 3
    assert _space().grid_size(5) == 5 * 5 * 4 * 5 * 4 * 2 * 3
    assert _space().grid_size(3) == 3 * 5 * 3 * 3 * 4 * 2 * 3
    with pytest.raises(ValueError, match=">= 2"):
        _space().grid_size(1)


# --- assignments ------------------------------------------------------------------------------

_VALID = {
    "lr": 0.01,
    "momentum": 0.5,
    "layers": 2,
    "units": 100,
    "batch": 96,
    "act": "tanh",
    "dropout": 0.25,
}


def test_valid_assignment_passes() -> None:
    _space().validate_assignment(_VALID)
    _space().validate_assignment({**_VALID, "momentum": 0.30000000000000004, "dropout": 0})


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"extra": 1}, "unknown parameter 'extra'; parameters: lr, momentum"),
        ({"lr": 1}, "parameter 'lr' is real: expected a float, got int 1"),
        ({"lr": 0.5}, "parameter 'lr': 0.5 is outside [0.0001, 0.1]"),
        ({"lr": math.nan}, "parameter 'lr': nan is outside"),
        ({"momentum": 0.4}, "parameter 'momentum': 0.4 is not on the grid"),
        ({"layers": 2.0}, "parameter 'layers' is an integer: expected an int"),
        ({"layers": True}, "parameter 'layers' is an integer"),
        ({"layers": 9}, "parameter 'layers': 9 is outside [1, 4]"),
        ({"batch": 40}, "parameter 'batch': 40 is not on the grid 32 + k * 32"),
        (
            {"act": "sigmoid"},
            "parameter 'act': 'sigmoid' is not one of the choices 'relu', 'tanh'",
        ),
        ({"dropout": 0.0}, "parameter 'dropout': 0.0 is not one of the choices"),
        ({"dropout": "0.5"}, "parameter 'dropout': '0.5' is not one of the choices"),
    ],
)
def test_invalid_assignments_name_the_parameter(change: dict[str, object], fragment: str) -> None:
    with pytest.raises(InvalidAssignmentError) as caught:
        _space().validate_assignment({**_VALID, **change})
    assert fragment in str(caught.value)


def test_missing_parameter_is_named() -> None:
    assignment = dict(_VALID)
    del assignment["units"]
    with pytest.raises(InvalidAssignmentError, match="missing parameter 'units'"):
        _space().validate_assignment(assignment)


# --- proto ------------------------------------------------------------------------------------


def test_space_round_trips_through_proto() -> None:
    space = _space()
    message = space_to_proto(space)
    decoded = common_pb2.SearchSpace.FromString(message.SerializeToString())
    assert space_from_proto(decoded) == space
    assert message.parameters[0].kind == common_pb2.Parameter.REAL
    assert message.parameters[0].step == 0.0  # no step travels as 0
    assert message.parameters[2].kind == common_pb2.Parameter.INTEGER
    assert message.parameters[5].kind == common_pb2.Parameter.CATEGORICAL
    restored = space_from_proto(decoded)
    assert isinstance(restored["layers"], IntParam) and restored["layers"].step == 1
    assert isinstance(restored["lr"], RealParam) and restored["lr"].step is None


def test_assignment_round_trip_preserves_types() -> None:
    assignment = {"a": 1, "b": 1.0, "c": "1", "d": -(2**62), "e": 1e-300}
    message = common_pb2.Trial(assignment=assignment_to_proto(assignment))
    decoded = common_pb2.Trial.FromString(message.SerializeToString())
    restored = assignment_from_proto(decoded.assignment)
    assert restored == assignment
    assert {name: type(value) for name, value in restored.items()} == {
        "a": int,
        "b": float,
        "c": str,
        "d": int,
        "e": float,
    }


def test_value_conversions() -> None:
    assert value_to_proto(3).WhichOneof("kind") == "integer"
    assert value_to_proto(3.0).WhichOneof("kind") == "real"
    assert value_to_proto("3").WhichOneof("kind") == "text"
    assert value_from_proto(common_pb2.ParamValue(integer=3)) == 3
    with pytest.raises(TypeError, match="int, float or str"):
        value_to_proto(True)
    with pytest.raises(TypeError, match="parameter 'flag'"):
        assignment_to_proto({"flag": None})  # type: ignore[dict-item]
    with pytest.raises(InvalidAssignmentError, match="none is set"):
        value_from_proto(common_pb2.ParamValue())
    with pytest.raises(InvalidAssignmentError, match="parameter 'x': .*none is set"):
        assignment_from_proto({"x": common_pb2.ParamValue()})


@pytest.mark.parametrize(
    ("parameter", "fragment"),
    [
        (common_pb2.Parameter(name="x", low=0, high=1), "parameter 'x': kind must be REAL"),
        (common_pb2.Parameter(kind=common_pb2.Parameter.REAL, low=0, high=1), "parameters[0]"),
        (
            common_pb2.Parameter(name="x", kind=common_pb2.Parameter.INTEGER, low=0.5, high=3),
            "low of an INTEGER parameter must be whole",
        ),
        (
            common_pb2.Parameter(
                name="x", kind=common_pb2.Parameter.INTEGER, low=0, high=9, step=1.5
            ),
            "step of an INTEGER parameter must be whole",
        ),
        (
            common_pb2.Parameter(
                name="x",
                kind=common_pb2.Parameter.CATEGORICAL,
                low=1,
                choices=[common_pb2.ParamValue(text="a")],
            ),
            "must not set low/high/log/step",
        ),
        (
            common_pb2.Parameter(
                name="x",
                kind=common_pb2.Parameter.REAL,
                low=0,
                high=1,
                choices=[common_pb2.ParamValue(text="a")],
            ),
            "a range must not set choices",
        ),
        (
            common_pb2.Parameter(
                name="x", kind=common_pb2.Parameter.CATEGORICAL, choices=[common_pb2.ParamValue()]
            ),
            "parameter 'x': a ParamValue must set one of",
        ),
        (common_pb2.Parameter(name="x", kind=common_pb2.Parameter.CATEGORICAL), "at least one"),
    ],
)
def test_invalid_proto_spaces(parameter: common_pb2.Parameter, fragment: str) -> None:
    with pytest.raises(SearchSpaceError) as caught:
        space_from_proto(common_pb2.SearchSpace(parameters=[parameter]))
    assert fragment in str(caught.value)
