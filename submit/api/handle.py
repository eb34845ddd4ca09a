"""``submit(...)``: a job submitted from Python, run in the background as ``da-submit
--detach`` runs it, and the handle that follows it (:class:`Job`: ``status()``, ``wait()``,
``kill()``); ``list_jobs()``, the jobs under ``$DISAUTO_HOME``.

The keywords go through ``da-submit``'s parser and validators (:mod:`submit.api.options`), so a
bad one raises :class:`SubmitError` with the one line ``da-submit`` would print after
``da-submit: error:``, before anything is started. The job's process is ``da-submit``'s own,
started by :func:`submit.run.spawn`; ``submit`` returns once it is started, without waiting for
it to boot the embedded cluster and register its framework (docs/benchmarks.md, "The Python
API's submit()"): the handle's methods read the job's record, as ``da-job`` does, and wait for
that process to record the job first; ``kill()`` goes through the record's control channel
(``framework/control.py``), as ``da-job kill`` does.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
import os
from pathlib import Path
import subprocess
import tempfile
import time
from typing import Any

from disauto.common import paths
from disauto.framework.control import KILLED_WITH_API
from disauto.framework.control import KillJob
from disauto.framework.control import NoAnswerError
from disauto.framework.record import JobRecord as StoredRecord
from disauto.framework.record import meta
from disauto.submit import jobs
from disauto.submit.api.options import PARAMETER_FILE
from disauto.submit.api.options import PARAMETERS
from disauto.submit.api.options import CommandLine
from disauto.submit.api.options import command_line
from disauto.submit.api.record import JobRecord
from disauto.submit.api.record import load_job
from disauto.submit.errors import DisAutoUsageError
from disauto.submit.errors import ParameterFileError
from disauto.submit.parser import PROG
from disauto.submit.parser import build_parser
from disauto.submit.run import output_since
from disauto.submit.run import spawn
from disauto.submit.validate import Submission
from disauto.submit.validate import validate


__all__ = ["PARAMETER_FILE", "Job", "JobError", "Status", "SubmitError", "list_jobs", "start",
           "submit"]

POLL_SECONDS = 0.5
"""How often :meth:`Job.wait` reads the record."""
START_SECONDS = 90.0
"""How long a handle waits for its job's process to record the job (``da-submit --detach``
waits as long for its framework to register)."""
START_POLL_SECONDS = 0.02
"""How often a handle looks for the record while the job's process starts."""


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
    app_name: str = ""
    started_at: float | None = None
    """When the job started (seconds since the epoch), as ``da-job list`` shows it."""
    duration_seconds: float = 0.0
    """How long it ran (until now while it runs)."""

    @classmethod
    def of(cls, job: jobs.Job) -> Status:
        """What ``job``'s record says now."""
        best = job.best()
        summary = job.summary()
        return cls(job.job_id, job.state, job.outcome, job.meta[meta.OUTCOME_MESSAGE],
                   int(summary["done"]), int(summary["budget"]), job.counts(),
                   None if best is None else best.number,
                   None if best is None else best.objective, str(summary["name"]),
                   job.started() or None, float(summary["duration_seconds"]))


class _Starting:
    """The job's process, as the handle that started it knows it, until it has recorded the
    job. Until then the record is only peeked at, read-only: opening a record that is being
    made (:class:`framework.record.JobRecord`) would make its tables too, beside its process."""

    def __init__(self, process: subprocess.Popen[bytes], output_from: int) -> None:
        self.process = process
        self.output_from = output_from
        """Where the process's output begins in the job's output file."""
        self.recorded = False

    def wait(self, job_id: str, folder: Path) -> None:
        """Return once the process has recorded the job (its pid in the record).

        Raises:
            SubmitError: it ended, or ran :data:`START_SECONDS`, without recording the job
                (the line da-submit printed of why).
        """
        deadline = time.monotonic() + START_SECONDS
        db = folder / paths.JOB_DB
        while not self.recorded:
            ended = self.process.poll() is not None  # before the peek: it may record, then end
            if StoredRecord.peek(db)[meta.PID] == self.process.pid:
                self.recorded = True
            elif ended or time.monotonic() >= deadline:
                raise SubmitError(self._error(job_id, folder))
            else:
                time.sleep(START_POLL_SECONDS)

    def _error(self, job_id: str, folder: Path) -> str:
        code = self.process.poll()
        if code is None:
            return (f"job {job_id} has not started within {START_SECONDS:g} s; its output: "
                    f"{folder / paths.DETACHED_OUT}")
        return _error_line(output_since(job_id, self.output_from), job_id, code)


@dataclass(frozen=True)
class Job:
    """A submitted job: its id and folder, and what can be done with it."""

    job_id: str
    folder: Path
    _starting: _Starting | None = field(default=None, repr=False, compare=False)
    """The job's process, when this handle started it."""

    def _read(self) -> jobs.Job:
        """The job's record now, once the process this handle started has recorded the job.

        Raises:
            SubmitError: that process ended, or ran :data:`START_SECONDS`, without recording
                the job (the line da-submit printed of why).
        """
        if self._starting is not None:
            self._starting.wait(self.job_id, self.folder)
        return jobs.load(self.folder)

    @property
    def page(self) -> str:
        """The job page's address ("" when it has none); its framework records it as it
        starts, which this waits for while the job runs."""
        deadline = time.monotonic() + START_SECONDS
        while True:
            job = self._read()
            url = job.meta[meta.WEBUI_URL]
            if url or job.state != "running" or time.monotonic() >= deadline:
                return url
            time.sleep(START_POLL_SECONDS)

    def status(self) -> Status:
        """The job as its record says now."""
        return Status.of(self._read())

    def running(self) -> bool:
        """Whether the job's process still runs (it ends after writing the results)."""
        if self._starting is not None:
            self._starting.process.poll()  # an ended child of this process is reaped
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
            answer = jobs.ask(job, KillJob(KILLED_WITH_API), wait)
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
        self._read()
        return load_job(self.job_id, folder=self.folder)


def submit(**options: Any) -> Job:
    """Submit a job, as ``da-submit --detach`` with these flags does: checked first, then run
    in a background process of its own; the handle as soon as that process is started.

    Keywords are ``da-submit``'s flags with underscores (:mod:`submit.api.options`), e.g.
    ``submit(app_name="digits", files=["train.py"], app_runner_launch_cmd="python train.py",
    tuning_type="random-search", tuning_parameters={"parameters": [...]}, parallelism=4)``.

    Raises:
        SubmitError: a bad keyword or value (nothing is started): the line da-submit prints.
            A job that ends as it starts (its master unreachable...) says why in its status,
            or, when its process could not even record it, raises it from the handle's first
            call.
    """
    return start(options)


def start(options: Mapping[str, Any], shipped: Mapping[str, bytes] | None = None) -> Job:
    """:func:`submit` with ``shipped`` files made in memory (by name), written to the job's
    folder and shipped with it as ``--files`` (``optimize()``'s function)."""
    parser = build_parser()
    try:
        line = command_line(parser, options, shipped)
        submission = _validated(parser, line)
    except DisAutoUsageError as error:  # a flag's UsageError, a parameter file's error
        raise SubmitError(str(error)) from None
    job_id = submission.config.job_id
    folder = paths.job_dir(job_id)
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    process, output_from = spawn(job_id, ["-m", "disauto.submit.cli", *line.written_to(folder),
                                          "--job-id", job_id])
    return Job(job_id, folder, _Starting(process, output_from))


def list_jobs() -> list[Status]:
    """Every job under ``$DISAUTO_HOME``, oldest first, as ``da-job list`` lists them; a record
    that cannot be read is a :class:`Status` of state ``unreadable`` whose message says why."""
    found, unreadable = jobs.scan()
    return [Status.of(job) for job in found] + [
        Status(bad.job_id, "unreadable", "", str(bad), 0, 0, {}, None, None)
        for bad in unreadable]


def _validated(parser: argparse.ArgumentParser, line: CommandLine) -> Submission:
    """The submission of ``line``, checked by da-submit's validators; parameters given as a
    dict are checked from a file of their own, and an error in them names the keyword.

    Raises:
        DisAutoUsageError: what da-submit would refuse, in its one line.
    """
    with tempfile.TemporaryDirectory(prefix="disauto-submit-") as scratch:
        try:
            return validate(parser.parse_args(list(line.written_to(Path(scratch)))))
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
