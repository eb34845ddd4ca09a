"""A synthetic AppRunner: a documented model of a small CNN trained on MNIST, for benchmarks.

The paper's experiments (Li, Lu, Sun 2019, §3) tune five parameters of a CPU TensorFlow CNN on
MNIST and end a job at 95 % accuracy. This machine has two cores, so the benchmarks run this
script instead: it computes the accuracy such a network would reach and the time its training
would take from a model of both (below), sleeps that time scaled by ``--time-scale``, and reports
through the real SDK. Everything around it -- da-submit, the framework, Mesos offers, AppCore,
the runner's process and its reports -- is the real system.

The model (``model(params)``; all constants are module-level and listed in docs/benchmarks.md):

Accuracy of SGD with momentum on MNIST's 60 000 training images, tested on 10 000:

* ``steps = epochs * ceil(60000 / batch_size)`` updates;
* the effective step size of SGD with momentum is ``lr_eff = learning_rate / (1 - momentum)``;
  its best value grows with the batch size as ``LR_BEST * sqrt(batch_size / 64)`` (the
  square-root scaling rule);
* ``d = log10(lr_eff / best)``: training diverges (the network predicts one class: 11.35 %
  accuracy, the share of "1"s in the test set) when ``d > DIVERGE_DECADES``; otherwise the
  learning speed is ``q = exp(-d^2 / (2 * LR_WIDTH^2))`` (too small a step learns slowly);
* dropout slows learning (``1 - DROPOUT_SLOWDOWN * dropout``) and, above 0.5, raises the error
  floor; the error floor of this network is ``ERROR_FLOOR`` (99.3 % at best);
* the test error follows a power law in the effective number of updates
  ``u = steps * q * (1 - DROPOUT_SLOWDOWN * dropout)``:
  ``error = floor + ERROR_SCALE * (1 + u / U0) ** -POWER``;
* training noise: ``N(0, NOISE)`` on the accuracy, drawn from a seed made of the parameters, so
  one assignment always gives the same result (a seeded training run).

Training time on the paper's 4-CPU runner: ``STARTUP`` seconds (load MNIST, build the graph), then
per epoch ``steps_per_epoch * (STEP_OVERHEAD + batch_size * PER_SAMPLE)`` plus ``EVAL`` for the
test pass. The script sleeps ``time_scale`` times that.

Run by hand::

    DISAUTO_PARAMS='{"learning_rate": 0.03, "momentum": 0.5, "batch_size": 64, "epochs": 3,
                     "dropout": 0.2}' python synthetic_cnn.py --time-scale 0
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
import hashlib
import json
import math
import random
import sys
import time
from typing import Any


TRAIN_IMAGES = 60_000
CHANCE_ACCURACY = 0.1135  # a diverged network predicts "1": 1135 of MNIST's 10 000 test images
LR_BEST = 0.03
LR_WIDTH = 0.35  # decades
DIVERGE_DECADES = 1.3
DROPOUT_SLOWDOWN = 0.5
ERROR_FLOOR = 0.007
ERROR_SCALE = 0.9
U0 = 100.0
POWER = 0.8
NOISE = 0.004
STARTUP = 4.0  # seconds
STEP_OVERHEAD = 0.001  # seconds per update
PER_SAMPLE = 0.00012  # seconds per image
WEIGHT_DECAY_COST = 2.0  # error added per unit of L2 weight decay
TIME_JITTER = 0.1  # relative spread of the training time between assignments
EVAL = 1.0  # seconds per epoch

DEFAULTS: Mapping[str, Any] = {
    "learning_rate": 0.01, "momentum": 0.5, "batch_size": 64, "dropout": 0.2,
    "weight_decay": 0.0001, "epochs": 3,
}


def _seeded(params: Mapping[str, Any]) -> random.Random:
    key = json.dumps({k: params[k] for k in sorted(params)}, sort_keys=True, default=str)
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


def model(params: Mapping[str, Any]) -> tuple[float, float]:
    """The accuracy and the training time (seconds, unscaled) of one assignment.

    Args:
        params: ``learning_rate``, ``momentum``, ``batch_size``, ``dropout``,
            ``weight_decay`` and ``epochs`` (missing ones take :data:`DEFAULTS`).

    Returns:
        ``(accuracy, seconds)``.
    """
    p = {**DEFAULTS, **params}
    rng = _seeded(p)
    noise, jitter = rng.gauss(0.0, NOISE), rng.uniform(-TIME_JITTER, TIME_JITTER)
    lr = float(p["learning_rate"])
    momentum = min(float(p["momentum"]), 0.999)
    batch = max(1, int(p["batch_size"]))
    epochs = max(1, int(p["epochs"]))
    dropout = min(max(float(p["dropout"]), 0.0), 0.95)
    decay = max(float(p["weight_decay"]), 0.0)
    per_epoch = math.ceil(TRAIN_IMAGES / batch)
    steps = epochs * per_epoch
    seconds = (STARTUP + epochs * (per_epoch * (STEP_OVERHEAD + batch * PER_SAMPLE) + EVAL)) \
        * (1.0 + jitter)

    lr_eff = lr / (1.0 - momentum)
    best = LR_BEST * math.sqrt(batch / 64.0)
    decades = math.log10(lr_eff / best) if lr_eff > 0 else -math.inf
    if decades > DIVERGE_DECADES:
        accuracy = CHANCE_ACCURACY + noise / 4
    else:
        quality = math.exp(-(decades ** 2) / (2 * LR_WIDTH ** 2))
        updates = steps * quality * (1.0 - DROPOUT_SLOWDOWN * dropout)
        floor = ERROR_FLOOR + 0.05 * max(0.0, dropout - 0.5) ** 2 + WEIGHT_DECAY_COST * decay
        error = floor + ERROR_SCALE * (1.0 + updates / U0) ** -POWER
        accuracy = 1.0 - error + noise
    return min(max(accuracy, 0.0), 1.0), seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-scale", type=float, default=1.0,
                        help="real seconds per modelled second (default 1; 0 = no sleep)")
    parser.add_argument("--epochs", type=int, default=int(DEFAULTS["epochs"]),
                        help="training epochs when the assignment has no `epochs` (default 3)")
    args = parser.parse_args(argv)
    if not args.time_scale >= 0:
        parser.error(f"--time-scale: invalid value {args.time_scale!r}: expected a number >= 0")
    if args.epochs < 1:
        parser.error(f"--epochs: invalid value {args.epochs!r}: expected an integer >= 1")

    from apprunner_sdk import get_params
    from apprunner_sdk import report

    params = get_params()
    accuracy, seconds = model({"epochs": args.epochs, **params})
    time.sleep(seconds * args.time_scale)
    report(accuracy=accuracy, model_seconds=seconds, final=True)
    print(f"accuracy={accuracy:.4f} model_seconds={seconds:.1f} with {params}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
