"""What a training script imports to run as a DisAuto AppRunner.

    from apprunner_sdk import get_params, report

    params = get_params()                       # {"learning_rate": 0.01, "batch_size": 64}
    for epoch in range(10):
        ...
        if report(accuracy=acc, step=epoch):     # True: stop now (early stopping / job over)
            break
    report(accuracy=acc, final=True)             # the trial's result

A long trial checkpoints, so that a try run again (its agent drained, lost, or its script
failed under ``--trial-retries``) goes on where the last one was instead of from step 0::

    start = 0
    if (saved := load_checkpoint()) is not None:    # this try resumes: the latest checkpoint
        model.load(saved); start = checkpoint_step() + 1
    for epoch in range(start, 10):
        ...
        model.save("model.pt"); save_checkpoint("model.pt", step=epoch)
        report(accuracy=acc, step=epoch)

A search of several objectives (``da-submit --objective accuracy,latency``) needs each of them in
the final report (``report(accuracy=acc, latency=ms, final=True)``); a constrained one gets the
trial's constraints with it (``report(accuracy=acc, final=True, constraints=[mem_gb - 4])``: a
value <= 0 is satisfied, a trial with one above 0 is infeasible and never the best).

Inside a DisAuto task the assignment, AppCore's address and the trial's token come from the
environment the framework sets. Run by hand, with just ``DISAUTO_PARAMS='{"lr": 0.1}'`` (or
nothing: ``get_params()`` then returns ``{}``), the same script works: reports are printed to
standard output as JSON lines instead of being sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import json
import numbers
import os
from pathlib import Path
import sys
import threading
import time
from typing import Any

from apprunner_sdk import gpu
from apprunner_sdk.client import AppCoreClient
from apprunner_sdk.client import AppCoreUnreachableError
from apprunner_sdk.client import ReportRejectedError
from disauto.common import task_env
from disauto.common import tls
from disauto.common.metrics import MetricError
from disauto.common.metrics import check_constraints
from disauto.common.metrics import check_metrics


__all__ = [
    "AppCoreUnreachableError",
    "CheckpointError",
    "ReportRejectedError",
    "checkpoint_step",
    "get_params",
    "load_checkpoint",
    "output_path",
    "report",
    "save_checkpoint",
    "should_stop",
    "trial_number",
]

_START = time.monotonic()


class _Trial:
    """This process's trial: its assignment, its connection, whether it ended."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.params = _parse_params(environ.get(task_env.PARAMS, ""))
        number = environ.get(task_env.TRIAL_NUMBER, "")
        self.number: int | None = int(number) if number.isdigit() else None
        self.output_dir = environ.get(task_env.OUTPUT_DIR, "")
        self.output_name = environ.get(task_env.OUTPUT_NAME, "")
        self.final_sent = False
        self.stop = False
        self.lock = threading.Lock()
        self.client = _client(environ, self.number)
        # The trial's GPU figures are measured here, where its GPUs are (apprunner_sdk.gpu),
        # and sent on a connection of their own, so the sampler's thread never waits on a
        # report's retries (nor they on it).
        self.gpu_client = _client(environ, self.number)
        self.gpu = gpu.start_sampler(environ, self.gpu_client.send_gpu_samples) \
            if self.gpu_client is not None else None

    def close(self) -> None:
        if self.gpu is not None:
            self.gpu.stop()
        for client in (self.gpu_client, self.client):
            if client is not None:
                client.close()


def _client(environ: Mapping[str, str], number: int | None) -> AppCoreClient | None:
    """A client of AppCore for the trial, or None outside DisAuto."""
    address = environ.get(task_env.APPCORE_ADDR, "")
    if not address or number is None:
        return None
    return AppCoreClient(
        address,
        environ.get(task_env.FRAMEWORK_ADDR, ""),
        number,
        environ.get(task_env.TRIAL_TOKEN, ""),
        master_address=environ.get(task_env.MASTER_ADDR, ""),
        framework_id=environ.get(task_env.FRAMEWORK_ID, ""),
        appcore_certificate=environ.get(task_env.APPCORE_CERT, ""),
        framework_trust=tls.framework_trust(environ),
    )


_trial: _Trial | None = None
_trial_lock = threading.Lock()


def _current() -> _Trial:
    global _trial
    with _trial_lock:
        if _trial is None:
            _trial = _Trial(os.environ)
        return _trial


def _reset_for_tests() -> None:
    """Forget the trial so the next call re-reads the environment (tests only)."""
    global _trial
    with _trial_lock:
        if _trial is not None:
            _trial.close()
        _trial = None


def _after_fork_in_child() -> None:
    """A process forked from one that imported the SDK (a warm slot's pre-imported
    interpreter, ``--slot-preload``) is a new trial: its clock starts now and it reads its own
    environment. The parent's connection, if any, is left to the parent."""
    global _START, _trial, _trial_lock
    _START = time.monotonic()
    _trial = None
    _trial_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _parse_params(text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{task_env.PARAMS} is not valid JSON: {err}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{task_env.PARAMS} must be a JSON object, got {type(value).__name__}")
    return value


def get_params() -> dict[str, Any]:
    """The trial's parameter assignment: name → value (float, int or str)."""
    return dict(_current().params)


def trial_number() -> int | None:
    """The trial's number, or None when the script runs outside DisAuto."""
    return _current().number


def output_path(name: str | None = None) -> Path:
    """Where to write an output (``--output DST#NAME``): ``DST/trial-NNNN/NAME``.

    Outside DisAuto it is ``./NAME`` (``./output`` without a name). The folder is created.
    """
    trial = _current()
    base = Path(trial.output_dir) if trial.output_dir else Path.cwd()
    base.mkdir(parents=True, exist_ok=True)
    return base / (name or trial.output_name or "output")


def _check_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    try:
        return check_metrics(metrics, what="report()")
    except MetricError as err:
        message = str(err)
        raise ValueError(message if message.startswith("report()") else f"report(): {message}") \
            from None
    except TypeError as err:
        raise TypeError(f"report(): {err}") from None


def _check_constraints(constraints: Any, final: bool) -> tuple[float, ...]:
    try:
        return check_constraints(constraints, final)
    except MetricError as err:
        raise ValueError(f"report(): {err}") from None
    except TypeError as err:
        raise TypeError(f"report(): {err}") from None


def report(*, step: int | None = None, final: bool = False,
           constraints: Sequence[float] | None = None, **metrics: Any) -> bool:
    """Report metrics to AppCore. Returns True when the trial should stop now.

    Args:
        step: the training step (epoch) of an intermediate report; omit for the final one.
        final: mark these metrics as the trial's result. Nothing may be reported after it.
        constraints: with ``final=True``: the trial's constraints, finite numbers; a value
            ``<= 0`` is satisfied, and a trial with one above 0 is infeasible (marked in the
            results, never the best; the search learns from it with ``--bayes-backend tpe``
            or ``nsga2``).
        **metrics: name=value pairs; values must be finite numbers. At most 256 a report
            (and 256 names over all of a trial's reports), names at most 128 characters.

    Raises:
        TypeError: a metric or constraint is not a number.
        ValueError: a metric or constraint is not finite, no metric was given, too many
            (or too long a name), or constraints came without ``final=True``.
        RuntimeError: the final result was already reported.
        AppCoreUnreachableError: AppCore could not be reached after bounded retries.
    """
    if step is not None:
        # Any integral number is a step: a training loop's counter is often a NumPy integer.
        if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
            raise TypeError(f"report(): step must be a non-negative int, got {step!r}")
        step = int(step)
    checked = _check_metrics(metrics)
    bounds = _check_constraints(constraints, final)
    trial = _current()
    elapsed = time.monotonic() - _START
    with trial.lock:
        if trial.final_sent:
            raise RuntimeError(
                f"report(): trial {trial.number} already reported its final result; "
                "report(final=True) must come last"
            )
        if trial.client is None:
            line = {"trial": trial.number, "step": step, "final": final, "metrics": checked,
                    "elapsed_seconds": round(elapsed, 3)}
            if bounds:
                line["constraints"] = list(bounds)
            print("[disauto] " + json.dumps(line), file=sys.stdout, flush=True)
            stop = False
        else:
            stop = trial.client.report(checked, step=step, final=final, elapsed_seconds=elapsed,
                                       constraints=bounds)
        if final:
            trial.final_sent = True
        trial.stop = trial.stop or stop
        return trial.stop


def should_stop() -> bool:
    """True once AppCore answered a report with "stop" (the job ended or the trial was pruned)."""
    return _current().stop


def __getattr__(name: str) -> Any:
    """``CheckpointError``, imported when a script first asks for it: most never checkpoint,
    and every trial pays the SDK's import."""
    if name == "CheckpointError":
        from disauto.common.checkpoints import CheckpointError

        return CheckpointError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def save_checkpoint(path_or_dir: str | os.PathLike[str], *, step: int) -> str:
    """Save a file or a folder as the trial's checkpoint at ``step``; its name.

    It is uploaded to the framework (stored in the job's folder), or written to
    ``--checkpoint-dir`` when the job has one; whole or not at all. The trial keeps its latest
    ``--checkpoint-keep`` checkpoints (the oldest dropped). Outside DisAuto a line on standard
    output says what would have been saved.

    Raises:
        TypeError: ``step`` is not a non-negative int.
        FileNotFoundError: ``path_or_dir`` does not exist.
        CheckpointError: it was not saved, in one line: over ``--checkpoint-max-size``, the
            disk full, the framework unreachable, or this try is over (a later one runs).
            The checkpoints saved before are kept, and the trial may go on.
    """
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
        raise TypeError(f"save_checkpoint(): step must be a non-negative int, got {step!r}")
    source = Path(path_or_dir)
    if not source.exists():
        raise FileNotFoundError(f"save_checkpoint(): {source} does not exist")
    from apprunner_sdk import checkpoints  # here: a script that never checkpoints pays nothing

    return checkpoints.save(source, int(step), os.environ)


def load_checkpoint() -> Path | None:
    """The checkpoint this try resumes from, or None when it starts from scratch.

    A try runs again from its trial's latest checkpoint when the one before was lost (its agent
    drained, gone or partitioned past ``--unreachable-timeout``, its task killed) or failed
    (``--trial-retries``). The checkpoint is fetched into the sandbox on the first call; the
    path is the file or folder as it was saved (its own name). ``checkpoint_step()`` is its
    step: go on after it.

    Raises:
        CheckpointError: it could not be fetched (one line).
    """
    from apprunner_sdk import checkpoints

    return checkpoints.load(os.environ)


def checkpoint_step() -> int | None:
    """The step of the checkpoint this try resumes from (``load_checkpoint()``'s), or None."""
    text = os.environ.get(task_env.RESUME_CHECKPOINT, "")
    if not text:
        return None
    try:
        step = json.loads(text).get("step")
    except (json.JSONDecodeError, AttributeError):
        return None
    return int(step) if isinstance(step, int) else None
