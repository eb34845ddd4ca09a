"""The job's checkpoints, framework side: a try that runs again resumes from its trial's latest
checkpoint (recorded with the trial, and with each try in its ``tries``); a checkpoint from a try
that is over, or over the bound, is refused before it is written; the task is told where its
checkpoints go and which one it resumes from; the gRPC calls check the trial's token."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
import json
from pathlib import Path

import grpc
import pytest

from disauto.common import task_env
from disauto.common.checkpoints import CheckpointTooLargeError
from disauto.common.tokens import trial_token
from disauto.framework._checkpoints import JobCheckpoints
from disauto.framework._checkpoints import StaleTryError
from disauto.framework._checkpoints import checkpoint_env
from disauto.framework._checkpoints import running_try
from disauto.framework._job import JobController
from disauto.framework._job.book import TrialBook
from disauto.framework._service import make_server
from disauto.framework._spec import JobConfig
from disauto.framework._store import JobStore
from disauto.protos import framework_pb2
from disauto.protos import framework_pb2_grpc
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import trial_metadata


ASSIGN = {"lr": 0.01, "layers": 2, "act": "relu"}


class Job:
    """A job's record, book, controller and checkpoints, as the runner builder wires them."""

    def __init__(self, folder: Path, config: JobConfig) -> None:
        self.config = config
        self.store = JobStore(folder / "job.db")
        self.checkpoints = JobCheckpoints(config, folder,
                                          lambda number: running_try(self.book, number))
        self.book = TrialBook(self.store, self.checkpoints.resume_point)
        self.controller = JobController(config, self.store, JOB_TOKEN, book=self.book)
        self.controller.submit_trials([(1, ASSIGN, 0)])

    def save(self, step: int, data: bytes = b"state", try_index: int = 0) -> str:
        saved, _ = self.checkpoints.save(1, try_index, step, len(data), [data])
        return saved.name

    def lose_try(self, outcome: str = "lost") -> None:
        """Trial 1's try runs, then its task is lost: it waits to run again."""
        trial = self.book.require(1)
        self.book.launched(1, f"trial-0001{'.' + str(trial.retries) if trial.retries else ''}",
                           "agent-1", "")
        self.book.queue_again(self.book.require(1), "its agent was drained", outcome=outcome)


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    made = Job(tmp_path, replace(job_config(max_trials=3), checkpoint_keep=2,
                                 checkpoint_max_bytes=64))
    yield made
    made.store.close()


def test_a_try_run_again_resumes_from_the_latest_and_each_try_keeps_its_own(job: Job) -> None:
    job.lose_try()  # no checkpoint yet: the second try starts from scratch
    assert job.book.require(1).resumed_from is None
    for step in (1, 2, 3):
        job.save(step, try_index=1)
    job.lose_try("evicted")
    trial = job.store.trial(1)
    assert trial is not None and trial.retries == 2
    assert trial.resumed_from == {"trial": 1, "step": 3, "name": "000003-step-3.ckpt"}
    assert [t["resumed_from"] for t in trial.tries] == [None, None]
    job.lose_try()
    assert [t["resumed_from"] for t in job.store.trials()[0].tries][-1]["step"] == 3
    # Only the latest two are kept.
    assert [c.name for c in job.checkpoints.folder.checkpoints(1)] == [
        "000002-step-2.ckpt", "000003-step-3.ckpt"]


def test_a_checkpoint_from_a_try_that_is_over_or_too_large_is_not_kept(job: Job) -> None:
    job.save(1)
    job.lose_try()
    with pytest.raises(StaleTryError, match="try 0 of trial 1 is over \\(try 1 runs\\)"):
        job.save(2, try_index=0)
    with pytest.raises(CheckpointTooLargeError, match="a checkpoint of 65 bytes is over the "
                                                      "job's --checkpoint-max-size \\(64"):
        job.save(2, b"x" * 65, try_index=1)
    assert [c.name for c in job.checkpoints.folder.checkpoints(1)] == ["000001-step-1.ckpt"]
    with pytest.raises(StaleTryError, match="trial 2 is not running"):
        job.checkpoints.save(2, 0, 1, 1, [b"x"])


def test_another_trial_s_checkpoint_starts_a_trial_from_where_that_one_was(job: Job) -> None:
    job.save(4, b"trial one at 4")
    job.controller.submit_trials([(2, ASSIGN, 0)])
    point = job.checkpoints.copy_checkpoint(1, 2)
    job.book.resume_from(2, point)
    trial = job.store.trial(2)
    assert trial is not None
    assert trial.resumed_from == {"trial": 1, "step": 4,
                                  "name": "000001-step-4-of-trial-0001.ckpt"}
    env = checkpoint_env(job.config, trial)
    assert json.loads(env[task_env.RESUME_CHECKPOINT]) == trial.resumed_from
    assert b"".join(job.checkpoints.chunks(2, trial.resumed_from["name"])) == b"trial one at 4"


def test_the_task_is_told_its_try_the_bounds_and_the_shared_folder(job: Job) -> None:
    trial = job.book.require(1)
    assert checkpoint_env(job.config, trial) == {
        task_env.TRIAL_TRY: "0", task_env.CHECKPOINT_MAX_BYTES: "64",
        task_env.CHECKPOINT_KEEP: "2"}
    shared = replace(job.config, checkpoint_dir="/shared/ckpt")
    assert checkpoint_env(shared, trial)[task_env.CHECKPOINT_DIR] == "/shared/ckpt/job-test"


@pytest.mark.integration  # a gRPC server
def test_the_calls_check_the_trial_s_token_and_answer_a_refusal_with_its_code(
        job: Job) -> None:
    server, port = make_server(job.controller, "127.0.0.1", 0, checkpoints=job.checkpoints)
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = framework_pb2_grpc.FrameworkServiceStub(channel)
            mine = trial_metadata(trial_token(JOB_TOKEN, 1))

            def save(metadata: object, data: bytes) -> framework_pb2.SaveCheckpointReply:
                chunks = [framework_pb2.CheckpointChunk(trial_number=1, step=5,
                                                        size=len(data), data=data[:3]),
                          framework_pb2.CheckpointChunk(data=data[3:])]
                return stub.SaveCheckpoint(iter(chunks), metadata=metadata, timeout=5)

            assert save(mine, b"chunked state").name == "000001-step-5.ckpt"
            loaded = stub.LoadCheckpoint(framework_pb2.LoadCheckpointRequest(
                trial_number=1, name="000001-step-5.ckpt"), metadata=mine, timeout=5)
            assert b"".join(chunk.data for chunk in loaded) == b"chunked state"
            refusals = []
            for metadata, data in ((trial_metadata(trial_token(JOB_TOKEN, 2)), b"x"),
                                   (mine, b"y" * 100)):
                with pytest.raises(grpc.RpcError) as caught:
                    save(metadata, data)
                refusals.append(caught.value.code())
            assert refusals == [grpc.StatusCode.UNAUTHENTICATED,
                                grpc.StatusCode.INVALID_ARGUMENT]
            with pytest.raises(grpc.RpcError) as caught:
                list(stub.LoadCheckpoint(framework_pb2.LoadCheckpointRequest(
                    trial_number=1, name="../job.db"), metadata=mine, timeout=5))
            assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        server.stop(None)
