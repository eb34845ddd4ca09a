"""A Keras callback that reports every epoch's logs to AppCore and stops when told to.

    from apprunner_sdk.keras import ReportCallback
    model.fit(x, y, validation_split=0.2, epochs=20, callbacks=[ReportCallback()])

Each epoch's ``logs`` (loss, accuracy, val_accuracy, …) are reported with ``step=epoch``; when
AppCore answers "stop" the callback sets ``model.stop_training``. At the end of training the last
epoch's logs are reported as the final result (turn off with ``final=False`` to report it
yourself). Needs TensorFlow/Keras: ``pip install 'disauto[tf]'``.

``CheckpointCallback`` saves the model's weights as the trial's checkpoint every N epochs
(``apprunner_sdk.save_checkpoint``), and ``restore`` loads the one a try run again resumes from::

    checkpoints = CheckpointCallback(every=2)
    start = checkpoints.restore(model)              # 0, or the epoch after the checkpoint's
    model.fit(x, y, epochs=20, initial_epoch=start, callbacks=[checkpoints, ReportCallback()])
"""

from __future__ import annotations

import sys
from typing import Any

import apprunner_sdk


try:
    import keras
except ImportError as err:  # pragma: no cover - exercised only without keras installed
    raise ImportError(
        "apprunner_sdk.keras needs Keras (TensorFlow). Install it with "
        "`pip install 'disauto[tf]'` or `pip install tensorflow-cpu`."
    ) from err


def _numeric(logs: dict[str, Any] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in (logs or {}).items():
        try:
            out[name] = float(value)
        except (TypeError, ValueError):
            continue
    return out


class ReportCallback(keras.callbacks.Callback):
    """Report each epoch to AppCore; stop training when AppCore says so.

    Args:
        final: report the last epoch's metrics as the trial's final result at train end.
    """

    def __init__(self, final: bool = True) -> None:
        super().__init__()
        self._final = final
        self._last: dict[str, float] = {}

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        metrics = _numeric(logs)
        if not metrics:
            return
        self._last = metrics
        if apprunner_sdk.report(step=epoch, **metrics):
            self.model.stop_training = True

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        metrics = _numeric(logs) or self._last
        if self._final and metrics:
            apprunner_sdk.report(final=True, **metrics)


class CheckpointCallback(keras.callbacks.Callback):
    """Save the model's weights as the trial's checkpoint every ``every`` epochs.

    A checkpoint that is not kept (over ``--checkpoint-max-size``, the disk full) is one line on
    standard error and training goes on.

    Args:
        every: save after every ``every``-th epoch (its step is the epoch's index).
        filename: the weights' file in the working directory (``.weights.h5``).
    """

    def __init__(self, every: int = 1, filename: str = "checkpoint.weights.h5") -> None:
        super().__init__()
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"CheckpointCallback: every must be an int >= 1, got {every!r}")
        self._every = every
        self._filename = filename

    def restore(self, model: Any) -> int:
        """Load the weights this try resumes from into ``model``; the epoch to go on from
        (``model.fit``'s ``initial_epoch``): 0 when it starts from scratch."""
        saved = apprunner_sdk.load_checkpoint()
        step = apprunner_sdk.checkpoint_step()
        if saved is None or step is None:
            return 0
        model.load_weights(str(saved))
        return step + 1

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if (epoch + 1) % self._every:
            return
        self.model.save_weights(self._filename)
        try:
            apprunner_sdk.save_checkpoint(self._filename, step=epoch)
        except apprunner_sdk.CheckpointError as err:
            print(f"CheckpointCallback: epoch {epoch} not checkpointed: {err}",
                  file=sys.stderr, flush=True)
