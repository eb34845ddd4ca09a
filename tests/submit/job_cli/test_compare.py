"""``da-job compare``: jobs side by side in an 80-column terminal (real jobs of the embedded
cluster, one of two objectives, checked against their records), letters where the ids do not
fit, a second table where the jobs do not; every bad input one line."""

from __future__ import annotations

from collections.abc import Callable
import json
from pathlib import Path
import re
import statistics

import pytest

from disauto.framework import _meta as meta
from disauto.submit.api.record import load_job
from disauto.submit.job_cli import compare
from disauto.submit.jobs import find
from tests.framework.webui.records import ParetoRecorded
from tests.submit.job_cli.conftest import DaJob
from tests.submit.job_cli.conftest import RealJobs
from tests.submit.job_cli.records import JobRecord


REAL_JOBS = (("--app-name", "one", "--trail-steps", "4", "--seed", "4"),
             ("--app-name", "two", "--trail-steps", "4", "--seed", "9",
              "--objective", "accuracy,loss", "--direction", "maximize,minimize"))


def cells(out: str, label: str) -> list[str]:
    """The cells of the rows ``label`` (two spaces or more apart), of every table."""
    found = []
    for line in out.splitlines():
        parts = re.split(r"\s{2,}", line.strip())
        if parts[0] == label:
            found += parts[1:]
    return found


@pytest.mark.integration
@pytest.mark.slow  # real jobs on the embedded cluster
def test_two_real_jobs_side_by_side_as_their_records_say(
        real_jobs: RealJobs, da_job: DaJob, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = real_jobs.ids
    monkeypatch.setenv("DISAUTO_HOME", str(real_jobs.home))
    code, out, err = da_job("compare", one, two)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    assert lines[0].split() == [one, two]  # the ids fit: no letters
    assert cells(out, "state") == ["ended (budget spent)"] * 2
    assert cells(out, "objective") == ["accuracy (max)", "accuracy (max), loss (min)"]
    assert cells(out, "trials") == ["4/4", "4/4"] and cells(out, "completed") == ["4", "4"]
    first, second = load_job(one), load_job(two)
    assert first.best is not None
    assert cells(out, "best") == [f"{first.best.objective:.6g} (#{first.best.number})",
                                  "(front below)"]
    front = second.pareto_front
    assert cells(out, "front")[-1] == f"{len(front)} trial{'' if len(front) == 1 else 's'}"
    top = max(front, key=lambda t: t.values[0])  # type: ignore[index]
    assert cells(out, "best accuracy")[-1] == f"{top.values[0]:.6g} (#{top.number})"  # type: ignore[index]
    low = min(front, key=lambda t: t.values[1])  # type: ignore[index]
    assert cells(out, "best loss")[-1] == f"{low.values[1]:.6g} (#{low.number})"  # type: ignore[index]
    assert lines[-1] == "Their best so far by trial number: da-job ui (tick them on its index)."

    code, out, _ = da_job("compare", one, two, "--json")
    facts = {f["job_id"]: f for f in json.loads(out)}
    took = [t.ended_at - t.started_at for t in first.trials]  # type: ignore[operator]
    assert facts[one]["trial_seconds"] == {"count": 4, "median": pytest.approx(
        statistics.median(took)), "total": pytest.approx(sum(took))}
    assert facts[one]["best"] == {"trial": first.best.number, "objective": first.best.objective}
    assert [r["trial"] for r in facts[two]["front"]] == [t.number for t in front]
    assert facts[two]["best"] is None and facts[one]["front"] is None
    assert facts[one]["duration_seconds"] == round(find(one).duration(), 1)


def test_ids_too_long_get_letters_and_jobs_that_do_not_fit_a_second_table(
        da_job: DaJob, job_record: Callable[..., JobRecord], home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    names = [f"a-rather-long-job-name-{i}-20261128-053307-2967" for i in range(5)]
    for i, name in enumerate(names):
        job_record(name, state="ended", completed=2 + i)
    code, out, err = da_job("compare", *names)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    assert lines[:5] == [f"{letter}  {name}" for letter, name in zip("ABCDE", names,
                                                                      strict=True)]
    # Four columns of 12 at least fit 80 beside the labels: the fifth job in a table of its own.
    assert [line.split() for line in lines if line.startswith("   ")] == [
        ["A", "B", "C", "D"], ["E"]]
    # Recorded's best is 0.6 whatever the count; the first to reach it (the fewest trials).
    assert cells(out, "best") == ["0.6 (#2) *", "0.6 (#3)", "0.6 (#4)", "0.6 (#5)", "0.6 (#6)"]
    assert "* the best of these jobs" in lines

    monkeypatch.setenv("COLUMNS", "50")
    code, out, _ = da_job("compare", *names[:3])
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 50, out
    assert [line.split() for line in lines if line.startswith("   ")] == [["A", "B"], ["C"]]


def test_a_job_of_several_objectives_shows_its_front(
        da_job: DaJob, job_record: Callable[..., JobRecord], home: Path) -> None:
    job_record("job-a", state="ended")
    ParetoRecorded(home / "jobs" / "job-p", state=meta.ENDED)
    code, out, _ = da_job("compare", "job-a", "job-p")
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    assert cells(out, "best") == ["0.6 (#5)", "(front below)"]  # no * for one alone
    assert cells(out, "front") == ["4 trials"]
    assert cells(out, "best accuracy") == ["0.9 (#4)"]
    assert cells(out, "best latency") == ["10 (#1)"]
    assert cells(out, "failed") == ["1", "1"] and cells(out, "running") == ["1", "1"]
    assert "* the best" not in out


def test_bad_inputs_are_one_line(da_job: DaJob, job_record: Callable[..., JobRecord],
                                 home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job_record("job-a", state="ended")
    job_record("job-b", state="running")
    job_record("job-c", state="ended")
    assert da_job("compare", "job-a") == (
        2, "", "da-job: error: compare needs two jobs or more (got 1: job-a)\n")
    assert da_job("compare", "job-a", "job-a") == (
        2, "", "da-job: error: compare needs two jobs or more (got 1: job-a)\n")
    assert da_job("compare", "job-a", "nothing")[2] == (
        f"da-job: error: no job 'nothing' under {home}/jobs (da-job list shows them)\n")
    assert da_job("compare")[2] == ("da-job: error: the following arguments are required: "
                                    "JOB\n")
    monkeypatch.setattr(compare, "MOST", 2)
    assert da_job("compare", "job-a", "job-b", "job-c") == (
        2, "", "da-job: error: compare takes 2 jobs at most (got 3)\n")
    monkeypatch.undo()
    monkeypatch.setenv("DISAUTO_HOME", str(home))
    code, out, _ = da_job("compare", "job-a", "job-b")  # a running job compares as it stands
    assert code == 0 and cells(out, "state") == ["ended (budget spent)", "running"]
