"""A CPU-bound trial for bench.placement: burns ``--loops × work`` loop iterations, reports
``work`` as its objective (the assignment's ``work`` in [0.8, 1.2] varies the trial's length)."""

from __future__ import annotations

import argparse

from apprunner_sdk import get_params
from apprunner_sdk import report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--loops", type=int, required=True)
    loops = parser.parse_args().loops
    work = float(get_params().get("work", 1.0))
    n = 0
    end = int(loops * work)
    while n < end:
        n += 1
    report(objective=work, final=True)


if __name__ == "__main__":
    main()
