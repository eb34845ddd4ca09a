"""What ``da-submit`` keeps per trial: tracemalloc's difference between two points of one job.

``python -m bench.scale_memory --trials 900 --at 250 750`` runs bench.scale's job (random
search, parallelism 8, preloaded warm slots, 0 s trials) with ``da-submit`` in this process
under tracemalloc (8 frames), takes a snapshot when ``--at``'s first and second trial counts
have ended, and prints the 25 largest growths between them by traceback (the frames of this
repository). Tracing makes the job several times slower.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import gc
import os
from pathlib import Path
import sys
import tempfile
import threading
import time
import tracemalloc

from bench.scale import _env
from bench.scale import submit_command
from bench.scale_record import ended_count


ROOT = str(Path(__file__).resolve().parents[1])


def _watch(home: Path, marks: Sequence[int], out: list[str]) -> None:
    snaps: list[tracemalloc.Snapshot] = []
    while len(snaps) < len(marks):
        time.sleep(0.5)
        dbs = list(home.glob("jobs/*/job.db"))
        if dbs and ended_count(dbs[0]) >= marks[len(snaps)]:
            gc.collect()
            snaps.append(tracemalloc.take_snapshot())
    for stat in snaps[1].compare_to(snaps[0], "traceback")[:25]:
        frames = [f"{f.filename.replace(ROOT + '/', '')}:{f.lineno}"
                  for f in stat.traceback if f.filename.startswith(ROOT)]
        out.append(f"{stat.size_diff / 1e6:6.2f} MB {stat.count_diff:7d} blocks  "
                   + " <- ".join(reversed(frames[-3:])))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=900)
    parser.add_argument("--at", type=int, nargs=2, default=[250, 750])
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    os.environ.update(_env(work / "home"))
    command = submit_command(work, "random", args.trials, 8, 3, 0.0)
    os.chdir(work)
    found: list[str] = []
    tracemalloc.start(8)
    watcher = threading.Thread(target=_watch, args=(work / "home", args.at, found),
                               daemon=True)
    watcher.start()
    from disauto.submit.cli import main as submit

    code = submit(command[3:])
    watcher.join(60)
    print(f"da-submit exited {code}; growth from {args.at[0]} to {args.at[1]} trials ended:")
    print("\n".join(found))
    return code


if __name__ == "__main__":
    sys.exit(main())
