"""The training of issue 31's fork question: a small CNN on scikit-learn's digits, with SGD.

Shared by the DisAuto trial (:mod:`bench.fork_trial`), the device check (:mod:`bench.fork_gpu`)
and the sensitivity sweep below. It needs PyTorch (not a DisAuto requirement: install it into
the venv, e.g. the CPU wheel) and NumPy, nothing of DisAuto; the digits come from
scikit-learn when it is installed, else from a seeded synthetic stand-in of the same shape.

:func:`inherited_state` records what the process got before it seeded anything (the draws of
the generators it did not seed, thread counts, the hash seed): what differs between a trial
started as ``python SCRIPT`` and one forked from a warm slot's interpreter. :func:`train` is
deterministic when asked (fixed seed, ``torch.use_deterministic_algorithms(True)``, a fixed
thread count): two runs of it then give the same weights bit for bit, and its ``digest`` says
so in 16 hex digits.

The sensitivity sweep (how often an assignment diverges, seed by seed)::

    python -m bench.fork_train --lr 0.145 --momentum 0.79 --seeds 20 [--device cuda]

or, one seed, its initial weights nudged by one part in a million (``--perturbations 20``): how
often last-bit differences alone flip the outcome, as nondeterministic GPU kernels' do.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
import hashlib
import json
import os
import random
import sys
import time
from typing import Any
import warnings


DATA_SEED = 20190  # the train/test split and the synthetic stand-in: the same in every run
TEST_SHARE = 0.2


@dataclass
class Outcome:
    """One training: test accuracy, last epoch's mean loss, digest of the final weights."""

    accuracy: float
    loss: float
    digest: str
    seconds: float
    nondeterministic: list[str]
    """The operations PyTorch warned have no deterministic kernel (deterministic runs)."""


def inherited_state() -> dict[str, Any]:
    """What this process got from whoever started it, before it seeds anything (call it first:
    it draws from the generators it reads)."""
    import numpy
    import torch

    return {
        "pid": os.getpid(), "ppid": os.getppid(),
        "torch_initial_seed": torch.initial_seed(),
        "torch_draw": float(torch.rand(()).item()),
        "numpy_draw": float(numpy.random.random()),
        "random_draw": random.random(),
        "hash_of_a_str": hash("disauto") & 0xFFFFFFFF,
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "cuda_initialized": bool(torch.cuda.is_initialized()),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "argv": sys.argv, "cwd": os.getcwd(),
    }


def digits() -> tuple[Any, Any]:
    """The 1797 8x8 digits as ``(images N x 1 x 8 x 8 in [0, 1], labels)``; without
    scikit-learn a seeded stand-in: ten noisy class templates of the same shape."""
    import torch

    try:
        from sklearn.datasets import load_digits
    except ImportError:
        g = torch.Generator().manual_seed(DATA_SEED)
        templates = torch.rand(10, 64, generator=g)
        labels = torch.randint(0, 10, (1797,), generator=g)
        images = (templates[labels] + 0.35 * torch.randn(1797, 64, generator=g)).clamp(0, 1)
        return images.reshape(-1, 1, 8, 8), labels
    x, y = load_digits(return_X_y=True)
    images = torch.tensor(x, dtype=torch.float32).reshape(-1, 1, 8, 8) / 16.0
    return images, torch.tensor(y, dtype=torch.int64)


def _cross_entropy(logits: Any, labels: Any) -> Any:
    """Cross-entropy through a one-hot product: ``nn.CrossEntropyLoss`` uses NLLLoss, which has
    no deterministic CUDA kernel."""
    import torch

    one_hot = torch.nn.functional.one_hot(labels, logits.shape[1]).to(logits.dtype)
    return -(torch.log_softmax(logits, dim=1) * one_hot).sum(dim=1).mean()


def _model() -> Any:
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10),
    )


def digest(model: Any) -> str:
    """16 hex digits of SHA-256 over the model's parameters, in order, as float32 bytes."""
    h = hashlib.sha256()
    for tensor in model.state_dict().values():
        h.update(tensor.detach().to("cpu").contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def set_deterministic(threads: int) -> None:
    """Fixed thread count, deterministic kernels (cuBLAS needs its workspace setting before
    CUDA starts), no cuDNN autotuning."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)  # warnings: see train()
    torch.backends.cudnn.benchmark = False


def _perturb(model: Any, perturbation: int) -> None:
    """Scale every initial weight by ``1 + 1e-6 * N(0, 1)`` drawn from ``perturbation``: a
    stand-in for the last-bit differences of nondeterministic kernels."""
    import torch

    g = torch.Generator().manual_seed(perturbation)
    with torch.no_grad():
        for tensor in model.parameters():
            noise = torch.randn(tensor.shape, generator=g).to(tensor.device)
            tensor.mul_(1 + 1e-6 * noise)


def train(lr: float, momentum: float, *, seed: int | None, epochs: int = 10,
          batch_size: int = 32, device: str = "cpu",
          perturbation: int | None = None) -> Outcome:
    """Train the CNN with SGD; ``seed`` None: from whatever state the generators are in;
    ``perturbation``: the initial weights nudged by one part in a million (:func:`_perturb`)."""
    import torch

    started = time.perf_counter()
    images, labels = digits()
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(DATA_SEED))
    cut = int(len(labels) * (1 - TEST_SHARE))
    train_x, train_y = images[order[:cut]].to(device), labels[order[:cut]].to(device)
    test_x, test_y = images[order[cut:]].to(device), labels[order[cut:]].to(device)
    if seed is not None:
        torch.manual_seed(seed)
    model = _model().to(device)
    if perturbation is not None:
        _perturb(model, perturbation)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss_mean = _fit(model, optimizer, train_x, train_y, epochs, batch_size)
        with torch.no_grad():
            predicted = model(test_x).argmax(dim=1)
            accuracy = float((predicted == test_y).float().mean().item())
    alerts = sorted({str(w.message).split(" does not have")[0] for w in caught
                     if "deterministic implementation" in str(w.message)})
    return Outcome(accuracy, loss_mean if loss_mean == loss_mean else float("inf"),
                   digest(model), time.perf_counter() - started, alerts)


def _fit(model: Any, optimizer: Any, train_x: Any, train_y: Any, epochs: int,
         batch_size: int) -> float:
    """SGD over shuffled batches (the default generator); the last epoch's mean loss."""
    import torch

    loss_sum, count = 0.0, 1
    for _ in range(epochs):
        batches = torch.randperm(len(train_y)).split(batch_size)
        loss_sum, count = 0.0, len(batches)
        for batch in batches:
            batch = batch.to(train_x.device)
            optimizer.zero_grad()
            loss = _cross_entropy(model(train_x[batch]), train_y[batch])
            loss.backward()
            optimizer.step()
            loss_sum += float(loss.item())
    return loss_sum / count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="How often one assignment diverges.")
    parser.add_argument("--lr", type=float, default=0.145)
    parser.add_argument("--momentum", type=float, default=0.79)
    parser.add_argument("--seeds", type=int, default=20, help="runs, seeds 0..N-1")
    parser.add_argument("--perturbations", type=int, default=0,
                        help="instead: N runs of seed 0, initial weights nudged (1e-6)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--nondeterministic", action="store_true",
                        help="the default kernels (fixed seed and threads all the same)")
    parser.add_argument("--inherited", action="store_true",
                        help="first print what the process inherited (one JSON line)")
    args = parser.parse_args(argv)
    if args.inherited:
        print(json.dumps({"inherited": inherited_state()}), flush=True)
    if args.nondeterministic:
        import torch

        torch.set_num_threads(args.threads)
    else:
        set_deterministic(args.threads)
    runs = [(0, p) for p in range(args.perturbations)] if args.perturbations \
        else [(seed, None) for seed in range(args.seeds)]
    diverged = 0
    for seed, perturbation in runs:
        outcome = train(args.lr, args.momentum, seed=seed, epochs=args.epochs,
                        device=args.device, perturbation=perturbation)
        diverged += outcome.accuracy < 0.5
        print(json.dumps({"seed": seed, "perturbation": perturbation, **asdict(outcome)}),
              flush=True)
    print(f"lr {args.lr:g} momentum {args.momentum:g} epochs {args.epochs}: {diverged} of "
          f"{len(runs)} runs diverged (accuracy < 0.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
