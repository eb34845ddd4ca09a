"""The paper's TensorFlow CNN, shrunk to what ships offline: a small Keras CNN on 8x8 digits.

It trains on scikit-learn's handwritten digits (1,797 images of 8x8 pixels, no download) with
SGD and momentum, and tunes ``learning_rate`` (log scale), ``momentum``, ``batch_size``,
``filters``, ``dropout`` and ``epochs`` (the names of ``keras_digits_params.json``). Each epoch's
Keras logs (loss, accuracy, val_loss, val_accuracy) are reported through
:class:`apprunner_sdk.keras.ReportCallback`, which also reports the last epoch as the trial's
final result and stops training early when AppCore answers "stop".

The objective is **val_accuracy** (accuracy on the held-out 30 %), so submit the job with
``--objective val_accuracy``::

    da-submit --app-name keras-digits --files examples/keras_digits.py \\
        --app-runner-launch-cmd "python keras_digits.py" \\
        --tuning-type random-search --tuning-parameters examples/keras_digits_params.json \\
        --objective val_accuracy --trail-steps 12 --parallelism 2 --target 0.97

By hand (reports are printed as JSON lines; missing parameters take their defaults)::

    DISAUTO_PARAMS='{"learning_rate": 0.05, "epochs": 5}' python examples/keras_digits.py

Needs TensorFlow: ``pip install 'disauto[tf]'`` (tensorflow-cpu) on every agent that runs it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from apprunner_sdk import get_params


try:
    import keras
except ImportError:
    raise SystemExit(
        "keras_digits.py needs TensorFlow: pip install 'disauto[tf]' (or tensorflow-cpu)"
    ) from None

from apprunner_sdk.keras import ReportCallback  # noqa: E402 - needs keras, checked above


DEFAULTS: dict[str, Any] = {
    "learning_rate": 0.05,
    "momentum": 0.9,
    "batch_size": 32,
    "filters": 16,
    "dropout": 0.2,
    "epochs": 10,
}
"""The values used for parameters the assignment does not give."""


def load() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits as 8x8x1 images scaled to [0, 1]: a stratified 70/30 train/validation split."""
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype("float32").reshape(-1, 8, 8, 1)
    x_train, x_val, y_train, y_val = train_test_split(
        x, y, test_size=0.3, random_state=0, stratify=y
    )
    return x_train, x_val, y_train, y_val


def build_model(params: dict[str, Any]) -> keras.Model:
    """Conv2D -> max pooling -> dropout -> dense -> softmax, compiled with SGD + momentum."""
    model = keras.Sequential([
        keras.Input(shape=(8, 8, 1)),
        keras.layers.Conv2D(int(params["filters"]), 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Dropout(float(params["dropout"])),
        keras.layers.Flatten(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(
        optimizer=keras.optimizers.SGD(
            learning_rate=float(params["learning_rate"]), momentum=float(params["momentum"])
        ),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def main() -> keras.callbacks.History:
    params = {**DEFAULTS, **get_params()}
    keras.utils.set_random_seed(0)
    x_train, x_val, y_train, y_val = load()
    model = build_model(params)
    history = model.fit(
        x_train, y_train,
        validation_data=(x_val, y_val),
        epochs=int(params["epochs"]),
        batch_size=int(params["batch_size"]),
        callbacks=[ReportCallback()],  # reports every epoch, and the last one as final
        verbose=0,
    )
    val_accuracy = history.history["val_accuracy"][-1]
    print(f"val_accuracy={val_accuracy:.4f} after {len(history.epoch)} epochs with {params}")
    return history


if __name__ == "__main__":
    main()
