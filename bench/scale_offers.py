"""bench.scale's offers part: 500 agents and 50 frameworks (issue 29).

Two figures:

1. **The master's allocation run**: :func:`bench.offer_cycle.run` with ``agents`` agents and
   ``frameworks`` pymesos frameworks that decline every offer (its phase 1): the embedded
   master's own timer of each steady-state batch allocation, and the offer cycle around it.
2. **Each policy's answer to one round of offers**: every registered offer policy, created as
   the framework creates it (:func:`framework.policies.create_policy`), is given ``agents``
   offers at once, as the master's OFFERS event of a large cluster carries them (4 cpus, 4 GB
   and a port range each, the agents of :mod:`bench.offer_cycle`), with ``waiting`` trials
   waiting (priorities 1..n, as AppCore's Algorithm 1 gives them), and the scheduler's steps
   around it: the offers read from their JSON (:meth:`OfferView.from_offer`), the policy's
   :meth:`observe` (a ``deadline`` job with ``frameworks - 1`` peers' standings) and
   :meth:`place`. Timed ``rounds`` times on fresh offers; p50, p99 and max in milliseconds.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
from typing import Any

from disauto.framework.policies import POLICIES
from disauto.framework.policies import JobProgress
from disauto.framework.policies import LaunchRequest
from disauto.framework.policies import OfferView
from disauto.framework.policies import Standing
from disauto.framework.policies import create_policy
from disauto.framework.record import TaskResources


RUNNER = TaskResources(cpus=1.0, mem_mb=512.0)
"""One trial's resources in the policy rounds."""


def offer_json(index: int, round_number: int) -> dict[str, Any]:
    """One agent's offer as the master sends it (its JSON form)."""
    port = 31000 + 10 * index
    return {
        "id": {"value": f"offer-{round_number}-{index}"},
        "framework_id": {"value": "bench"},
        "agent_id": {"value": f"agent-{index}"},
        "hostname": f"host-{index}",
        "resources": [
            {"name": "cpus", "type": "SCALAR", "scalar": {"value": 4.0}},
            {"name": "mem", "type": "SCALAR", "scalar": {"value": 4096.0}},
            {"name": "disk", "type": "SCALAR", "scalar": {"value": 1024.0}},
            {"name": "ports", "type": "RANGES",
             "ranges": {"range": [{"begin": port, "end": port + 9}]}},
        ],
    }


def _peers(count: int, now: float) -> list[Standing]:
    return [Standing(job=f"peer-{i}", deadline=now + 600 + 60 * i, waiting=4, held=2,
                     cpus=1.0, mem_mb=512.0) for i in range(count)]


def policy_round_times(name: str, agents: int, frameworks: int, waiting: int,
                       rounds: int) -> list[float]:
    """Seconds each round of ``agents`` offers took policy ``name`` (module doc)."""
    policy = create_policy(name, runner=RUNNER)
    requests = [LaunchRequest(f"trial-{n:04d}", RUNNER, priority=n, trial_number=n)
                for n in range(1, waiting + 1)]
    times = []
    for number in range(rounds):
        raw = [offer_json(i, number) for i in range(agents)]
        now = time.time()
        started = time.perf_counter()
        views = [OfferView.from_offer(offer) for offer in raw]
        if policy.uses_progress:
            policy.observe(JobProgress(now=now, job="bench", deadline=now + 900,
                                       parallelism=waiting, remaining_trials=10 * waiting,
                                       durations=(30.0,) * 20, waiting=waiting,
                                       cpus=RUNNER.cpus, mem_mb=RUNNER.mem_mb),
                           _peers(frameworks - 1, now))
        policy.place(views, requests)
        times.append(time.perf_counter() - started)
    return times


def policy_table(agents: int, frameworks: int, waiting: int, rounds: int) -> str:
    """Each policy's time to answer a round of ``agents`` offers, as a Markdown table."""
    lines = ["| policy | offers | waiting | rounds | p50 ms | p99 ms | max ms |",
             "|---|---|---|---|---|---|---|"]
    for name in sorted(POLICIES):
        times = sorted(policy_round_times(name, agents, frameworks, waiting, rounds))
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        lines.append(f"| {name} | {agents} | {waiting} | {rounds} | "
                     f"{statistics.median(times) * 1000:.1f} | {p99 * 1000:.1f} | "
                     f"{times[-1] * 1000:.1f} |")
    return "\n".join(lines)


def allocation_text(agents: int, frameworks: int, seconds: float) -> str:
    """:mod:`bench.offer_cycle`'s table for ``agents`` × ``frameworks`` (its output)."""
    from bench.offer_cycle import run

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run(frameworks=frameworks, agents=agents, interval=1.0, decline_seconds=seconds,
                   tasks_per_framework=1, task_seconds=0.5)
    return out.getvalue().strip() + ("" if code == 0 else f"\n(offer_cycle exited {code})")


def run_offers(agents: int, frameworks: int, *, waiting: int = 16, rounds: int = 50,
               decline_seconds: float = 10.0) -> str:
    """The offers part's output: the allocation table, then the policies'."""
    return "\n\n".join([allocation_text(agents, frameworks, decline_seconds),
                        policy_table(agents, frameworks, waiting, rounds)])
