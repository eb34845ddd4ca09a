"""The Keras callback and the Keras example, trained for real (TensorFlow, tiny models).

Needs TensorFlow (``pip install -e '.[tf]'``). Without it these tests FAIL, saying how to install
it: a skipped test would hide that the callback is untested.

Standalone, the callback's reports are the SDK's JSON lines on stdout. Connected, a real
in-process AppCore (disauto/testing/inprocess.py) records them in the job's SQLite store, and
AppCore's "stop" answer sets ``model.stop_training``.
"""

from __future__ import annotations

from collections.abc import Iterator
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import apprunner_sdk
from disauto.common.report import Report
from disauto.testing.inprocess import RunningJob


pytestmark = pytest.mark.integration  # starts processes or servers


INSTALL_HINT = ("TensorFlow/Keras is not installed, so the Keras callback cannot be tested. "
                "Install it with `.venv/bin/pip install tensorflow-cpu==2.21.0` (the `tf` "
                "extra: `pip install -e '.[tf]'`).")
ROOT = Path(__file__).resolve().parents[2]


def require_keras() -> tuple[ModuleType, type]:
    """Keras and the callback class; without TensorFlow the calling test FAILS saying how to
    install it (a fixture would report an ERROR in setup instead)."""
    try:
        import keras

        from apprunner_sdk.keras import ReportCallback
    except ImportError as err:
        missing = str(err)
    else:
        return keras, ReportCallback
    pytest.fail(f"{INSTALL_HINT} ({missing})", pytrace=False)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("DISAUTO_"):
            monkeypatch.delenv(name)
    apprunner_sdk._reset_for_tests()
    yield
    apprunner_sdk._reset_for_tests()


def fit(keras: ModuleType, callback: Any, epochs: int = 2) -> Any:
    """Train a tiny classifier on a fixed random problem; return (model, history)."""
    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    model = keras.Sequential([keras.Input(shape=(4,)),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x[:48], y[:48], validation_data=(x[48:], y[48:]), epochs=epochs,
                        batch_size=16, callbacks=[callback], verbose=0)
    return model, history


def printed(out: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("[disauto] "):]) for line in out.splitlines()
            if line.startswith("[disauto] ")]


METRICS = {"loss", "accuracy", "val_loss", "val_accuracy"}


def test_standalone_prints_each_epoch_and_the_final_result(
        capsys: pytest.CaptureFixture[str]) -> None:
    keras, callback_class = require_keras()
    model, history = fit(keras, callback_class(), epochs=2)
    lines = printed(capsys.readouterr().out)
    assert [(line["step"], line["final"]) for line in lines] == [(0, False), (1, False),
                                                                 (None, True)]
    assert all(set(line["metrics"]) == METRICS for line in lines)
    for epoch in (0, 1):
        assert lines[epoch]["metrics"]["val_accuracy"] == pytest.approx(
            history.history["val_accuracy"][epoch])
    assert lines[2]["metrics"] == lines[1]["metrics"]  # the last epoch is the result
    assert not model.stop_training


def test_final_false_leaves_the_final_report_to_the_script(
        capsys: pytest.CaptureFixture[str]) -> None:
    keras, callback_class = require_keras()
    fit(keras, callback_class(final=False), epochs=2)
    assert [line["final"] for line in printed(capsys.readouterr().out)] == [False, False]
    apprunner_sdk.report(val_accuracy=0.5, final=True)  # still allowed


@pytest.fixture
def job(tmp_path: Path) -> Iterator[RunningJob]:
    running = RunningJob(tmp_path, max_trials=4, parallelism=2, objective="val_accuracy",
                         target=0.999)
    yield running
    running.close()


def test_reports_reach_appcore_with_their_steps(job: RunningJob,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    keras, callback_class = require_keras()
    job.enter_trial(monkeypatch, 1)
    model, history = fit(keras, callback_class(), epochs=2)
    reports = job.framework.store.reports(1)
    assert [(r["step"], r["final"]) for r in reports] == [(0, False), (1, False), (None, True)]
    assert all(set(r["metrics"]) == METRICS for r in reports)
    assert [r["metrics"]["val_accuracy"] for r in reports[:2]] == pytest.approx(
        history.history["val_accuracy"])
    trial = job.framework.store.trial(1)
    assert trial is not None and trial.final_reported
    assert trial.objective == pytest.approx(history.history["val_accuracy"][-1])
    assert not model.stop_training


def test_appcore_saying_stop_stops_training(job: RunningJob,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    keras, callback_class = require_keras()
    # Another runner reaches the target: the job ends and AppCore answers "stop" from now on.
    job.appcore.loop.report(Report(1, {"val_accuracy": 1.0}, None, True, 1.0))
    job.enter_trial(monkeypatch, 2)
    model, history = fit(keras, callback_class(), epochs=5)
    assert model.stop_training is True
    assert history.epoch == [0]  # stopped after the first epoch's report
    # The job had ended: the callback's reports were answered "stop" and not recorded.
    assert job.framework.store.reports(2) == []
    assert apprunner_sdk.should_stop() is True


def test_the_keras_example_trains_and_reports(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    require_keras()
    from disauto.submit.params import load_parameter_file
    from examples import keras_digits

    space = load_parameter_file(ROOT / "examples" / "keras_digits_params.json")
    assert set(space.names) == set(keras_digits.DEFAULTS)  # the file tunes what the script reads
    monkeypatch.setenv("DISAUTO_PARAMS", json.dumps({"epochs": 2, "batch_size": 64,
                                                     "learning_rate": 0.1}))
    history = keras_digits.main()
    lines = printed(capsys.readouterr().out)
    assert [(line["step"], line["final"]) for line in lines] == [(0, False), (1, False),
                                                                 (None, True)]
    assert lines[-1]["metrics"]["val_accuracy"] == pytest.approx(
        history.history["val_accuracy"][-1])
    assert lines[-1]["metrics"]["val_accuracy"] > 0.5  # it learns (10 classes: chance is 0.1)


def test_checkpoints_every_n_epochs_and_a_resumed_try_goes_on_from_the_next_epoch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through a shared --checkpoint-dir folder (no service needed): epochs 1 and 3 of four
    are saved (every 2), the latest kept; a try run again loads those weights and goes on
    from epoch 4."""
    keras, _ = require_keras()
    from apprunner_sdk import checkpoints
    from apprunner_sdk.keras import CheckpointCallback

    monkeypatch.chdir(tmp_path)
    shared = tmp_path / "shared"
    monkeypatch.setenv("DISAUTO_TRIAL_NUMBER", "1")
    monkeypatch.setenv("DISAUTO_CHECKPOINT_DIR", str(shared))
    monkeypatch.setenv("DISAUTO_CHECKPOINT_KEEP", "1")
    model, _ = fit(keras, CheckpointCallback(every=2), epochs=4)
    [kept] = (shared / "trial-0001").iterdir()
    assert kept.name == "000002-step-3.ckpt"
    monkeypatch.setenv("DISAUTO_RESUME_CHECKPOINT",
                       json.dumps({"trial": 1, "step": 3, "name": kept.name}))
    checkpoints.forget()
    fresh = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(2)])
    assert CheckpointCallback().restore(fresh) == 4
    for mine, theirs in zip(fresh.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    with pytest.raises(ValueError, match="every must be an int >= 1, got 0"):
        CheckpointCallback(every=0)
