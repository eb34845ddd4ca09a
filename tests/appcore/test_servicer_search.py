"""AppCore's service and trial loop with constraints and several objectives (issue 30), on real
servers: bad constraints are refused, an infeasible trial never reaches the target, and a
target of several objectives needs every one of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from disauto.common.objectives import Objectives
from disauto.common.report import Report
from disauto.common.tokens import trial_token
from disauto.protos import appcore_pb2
from disauto.protos import appcore_pb2_grpc
from disauto.protos import framework_pb2
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import AppCore
from disauto.testing.inprocess import Framework
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import trial_metadata
from disauto.testing.inprocess import wait_for
from tests.appcore.test_servicer import Stack
from tests.appcore.test_servicer import error_of


pytestmark = pytest.mark.integration  # starts processes or servers


class SearchStack(Stack):
    """A stack whose job may have several objectives, reporting constraints too."""

    def __init__(self, tmp_path: Path, objectives: Objectives | None = None,
                 **config: Any) -> None:
        made = job_config(**config)
        if objectives is not None:
            objectives.write_to(made.search)
        self.framework = Framework(tmp_path, made)
        self.appcore = AppCore(self.framework.address).run()
        self.channel = grpc.insecure_channel(self.appcore.address)
        self.stub = appcore_pb2_grpc.AppCoreServiceStub(self.channel)
        wait_for(lambda: len(self.framework.in_flight()) == config.get("parallelism", 2),
                 what="the first trials")
        self.framework.launch_trials()

    def send(self, number: int, metrics: dict[str, float], *, final: bool = False,
             step: int | None = None,
             constraints: tuple[float, ...] = ()) -> appcore_pb2.ReportMetricsReply:
        request = Report(number, metrics, step, final, 1.0, constraints).to_proto()
        return self.stub.ReportMetrics(request, timeout=5,
                                       metadata=trial_metadata(trial_token(JOB_TOKEN, number)))


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[SearchStack]:
    running = SearchStack(tmp_path, max_trials=5, parallelism=2, target=0.9)
    yield running
    running.close()


def test_bad_constraints_are_invalid_argument(stack: SearchStack) -> None:
    assert error_of(lambda: stack.send(1, {"accuracy": 0.5}, step=0, constraints=(1.0,))) == (
        grpc.StatusCode.INVALID_ARGUMENT, "constraints go with the final report (final=True) "
                                          "only")
    assert error_of(lambda: stack.send(1, {"accuracy": 0.5}, final=True,
                                       constraints=(float("nan"),))) == (
        grpc.StatusCode.INVALID_ARGUMENT, "constraints[0] must be finite, got nan")
    assert stack.framework.store.reports() == []


def test_an_infeasible_trial_does_not_reach_the_target(stack: SearchStack) -> None:
    assert stack.send(1, {"accuracy": 0.99}, final=True, constraints=(0.5,)).should_stop is False
    assert stack.framework.controller.outcome is None
    assert stack.framework.store.trial(1).constraints == (0.5,)  # type: ignore[union-attr]
    assert stack.send(2, {"accuracy": 0.95}, final=True, constraints=(0.0,)).should_stop is True
    assert stack.framework.controller.outcome == (
        framework_pb2.TARGET_REACHED, "trial 2 reached accuracy=0.95 (target 0.9)")


def test_several_targets_must_all_be_reached(tmp_path: Path) -> None:
    objectives = Objectives(("accuracy", "latency"), ("maximize", "minimize"), (0.9, 5.0))
    running = SearchStack(tmp_path, objectives, max_trials=5, parallelism=2)
    try:
        assert running.send(1, {"accuracy": 0.95, "latency": 7.0}, final=True).should_stop \
            is False
        assert running.send(2, {"accuracy": 0.92, "latency": 4.0}, final=True).should_stop
        assert running.framework.controller.outcome == (
            framework_pb2.TARGET_REACHED,
            "trial 2 reached accuracy=0.92 (target 0.9), latency=4 (target 5)")
    finally:
        running.close()
