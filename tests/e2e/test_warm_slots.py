"""Whole jobs with warm slots (``--slot-mode warm``): trials as tasks of DisAuto executors."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
import re
import signal
import time
from typing import Any

import pytest

from disauto.common.auto_preload import DENIED
from tests.e2e.conftest import DaCluster
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import da_cluster  # noqa: F401 - a fixture
from tests.e2e.test_bayesian import STEPPED_RUNNER


pytestmark = pytest.mark.slow


def slots_started(job_dir: Path) -> set[str]:
    """The slot executors the job's framework started (its log says each)."""
    text = (job_dir / "da-submit.log").read_text()
    return set(re.findall(r"starting slot (\S+) on", text))


def check_budget(results: dict[str, Any], budget: int) -> list[dict[str, Any]]:
    """Exactly the budget, numbered 1..budget, no assignment twice; the trials by number."""
    trials = sorted(results["trials"], key=lambda t: t["number"])
    assert [t["number"] for t in trials] == list(range(1, budget + 1))
    assignments = [json.dumps(t["assignment"], sort_keys=True) for t in trials]
    assert len(set(assignments)) == budget
    return trials


def test_a_random_search_runs_its_trials_on_few_executors(submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--slot-mode", "warm", "--trail-steps", "12",
                               "--parallelism", "3"), env={"RUNNER_SLEEP": "0.3"})
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    trials = check_budget(results, 12)
    assert all(t["state"] == "COMPLETED" and t["objective"] is not None for t in trials)
    started = slots_started(job.job_dir())
    assert 1 <= len(started) <= 3, started
    # Each trial's output was collected from its own folder of a slot's sandbox.
    logs = job.job_dir() / "logs"
    assert all((logs / f"trial-{n:04d}.stdout").exists() for n in range(1, 13))
    assert json.loads((job.job_dir() / "results.json").read_text())["outcome"] == "BUDGET_SPENT"


def test_a_bayesian_job_with_early_stopping_on_warm_slots(submit: Any, workdir: Path) -> None:
    (workdir / "runner.py").write_text(STEPPED_RUNNER)
    job = submit(*common_flags(workdir, "--slot-mode", "warm", "--tuning-type", "bayesian",
                               "--trail-steps", "8", "--parallelism", "2", "--early-stopping",
                               "median", "--early-stopping-setting", "n_startup_trials=2"))
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    trials = check_budget(results, 8)
    states = {t["state"] for t in trials}
    assert states <= {"COMPLETED", "PRUNED"} and "PRUNED" in states, job.output
    # A pruned trial's task may still be exiting when the next trial is launched, so a third
    # slot can start; never one per trial.
    assert 1 <= len(slots_started(job.job_dir())) <= 4


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
def test_a_grid_search_runs_exactly_the_cartesian_product_on_warm_slots(
        submit: Any, workdir: Path) -> None:
    (workdir / "grid.json").write_text(json.dumps({"parameters": [
        {"name": "x", "type": "number", "value": [0.1, 0.3, 0.9]},
        {"name": "n", "type": "number", "value": [0, 2]},
    ]}))
    flags = common_flags(workdir, "--slot-mode", "warm", "--tuning-type", "grid-search",
                         "--trail-steps", "50", "--parallelism", "3")
    flags[flags.index(str(workdir / "params.json"))] = str(workdir / "grid.json")
    job = submit(*flags)
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "SPACE_EXHAUSTED"
    seen = sorted((t["assignment"]["x"], t["assignment"]["n"]) for t in results["trials"])
    assert seen == sorted(itertools.product([0.1, 0.3, 0.9], [0, 2]))
    assert 1 <= len(slots_started(job.job_dir())) <= 3


def test_warm_slots_on_a_da_cluster(submit: Any, workdir: Path,
                                    da_cluster: DaCluster) -> None:  # noqa: F811
    address = da_cluster.start()
    job = submit(*common_flags(workdir, "--slot-mode", "warm", "--trail-steps", "6",
                               "--parallelism", "2", "--master", address))
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    trials = check_budget(results, 6)
    assert all(t["state"] == "COMPLETED" for t in trials)
    assert 1 <= len(slots_started(job.job_dir())) <= 2


def _executor_of(pid: int) -> int | None:
    """The DisAuto executor process above ``pid``."""
    while pid > 1:
        if b"disauto.executor" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return None


def test_a_killed_slot_executor_has_its_trial_retried(submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--slot-mode", "warm", "--trail-steps", "6",
                               "--parallelism", "2"), env={"RUNNER_SLEEP": "3"})
    deadline = time.monotonic() + 90
    executor = None
    while executor is None and time.monotonic() < deadline:
        runners = job.trial_processes(2)
        executor = next((e for pid in runners if (e := _executor_of(pid))), None)
        time.sleep(0.2)
    assert executor is not None, job.output
    os.kill(executor, signal.SIGKILL)
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    trials = check_budget(results, 6)
    assert all(t["state"] == "COMPLETED" for t in trials), job.output
    retried = trials[1]
    assert retried["task_id"] == "trial-0002.1", retried  # launched again under a new id
    assert len(slots_started(job.job_dir())) >= 3  # the dead slot was replaced


PRELOAD_RUNNER = '''
import os, time
from apprunner_sdk import get_params, report
p = get_params()
parent = open(f"/proc/{os.getppid()}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
print(f"parent {os.getppid()} {parent}", flush=True)
time.sleep(float(os.environ.get("RUNNER_SLEEP", "0")))
report(accuracy=1.0 - (float(p["x"]) - 0.3) ** 2, final=True)
'''


def _parents(job_dir: Path, budget: int) -> list[str]:
    """Each trial's parent process as the trial printed it (its stdout copy)."""
    out = []
    for number in range(1, budget + 1):
        text = (job_dir / "logs" / f"trial-{number:04d}.stdout").read_text()
        out.append(next(line for line in text.splitlines() if line.startswith("parent ")))
    return out


def test_preloaded_slots_fork_every_trial_from_one_interpreter_per_slot(
        submit: Any, workdir: Path) -> None:
    (workdir / "runner.py").write_text(PRELOAD_RUNNER)
    job = submit(*common_flags(workdir, "--slot-mode", "warm", "--slot-preload", "json,csv",
                               "--trail-steps", "10", "--parallelism", "2"))
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    trials = check_budget(results, 10)
    assert all(t["state"] == "COMPLETED" for t in trials)
    parents = _parents(job.job_dir(), 10)
    assert all("zygote.py" in p and p.endswith("apprunner_sdk json csv ") for p in parents), \
        parents
    interpreters = {p.split()[1] for p in parents}
    started = slots_started(job.job_dir())
    assert 1 <= len(interpreters) <= len(started) <= 3, (interpreters, started)


def _zygote_of_trial(number: int) -> int | None:
    """The pre-imported interpreter that forked trial ``number`` (its working directory is
    its own sandbox, ``tasks/trial-NNNN``; its environ shows the interpreter's)."""
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or not os.readlink(entry / "cwd").endswith(
                    f"/tasks/trial-{number:04d}"):
                continue
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if b"zygote.py" in Path(f"/proc/{parent}/cmdline").read_bytes():
                return parent
        except OSError:
            continue
    return None


def test_a_killed_preloaded_interpreter_has_its_trial_retried(submit: Any,
                                                               workdir: Path) -> None:
    (workdir / "runner.py").write_text(PRELOAD_RUNNER)
    job = submit(*common_flags(workdir, "--slot-mode", "warm", "--slot-preload", "json",
                               "--trail-steps", "6", "--parallelism", "2"),
                 env={"RUNNER_SLEEP": "3"})
    deadline = time.monotonic() + 90
    zygote = None
    while zygote is None and time.monotonic() < deadline:
        zygote = _zygote_of_trial(2)
        time.sleep(0.2)
    assert zygote is not None, job.output
    os.kill(zygote, signal.SIGKILL)
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    trials = check_budget(results, 6)
    assert all(t["state"] == "COMPLETED" for t in trials), job.output
    assert trials[1]["task_id"] == "trial-0002.1", trials[1]  # lost with its slot, run again
    assert len(slots_started(job.job_dir())) >= 2


# A quick trial as the issue's: top-level imports of a library, one that this Python lacks
# (its try falls back), and of the standard library.
DEFAULT_RUNNER = '''
import json, os
import numpy
try:
    import no_such_library_here
except ImportError:
    no_such_library_here = None
from apprunner_sdk import get_params, report
p = get_params()
parent = open(f"/proc/{os.getppid()}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
print(f"parent {os.getppid()} {parent}", flush=True)
report(accuracy=float(numpy.clip(1.0 - (float(p["x"]) - 0.3) ** 2, 0, 1)), final=True)
'''


def test_the_default_forks_a_python_scripts_trials_with_its_imports_preloaded(
        submit: Any, workdir: Path) -> None:
    """No --slot-mode: warm slots with --slot-preload auto, said in one start line; numpy is
    preloaded, the library this Python lacks is skipped with one line on each slot that tried
    (the trial falls back itself), and the job ends with every trial once and no hint."""
    (workdir / "runner.py").write_text(DEFAULT_RUNNER)
    job = submit(*common_flags(workdir, "--trail-steps", "8", "--parallelism", "2",
                               slot_mode=None))
    assert job.wait() == 0, job.output
    assert ("da-submit: slot mode warm, preload auto: numpy +1 (default: python script)"
            in job.lines), job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    trials = check_budget(results, 8)
    assert all(t["state"] == "COMPLETED" and not t["tries"] for t in trials), trials
    parents = _parents(job.job_dir(), 8)
    words = " apprunner_sdk ?numpy ?no_such_library_here --deny=" + ",".join(DENIED) + " "
    assert all("zygote.py" in p and p.endswith(words) for p in parents), parents
    slot_logs = [path.read_text() for path in (job.job_dir() / "logs").glob("*-slot-*.stderr")]
    said = [line for text in slot_logs for line in text.splitlines()
            if "--slot-preload auto: no_such_library_here is not preloaded" in line]
    assert said and all("ModuleNotFoundError" in line for line in said), slot_logs
    assert 1 <= len(said) <= len(slots_started(job.job_dir()))  # one line per interpreter
    assert "hint:" not in job.output


def test_a_task_mode_job_of_quick_trials_is_told_the_flag_that_helps(
        submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--trail-steps", "4", "--parallelism", "2"))
    assert job.wait() == 0, job.output
    assert "da-submit: slot mode task (--slot-mode task)" in job.lines, job.output
    hint = [line for line in job.lines if line.startswith("da-submit: hint:")]
    assert len(hint) == 1, job.output
    assert re.fullmatch(r"da-submit: hint: start-up [\d.]+ s, run [\d.]+ s \(medians\): "
                        r"drop --slot-mode task", hint[0]), hint  # the default is warm here
    assert len(hint[0]) <= 80
