"""A fast example AppRunner: an SVM on scikit-learn's handwritten digits (shipped offline).

Tunes the SVM's C and gamma and the share of data used for training; reports validation
accuracy (the objective) and training time. Runs in about a second.

By hand: DISAUTO_PARAMS='{"C": 3.0, "gamma": 0.001, "kernel": "rbf"}' python sklearn_digits.py
"""

from __future__ import annotations

import time

from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

from apprunner_sdk import get_params
from apprunner_sdk import report


def main() -> None:
    params = get_params()
    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.3, random_state=0,
                                                      stratify=y)
    started = time.perf_counter()
    model = SVC(
        C=float(params.get("C", 1.0)),
        gamma=float(params.get("gamma", 0.01)),
        kernel=str(params.get("kernel", "rbf")),
    )
    model.fit(x_train, y_train)
    accuracy = float(model.score(x_val, y_val))
    report(accuracy=accuracy, train_seconds=time.perf_counter() - started, final=True)
    print(f"accuracy={accuracy:.4f} with {params}")


if __name__ == "__main__":
    main()
