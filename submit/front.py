"""The Pareto front of a job of several objectives, as ``da-submit``'s summary and ``da-job
status`` say it instead of one best: its trials with each objective's value.

The front is :meth:`Objectives.front_points` (Optuna's, over the completed, feasible trials),
the one results.json marks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from disauto.common.objectives import Objectives
from disauto.common.objectives import RecordedTrial


FRONT_SHOWN = 5
"""The front's trials named one a line; the others are counted (``da-job results`` has all)."""


def front_rows(trials: Iterable[RecordedTrial], objectives: Objectives) -> list[dict[str, Any]]:
    """The front as ``--json`` gives it: ``{"trial": 4, "values": {"accuracy": 0.9, ...}}``
    per trial, by number."""
    return [{"trial": number, "values": dict(zip(objectives.names, values, strict=True))}
            for number, values in objectives.front_points(trials)]


def front_lines(rows: list[dict[str, Any]], objectives: Objectives,
                shown: int = FRONT_SHOWN) -> list[str]:
    """What people read of :func:`front_rows`: a heading (``front: 4 trials of accuracy
    (maximize), latency (minimize)``), then a trial a line, best first by the first objective
    (the front's trade-off in order), at most ``shown`` and a count of the rest."""
    if not rows:
        return [f"front: none yet (no completed, feasible trial) of {objectives.describe()}"]
    count = f"{len(rows)} trial{'' if len(rows) == 1 else 's'}"
    lines = [f"front: {count} of {objectives.describe()}"]
    first = objectives.names[0]
    ordered = sorted(rows, key=lambda row: row["values"][first],
                     reverse=objectives.directions[0] == "maximize")
    for row in ordered[:shown]:
        values = " ".join(f"{name}={value:.6g}" for name, value in row["values"].items())
        lines.append(f"  trial-{row['trial']:04d} {values}")
    if len(rows) > shown:
        lines.append(f"  … and {len(rows) - shown} more")
    return lines
