"""A new trial that starts from another trial's checkpoint: Population Based Training's exploit.

AppCore submits the new trial with its ``parent`` (``SubmitTrialRequest.parent``). Before the
trial is recorded, the framework copies the parent's latest checkpoint into the new trial's
folder (:meth:`framework._checkpoints.JobCheckpoints.copy_checkpoint`); the trial is then
recorded with its lineage and the copy as the checkpoint its first try resumes from
(``framework/_job/intake.py``, under the job's lock, so no launch sees it without them).

The lineage is the record's ``lineage`` column: ``{"parent", "from_step", "parent_assignment"}``
(``from_step`` None: the parent had no checkpoint, the trial starts from scratch).
``results.json`` shows it per trial as ``parent``, ``from_step`` and ``explored`` (each parameter
whose value changed: ``{"old", "new"}``), and the job page draws which trial descends from which.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
import logging
from typing import Any

from disauto.common.checkpoints import CheckpointError
from disauto.framework._checkpoints import JobCheckpoints
from disauto.framework._errors import InvalidArgumentError
from disauto.framework._job.intake import Start
from disauto.framework._store import TrialRow
from disauto.protos import framework_pb2


logger = logging.getLogger("disauto.framework._job")


def explored(lineage: dict[str, Any] | None,
             assignment: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """Each parameter whose value the new trial changed from its parent's, ``{"old", "new"}``
    (a parameter only one of them has: None on the other side); None without a parent."""
    if not lineage:
        return None
    old = lineage.get("parent_assignment") or {}
    return {name: {"old": old.get(name), "new": assignment.get(name)}
            for name in sorted({*old, *assignment}) if old.get(name) != assignment.get(name)}


def start_points(requests: Sequence[framework_pb2.SubmitTrialRequest],
                 rows: Callable[[], Sequence[TrialRow]],
                 checkpoints: JobCheckpoints | None) -> dict[int, Start]:
    """How each new trial of a submission with a ``parent`` starts: its parent's checkpoint
    copied, and its lineage. A trial already recorded (a retried submission) is left as it is.

    Raises:
        InvalidArgumentError: a parent that is not a recorded trial, or the trial itself.
    """
    wanted = [item for item in requests if item.parent]
    if not wanted:
        return {}
    recorded = {row.number: row for row in rows()}
    starts: dict[int, Start] = {}
    for item in wanted:
        if item.number in recorded:
            continue
        parent = recorded.get(item.parent)
        if parent is None or item.parent == item.number:
            raise InvalidArgumentError(
                f"trial {item.number}: its parent trial {item.parent} is not a recorded trial")
        point = _copy(checkpoints, item.parent, item.number)
        starts[item.number] = ({"parent": item.parent,
                                "from_step": None if point is None else point.get("step"),
                                "parent_assignment": dict(parent.assignment)}, point)
    return starts


def _copy(checkpoints: JobCheckpoints | None, parent: int,
          child: int) -> dict[str, Any] | None:
    """The resume point of ``parent``'s latest checkpoint copied for ``child``; None (logged)
    when it has none: the child starts from scratch."""
    if checkpoints is None:
        return None
    try:
        return checkpoints.copy_checkpoint(parent, child)
    except CheckpointError as err:
        logger.warning("trial %d starts from scratch: trial %d's checkpoint: %s", child,
                       parent, err)
        return None
