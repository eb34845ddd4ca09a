"""An example AppRunner that trains epoch by epoch: an MLP on scikit-learn's digits.

Reports the validation accuracy after every epoch (``report(accuracy=..., step=epoch)``) and
stops as soon as AppCore answers that the trial should stop (``--early-stopping``), then reports
its final accuracy. Tunes the learning rate, the L2 penalty and the hidden layer's width; 60
epochs take a few seconds on one core.

By hand: DISAUTO_PARAMS='{"learning_rate": 0.01, "alpha": 0.0001, "units": 64}' \\
    python sklearn_digits_epochs.py
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from apprunner_sdk import get_params
from apprunner_sdk import report


EPOCHS = 60


def main() -> None:
    params = get_params()
    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.3, random_state=0,
                                                      stratify=y)
    model = MLPClassifier(
        hidden_layer_sizes=(int(params.get("units", 64)),),
        learning_rate_init=float(params.get("learning_rate", 0.001)),
        alpha=float(params.get("alpha", 1e-4)),
        solver="sgd", momentum=0.9, batch_size=64, random_state=0,
    )
    classes = np.unique(y)
    started = time.perf_counter()
    accuracy = 0.0
    for epoch in range(EPOCHS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.partial_fit(x_train, y_train, classes=classes)
        accuracy = float(model.score(x_val, y_val))
        if report(accuracy=accuracy, step=epoch):
            break  # pruned (or the job ended): stop training now
    report(accuracy=accuracy, train_seconds=time.perf_counter() - started, final=True)
    print(f"accuracy={accuracy:.4f} after epoch {epoch} with {params}")


if __name__ == "__main__":
    main()
