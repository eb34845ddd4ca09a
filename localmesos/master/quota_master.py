"""The quota part of the embedded master: the quotas of roles and the operator calls on them
(``GET_QUOTA``, ``UPDATE_QUOTA``, the deprecated ``SET_QUOTA`` and ``REMOVE_QUOTA``); the
quota arithmetic is :mod:`localmesos.master.quota`'s."""

from __future__ import annotations

from collections.abc import Mapping
import logging
from typing import Any

from disauto.common.resources import is_subrole
from disauto.localmesos.master import quota_legacy as legacy
from disauto.localmesos.master import validation
from disauto.localmesos.master.parts import MasterParts
from disauto.localmesos.master.quota import Quantities
from disauto.localmesos.master.quota import Quota
from disauto.localmesos.master.quota import add
from disauto.localmesos.master.quota import config_error
from disauto.localmesos.master.quota import consumed
from disauto.localmesos.master.quota import quantities_str
from disauto.localmesos.master.quota import quota_of
from disauto.localmesos.master.quota import subtract
from disauto.localmesos.master.state import MasterState
from disauto.localmesos.protocol.protojson import CallError


logger = logging.getLogger("disauto.localmesos.master")


class QuotaMaster:
    """The master's quotas and the operator calls on them (part of :class:`Master`)."""

    def __init__(self, state: MasterState, parts: MasterParts) -> None:
        self.state = state
        self.parts = parts

    def quota_status(self) -> dict[str, Any]:
        """``QuotaStatus``: ``configs`` (and the deprecated ``infos``) of every quota set."""
        with self.state.lock:
            quotas = dict(self.state.quotas)
        if not quotas:
            return {}
        infos = []
        for role, quota in sorted(quotas.items()):
            info: dict[str, Any] = {"role": role}
            if quota.guarantees:
                info["guarantee"] = [
                    {"name": n, "type": "SCALAR", "scalar": {"value": v}}
                    for n, v in sorted(quota.guarantees.items())
                ]
            infos.append(info)
        return {"infos": infos,
                "configs": [quota.config(role) for role, quota in sorted(quotas.items())]}

    def update_quota(self, configs: list[Mapping[str, Any]], force: bool) -> None:
        """UPDATE_QUOTA (``QuotaHandler::update``), all configs or none.

        Raises:
            CallError: 400 with Mesos' message for the first config that is refused.
        """
        for config in configs:
            role = str(config.get("role", ""))
            if "/" in role and validation.validate_role(role) is None:
                raise CallError(f"Updating quota on nested role '{role}' is not supported yet")
            error = config_error(config)
            if error is not None:
                raise CallError(f"Invalid QuotaConfig: {error}")
        with self.state.lock:
            self._check_quota_update(configs, force)
            for config in configs:
                role, quota = str(config["role"]), quota_of(config)
                if quota.is_default:
                    self.state.quotas.pop(role, None)
                else:
                    self.state.quotas[role] = quota
                logger.info("Quota of role %s: guarantees %s, limits %s", role,
                            quantities_str(quota.guarantees), quantities_str(quota.limits))
            self._rescind_over_limits([str(c["role"]) for c in configs])
        self.state.loop.trigger()

    def set_quota(self, request: Mapping[str, Any]) -> None:
        """SET_QUOTA, deprecated but served by Mesos 1.11 (``QuotaHandler::_set``, ``__set``;
        :mod:`localmesos.master.quota_legacy`): the guarantee is the limit too.

        Raises:
            CallError: 400 or 409 with Mesos' message.
        """
        with self.state.lock:
            legacy.check_set(request,
                             {role: q.guarantees for role, q in self.state.quotas.items()})
            role = str(request["role"])
            guarantees = legacy.guarantees_of(list(request.get("guarantee") or []))
            if not request.get("force"):
                legacy.check_capacity(
                    {**{r: q.guarantees for r, q in self.state.quotas.items()}, role: guarantees},
                    add(*(a.total.scalars for a in self.state.agents.values())))
            self.state.quotas[role] = Quota(guarantees, dict(guarantees))
            logger.info("Quota of role %s set: guarantees and limits %s", role,
                        quantities_str(guarantees))
            self._rescind_for_guarantee(role, guarantees)
        self.state.loop.trigger()

    def remove_quota(self, role: str) -> None:
        """REMOVE_QUOTA, deprecated but served by Mesos 1.11 (``QuotaHandler::__remove``).

        Raises:
            CallError: 400 ``Failed to remove quota: Role '<role>' has no quota set``.
        """
        with self.state.lock:
            if self.state.quotas.pop(role, None) is None:
                raise CallError(f"Failed to remove quota: Role '{role}' has no quota set")
            logger.info("Quota of role %s removed", role)
        self.state.loop.trigger()

    def _rescind_for_guarantee(self, role: str, guarantees: Mapping[str, float]) -> None:
        """Under the lock: ``QuotaHandler::rescindOffers``: every offer of one active agent
        after another, until what came back holds ``guarantees`` and as many agents were
        visited as ``role`` has connected frameworks."""
        frameworks = sum(1 for fw in self.state.frameworks.values()
                         if fw.connected and role in fw.roles)
        rescinded: Quantities = {}
        visited = 0
        for agent in self.state.agents.values():
            if not subtract(guarantees, rescinded) and visited >= frameworks:
                break
            if not (agent.connected and agent.active):
                continue
            offers = [o for o in self.state.offers.values() if o.agent_id == agent.agent_id]
            for offer in offers:
                rescinded = add(rescinded, offer.resources.scalars)
                self.parts.tasks.rescind(offer)
            visited += int(bool(offers))

    def _check_quota_update(self, configs: list[Mapping[str, Any]], force: bool) -> None:
        """Under the lock: limits below consumption and guarantees over capacity, unless
        ``force`` (``QuotaHandler::update``)."""
        for config in configs:
            role, quota = str(config["role"]), quota_of(config)
            used = consumed(role, self.state.agents.values(), self.state.frameworks.values())
            over = {n: v for n, v in used.items() if n in quota.limits and v > quota.limits[n]}
            if over and not force:
                raise CallError(
                    f"Invalid QuotaConfig: Role '{role}' is already consuming "
                    f"'{quantities_str(used)}'; this is more than the requested limits "
                    f"'{quantities_str(quota.limits)}' (use 'force' flag to bypass this check)")
        guarantees = {role: q.guarantees for role, q in self.state.quotas.items()}
        guarantees.update({str(c["role"]): quota_of(c).guarantees for c in configs})
        total_guarantees = add(*guarantees.values())
        capacity = add(*(a.total.scalars for a in self.state.agents.values()))
        if subtract(total_guarantees, capacity) and not force:
            raise CallError(
                f"Invalid QuotaConfig: total quota guarantees "
                f"'{quantities_str(total_guarantees)}' exceed cluster capacity "
                f"'{quantities_str(capacity)}' (use 'force' flag to bypass this check)")

    def _rescind_over_limits(self, roles: list[str]) -> None:
        """Under the lock: rescind offers of each role until what it consumes and is offered
        fits its new limits (best effort, as ``QuotaHandler::_update``)."""
        for role in roles:
            quota = self.state.quotas.get(role)
            if quota is None or not quota.limits:
                continue
            for offer in [o for o in self.state.offers.values() if is_subrole(o.role, role)]:
                used = consumed(role, self.state.agents.values(), self.state.frameworks.values())
                if not subtract(used, quota.limits):
                    break
                self.parts.tasks.rescind(offer)
