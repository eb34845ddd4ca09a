"""DisAuto: distributed hyperparameter search on Apache Mesos.

Installed, DisAuto's packages live under this one name (``disauto.framework``,
``disauto.appcore``, ``disauto.common``, ``disauto.submit``, ``disauto.localmesos``,
``disauto.protos``) so that generic names cannot collide with other distributions in
site-packages or in a training image. The repository keeps each package in its own top-level
folder; ``setup.py`` maps them here. The runner SDK stays ``apprunner_sdk``, as users' scripts
import it.

The Python API (``disauto.submit.api``; README, "The Python API")::

    from disauto import submit, load_job, optimize, list_jobs
    job = submit(app_name=..., files=[...], app_runner_launch_cmd=..., ...)
    job.wait()
    record = load_job(job.job_id)
    record = optimize(objective, space, n_trials=16)   # a function as the trials' objective

``disauto.submit`` is the package of ``da-submit`` and ``da-job``, so ``from disauto import
submit`` gives that package, which makes itself callable (``submit/__init__.py``); calling it
is :func:`disauto.submit.api.submit`. Importing ``disauto`` imports nothing else but
``disauto.common.registry`` (the lazy-attribute helper, standard library only), so a runner
image that holds only the SDK, ``disauto.common`` and ``disauto.protos`` imports it too; the
API's names are looked up when first used, so gRPC, pymesos and Optuna load only when a job is
submitted or read.
"""

from __future__ import annotations

from disauto.common.registry import lazy_attributes


__version__ = "0.1.0"

API = ("optimize", "list_jobs", "load_job", "Job", "JobError", "JobLookupError", "JobRecord",
       "Status", "SubmitError", "Trial", "Try")
"""The names of ``disauto.submit.api`` this package gives, loaded on first use."""

__all__ = ["submit", *API]

# dir(disauto) shows __all__ and the dunders: what a notebook completes, not what is imported.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "submit": "disauto.submit", **{name: f"disauto.submit.api:{name}" for name in API}})
