"""A report survives its trips as a proto: runner → AppCore → framework."""

from __future__ import annotations

from disauto.common.report import Report
from disauto.protos import common_pb2


def test_round_trip_with_and_without_a_step() -> None:
    for report in (Report(7, {"accuracy": 0.9, "loss": 0.2}, step=3, elapsed_seconds=1.5),
                   Report(7, {"accuracy": 0.91}, final=True, elapsed_seconds=2.0),
                   Report(1, {"x": 0.0}, step=0)):
        message = report.to_proto()
        again = Report.from_proto(common_pb2.Report.FromString(message.SerializeToString()))
        assert again == report


def test_a_step_of_zero_is_a_step_and_none_is_none() -> None:
    assert Report(1, {"a": 1.0}, step=0).to_proto().HasField("step")
    assert not Report(1, {"a": 1.0}).to_proto().HasField("step")
