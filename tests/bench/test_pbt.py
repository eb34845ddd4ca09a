"""bench.pbt's loop: both searches do the same trial-steps; PBT's replacements continue their
parents' states."""

from __future__ import annotations

from bench import pbt


def test_both_searches_spend_the_same_trial_steps() -> None:
    random = pbt.run("random-search", 0, population=4, steps=12)
    population = pbt.run("pbt", 0, population=4, steps=12, settings={"perturbation_interval": "2"})
    assert random.trial_steps == population.trial_steps == 4 * 12
    assert (random.trials, random.exploits) == (4, 0)
    assert population.exploits > 0 and population.trials == 4 + population.exploits


def test_a_step_follows_the_schedule() -> None:
    rng = pbt.np.random.default_rng(0)
    good = pbt.train(pbt.State(), 0.3, rng)
    slow = pbt.train(pbt.State(), 0.003, rng)
    assert good.step == slow.step == 1 and good.score > slow.score
    assert pbt.best_lr(10) == 0.3 and pbt.best_lr(50) == 0.05 and pbt.best_lr(90) == 0.005
