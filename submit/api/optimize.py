"""``optimize(fn, space, ...)``: search a Python function's parameters, as Optuna's
``study.optimize(fn)`` and Ray Tune's ``Tuner(fn).fit()`` do, each trial a DisAuto trial.

    from disauto import optimize

    def objective(params):                       # the trial's parameters, a dict
        return 1 - (params["x"] - 0.3) ** 2      # its objective (or a dict, or a tuple)

    record = optimize(objective, {"parameters": [{"name": "x", "type": "bound",
                                                  "value": [0, 1]}]}, n_trials=8, parallelism=2)
    record.best.assignment, record.to_dataframe()

The function travels to the trials by value (cloudpickle, :mod:`common.shipped_function`), in a
file of the job's folder shipped as ``--files`` are; each trial runs it under ``apprunner_sdk``
(``python -m apprunner_sdk.function_runner``), which hands it the trial's parameters and
reports what it returns. The other keywords are :func:`submit`'s (``da-submit``'s flags);
``optimize`` blocks until the job ends and returns its record, as :func:`load_job` reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import inspect
import numbers
import os
import re
from types import ModuleType
from typing import Any

from disauto.common import paths
from disauto.common.shipped_function import FILE_NAME
from disauto.common.shipped_function import ShippingError
from disauto.common.shipped_function import dumps
from disauto.framework.record import JobRecord as StoredRecord
from disauto.framework.record import meta
from disauto.submit.api.handle import Job
from disauto.submit.api.handle import JobError
from disauto.submit.api.handle import SubmitError
from disauto.submit.api.handle import start
from disauto.submit.api.options import PARAMETERS
from disauto.submit.api.record import JobRecord
from disauto.submit.parser import build_parser


__all__ = ["RUNNER_COMMAND", "optimize"]

RUNNER_COMMAND = f"python -m apprunner_sdk.function_runner {FILE_NAME}"
"""Each trial's launch command: the SDK's runner of the shipped function."""
SET_BY_OPTIMIZE = {
    "app_runner_launch_cmd": "each trial runs the function",
    PARAMETERS: "the space is optimize()'s second argument",
    "trail_steps": "the budget is n_trials", "trial_steps": "the budget is n_trials",
}
"""Keywords of submit() that optimize() sets itself, and why."""
RENAMED = (("--trail-steps", "n_trials"), (f"{PARAMETERS}:", "space:"),
           ("--tuning-parameters", "space"), ("--master", "master"))
"""How da-submit's words for what optimize() takes as its own arguments are said."""


def optimize(fn: Callable[[dict[str, Any]], Any], space: Mapping[str, Any] | str | os.PathLike,
             n_trials: int = 20, master: str = "local", *,
             modules: Sequence[ModuleType | str] = (), **options: Any) -> JobRecord:
    """Search ``fn``'s parameters over ``space`` with ``n_trials`` trials on ``master``, and
    return the job's record once it has ended.

    Args:
        fn: called in each trial with the trial's parameters (a dict, as ``get_params()``
            gives a script); returns the objective's value (a number), a dict of metrics
            holding every objective, or a tuple of the objectives' values; or reports its final
            result itself (``apprunner_sdk.report(..., final=True)``) and returns None. It may
            report steps (``report(accuracy=a, step=epoch)``). A function that raises fails
            its trial, the exception's last line its message.
        space: the parameter file's content (``{"parameters": [...]}``) or the file.
        n_trials: the budget (``--trial-steps``).
        master: ``"local"`` (the embedded cluster, as ``da-submit --master local``), a
            master's ``host:port`` or ``zk://...``.
        modules: modules (or their names) that ``fn`` uses and the trials cannot import:
            pickled by value with it. A function defined in ``__main__`` (a script, a notebook)
            is already.
        **options: :func:`submit`'s keywords (``parallelism``, ``tuning_type``, ``objective``,
            ``direction``, ``app_runner_cpus``, ``app_runner_memory``, ``files``...);
            ``app_name`` defaults to the function's name.

    Raises:
        SubmitError: a bad argument (nothing is started), or the job ended as it started
            (its framework never registered): one line saying what is wrong.
        KeyboardInterrupt: interrupted while it waits: the job is killed first.
    """
    try:
        checked = _checked(fn, n_trials, master, options)
        shipped = dumps(fn, _objectives(checked.get("objective")), modules)
    except ShippingError as error:
        raise SubmitError(str(error)) from None
    keywords = {**checked, "app_name": checked.get("app_name") or _name(fn),
                "app_runner_launch_cmd": RUNNER_COMMAND, PARAMETERS: space,
                "trial_steps": int(n_trials), "master": master}
    try:
        job = start(keywords, {FILE_NAME: shipped})
    except SubmitError as error:
        raise SubmitError(_renamed(str(error), space)) from None
    return _until_ended(job)


def _checked(fn: Any, n_trials: Any, master: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` once optimize()'s own arguments are known to be of the right kind.

    Raises:
        SubmitError: one is not (one line naming it).
    """
    if not callable(fn):
        raise SubmitError(f"fn: expected a function of the trial's parameters, not "
                          f"{type(fn).__name__}")
    try:
        inspect.signature(fn).bind({})
    except TypeError as error:
        raise SubmitError(f"fn: must take one argument, the trial's parameters (a dict): "
                          f"{error}") from None
    except ValueError:
        pass  # a callable whose signature Python cannot tell: called as it is
    if isinstance(n_trials, bool) or not isinstance(n_trials, numbers.Integral) or n_trials < 1:
        raise SubmitError(f"n_trials: expected a whole number of trials, at least 1, not "
                          f"{n_trials!r}")
    if not isinstance(master, str) or not master:
        raise SubmitError(f"master: expected 'local' or a master's address, not {master!r}")
    for key, why in SET_BY_OPTIMIZE.items():
        if key in options:
            raise SubmitError(f"{key}: not an option of optimize(): {why}")
    return dict(options)


def _objectives(given: Any) -> list[str]:
    """The job's objectives as ``objective=`` names them (da-submit's default without it);
    a value da-submit refuses is refused when the job is checked, before anything runs."""
    if given is None:
        given = build_parser().get_default("objective")
    items = given.split(",") if isinstance(given, str) else \
        list(given) if isinstance(given, Sequence) else [given]
    return [str(item).strip() for item in items]


def _name(fn: Callable[..., Any]) -> str:
    """The job's name from the function's (``objective``; a lambda's is ``lambda``)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", getattr(fn, "__name__", "")).strip("-")
    return name or "objective"


def _renamed(message: str, space: Any) -> str:
    """da-submit's line about a flag optimize() takes as an argument, in the argument's name
    (a parameter file's error names the file: it is the space's)."""
    for flag, name in RENAMED:
        if message.startswith(flag):
            return name + message[len(flag):]
    if isinstance(space, str | os.PathLike) and message.startswith(os.fspath(space)):
        return f"space {message}"
    return message


def _until_ended(job: Job) -> JobRecord:
    """Wait for the job's end and read its record; interrupted, the job is killed first.

    Raises:
        SubmitError: it ended as it started (its framework never registered).
    """
    try:
        status = job.wait()
    except KeyboardInterrupt:
        try:
            job.kill()
        except JobError:
            pass  # it had ended meanwhile
        raise
    if status.state == "ended" and not status.done \
            and not StoredRecord.peek(job.folder / paths.JOB_DB)[meta.FRAMEWORK_REGISTERED]:
        raise SubmitError(status.message or f"job {job.job_id} ended as it started "
                          f"({status.outcome}); its output: {job.folder / paths.DETACHED_OUT}")
    return job.load()
