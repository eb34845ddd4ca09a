"""``python3 -m disauto.executor``: a warm slot's executor (run by the Mesos agent)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
import sys

from disauto.common.durations import parse_duration
from disauto.executor.container import ContainerError
from disauto.executor.container import SlotContainer
from disauto.executor.container import spec_from_environment
from disauto.executor.driver import CheckpointingExecutorDriver
from disauto.executor.slot import SlotExecutor


def _shutdown_grace() -> float:
    text = os.environ.get("MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD", "")
    try:
        return parse_duration(text) if text else 5.0
    except ValueError:
        return 5.0


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sandbox = Path(os.environ.get("MESOS_SANDBOX") or os.getcwd())
    try:
        spec = spec_from_environment()
    except ContainerError as err:
        print(f"disauto.executor: {err}", file=sys.stderr)
        return 2
    container = SlotContainer(spec, sandbox) if spec is not None else None
    driver = CheckpointingExecutorDriver(SlotExecutor(sandbox, _shutdown_grace(), container))
    driver.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
