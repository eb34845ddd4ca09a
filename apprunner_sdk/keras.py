"""A Keras callback that reports every epoch's logs to AppCore and stops when told to.

    from apprunner_sdk.keras import ReportCallback
    model.fit(x, y, validation_split=0.2, epochs=20, callbacks=[ReportCallback()])

Each epoch's ``logs`` (loss, accuracy, val_accuracy, …) are reported with ``step=epoch``; when
AppCore answers "stop" the callback sets ``model.stop_training``. At the end of training the last
epoch's logs are reported as the final result (turn off with ``final=False`` to report it
yourself). Needs TensorFlow/Keras: ``pip install 'disauto[tf]'``.
"""

from __future__ import annotations

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
