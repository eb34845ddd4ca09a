"""Finding this machine's NVIDIA GPUs, as a Mesos agent's NVIDIA allocator does.

An embedded agent hands GPUs out by index (``CUDA_VISIBLE_DEVICES`` for a process task, a device
request for a container). :func:`discover_gpus` lists the indices the driver reports: through
NVML (the ``pynvml`` module of ``nvidia-ml-py``) when it is installed, else ``nvidia-smi``; a
machine with neither, or whose driver does not answer, has none. ``da-cluster --gpus auto`` (its
default) and ``da-submit --master local`` use it; ``--gpus N`` declares N GPUs instead (indices
``0..N-1``), which is how tests exercise GPU scheduling on machines without any.
"""

from __future__ import annotations

from collections.abc import Sequence
import logging
import shutil
import subprocess


logger = logging.getLogger(__name__)

NVIDIA_SMI_QUERY = ("--query-gpu=index", "--format=csv,noheader,nounits")


def parse_nvidia_smi_indices(text: str) -> tuple[int, ...]:
    """The GPU indices in the output of ``nvidia-smi --query-gpu=index --format=csv,noheader``
    (one number per line); lines that are not numbers are ignored."""
    indices = []
    for line in text.splitlines():
        line = line.strip()
        if line.isdigit():
            indices.append(int(line))
    return tuple(sorted(set(indices)))


def _from_nvml() -> tuple[int, ...] | None:
    """Indices from NVML, or ``None`` when ``pynvml`` or the driver is missing."""
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - pynvml raises NVMLError subclasses for "no driver"
        return None
    try:
        return tuple(range(int(pynvml.nvmlDeviceGetCount())))
    except Exception:  # noqa: BLE001
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _from_nvidia_smi() -> tuple[int, ...]:
    """Indices from ``nvidia-smi`` (empty without the tool or a working driver)."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return ()
    try:
        result = subprocess.run([tool, *NVIDIA_SMI_QUERY], capture_output=True, text=True,
                                timeout=15, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning("nvidia-smi failed: %s", exc)
        return ()
    if result.returncode != 0:
        logger.info("nvidia-smi found no GPUs: %s", result.stderr.strip()[:200])
        return ()
    return parse_nvidia_smi_indices(result.stdout)


def discover_gpus() -> tuple[int, ...]:
    """The indices of this machine's NVIDIA GPUs (NVML, else ``nvidia-smi``; else none)."""
    found = _from_nvml()
    return found if found is not None else _from_nvidia_smi()


def split_devices(devices: Sequence[int], parts: int, index: int) -> tuple[int, ...]:
    """The ``index``-th of ``parts`` near-equal, disjoint slices of ``devices``, so that agents
    sharing one machine never hand out the same GPU."""
    devices = tuple(devices)
    start = len(devices) * index // parts
    stop = len(devices) * (index + 1) // parts
    return devices[start:stop]
