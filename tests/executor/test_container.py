"""A container slot's settings, limits and devices (executor/container.py); its containers on a
real engine are tested end to end in tests/e2e/test_warm_slot_devices.py."""

from __future__ import annotations

import pytest

from disauto.common.slots import SPEC_ENV
from disauto.common.slots import ContainerSpec
from disauto.executor.container import ContainerError
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
