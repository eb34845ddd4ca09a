"""An out-of-memory trial in a container, end to end: killed by its limit, its failure message
names what telemetry measured and the limit, and the summary suggests a memory above it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import common_flags


pytestmark = [pytest.mark.integration, pytest.mark.slow]

# It imports the SDK, stays long enough to be sampled, then takes 200 MB of a 64 MB limit.
HUNGRY = '''
import time
from apprunner_sdk import get_params, report
get_params()
time.sleep(1.5)
block = bytearray(200 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
report(accuracy=1.0, final=True)
'''


def test_an_out_of_memory_trial_names_its_peak_and_limit(submit: Any, workdir: Path,
                                                         runner_image: str,
                                                         docker_engine: Any) -> None:
    (workdir / "runner.py").write_text(HUNGRY)
    flags = common_flags(workdir, "--trail-steps", "1", "--docker-image", runner_image,
                         "--telemetry-interval", "0.2s")
    flags[flags.index("--app-runner-memory") + 1] = "64M"
    job = submit(*flags)
    job.wait(300)
    (trial,) = job.results()["trials"]
    assert trial["state"] == "FAILED", trial
    message = trial["message"]
    assert "REASON_CONTAINER_LIMITATION_MEMORY" in message, message
    assert "measured peak" in message and "of the 64 MB limit" in message, message
    usage = job.results()["usage"]
    assert usage["memory_killed_trials"] == [1]
    assert usage["suggested_app_runner_memory_mb"] > 64  # above the limit that killed it
    assert (f"trial-0001 killed by the 64M memory limit needed more: --app-runner-memory "
            f"{usage['suggested_app_runner_memory_mb']}M at least") in job.words, job.output
