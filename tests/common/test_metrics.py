"""A metric is a named, finite number: the one rule, and its messages."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from disauto.common.metrics import MetricError
from disauto.common.metrics import check_metrics


def test_numbers_of_any_kind_become_floats() -> None:
    assert check_metrics({"a": 1, "b": np.float32(0.5), "c": Decimal("0.25"),
                          "d": np.int64(3)}) == {"a": 1.0, "b": 0.5, "c": 0.25, "d": 3.0}


@pytest.mark.parametrize(("metrics", "error", "message"), [
    ({}, MetricError, "a report needs at least one metric, e.g. accuracy=0.93"),
    ({"": 1.0}, MetricError, "a metric needs a name, got ''"),
    ({"loss": float("nan")}, MetricError, "metric 'loss' must be finite, got nan"),
    ({"loss": np.float64("-inf")}, MetricError, "metric 'loss' must be finite, got -inf"),
    ({"loss": "0.5"}, TypeError, "metric 'loss' must be a number (int or float), got str '0.5'"),
    ({"loss": True}, TypeError, "got bool True"),
    ({"loss": None}, TypeError, "got NoneType None"),
])
def test_what_is_not_a_metric(metrics: dict[str, object], error: type[Exception],
                              message: str) -> None:
    with pytest.raises(error) as caught:
        check_metrics(metrics)
    assert message in str(caught.value)


def test_the_caller_names_itself_when_nothing_was_reported() -> None:
    with pytest.raises(MetricError, match=r"^report\(\) needs at least one metric"):
        check_metrics({}, what="report()")


def test_a_report_carries_at_most_max_metrics_with_names_of_bounded_length() -> None:
    from disauto.common.metrics import MAX_CONSTRAINTS
    from disauto.common.metrics import MAX_METRICS
    from disauto.common.metrics import MAX_NAME_LENGTH
    from disauto.common.metrics import check_constraints

    most = {f"m{i}": 0.5 for i in range(MAX_METRICS)}
    assert check_metrics(most) == most
    with pytest.raises(MetricError, match=rf"^report\(\) carries {MAX_METRICS + 1} metrics; "
                                          rf"at most {MAX_METRICS} in a report$"):
        check_metrics({**most, "one more": 1.0}, what="report()")
    assert check_metrics({"n" * MAX_NAME_LENGTH: 1.0})
    with pytest.raises(MetricError, match=rf"is {MAX_NAME_LENGTH + 1} characters long; at most "
                                          rf"{MAX_NAME_LENGTH}$"):
        check_metrics({"n" * (MAX_NAME_LENGTH + 1): 1.0})
    assert len(check_constraints([0.0] * MAX_CONSTRAINTS, final=True)) == MAX_CONSTRAINTS
    with pytest.raises(MetricError, match=f"carries {MAX_CONSTRAINTS + 1} constraints"):
        check_constraints([0.0] * (MAX_CONSTRAINTS + 1), final=True)
