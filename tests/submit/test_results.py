"""The results people see: the progress line, the table, results.json and results.csv."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from disauto.common.objectives import Objectives
from disauto.framework._job import Progress
from disauto.framework._job import sorted_trials
from disauto.framework._job.pace import Pace
from disauto.framework._meta import JobMeta
from disauto.framework._store import TrialRow
from disauto.protos import framework_pb2
from disauto.submit import fit
from disauto.submit import results
from disauto.submit.exit_status import ExitStatus
from disauto.submit.exit_status import for_outcome
from disauto.testing.inprocess import job_config


def row(number: int, state: str, objective: float | None = None, **extra: object) -> TrialRow:
    return TrialRow(number=number, assignment={"lr": 0.01 * number, "act": "relu"},
                    state=state, objective=objective,
                    metrics={"accuracy": objective} if objective is not None else {},
                    training_seconds=1.25 * number, task_id=f"trial-{number:04d}",
                    **extra)  # type: ignore[arg-type]


TRIALS = [
    row(1, "COMPLETED", 0.80),
    row(2, "FAILED", message="TASK_FAILED: exit 1"),
    row(3, "COMPLETED", 0.95),
    row(4, "KILLED", 0.99),  # an intermediate value, but it never completed
    row(5, "COMPLETED", 0.60),
    row(6, "RUNNING"),
    row(7, "COMPLETED", 0.80),
]


def numbers(trials: list[TrialRow]) -> list[int]:
    return [t.number for t in trials]


@pytest.mark.parametrize("maximize, expected", [
    (True, [3, 1, 7, 5, 2, 4, 6]),
    (False, [5, 1, 7, 3, 2, 4, 6]),
])
def test_best_first_then_the_rest_by_number(maximize: bool, expected: list[int]) -> None:
    assert numbers(sorted_trials(TRIALS, maximize)) == expected


def test_table_is_best_first_and_aligned() -> None:
    text = results.table(TRIALS, "accuracy", maximize=True)
    lines = text.splitlines()
    assert lines[0].split() == ["trial", "state", "accuracy", "lr", "act", "time(s)"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    body = [line.split() for line in lines[2:]]
    assert [cells[0] for cells in body] == [f"trial-{n:04d}" for n in (3, 1, 7, 5, 2, 4, 6)]
    assert body[0] == ["trial-0003", "COMPLETED", "0.95", "0.03", "relu", "3.8"]
    assert body[4] == ["trial-0002", "FAILED", "-", "0.02", "relu", "2.5"]
    # Columns line up: every row starts its third column at the header's.
    column = lines[0].index("accuracy")
    assert all(line[column - 2:column] == "  " and line[column] != " " for line in lines[2:])

    minimized = results.table(TRIALS, "loss", maximize=False).splitlines()
    assert minimized[0].split()[2] == "loss"
    assert minimized[2].startswith("trial-0005")


def test_table_limit_points_to_the_csv() -> None:
    lines = results.table(TRIALS, "accuracy", maximize=True, limit=3).splitlines()
    assert len(lines) == 2 + 3 + 1
    assert lines[-1] == "... 4 more in results.csv"


def facts(trials: list[TrialRow], **recorded: str) -> results.JobFacts:
    return results.JobFacts(job_config(job_id="job-1"), JobMeta(recorded), trials, "ended", 0)


def test_written_results(tmp_path: Path) -> None:
    json_path, csv_path = results.write(tmp_path, facts(TRIALS, outcome="BUDGET_SPENT"))
    assert (json_path, csv_path) == (tmp_path / "results.json", tmp_path / "results.csv")

    data = json.loads(json_path.read_text())
    assert (data["job_id"], data["outcome"], data["exit_status"]) == ("job-1", "BUDGET_SPENT", 0)
    assert data["best"] == {"trial": 3, "objective": 0.95, "assignment": {"lr": 0.03,
                                                                          "act": "relu"}}
    assert [t["number"] for t in data["trials"]] == [3, 1, 7, 5, 2, 4, 6]
    assert data["trials"][0] == {
        "number": 3, "state": "COMPLETED", "objective": 0.95,
        "assignment": {"lr": 0.03, "act": "relu"}, "metrics": {"accuracy": 0.95},
        "training_seconds": 3.75, "task_id": "trial-0003", "message": "",
        "usage": {"peak_rss_bytes": None, "mean_rss_bytes": None, "cpu_seconds": None,
                  "mean_gpu_utilization": None, "peak_gpu_memory_bytes": None},
        "constraints": None, "feasible": True, "tries": [], "resumed_from": None,
        "parent": None, "from_step": None, "explored": None}
    assert data["trials"][4]["message"] == "TASK_FAILED: exit 1"
    assert data["trials"][4]["objective"] is None

    with csv_path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["trial", "state", "objective", "lr", "act", "metric:accuracy",
                       "training_seconds", "message", "peak_rss_mb", "cpu_seconds",
                       "mean_gpu_utilization", "peak_gpu_memory_mb"]
    assert [r[0] for r in rows[1:]] == ["3", "1", "7", "5", "2", "4", "6"]
    assert rows[1] == ["3", "COMPLETED", "0.95", "0.03", "relu", "0.95", "3.75", "", "", "", "",
                       ""]
    assert rows[5] == ["2", "FAILED", "", "0.02", "relu", "", "2.5", "TASK_FAILED: exit 1",
                       "", "", "", ""]


def test_progress_line() -> None:
    progress = Progress(done=3, running=2, pending=1, failed=1, best=TRIALS[2], submitted=7,
                        budget=20, elapsed=125.7, parallelism=3)
    assert results.progress_line(progress, "accuracy", width=120) == (
        "[02:05] trials 3/20 done, 2 running (parallelism 3), 1 pending, 1 failed | best "
        "accuracy=0.95 (trial-0003)")
    assert results.progress_line(progress, "accuracy", width=90) == (
        "[02:05] trials 3/20 done, 2 running (parallelism 3), 1 pending, 1 failed | best 0.95 "
        "(#3)")
    assert results.progress_line(progress, "accuracy", width=80) == (
        "[02:05] trials 3/20 done, 2 running, 1 pending, 1 failed | best 0.95 (#3)")
    assert results.progress_line(progress, "accuracy", width=60) == (
        "[02:05] 3/20 done, 2 running, 1 failed | best 0.95 (#3)")
    assert results.progress_line(progress, "accuracy", width=45) == (
        "[02:05] trials 3/20 done, 2 running, 1 failed")
    assert results.progress_line(progress, "accuracy", width=40) == (
        "[02:05] 3/20 done, 2 running, 1 failed")
    # A parallelism changed by da-job update shows before the best's long wording.
    updated = Progress(done=2, running=2, pending=0, failed=0, best=TRIALS[0], submitted=4,
                       budget=8, elapsed=5.0, parallelism=2)
    assert results.progress_line(updated, "accuracy", width=80) == (
        "[00:05] trials 2/8 done, 2 running (parallelism 2) | best accuracy=0.8 (#1)")
    nothing = Progress(done=0, running=0, pending=0, failed=0, best=None, submitted=0,
                       budget=5, elapsed=0.4)
    assert results.progress_line(nothing, "accuracy", width=80) == (
        "[00:00] trials 0/5 done, 0 running, 0 pending, 0 failed")
    assert results.progress_line(nothing, "accuracy", width=40) == (
        "[00:00] trials 0/5 done, 0 running")


def test_the_progress_line_of_several_objectives_names_the_front_not_a_best() -> None:
    progress = Progress(done=12, running=2, pending=0, failed=0, best=TRIALS[2], submitted=14,
                        budget=20, elapsed=65.0, parallelism=2, front=4)
    assert results.progress_line(progress, "accuracy", width=80) == (
        "[01:05] trials 12/20 done, 2 running (parallelism 2), 0 failed | front 4 trials")
    assert results.progress_line(progress, "accuracy", width=56) == (
        "[01:05] trials 12/20 done, 2 running | front 4 trials")
    assert results.progress_line(progress, "accuracy", width=48) == (
        "[01:05] trials 12/20 done, 2 running | front 4")
    assert results.progress_line(progress, "accuracy", width=40) == (
        "[01:05] 12/20 done, 2 running | front 4")
    one = Progress(done=1, running=0, pending=0, failed=0, best=TRIALS[2], submitted=1,
                   budget=20, elapsed=65.0, front=1)
    assert results.progress_line(one, "accuracy", width=80).endswith("| front 1 trial")
    none_yet = Progress(done=0, running=1, pending=0, failed=0, best=None, submitted=1,
                        budget=20, elapsed=65.0, front=0)
    assert "front" not in results.progress_line(none_yet, "accuracy", width=80)


def test_a_long_progress_line_fits_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    best = row(1234, "COMPLETED", 0.987654321)
    progress = Progress(done=1234, running=16, pending=3, failed=12, best=best,
                        submitted=1265, budget=5000, elapsed=3725.0, waiting=40.0,
                        parallelism=16)
    line = results.progress_line(progress, "validation_accuracy", "cpus=4, mem=5120 MB")
    assert line == ("[62:05] 1234/5000 done, 16 running, 3 pending, 12 failed | best 0.987654 "
                    "(#1234)")
    away = results.progress_line(progress, "validation_accuracy", "cpus=4, mem=5120 MB",
                                 "the Mesos master is away since 10:02:03; retrying, the job "
                                 "stops after 10m without it")
    assert away == ("[62:05] 1234/5000 done, 16 running, 12 failed | the Mesos master is away "
                    "since …")


def test_the_progress_line_shows_the_rate_and_eta_within_80_columns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    pace = Pace(per_minute=2.4, eta=750.0, trial_seconds=90.0)
    progress = Progress(done=3, running=2, pending=1, failed=1, best=TRIALS[2], submitted=7,
                        budget=20, elapsed=125.7, parallelism=3, pace=pace)
    assert results.progress_line(progress, "accuracy", width=160) == (
        "[02:05] trials 3/20 done, 2 running (parallelism 3), 1 pending, 1 failed | best "
        "accuracy=0.95 (trial-0003) | 2.4 trials/min, ETA 12m30s")
    assert results.progress_line(progress, "accuracy", width=100) == (
        "[02:05] trials 3/20 done, 2 running, 1 pending, 1 failed | best 0.95 (#3) | "
        "2.4/min, ETA 12m30s")
    # At 80 columns (the default) the best and the rate take their short forms first.
    assert results.progress_line(progress, "accuracy") == (
        "[02:05] 3/20 done, 2 running, 1 pending, 1 failed | best 0.95 (#3) | ETA 12m30s")
    # Narrower, the best goes before the ETA, and the ETA before the counts.
    assert results.progress_line(progress, "accuracy", width=60) == (
        "[02:05] trials 3/20 done, 2 running, 1 failed | ETA 12m30s")
    assert results.progress_line(progress, "accuracy", width=45) == (
        "[02:05] trials 3/20 done, 2 running, 1 failed")
    # A long job: the ETA stays where the best gives way.
    best = row(1234, "COMPLETED", 0.987654321)
    big = Progress(done=1234, running=16, pending=3, failed=12, best=best, submitted=1265,
                   budget=5000, elapsed=3725.0, waiting=40.0, parallelism=16,
                   pace=Pace(per_minute=13.5, eta=16_700.0, trial_seconds=70.0))
    assert results.progress_line(big, "validation_accuracy", "cpus=4, mem=5120 MB") == (
        "[62:05] trials 1234/5000 done, 16 running, 3 pending, 12 failed | ETA 4h38m20s")
    # A deadline's note in its forms: its shortest beside the ETA (its longest displaced the
    # ETA, issue 36), its longer ones where they change nothing else.
    deadline = ("deadline 2026-11-24 18:00:00 on track (predicted 17:31:02)",
                "deadline on track (predicted 17:31:02)", "deadline on track")
    assert results.progress_line(big, "validation_accuracy", "cpus=4, mem=5120 MB",
                                 deadline) == (
        "[62:05] 1234/5000 done, 16 running, 12 failed | ETA 4h38m20s | deadline on track")
    assert results.progress_line(big, "validation_accuracy", "cpus=4, mem=5120 MB", deadline,
                                 width=250).endswith(
        " | 13.5 trials/min, ETA 4h38m20s | a trial waits since [61:25] | deadline on track "
        "(predicted 17:31:02)")
    assert results.progress_line(progress, "accuracy", "", deadline) == (
        "[02:05] trials 3/20 done, 2 running, 1 failed | ETA 12m30s | deadline on track")
    # A note of one form (the master is away) takes the room it needs.
    noted = results.progress_line(big, "validation_accuracy", "cpus=4, mem=5120 MB",
                                  deadline[0])
    assert len(noted) == 80 and "ETA" not in noted and "| deadline 2026-11-24" in noted
    # Before a trial has ended there is no ETA to give: a dash.
    young = Progress(done=0, running=2, pending=0, failed=0, best=None, submitted=2,
                     budget=20, elapsed=30.0, parallelism=2, pace=Pace())
    assert results.progress_line(young, "accuracy") == (
        "[00:30] trials 0/20 done, 2 running (parallelism 2), 0 pending, 0 failed | ETA —")


def test_progress_line_says_when_a_trial_waits_for_resources() -> None:
    def line(waiting: float, elapsed: float, width: int = 200) -> str:
        progress = Progress(done=1, running=1, pending=1, failed=0, best=None, submitted=3,
                            budget=9, elapsed=elapsed, waiting=waiting)
        return results.progress_line(progress, "accuracy", "cpus=3, mem=5120 MB", width=width)

    assert "waits" not in line(waiting=5.0, elapsed=60.0)  # a moment in the queue is normal
    assert line(waiting=12.0, elapsed=70.0) == (
        "[01:10] trials 1/9 done, 1 running, 1 pending, 0 failed | a trial waits for free "
        "resources since [00:58] (cpus=3, mem=5120 MB per trial): the cluster is busy")
    assert line(waiting=12.0, elapsed=70.0, width=80) == (
        "[01:10] trials 1/9 done, 1 running, 1 pending | a trial waits since [00:58]")
    # The note does not change while the same trial waits (a line per change off a terminal).
    assert line(12.0, 70.0).split("] ", 1)[1] == line(42.0, 100.0).split("] ", 1)[1]


@pytest.mark.parametrize("outcome, status", [
    (framework_pb2.BUDGET_SPENT, ExitStatus.SUCCESS),
    (framework_pb2.TARGET_REACHED, ExitStatus.SUCCESS),
    (framework_pb2.SPACE_EXHAUSTED, ExitStatus.SUCCESS),
    (framework_pb2.TIME_LIMIT_REACHED, ExitStatus.SUCCESS),
    (framework_pb2.UNSCHEDULABLE, ExitStatus.USAGE),
    (framework_pb2.TOO_MANY_FAILURES, ExitStatus.TOO_MANY_FAILURES),
    (framework_pb2.STOPPED, ExitStatus.STOPPED),
    (framework_pb2.ERROR, ExitStatus.ERROR),
    (framework_pb2.FRAMEWORK_LOST, ExitStatus.FRAMEWORK_LOST),
    (framework_pb2.JOB_OUTCOME_UNSPECIFIED, ExitStatus.ERROR),
])
def test_exit_status_for_each_outcome(outcome: int, status: ExitStatus) -> None:
    assert for_outcome(outcome) is status


def test_exit_codes_are_distinct_and_conventional() -> None:
    assert len({int(s) for s in ExitStatus}) == len(ExitStatus)
    assert (ExitStatus.SUCCESS, ExitStatus.ERROR, ExitStatus.USAGE, ExitStatus.CTRL_C) == (
        0, 1, 2, 130)


def test_parameters_follow_the_parameter_files_order(tmp_path: Path) -> None:
    # Assignments come back from the store with sorted keys; the file's order (lr, act) wins
    # and parameters it does not name follow.
    trials = [TrialRow(number=1, assignment={"act": "relu", "lr": 0.1, "zeta": 1},
                       state="COMPLETED", objective=0.5)]
    header = results.table(trials, "accuracy", maximize=True,
                           param_order=("lr", "act")).splitlines()[0].split()
    assert header == ["trial", "state", "accuracy", "lr", "act", "zeta", "time(s)"]
    _, csv_path = results.write(tmp_path, facts(trials), param_order=("lr", "act"))
    with csv_path.open(newline="") as handle:
        assert next(csv.reader(handle))[3:6] == ["lr", "act", "zeta"]


def test_a_trial_killed_by_its_memory_limit_makes_the_suggestion_exceed_the_limit() -> None:
    from disauto.common.telemetry import TrialUsage

    mb = 1 << 20
    trials = [row(1, "COMPLETED", 0.5, usage=TrialUsage(peak_rss_bytes=40 * mb)),
              row(2, "FAILED", usage=TrialUsage(peak_rss_bytes=17 * mb),
                  message="TASK_FAILED REASON_CONTAINER_LIMITATION_MEMORY: Memory limit "
                          "exceeded; measured peak 17 MB of the 64 MB limit")]
    usage = results.usage_summary(trials, 64)
    assert usage["memory_killed_trials"] == [2]
    assert usage["suggested_app_runner_memory_mb"] == 192  # 1.2 x (2 x 64 MB), to 64 MB
    (_, advice) = results.usage_lines(trials, 64)
    assert advice.startswith("trial-0002 killed by the 64M memory limit needed more: "
                             "--app-runner-memory 192M at least")
    # Without a kill the suggestion fits the measured peaks as before.
    assert results.usage_summary(trials[:1], 64)["suggested_app_runner_memory_mb"] == 64


def test_gpu_figures_are_summarised_only_where_measured() -> None:
    from disauto.common.telemetry import TrialUsage

    mb = 1 << 20
    trials = [row(1, "COMPLETED", 0.5, usage=TrialUsage(mean_gpu_utilization=40.0,
                                                          peak_gpu_memory_bytes=1024 * mb)),
              row(2, "COMPLETED", 0.6, usage=TrialUsage(mean_gpu_utilization=61.0,
                                                          peak_gpu_memory_bytes=2048 * mb)),
              row(3, "COMPLETED", 0.7)]
    usage = results.usage_summary(trials)
    assert (usage["mean_gpu_utilization"], usage["gpu_trials"]) == (50.5, 2)
    assert (usage["largest_peak_gpu_memory_bytes"], usage["largest_peak_gpu_memory_trial"]) \
        == (2048 * mb, 2)
    assert results.usage_lines(trials) == [
        "GPU 50 % busy on average (2 trials), largest GPU memory 2048 MB (trial-0002)"]
    nothing = results.usage_summary(trials[2:])
    assert nothing["mean_gpu_utilization"] is None and nothing["gpu_trials"] == 0
    assert nothing["largest_peak_gpu_memory_bytes"] is None
    assert results.usage_lines(trials[2:]) == []


# --- several objectives and constraints ---------------------------------------------------------

TWO = Objectives(("accuracy", "latency"), ("maximize", "minimize"))


def pair(number: int, state: str, accuracy: float | None, latency: float | None,
         constraints: tuple[float, ...] | None = None) -> TrialRow:
    metrics = {k: v for k, v in (("accuracy", accuracy), ("latency", latency)) if v is not None}
    return TrialRow(number=number, assignment={"lr": 0.01 * number}, state=state,
                    objective=accuracy if latency is not None else None, metrics=metrics,
                    constraints=constraints)  # type: ignore[arg-type]


PAIRS = [
    pair(1, "COMPLETED", 0.90, 5.0),
    pair(2, "COMPLETED", 0.80, 3.0),
    pair(3, "COMPLETED", 0.70, 4.0),  # dominated by 2
    pair(4, "COMPLETED", 0.99, 1.0, (0.5,)),  # would dominate all, but infeasible
    pair(5, "FAILED", 0.95, None),
    pair(6, "COMPLETED", 0.85, 2.0, (-1.0,)),
]


def test_search_keys_name_the_front_and_the_infeasible_trials() -> None:
    assert results.search_keys(PAIRS, TWO) == {
        "objectives": ["accuracy", "latency"], "directions": ["maximize", "minimize"],
        "pareto_front": [1, 6], "infeasible_trials": [4]}
    one = Objectives(("accuracy",), ("maximize",))
    assert results.search_keys(PAIRS, one)["pareto_front"] == [1]  # 0.99 is infeasible


def test_the_table_shows_every_objective_and_the_front_first() -> None:
    lines = results.table(PAIRS, "accuracy", True, objectives=TWO).splitlines()
    assert lines[0].split() == ["trial", "state", "note", "accuracy", "latency", "lr", "time(s)"]
    body = [line.split() for line in lines[2:]]
    assert [cells[0] for cells in body[:2]] == ["trial-0001", "trial-0006"]
    assert body[0][2:5] == ["front", "0.9", "5"]
    notes = {cells[0]: cells[2] for cells in body}
    assert notes["trial-0004"] == "infeasible" and notes["trial-0003"] == "-"
    assert {cells[0]: cells[4] for cells in body}["trial-0005"] == "-"


def test_an_infeasible_trial_is_marked_without_the_objectives_too() -> None:
    lines = results.table(PAIRS, "accuracy", True).splitlines()
    assert lines[0].split()[:4] == ["trial", "state", "note", "accuracy"]
    body = [line.split() for line in lines[2:]]
    assert body[0][0] == "trial-0001"  # 0.99 is infeasible: ranked after the feasible ones
    assert {cells[0]: cells[2] for cells in body}["trial-0004"] == "infeasible"


def test_the_csv_and_json_carry_feasibility_and_the_front(tmp_path: Path) -> None:
    config = job_config(job_id="job-1")
    TWO.write_to(config.search)
    json_path, csv_path = results.write(tmp_path,
                                        results.JobFacts(config, JobMeta(), PAIRS, "ended"))
    with csv_path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["trial"] for r in rows[:2]] == ["1", "6"]
    by_number = {r["trial"]: r for r in rows}
    assert by_number["4"]["feasible"] == "0" and by_number["4"]["constraints"] == "[0.5]"
    assert by_number["6"]["feasible"] == "1" and by_number["3"]["constraints"] == ""
    assert [r["trial"] for r in rows if r["pareto_front"] == "1"] == ["1", "6"]
    data = json.loads(json_path.read_text())
    assert data["pareto_front"] == [1, 6]
    trials = {t["number"]: t for t in data["trials"]}
    assert trials[4]["feasible"] is False and trials[4]["constraints"] == [0.5]
    assert [t["number"] for t in data["trials"]][:2] == [1, 6]  # the front first, as the CSV


def test_a_job_without_constraints_keeps_its_csv_columns(tmp_path: Path) -> None:
    _, csv_path = results.write(tmp_path, facts(TRIALS))
    header = csv_path.read_text().splitlines()[0]
    assert "feasible" not in header and "pareto_front" not in header


def test_the_summary_lines_name_the_front_and_the_infeasible_trials() -> None:
    lines = results.search_lines(results.search_keys(PAIRS, TWO), TWO)
    assert lines == [
        "Pareto front of accuracy (maximize), latency (minimize): trial-0001,",
        "  trial-0006",
        "infeasible (a constraint above 0): trial-0004"]
    one = Objectives(("accuracy",), ("maximize",))
    assert results.search_lines(results.search_keys(TRIALS, one), one) == []
    many = {"pareto_front": list(range(1, 12)), "infeasible_trials": []}
    wrapped = results.search_lines(many, TWO)
    assert " ".join(wrapped).endswith("trial-0008 ... (11 in all)")
    assert all(len("da-submit: " + line) <= 80 for line in wrapped)
class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_live_line_stays_one_column_short_of_the_terminal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from disauto.submit.run import _ProgressPrinter

    monkeypatch.setenv("COLUMNS", "80")
    terminal = _Terminal()
    show = _ProgressPrinter(terminal, "validation_accuracy", quiet=False, wants="cpus=4")
    for done in (1, 2, 1234):
        show(Progress(done=done, running=16, pending=3, failed=12,
                      best=row(7, "COMPLETED", 0.9), submitted=1265, budget=5000,
                      elapsed=3725.0, waiting=40.0, parallelism=16))
    show.done()
    written = terminal.getvalue()
    assert written.endswith("\n") and written.count("\r") == 3
    assert max(len(line.rstrip("\n")) for line in written.split("\r")) == 79


def test_a_write_that_fails_leaves_the_earlier_results_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    json_path, csv_path = results.write(tmp_path, facts(TRIALS, outcome="BUDGET_SPENT"))
    before = json_path.read_bytes(), csv_path.read_bytes()

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(results, "write_csv", full)  # results.json is replaced, then the disk
    later = facts(TRIALS[:2], outcome="BUDGET_SPENT")   # fills before results.csv is whole
    with pytest.raises(OSError, match="No space left"):
        results.write(tmp_path, later)
    assert csv_path.read_bytes() == before[1]  # the earlier file, whole
    assert json.loads(json_path.read_text())["job_id"] == "job-1"  # whole, never empty
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv", "results.json"]


def test_the_summary_lines_leave_the_front_to_the_caller_when_asked() -> None:
    lines = results.search_lines(results.search_keys(PAIRS, TWO), TWO, front=False)
    assert lines == ["infeasible (a constraint above 0): trial-0004"]


# --- the table fits the terminal (issue 36, item 6) ---------------------------------------------

def wide_trials() -> list[TrialRow]:
    """Trials with many parameters, long names and learning rates that differ in the third
    significant digit."""
    names = [f"regularization_strength_{k}" for k in range(5)]
    return [TrialRow(number=n, state="COMPLETED", objective=0.9 - 0.01 * n,
                     assignment={"learning_rate": lr, "optimizer": "adam_with_weight_decay",
                                 **{name: 0.123456 * (n + k) for k, name in enumerate(names)}},
                     training_seconds=12.5)
            for n, lr in ((1, 0.00612), (2, 0.00618), (3, 0.0061234))]


@pytest.mark.parametrize("width", [80, 260])
def test_the_end_of_job_table_fits_and_tells_learning_rates_apart(width: int) -> None:
    lines = results.table(wide_trials(), "accuracy", True, param_order=("learning_rate",),
                          width=width).splitlines()
    assert max(len(line) for line in lines) <= width, "\n".join(lines)
    cut = [cell for line in lines[2:5] for cell in line.split() if "…" in cell]
    assert all(cell.startswith("adam") for cell in cut), cut  # text may be cut, no number
    rates = {line.split()[0]: line.split()[3] for line in lines[2:5]}
    assert rates == {"trial-0001": "0.00612", "trial-0002": "0.00618",
                     "trial-0003": "0.006123"}
    if width == 80:  # the rightmost parameters and the time are left out, and said so
        assert lines[0].split()[:4] == ["trial", "state", "accuracy", "learning_rate"]
        assert "time(s)" not in lines[0]
        note = " ".join(lines[5:])
        assert note == "(6 columns left out at 80 columns: results.csv shows all)"
    else:
        assert lines[0].split()[-1] == "time(s)" and len(lines) == 5


def test_a_left_out_line_names_the_columns_where_they_fit() -> None:
    assert fit.left_out_line(["wd", "time(s)"], 80, "results.csv") == [
        "(wd, time(s) left out at 80 columns: results.csv shows all)"]
    assert fit.left_out_line(["a" * 30, "b" * 30], 60, "results.csv") == [
        "(2 columns left out at 60 columns: results.csv shows all)"]
    assert fit.left_out_line(["a" * 30, "b" * 30], 40, "results.csv") == [
        "(2 columns left out: results.csv shows", "  all)"]


def test_significant_digits_grow_until_values_differ() -> None:
    assert fit.significant([0.00612, 0.00618]) == 4
    assert fit.significant([0.00612341, 0.00612349]) == 5
    assert fit.significant([1.0, float("nan"), float("nan")]) == 4
