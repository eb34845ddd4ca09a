"""Population Based Training with real trials on the embedded cluster: a population of 4 whose
script checkpoints every step; the bottom trial is replaced by a new trial that resumes from a
top trial's checkpoint (``load_checkpoint()`` returns the parent's, and its first step follows
the parent's), and results.json shows the lineage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import common_flags


pytestmark = pytest.mark.slow

# ``python runner.py MARKS``: 12 steps; the score grows by x a step. Each step saves the state
# (the trial that wrote it, its step and score) and reports the score; what the trial started
# from and its first step go to MARKS/trial-N.json.
RUNNER = '''
import json, os, pathlib, sys, time
from apprunner_sdk import checkpoint_step, get_params, load_checkpoint, report, save_checkpoint
marks = pathlib.Path(sys.argv[1])
number = int(os.environ["DISAUTO_TRIAL_NUMBER"])
x = get_params()["x"]
saved = load_checkpoint()
state = {"trial": number, "step": 0, "score": 0.0}
loaded = None
if saved is not None:
    loaded = json.loads(saved.read_text())
    assert loaded["step"] == checkpoint_step(), (loaded, checkpoint_step())
    state = dict(loaded, trial=number)
first = state["step"] + 1
(marks / f"trial-{number}.json").write_text(json.dumps({"loaded": loaded, "first": first}))
for step in range(first, 13):
    time.sleep(0.4)
    state["step"], state["score"] = step, state["score"] + x
    pathlib.Path("state.json").write_text(json.dumps(state))
    save_checkpoint("state.json", step=step)
    report(accuracy=state["score"], step=step)
report(accuracy=state["score"], final=True)
'''

PARAMS = {"parameters": [{"name": "x", "type": "bound", "value": [0.1, 1.0]}]}


def test_the_bottom_trial_is_replaced_by_one_that_resumes_from_a_top_trials_checkpoint(
        submit: Any, tmp_path: Path) -> None:
    (tmp_path / "runner.py").write_text(RUNNER)
    (tmp_path / "params.json").write_text(json.dumps(PARAMS))
    marks = tmp_path / "marks"
    marks.mkdir()
    args = common_flags(tmp_path, "--trail-steps", "6", "--parallelism", "4", "--quiet",
                        "--tuning-type", "pbt", "--tuning-setting", "perturbation_interval=2",
                        "--tuning-setting", "resample_probability=0")
    args[args.index("--app-runner-launch-cmd") + 1] = f"python runner.py {marks}"
    job = submit(*args)
    assert job.wait(timeout=300) == 0, job.output
    trials = {t["number"]: t for t in job.results()["trials"]}
    children = [t for t in trials.values() if t["parent"] is not None]
    assert children, f"no exploit happened: {json.dumps(list(trials.values()), indent=1)}"
    replaced = [t for t in trials.values() if t["state"] == "PRUNED"]
    assert replaced and all("replaced at step" in t["message"] for t in replaced)
    for child in children:
        started = json.loads((marks / f"trial-{child['number']}.json").read_text())
        loaded = started["loaded"]
        assert loaded is not None, f"trial {child['number']} started from scratch"
        # The parent's own checkpoint, at the step the lineage names; the child goes on after.
        assert (loaded["trial"], loaded["step"]) == (child["parent"], child["from_step"])
        assert started["first"] == child["from_step"] + 1
        assert child["resumed_from"]["trial"] == child["parent"]
        parent_x = trials[child["parent"]]["assignment"]["x"]
        # A parent at the range's end may keep its x (clipped): then nothing is "explored".
        change = child["explored"].get("x", {"old": parent_x, "new": parent_x})
        assert change["old"] == pytest.approx(parent_x)
        assert change["new"] == pytest.approx(child["assignment"]["x"])
        assert child["assignment"]["x"] in (pytest.approx(min(1.0, parent_x * 1.2)),
                                            pytest.approx(max(0.1, parent_x * 0.8)))
    fresh = [t for t in trials.values() if t["parent"] is None]
    assert all(t["from_step"] is None and t["explored"] is None for t in fresh)
