"""``da-job update``: change a job's trial budget and parallelism without restarting it.

The values are checked as ``da-submit`` checks its flags (the same validators), a budget also
against what the job's algorithm can ever issue (grid search's grid, as at submission) and
against the trials already submitted (:func:`~framework._job.update.check_update`). Then:

* a running job: the request goes through its record's control channel
  (``framework/control.py``); its framework applies it (checking it again against the live job,
  which may have submitted more meanwhile), records the new spec, tells AppCore, and answers on
  the channel, which this waits for;
* an interrupted job: its record's spec is changed here, so ``da-job resume`` runs with it.
"""

from __future__ import annotations

from dataclasses import replace

from disauto.framework.control import NoAnswerError
from disauto.framework.control import UpdateSearch
from disauto.framework.record import JobRecord
from disauto.framework.record import UpdateRefusedError
from disauto.framework.record import check_update
from disauto.framework.record import describe_change
from disauto.framework.record import meta
from disauto.framework.record import updated_spec
from disauto.submit.exit_status import ExitStatus
from disauto.submit.jobs import Job
from disauto.submit.jobs import ask
from disauto.submit.parser import UsageError


class UpdateError(Exception):
    """The change cannot be made, in one line; carries the exit status."""

    def __init__(self, message: str, status: ExitStatus = ExitStatus.USAGE) -> None:
        super().__init__(message)
        self.status = status


def requested(job: Job, trial_steps: str | None, parallelism: str | None) -> UpdateSearch:
    """The checked request for ``job`` from the flags' text.

    Raises:
        UpdateError: no value, a value out of da-submit's bounds, a budget beyond the grid or
            below the trials already submitted.
    """
    from disauto.submit.validate import check_budget_within_space
    from disauto.submit.validate import parallelism_value
    from disauto.submit.validate import trial_steps_value

    if trial_steps is None and parallelism is None:
        raise UpdateError("give --trial-steps N, --parallelism P or both")
    try:
        budget = None if trial_steps is None else trial_steps_value(trial_steps)
        if budget is not None:
            check_budget_within_space(job.config.search, budget)
        slots = None if parallelism is None else parallelism_value(parallelism)
        request = UpdateSearch(budget, slots)
        check_update(job.config.search, len(job.trials), request)
    except (UsageError, UpdateRefusedError) as err:
        raise UpdateError(str(err)) from None
    return request


def update_interrupted(job: Job, request: UpdateSearch) -> str:
    """Change an interrupted job's recorded spec (``da-job resume`` runs with it); what changed.
    """
    old = job.config
    new = replace(old, search=updated_spec(old.search, request))
    with JobRecord.in_folder(job.folder) as record:
        record.write({meta.CONFIG: new})
    return describe_change(old.search, new.search)


def update_running(job: Job, request: UpdateSearch, wait: float) -> str:
    """Ask the running job's framework for the change and wait for its answer; what changed.

    Raises:
        UpdateError: the framework refused it (its reason), the job ended first, or no answer
            came within ``wait`` seconds.
    """
    try:
        answer = ask(job, request, wait)
    except NoAnswerError as error:
        if error.ended:
            raise UpdateError(f"job {job.job_id} ended before it took the change",
                              ExitStatus.ERROR) from None
        raise UpdateError(f"job {job.job_id} did not answer within {wait:g} s; its "
                          "framework applies the change when it reads it",
                          ExitStatus.ERROR) from None
    if not answer.ok:
        raise UpdateError(f"job {job.job_id} refused the change: {answer.message}")
    return answer.message
