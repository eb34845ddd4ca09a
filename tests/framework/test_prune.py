"""PruneTrial: a pruned trial is recorded PRUNED at once, stays so, and its task is killed late."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
import time

import grpc
import pytest

from disauto.appcore.framework_client import FrameworkClient
from disauto.common.report import Report
from disauto.framework._tasks import task_name
from disauto.protos import common_pb2
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import Framework
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import wait_for


pytestmark = pytest.mark.integration  # starts processes or servers


ASSIGN = {"lr": 0.01, "layers": 2, "act": "relu"}


@pytest.fixture
def framework(tmp_path: Path) -> Iterator[Framework]:
    running = Framework(tmp_path, job_config(max_trials=4), prune_grace=0.2)
    running.launch_appcore()
    yield running
    running.close()


@pytest.fixture
def client(framework: Framework) -> Iterator[FrameworkClient]:
    appcore = FrameworkClient(framework.address, JOB_TOKEN, timeout=5.0)
    yield appcore
    appcore.close()


def _running_trial(framework: Framework, client: FrameworkClient, number: int = 1) -> None:
    client.submit_many([(number, ASSIGN)], priority=0)
    assert framework.launch_trials() == [number]


def test_a_pruned_trial_is_recorded_at_once_with_an_event(
        framework: Framework, client: FrameworkClient) -> None:
    _running_trial(framework, client)
    client.record(Report(1, {"accuracy": 0.4}, step=2, final=False, elapsed_seconds=1.0))
    before = framework.controller.events_after(0, timeout=0)[0][-1].sequence

    trial = client.prune(1, "median rule at step 2")

    assert trial.state == common_pb2.PRUNED
    assert trial.message == "median rule at step 2"
    assert trial.objective == pytest.approx(0.4)  # the last intermediate value stays
    events, _ = framework.controller.events_after(before, timeout=0)
    assert [e.trial.state for e in events] == [common_pb2.PRUNED]
    assert framework.store.trial(1).state == "PRUNED"  # type: ignore[union-attr]
    assert framework.controller.progress().done == 1


def test_later_status_updates_do_not_change_a_pruned_trial(
        framework: Framework, client: FrameworkClient) -> None:
    _running_trial(framework, client)
    client.prune(1, "")
    for state in ("TASK_FINISHED", "TASK_KILLED", "TASK_FAILED"):
        framework.end_trial(1, state)
    assert framework.states()[1] == "PRUNED"
    assert framework.controller.trials()[0].message == "stopped early by the pruner"


def test_a_runner_that_exits_in_time_is_not_killed(
        framework: Framework, client: FrameworkClient) -> None:
    _running_trial(framework, client)
    client.prune(1, "asha")
    assert task_name(1) in framework.controller.tasks.live_task_ids()
    framework.end_trial(1, "TASK_FINISHED")
    assert task_name(1) not in framework.controller.tasks.live_task_ids()
    time.sleep(0.4)
    assert framework.kill_requests == []


def test_a_runner_still_running_after_the_grace_period_is_killed(
        framework: Framework, client: FrameworkClient) -> None:
    _running_trial(framework, client)
    client.prune(1, "asha")
    wait_for(lambda: framework.kill_requests, timeout=5.0, what="a kill request")
    assert framework.kill_requests == [task_name(1)]
    # The job's end kills it too if it is still live then.
    assert task_name(1) in framework.controller.tasks.live_task_ids()
    framework.end_trial(1, "TASK_KILLED")
    assert framework.states()[1] == "PRUNED"
    assert task_name(1) not in framework.controller.tasks.live_task_ids()


def test_pruning_a_pending_trial_needs_no_kill_and_never_launches_it(
        framework: Framework, client: FrameworkClient) -> None:
    client.submit_many([(1, ASSIGN)], priority=0)
    assert client.prune(1, "").state == common_pb2.PRUNED
    assert framework.launch_trials() == []
    assert framework.controller.tasks.live_task_ids() == ["appcore-1"]


def test_pruning_an_ended_trial_leaves_it_as_it_was(
        framework: Framework, client: FrameworkClient) -> None:
    _running_trial(framework, client)
    client.record(Report(1, {"accuracy": 0.9}, step=None, final=True, elapsed_seconds=1.0))
    framework.end_trial(1, "TASK_FINISHED")
    assert client.prune(1, "too late").state == common_pb2.COMPLETED


def test_pruning_an_unknown_trial_is_not_found(client: FrameworkClient) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        client.prune(9, "")
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert caught.value.details() == "trial 9 does not exist"


def test_attach_carries_the_objectives_intermediate_values(
        framework: Framework, client: FrameworkClient) -> None:
    _running_trial(framework, client)
    for step, value in ((1, 0.2), (2, 0.5)):
        client.record(Report(1, {"accuracy": value, "loss": 1 - value}, step=step, final=False,
                      elapsed_seconds=step))
    client.record(Report(1, {"loss": 0.1}, step=3, final=False, elapsed_seconds=3))  # no objective
    reply = client.attach("127.0.0.1:1")
    assert [(v.step, v.value) for v in reply.trials[0].intermediate_values] == [
        (1, pytest.approx(0.2)), (2, pytest.approx(0.5))]
