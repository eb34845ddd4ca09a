"""What every ``da-job`` command is made of: its entry in the table (:class:`Command`, with
its :class:`Arg` s), the one-line error it raises, and the small formatting all of them share.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
import re
from typing import IO
from typing import Any

from disauto.framework.record import TrialRow
from disauto.framework.record import meta
from disauto.submit.exit_status import ExitStatus
from disauto.submit.jobs import Job


PROG = "da-job"


class JobCommandError(Exception):
    """What a command cannot do, in one line; carries its exit status."""

    def __init__(self, message: str, status: ExitStatus = ExitStatus.USAGE) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Arg:
    """One argument of a command, as ``argparse.add_argument`` takes it (a help text always).
    Arguments of one ``exclusive`` group name exclude each other."""

    flags: tuple[str, ...]
    help: str
    options: Mapping[str, Any] = field(default_factory=dict)
    exclusive: str = ""


def arg(*flags: str, help: str, exclusive: str = "", **options: Any) -> Arg:  # noqa: A002
    """An :class:`Arg`: ``arg("--json", help="...", action="store_true")``."""
    return Arg(flags, help, options, exclusive)


JOB = arg("job", metavar="JOB",
          help="a job id, or any unique start of one (da-job list shows them)")


Run = Callable[[argparse.Namespace, IO[str]], ExitStatus]


@dataclass(frozen=True)
class Command:
    """One ``da-job`` command: its name, its one-line help (``da-job --help``), its arguments,
    the function that runs it, and what ``da-job NAME --help`` says beyond the help line."""

    name: str
    help: str
    arguments: tuple[Arg, ...]
    run: Run
    description: str = ""


# -- shared formatting ---------------------------------------------------------------------------


def fmt_seconds(seconds: float) -> str:
    """``1:02:03``."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def state_text(job: Job) -> str:
    """``running``, ``interrupted`` or ``ended (how)``."""
    if job.state == "ended":
        return f"ended ({job.outcome.lower().replace('_', ' ') or 'unknown'})"
    return job.state


def ended_at(job: Job) -> float | None:
    """When the job ended, or None while it runs (or was interrupted)."""
    return job.meta[meta.ENDED_AT]


# -- naming trials -------------------------------------------------------------------------------

_TRIAL = re.compile(r"(?:trial-?)?0*(\d{1,9})(?:\.(\d{1,4}))?", re.IGNORECASE)


def trial_name(trial: TrialRow) -> str:
    """``trial-0013``, as every output names trials."""
    return f"trial-{trial.number:04d}"


def parse_trial(text: str, alternatives: str = "") -> tuple[int, int | None]:
    """(number, retry or None) of a trial named as every output names it (``trial-0013``), by
    its number (``13``), or by the task of a retry (``trial-0013.1``).

    Raises:
        JobCommandError: ``text`` names no trial (``alternatives``: what else it may be).
    """
    match = _TRIAL.fullmatch(text.strip())
    if match is None:
        raise JobCommandError(f"invalid trial {text!r}: expected a trial number or trial-NNNN"
                              + (f" {alternatives}" if alternatives else ""))
    retry = match.group(2)
    return int(match.group(1)), None if retry is None else int(retry)


def find_trial(job: Job, text: str, alternatives: str = "") -> tuple[TrialRow, str]:
    """The trial ``text`` names (:func:`parse_trial`) and the id of its task (of the retry it
    names, else its latest).

    Raises:
        JobCommandError: no such trial (or retry) in ``job``.
    """
    number, retry = parse_trial(text, alternatives)
    trial = next((t for t in job.trials if t.number == number), None)
    if trial is None:
        last = max((t.number for t in job.trials), default=0)
        raise JobCommandError(f"job {job.job_id} has no trial-{number:04d} (its trials: "
                              + (f"trial-0001 to trial-{last:04d})" if last else "none yet)"))
    if retry is None:
        return trial, trial.task_id or trial_name(trial)
    if not 0 <= retry <= trial.retries:
        raise JobCommandError(f"{trial_name(trial)} has no retry {retry} (it was launched "
                              f"{trial.retries + 1} time{'s' if trial.retries else ''})")
    return trial, trial_name(trial) + (f".{retry}" if retry else "")
