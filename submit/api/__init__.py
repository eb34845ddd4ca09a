"""DisAuto's Python API: submit a job from Python (a notebook) and read jobs back.

    from disauto import submit, load_job

    job = submit(app_name="digits", files=["train.py"], app_runner_launch_cmd="python train.py",
                 tuning_type="random-search", tuning_parameters={"parameters": [...]},
                 trail_steps=16, parallelism=4)
    job.wait()                      # the job runs in the background, as da-submit --detach
    record = load_job(job.job_id)   # trials, best, pareto_front, to_dataframe()

    record = optimize(objective, space, n_trials=16, parallelism=4)  # a function, not a script
    list_jobs()                     # every job under $DISAUTO_HOME, as da-job list

:func:`submit` takes ``da-submit``'s flags as keywords and checks them with its validators
(:mod:`submit.api.options`, :mod:`submit.api.handle`); :func:`optimize` ships a function to the
trials and waits for the job (:mod:`submit.api.optimize`); :func:`load_job` reads a job's
record (:mod:`submit.api.record`).
"""

from __future__ import annotations

from disauto.submit.api.handle import Job
from disauto.submit.api.handle import JobError
from disauto.submit.api.handle import Status
from disauto.submit.api.handle import SubmitError
from disauto.submit.api.handle import list_jobs
from disauto.submit.api.handle import submit
from disauto.submit.api.optimize import optimize
from disauto.submit.api.record import JobRecord
from disauto.submit.api.record import Trial
from disauto.submit.api.record import Try
from disauto.submit.api.record import load_job
from disauto.submit.jobs import JobLookupError


__all__ = ["Job", "JobError", "JobLookupError", "JobRecord", "Status", "SubmitError", "Trial",
           "Try", "list_jobs", "load_job", "optimize", "submit"]
