"""The runner's builder: the record opened, every part wired from it before anything serves,
and a resumed job's FrameworkID, token and ports taken back (no master is asked)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from disauto.common.trial_state import TrialState
from disauto.framework import _meta as meta
from disauto.framework._master_endpoint import MasterEndpoint
from disauto.framework._runner_builder import RunnerOptions
from disauto.framework._runner_builder import build_runner
from disauto.framework._runtime import JobRunner
from disauto.framework._store import JobStore
from disauto.testing.inprocess import AGENT
from disauto.testing.inprocess import job_config


pytestmark = pytest.mark.integration  # binds the job's servers

MASTER = MasterEndpoint("127.0.0.1:1")  # never asked: nothing subscribes before start()


@pytest.fixture
def built(tmp_path: Path) -> Iterator[list[JobRunner]]:
    runners: list[JobRunner] = []
    yield runners
    for runner in runners:  # serve for a moment, then close what the builder bound
        listeners = runner._listeners  # noqa: SLF001 - the servers the builder bound
        listeners.start()
        listeners.stop()
        runner.store.close()


def build(built: list[JobRunner], job_dir: Path, **options: Any) -> JobRunner:
    runner = build_runner(job_config(), job_dir, MASTER,
                          RunnerOptions(bind_host="127.0.0.1", advertise_host="127.0.0.1",
                                        **options))
    built.append(runner)
    return runner


def test_a_new_job_is_recorded_and_wired_before_anything_serves(
        tmp_path: Path, built: list[JobRunner]) -> None:
    runner = build(built, tmp_path / "job")
    recorded = runner.store.meta()
    assert recorded[meta.STATE] == meta.RUNNING and recorded[meta.PID] > 0
    assert recorded[meta.STARTED_AT] and recorded[meta.FRAMEWORK_ID] == ""
    assert recorded[meta.WEBUI_URL] == runner.page_url
    assert runner.framework_address == f"127.0.0.1:{recorded[meta.GRPC_PORT]}"
    assert runner.scheduler.framework_id == ""
    # Telemetry was given at construction (GPU samples are recorded), not injected later.
    assert runner.controller.gpu_samples is not None
    assert (tmp_path / "job" / "job.token").read_text().strip() == runner.controller.job_token
    assert [r.key for r in runner.controller.launch_requests()] == ["appcore"]


def test_without_telemetry_no_gpu_samples_are_taken(tmp_path: Path,
                                                    built: list[JobRunner]) -> None:
    runner = build(built, tmp_path / "job", telemetry=False)
    assert runner.controller.gpu_samples is None


def _left_by_a_framework(job_dir: Path, master: str) -> int:
    """A job whose framework died with trial 1 running and AppCore attached, on ``master``;
    the port its gRPC service had."""
    first = build_runner(job_config(), job_dir, MasterEndpoint(master),
                         RunnerOptions(bind_host="127.0.0.1", advertise_host="127.0.0.1"))
    controller = first.controller
    assert controller.appcore_launched("appcore-1", AGENT)
    controller.attach_appcore("127.0.0.1:2")
    controller.submit_trials([(1, {"lr": 0.1, "layers": 1, "act": "relu"}, 0)])
    controller.trial_launched(1, "trial-0001", AGENT)
    first.store.set_meta(meta.FRAMEWORK_ID, "F-7")
    first._listeners.start()  # noqa: SLF001 - let the dead framework's ports go
    first._listeners.stop()  # noqa: SLF001
    port = first.store.get_meta(meta.GRPC_PORT)
    first.store.close()
    return port


def test_a_job_resumed_on_its_master_fails_over_with_its_framework_id(
        tmp_path: Path, built: list[JobRunner]) -> None:
    port = _left_by_a_framework(tmp_path / "job", MASTER.uri)
    token = (tmp_path / "job" / "job.token").read_text()
    runner = build(built, tmp_path / "job", resume=True)
    assert runner.scheduler.framework_id == "F-7"  # Mesos failover: the same framework
    assert runner.controller.job_token == token
    assert runner.store.get_meta(meta.GRPC_PORT) == port  # free again: taken back
    assert runner.controller.tasks.appcore_task_id() == "appcore-1"  # adopted, not relaunched
    assert runner.controller.launch_requests() == []
    assert runner.store.get_meta(meta.RESUMED_AT)


def test_a_job_resumed_on_a_new_master_runs_its_trials_again(
        tmp_path: Path, built: list[JobRunner]) -> None:
    _left_by_a_framework(tmp_path / "job", "127.0.0.1:2")
    runner = build(built, tmp_path / "job", resume=True)
    assert runner.scheduler.framework_id == ""  # another master: a new framework
    trial = runner.controller.trials()[0]
    assert trial.state == TrialState.PENDING and trial.retries == 1
    assert [r.key for r in runner.controller.launch_requests()] == ["appcore", "trial-0001"]
    assert runner.store.get_meta(meta.CONFIG) == runner.config


def test_a_new_framework_checkpoints_and_subscribes_with_its_roles(
        tmp_path: Path, built: list[JobRunner]) -> None:
    runner = build(built, tmp_path / "job")
    info = runner._framework_info()  # noqa: SLF001 - what start() subscribes with
    assert info["checkpoint"] is True and runner.store.get_meta(meta.FRAMEWORK_CHECKPOINT)
    assert info["roles"] == ["*"] and "role" not in info
    assert {c["type"] for c in info["capabilities"]} == {
        "MULTI_ROLE", "RESERVATION_REFINEMENT", "PARTITION_AWARE", "TASK_KILLING_STATE"}
    assert "id" not in info


def test_a_framework_failing_over_keeps_the_checkpointing_it_was_registered_with(
        tmp_path: Path, built: list[JobRunner]) -> None:
    """Mesos refuses to change FrameworkInfo.checkpoint (validateUpdate): a record of a
    framework registered without it (an earlier DisAuto's) resumes without it."""
    _left_by_a_framework(tmp_path / "job", MASTER.uri)
    store = JobStore(tmp_path / "job" / "job.db")
    store.set_meta(meta.FRAMEWORK_CHECKPOINT, False)
    store.close()
    runner = build(built, tmp_path / "job", resume=True)
    info = runner._framework_info()  # noqa: SLF001
    assert info["id"] == {"value": "F-7"} and info["checkpoint"] is False


def test_a_job_resumed_on_a_new_master_is_a_new_checkpointing_framework(
        tmp_path: Path, built: list[JobRunner]) -> None:
    _left_by_a_framework(tmp_path / "job", "127.0.0.1:2")
    runner = build(built, tmp_path / "job", resume=True)
    assert runner._framework_info()["checkpoint"] is True  # noqa: SLF001
