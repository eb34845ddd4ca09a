"""save_checkpoint / load_checkpoint as a trial calls them: uploaded to a real framework gRPC
service (chunked, the trial's token) or written to the shared ``--checkpoint-dir`` folder, and
fetched back by the try that resumes; every refusal is one line (CheckpointError) and the trial
goes on; outside DisAuto a save is a line on standard output and there is nothing to load."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
import json
import os
from pathlib import Path
import subprocess
import sys

import pytest

import apprunner_sdk
from apprunner_sdk import checkpoints
from disauto.common import task_env
from disauto.common.tokens import trial_token
from disauto.framework._checkpoints import JobCheckpoints
from disauto.framework._checkpoints import checkpoint_env
from disauto.framework._checkpoints import running_try
from disauto.framework._job import JobController
from disauto.framework._job.book import TrialBook
from disauto.framework._service import make_server
from disauto.framework._store import JobStore
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import job_config


class Framework:
    """A job's framework with its checkpoints and the real gRPC service."""

    def __init__(self, folder: Path, max_bytes: int = 1 << 20, shared: str = "") -> None:
        self.config = replace(job_config(), checkpoint_max_bytes=max_bytes, checkpoint_keep=2,
                              checkpoint_dir=shared)
        self.store = JobStore(folder / "job.db")
        self.checkpoints = JobCheckpoints(self.config, folder,
                                          lambda number: running_try(self.book, number))
        self.book = TrialBook(self.store, self.checkpoints.resume_point)
        self.controller = JobController(self.config, self.store, JOB_TOKEN, book=self.book)
        self.controller.submit_trials([(1, {"lr": 0.01, "layers": 2, "act": "relu"}, 0)])
        self.server, port = make_server(self.controller, "127.0.0.1", 0,
                                        checkpoints=self.checkpoints)
        self.server.start()
        self.address = f"127.0.0.1:{port}"

    def task_env(self) -> dict[str, str]:
        """Trial 1's task environment as its launch sets it now."""
        return {task_env.TRIAL_NUMBER: "1", task_env.TRIAL_TOKEN: trial_token(JOB_TOKEN, 1),
                task_env.FRAMEWORK_ADDR: self.address,
                **checkpoint_env(self.config, self.book.require(1))}

    def lose_try(self) -> None:
        trial = self.book.require(1)
        self.book.launched(1, f"trial-0001.{trial.retries}", "agent-1", "")
        self.book.queue_again(self.book.require(1), "its agent was drained")

    def close(self) -> None:
        self.server.stop(None)
        self.store.close()


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "sandbox"
    folder.mkdir()
    monkeypatch.chdir(folder)
    checkpoints.forget()
    yield folder
    checkpoints.forget()


@pytest.mark.integration  # a gRPC server
def test_a_saved_folder_comes_back_to_the_try_that_resumes_and_a_lost_try_is_refused(
        tmp_path: Path, sandbox: Path) -> None:
    framework = Framework(tmp_path / "job")
    try:
        model = sandbox / "model"
        model.mkdir()
        for step in (1, 2, 3):
            (model / "weights.bin").write_bytes(b"w%d" % step)
            assert checkpoints.save(model, step, framework.task_env()).endswith(
                f"-step-{step}.ckpt")
        lost = framework.task_env()
        assert checkpoints.load(lost) is None  # the first try starts from scratch
        framework.lose_try()
        resumed = framework.task_env()
        with pytest.raises(apprunner_sdk.CheckpointError,
                           match="^save_checkpoint: try 0 of trial 1 is over"):
            checkpoints.save(model, 4, lost)  # the lost try, still running somewhere
        back = checkpoints.load(resumed)
        assert back == sandbox / ".disauto" / "checkpoint" / "model"
        assert (back / "weights.bin").read_bytes() == b"w3"
        assert checkpoints.load(resumed) == back  # fetched once
        assert json.loads(resumed[task_env.RESUME_CHECKPOINT])["step"] == 3
    finally:
        framework.close()


@pytest.mark.integration  # a gRPC server
def test_an_oversized_checkpoint_is_refused_before_its_upload_and_the_trial_goes_on(
        tmp_path: Path, sandbox: Path) -> None:
    framework = Framework(tmp_path / "job", max_bytes=20_000)
    try:
        (sandbox / "small").write_bytes(b"s")
        (sandbox / "big").write_bytes(os.urandom(30_000))
        env = framework.task_env()
        checkpoints.save(sandbox / "small", 1, env)
        with pytest.raises(apprunner_sdk.CheckpointError) as caught:
            checkpoints.save(sandbox / "big", 2, env)
        assert "\n" not in str(caught.value)
        assert "over the job's --checkpoint-max-size (20000 bytes); it was not saved" \
            in str(caught.value)
        assert checkpoints.save(sandbox / "small", 3, env).startswith("000002-")
    finally:
        framework.close()


def test_with_a_shared_folder_the_trial_writes_and_reads_its_checkpoints_itself(
        tmp_path: Path, sandbox: Path) -> None:
    shared = tmp_path / "shared" / "job-test"
    env = {task_env.TRIAL_NUMBER: "4", task_env.CHECKPOINT_DIR: str(shared),
           task_env.CHECKPOINT_KEEP: "1", task_env.CHECKPOINT_MAX_BYTES: "100000"}
    (sandbox / "state.txt").write_text("at 1")
    checkpoints.save(sandbox / "state.txt", 1, env)
    (sandbox / "state.txt").write_text("at 2")
    name = checkpoints.save(sandbox / "state.txt", 2, env)
    assert [p.name for p in (shared / "trial-0004").iterdir()] == [name]
    resumed = {**env, task_env.RESUME_CHECKPOINT: json.dumps(
        {"trial": 4, "step": 2, "name": name})}
    back = checkpoints.load(resumed)
    assert back is not None and back.read_text() == "at 2"


def test_outside_disauto_a_save_is_a_line_and_nothing_is_loaded(
        sandbox: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (task_env.TRIAL_NUMBER, task_env.RESUME_CHECKPOINT):
        monkeypatch.delenv(name, raising=False)
    (sandbox / "m.pt").write_text("w")
    assert apprunner_sdk.save_checkpoint("m.pt", step=3) == ""
    assert json.loads(capsys.readouterr().out.removeprefix("[disauto] ")) == {
        "checkpoint": "m.pt", "step": 3}
    assert apprunner_sdk.load_checkpoint() is None
    assert apprunner_sdk.checkpoint_step() is None
    with pytest.raises(TypeError, match="step must be a non-negative int, got -1"):
        apprunner_sdk.save_checkpoint("m.pt", step=-1)
    with pytest.raises(FileNotFoundError, match="save_checkpoint\\(\\): gone.pt does not exist"):
        apprunner_sdk.save_checkpoint("gone.pt", step=1)


@pytest.mark.integration  # starts a Python
def test_the_sdk_imports_nothing_of_checkpoints_until_a_script_uses_them() -> None:
    probe = ("import sys, apprunner_sdk\n"
             "print(sorted(m for m in sys.modules if 'checkpoint' in m or m == 'tarfile'))\n"
             "from apprunner_sdk import CheckpointError\n"
             "print(CheckpointError.__module__)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split("\n")
    assert out[:2] == ["[]", "disauto.common.checkpoints"]
