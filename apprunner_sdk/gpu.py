"""GPU figures of this trial, measured where the GPU is: in the trial's own process.

The trial's process is the one part of DisAuto that runs where the trial's GPUs are in every
mode (a command task, a warm slot's ``/bin/sh -c`` trial or forked trial, a container), so the
SDK measures them: when the trial runs inside DisAuto, holds GPUs and NVML answers, a daemon
thread reads every :data:`INTERVAL` seconds

* ``nvmlDeviceGetUtilizationRates(h).gpu`` of each of the trial's GPUs (the percent of time over
  the driver's last sample period, 1/6 s to 1 s, in which a kernel ran), averaged over them;
* ``nvmlDeviceGetMemoryInfo(h).used`` of each, summed: the **device's** used memory, not this
  process tree's. Mesos gives a GPU to one task at a time, so the device's memory is the
  trial's (its CUDA contexts included); per-process figures
  (``nvmlDeviceGetComputeRunningProcesses``) name host pids, which a container's trial cannot
  match to its own;

and sends them to AppCore (``ReportGpuSamples``), which forwards them to the framework: they
become the trial's ``gpu_utilization_percent`` and ``gpu_memory_used_bytes`` telemetry and its
usage's ``mean_gpu_utilization`` and ``peak_gpu_memory_bytes``.

**The trial's GPUs** are those a CUDA program in this process would use: the entries of
``CUDA_VISIBLE_DEVICES`` when it is set (indices as NVML numbers them, or ``GPU-``/``MIG-``
UUIDs; set and empty: none), otherwise every device NVML lets this process open. A real Mesos
agent sets no such variable and isolates a task's GPUs with the devices cgroup, so there the
devices the trial can open are its own; the embedded agent narrows a process task's GPUs with
the variable (``docs/local-mode.md``), which the CUDA runtime honours too, so it is read only
to narrow, never needed.

**Absent is absent**: no ``pynvml`` (``pip install 'disauto[gpu]'`` installs ``nvidia-ml-py``),
no driver (``nvmlInit`` raises), no GPU the trial can open: no sampler, no samples, no error.
A figure NVML cannot give (``NOT_SUPPORTED`` on a MIG device, a GPU that fell off the bus) is
left out of that sample, never sent as zero; after :data:`FAILURES_TO_STOP` measurements in a
row that give nothing the sampler stops. Sending is best effort: one attempt per interval;
what AppCore did not take (unreachable) waits for the next interval (at most
:data:`MAX_PENDING` samples, the oldest dropped); a refusal ends the sampler with one log line.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import contextlib
import logging
import os
import threading
import time
from typing import Any

from disauto.common.gpu_samples import MAX_SAMPLES
from disauto.common.gpu_samples import GpuReading


logger = logging.getLogger(__name__)

INTERVAL = 2.0
"""Seconds between two measurements."""

FAILURES_TO_STOP = 3
"""Measurements in a row that give no figure after which the sampler stops."""

MAX_PENDING = 1000
"""Samples kept while AppCore cannot be reached (the oldest go first)."""

VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"

Figures = tuple[float | None, float | None]
"""One measurement over the trial's GPUs: (mean utilisation percent, used bytes summed)."""

Measure = Callable[[], Figures]
"""Measures the trial's GPUs once (NVML's :class:`NvmlMeasure`, or a test's stand-in)."""

Send = Callable[[Sequence[GpuReading]], None]
"""Sends samples to AppCore; raises ``AppCoreUnreachableError`` to keep them for later, any
other exception to refuse them."""


def visible_devices(environ: Mapping[str, str]) -> list[str] | None:
    """The trial's GPUs as CUDA would name them: ``CUDA_VISIBLE_DEVICES``'s entries ([] when
    it is set and empty), or None when it is unset (every device NVML can open)."""
    if VISIBLE_DEVICES not in environ:
        return None
    return [part.strip() for part in environ[VISIBLE_DEVICES].split(",") if part.strip()]


if visible_devices(os.environ) != []:
    with contextlib.suppress(ImportError):
        # Imported with the SDK, not at the trial's first get_params(): a trial forked from a
        # warm slot's pre-imported interpreter (--slot-preload) then finds it imported; importing
        # it there cost each trial 0.2 s on a busy 2-core machine (bench.scale). Not where the
        # agent gave the process no GPU (CUDA_VISIBLE_DEVICES set and empty: every trial of a
        # CPU job on the embedded agents): its trials never read NVML (start_sampler), and the
        # import (pynvml and ctypes, 20 ms of a task's start) would be spent for nothing.
        import pynvml  # type: ignore[import-not-found,unused-ignore]  # noqa: F401


class NvmlMeasure:
    """Reads the trial's GPUs through NVML (see the module docstring for which figures)."""

    def __init__(self, nvml: Any, handles: list[Any]) -> None:
        self._nvml = nvml
        self._handles = handles

    @classmethod
    def open(cls, environ: Mapping[str, str]) -> NvmlMeasure | None:
        """NVML's measurement of this process's GPUs; None where there is nothing to measure:
        no GPU named, no ``pynvml``, no driver (``nvmlInit`` fails), or no device opens."""
        wanted = visible_devices(environ)
        if wanted == []:
            return None
        try:
            import pynvml  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            return None
        try:
            pynvml.nvmlInit()
        except Exception as err:  # noqa: BLE001 - no driver, no library: no GPU figures
            logger.debug("NVML unavailable: %s", err)
            return None
        handles = _open_devices(pynvml, wanted)
        if not handles:
            _shutdown(pynvml)
            return None
        return cls(pynvml, handles)

    def __call__(self) -> Figures:
        utilizations: list[float] = []
        used: list[float] = []
        for handle in self._handles:
            try:
                utilizations.append(float(self._nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
            except Exception as err:  # noqa: BLE001 - NOT_SUPPORTED, GPU lost: no figure
                logger.debug("no GPU utilisation: %s", err)
            try:
                used.append(float(self._nvml.nvmlDeviceGetMemoryInfo(handle).used))
            except Exception as err:  # noqa: BLE001 - likewise
                logger.debug("no GPU memory figure: %s", err)
        count = len(self._handles)
        # A figure of some of the GPUs only would understate the trial's: left out.
        return (sum(utilizations) / count if len(utilizations) == count else None,
                sum(used) if len(used) == count else None)

    def close(self) -> None:
        _shutdown(self._nvml)


def _open_devices(nvml: Any, wanted: list[str] | None) -> list[Any]:
    """Handles of the devices named (indices or UUIDs), or of every device NVML can open;
    a device that does not open (the devices cgroup denies it, no such index) is skipped."""
    if wanted is None:
        try:
            names: list[str] = [str(index) for index in range(nvml.nvmlDeviceGetCount())]
        except Exception:  # noqa: BLE001 - no count: nothing to open
            return []
    else:
        names = wanted
    handles = []
    for name in names:
        try:
            if name.isdigit():
                handles.append(nvml.nvmlDeviceGetHandleByIndex(int(name)))
            elif name.startswith(("GPU-", "MIG-")):
                handles.append(nvml.nvmlDeviceGetHandleByUUID(name))
        except Exception as err:  # noqa: BLE001 - not this process's device
            logger.debug("GPU %s does not open: %s", name, err)
    return handles


def _shutdown(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:  # noqa: BLE001, S110 - nothing left to release
        pass


class GpuSampler:
    """Measures every ``interval`` seconds on a daemon thread and sends what it measured.

    Args:
        measure: one measurement of the trial's GPUs.
        send: sends samples (see :data:`Send`).
        interval: seconds between measurements (the first is taken at :meth:`start`).
        on_close: called once when the sampler stops (NVML's shutdown).
    """

    def __init__(self, measure: Measure, send: Send, *, interval: float = INTERVAL,
                 on_close: Callable[[], None] = lambda: None) -> None:
        self._measure = measure
        self._send = send
        self._interval = interval
        self._on_close = on_close
        self._pending: list[GpuReading] = []
        self._failures = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="disauto-gpu-sampler",
                                        daemon=True)
        self.sent = 0
        """Samples AppCore took so far."""

    def start(self) -> None:
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def stop(self) -> None:
        """Stop measuring; send what waits (one attempt). Safe to call more than once."""
        first = not self._stop.is_set()
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._interval + 10.0)
        if first:
            with self._lock:
                self._flush()
            self._on_close()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample_once()
            self._stop.wait(self._interval)

    def sample_once(self) -> None:
        """Take one measurement and send it with whatever waits."""
        try:
            utilization, memory = self._measure()
        except Exception as err:  # noqa: BLE001 - an NVML error mid-run: no sample
            logger.debug("GPU measurement failed: %s", err)
            utilization = memory = None
        if utilization is None and memory is None:
            self._failures += 1
            if self._failures >= FAILURES_TO_STOP:
                logger.debug("GPU sampler stops: %d measurements gave nothing", self._failures)
                self._stop.set()
            return
        self._failures = 0
        with self._lock:
            self._pending.append(GpuReading(time.time(), utilization, memory))
            del self._pending[:-MAX_PENDING]
            self._flush()

    def _flush(self) -> None:
        """Send what waits, in batches of at most MAX_SAMPLES (the lock held)."""
        from apprunner_sdk.client import AppCoreUnreachableError

        while self._pending:
            batch = self._pending[:MAX_SAMPLES]
            try:
                self._send(batch)
            except AppCoreUnreachableError as err:
                logger.debug("GPU samples wait for AppCore: %s", err)
                return
            except Exception as err:  # noqa: BLE001 - refused: stop, say so once
                logger.warning("GPU samples refused, the GPU sampler stops: %s", err)
                self._pending.clear()
                self._stop.set()
                return
            del self._pending[:len(batch)]
            self.sent += len(batch)


_measure_for_tests: tuple[Measure, float] | None = None


def _use_measure_for_tests(measure: Measure | None, interval: float = INTERVAL) -> None:
    """Measure with ``measure`` instead of NVML from the next trial this process starts
    (tests on machines without a GPU: the one stand-in for NVML; the rest of the path, which
    trials have GPUs, the sampler, AppCore, the framework and the store, is the real one).
    None: NVML again."""
    global _measure_for_tests
    _measure_for_tests = None if measure is None else (measure, interval)


def start_sampler(environ: Mapping[str, str], send: Send) -> GpuSampler | None:
    """Start measuring this trial's GPUs when it has any NVML can read (see the module
    docstring); None otherwise. The sampler stops, sending what waits, when Python exits."""
    if visible_devices(environ) == []:
        return None  # the agent gave this trial no GPU
    if _measure_for_tests is not None:
        measure, interval = _measure_for_tests
        sampler = GpuSampler(measure, send, interval=interval)
    else:
        nvml = NvmlMeasure.open(environ)
        if nvml is None:
            return None
        sampler = GpuSampler(nvml, send, on_close=nvml.close)
    sampler.start()
    atexit.register(sampler.stop)
    return sampler
