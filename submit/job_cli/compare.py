"""``da-job compare``: jobs side by side, a column each: how each ended, its algorithm and
objective, its trials by state, its best (with several objectives: its Pareto front's size and
the best value of each objective on it), and how long its trials took (the median and the
total) and the job itself.

The table fits the terminal: with job ids too long for their columns each job gets a letter,
named above the table; jobs that do not fit side by side at all go on in a second table. The
job of the best best (the jobs of one objective and direction) is marked ``*``. ``da-job ui``'s
index draws the jobs ticked on it (or named by ``?compare=ID,ID``) best so far by trial number.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import IO
from typing import Any

from disauto.common.durations import format_duration
from disauto.common.objectives import Objectives
from disauto.common.trial_state import TrialState
from disauto.submit.exit_status import ExitStatus
from disauto.submit.fit import Column
from disauto.submit.fit import columns
from disauto.submit.fit import fit_table
from disauto.submit.fit import wrap
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.job_cli.base import fmt_seconds
from disauto.submit.job_cli.base import state_text
from disauto.submit.jobs import Job
from disauto.submit.jobs import find


MOST = 26
"""The most jobs compared at once (a letter each where their ids do not fit)."""
NARROWEST = 12
"""The narrowest a job's column is clipped to before the jobs go on in a second table."""


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    found: dict[str, Job] = {}
    for given in args.jobs:
        job = find(given)
        found.setdefault(job.job_id, job)
    jobs = list(found.values())
    if len(jobs) < 2:
        raise JobCommandError(f"compare needs two jobs or more (got {len(jobs)}: "
                              f"{', '.join(found) or 'none'})")
    if len(jobs) > MOST:
        raise JobCommandError(f"compare takes {MOST} jobs at most (got {len(jobs)})")
    facts = [job_facts(job) for job in jobs]
    if args.json:
        print(json.dumps(facts, indent=2), file=out)
        return ExitStatus.SUCCESS
    for line in compare_lines(facts, columns()):
        print(line, file=out)
    return ExitStatus.SUCCESS


def job_facts(job: Job) -> dict[str, Any]:
    """What ``compare`` shows of a job (its ``--json``)."""
    config = job.config
    search = config.search
    objectives = Objectives.from_spec(search)
    algorithm = search.tuning_type + (f" ({search.settings['backend']})"
                                      if search.settings.get("backend") else "")
    best = job.best()
    front = None
    if objectives.several:
        front = [{"trial": number, "values": dict(zip(objectives.names, values, strict=True))}
                 for number, values in objectives.front_points(job.trials)]
    took = [t.ended_at - t.started_at for t in job.trials
            if t.state.is_finished() and t.started_at is not None and t.ended_at is not None]
    return {
        "job_id": job.job_id, "name": config.app_name, "state": job.state,
        "outcome": job.outcome, "state_text": state_text(job), "algorithm": algorithm,
        "objectives": list(objectives.names), "directions": list(objectives.directions),
        "done": sum(1 for t in job.trials if t.state.is_finished()),
        "budget": int(search.max_trials),
        "counts": {state: count for state, count in job.counts().items() if count},
        "best": None if best is None or objectives.several
        else {"trial": best.number, "objective": best.objective},
        "front": front,
        "trial_seconds": {"count": len(took),
                          "median": statistics.median(took) if took else None,
                          "total": sum(took)},
        "duration_seconds": round(job.duration(), 1),
    }


def compare_lines(facts: list[dict[str, Any]], width: int) -> list[str]:
    """The comparison for people, no line wider than ``width``."""
    labels, rows = _rows(facts)
    label_width = max(len(label) for label in labels)
    natural = [max([len(f["job_id"]), *(len(row[i]) for row in rows)])
               for i, f in enumerate(facts)]
    lettered = label_width + sum(n + 2 for n in natural) > width
    headings = [chr(ord("A") + i) if lettered else f["job_id"] for i, f in enumerate(facts)]
    lines = []
    if lettered:
        lines += [f"{heading}  {f['job_id']}" for heading, f in zip(headings, facts, strict=True)]
        lines.append("")
    per = max(1, (width - label_width) // (NARROWEST + 2))
    for start in range(0, len(facts), per):
        chunk = range(start, min(len(facts), start + per))
        table = [Column("", last=True), *(Column(headings[i], narrowest=NARROWEST)
                                          for i in chunk)]
        cells = [[label, *(row[i] for i in chunk)] for label, row in zip(labels, rows,
                                                                          strict=True)]
        if start:
            lines.append("")
        lines += fit_table(table, cells, width)
    if any(cell.endswith(" *") for row in rows for cell in row):
        lines.append("* the best of these jobs")
    lines += wrap("Their best so far by trial number: da-job ui (tick them on its index).",
                  width, indent="")
    return lines


def _rows(facts: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The table's row labels and cells (a cell per job)."""
    rows: list[tuple[str, list[str]]] = []
    if not all(f["job_id"].startswith(f["name"]) for f in facts):  # else the id says it
        rows.append(("name", [f["name"] for f in facts]))
    rows += [
        ("state", [f["state_text"] for f in facts]),
        ("algorithm", [f["algorithm"] for f in facts]),
        ("objective", [", ".join(f"{n} ({d[:3]})" for n, d in
                                 zip(f["objectives"], f["directions"], strict=True))
                       for f in facts]),
        ("trials", [f"{f['done']}/{f['budget']}" for f in facts]),
    ]
    for state in TrialState:
        if any(f["counts"].get(str(state)) for f in facts):
            rows.append((f"  {str(state).lower()}",
                         [str(f["counts"].get(str(state), 0)) for f in facts]))
    rows += _best_rows(facts)
    rows += [
        ("trial median", [_seconds(f["trial_seconds"]["median"]) for f in facts]),
        ("trials total", [_seconds(f["trial_seconds"]["total"]) if f["trial_seconds"]["count"]
                          else "-" for f in facts]),
        ("job elapsed", [fmt_seconds(f["duration_seconds"]) for f in facts]),
    ]
    return [label for label, _ in rows], [cells for _, cells in rows]


def _best_rows(facts: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """``best`` of the jobs of one objective (the best of them marked ``*`` when they share
    it and its direction); with several objectives, ``front`` (its size) and each objective's
    best value on the front."""
    single = [f for f in facts if f["front"] is None]
    rows = []
    if single:
        shared = len({(f["objectives"][0], f["directions"][0]) for f in single}) == 1
        valued = [f for f in single if f["best"] is not None]
        winner = None
        if shared and len(valued) > 1:
            pick = max if single[0]["directions"][0] == "maximize" else min
            winner = pick(valued, key=lambda f: f["best"]["objective"])
        rows.append(("best", [_best_cell(f, f is winner) for f in facts]))
    several = [f for f in facts if f["front"] is not None]
    if several:
        rows.append(("front", ["" if f["front"] is None else
                               f"{len(f['front'])} trial{'' if len(f['front']) == 1 else 's'}"
                               for f in facts]))
        names = list(dict.fromkeys(n for f in several for n in f["objectives"]))
        for name in names:
            rows.append((f"  best {name}", [_front_best(f, name) for f in facts]))
    return rows


def _best_cell(facts: dict[str, Any], winner: bool) -> str:
    if facts["front"] is not None:
        return "(front below)"
    best = facts["best"]
    if best is None:
        return "-"
    return f"{best['objective']:.6g} (#{best['trial']})" + (" *" if winner else "")


def _front_best(facts: dict[str, Any], name: str) -> str:
    """The best value of objective ``name`` on the job's front, and its trial."""
    if facts["front"] is None or name not in facts["objectives"]:
        return ""
    if not facts["front"]:
        return "-"
    maximize = facts["directions"][facts["objectives"].index(name)] == "maximize"
    pick = max if maximize else min
    row = pick(facts["front"], key=lambda r: r["values"][name])
    return f"{row['values'][name]:.6g} (#{row['trial']})"


def _seconds(seconds: float | None) -> str:
    """``0.412 s``, ``12.3 s``, ``1m30s``; ``-`` for none."""
    if seconds is None:
        return "-"
    return f"{seconds:.3g} s" if seconds < 60 else format_duration(seconds)


COMMAND = Command(
    name="compare", help="jobs side by side: best, trials by state, durations", run=run,
    description="Jobs side by side, a column each: state, algorithm, objective, trials by "
                "state, the best (with several objectives the Pareto front's size and each "
                "objective's best on it; the best of jobs of one objective marked *), and the "
                "median and total trial duration and the job's. da-job ui's index draws their "
                "best so far by trial number.",
    arguments=(
        arg("jobs", metavar="JOB", nargs="+",
            help="two jobs or more: job ids, or any unique start of one (da-job list shows "
                 "them)"),
        arg("--json", action="store_true", help="as JSON (one object per job)"),
    ))
