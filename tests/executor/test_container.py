"""A container slot's settings, limits and devices (executor/container.py), and how a trial's
command in it is killed, on a real engine; its containers are tested end to end in
tests/e2e/test_warm_slot_devices.py."""

from __future__ import annotations

from pathlib import Path
import signal
import subprocess
import time
from typing import Any

import pytest

from disauto.common.slots import SPEC_ENV
from disauto.common.slots import ContainerSpec
from disauto.executor.container import ContainerError
from disauto.executor.container import SlotContainer
from disauto.executor.container import spec_from_environment
from disauto.executor.container import task_limits
from disauto.executor.container import visible_gpus


def test_the_spec_travels_as_json_and_back() -> None:
    spec = ContainerSpec("img:1", True, ("/out",), 0.05, 64.0, {"disauto.job": "j"})
    assert spec_from_environment({SPEC_ENV: spec.to_json()}) == spec
    assert spec_from_environment({}) is None  # a process slot


@pytest.mark.parametrize(("text", "message"), [
    ("{", f"{SPEC_ENV} is not JSON"),
    ("[]", f"{SPEC_ENV} must be a JSON object"),
    ('{"image": "has space"}', "'image' must be an image reference, not 'has space'"),
    ('{"image": ""}', "'image' must be an image reference"),
    ('{"image": "i", "host_paths": ["relative"]}', "'host_paths' must be absolute paths"),
    ('{"image": "i", "host_paths": ["/a:b"]}', "without ':'"),
    ('{"image": "i", "labels": []}', "'labels' must be an object"),
    ('{"image": "i", "executor_cpus": "lots"}', "'executor_cpus' and 'executor_mem_mb' must"),
])
def test_a_bad_spec_is_one_line_naming_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ContainerError, match="^" + SPEC_ENV) as caught:
        spec_from_environment({SPEC_ENV: text})
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_limits_are_the_task_cpus_and_memory() -> None:
    resources = [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.5}},
                 {"name": "mem", "type": "SCALAR", "scalar": {"value": 128}},
                 {"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.25}},
                 {"name": "gpus", "type": "SCALAR", "scalar": {"value": 1}},
                 {"name": "ports", "type": "RANGES", "ranges": {"range": []}},
                 {"name": "mem", "type": "SCALAR", "scalar": {"value": "x"}}]
    assert task_limits(resources) == (0.75, 128.0)
    assert task_limits([]) == (0.0, 0.0)


def test_the_slot_devices_are_the_executors_cuda_visible_devices() -> None:
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "1, 3"}) == ("1", "3")
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == ()
    assert visible_gpus({}) == ()


@pytest.mark.integration
def test_a_command_that_ended_is_not_signalled_again(tmp_path: Path, runner_image: str,
                                                     docker_engine: Any) -> None:
    """A trial's exec is not the executor's child: once it ended, the kernel may give its pid to
    any new process group of the machine (pids wrap within minutes under ``make test``). A kill
    that arrives after the end (the framework's, a timeout's) must not reach that group."""
    container = SlotContainer(ContainerSpec(runner_image, labels={"disauto.job": "kill-test"}),
                              tmp_path)
    bystander = None
    try:
        process = container.run("t1", "exit 3", {}, _sandbox(tmp_path, "t1"))
        assert process.wait() == 3
        # The ended command's pid, as a process group, now someone else's.
        bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
        process._pid = bystander.pid  # noqa: SLF001 - the reuse the kernel would make
        process.kill(0.2)
        time.sleep(0.3)
        assert bystander.poll() is None, "a process group that took the ended pid was killed"
        # While it runs, the kill does reach it.
        running = container.run("t2", "sleep 60", {}, _sandbox(tmp_path, "t2"))
        assert running.pid
        started = time.monotonic()
        running.kill(5.0)
        assert running.wait() == -signal.SIGTERM and time.monotonic() - started < 5.0
    finally:
        if bystander is not None:
            bystander.kill()
            bystander.wait()
        container.remove()


def _sandbox(root: Path, task_id: str) -> Path:
    path = root / "tasks" / task_id
    path.mkdir(parents=True)
    return path
