"""``submit(...)``: a job submitted from Python, run in the background as ``da-submit
--detach`` runs it, and the handle that follows it (:class:`Job`: ``status()``, ``wait()``,
``kill()``).

The keywords go through ``da-submit``'s parser and validators (:mod:`submit.api.options`), so a
bad one raises :class:`SubmitError` with the one line ``da-submit`` would print after
``da-submit: error:``, before anything is started. The job's process is ``da-submit``'s own,
started by :func:`submit.run.detach`; the handle reads the job's record, as ``da-job`` does, and
kills through the record's control channel (``framework/control.py``), as ``da-job kill`` does.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
import io
import json
import os
from pathlib import Path
import tempfile
import time
from typing import Any

from disauto.common import paths
from disauto.framework import meta
from disauto.framework.control import KillJob
from disauto.framework.control import NoAnswerError
from disauto.framework.store import peek_meta
from disauto.submit import jobs
from disauto.submit.api.options import PARAMETERS
from disauto.submit.api.options import CommandLine
from disauto.submit.api.options import command_line
from disauto.submit.api.record import JobRecord
from disauto.submit.api.record import load_job
from disauto.submit.errors import DisAutoUsageError
from disauto.submit.errors import ParameterFileError
from disauto.submit.exit_status import ExitStatus
from disauto.submit.parser import PROG
from disauto.submit.parser import build_parser
from disauto.submit.run import detach
from disauto.submit.validate import Submission
from disauto.submit.validate import validate


PARAMETER_FILE = "parameters.json"
"""Where a job submitted with its parameters as a dict keeps them, in its folder (the job's
process reads them from there, as da-submit reads a parameter file)."""
POLL_SECONDS = 0.5
"""How often :meth:`Job.wait` reads the record."""


class SubmitError(ValueError):
    """A keyword or value ``da-submit`` refuses, or a job that ended as it started; the message
    is the one line ``da-submit`` prints after ``da-submit: error:``."""


class JobError(RuntimeError):
    """What a job's handle cannot do now (kill an ended job...), in one line."""


@dataclass(frozen=True)
class Status:
    """A job as its record says now (``da-job status`` in short)."""

    job_id: str
    state: str
    """``running``, ``ended`` or ``interrupted`` (its process died: ``da-job resume``)."""
    outcome: str
    """How it ended (``BUDGET_SPENT``, ``JOB_KILLED``...), ``""`` while it runs."""
    message: str
    done: int
    budget: int
    counts: Mapping[str, int]
    """The trials by state (``COMPLETED``, ``FAILED``...)."""
    best: int | None
    """The best feasible completed trial's number (by the first objective)."""
    best_value: float | None


@dataclass(frozen=True)
class Job:
    """A submitted job: its id, folder and page, and what can be done with it."""

    job_id: str
    folder: Path
    page: str = ""
    """The job page's address while the job runs ("" when it has none)."""

    def _read(self) -> jobs.Job:
        return jobs.load(self.folder)

    def status(self) -> Status:
        """The job as its record says now."""
        job = self._read()
        best = job.best()
        summary = job.summary()
        return Status(self.job_id, job.state, job.outcome,
                      job.meta[meta.OUTCOME_MESSAGE], int(summary["done"]),
                      int(summary["budget"]), job.counts(),
                      None if best is None else best.number,
                      None if best is None else best.objective)

    def running(self) -> bool:
        """Whether the job's process still runs (it ends after writing the results)."""
        return self._read().alive

    def wait(self, timeout: float | None = None) -> Status:
        """Wait until the job's process has ended (its results written); its status then.

        Raises:
            TimeoutError: it still runs after ``timeout`` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.running():
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job {self.job_id} still runs after {timeout:g} s")
            time.sleep(POLL_SECONDS)
        return self.status()

    def kill(self, wait: float = 60.0) -> Status:
        """End the running job as ``da-job kill`` does (its tasks killed, the record kept,
        outcome ``JOB_KILLED``) and wait up to ``wait`` seconds for its process to end.

        Raises:
            JobError: the job is not running, refused, or did not end in time.
        """
        job = self._read()
        if job.state != "running":
            why = f"has already ended ({job.outcome})" if job.state == "ended" else \
                "is interrupted (nothing runs it: da-job kill closes its record)"
            raise JobError(f"job {self.job_id} {why}")
        started = time.monotonic()
        try:
            answer = jobs.ask(job, KillJob(), wait)
        except NoAnswerError:
            answer = None  # it ended meanwhile, or never answered: its state says which
        if answer is not None and not answer.ok:
            raise JobError(f"job {self.job_id} refused to end: {answer.message}")
        try:
            return self.wait(max(1.0, wait - (time.monotonic() - started)))
        except TimeoutError:
            raise JobError(f"job {self.job_id} did not end within {wait:g} s; its framework "
                           "still runs") from None

    def load(self) -> JobRecord:
        """The job's record now (:func:`submit.api.record.load_job`)."""
        return load_job(self.job_id, folder=self.folder)


def submit(**options: Any) -> Job:
    """Submit a job, as ``da-submit --detach`` with these flags does: checked first, then run
    in a background process of its own; the handle once its framework is registered.

    Keywords are ``da-submit``'s flags with underscores (:mod:`submit.api.options`), e.g.
    ``submit(app_name="digits", files=["train.py"], app_runner_launch_cmd="python train.py",
    tuning_type="random-search", tuning_parameters={"parameters": [...]}, parallelism=4)``.

    Raises:
        SubmitError: a bad keyword or value (nothing is started), or the job ended as it
            started (its master unreachable...): the line da-submit prints.
    """
    parser = build_parser()
    try:
        line = command_line(parser, options)
        submission = _validated(parser, line)
    except DisAutoUsageError as error:  # a flag's UsageError, a parameter file's error
        raise SubmitError(str(error)) from None
    job_id = submission.config.job_id
    folder = paths.job_dir(job_id)
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    kept = folder / PARAMETER_FILE
    if line.parameters is not None:
        kept.write_text(json.dumps(line.parameters, indent=2))
    said = io.StringIO()
    status = detach(job_id, ["-m", "disauto.submit.cli", *line.with_parameters_file(kept),
                             "--job-id", job_id], said)
    # A job whose framework registered has run (it may have ended before detach saw it
    # registered): its handle tells how. One that never registered ended as it started.
    registered = peek_meta(folder / paths.JOB_DB)[meta.FRAMEWORK_REGISTERED]
    if status != ExitStatus.SUCCESS and not registered:
        raise SubmitError(_error_line(said.getvalue(), job_id, status))
    return Job(job_id, folder, _page(said.getvalue()))


def _validated(parser: argparse.ArgumentParser, line: CommandLine) -> Submission:
    """The submission of ``line``, checked by da-submit's validators; parameters given as a
    dict are checked from a file of their own, and an error in them names the keyword.

    Raises:
        DisAutoUsageError: what da-submit would refuse, in its one line.
    """
    with tempfile.TemporaryDirectory(prefix="disauto-submit-") as scratch:
        given = Path(scratch) / PARAMETER_FILE
        if line.parameters is not None:
            given.write_text(json.dumps(line.parameters))
        try:
            return validate(parser.parse_args(list(line.with_parameters_file(given))))
        except ParameterFileError as error:
            if line.parameters is None:
                raise
            raise ParameterFileError(PARAMETERS, error.detail, error.parameter) from None


def _error_line(output: str, job_id: str, status: int) -> str:
    """What da-submit said of why the job ended as it started (its last error line)."""
    prefix = f"{PROG}: error: "
    errors = [line[len(prefix):] for line in output.splitlines() if line.startswith(prefix)]
    if errors:
        return errors[-1]
    return f"job {job_id} ended as it started (exit status {status}); its output: " \
           f"{paths.job_dir(job_id) / paths.DETACHED_OUT}"


def _page(output: str) -> str:
    """The job page's address from what the detached da-submit printed ("" if none)."""
    marker = f"{PROG}: job page "
    for line in output.splitlines():
        if line.startswith(marker):
            return line[len(marker):].strip()
    return ""
