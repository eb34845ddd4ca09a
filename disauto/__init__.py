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
is :func:`disauto.submit.api.submit`. Importing ``disauto`` imports nothing else, so a runner
image that holds only the SDK, ``disauto.common`` and ``disauto.protos`` imports it too; the
API's names are looked up when first used, so gRPC, pymesos and Optuna load only when a job is
submitted or read.
"""

from __future__ import annotations

import importlib
from typing import Any


__version__ = "0.1.0"

API = ("optimize", "list_jobs", "load_job", "Job", "JobError", "JobLookupError", "JobRecord",
       "Status", "SubmitError", "Trial", "Try")
"""The names of ``disauto.submit.api`` this package gives, loaded on first use."""

__all__ = ["submit", *API]


def __getattr__(name: str) -> Any:
    if name == "submit":
        return importlib.import_module("disauto.submit")
    if name in API:
        return getattr(importlib.import_module("disauto.submit.api"), name)
    raise AttributeError(f"module 'disauto' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, the API's among them though they load on first use, and the module's
    own dunders (``dir(disauto)``, a notebook's completion); not what the module imports."""
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})
