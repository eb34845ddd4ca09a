"""Deadlines: a workload where scheduling matters, under every offer policy (issue 19).

Run with ``python -m bench.deadline`` (``--seeds N``; about a minute per 10 seeds on one core):
the no-overhead simulation, :mod:`bench.deadline_sim` (its docstring describes the workloads).
``python -m bench.deadline --real ...`` runs real jobs instead, next to the simulation's figures
(:mod:`bench.deadline_real`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import sys

from bench import deadline_sim
from bench.deadline_real import main as real_main
from bench.deadline_sim import ALONE
from bench.deadline_sim import POLICIES
from bench.deadline_sim import WORKLOADS
from bench.deadline_sim import evaluate
from bench.deadline_sim import markdown


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if "--real" in args_list:  # real jobs on the embedded cluster, next to this simulation
        return real_main([a for a in args_list if a != "--real"])
    parser = argparse.ArgumentParser(prog="python -m bench.deadline",
                                     description=deadline_sim.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20, help="simulated clusters per policy")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), action="append",
                        help="mixed, feasible and/or bayes (default mixed and bayes)")
    parser.add_argument("--policies", default=",".join(POLICIES),
                        help="comma-separated NAME[:SETTING=VALUE...] (deadline:leftover=gain), "
                             f"or {ALONE!r}: every job alone on the cluster, a ceiling")
    args = parser.parse_args(argv)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    for workload in args.workload or ["mixed", "bayes"]:
        print(markdown(workload, evaluate(workload, policies, range(args.seeds))), flush=True)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
