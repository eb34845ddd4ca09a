"""Which of a job's warm slots still run, as the Mesos master lists its framework's executors.

A framework that fails over (``da-job resume`` on a master that lived on) keeps its FrameworkID,
and with it the slot executors its predecessor started: they run on, idle or busy with a trial.
The master lists a framework's executors in ``/master/frameworks`` (and ``/master/state``):
Mesos' ``model(ExecutorInfo)`` (``executor_id`` a string, ``resources`` in the object form
``{"cpus": 0.05, "mem": 64, "gpus": 1}``) plus ``slave_id``. The v1 forms (``{"value": ...}``,
a list of Resource) are read too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import json
from typing import Any
from urllib.parse import urlencode
from urllib.request import urlopen

from disauto.common import slots
from disauto.common.master_http import master_request
from disauto.common.resources import Resources


@dataclass(frozen=True)
class RunningSlot:
    """A slot executor the master says runs."""

    executor_id: str
    agent_id: str
    gpus: int = 0


def running_slots(master_address: str, framework_id: str, job_id: str, *,
                  auth: tuple[str, str] | None = None,
                  timeout: float = 5.0) -> list[RunningSlot]:
    """The job's slot executors that run under ``framework_id``.

    Raises:
        OSError: the master cannot be asked.
        ValueError: its answer is not the ``/master/frameworks`` JSON.
    """
    query = urlencode({"framework_id": framework_id})
    request = master_request(f"http://{master_address}/master/frameworks?{query}",
                             *(auth or ()))
    with urlopen(request, timeout=timeout) as response:  # noqa: S310 - the job's master
        body = json.loads(response.read())
    return slots_of(body, framework_id, job_id)


def slots_of(body: Mapping[str, Any], framework_id: str, job_id: str) -> list[RunningSlot]:
    """The job's slots among the executors of ``framework_id`` in a ``/master/frameworks``
    (or ``/master/state``) answer.

    Raises:
        ValueError: the answer has no list of frameworks.
    """
    frameworks = body.get("frameworks")
    if not isinstance(frameworks, list):
        raise ValueError("the master's answer has no 'frameworks' list")
    out = []
    for framework in frameworks:
        if not isinstance(framework, dict) or _id(framework.get("id")) != framework_id:
            continue
        for executor in framework.get("executors") or []:
            executor_id = _id(executor.get("executor_id"))
            if slots.slot_number(job_id, executor_id) is None:
                continue
            agent_id = _id(executor.get("slave_id") or executor.get("agent_id"))
            out.append(RunningSlot(executor_id, agent_id, _gpus(executor.get("resources"))))
    return out


def _id(value: Any) -> str:
    """An id in Mesos' model form (a string) or the v1 form (``{"value": ...}``)."""
    if isinstance(value, dict):
        return str(value.get("value", ""))
    return str(value or "")


def _gpus(resources: Any) -> int:
    if isinstance(resources, dict):
        try:
            return int(float(resources.get("gpus") or 0))
        except (TypeError, ValueError):
            return 0
    if isinstance(resources, list):
        try:
            return int(Resources.from_json(resources).scalar("gpus"))
        except (TypeError, ValueError, KeyError):
            return 0
    return 0
