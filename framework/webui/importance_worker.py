"""Parameter importance computed in a process of its own, at a lower CPU priority.

Optuna's importance takes its evaluators' imports (scikit-learn and SciPy: 4-7 s on the
project's busy 2-core machine) and, over 2,000 trials, about a second of PED-ANOVA. In the
framework's process both held the GIL that the job's control loop needs, and the import fell on
the job's end, when ``report.html`` is written. So the framework (and ``da-job ui``)
hands the computation to this worker: ``python -m disauto.framework.webui.importance_worker``,
started when the first ranking is asked for (a job whose trials are too few to rank never
starts it: :func:`importance.why_not`), which lowers its own priority (``nice`` 5: the job's
processes come first, but on a busy machine it is not starved, as at ``nice`` 19, where the
report of a 4-trial job waited 8 s for it at the job's end), imports Optuna's importance at
once (without scikit-learn, which only the forest evaluators need: :func:`without_forests`),
then answers requests, one JSON object per line on stdin and stdout::

    → {"space": "<SearchSpace proto, base64>", "completed": [[assignment, value], ...],
       "pruned": [[assignment, value], ...], "maximize": true}
    ← the answer of :func:`importance.importances` ({"values", "basis"} or {"note"})

It exits when its stdin closes (the framework ended, however it ended). When it cannot be
started or dies, :class:`ImportanceWorker` computes in the calling process instead.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
import json
import logging
import os
import select
import subprocess
import sys
import threading
from typing import IO
from typing import Any

from disauto.common.space import SearchSpace
from disauto.common.space import space_from_proto
from disauto.common.space import space_to_proto
from disauto.framework.webui.importance import Completed
from disauto.framework.webui.importance import importances
from disauto.framework.webui.importance import why_not
from disauto.protos import common_pb2


logger = logging.getLogger(__name__)

ANSWER_SECONDS = 300.0
"""How long one answer may take before the worker is given up (and the caller computes)."""


def request_line(space: SearchSpace, completed: Completed, maximize: bool,
                 pruned: Completed) -> str:
    """One request: the line the worker reads (see above)."""
    proto = base64.b64encode(space_to_proto(space).SerializeToString()).decode()
    return json.dumps({"space": proto, "completed": [[dict(a), v] for a, v in completed],
                       "pruned": [[dict(a), v] for a, v in pruned], "maximize": maximize})


def answer(line: str) -> dict[str, Any]:
    """The answer to one request line."""
    request = json.loads(line)
    message = common_pb2.SearchSpace.FromString(base64.b64decode(request["space"]))
    return importances(space_from_proto(message),
                       [(a, float(v)) for a, v in request["completed"]],
                       bool(request["maximize"]), [(a, float(v)) for a, v in request["pruned"]])


class ImportanceWorker:
    """The worker process of this process (started on first use)."""

    def __init__(self, command: list[str] | None = None) -> None:
        self._command = command or [sys.executable, "-m", __name__]
        self._process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def _started(self) -> subprocess.Popen[str] | None:
        if self._process is not None and self._process.poll() is None:
            return self._process
        try:
            self._process = subprocess.Popen(
                self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True, bufsize=1, close_fds=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        except OSError as err:
            logger.warning("cannot start the importance worker (%s): computing here", err)
            self._process = None
        return self._process

    def compute(self, space: SearchSpace, completed: Completed, maximize: bool,
                pruned: Completed = ()) -> dict[str, Any]:
        """The importance of these trials, from the worker (or here, when it fails); a note
        needs no worker (too few trials: most jobs of a few trials never start one)."""
        note = why_not(space, completed, pruned)
        if note is not None:
            return note
        with self._lock:
            process = self._started()
            if process is not None:
                found = self._ask(process, request_line(space, completed, maximize, pruned))
                if found is not None:
                    return found
                self.stop()
        return importances(space, completed, maximize, pruned)

    def _ask(self, process: subprocess.Popen[str], request: str) -> dict[str, Any] | None:
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(request + "\n")
            process.stdin.flush()
            ready, _, _ = select.select([process.stdout], [], [], ANSWER_SECONDS)
            line = process.stdout.readline() if ready else ""
            found = json.loads(line) if line else None
        except (OSError, ValueError) as err:
            logger.warning("the importance worker failed (%s): computing here", err)
            return None
        if not isinstance(found, dict):
            logger.warning("the importance worker gave no answer: computing here")
            return None
        return found

    def stop(self) -> None:
        """End the worker (closing its stdin ends it)."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()
            process.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait(5)


def serve(lines: IO[str], out: IO[str]) -> None:
    """Answer each request line of ``lines`` on ``out`` until it closes."""
    for line in lines:
        if not line.strip():
            continue
        try:
            found: Mapping[str, Any] = answer(line)
        except Exception as err:  # noqa: BLE001 - a note for the page, never a dead worker
            found = {"note": f"Optuna cannot rank the parameters: {err}"}
        out.write(json.dumps(found) + "\n")
        out.flush()


FOREST_MODULE = "sklearn.ensemble"
"""What ``optuna.importance`` imports for its fANOVA and mean-decrease-impurity evaluators
(their random forests), which the worker never uses: PED-ANOVA needs NumPy alone."""


def without_forests() -> None:
    """Make this process's ``import sklearn.ensemble`` fail, so that ``optuna.importance``
    (which imports it behind Optuna's optional-import guard, for its forest evaluators) loads
    without scikit-learn and SciPy: 0.6 s of CPU instead of 3.8 s on an idle 2-core machine,
    paid by every job whose parameters are ranked. Only in the worker's own process."""
    sys.modules.setdefault(FOREST_MODULE, None)  # type: ignore[arg-type] - import stops here


def main() -> None:
    try:
        os.nice(5)  # the job's processes first, this not starved (see above)
    except OSError:
        pass
    without_forests()
    import optuna.importance  # noqa: F401 - the evaluator's imports, before the first request

    serve(sys.stdin, sys.stdout)


if __name__ == "__main__":
    main()
