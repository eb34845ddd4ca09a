"""TaskInfo builders: names, labels, environment, resources and fetcher URIs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from disauto.common import task_env
from disauto.common.resources import Resources
from disauto.framework._tasks import appcore_task
from disauto.framework._tasks import first_port
from disauto.framework._tasks import task_name
from disauto.framework._tasks import trial_task


CLAIM = Resources({"cpus": 1.0, "mem": 256.0}, {"ports": [(31005, 31005)]})


def env_of(task: dict[str, Any]) -> dict[str, str]:
    variables = task["command"]["environment"]["variables"]
    return {v["name"]: v["value"] for v in variables}


def labels_of(task: dict[str, Any]) -> dict[str, str]:
    return {label["key"]: label["value"] for label in task["labels"]["labels"]}


def test_task_names_are_zero_padded() -> None:
    assert task_name(7) == "trial-0007"
    assert task_name(12345) == "trial-12345"


def test_first_port() -> None:
    assert first_port(CLAIM) == 31005
    with pytest.raises(ValueError, match="no port"):
        first_port(Resources({"cpus": 1.0}))


def test_appcore_task() -> None:
    task = appcore_task(task_id="appcore-2", agent_id="S1", hostname="agent1", claim=CLAIM,
                        command="python3 -m disauto.appcore", job_id="job-9",
                        framework_address="10.0.0.1:5000", job_token="secret",
                        extra_env={"EXTRA": "x", task_env.JOB_ID: "overridden"})
    assert task["name"] == "appcore"
    assert task["task_id"] == {"value": "appcore-2"}
    assert task["agent_id"] == {"value": "S1"}
    assert Resources.from_json(task["resources"]) == CLAIM
    assert task["command"]["shell"] is True
    assert task["command"]["value"] == "python3 -m disauto.appcore"
    assert env_of(task) == {
        "EXTRA": "x",
        task_env.JOB_ID: "job-9",  # the framework's values win over extra_env
        task_env.FRAMEWORK_ADDR: "10.0.0.1:5000",
        task_env.JOB_TOKEN: "secret",
        task_env.APPCORE_PORT: "31005",
        task_env.APPCORE_HOST: "agent1",
        task_env.APPCORE_BIND: "agent1",  # on a cluster AppCore listens on its agent's name
        "PYTHONUNBUFFERED": "1",
        # its numerical libraries' thread pools sized by its CPUs, not the machine's cores
        "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    }
    assert labels_of(task) == {"disauto.job": "job-9", "disauto.role": "appcore"}


def test_appcore_thread_pools_follow_its_cpus_unless_given() -> None:
    def pools(cpus: float, extra: dict[str, str]) -> dict[str, str]:
        claim = Resources({"cpus": cpus, "mem": 256.0}, {"ports": [(31005, 31005)]})
        env = env_of(appcore_task(task_id="a", agent_id="S1", hostname="h", claim=claim,
                                  command="c", job_id="j", framework_address="f:1",
                                  job_token="t", extra_env=extra))
        return {name: env[name] for name in task_env.THREAD_POOLS}

    assert set(pools(0.5, {}).values()) == {"1"}
    assert set(pools(3.7, {}).values()) == {"3"}
    assert pools(2.0, {"OMP_NUM_THREADS": "8"})["OMP_NUM_THREADS"] == "8"  # the user's


def test_trial_task() -> None:
    uris = [{"value": "http://h:1/s/files/0/train.py", "extract": False,
             "output_file": "train.py"}]
    assignment = {"lr": 0.1, "layers": 3, "act": "relu"}
    task = trial_task(trial_number=7, agent_id="S2", claim=CLAIM, launch_cmd="python train.py",
                      job_id="job-9", assignment=assignment, trial_token="tok7",
                      appcore_address="agent1:31005", framework_address="10.0.0.1:5000",
                      uris=uris, output_dir="/out/trial-0007", output_name="model",
                      extra_env={"EXTRA": "y"})
    assert task["name"] == "trial-0007" and task["task_id"] == {"value": "trial-0007"}
    assert task["agent_id"] == {"value": "S2"}
    assert Resources.from_json(task["resources"]) == CLAIM
    assert task["command"]["value"] == "python train.py"
    assert task["command"]["uris"] == uris and task["command"]["uris"][0] is not uris[0]
    env = env_of(task)
    assert json.loads(env[task_env.PARAMS]) == assignment
    assert env == {
        "EXTRA": "y",
        task_env.JOB_ID: "job-9",
        task_env.TRIAL_NUMBER: "7",
        task_env.TRIAL_TOKEN: "tok7",
        task_env.PARAMS: env[task_env.PARAMS],
        task_env.APPCORE_ADDR: "agent1:31005",
        task_env.FRAMEWORK_ADDR: "10.0.0.1:5000",
        task_env.OUTPUT_DIR: "/out/trial-0007",
        task_env.OUTPUT_NAME: "model",
        "PYTHONUNBUFFERED": "1",
    }
    labels = labels_of(task)
    assert labels == {"disauto.job": "job-9", "disauto.role": "trial", "disauto.trial": "7",
                      "disauto.assignment": env[task_env.PARAMS]}


def test_trial_task_without_output_has_no_output_variables() -> None:
    task = trial_task(trial_number=1, agent_id="S", claim=CLAIM, launch_cmd="x", job_id="j",
                      assignment={"a": "b"}, trial_token="t", appcore_address="h:1",
                      framework_address="h:2")
    env = env_of(task)
    assert task_env.OUTPUT_DIR not in env and task_env.OUTPUT_NAME not in env
    assert task["command"]["uris"] == []


def test_appcore_binds_what_it_is_told_and_runners_get_its_certificate() -> None:
    task = appcore_task(task_id="appcore-1", agent_id="S1", hostname="agent1", claim=CLAIM,
                        command="c", job_id="j", framework_address="f:1", job_token="t",
                        bind_host="127.0.0.1")
    assert env_of(task)[task_env.APPCORE_BIND] == "127.0.0.1"
    trial = trial_task(trial_number=1, agent_id="S1", claim=CLAIM, launch_cmd="c", job_id="j",
                       assignment={}, trial_token="t", appcore_address="a:1",
                       framework_address="f:1", appcore_certificate="PEM")
    assert env_of(trial)[task_env.APPCORE_CERT] == "PEM"
    plain = trial_task(trial_number=1, agent_id="S1", claim=CLAIM, launch_cmd="c", job_id="j",
                       assignment={}, trial_token="t", appcore_address="a:1",
                       framework_address="f:1")
    assert task_env.APPCORE_CERT not in env_of(plain)
