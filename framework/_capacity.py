"""Can the cluster ever run a task? The request against the agents the master reports.

A task larger than every agent waits for an offer forever: Mesos never says no, it just never
offers enough. ``da-submit`` asks the master's ``/master/slaves`` endpoint (served by real Mesos
and by the embedded master alike) for each agent's resources and ends the job with one line
when no agent could hold a trial or AppCore, however idle the cluster became.

Reservations count as Mesos allocates them (apache/mesos ``src/master/readonly_handler.cpp``
writes an agent's ``unreserved_resources`` and its ``reserved_resources`` by role): an agent's
unreserved resources are every role's, those reserved for a role only that role's and the
roles below it. A task that fits an agent only with resources reserved for a role the job lacks
can never run either, and the line names that role (``--role``). An agent that joins later can
still help, so a cluster with no agents yet is never judged.

A master with ACLs shows a reader only the reservations of the roles its ``view_roles`` ACL
lets it view (``SlaveWriter`` leaves the others out of ``reserved_resources``, and
``resources`` stays whole): what an agent's total has beyond its unreserved and visible
reserved resources is *hidden*, reserved for roles unknown here. A job with a role of its own
(``--role ml``) may well be the one they are reserved for, so it is never judged unable to run
on them (it waits for offers, as Mesos lets it); a job of the role ``*`` alone can never use a
reservation, and one that fits only them ends with a line saying the master hides them.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import json
import logging
from typing import Any
from urllib.request import urlopen

from disauto.common.master_http import master_request
from disauto.framework._roles import STAR
from disauto.framework._roles import usable_by
from disauto.framework._spec import TaskResources


logger = logging.getLogger(__name__)

# Mesos' scalar name → the TaskResources field that asks for it.
_NAMES = (("cpus", "cpus"), ("mem", "mem_mb"), ("gpus", "gpus"), ("disk", "disk_mb"))
_SCALARS = ("cpus", "mem", "gpus", "disk")


@dataclass(frozen=True)
class AgentCapacity:
    """One agent's scalar resources: unreserved, and reserved by role."""

    unreserved: Mapping[str, float]
    reserved: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    hostname: str = ""
    hidden: Mapping[str, float] = field(default_factory=dict)
    """Reserved for roles the master does not show this reader (``view_roles``)."""

    @property
    def total(self) -> dict[str, float]:
        return self.usable([STAR, *self.reserved])

    def usable(self, roles: Sequence[str], *, hidden: bool = False) -> dict[str, float]:
        """What a job subscribed with ``roles`` may ever be offered of this agent; with
        ``hidden``, the reservations the master hides counted in too."""
        out = dict(self.unreserved)
        if hidden:
            for name, value in self.hidden.items():
                out[name] = out.get(name, 0.0) + value
        for role, resources in self.reserved.items():
            if usable_by(role, roles):
                for name, value in resources.items():
                    out[name] = out.get(name, 0.0) + value
        return out


def agent_capacities(master_address: str, *, auth: tuple[str, str] | None = None,
                     timeout: float = 5.0) -> list[AgentCapacity]:
    """Each registered, active agent's resources, by reservation.

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
        return capacities(json.loads(response.read()))


def capacities(state: Any) -> list[AgentCapacity]:
    """The active agents of a ``/master/slaves`` answer.

    Raises:
        ValueError: it has no ``slaves`` list.
    """
    agents = state.get("slaves") if isinstance(state, Mapping) else None
    if not isinstance(agents, list):
        raise ValueError("the master's /master/slaves answer has no 'slaves' list")
    return [_capacity_of(agent) for agent in agents
            if isinstance(agent, Mapping) and agent.get("active", True)]


def _capacity_of(agent: Mapping[str, Any]) -> AgentCapacity:
    """An agent of ``/master/slaves``: ``unreserved_resources`` and ``reserved_resources`` by
    role when the master writes them (Mesos does), else its ``resources`` as unreserved."""
    reserved = agent.get("reserved_resources")
    unreserved = agent.get("unreserved_resources")
    if not isinstance(reserved, Mapping) or not isinstance(unreserved, Mapping):
        return AgentCapacity(_scalars(agent.get("resources") or {}),
                             hostname=str(agent.get("hostname", "")))
    shown = {str(role): _scalars(resources) for role, resources in reserved.items()
             if isinstance(resources, Mapping)}
    total = _scalars(agent.get("resources") or {})
    free = _scalars(unreserved)
    hidden = {}
    for name in _SCALARS:  # what the total has beyond what is shown: hidden reservations
        rest = total[name] - free[name] - sum(r[name] for r in shown.values())
        if rest > 1e-9:
            hidden[name] = rest
    return AgentCapacity(free, shown, hostname=str(agent.get("hostname", "")), hidden=hidden)


def _scalars(resources: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in _SCALARS:
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
    parts = [f"cpus={max(a.get('cpus', 0.0) for a in agents):g}",
             f"mem={max(a.get('mem', 0.0) for a in agents):.0f} MB"]
    gpus = max(a.get("gpus", 0.0) for a in agents)
    if gpus:
        parts.append(f"gpus={gpus:g}")
    return ", ".join(parts)


def unfit(tasks: Mapping[str, TaskResources],
          agents: Sequence[Mapping[str, float] | AgentCapacity],
          roles: Sequence[str] = (STAR,)) -> str:
    """Why a task can never run on these agents (one line), or "" when each fits one of them.

    Args:
        tasks: flag name (``--app-runner``, ``--app-core``) → what each such task asks for.
        agents: the agents (:func:`agent_capacities`; a plain mapping is an agent's
            unreserved totals); none means "not judged".
        roles: the roles the job subscribes with.
    """
    if not agents:
        return ""
    capacities = [a if isinstance(a, AgentCapacity) else AgentCapacity(dict(a))
                  for a in agents]
    usable = [agent.usable(roles) for agent in capacities]
    # A role of the job's own may be the one a hidden reservation is for: not judged there.
    own_role = any(role != STAR for role in roles)
    for flag, request in tasks.items():
        if any(not _shortfall(request, agent) for agent in usable):
            continue
        with_hidden = [agent.usable(roles, hidden=True) for agent in capacities]
        if any(not _shortfall(request, agent) for agent in with_hidden):
            if own_role:
                continue
            return (f"a {flag} task ({describe(request)}) fits only resources the Mesos master "
                    "does not show this job's principal (reserved for roles its view_roles "
                    "ACL hides), and this job's only role is '*': add the --role they are "
                    "reserved for")
        lacking = _lacking_roles(request, capacities, roles)
        if lacking:
            role, host = lacking[0]
            others = f" (or {', '.join(repr(r) for r, _ in lacking[1:])})" \
                if len(lacking) > 1 else ""
            return (f"a {flag} task ({describe(request)}) fits only resources reserved for "
                    f"the role {role!r}{others}, on {host}, and this job's roles are "
                    f"{', '.join(repr(r) for r in roles)}: add --role {role}")
        short = sorted({name for agent in usable for name in _shortfall(request, agent)})
        return (f"no agent of the cluster can ever run a {flag} task ({describe(request)}): "
                f"the largest agent has {largest(usable)}; lower "
                + " / ".join(f"{flag}-{'memory' if n == 'mem' else n}" for n in short)
                + f" or add larger agents ({len(agents)} agent(s) registered)")
    return ""


def _lacking_roles(request: TaskResources, agents: Sequence[AgentCapacity],
                   roles: Sequence[str]) -> list[tuple[str, str]]:
    """``(role, agent)`` pairs where ``request`` would fit the agent if the job also had
    ``role``, one per role (the first agent), by role."""
    found: dict[str, str] = {}
    for agent in agents:
        for role in sorted(agent.reserved):
            if role in found or usable_by(role, roles):
                continue
            if not _shortfall(request, agent.usable([*roles, role])):
                found[role] = agent.hostname or "an agent"
    return sorted(found.items())
