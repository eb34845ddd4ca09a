"""The job page's JSON views, computed from a constructed record (no server)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
import time
from typing import Any

import pytest

from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState
from disauto.framework._job import sorted_trials
from disauto.framework.webui import report
from disauto.framework.webui import views
from disauto.framework.webui.importance import MIN_TRIALS
from disauto.framework.webui.importance import PENDING_NOTE
from disauto.framework.webui.importance import ImportanceCache
from disauto.framework.webui.importance import importances
from disauto.framework.webui.views import TELEMETRY_NOTE
from disauto.framework.webui.views import job_view
from disauto.framework.webui.views import page_data
from disauto.framework.webui.views import read_record
from disauto.framework.webui.views import to_json
from disauto.protos import common_pb2
from tests.framework.webui.records import INFEASIBLE
from tests.framework.webui.records import PARETO_FRONT
from tests.framework.webui.records import PARETO_POINTS
from tests.framework.webui.records import ParetoRecorded
from tests.framework.webui.records import Recorded


@pytest.fixture
def recorded(tmp_path: Path) -> Recorded:
    return Recorded(tmp_path / "job")


def test_the_job_view_has_every_fact_the_page_shows(recorded: Recorded) -> None:
    job = page_data(read_record(recorded.store, "running"))["job"]
    assert job["name"] == "tests" and job["job_id"] == "job-test"
    assert job["state"] == "running" and job["outcome"] == ""
    assert (job["budget"], job["parallelism"], job["submitted"]) == (20, 4, 9)
    assert job["target"] == pytest.approx(0.99)
    assert job["algorithm"] == "random-search (tpe)" and job["early_stopping"] == "median"
    assert job["policy"] == "dynamic" and job["seed"] == 7
    assert job["objective"] == "accuracy" and job["direction"] == "maximize"
    assert 59 <= job["elapsed_seconds"] < 120
    assert job["counts"] == {"PENDING": 1, "LAUNCHING": 0, "RUNNING": 1, "COMPLETED": 5,
                             "FAILED": 1, "KILLED": 0, "PRUNED": 1, "TIMEOUT": 0}
    assert job["best"] == {"trial": 5, "objective": pytest.approx(0.6)}
    assert job["parameters"] == ["lr", "layers", "act"]


def test_an_ended_job_shows_its_outcome_and_stops_its_clock(recorded: Recorded) -> None:
    from disauto.protos import framework_pb2

    recorded.controller.finish(framework_pb2.JOB_KILLED, "killed with da-job kill")
    job = page_data(read_record(recorded.store, "ended"))["job"]
    assert job["state"] == "ended" and job["outcome"] == "JOB_KILLED"
    assert job["outcome_message"] == "killed with da-job kill"
    elapsed = job["elapsed_seconds"]
    assert job["ended_at"] is not None
    assert page_data(read_record(recorded.store, "ended"))["job"]["elapsed_seconds"] == elapsed


def test_the_trials_carry_state_assignment_objective_duration_agent_and_steps(
        recorded: Recorded) -> None:
    trials = {t["number"]: t for t in page_data(read_record(recorded.store, "running"))["trials"]}
    assert sorted(trials) == list(range(1, 10))
    first = trials[1]
    assert first["state"] == "COMPLETED" and first["final"] is True
    assert first["assignment"] == {"act": "relu", "layers": 2, "lr": 0.002}
    assert first["objective"] == pytest.approx(0.52)
    assert first["agent"] == "agent-S0" and first["task_id"] == "trial-0001"
    assert first["duration_seconds"] is not None and first["duration_seconds"] >= 0
    assert first["intermediate"] == [[0, pytest.approx(0.35)], [1, pytest.approx(0.45)]]
    assert trials[6]["state"] == "PRUNED"
    assert trials[6]["intermediate"] == [[0, pytest.approx(0.1)], [1, pytest.approx(0.12)]]
    assert trials[7]["state"] == "FAILED" and "exited with status 1" in trials[7]["message"]
    assert trials[8]["state"] == "RUNNING" and trials[8]["duration_seconds"] is not None
    assert trials[8]["intermediate"] == [[0, pytest.approx(0.2)]]
    assert trials[9]["state"] == "PENDING" and trials[9]["duration_seconds"] is None
    assert trials[9]["agent"] == ""


def test_importance_ranks_the_parameters_of_completed_trials(recorded: Recorded) -> None:
    importance = page_data(read_record(recorded.store, "running"))["importance"]
    assert "note" not in importance
    values = importance["values"]
    assert set(values) == {"lr", "layers", "act"}
    assert sum(values.values()) == pytest.approx(1.0)
    assert list(values.values()) == sorted(values.values(), reverse=True)


def test_importance_says_so_when_there_are_too_few_trials(tmp_path: Path) -> None:
    few = Recorded(tmp_path / "few", completed=MIN_TRIALS - 2)  # and one pruned
    importance = page_data(read_record(few.store, "running"))["importance"]
    assert importance == {"note": f"parameter importance needs at least {MIN_TRIALS} completed "
                                  f"or pruned trials ({MIN_TRIALS - 2} completed, 1 pruned so "
                                  "far)"}


def test_importance_counts_pruned_trials_by_their_last_value(recorded: Recorded) -> None:
    importance = page_data(read_record(recorded.store, "running"))["importance"]
    assert importance["basis"] == ("5 completed trials and 1 pruned (each counted with its "
                                   "last intermediate value)")
    # As with ASHA: most trials pruned, a few completed; the pruned ones tell what is bad.
    space = SearchSpace((RealParam("lr", 1e-4, 1e-1, log=True), RealParam("noise", 0.0, 1.0)))
    completed = [({"lr": 1e-3, "noise": 0.5}, 0.9), ({"lr": 2e-3, "noise": 0.1}, 0.92)]
    pruned = [({"lr": 10 ** (-1 - i / 6), "noise": (i * 7 % 12) / 12}, 0.3 + 0.02 * i)
              for i in range(12)]
    answer = importances(space, completed, True, pruned)
    assert set(answer["values"]) == {"lr", "noise"}
    assert answer["basis"].startswith("2 completed trials and 12 pruned")
    assert "note" in importances(space, completed, True)  # two trials alone are too few


def test_the_page_knows_each_parameters_scale_and_a_failures_cause(recorded: Recorded) -> None:
    data = page_data(read_record(recorded.store, "running"))
    assert data["job"]["scales"] == {"lr": "log", "layers": "linear", "act": "choice"}
    assert data["job"]["integers"] == ["layers"]  # whole-number ticks on its axis (issue 36)
    failed = next(t for t in data["trials"] if t["state"] == "FAILED")
    assert failed["cause"] == "TASK_FAILED: exited with status 1"


def test_importance_of_a_space_whose_parameters_take_one_value_each() -> None:
    space = SearchSpace((IntParam("n", 3, 3), CategoricalParam("c", ("a",))))
    answer = importances(space, [({"n": 3, "c": "a"}, float(i)) for i in range(6)], True)
    assert answer == {"note": "no parameter takes more than one value"}


def test_importance_with_equal_objectives_has_nothing_to_rank() -> None:
    space = SearchSpace((RealParam("x", 0.0, 1.0),))
    answer = importances(space, [({"x": i / 10}, 0.5) for i in range(6)], False)
    assert "same objective" in answer["note"]


def test_the_resource_place_is_labelled_and_holds_no_numbers(recorded: Recorded) -> None:
    telemetry = page_data(read_record(recorded.store, "running"))["telemetry"]
    assert telemetry == {"available": False, "note": TELEMETRY_NOTE}


def test_the_json_has_no_nan_and_survives_a_round_trip(recorded: Recorded) -> None:
    recorded.store.update_trial(7, objective=float("nan"))
    text = to_json(page_data(read_record(recorded.store, "running")))
    data = json.loads(text)
    assert next(t for t in data["trials"] if t["number"] == 7)["objective"] is None
    assert "NaN" not in text


def test_a_minimized_job_ranks_its_best_lowest(tmp_path: Path) -> None:
    low = Recorded(tmp_path / "min", direction=common_pb2.MINIMIZE)
    job = page_data(read_record(low.store, "ended"))["job"]
    assert job["direction"] == "minimize" and job["best"]["trial"] == 1


def test_the_report_inlines_the_page_its_scripts_and_the_data(recorded: Recorded) -> None:
    html = report.render(read_record(recorded.store, "ended"))
    assert "/static/" not in html  # nothing is fetched: it opens offline from disk
    assert "window.DISAUTO_DATA = " in html and "plotly.js v" in html
    start = html.index("window.DISAUTO_DATA = ") + len("window.DISAUTO_DATA = ")
    data = json.loads(html[start:html.index(";</script>", start)].replace("<\\/", "</"))
    assert len(data["trials"]) == 9 and data["job"]["state"] == "ended"
    assert html.count("<script") == html.count("</script>") == 3


def test_report_write_puts_report_html_in_the_job_folder(recorded: Recorded) -> None:
    path = report.write(recorded.folder, read_record(recorded.store, "ended"))
    assert path == recorded.folder / "report.html" and path.stat().st_size > 4_000_000


def test_killed_trials_keep_their_message(recorded: Recorded) -> None:
    recorded.controller.kill_trial(recorded.running, "killed from the job page")
    trials = page_data(read_record(recorded.store, "running"))["trials"]
    killed = next(t for t in trials if t["number"] == recorded.running)
    assert killed["state"] == TrialState.KILLED and killed["message"] == "killed from the job page"


def test_of_equal_objectives_the_first_to_complete_stays_the_best(tmp_path: Path) -> None:
    """The best does not flip to a trial that only equals it: the progress line, da-job (both
    sorted_trials) and the page name the one that reached the value first, whatever its
    number."""
    recorded = Recorded(tmp_path / "job", completed=0)  # 1 pruned, 2 failed, 3 runs, 4 waits
    recorded.run(4)
    recorded.report(4, 0.9, final=True)
    recorded.status(4, "TASK_FINISHED")
    assert recorded.controller.progress().best.number == 4  # type: ignore[union-attr]
    recorded.report(3, 0.9, final=True)  # as good, later
    recorded.status(3, "TASK_FINISHED")
    assert recorded.controller.progress().best.number == 4  # type: ignore[union-attr]
    assert page_data(read_record(recorded.store, "running"))["job"]["best"]["trial"] == 4
    assert [t.number for t in sorted_trials(recorded.store.trials(), True)][:2] == [4, 3]


def test_the_pages_server_does_not_wait_for_importance() -> None:
    """Optuna takes seconds on a busy machine: the server answers at once with the last answer
    (marked pending) while a thread computes the new one."""
    cache = ImportanceCache()
    space = SearchSpace((RealParam("x", 0.0, 1.0), IntParam("n", 1, 9)))
    trials = [({"x": i / 10, "n": 1 + i % 9}, float(i % 4)) for i in range(8)]
    assert cache.get("job", (8,), space, trials, True, wait=0) == {"note": PENDING_NOTE,
                                                                   "pending": True}
    answer = cache.get("job", (8,), space, trials, True, wait=60)
    assert set(answer["values"]) == {"x", "n"} and "pending" not in answer
    more = [*trials, ({"x": 0.95, "n": 2}, 3.0)]
    stale = cache.get("job", (9,), space, more, True, wait=0)
    assert stale == {**answer, "pending": True}
    fresh = cache.get("job", (9,), space, more, True, wait=60)
    assert "pending" not in fresh and fresh["basis"] == "9 completed trials"
    assert cache.get("job", (9,), space, more, True) is fresh  # kept until the trials change


def test_a_job_of_one_objective_has_no_pareto_plot(recorded: Recorded) -> None:
    data = page_data(read_record(recorded.store, "running"))
    assert data["pareto"] is None
    assert (data["job"]["objectives"], data["job"]["directions"]) == (["accuracy"],
                                                                      ["maximize"])
    assert all(t["feasible"] and t["constraints"] is None for t in data["trials"])


def test_two_objectives_give_the_pareto_plot_its_points_and_front(tmp_path: Path) -> None:
    made = ParetoRecorded(tmp_path / "job-p")
    data = page_data(read_record(made.store, "running"))
    pareto = data["pareto"]
    assert (pareto["objectives"], pareto["directions"]) == (["accuracy", "latency"],
                                                            ["maximize", "minimize"])
    assert sorted(pareto["front"]) == sorted(PARETO_FRONT)
    assert {p["number"]: tuple(p["values"]) for p in pareto["points"]} == PARETO_POINTS
    assert [p["number"] for p in pareto["points"] if not p["feasible"]] == [INFEASIBLE]
    trials = {t["number"]: t for t in data["trials"]}
    assert (trials[INFEASIBLE]["feasible"], trials[INFEASIBLE]["constraints"]) == (False, [0.5])
    # The infeasible trial has the best accuracy, and is not the best.
    assert data["job"]["best"] == {"trial": 4, "objective": pytest.approx(0.9)}
    assert json.loads(to_json(data))["pareto"]["front"] == pareto["front"]


def test_three_objectives_give_every_value_and_the_front_of_all_three(tmp_path: Path) -> None:
    made = ParetoRecorded(tmp_path / "job-p", objectives=3)
    pareto = page_data(read_record(made.store, "running"))["pareto"]
    assert pareto["objectives"] == ["accuracy", "latency", "size"]
    assert all(len(p["values"]) == 3 for p in pareto["points"])
    # size (10 minus the number, minimized) puts 3, 5 and 8 on the front beside 1, 2, 4, 7.
    assert sorted(pareto["front"]) == [1, 2, 3, 4, 5, 7, 8]


def _slow(seconds: float) -> Any:
    """Optuna's importance after ``seconds`` (a worker that the machine's load starves)."""
    def compute(*args: Any) -> dict[str, Any]:
        time.sleep(seconds)
        return importances(*args)
    return compute


def test_the_report_waits_for_importance_a_bounded_time(
        recorded: Recorded, monkeypatch: pytest.MonkeyPatch) -> None:
    """A starved importance worker does not hold the job's end (issue 29): the report keeps
    the last answer computed while the job ran, saying so, or a note."""
    cache = ImportanceCache(_slow(3.0))
    monkeypatch.setattr(views, "_IMPORTANCE", cache)
    monkeypatch.setattr(views.importance_view, "__defaults__", (cache, None))
    monkeypatch.setattr(report, "REPORT_WAIT", 0.2)
    started = time.monotonic()
    first = json.loads(_inline_data(report.render(read_record(recorded.store, "ended"))))
    assert time.monotonic() - started < 2.5
    assert first["importance"] == {"note": report.UNSETTLED_NOTE}
    record = read_record(recorded.store, "ended")
    views.importance_view(record, cache, wait=None)  # computed while the job ran
    recorded.report(recorded.running, 0.95, final=True)
    recorded.status(recorded.running, "TASK_FINISHED")
    later = json.loads(_inline_data(report.render(read_record(recorded.store, "ended"))))
    assert set(later["importance"]["values"]) and "pending" not in later["importance"]
    assert later["importance"]["basis"].endswith("(computed while the job ran)")


def _inline_data(html: str) -> str:
    start = html.index("window.DISAUTO_DATA = ") + len("window.DISAUTO_DATA = ")
    return html[start:html.index(";</script>", start)].replace("<\\/", "</")


def test_the_facts_of_several_objectives_name_the_front_not_a_best(tmp_path: Path) -> None:
    made = ParetoRecorded(tmp_path / "job-p")
    job = job_view(read_record(made.store, "running"))
    # Its size and its first trials, best first by the first objective (accuracy).
    assert job["front"] == {"size": 4, "first": [4, 7, 2]}


def test_the_facts_of_one_objective_have_no_front(recorded: Recorded) -> None:
    assert job_view(read_record(recorded.store, "running"))["front"] is None


class _CountedReads(list[Any]):
    """The record's trials, counting the passes over them."""

    passes = 0

    def __iter__(self) -> Any:
        self.passes += 1
        return super().__iter__()


def test_the_facts_of_an_unchanged_record_read_no_trial_for_the_pace(
        recorded: Recorded) -> None:
    # The periodic call of a 10,000-trial page: its pace comes from what was read of the
    # trials at this version, moved to the call's time, not from another pass over them.
    first = read_record(recorded.store, "running")
    trials = _CountedReads(first.trials)
    record = dataclasses.replace(first, trials=trials, version=("pace-test", 1))
    before = job_view(record)
    assert trials.passes > 0
    trials.passes = 0
    later = dataclasses.replace(record, now=record.now + 30)
    after = job_view(later)
    assert trials.passes == 0
    assert after["pace"] == job_view(dataclasses.replace(later, version=None))["pace"]
    assert after["pace"]["trials_per_minute"] is not None and before["counts"] == after["counts"]
