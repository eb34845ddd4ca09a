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


__all__ = ["MAX_CONSTRAINTS", "MAX_METRICS", "MAX_NAME_LENGTH", "MetricError",
           "check_constraints", "check_metric_count", "check_metrics"]

MAX_METRICS = 256
"""The most metrics one report may carry, and one trial over all its reports: a report is a
row of the record and of results.json, not a data dump (200,000 metrics grew job.db by 12 MB)."""
MAX_NAME_LENGTH = 128
"""The longest metric name, in characters."""
MAX_CONSTRAINTS = 256
"""The most constraints a final report may carry."""


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
    if len(name) > MAX_NAME_LENGTH:
        raise MetricError(f"metric name {name[:32]!r}... is {len(name)} characters long; at "
                          f"most {MAX_NAME_LENGTH}")
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
    check_metric_count(len(metrics), f"{what} carries", "a report")
    return {name: check_metric(name, value) for name, value in metrics.items()}


def check_metric_count(count: int, carries: str, per: str) -> None:
    """At most :data:`MAX_METRICS` metrics ``per`` report or trial.

    Raises:
        MetricError: more (``carries``: how the message names what has them).
    """
    if count > MAX_METRICS:
        raise MetricError(f"{carries} {count} metrics; at most {MAX_METRICS} in {per}")


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
    if len(values) > MAX_CONSTRAINTS:
        raise MetricError(f"a report carries {len(values)} constraints; at most "
                          f"{MAX_CONSTRAINTS}")
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
