"""The importance worker: a real ``python -m disauto.framework.webui.importance_worker`` process
ranks a job's parameters as the framework's own process does, without loading scikit-learn or
SciPy (whose import was most of every job's CPU on the 2-core machine)."""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys

import pytest

from disauto.common.space import CategoricalParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.framework.webui import importance_worker
from disauto.framework.webui import views
from disauto.framework.webui.importance import importances


pytestmark = pytest.mark.integration

SPACE = SearchSpace((RealParam("lr", 0.001, 0.1), CategoricalParam("kernel", ("rbf", "poly"))))
COMPLETED = [({"lr": 0.001 + 0.01 * i, "kernel": "rbf" if i % 2 else "poly"}, 0.5 + i / 20)
             for i in range(8)]


def test_the_worker_ranks_as_this_process_does_without_scikit_learn_or_scipy() -> None:
    worker = subprocess.Popen(
        [sys.executable, "-m", importance_worker.__name__], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True)
    assert worker.stdin is not None and worker.stdout is not None
    try:
        worker.stdin.write(importance_worker.request_line(SPACE, COMPLETED, True, ()) + "\n")
        worker.stdin.flush()
        answer = json.loads(worker.stdout.readline())
        loaded = Path(f"/proc/{worker.pid}/maps").read_text()
    finally:
        worker.stdin.close()
        assert worker.wait(30) == 0
    here = importances(SPACE, COMPLETED, True)
    assert answer["basis"] == here["basis"] and list(answer["values"]) == list(here["values"])
    assert answer["values"] == pytest.approx(here["values"])  # the last bit may differ
    assert set(answer["values"]) == {"lr", "kernel"}, answer
    # Their compiled extensions would be mapped into the worker had it imported them.
    assert "/sklearn/" not in loaded and "/scipy/" not in loaded


def test_trials_too_few_to_rank_start_no_worker(tmp_path: Path) -> None:
    started = tmp_path / "started"
    # A stand-in worker that says it started and answers nothing: the caller computes itself.
    worker = importance_worker.ImportanceWorker(
        [sys.executable, "-c", f"open({str(started)!r}, 'w')"])
    try:
        assert "note" in worker.compute(SPACE, COMPLETED[:3], True)
        assert not started.exists()  # 3 trials: the note needs no Optuna, no process
        assert set(worker.compute(SPACE, COMPLETED, True)["values"]) == {"lr", "kernel"}
        assert started.exists()
    finally:
        worker.stop()


def test_the_worker_ends_when_the_last_job_of_the_process_that_asked_for_it_ends() -> None:
    """Two jobs of one process (a notebook's) share the worker: the first to end keeps it for
    the other, the last ends it and its process, and importance is computed here again."""
    views.compute_importance_in_worker()
    views.compute_importance_in_worker()
    worker = views._WORKER  # noqa: SLF001 - the module's worker, read to check its life
    assert worker is not None
    assert set(worker.compute(SPACE, COMPLETED, True)["values"]) == {"lr", "kernel"}
    process = worker._process  # noqa: SLF001 - its process, to see it end
    views.stop_importance_worker()
    assert views._WORKER is worker  # noqa: SLF001 - the other job still uses it
    views.stop_importance_worker()
    assert views._WORKER is None  # noqa: SLF001
    assert process is not None and process.wait(30) is not None  # it ended
    views.stop_importance_worker()  # one stop too many changes nothing
    assert views._WORKER is None  # noqa: SLF001
