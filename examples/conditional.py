"""Conditional parameters: a small neural network on scikit-learn's digits whose optimizer's own
settings exist only for that optimizer.

conditional_params.json gives ``momentum`` and ``nesterov`` only ``"when": {"optimizer":
"sgd"}`` and ``beta_1`` only when the optimizer is ``adam``, so a trial gets exactly the settings
its optimizer reads: ``get_params()`` has no key for the others. Grid search runs each valid
combination once; random search and Bayesian search (Optuna's define-by-run) draw only the
active ones. Run it as

    da-submit --app-name conditional --files conditional.py \\
      --app-runner-launch-cmd "python conditional.py" \\
      --tuning-parameters conditional_params.json --tuning-type bayesian --trail-steps 20

Each trial trains for about a second. By hand:
DISAUTO_PARAMS='{"optimizer": "sgd", "momentum": 0.9, "nesterov": "yes",
                 "learning_rate": 0.05}' python conditional.py
"""

from __future__ import annotations

import warnings

from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from apprunner_sdk import get_params
from apprunner_sdk import report


def main() -> None:
    params = get_params()
    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.3, random_state=0,
                                                      stratify=y)
    solver = str(params.get("optimizer", "adam"))
    settings: dict[str, object] = {}
    if solver == "sgd":
        settings = {"momentum": float(params["momentum"]),
                    "nesterovs_momentum": params["nesterov"] == "yes"}
    elif solver == "adam":
        settings = {"beta_1": float(params["beta_1"])}
    model = MLPClassifier(hidden_layer_sizes=(32,), solver=solver, max_iter=15, random_state=0,
                          learning_rate_init=float(params.get("learning_rate", 0.01)),
                          **settings)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x_train, y_train)
    accuracy = float(model.score(x_val, y_val))
    report(accuracy=accuracy, final=True)
    print(f"accuracy={accuracy:.4f} with {params}")


if __name__ == "__main__":
    main()
