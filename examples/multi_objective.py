"""Two objectives and a constraint: a small neural network on scikit-learn's digits, tuned for
validation accuracy (up) and prediction latency (down), within a model-size budget.

Each trial reports ``accuracy`` and ``latency_ms`` (the milliseconds to classify 1000 digits)
with its result, and one constraint: the network's weights in thousands minus 20, so a network
with more than 20,000 weights is infeasible (never the best, off the Pareto front). Run it as

    da-submit --app-name pareto --files multi_objective.py \\
      --app-runner-launch-cmd "python multi_objective.py" \\
      --tuning-parameters multi_objective_params.json \\
      --objective accuracy,latency_ms --direction maximize,minimize \\
      --tuning-type bayesian --bayes-backend nsga2 --trail-steps 40 --parallelism 4

and results.json's ``pareto_front`` lists the trials no other beats on both. Each trial trains
for about a second. By hand:
DISAUTO_PARAMS='{"width": 32, "layers": 2, "learning_rate": 0.01}' python multi_objective.py
"""

from __future__ import annotations

import time
import warnings

from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from apprunner_sdk import get_params
from apprunner_sdk import report


WEIGHT_BUDGET = 20_000
"""The most weights a feasible network has."""


def main() -> None:
    params = get_params()
    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.3, random_state=0,
                                                      stratify=y)
    width, layers = int(params.get("width", 32)), int(params.get("layers", 1))
    model = MLPClassifier(hidden_layer_sizes=(width,) * layers, max_iter=10, random_state=0,
                          learning_rate_init=float(params.get("learning_rate", 0.01)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x_train, y_train)
    accuracy = float(model.score(x_val, y_val))
    started = time.perf_counter()
    for _ in range(5):
        model.predict(x_val)
    latency_ms = (time.perf_counter() - started) / 5 / len(x_val) * 1000 * 1000
    weights = sum(layer.size for layer in model.coefs_)
    report(accuracy=accuracy, latency_ms=latency_ms, weights=weights, final=True,
           constraints=[weights / 1000 - WEIGHT_BUDGET / 1000])
    print(f"accuracy={accuracy:.4f} latency={latency_ms:.3f} ms/1000 weights={weights} "
          f"with {params}")


if __name__ == "__main__":
    main()
