"""The synthetic MNIST-CNN runner of the paper's benchmark (examples/synthetic_cnn.py)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
import random
import subprocess
import sys

import pytest

from disauto.submit.params import load_parameter_file


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import synthetic_cnn  # noqa: E402 - the example is a script, not a package module


pytestmark = pytest.mark.integration  # starts processes or servers


GOOD = {"learning_rate": 0.02, "momentum": 0.5, "batch_size": 16, "dropout": 0.1,
        "weight_decay": 1e-5}


def draw(rng: random.Random) -> dict[str, float]:
    """A random-search draw from examples/synthetic_cnn_params.json's ranges."""
    return {
        "learning_rate": 10 ** rng.uniform(-5, 0), "momentum": rng.uniform(0.0, 0.99),
        "batch_size": rng.choice([16, 32, 64, 128, 256, 512, 1024]),
        "dropout": rng.uniform(0.0, 0.8), "weight_decay": 10 ** rng.uniform(-6, -1),
    }


def test_the_model_is_deterministic_per_assignment_and_bounded() -> None:
    accuracy, seconds = synthetic_cnn.model(GOOD)
    assert synthetic_cnn.model(dict(GOOD)) == (accuracy, seconds)
    assert 0.95 < accuracy < 1.0 and 20 < seconds < 120
    other = synthetic_cnn.model({**GOOD, "dropout": 0.1000001})
    assert other != (accuracy, seconds)  # another assignment, another draw of the noise


def test_too_large_a_step_diverges_to_the_share_of_ones() -> None:
    accuracy, _ = synthetic_cnn.model({**GOOD, "learning_rate": 1.0, "momentum": 0.9})
    assert math.isclose(accuracy, synthetic_cnn.CHANCE_ACCURACY, abs_tol=0.01)


def test_more_updates_learn_more_and_take_longer() -> None:
    short = synthetic_cnn.model({**GOOD, "epochs": 1})
    long = synthetic_cnn.model({**GOOD, "epochs": 5})
    assert long[0] > short[0] and long[1] > 3 * short[1] * 0.8
    big_batch = synthetic_cnn.model({**GOOD, "batch_size": 1024})
    assert big_batch[0] < short[0] + 0.05 and big_batch[0] < long[0]


def test_the_parameter_file_loads_and_about_two_percent_of_draws_reach_95() -> None:
    space = load_parameter_file(ROOT / "examples" / "synthetic_cnn_params.json")
    assert [p.name for p in space] == ["learning_rate", "momentum", "batch_size", "dropout",
                                       "weight_decay"]
    rng = random.Random(0)
    hits = sum(synthetic_cnn.model(draw(rng))[0] >= 0.95 for _ in range(20000))
    assert 0.015 < hits / 20000 < 0.025


def test_run_by_hand_it_reports_on_stdout_after_the_scaled_time() -> None:
    env = {**os.environ, "DISAUTO_PARAMS": json.dumps(GOOD),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for name in ("DISAUTO_APPCORE_ADDR", "DISAUTO_TRIAL_NUMBER", "DISAUTO_TRIAL_TOKEN"):
        env.pop(name, None)
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "synthetic_cnn.py"),
                          "--time-scale", "0.001"], capture_output=True, text=True, env=env,
                         timeout=60, check=True).stdout
    prefix, _, line = out.splitlines()[0].partition(" ")
    report = json.loads(line)
    assert prefix == "[disauto]"
    accuracy, seconds = synthetic_cnn.model(GOOD)
    assert report["metrics"]["accuracy"] == accuracy and report["final"] is True
    assert report["metrics"]["model_seconds"] == seconds
    bad = subprocess.run([sys.executable, str(ROOT / "examples" / "synthetic_cnn.py"),
                          "--time-scale", "-1"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert bad.returncode == 2 and "--time-scale: invalid value -1.0" in bad.stderr
