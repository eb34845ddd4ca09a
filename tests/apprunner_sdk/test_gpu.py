"""The SDK's GPU sampler (issue 18): which trials get one, and its samples over real gRPC.

There is no GPU on the machines these tests run on, so NVML itself is never read here. What is
real: the absence paths (``pynvml`` missing; ``pynvml`` installed — the ``test`` extra installs
``nvidia-ml-py`` — with no driver, where ``nvmlInit`` raises), and, with the sampler's
measuring function fed known figures (``gpu._use_measure_for_tests``: the one stand-in, for
NVML), the whole way of the samples: the sampler's thread, AppCore's servicer, the framework's
servicer and controller, the telemetry loop and the job store.
"""

from __future__ import annotations

from collections.abc import Iterator
import os
import subprocess
import sys

import pytest

import apprunner_sdk
from apprunner_sdk import gpu
from disauto.common.telemetry import GPU_MEMORY_USED
from disauto.common.telemetry import GPU_UTILIZATION
from disauto.framework._telemetry.monitor import TelemetryLoop
from disauto.testing.inprocess import AGENT
from disauto.testing.inprocess import RunningJob
from disauto.testing.inprocess import wait_for


pytestmark = pytest.mark.integration  # starts gRPC servers


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("DISAUTO_") or name == gpu.VISIBLE_DEVICES:
            monkeypatch.delenv(name)
    apprunner_sdk._reset_for_tests()
    yield
    gpu._use_measure_for_tests(None)
    apprunner_sdk._reset_for_tests()


@pytest.fixture
def job(tmp_path: os.PathLike[str]) -> Iterator[RunningJob]:
    from pathlib import Path

    running = RunningJob(Path(tmp_path), max_trials=4, parallelism=2)
    # As framework/_runtime.py wires it: GPU samples go through the telemetry loop.
    running.framework.controller.gpu_samples = TelemetryLoop(
        [], running.framework.controller).record_samples
    yield running
    running.close()


class Figures:
    """Known figures in place of NVML's, one per measurement, then ``after`` for ever."""

    def __init__(self, *figures: gpu.Figures, after: gpu.Figures | Exception = (None, None)):
        self._figures = list(figures)
        self._after = after
        self.calls = 0

    def __call__(self) -> gpu.Figures:
        self.calls += 1
        if self._figures:
            return self._figures.pop(0)
        if isinstance(self._after, Exception):
            raise self._after
        return self._after


# -- which trials have GPUs, and whether NVML answers -------------------------------------------


def test_visible_devices_name_the_trials_gpus_or_leave_them_to_nvml() -> None:
    assert gpu.visible_devices({}) is None  # a real Mesos agent: every device NVML opens
    assert gpu.visible_devices({"CUDA_VISIBLE_DEVICES": ""}) == []
    assert gpu.visible_devices({"CUDA_VISIBLE_DEVICES": "1, GPU-5f3c,"}) == ["1", "GPU-5f3c"]


def test_without_pynvml_there_is_no_sampler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` raises ImportError
    assert gpu.NvmlMeasure.open({"CUDA_VISIBLE_DEVICES": "0"}) is None
    assert gpu.start_sampler({"CUDA_VISIBLE_DEVICES": "0"}, _refuse) is None


def test_with_pynvml_but_no_driver_there_is_no_sampler() -> None:
    pynvml = pytest.importorskip("pynvml", reason="the test extra installs nvidia-ml-py")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver: nvmlInit works")
    assert gpu.NvmlMeasure.open({}) is None
    assert gpu.NvmlMeasure.open({"CUDA_VISIBLE_DEVICES": "0"}) is None
    assert gpu.start_sampler({"CUDA_VISIBLE_DEVICES": "0"}, _refuse) is None


def test_a_trial_the_agent_gave_no_gpu_has_no_sampler_whatever_measures() -> None:
    gpu._use_measure_for_tests(Figures((50.0, 1e9)), interval=0.05)
    assert gpu.start_sampler({"CUDA_VISIBLE_DEVICES": ""}, _refuse) is None


def _imported_with_the_sdk(visible: str | None) -> set[str]:
    """Which of pynvml and ctypes a fresh interpreter has imported after ``import apprunner_sdk``
    with ``CUDA_VISIBLE_DEVICES`` set to ``visible`` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != gpu.VISIBLE_DEVICES}
    if visible is not None:
        env[gpu.VISIBLE_DEVICES] = visible
    code = ("import sys, apprunner_sdk; "
            "print(' '.join(m for m in ('pynvml', 'ctypes') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True, timeout=60)
    return set(done.stdout.split())


def test_a_process_the_agent_gave_no_gpu_imports_no_nvml_with_the_sdk() -> None:
    pytest.importorskip("pynvml", reason="the test extra installs nvidia-ml-py")
    # A CPU trial on the embedded agents (CUDA_VISIBLE_DEVICES=""): no NVML, no ctypes at its
    # start; a GPU trial, or one on a real Mesos agent (unset), finds pynvml imported.
    assert _imported_with_the_sdk("") == set()
    assert _imported_with_the_sdk("0") == {"pynvml", "ctypes"}
    assert "pynvml" in _imported_with_the_sdk(None)


def _refuse(readings: object) -> None:
    raise AssertionError("nothing may be sent")


# -- the samples' way: sampler -> AppCore -> framework -> store ----------------------------------


def test_a_gpu_trials_samples_land_in_the_store_and_its_usage(
        job: RunningJob, monkeypatch: pytest.MonkeyPatch) -> None:
    figures = Figures((40.0, 1e9), (60.0, 3e9), (50.0, 2e9), after=(50.0, 2e9))
    gpu._use_measure_for_tests(figures, interval=0.05)
    monkeypatch.setenv(gpu.VISIBLE_DEVICES, "0")
    job.enter_trial(monkeypatch, 1)
    apprunner_sdk.get_params()  # the trial starts: so does its sampler
    store = job.framework.store
    wait_for(lambda: len(store.samples(GPU_UTILIZATION, trial=1)) >= 3, what="3 GPU samples")
    apprunner_sdk._reset_for_tests()  # the trial's process ends: its sampler stops
    utilization = [s.value for s in store.samples(GPU_UTILIZATION, trial=1)]
    memory = [s.value for s in store.samples(GPU_MEMORY_USED, trial=1)]
    assert utilization[:3] == [40.0, 60.0, 50.0] and set(utilization[3:]) <= {50.0}
    assert memory[:3] == [1e9, 3e9, 2e9]
    assert {s.node for s in store.samples(GPU_UTILIZATION)} == {AGENT}
    usage = store.trial(1).usage  # type: ignore[union-attr]
    assert usage.mean_gpu_utilization == pytest.approx(sum(utilization) / len(utilization))
    assert usage.peak_gpu_memory_bytes == 3e9
    assert store.samples(GPU_UTILIZATION, trial=2) == []


def test_an_nvml_error_mid_run_means_no_more_samples_never_a_zero(
        job: RunningJob, monkeypatch: pytest.MonkeyPatch) -> None:
    figures = Figures((30.0, 1e9), (None, 2e9), after=RuntimeError("NVML: GPU is lost"))
    gpu._use_measure_for_tests(figures, interval=0.05)
    monkeypatch.setenv(gpu.VISIBLE_DEVICES, "GPU-5f3c")
    job.enter_trial(monkeypatch, 2)
    apprunner_sdk.get_params()
    sampler = apprunner_sdk._current().gpu
    assert sampler is not None
    wait_for(lambda: not sampler.running, what="the sampler to stop")
    assert figures.calls == 2 + gpu.FAILURES_TO_STOP
    store = job.framework.store
    assert [s.value for s in store.samples(GPU_UTILIZATION, trial=2)] == [30.0]
    assert [s.value for s in store.samples(GPU_MEMORY_USED, trial=2)] == [1e9, 2e9]
    usage = store.trial(2).usage  # type: ignore[union-attr]
    assert usage.mean_gpu_utilization == 30.0 and usage.peak_gpu_memory_bytes == 2e9


def test_samples_wait_while_appcore_is_away_and_follow_when_it_is_back(
        job: RunningJob, monkeypatch: pytest.MonkeyPatch) -> None:
    job.appcore.servicer.set_loop(None)  # AppCore waits for its framework: UNAVAILABLE
    gpu._use_measure_for_tests(Figures(after=(70.0, 1e9)), interval=0.05)
    monkeypatch.setenv(gpu.VISIBLE_DEVICES, "0")
    job.enter_trial(monkeypatch, 1)
    apprunner_sdk.get_params()
    sampler = apprunner_sdk._current().gpu
    assert sampler is not None
    wait_for(lambda: len(sampler._pending) >= 3, what="samples waiting")
    assert sampler.running and job.framework.store.samples(GPU_UTILIZATION) == []
    job.appcore.servicer.set_loop(job.appcore.loop)
    wait_for(lambda: len(job.framework.store.samples(GPU_UTILIZATION, trial=1)) >= 3,
             what="the waiting samples")
    assert {s.value for s in job.framework.store.samples(GPU_UTILIZATION)} == {70.0}


def test_a_refused_sampler_stops_with_one_line(job: RunningJob, monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    job.framework.controller.gpu_samples = None  # the job's telemetry is off
    gpu._use_measure_for_tests(Figures(after=(70.0, 1e9)), interval=0.05)
    monkeypatch.setenv(gpu.VISIBLE_DEVICES, "0")
    job.enter_trial(monkeypatch, 1)
    apprunner_sdk.get_params()
    sampler = apprunner_sdk._current().gpu
    assert sampler is not None
    wait_for(lambda: not sampler.running, what="the sampler to stop")
    refused = [r.getMessage() for r in caplog.records if "GPU samples refused" in r.getMessage()]
    assert len(refused) == 1 and "telemetry is off for this job" in refused[0], refused
    assert job.framework.store.samples(GPU_UTILIZATION) == []
    assert sampler.sent == 0
