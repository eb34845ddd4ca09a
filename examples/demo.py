"""The paper's Fig. 3 AppRunner ("python demo.py"): a small neural network trained with SGD.

It tunes the two parameters of the paper's demo-parameters.json, ``momentum`` and
``learningRate``, on handwritten digits. With ``--input SRC#data`` it reads ``data/digits.npz``
(write one with ``python examples/make_digits_data.py SRC``); without it, scikit-learn's copy.
With ``--output DST#model`` it saves the trained model as ``model`` (a pickle of the network).
"""

from __future__ import annotations

from pathlib import Path
import pickle
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from apprunner_sdk import get_params
from apprunner_sdk import output_path
from apprunner_sdk import report


def load() -> tuple[np.ndarray, np.ndarray]:
    data = Path("data") / "digits.npz"
    if data.exists():
        arrays = np.load(data)
        return arrays["x"], arrays["y"]
    return load_digits(return_X_y=True)


def main() -> None:
    params = get_params()
    x, y = load()
    x = x / 16.0
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.3, random_state=0,
                                                      stratify=y)
    started = time.perf_counter()
    model = MLPClassifier(
        hidden_layer_sizes=(64,),
        solver="sgd",
        momentum=float(params.get("momentum", 0.9)),
        learning_rate_init=float(params.get("learningRate", 0.1)),
        max_iter=1,
        warm_start=True,
        random_state=0,
    )
    epochs = 15
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for epoch in range(epochs):
            model.fit(x_train, y_train)
            accuracy = float(model.score(x_val, y_val))
            if report(accuracy=accuracy, step=epoch):
                break
    # The model first, then the final result: a result that reaches --target ends the job.
    with output_path("model").open("wb") as handle:
        pickle.dump(model, handle)
    report(accuracy=accuracy, train_seconds=time.perf_counter() - started, final=True)
    print(f"accuracy={accuracy:.4f} with {params}")


if __name__ == "__main__":
    main()
