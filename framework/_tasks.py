"""Mesos TaskInfo builders for AppCore and the trials (JSON, as pymesos sends it)."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import copy
import json
from typing import Any

from disauto.common import task_env
from disauto.common.resources import Resources


def task_name(trial_number: int) -> str:
    """The name of a trial's task (and the id of its first launch): ``trial-0007``."""
    return f"trial-{trial_number:04d}"


def trial_task_id(trial_number: int, retries: int = 0) -> str:
    """The task id of a trial's launch: ``trial-0007``, then ``trial-0007.1`` after a loss.

    Mesos task ids must be unique within a framework, so a trial launched again after its task
    was lost gets a new one; the name stays ``trial-0007``.
    """
    name = task_name(trial_number)
    return f"{name}.{retries}" if retries else name


def _labels(items: Mapping[str, str]) -> dict[str, Any]:
    return {"labels": [{"key": k, "value": v} for k, v in items.items()]}


def _environment(variables: Mapping[str, str]) -> dict[str, Any]:
    return {"variables": [{"name": k, "value": v} for k, v in variables.items()]}


def first_port(claim: Resources) -> int:
    ranges = claim.ranges("ports")
    if not ranges:
        raise ValueError("the claim has no port")
    return ranges[0][0]


def appcore_task(
    *,
    task_id: str,
    agent_id: str,
    hostname: str,
    claim: Resources,
    command: str,
    job_id: str,
    framework_address: str,
    job_token: str,
    bind_host: str = "",
    extra_env: Mapping[str, str] = {},  # noqa: B006 - read-only
    container: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The AppCore task: its command serves gRPC on the offered port.

    It listens on ``bind_host`` (default: ``hostname``, the agent's name in the offer).
    ``container`` (a ContainerInfo, see :mod:`framework._containers`) runs it in an image.
    """
    env = {
        **extra_env,
        task_env.JOB_ID: job_id,
        task_env.FRAMEWORK_ADDR: framework_address,
        task_env.JOB_TOKEN: job_token,
        task_env.APPCORE_PORT: str(first_port(claim)),
        task_env.APPCORE_HOST: hostname,
        task_env.APPCORE_BIND: bind_host or hostname,
        "PYTHONUNBUFFERED": "1",
        **task_env.thread_pools(claim.scalar("cpus"), extra_env),
    }
    task: dict[str, Any] = {
        "name": "appcore",
        "task_id": {"value": task_id},
        "agent_id": {"value": agent_id},
        "resources": claim.to_json(),
        "command": {"shell": True, "value": command, "environment": _environment(env)},
        "labels": _labels({"disauto.job": job_id, "disauto.role": "appcore"}),
    }
    if container:
        task["container"] = copy.deepcopy(dict(container))
    return task


def _trial_extras(appcore_certificate: str, output_dir: str,
                  output_name: str) -> dict[str, str]:
    """The variables a trial gets only when asked: AppCore's certificate, its --output."""
    env = {task_env.APPCORE_CERT: appcore_certificate} if appcore_certificate else {}
    if output_dir:
        env[task_env.OUTPUT_DIR] = output_dir
        env[task_env.OUTPUT_NAME] = output_name
    return env


def trial_task(
    *,
    trial_number: int,
    agent_id: str,
    claim: Resources,
    launch_cmd: str,
    job_id: str,
    assignment: Mapping[str, Any],
    trial_token: str,
    appcore_address: str,
    framework_address: str,
    appcore_certificate: str = "",
    uris: Sequence[Mapping[str, Any]] = (),
    output_dir: str = "",
    output_name: str = "",
    extra_env: Mapping[str, str] = {},  # noqa: B006 - read-only
    container: Mapping[str, Any] | None = None,
    retries: int = 0,
) -> dict[str, Any]:
    """An AppRunner task: the user's launch command with one assignment.

    ``container`` (a ContainerInfo, see :mod:`framework._containers`) runs it in an image; a
    ``gpus`` scalar in ``claim`` asks Mesos for GPUs.
    """
    name = task_name(trial_number)
    params = json.dumps(dict(assignment), sort_keys=True)
    env = {
        **extra_env,
        task_env.JOB_ID: job_id,
        task_env.TRIAL_NUMBER: str(trial_number),
        task_env.TRIAL_TOKEN: trial_token,
        task_env.PARAMS: params,
        task_env.APPCORE_ADDR: appcore_address,
        task_env.FRAMEWORK_ADDR: framework_address,
        "PYTHONUNBUFFERED": "1",
        **_trial_extras(appcore_certificate, output_dir, output_name),
    }
    task: dict[str, Any] = {
        "name": name,
        "task_id": {"value": trial_task_id(trial_number, retries)},
        "agent_id": {"value": agent_id},
        "resources": claim.to_json(),
        "command": {
            "shell": True,
            "value": launch_cmd,
            "environment": _environment(env),
            "uris": [dict(uri) for uri in uris],
        },
        "labels": _labels({
            "disauto.job": job_id,
            "disauto.role": "trial",
            "disauto.trial": str(trial_number),
            "disauto.assignment": params,
        }),
    }
    if container:
        task["container"] = copy.deepcopy(dict(container))
    return task
