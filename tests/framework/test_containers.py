"""The ContainerInfo of DisAuto's tasks, and the TaskInfos of containerized and GPU jobs.

The scheduler tests drive the real scheduler, controller, store and FIFO policy with Mesos offer
JSON and record the driver calls (the recorder of ``test_scheduler``); what they check is the
TaskInfo a real Mesos master would receive.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from disauto.common.resources import Resources
from disauto.framework._containers import SANDBOX_PATH
from disauto.framework._containers import ContainerConfigError
from disauto.framework._containers import check_container_flags
from disauto.framework._containers import container_info
from disauto.framework._containers import task_environment
from disauto.framework._job import JobController
from disauto.framework._scheduler import JobScheduler
from disauto.framework._spec import JobConfig
from disauto.framework._spec import OutputSpec
from disauto.framework._spec import TaskResources
from disauto.framework._store import JobStore
from disauto.framework._tasks import appcore_task
from disauto.framework._tasks import trial_task
from disauto.framework.policies import FifoPolicy
from disauto.localmesos.containerizer.docker import container_image
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import job_config
from tests.framework.test_scheduler import RecordingDriver
from tests.framework.test_scheduler import env_of


pytestmark = pytest.mark.integration  # starts processes or servers


IMAGE = "registry.example.com/disauto/apprunner:1.0"


def test_mesos_containerizer_container_info() -> None:
    info = container_info(IMAGE, "mesos", host_paths=["/shared/out"])
    assert info == {
        "type": "MESOS",
        "mesos": {"image": {"type": "DOCKER", "docker": {"name": IMAGE}, "cached": True}},
        "volumes": [{"container_path": "/shared/out", "mode": "RW",
                     "source": {"type": "HOST_PATH", "host_path": {"path": "/shared/out"}}}],
    }
    assert container_info(IMAGE, "mesos", force_pull=True)["mesos"]["image"]["cached"] is False
    # The embedded agent reads it back as a Docker image for the Mesos containerizer.
    ref = container_image(info)
    assert ref is not None and (ref.name, ref.kind, ref.force_pull) == (IMAGE, "MESOS", False)


def test_docker_containerizer_container_info() -> None:
    info = container_info(IMAGE, "docker", host_paths=["/shared/out"], force_pull=True)
    assert info == {
        "type": "DOCKER",
        "docker": {"image": IMAGE, "network": "HOST", "force_pull_image": True},
        "volumes": [{"container_path": "/shared/out", "host_path": "/shared/out", "mode": "RW"}],
    }
    assert "volumes" not in container_info(IMAGE, "docker")
    ref = container_image(info)
    assert ref is not None and (ref.name, ref.kind, ref.force_pull) == (IMAGE, "DOCKER", True)


@pytest.mark.parametrize(("image", "containerizer", "gpus", "match"), [
    (IMAGE, "docker", 1, "--containerizer docker cannot run --app-runner-gpus 1: the Docker "
                         "containerizer has no GPU support"),
    (IMAGE, "rkt", 0, "--containerizer: unknown containerizer 'rkt'; valid: mesos, docker"),
    ("my image", "mesos", 0, "--docker-image: invalid image 'my image'"),
])
def test_container_flags_that_cannot_work(image: str, containerizer: str, gpus: int,
                                          match: str) -> None:
    with pytest.raises(ContainerConfigError) as caught:
        check_container_flags(image, containerizer, gpus)
    assert str(caught.value).startswith(match)
    assert "\n" not in str(caught.value)


def test_gpus_with_the_mesos_containerizer_or_without_an_image_are_fine() -> None:
    check_container_flags(IMAGE, "mesos", 4)
    check_container_flags("", "docker", 4)  # no image: the Docker containerizer is not used


def test_a_containerized_task_does_not_get_this_machines_path() -> None:
    env = {"PATH": "/home/me/.venv/bin:/usr/bin", "OTHER": "1"}
    assert task_environment(env, None) == env
    assert task_environment(env, container_info(IMAGE)) == {"OTHER": "1"}


def test_trial_and_appcore_tasks_carry_their_container() -> None:
    claim = Resources({"cpus": 2.0, "mem": 1024.0, "gpus": 2.0})
    container = container_info(IMAGE, "mesos")
    trial = trial_task(trial_number=3, agent_id="S1", claim=claim, launch_cmd="python t.py",
                       job_id="j", assignment={"a": 1}, trial_token="t",
                       appcore_address="h:1", framework_address="h:2", container=container)
    assert trial["container"] == container and trial["container"] is not container
    assert {r["name"]: r["scalar"]["value"] for r in trial["resources"]} == {
        "cpus": 2.0, "gpus": 2.0, "mem": 1024.0}
    assert trial["command"]["shell"] is True  # the command runs in the image's /bin/sh
    core = appcore_task(task_id="appcore-1", agent_id="S1", hostname="h",
                        claim=Resources({"cpus": 0.5, "mem": 256.0}, {"ports": [(31000, 31000)]}),
                        command="python3 -m disauto.appcore", job_id="j", framework_address="h:2",
                        job_token="tok", container=container_info(IMAGE, "docker"))
    assert core["container"]["type"] == "DOCKER"
    plain = trial_task(trial_number=3, agent_id="S1", claim=claim, launch_cmd="x", job_id="j",
                       assignment={}, trial_token="t", appcore_address="h:1",
                       framework_address="h:2")
    assert "container" not in plain


# -- the scheduler ----------------------------------------------------------------------------


class GpuJob:
    """A GPU job in a Docker image, offered one CPU agent and one GPU agent."""

    def __init__(self, job_dir: Path, **overrides: Any) -> None:
        settings: dict[str, Any] = {
            "runner": TaskResources(cpus=2.0, mem_mb=2048.0, gpus=1),
            "docker_image": IMAGE,
            "extra_env": {"PATH": "/submitting/host/venv/bin:/usr/bin"},
            "output": OutputSpec("/shared/models", "model"),
            **overrides,
        }
        config: JobConfig = replace(job_config(max_trials=4, parallelism=2), **settings)
        self.store = JobStore(job_dir / "job.db")
        self.driver = RecordingDriver()
        self.controller = JobController(config, self.store, JOB_TOKEN,
                                        on_pending=lambda: self.scheduler.wake())
        self.scheduler = JobScheduler(self.controller, FifoPolicy(decline_seconds=5.0),
                                      "10.0.0.1:5000")
        self.scheduler.registered(self.driver, {"value": "F-1"},
                                  {"hostname": "master", "port": 5050})

    def offer(self, offer_id: str, agent: str, gpus: int = 0) -> dict[str, Any]:
        resources = [
            {"name": "cpus", "type": "SCALAR", "scalar": {"value": 8.0}, "role": "*"},
            {"name": "mem", "type": "SCALAR", "scalar": {"value": 16384.0}, "role": "*"},
            {"name": "ports", "type": "RANGES", "role": "*",
             "ranges": {"range": [{"begin": 31000, "end": 31010}]}},
        ]
        if gpus:
            resources.append({"name": "gpus", "type": "SCALAR", "scalar": {"value": gpus},
                              "role": "*"})
        return {"id": {"value": offer_id}, "framework_id": {"value": "F-1"},
                "agent_id": {"value": agent}, "hostname": f"host-{agent}",
                "resources": resources}


@pytest.fixture
def gpu_job(tmp_path: Path) -> Iterator[GpuJob]:
    job = GpuJob(tmp_path)
    yield job
    job.store.close()


def test_a_gpu_trial_in_an_image_gets_the_mesos_containerizer_and_a_gpu_offer(
    gpu_job: GpuJob,
) -> None:
    cpu_offer, gpu_offer = gpu_job.offer("O1", "cpu-agent"), gpu_job.offer("O2", "gpu-agent", 2)
    gpu_job.scheduler.resourceOffers(gpu_job.driver, [gpu_offer, cpu_offer])
    (appcore,) = gpu_job.driver.launched()
    # AppCore needs no GPU: it goes to the CPU agent, and runs on the host (no --app-core image).
    assert appcore["agent_id"] == {"value": "cpu-agent"} and "container" not in appcore
    assert env_of(appcore)["PATH"].startswith("/submitting/host/venv/bin")

    gpu_job.controller.attach_appcore("host-cpu-agent:31000")
    for number in (1, 2, 3):
        gpu_job.controller.submit_trial(number, {"lr": 0.1, "layers": 1, "act": "relu"},
                                        priority=0)
    gpu_job.driver.clear()
    gpu_job.scheduler.resourceOffers(
        gpu_job.driver, [gpu_job.offer("O3", "cpu-agent"), gpu_job.offer("O4", "gpu-agent", 2)]
    )
    trials = gpu_job.driver.launched()
    # Two GPUs offered, one per trial: two trials launch, both on the GPU agent; the CPU
    # agent's offer is declined, the third trial waits.
    assert [t["name"] for t in trials] == ["trial-0001", "trial-0002"]
    assert all(t["agent_id"] == {"value": "gpu-agent"} for t in trials)
    declined = [args[0] for kind, args in gpu_job.driver.calls if kind == "decline"]
    assert declined == [[{"value": "O3"}]]
    first = trials[0]
    assert {r["name"]: r["scalar"]["value"] for r in first["resources"]} == {
        "cpus": 2.0, "gpus": 1.0, "mem": 2048.0}
    assert first["container"] == {
        "type": "MESOS",
        "mesos": {"image": {"type": "DOCKER", "docker": {"name": IMAGE}, "cached": True}},
        "volumes": [{"container_path": "/shared/models", "mode": "RW",
                     "source": {"type": "HOST_PATH", "host_path": {"path": "/shared/models"}}}],
    }
    env = env_of(first)
    assert "PATH" not in env  # the image's own PATH stays
    assert env["DISAUTO_OUTPUT_DIR"] == "/shared/models/trial-0001"
    assert first["command"]["value"] == "python train.py"


def test_appcore_in_an_image_with_the_docker_containerizer(tmp_path: Path) -> None:
    job = GpuJob(tmp_path, appcore_docker_image=IMAGE, containerizer="docker",
                 runner=TaskResources(cpus=1.0, mem_mb=512.0))
    try:
        job.scheduler.resourceOffers(job.driver, [job.offer("O1", "cpu-agent")])
        (appcore,) = job.driver.launched()
        assert appcore["container"] == {
            "type": "DOCKER",
            "docker": {"image": IMAGE, "network": "HOST", "force_pull_image": False},
        }
        assert "PATH" not in env_of(appcore)
        job.controller.attach_appcore("host-cpu-agent:31000")
        job.controller.submit_trial(1, {"lr": 0.1, "layers": 1, "act": "relu"}, priority=0)
        job.driver.clear()
        job.scheduler.resourceOffers(job.driver, [job.offer("O2", "cpu-agent")])
        (trial,) = job.driver.launched()
        assert trial["container"]["type"] == "DOCKER"
        assert trial["container"]["volumes"] == [
            {"container_path": "/shared/models", "host_path": "/shared/models", "mode": "RW"}]
        assert SANDBOX_PATH == "/mnt/mesos/sandbox"
    finally:
        job.store.close()
