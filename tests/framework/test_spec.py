"""JobConfig round-trips through the JSON the job store keeps."""

from __future__ import annotations

import json

import pytest

from disauto.framework._spec import InputSpec
from disauto.framework._spec import JobConfig
from disauto.framework._spec import OutputSpec
from disauto.framework._spec import TaskResources
from disauto.testing.inprocess import job_config


pytestmark = pytest.mark.integration  # starts processes or servers


def test_json_round_trip_keeps_every_field() -> None:
    base = job_config(target=0.95, tuning_type="grid-search")
    config = JobConfig(
        **{**base.__dict__,
           "files": ("/data/train.py", "/data/util.py"),
           "inputs": (InputSpec("/data/mnist", "data"), InputSpec("hdfs://nn/x", "x")),
           "output": OutputSpec("/results", "model"),
           "runner": TaskResources(cpus=2.0, mem_mb=1024.0, gpus=1, disk_mb=10.0),
           "extra_env": {"A": "1"},
           "max_duration": 5400.0, "max_task_retries": 1, "trial_exit_grace": 2.5},
    )
    again = JobConfig.from_json(config.to_json())
    assert again == config
    assert again.search.target == 0.95 and again.search.HasField("target")
    assert again.search.space == config.search.space


def test_a_record_of_an_older_version_still_reads() -> None:
    data = json.loads(job_config().to_json())
    data["runner_path_prefix"] = "/venv/bin"  # a field this version no longer has
    del data["max_task_retries"]  # a field it did not have yet
    del data["trial_exit_grace"]  # nor this one (a job of an earlier version resumed)
    again = JobConfig.from_json(json.dumps(data))
    assert again.max_task_retries == JobConfig.max_task_retries
    assert again.trial_exit_grace == 30.0
    assert again.search == job_config().search


def test_without_output_or_target() -> None:
    config = job_config()
    again = JobConfig.from_json(config.to_json())
    assert again == config
    assert again.output is None
    assert not again.search.HasField("target")


def test_search_spec_is_a_copy() -> None:
    config = job_config(max_trials=4)
    spec = config.search_spec()
    spec.max_trials = 99
    assert config.search.max_trials == 4
