"""A runner's report of a trial's metrics, as it travels: runner → AppCore → framework.

:class:`Report` is the one Python form of the ``disauto.v1.Report`` message; every hop builds
and reads it here, so its fields cannot be passed in the wrong order anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from disauto.protos import common_pb2


@dataclass(frozen=True)
class Report:
    """Metrics of trial ``trial``: intermediate at ``step``, or ``final``.

    Attributes:
        trial: the trial's number.
        metrics: name → value.
        step: the training step of an intermediate report, or ``None``.
        final: whether these are the trial's result.
        elapsed_seconds: the runner's time since it started.
        constraints: with the final report: the trial's constraints (``<= 0`` satisfied).
    """

    trial: int
    metrics: Mapping[str, float]
    step: int | None = None
    final: bool = False
    elapsed_seconds: float = 0.0
    constraints: tuple[float, ...] = ()

    def to_proto(self) -> common_pb2.Report:
        message = common_pb2.Report(
            trial_number=self.trial,
            metrics=[common_pb2.Metric(name=name, value=value)
                     for name, value in self.metrics.items()],
            final=self.final,
            elapsed_seconds=self.elapsed_seconds,
            constraints=self.constraints,
        )
        if self.step is not None:
            message.step = self.step
        return message

    @classmethod
    def from_proto(cls, message: common_pb2.Report) -> Report:
        """The report a message carries (metrics unchecked: see :mod:`common.metrics`)."""
        return cls(
            trial=message.trial_number,
            metrics={metric.name: metric.value for metric in message.metrics},
            step=message.step if message.HasField("step") else None,
            final=message.final,
            elapsed_seconds=message.elapsed_seconds,
            constraints=tuple(message.constraints),
        )
