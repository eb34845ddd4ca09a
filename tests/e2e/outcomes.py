"""One check of everything a job leaves behind, for every way a job ends.

``check_ended`` reads the record (``job.db``), ``results.json``, ``results.csv``, the copied
``--output``, the collected task logs and what ``da-submit`` printed, and checks that they agree
with each other trial by trial and with the exit code.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
import json
from pathlib import Path
import sqlite3
from typing import Any

from disauto.common.messages import cause_first
from tests.e2e.conftest import Job


TERMINAL = {"COMPLETED", "FAILED", "KILLED", "PRUNED", "TIMEOUT"}


@dataclass
class Ended:
    """What a finished job left, read back from its folder."""

    results: dict[str, Any]
    db_trials: dict[int, dict[str, Any]]
    meta: dict[str, str]
    csv_rows: list[dict[str, str]]
    job_dir: Path

    def states(self) -> dict[int, str]:
        return {n: t["state"] for n, t in self.db_trials.items()}


def read_record(job_dir: Path) -> tuple[dict[int, dict[str, Any]], dict[str, str]]:
    with sqlite3.connect(job_dir / "job.db") as db:
        db.row_factory = sqlite3.Row
        trials = {row["number"]: dict(row) for row in db.execute("SELECT * FROM trials")}
        meta = {row["key"]: row["value"] for row in db.execute("SELECT key, value FROM meta")}
    return trials, meta


def check_ended(job: Job, code: int, outcome: str, *, best: int | None,
                output: Path | None = None, logs: bool = True) -> Ended:
    """Check the exit code, the record, the results files, the output and the summary."""
    assert job.wait() == code, job.output
    job_dir = job.job_dir()
    results = json.loads((job_dir / "results.json").read_text())
    db_trials, meta = read_record(job_dir)
    with (job_dir / "results.csv").open() as handle:
        csv_rows = list(csv.DictReader(handle))
    ended = Ended(results, db_trials, meta, csv_rows, job_dir)
    # The outcome and the exit code, as recorded and as printed.
    assert results["outcome"] == meta["outcome"] == outcome, (results["outcome"], job.output)
    assert results["exit_status"] == code
    words = "error" if outcome == "UNSCHEDULABLE" else outcome.lower().replace("_", " ")
    # Printed cause first, wrapped to 80 columns and cut after three lines.
    said = " ".join(f"da-submit: {words}: {cause_first(results['message'])}".split())
    assert said[:120] in job.words, (said, job.output)
    assert "Traceback" not in job.output
    # Every trial has ended, and the three records agree trial by trial.
    assert set(ended.states().values()) <= TERMINAL, ended.states()
    by_number = {t["number"]: t for t in results["trials"]}
    assert sorted(by_number) == sorted(db_trials) == sorted(int(r["trial"]) for r in csv_rows)
    assert sorted(db_trials) == list(range(1, len(db_trials) + 1))  # numbers contiguous
    for row in csv_rows:
        number = int(row["trial"])
        assert row["state"] == by_number[number]["state"] == db_trials[number]["state"]
        if db_trials[number]["objective"] is not None:
            assert float(row["objective"]) == by_number[number]["objective"]
    assignments = [t["assignment"] for t in db_trials.values()]
    assert len(set(assignments)) == len(assignments)  # no assignment issued twice
    # The best trial: recorded, printed, and its output copied.
    if best is None:
        assert results["best"] is None
        if outcome != "UNSCHEDULABLE" and code != 130:  # stopping says why, not this
            assert "no trial produced a result" in job.output
    else:
        assert results["best"]["trial"] == best
        assert db_trials[best]["state"] == "COMPLETED"
        completed = [t for t in results["trials"] if t["state"] == "COMPLETED"]
        sign = 1 if results["direction"] == "maximize" else -1
        assert results["best"]["objective"] == max(sign * t["objective"] for t in completed) * sign
        assert f"best trial-{best:04d}: " in job.output
        if output is not None:
            copied = output / "model"
            assert copied.read_bytes() == (output / f"trial-{best:04d}" / "model").read_bytes()
            assert meta.get("best_output") == str(copied)
    # Each task that ran had its output collected into the job folder.
    if logs:
        for number, trial in db_trials.items():
            if trial["started_at"] is not None:
                assert (job_dir / "logs" / f"{trial['task_id']}.stdout").exists(), number
    return ended
