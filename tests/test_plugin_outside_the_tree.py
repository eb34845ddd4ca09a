"""A plug-in outside the tree runs DisAuto's shipped contract suites (``disauto.testing``) on its
own search algorithm, Bayesian backend (a sampler) and offer policy, as docs/extending.md shows:
a package written into a temporary folder registers the three, and pytest, started there in its
own process, passes them; a plug-in whose algorithm ignores the seed, whose backend drops the
fixed points and whose policy declines every offer fails exactly the checks of those rules."""

from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys

import pytest


pytestmark = pytest.mark.integration  # starts pytest in a process of its own

SEARCH = '''\
"""A search that draws each trial's assignment from the seed and the trial's number."""

import math
import random

from disauto.appcore.algorithms import SearchAlgorithm
from disauto.common.space import IntParam
from disauto.common.space import RealParam


class CoinSearch(SearchAlgorithm):
    NAME = "coin-search"

    def _rng(self, number):
        return random.Random(f"{self.seed}:{number}")

    def ask(self, trial_number):
        rng = self._rng(self._check_trial_number(trial_number))
        return {param.name: draw(param, rng) for param in self.space}

    def restore(self, history):
        self._check_history_replays(history)  # ask is a pure function of the number


def draw(param, rng):
    if isinstance(param, RealParam):
        if param.step is not None:
            return rng.choice(list(param.step_points()))
        if param.log:
            value = math.exp(rng.uniform(math.log(param.low), math.log(param.high)))
            return min(param.high, max(param.low, value))
        return rng.uniform(param.low, param.high)
    if isinstance(param, IntParam):
        return rng.choice(range(param.low, param.high + 1, param.step))
    return rng.choice(param.choices)
'''

BACKEND = '''\
"""A backend (the model of --tuning-type bayesian) without a model: seeded draws."""

import random

from disauto.appcore.algorithms.bayesian import Backend
from my_plugin.search import draw


class CoinBackend(Backend):
    NAME = "coin"

    def add_known(self, assignment, value):
        pass

    def suggest(self, numbers, fixed):
        return [dict(point) if point is not None else self._draw(number)
                for number, point in zip(numbers, fixed, strict=True)]

    def _draw(self, number):
        rng = random.Random(f"{self.seed}:{number}")
        return {param.name: draw(param, rng) for param in self.space}

    def observe(self, number, value, state, constraints=()):
        pass
'''

POLICY = '''\
"""A policy that fills each offer with the waiting requests that fit, in order."""

from disauto.framework._offers import fit
from disauto.framework.policies import OfferPolicy
from disauto.framework.policies import Plan


class FirstFitPolicy(OfferPolicy):
    NAME = "first-fit"

    def plan(self, offers, requests):
        result, taken = Plan(), set()
        for offer in offers:
            left, items = offer.available, []
            for request in requests:
                if request.key in taken or (request.resources.gpus and not offer.has_gpus):
                    continue
                claim = fit(left, request.resources, request.ports)
                if claim is not None:
                    left = left - claim
                    items.append((request, claim))
                    taken.add(request.key)
            if items:
                result.launches[offer.id] = items
            else:
                result.refuse_seconds[offer.id] = self.decline_seconds
        return result
'''

CONFTEST = '''\
from disauto.appcore.algorithms import ALGORITHMS
from disauto.appcore.algorithms.bayesian import BACKENDS
from disauto.framework.policies import POLICIES

ALGORITHMS.register("coin-search", "my_plugin.search:CoinSearch")
BACKENDS.register("coin", "my_plugin.backend:CoinBackend")
POLICIES.register("first-fit", "my_plugin.policy:FirstFitPolicy")
'''

TESTS = '''\
from disauto.testing.algorithms import SearchAlgorithmContract
from disauto.testing.backends import BackendContract
from disauto.testing.policies import OfferPolicyContract


class TestCoinSearch(SearchAlgorithmContract):
    NAME = "coin-search"


class TestCoinBackend(BackendContract):
    NAME = "coin"


class TestFirstFitPolicy(OfferPolicyContract):
    NAME = "first-fit"
'''

BREAKS = {
    # The seed no longer changes the sequence, though the class says it uses it.
    "search.py": ('random.Random(f"{self.seed}:{number}")', 'random.Random(f"{number}")'),
    # A warm-start point is not issued as given.
    "backend.py": ("dict(point) if point is not None else self._draw(number)",
                   "self._draw(number)"),
    # Every offer declined on purpose: alone on a cluster, nothing is ever launched.
    "policy.py": ("        result, taken = Plan(), set()\n",
                  "        return Plan(refuse_seconds={o.id: 5.0 for o in offers},\n"
                  "                    deliberate={o.id for o in offers})\n"
                  "        result, taken = Plan(), set()\n"),
}


def write_plugin(root: Path, broken: bool = False) -> Path:
    """The plug-in package ``my_plugin`` and its tests under ``root``; ``broken`` breaks one
    rule of each contract (:data:`BREAKS`)."""
    package = root / "my_plugin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name, text in (("search.py", SEARCH), ("backend.py", BACKEND), ("policy.py", POLICY)):
        if broken:
            old, new = BREAKS[name]
            assert old in text
            text = text.replace(old, new)
        (package / name).write_text(text)
    (root / "conftest.py").write_text(CONFTEST)
    (root / "test_my_plugin.py").write_text(TESTS)
    return root


def run_pytest(root: Path) -> subprocess.CompletedProcess[str]:
    """pytest on the plug-in's folder, from there, in a process of its own (the plug-in on its
    path, this checkout's DisAuto installed)."""
    env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"},  # not ours
           "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", str(root)],
        cwd=root, env=env, capture_output=True, text=True, timeout=240, check=False)


def failed(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The failed tests' ids, from ``-rf``'s summary."""
    return sorted(line.split()[1] for line in done.stdout.splitlines()
                  if line.startswith("FAILED "))


def test_a_plug_in_outside_the_tree_passes_the_shipped_contract_suites(tmp_path: Path) -> None:
    done = run_pytest(write_plugin(tmp_path / "plugin"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "TestCoinSearch" not in done.stdout


def test_a_broken_plug_in_fails_the_checks_of_the_rules_it_breaks(tmp_path: Path) -> None:
    done = run_pytest(write_plugin(tmp_path / "plugin", broken=True))
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert failed(done) == [
        "test_my_plugin.py::TestCoinBackend::test_it_keeps_the_contract[fit]",
        "test_my_plugin.py::TestCoinSearch::test_the_seed_is_honoured",
        "test_my_plugin.py::TestFirstFitPolicy::test_it_keeps_the_contract[alone]",
        "test_my_plugin.py::TestFirstFitPolicy::test_it_keeps_the_contract[tells]",
    ], done.stdout[-3000:]
