"""A trial of ``python -m bench.fork_determinism``: the digits CNN of :mod:`bench.fork_train`.

Run as ``python -m bench.fork_trial [--seed S] [--epochs E] [--threads T]`` (the repository on
``PYTHONPATH``). It first records what it inherited (:func:`bench.fork_train.inherited_state`),
then trains deterministically with the assignment's ``lr`` and ``momentum`` and seed ``S``,
prints one JSON line (``inherited``, ``outcome``, ``params``) and reports ``accuracy`` and
``digest`` (the first 12 hex digits of the weights' digest as a number, exact in a float).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
import json

from apprunner_sdk import get_params
from apprunner_sdk import report
from bench.fork_train import inherited_state
from bench.fork_train import set_deterministic
from bench.fork_train import train


def main(argv: list[str] | None = None) -> None:
    inherited = inherited_state()  # first: before anything here draws or seeds
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    params = get_params()
    set_deterministic(args.threads)
    outcome = train(float(params["lr"]), float(params["momentum"]), seed=args.seed,
                    epochs=args.epochs, device=args.device)
    print(json.dumps({"inherited": inherited, "outcome": asdict(outcome), "params": params}),
          flush=True)
    report(accuracy=outcome.accuracy, digest=float(int(outcome.digest[:12], 16)), final=True)


if __name__ == "__main__":
    main()
