"""The resources of the tasks launched on one offer, drawn from what it offered, pool by pool.

Tasks are built with plain amounts (``Resources``: cpus, mem, gpus, ports...). Mesos accepts a
task only if each of its resources is contained in the offer *with its reservation*: a task
that uses a role's reserved GPUs must name that reservation, and a MULTI_ROLE framework's must
carry the offer's ``allocation_info`` (apache/mesos ``src/master/validation.cpp``:
``validateAllocatedToSingleRole``, and the offered resources must contain the task's and its new
executor's). :class:`OfferClaims` turns the amounts of every task of one offer, and of every
executor a new warm slot starts there, into the JSON Resources Mesos wants: drawn from the
offer's pools (``framework/_offers.py`` ``Pool``), reserved ones first (they are the job's
roles' alone; unreserved ones are left to others), each resource with its pool's reservation
fields as offered and the offer's ``allocation_info``.
"""

from __future__ import annotations

from collections.abc import Mapping
import logging
from typing import Any

from disauto.common.resources import Resources
from disauto.framework._offers import STAR
from disauto.framework._offers import OfferView
from disauto.framework._offers import Pool


logger = logging.getLogger("disauto.framework._scheduler")


class OfferClaims:
    """What is left of one offer's pools while its tasks are drawn from them.

    Args:
        view: the offer.
    """

    def __init__(self, view: OfferView) -> None:
        pools = view.pools or (Pool(STAR, {}, view.available),)
        # Reserved pools first, the most refined (deepest role) first; unreserved last.
        ordered = sorted(pools, key=lambda p: (p.reserved_for == STAR,
                                               -p.reserved_for.count("/")))
        self._left: list[tuple[Mapping[str, Any], Resources]] = [
            (pool.fields, pool.resources) for pool in ordered]
        allocation = view.raw.get("allocation_info") if view.raw else None
        self._allocation = dict(allocation) if isinstance(allocation, Mapping) else None
        self._offer_id = view.id

    def draw(self, resources: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The JSON Resources of a task or executor that wants ``resources`` (plain JSON, as
        ``Resources.to_json`` writes it), taken out of the offer's pools."""
        wanted = Resources.from_json(resources)
        out: list[dict[str, Any]] = []
        for index, (fields, pool) in enumerate(self._left):
            taken = _take(pool, wanted)
            if taken.is_empty():
                continue
            self._left[index] = (fields, pool - taken)
            wanted = wanted - taken
            out += [self._dressed(item, fields) for item in taken.to_json(role=None)]
        if not wanted.is_empty():
            # The plan claimed more than the offer holds: Mesos will refuse the task
            # (TASK_ERROR), which the job records; say why here.
            logger.warning("offer %s lacks %s for a task it was planned for", self._offer_id,
                           wanted.to_state())
            out += [self._dressed(item, {}) for item in wanted.to_json(role=None)]
        return out

    def with_drawn_resources(self, task: Mapping[str, Any]) -> dict[str, Any]:
        """``task`` with its own resources drawn from the offer (its executor's, if new, are
        drawn where the executor is made)."""
        return {**task, "resources": self.draw(list(task.get("resources") or []))}

    def _dressed(self, item: dict[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
        dressed = {**item, **{key: _copy(value) for key, value in fields.items()}}
        if self._allocation is not None:
            dressed["allocation_info"] = dict(self._allocation)
        return dressed


def _take(pool: Resources, wanted: Resources) -> Resources:
    """As much of ``wanted`` as ``pool`` holds: each scalar up to the pool's amount, each
    range where the pool has it."""
    scalars = {name: min(value, pool.scalar(name)) for name, value in wanted.scalars.items()}
    ranges = {}
    for name in {item["name"] for item in wanted.to_json(role=None)
                 if item["type"] == "RANGES"}:
        have = pool.ranges(name)
        ranges[name] = [(max(b, hb), min(e, he)) for b, e in wanted.ranges(name)
                        for hb, he in have if max(b, hb) <= min(e, he)]
    return Resources(scalars, ranges)


def _copy(value: Any) -> Any:
    """A deep copy of JSON (a reservation stack is a list of objects)."""
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value
