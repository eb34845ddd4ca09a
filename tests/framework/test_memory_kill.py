"""A trial over --app-runner-memory on an agent with the cgroups memory isolator: TASK_FAILED,
REASON_CONTAINER_LIMITATION_MEMORY, the isolator's message and ``limitation`` (apache/mesos
src/slave/containerizer/mesos/isolators/cgroups/subsystems/memory.cpp). The record and the
job's summary say which trial, how much it used against its limit, and what to ask for."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from disauto.framework._job import JobController
from disauto.framework._job.book import TrialBook
from disauto.framework._job.memory_kill import MemoryKill
from disauto.framework._spec import TaskResources
from disauto.framework._store import JobStore
from disauto.framework._telemetry.monitor import TelemetryLoop
from disauto.submit.results import usage_lines
from disauto.testing.inprocess import AGENT
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import job_config
from tests.framework import mesos_1_11 as mesos
from tests.framework.cluster_setup import Cluster


MB = 1024 * 1024
STATISTICS = ("\n\nMEMORY STATISTICS: \ncache 4096\nrss 570425344\nrss_huge 0\n"
              "mapped_file 0\npgpgin 140000\npgpgout 1000\n")


def oom(task_id: str, agent: str, used_mb: int = 544, limit_mb: int = 544) -> dict[str, Any]:
    """The agent's TASK_FAILED for a container its memory limit killed."""
    return mesos.status(
        task_id, "TASK_FAILED", agent, reason="REASON_CONTAINER_LIMITATION_MEMORY",
        source="SOURCE_AGENT", executor=task_id,
        message=f"Memory limit exceeded: Requested: {limit_mb}MB Maximum Used: "
                f"{used_mb}MB{STATISTICS}",
        limitation=[{"name": "mem", "type": "SCALAR", "scalar": {"value": float(used_mb)},
                     "role": "*"}])


def test_the_record_and_the_summary_say_how_much_it_used_and_what_to_ask(
        tmp_path: Path) -> None:
    job = Cluster(tmp_path, parallelism=1)  # --app-runner-memory 512M
    try:
        job.start_appcore(mesos.offer("O1", "a1", "*", mesos.unreserved("*", cpus=0.5,
                                                                        mem=256.0)))
        job.submit(1)
        job.offers(mesos.offer("O2", "a2", "*", mesos.unreserved("*")))
        job.update(mesos.status("trial-0001", "TASK_RUNNING", "a2"))
        job.update(oom("trial-0001", "a2"))
        trial = job.trial(1)
        assert trial.state == "FAILED"
        assert trial.message == (
            "TASK_FAILED REASON_CONTAINER_LIMITATION_MEMORY: killed by its memory limit: it "
            "used 544 MB of its container's 544 MB (--app-runner-memory 512M); give it more: "
            "--app-runner-memory 1280M")
        assert "MEMORY STATISTICS" in job.store.task_updates("trial-0001")[-1]["message"]
        assert trial.usage.peak_rss_bytes == 544 * MB  # the kernel's figure is its peak
        lines = usage_lines(job.store.trials(), 512.0)
        assert lines[0].startswith("largest peak memory 544 MB (trial-0001)")
        assert lines[1].startswith("trial-0001 killed by the 512M memory limit needed more: "
                                   "--app-runner-memory 1280M at least")
    finally:
        job.store.close()


def test_with_telemetry_the_kernels_figure_joins_what_the_polls_measured(
        tmp_path: Path) -> None:
    store = JobStore(tmp_path / "job.db")
    book = TrialBook(store)
    telemetry = TelemetryLoop([], book)
    config = replace(job_config(), runner=TaskResources(cpus=1.0, mem_mb=1024.0))
    controller = JobController(config, store, JOB_TOKEN, book=book, measures=telemetry)
    try:
        controller.submit_trial(1, {"lr": 0.1, "layers": 1, "act": "relu"}, 0)
        controller.trial_launched(1, "trial-0001", AGENT)
        controller.on_status(mesos.status("trial-0001", "TASK_RUNNING", AGENT))
        controller.on_status(oom("trial-0001", AGENT, used_mb=1056, limit_mb=1056))
        trial = store.trial(1)
        assert trial is not None and trial.usage.peak_rss_bytes == 1056 * MB
        assert "give it more: --app-runner-memory 2496M" in trial.message
    finally:
        store.close()


def test_the_size_formats_of_the_isolators_message() -> None:
    def kill(message: str, limitation: list[dict[str, Any]] | None = None) -> MemoryKill:
        status = {"reason": "REASON_CONTAINER_LIMITATION_MEMORY", "message": message}
        if limitation is not None:
            status["limitation"] = {"resources": limitation}
        read = MemoryKill.read(status)
        assert read is not None
        return read

    assert kill("Memory limit exceeded: Requested: 1GB Maximum Used: 1048575KB") == \
        MemoryKill(1048575 * 1024, 1024 * MB)
    assert kill("Memory limit exceeded: Requested: 123B Maximum Used: 0B") == MemoryKill(0, 123)
    # A message without the figures (another isolator): the limitation's mem, in MB.
    assert kill("Memory limit exceeded", [{"name": "mem", "scalar": {"value": 64.0}}]) == \
        MemoryKill(64 * MB, None)
    assert MemoryKill.read({"reason": "REASON_CONTAINER_LIMITATION_DISK"}) is None
