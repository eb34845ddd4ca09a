"""The search space: the dimensions a search runs over, independent of algorithm and wire format.

A :class:`SearchSpace` is an ordered tuple of parameters, in the parameter file's order:

* :class:`RealParam` -- a continuous range ``[low, high]`` (the paper's ``"bound"``), optionally
  on a log scale or restricted to a step grid ``low, low + step, ...``;
* :class:`IntParam` -- an integer range ``[low, high]``, optionally log-scaled or stepped;
* :class:`CategoricalParam` -- a finite list of numbers or strings (the paper's ``"number"``).

Every class validates itself on construction and raises :class:`~common.errors.SearchSpaceError`
naming the parameter, so an invalid space cannot exist. Assignments (one value per parameter) keep
their Python types end to end: a real parameter's value is a ``float``, an integer parameter's an
``int``, a categorical parameter's the choice itself (``int``, ``float`` or ``str``). The
``*_to_proto``/``*_from_proto`` functions convert to and from the messages in
``protos/common.proto`` without changing those types.

Each parameter also knows its *grid axis* (:meth:`RealParam.grid_axis` and friends), the values
grid search visits for it; :meth:`SearchSpace.grid_size` is the product of the axes' lengths. The
rules are written down once, here, so that ``da-submit`` can print the grid's size and grid search
visits exactly that many points.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import math
from typing import Generic
from typing import TypeAlias
from typing import TypeVar

from disauto.common.conditions import Conditions
from disauto.common.errors import InvalidAssignmentError
from disauto.common.errors import SearchSpaceError
from disauto.common.grid import Grid
from disauto.common.param_values import Assignment
from disauto.common.param_values import Value
from disauto.common.step_axis import StepAxis
from disauto.common.step_axis import decimal_of
from disauto.protos import common_pb2


__all__ = [
    "Assignment",
    "CategoricalParam",
    "IntParam",
    "MAX_EXACT_INT",
    "Param",
    "RealParam",
    "SearchSpace",
    "Value",
    "assignment_from_proto",
    "assignment_to_proto",
    "space_from_proto",
    "space_to_proto",
    "value_from_proto",
    "value_to_proto",
]

MAX_EXACT_INT = 2**53
"""Largest magnitude allowed for integer bounds: the proto carries bounds as doubles."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)



def _tidy(value: float) -> float:
    # Drop binary noise from linspace/geomspace (0.30000000000000004 -> 0.3): 15 significant
    # digits are the most that survive decimal -> double -> decimal exactly.
    return float(f"{value:.15g}")


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise SearchSpaceError(f"a parameter name must be a non-empty string, got {name!r}")
    return name


def _finite(name: str, what: str, value: object) -> float:
    if not _is_number(value):
        raise SearchSpaceError(
            f"parameter {name!r}: {what} must be a number, got {type(value).__name__} {value!r}"
        )
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number):
        raise SearchSpaceError(f"parameter {name!r}: {what} must be finite, got {value!r}")
    return number


def _check_log(name: str, log: object, low: float, *, needs: str, suits: bool) -> None:
    """A range's ``log`` flag: a bool, and true only where ``low`` suits a log scale (``suits``,
    described by ``needs``)."""
    if not isinstance(log, bool):
        raise SearchSpaceError(f"parameter {name!r}: log must be true or false")
    if log and not suits:
        raise SearchSpaceError(
            f"parameter {name!r}: a log scale needs {needs}, got low = {low!r}"
        )


def _log_with_step(name: str) -> SearchSpaceError:
    """The error of a range with both a log scale and a step (no Optuna distribution has both)."""
    return SearchSpaceError(
        f"parameter {name!r}: log scale and step cannot be combined; drop one"
    )


def _check_points(points_per_range: int) -> int:
    if isinstance(points_per_range, bool) or not isinstance(points_per_range, int):
        raise TypeError(f"points_per_range must be an int, got {points_per_range!r}")
    if points_per_range < 2:
        raise ValueError(f"points_per_range must be >= 2, got {points_per_range}")
    return points_per_range


def _distinct(values: Sequence[Value]) -> tuple[Value, ...]:
    return tuple(dict.fromkeys(values))


_Number = TypeVar("_Number", float, int)


@dataclass(frozen=True)
class _Range(Generic[_Number]):
    """The fields a real and an integer range share; each checks them in ``__post_init__``."""

    name: str
    low: _Number
    high: _Number
    log: bool = False


@dataclass(frozen=True)
class RealParam(_Range[float]):
    """A continuous range ``[low, high]``, both inclusive (``"type": "bound"``).

    Values are ``float``. With ``log`` the range is searched on a log scale (needs ``low > 0``).
    With ``step`` only ``low, low + step, low + 2 * step, ... <= high`` are valid, computed in
    decimal from the numbers as written so that ``[0.1, 0.3]`` with step ``0.1`` has exactly the
    three points 0.1, 0.2, 0.3 (``high`` need not be a multiple of the step). ``log`` and ``step``
    cannot be combined (neither can Optuna's distributions).

    Attributes:
        name: The name the training script reads.
        low: Lower bound (ints are accepted and stored as floats).
        high: Upper bound, ``> low``.
        log: Search on a log scale.
        step: Grid step, ``0 < step <= high - low``, or ``None``.

    Raises:
        SearchSpaceError: On construction, naming the parameter, if any of the above fails.
    """

    step: float | None = None

    def __post_init__(self) -> None:
        name = _check_name(self.name)
        low = _finite(name, "low", self.low)
        high = _finite(name, "high", self.high)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        if not low < high:
            raise SearchSpaceError(
                f"parameter {name!r}: a real range needs low < high, got [{low!r}, {high!r}]"
            )
        _check_log(name, self.log, low, needs="low > 0", suits=low > 0)
        if self.step is not None:
            step = _finite(name, "step", self.step)
            object.__setattr__(self, "step", step)
            if self.log:
                raise _log_with_step(name)
            if step <= 0 or decimal_of(step) > decimal_of(high) - decimal_of(low):
                raise SearchSpaceError(
                    f"parameter {name!r}: step must be > 0 and <= high - low "
                    f"({decimal_of(high) - decimal_of(low)}), got {step!r}"
                )

    def step_points(self) -> Sequence[float]:
        """The valid values of a stepped range, ``low, low + step, ... <= high``, lazily.

        Returns:
            A sequence whose ``k``-th item is ``low + k * step`` rounded once from decimal.

        Raises:
            ValueError: If the parameter has no step.
        """
        if self.step is None:
            raise ValueError(f"parameter {self.name!r} has no step")
        return StepAxis(self.low, self.high, self.step)

    def grid_axis(self, points_per_range: int) -> Sequence[float]:
        """The values grid search visits for this parameter, in increasing order.

        With a step: every step point (``points_per_range`` is ignored). Otherwise
        ``points_per_range`` evenly spaced points including both bounds, geometrically spaced
        on a log scale.

        Args:
            points_per_range: Points for an unstepped range, at least 2.

        Returns:
            The axis, as a sequence of floats.
        """
        points = _check_points(points_per_range)
        if self.step is not None:
            return self.step_points()
        import numpy as np  # here only: every da-job command imports this module

        spaced = np.geomspace if self.log else np.linspace
        values = (_tidy(float(v)) for v in spaced(self.low, self.high, points))
        return tuple(
            float(v) for v in _distinct([min(max(v, self.low), self.high) for v in values])
        )

    def validate_value(self, value: object) -> None:
        """Check that ``value`` is a valid value of this parameter.

        Args:
            value: A candidate value; must be a finite ``float`` inside the range (and on the
                step grid, within 1e-9 of a step, when there is a step).

        Raises:
            InvalidAssignmentError: Naming the parameter and the valid values.
        """
        if not isinstance(value, float):
            raise InvalidAssignmentError(
                f"parameter {self.name!r} is real: expected a float, "
                f"got {type(value).__name__} {value!r}"
            )
        if not (math.isfinite(value) and self.low <= value <= self.high):
            raise InvalidAssignmentError(
                f"parameter {self.name!r}: {value!r} is outside [{self.low!r}, {self.high!r}]"
            )
        if self.step is not None:
            steps = (value - self.low) / self.step
            if not math.isclose(steps, round(steps), rel_tol=1e-9, abs_tol=1e-9):
                raise InvalidAssignmentError(
                    f"parameter {self.name!r}: {value!r} is not on the grid "
                    f"{self.low!r} + k * {self.step!r}"
                )


@dataclass(frozen=True)
class IntParam(_Range[int]):
    """An integer range ``[low, high]``, both inclusive (``"type": "int"``).

    Values are ``int``. With ``log`` the range is searched on a log scale (needs ``low >= 1`` and
    ``step == 1``, as in Optuna). With ``step`` only ``low, low + step, ... <= high`` are valid.
    ``low == high`` is a valid one-value range.

    Attributes:
        name: The name the training script reads.
        low: Lower bound, ``|low| <= 2**53``.
        high: Upper bound, ``>= low``, ``|high| <= 2**53``.
        log: Search on a log scale.
        step: A positive integer, 1 or at most ``high - low``.

    Raises:
        SearchSpaceError: On construction, naming the parameter, if any of the above fails.
    """

    step: int = 1

    def __post_init__(self) -> None:
        name = _check_name(self.name)
        for what in ("low", "high", "step"):
            bound = getattr(self, what)
            if isinstance(bound, bool) or not isinstance(bound, int):
                raise SearchSpaceError(
                    f"parameter {name!r}: {what} must be an integer, "
                    f"got {type(bound).__name__} {bound!r}"
                )
            if abs(bound) > MAX_EXACT_INT:
                raise SearchSpaceError(
                    f"parameter {name!r}: {what} must be within +-2**53, got {bound!r}"
                )
        if not self.low <= self.high:
            raise SearchSpaceError(
                f"parameter {name!r}: an integer range needs low <= high, "
                f"got [{self.low}, {self.high}]"
            )
        _check_log(name, self.log, self.low, needs="low >= 1", suits=self.low >= 1)
        if self.step < 1 or (self.step > 1 and self.step > self.high - self.low):
            raise SearchSpaceError(
                f"parameter {name!r}: step must be a positive integer <= high - low "
                f"({self.high - self.low}), got {self.step}"
            )
        if self.log and self.step != 1:
            raise _log_with_step(name)

    def grid_axis(self, points_per_range: int) -> Sequence[int]:
        """The values grid search visits for this parameter, in increasing order.

        With ``step > 1``: every step point. With ``step == 1``: every integer when the range
        holds at most ``points_per_range`` of them, else ``points_per_range`` evenly spaced
        points (geometrically on a log scale) rounded to integers, duplicates dropped. To grid
        every integer of a wide range, raise ``points_per_range`` or give a step.

        Args:
            points_per_range: Points for a wide unstepped range, at least 2.

        Returns:
            The axis, as a sequence of ints.
        """
        points = _check_points(points_per_range)
        if self.step > 1 or self.high - self.low + 1 <= points:
            return range(self.low, self.high + 1, self.step)
        import numpy as np

        spaced = np.geomspace if self.log else np.linspace
        rounded = np.rint(spaced(self.low, self.high, points))
        return tuple(int(v) for v in _distinct([int(v) for v in rounded]))

    def validate_value(self, value: object) -> None:
        """Check that ``value`` is a valid value of this parameter.

        Args:
            value: A candidate value; must be an ``int`` (not a bool) in the range and on the step.

        Raises:
            InvalidAssignmentError: Naming the parameter and the valid values.
        """
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidAssignmentError(
                f"parameter {self.name!r} is an integer: expected an int, "
                f"got {type(value).__name__} {value!r}"
            )
        if not self.low <= value <= self.high:
            raise InvalidAssignmentError(
                f"parameter {self.name!r}: {value} is outside [{self.low}, {self.high}]"
            )
        if (value - self.low) % self.step:
            raise InvalidAssignmentError(
                f"parameter {self.name!r}: {value} is not on the grid {self.low} + k * {self.step}"
            )


@dataclass(frozen=True)
class CategoricalParam:
    """A finite list of values (``"type": "number"`` or ``"choice"``), in the file's order.

    Each choice is an ``int``, a ``float`` or a ``str`` (not a bool) and is handed to the training
    script with its type unchanged. Choices must be distinct; ``1`` and ``1.0`` count as the same.

    Attributes:
        name: The name the training script reads.
        choices: The values, non-empty (a list is accepted and stored as a tuple).

    Raises:
        SearchSpaceError: On construction, naming the parameter, if any of the above fails.
    """

    name: str
    choices: tuple[Value, ...]

    def __post_init__(self) -> None:
        name = _check_name(self.name)
        if isinstance(self.choices, str | bytes) or not isinstance(self.choices, Sequence):
            raise SearchSpaceError(f"parameter {name!r}: choices must be a list of values")
        choices = tuple(self.choices)
        object.__setattr__(self, "choices", choices)
        if not choices:
            raise SearchSpaceError(f"parameter {name!r}: needs at least one choice")
        seen: dict[Value, Value] = {}
        for choice in choices:
            if not (isinstance(choice, str) or _is_number(choice)):
                raise SearchSpaceError(
                    f"parameter {name!r}: a choice must be a number or a string, "
                    f"got {type(choice).__name__} {choice!r}"
                )
            if isinstance(choice, int) and not -(2**63) <= choice < 2**63:
                raise SearchSpaceError(
                    f"parameter {name!r}: integer choices must fit in 64 bits, got {choice!r}"
                )
            if isinstance(choice, float) and not math.isfinite(choice):
                raise SearchSpaceError(
                    f"parameter {name!r}: choices must be finite, got {choice!r}"
                )
            if choice in seen:
                raise SearchSpaceError(
                    f"parameter {name!r}: duplicate choice {choice!r} (equal to {seen[choice]!r})"
                )
            seen[choice] = choice

    def grid_axis(self, points_per_range: int) -> Sequence[Value]:
        """The values grid search visits for this parameter: every choice, in the given order.

        Args:
            points_per_range: Ignored (checked only), for a uniform interface.

        Returns:
            The choices.
        """
        _check_points(points_per_range)
        return self.choices

    def validate_value(self, value: object) -> None:
        """Check that ``value`` is one of the choices, with the same type.

        Args:
            value: A candidate value.

        Raises:
            InvalidAssignmentError: Naming the parameter and the valid choices.
        """
        if not any(type(value) is type(choice) and value == choice for choice in self.choices):
            valid = ", ".join(repr(choice) for choice in self.choices)
            raise InvalidAssignmentError(
                f"parameter {self.name!r}: {value!r} is not one of the choices {valid}"
            )


Param: TypeAlias = RealParam | IntParam | CategoricalParam
"""One dimension of a search space."""


@dataclass(frozen=True)
class SearchSpace:
    """An ordered, non-empty tuple of uniquely named parameters, some maybe conditional.

    Iterating yields the parameters in order (the parameter file's); ``space["lr"]`` looks one up
    by name. ``when`` makes parameters conditional (:mod:`common.conditions`): ``{"momentum":
    {"optimizer": "sgd"}}`` gives ``momentum`` a value only in assignments where ``optimizer``
    is ``"sgd"``. Instances are immutable and hashable.

    Attributes:
        params: The parameters (a list is accepted and stored as a tuple).
        when: Conditional parameter to ``{parent: value or list of values}``.

    Raises:
        SearchSpaceError: On construction if there are no parameters, an item is not a parameter,
            two parameters share a name, or a condition is invalid.
    """

    params: tuple[Param, ...]
    when: Mapping[str, Mapping[str, Value | Sequence[Value]]] = field(
        default_factory=dict, compare=False, hash=False, repr=False)
    conditions: Conditions = field(init=False)
    _by_name: Mapping[str, Param] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        params = tuple(self.params)
        object.__setattr__(self, "params", params)
        if not params:
            raise SearchSpaceError("a search space needs at least one parameter")
        by_name: dict[str, Param] = {}
        for index, param in enumerate(params):
            if not isinstance(param, RealParam | IntParam | CategoricalParam):
                raise SearchSpaceError(
                    f"search space item {index} is not a parameter: {type(param).__name__}"
                )
            if param.name in by_name:
                raise SearchSpaceError(f"duplicate parameter name {param.name!r}")
            by_name[param.name] = param
        object.__setattr__(self, "_by_name", by_name)
        choices = {p.name: p.choices if isinstance(p, CategoricalParam) else None
                   for p in params}
        object.__setattr__(self, "conditions",
                           Conditions.build(self.names, choices, self.when or {}))

    @property
    def names(self) -> tuple[str, ...]:
        """The parameter names, in order."""
        return tuple(param.name for param in self.params)

    @property
    def conditional(self) -> bool:
        """True when some parameter has a ``when``."""
        return not self.conditions.empty

    @property
    def evaluation_order(self) -> tuple[Param, ...]:
        """The parameters in the order a search decides them: each after its parents."""
        return tuple(self._by_name[name] for name in self.conditions.order)

    def __iter__(self) -> Iterator[Param]:
        return iter(self.params)

    def __len__(self) -> int:
        return len(self.params)

    def __getitem__(self, name: str) -> Param:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no parameter {name!r}; parameters: {', '.join(self.names)}") from None

    def validate_assignment(self, assignment: Mapping[str, object]) -> None:
        """Check that ``assignment`` gives every active parameter, and only those, a valid value.

        Args:
            assignment: Parameter name to value.

        Raises:
            InvalidAssignmentError: Naming the first unknown, missing, invalid or inactive
                parameter.
        """
        for name in assignment:
            if name not in self._by_name:
                raise InvalidAssignmentError(
                    f"assignment has unknown parameter {name!r}; parameters: "
                    f"{', '.join(self.names)}"
                )
        for param in self.evaluation_order:
            active = self.conditions.is_active(param.name, assignment)
            if param.name not in assignment:
                if active:
                    raise InvalidAssignmentError(
                        f"assignment is missing parameter {param.name!r}")
                continue
            if not active:
                raise InvalidAssignmentError(
                    f"parameter {param.name!r} has a value but is inactive: it exists only "
                    f"when {self.conditions.describe(param.name)}")
            param.validate_value(assignment[param.name])

    def grid(self, points_per_range: int) -> Grid:
        """The grid: every valid combination of the parameters' grid axes (:mod:`common.grid`).

        Args:
            points_per_range: Points per unstepped range (see each parameter's ``grid_axis``).
        """
        axes = [(param.name, param.grid_axis(points_per_range))
                for param in self.evaluation_order]
        return Grid(axes, self.conditions, self.names)

    def grid_size(self, points_per_range: int) -> int:
        """The number of points of the grid (without conditions: the product of every
        parameter's grid axis; with them, the valid combinations).

        Args:
            points_per_range: Points per unstepped range (see each parameter's ``grid_axis``).

        Returns:
            The grid's size (an exact Python int, however large).
        """
        if not self.conditional:
            return math.prod(len(param.grid_axis(points_per_range)) for param in self.params)
        return self.grid(points_per_range).size


# --- protobuf conversions -------------------------------------------------------------------


def value_to_proto(value: Value) -> common_pb2.ParamValue:
    """Convert a value to a ``ParamValue``: float -> real, int -> integer, str -> text.

    Args:
        value: The value.

    Returns:
        The message.

    Raises:
        TypeError: If ``value`` is not an int, float or str (bools are rejected).
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(
            f"a parameter value must be an int, float or str, got {type(value).__name__}"
        )
    if isinstance(value, int):
        return common_pb2.ParamValue(integer=value)
    if isinstance(value, float):
        return common_pb2.ParamValue(real=value)
    return common_pb2.ParamValue(text=value)


def value_from_proto(message: common_pb2.ParamValue) -> Value:
    """Convert a ``ParamValue`` back: real -> float, integer -> int, text -> str.

    Args:
        message: The message.

    Returns:
        The value.

    Raises:
        InvalidAssignmentError: If none of the oneof's fields is set.
    """
    kind = message.WhichOneof("kind")
    if kind == "real":
        return float(message.real)
    if kind == "integer":
        return int(message.integer)
    if kind == "text":
        return str(message.text)
    raise InvalidAssignmentError("a ParamValue must set one of real, integer or text; none is set")


def assignment_to_proto(assignment: Mapping[str, Value]) -> dict[str, common_pb2.ParamValue]:
    """Convert an assignment for a ``map<string, ParamValue>`` field.

    Args:
        assignment: Parameter name to value.

    Returns:
        Parameter name to message, e.g. for ``common_pb2.Trial(assignment=...)``.

    Raises:
        TypeError: Naming the parameter whose value is not an int, float or str.
    """
    converted: dict[str, common_pb2.ParamValue] = {}
    for name, value in assignment.items():
        try:
            converted[name] = value_to_proto(value)
        except TypeError as error:
            raise TypeError(f"parameter {name!r}: {error}") from None
    return converted


def assignment_from_proto(values: Mapping[str, common_pb2.ParamValue]) -> Assignment:
    """Convert a ``map<string, ParamValue>`` back into an assignment, preserving types.

    Args:
        values: Parameter name to message.

    Returns:
        Parameter name to value.

    Raises:
        InvalidAssignmentError: Naming the parameter whose message has no value set.
    """
    assignment: Assignment = {}
    for name, message in values.items():
        try:
            assignment[name] = value_from_proto(message)
        except InvalidAssignmentError as error:
            raise InvalidAssignmentError(f"parameter {name!r}: {error}") from None
    return assignment


def _param_to_proto(param: Param) -> common_pb2.Parameter:
    kinds = common_pb2.Parameter
    if isinstance(param, RealParam):
        return kinds(
            name=param.name,
            kind=kinds.REAL,
            low=param.low,
            high=param.high,
            log=param.log,
            step=param.step or 0.0,
        )
    if isinstance(param, IntParam):
        return kinds(
            name=param.name,
            kind=kinds.INTEGER,
            low=float(param.low),
            high=float(param.high),
            log=param.log,
            step=float(param.step),
        )
    return kinds(
        name=param.name,
        kind=kinds.CATEGORICAL,
        choices=[value_to_proto(choice) for choice in param.choices],
    )


def space_to_proto(space: SearchSpace) -> common_pb2.SearchSpace:
    """Convert a search space to its message (parameters in order; no step is sent as 0).

    Args:
        space: The space.

    Returns:
        The message.
    """
    parameters = []
    for param in space:
        message = _param_to_proto(param)
        message.when.extend(
            common_pb2.Condition(parameter=parent, values=[value_to_proto(v) for v in values])
            for parent, values in space.conditions.requirement(param.name))
        parameters.append(message)
    return common_pb2.SearchSpace(parameters=parameters)


def _integral(label: str, what: str, value: float) -> int:
    if not (math.isfinite(value) and value.is_integer()):
        raise SearchSpaceError(
            f"{label}: {what} of an INTEGER parameter must be whole, got {value!r}"
        )
    return int(value)


def _param_from_proto(index: int, message: common_pb2.Parameter) -> Param:
    kinds = common_pb2.Parameter
    if not message.name.strip():
        raise SearchSpaceError(f"parameters[{index}]: a parameter name must be a non-empty string")
    label = f"parameter {message.name!r}"
    if message.kind in (kinds.REAL, kinds.INTEGER):
        if message.choices:
            raise SearchSpaceError(f"{label}: a range must not set choices")
        if message.kind == kinds.REAL:
            return RealParam(
                message.name, message.low, message.high, message.log, message.step or None
            )
        return IntParam(
            message.name,
            _integral(label, "low", message.low),
            _integral(label, "high", message.high),
            message.log,
            _integral(label, "step", message.step) if message.step else 1,
        )
    if message.kind == kinds.CATEGORICAL:
        if message.low or message.high or message.log or message.step:
            raise SearchSpaceError(
                f"{label}: a CATEGORICAL parameter must not set low/high/log/step"
            )
        try:
            choices = tuple(value_from_proto(choice) for choice in message.choices)
        except InvalidAssignmentError as error:
            raise SearchSpaceError(f"{label}: {error}") from None
        return CategoricalParam(message.name, choices)
    raise SearchSpaceError(
        f"{label}: kind must be REAL, INTEGER or CATEGORICAL, got {message.kind}"
    )


def space_from_proto(message: common_pb2.SearchSpace) -> SearchSpace:
    """Convert a ``SearchSpace`` message back into a validated search space.

    Args:
        message: The message.

    Returns:
        The space.

    Raises:
        SearchSpaceError: Naming the parameter (or its index) that is malformed.
    """
    params = tuple(_param_from_proto(index, param)
                   for index, param in enumerate(message.parameters))
    when: dict[str, dict[str, list[Value]]] = {}
    for param in message.parameters:
        for condition in param.when:
            try:
                values = [value_from_proto(value) for value in condition.values]
            except InvalidAssignmentError as error:
                raise SearchSpaceError(f"parameter {param.name!r}: {error}") from None
            when.setdefault(param.name, {})[condition.parameter] = values
    return SearchSpace(params, when)
