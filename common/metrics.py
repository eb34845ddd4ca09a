"""What a reported metric is: a named, finite number. Checked where a report enters the system.

The SDK checks a report before it sends it (a Python error in the user's script, at the line
that made it), AppCore's service checks what arrives over gRPC (INVALID_ARGUMENT), and the
framework checks what it records: all three with :func:`check_metrics`, so the rule and its
messages are the same wherever a bad value is caught, and nothing that breaks it is recorded.
A trial's constraints are checked the same way, by :func:`check_constraints`.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import math
import numbers
from typing import Any


__all__ = ["MetricError", "check_constraints", "check_metrics"]


class MetricError(ValueError):
    """A metric is unnamed, not finite, or missing."""


def check_metric(name: str, value: Any) -> float:
    """The metric's value as a float.

    Raises:
        MetricError: an empty name, or a value that is not finite.
        TypeError: a value that is not a number (text, bool, None...).
    """
    if not isinstance(name, str) or not name:
        raise MetricError(f"a metric needs a name, got {name!r}")
    if isinstance(value, str | bytes | bool) or not (
            isinstance(value, numbers.Real) or hasattr(value, "__float__")):
        raise TypeError(f"metric {name!r} must be a number (int or float), got "
                        f"{type(value).__name__} {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise MetricError(f"metric {name!r} must be finite, got {number}")
    return number


def check_metrics(metrics: Mapping[str, Any], what: str = "a report") -> dict[str, float]:
    """Every metric's value as a float; ``what`` names the caller in the empty case.

    Raises:
        MetricError: no metric, an empty name, or a value that is not finite.
        TypeError: a value that is not a number.
    """
    if not metrics:
        raise MetricError(f"{what} needs at least one metric, e.g. accuracy=0.93")
    return {name: check_metric(name, value) for name, value in metrics.items()}


def check_constraints(constraints: Any, final: bool) -> tuple[float, ...]:
    """A report's constraints as floats: finite numbers, and only with the final report.

    Raises:
        MetricError: constraints on an intermediate report, or a value that is not finite.
        TypeError: not a list of numbers (text, bool, a mapping...).
    """
    if constraints is None:
        return ()
    if isinstance(constraints, str | bytes | Mapping) or not isinstance(constraints, Iterable):
        raise TypeError(f"constraints must be a list of numbers, got "
                        f"{type(constraints).__name__} {constraints!r}")
    values = tuple(constraints)
    if values and not final:
        raise MetricError("constraints go with the final report (final=True) only")
    checked = []
    for index, value in enumerate(values):
        try:
            checked.append(check_metric(f"constraints[{index}]", value))
        except MetricError:
            raise MetricError(f"constraints[{index}] must be finite, got {value}") from None
        except TypeError:
            raise TypeError(f"constraints[{index}] must be a number (int or float), got "
                            f"{type(value).__name__} {value!r}") from None
    return tuple(checked)
