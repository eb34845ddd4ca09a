"""A trial of ``python -m bench.deadline_real``: it sleeps its drawn time and reports its drawn
objective.

``--draws FILE`` (shipped with ``--files``) maps each trial number to ``[seconds on a fast
agent, objective]``, made by :func:`bench.deadline_sim.trial_draw` for the job's seed and index,
the same draws the simulation uses. The trial sleeps ``seconds x slowdown x --time-scale``, where
``slowdown`` is the ``slowdown`` scalar attribute of the agent it runs on (1 without one), read
from the master's ``/master/slaves`` for ``MESOS_SLAVE_ID``: the embedded agents cannot make a
sleeping process slower (``--agent-speed`` caps CPU time, and a sleep uses none), so the trial
honours its agent's declared speed itself. Only the standard library and the SDK are imported,
so a trial costs one interpreter start.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from collections.abc import Sequence
import json
import os
from pathlib import Path
import time
from typing import Any
from urllib.request import urlopen

from apprunner_sdk import report
from apprunner_sdk import trial_number


def agent_slowdown(agents: list[Mapping[str, Any]], agent_id: str) -> float:
    """The ``slowdown`` attribute of agent ``agent_id`` in ``/master/slaves``' list (1 if none)."""
    for agent in agents:
        if agent.get("id") == agent_id:
            value = agent.get("attributes", {}).get("slowdown", 1.0)
            return max(1.0, float(value))
    raise LookupError(f"agent {agent_id!r} is not in the master's /master/slaves")


def trial_plan(draws: Mapping[str, Sequence[float]], number: int, slowdown: float,
               time_scale: float) -> tuple[float, float]:
    """(real seconds to sleep, objective to report) of trial ``number``."""
    seconds, objective = draws[str(number)]
    return float(seconds) * slowdown * time_scale, float(objective)


def _agents(master: str) -> list[Mapping[str, Any]]:
    with urlopen(f"http://{master}/master/slaves", timeout=10) as response:  # noqa: S310
        return list(json.loads(response.read())["slaves"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=Path, required=True)
    parser.add_argument("--time-scale", type=float, required=True)
    args = parser.parse_args(argv)
    number = trial_number()
    if number is None:
        raise SystemExit("deadline_trial: no trial number (DISAUTO_TRIAL_NUMBER)")
    slowdown = agent_slowdown(_agents(os.environ["DISAUTO_MASTER_ADDR"]),
                              os.environ["MESOS_SLAVE_ID"])
    sleep, objective = trial_plan(json.loads(args.draws.read_text()), number, slowdown,
                                  args.time_scale)
    time.sleep(sleep)
    report(accuracy=objective, final=True)


if __name__ == "__main__":
    main()
