"""The Python API with a function as the objective: ``optimize(fn, space, ...)`` searches a
support vector machine's ``C`` and ``gamma`` on scikit-learn's digits, 6 trials 2 at a time on
the embedded cluster, as Optuna's ``study.optimize(fn)`` would in one process. From the
repository, after ``make venv``:

    .venv/bin/python examples/optimize_digits.py

The function is defined here, in ``__main__`` (a notebook cell works the same): ``optimize``
ships it to the trials by value, each trial calls it with its parameters (a dict) and reports
what it returns. The script prints the best trial and the trials as a pandas DataFrame.
"""

from __future__ import annotations

from sklearn.datasets import load_digits
from sklearn.model_selection import cross_val_score
from sklearn.svm import SVC

from disauto import optimize


SPACE = {"parameters": [
    {"name": "C", "type": "bound", "value": [0.1, 100.0], "log": True},
    {"name": "gamma", "type": "bound", "value": [0.0001, 0.1], "log": True},
]}
DIGITS = 600
"""The first digits only: each trial takes about a second."""


def accuracy(params: dict[str, float]) -> float:
    """The model's mean accuracy over 3 folds of the first :data:`DIGITS` digits."""
    features, labels = load_digits(return_X_y=True)
    model = SVC(C=params["C"], gamma=params["gamma"])
    return float(cross_val_score(model, features[:DIGITS] / 16.0, labels[:DIGITS], cv=3).mean())


def main() -> None:
    record = optimize(accuracy, SPACE, n_trials=6, parallelism=2, seed=7,
                      app_runner_cpus=0.5, app_runner_memory="512M",
                      app_core_cpus=0.5, app_core_memory="256M")
    print(f"job {record.job_id}: {record.outcome}, {len(record.trials)} trials")
    if record.best is not None:
        print(f"best: trial {record.best.number} accuracy={record.best.objective:.4f} "
              f"with {record.best.assignment}")
    try:
        frame = record.to_dataframe()
    except ImportError as error:  # pandas is not installed
        print(error)
        return
    print(frame[["number", "state", "values_accuracy", "params_C", "params_gamma",
                 "duration"]].to_string(index=False))


if __name__ == "__main__":
    main()
