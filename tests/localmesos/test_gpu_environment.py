"""GPUs as Mesos gives them (issue 20 item 8).

A real Mesos 1.11 agent isolates a command task's GPUs with the ``cgroups/devices,gpu/nvidia``
isolators and sets neither ``CUDA_VISIBLE_DEVICES`` nor ``NVIDIA_VISIBLE_DEVICES`` (apache/mesos
``docs/gpu-support.md``; ``src/slave/containerizer/mesos/isolators/gpu/``). The embedded agent
has no device cgroups, so it narrows a process task's GPUs with those variables, a documented
convenience (``docs/local-mode.md``). DisAuto's own code must therefore never read them: what
runs on a real agent would find them unset.
"""

from __future__ import annotations

from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]
#: DisAuto's code that runs on agents or decides placement (localmesos is the embedded agent).
DISAUTO_PACKAGES = ("apprunner_sdk", "appcore", "framework", "submit", "common")
#: The one reader allowed, and why: the SDK's GPU sampler (issue 18) measures the GPUs a CUDA
#: program in the trial would use. Where ``CUDA_VISIBLE_DEVICES`` is set it narrows them, as the
#: CUDA runtime does (the embedded agent's process tasks); where it is unset (a real agent) the
#: sampler measures every device NVML can open, which the devices cgroup limits to the task's.
#: Nothing depends on the variable (``tests/apprunner_sdk/test_gpu.py`` checks the unset case).
NARROWING_ONLY = {"apprunner_sdk/gpu.py"}


@pytest.mark.parametrize("package", DISAUTO_PACKAGES)
def test_disauto_code_never_reads_gpu_visibility_variables(package: str) -> None:
    readers = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / package).rglob("*.py"))
        if str(path.relative_to(ROOT)) not in NARROWING_ONLY
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "CUDA_VISIBLE_DEVICES" in line or "NVIDIA_VISIBLE_DEVICES" in line
    ]
    assert readers == [], "a real Mesos agent sets neither variable: " + ", ".join(readers)
