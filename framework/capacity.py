"""Can the cluster ever run a task? The request against the agents the master reports.

A task larger than every agent waits for an offer forever: Mesos never says no, it just never
offers enough. ``da-submit`` asks the master's ``/master/slaves`` endpoint (served by real Mesos
and by the embedded master alike) for each agent's total resources and ends the job with one
line when no agent could hold a trial or AppCore, however idle the cluster became.

An agent's *total* resources count, reservations included: a reservation for another role makes
a fit only unlikely, not impossible, and an agent that joins later can still help, so a cluster
with no agents yet is never judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import json
import logging
from typing import Any
from urllib.request import urlopen

from disauto.common.master_http import master_request
from disauto.framework.spec import TaskResources


logger = logging.getLogger(__name__)

# Mesos' scalar name → the TaskResources field that asks for it.
_NAMES = (("cpus", "cpus"), ("mem", "mem_mb"), ("gpus", "gpus"), ("disk", "disk_mb"))


def agent_totals(master_address: str, *, auth: tuple[str, str] | None = None,
                 timeout: float = 5.0) -> list[dict[str, float]]:
    """Each registered agent's total scalar resources (``cpus``, ``mem``, ``gpus``, ``disk``).

    Args:
        master_address: ``host:port`` of the master.
        auth: (principal, secret) for a master that requires HTTP authentication.
        timeout: seconds.

    Raises:
        OSError: the master cannot be asked.
        ValueError: its answer is not the ``/master/slaves`` JSON.
    """
    request = master_request(f"http://{master_address}/master/slaves", *(auth or ()))
    with urlopen(request, timeout=timeout) as response:  # noqa: S310 - the master's URL
        state = json.loads(response.read())
    agents = state.get("slaves")
    if not isinstance(agents, list):
        raise ValueError("the master's /master/slaves answer has no 'slaves' list")
    return [_scalars(agent.get("resources") or {}) for agent in agents
            if agent.get("active", True)]


def _scalars(resources: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in ("cpus", "mem", "gpus", "disk"):
        try:
            out[name] = float(resources.get(name, 0.0) or 0.0)
        except (TypeError, ValueError):
            out[name] = 0.0
    return out


def _shortfall(request: TaskResources, agent: Mapping[str, float]) -> list[str]:
    short = []
    for key, attr in _NAMES:
        wanted = float(getattr(request, attr))
        if wanted > agent.get(key, 0.0) + 1e-9:
            short.append(key)
    return short


def describe(request: TaskResources) -> str:
    """``cpus=4, mem=5120 MB`` (GPUs and disk only when asked for)."""
    parts = [f"cpus={request.cpus:g}", f"mem={request.mem_mb:.0f} MB"]
    if request.gpus:
        parts.append(f"gpus={request.gpus}")
    if request.disk_mb:
        parts.append(f"disk={request.disk_mb:.0f} MB")
    return ", ".join(parts)


def largest(agents: Sequence[Mapping[str, float]]) -> str:
    """The largest figure of each resource over the agents, for the error message."""
    parts = [f"cpus={max(a['cpus'] for a in agents):g}",
             f"mem={max(a['mem'] for a in agents):.0f} MB"]
    gpus = max(a["gpus"] for a in agents)
    if gpus:
        parts.append(f"gpus={gpus:g}")
    return ", ".join(parts)


def unfit(tasks: Mapping[str, TaskResources], agents: Sequence[Mapping[str, float]]) -> str:
    """Why a task can never run on these agents (one line), or "" when each fits one of them.

    Args:
        tasks: flag name (``--app-runner``, ``--app-core``) → what each such task asks for.
        agents: the agents' totals (:func:`agent_totals`); none means "not judged".
    """
    if not agents:
        return ""
    for flag, request in tasks.items():
        if any(not _shortfall(request, agent) for agent in agents):
            continue
        short = sorted({name for agent in agents for name in _shortfall(request, agent)})
        return (f"no agent of the cluster can ever run a {flag} task ({describe(request)}): "
                f"the largest agent has {largest(agents)}; lower "
                + " / ".join(f"{flag}-{'memory' if n == 'mem' else n}" for n in short)
                + f" or add larger agents ({len(agents)} agent(s) registered)")
    return ""
