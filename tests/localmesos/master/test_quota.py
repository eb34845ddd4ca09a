"""Quota: UPDATE_QUOTA / GET_QUOTA on the operator API, and the allocator keeping limits and
guarantees (real clusters, raw v1 frameworks)."""

from __future__ import annotations

from typing import Any

import pytest

from disauto.localmesos.cluster import LocalCluster
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import offered
from tests.localmesos.cluster_support import operator_call
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration


def _update(cluster: LocalCluster, *configs: dict[str, Any], force: bool = False
            ) -> tuple[int, Any]:
    body: dict[str, Any] = {"quota_configs": list(configs)}
    if force:
        body["force"] = True
    return operator_call(cluster, {"type": "UPDATE_QUOTA", "update_quota": body})


def _config(role: str, guarantees: dict[str, float] | None = None,
            limits: dict[str, float] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role}
    if guarantees:
        out["guarantees"] = {k: {"value": v} for k, v in guarantees.items()}
    if limits:
        out["limits"] = {k: {"value": v} for k, v in limits.items()}
    return out


@pytest.mark.parametrize(("config", "force", "message"), [
    (_config("a/b", limits={"cpus": 1}), False,
     "Updating quota on nested role 'a/b' is not supported yet"),
    (_config("-a", limits={"cpus": 1}), False,
     "Invalid QuotaConfig: Invalid 'QuotaConfig.role': Role '-a' cannot start a path "
     "segment with '-'"),
    (_config("a", limits={"cpus": -1}), False,
     "Invalid QuotaConfig: Invalid limit configuration {'cpus': -1}: Negative values not "
     "supported"),
    (_config("a", {"cpus": 2}, {"cpus": 1}), False,
     "Invalid QuotaConfig: 'QuotaConfig.guarantees' { cpus: 2 } is not contained within the "
     "'QuotaConfig.limits' { cpus: 1 }"),
    (_config("a", {"cpus": 100}), False,
     "Invalid QuotaConfig: total quota guarantees 'cpus:100' exceed cluster capacity "
     "'cpus:2; disk:4096; mem:2048' (use 'force' flag to bypass this check)"),
    (_config("a", limits={"mem": 1e13}), False,
     "Invalid QuotaConfig: Invalid 'QuotaConfig.limits': {'mem': 1e+13} is invalid: values "
     "greater than 1 exabyte (1099511627776) are not supported"),
])
def test_update_quota_refuses_what_mesos_refuses(
        config: dict[str, Any], force: bool, message: str) -> None:
    with running_cluster() as cluster:
        assert _update(cluster, config, force=force) == (400, message)
        assert operator_call(cluster, {"type": "GET_QUOTA"})[1]["get_quota"] == {"status": {}}
        status, answer = operator_call(cluster, {"type": "UPDATE_QUOTA"})
        assert (status, answer) == (
            400, "Failed to validate master::Call: Expecting 'update_quota' to be present")


def test_quota_is_set_shown_and_removed() -> None:
    with running_cluster() as cluster:
        assert _update(cluster, _config("ml", {"cpus": 1}, {"cpus": 1.5, "mem": 512})) == (
            200, "")
        status, answer = operator_call(cluster, {"type": "GET_QUOTA"})
        assert answer["get_quota"]["status"] == {
            "infos": [{"role": "ml", "guarantee": [
                {"name": "cpus", "type": "SCALAR", "scalar": {"value": 1.0}}]}],
            "configs": [{"role": "ml", "guarantees": {"cpus": {"value": 1.0}},
                         "limits": {"cpus": {"value": 1.5}, "mem": {"value": 512.0}}}],
        }
        assert get_json(cluster, "/master/quota") == answer["get_quota"]["status"]
        metrics = get_json(cluster, "/metrics/snapshot")
        prefix = "allocator/mesos/quota/roles/ml/resources/"
        assert metrics[prefix + "cpus/guarantee"] == 1.0
        assert metrics[prefix + "cpus/limit"] == 1.5 and metrics[prefix + "mem/limit"] == 512
        assert metrics[prefix + "cpus/offered_or_allocated"] == 0.0
        assert _update(cluster, {"role": "ml"}) == (200, "")  # the default quota: removed
        assert operator_call(cluster, {"type": "GET_QUOTA"})[1]["get_quota"] == {"status": {}}


def test_a_role_is_never_offered_beyond_its_limit() -> None:
    with running_cluster(agents=2, cpus=2.0, mem_mb=1024.0) as cluster:
        assert _update(cluster, _config("capped", limits={"cpus": 1, "mem": 256}))[0] == 200
        fw = RawFramework(cluster.address, name="capped", role="capped")
        try:
            fw.subscribe()
            first = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"]
            wait_until(lambda: cluster.master.allocation_runs > 3)
            offers = fw.offers()
            assert sum(offered(o, "cpus") for o in offers) == 1.0
            assert sum(offered(o, "mem") for o in offers) == 256.0
            fw.launch(first[0], [command_task(first[0], "t", "sleep 30", cpus=1, mem=64)],
                      refuse_seconds=0)
            fw.wait_event(lambda e: e["type"] == "UPDATE")
            start = len(fw.events)
            wait_until(lambda: cluster.master.allocation_runs > 10)
            # What is left of the limit is 192 MB of memory and no CPU at all.
            later = fw.offers(start)
            assert all(offered(o, "cpus") == 0 for o in later)
            assert sum(offered(o, "mem") for o in later) <= 192.0
            quota = next(r for r in get_json(cluster, "/master/roles")["roles"]
                         if r["name"] == "capped")["quota"]
            assert quota["limit"] == {"cpus": 1.0, "mem": 256.0}
            assert quota["consumed"] == {"cpus": 1.0, "mem": 64.0}
            assert _update(cluster, _config("capped", limits={"cpus": 0.5})) == (
                400, "Invalid QuotaConfig: Role 'capped' is already consuming 'cpus:1; mem:64'; "
                "this is more than the requested limits 'cpus:0.5' (use 'force' flag to bypass "
                "this check)")
            assert _update(cluster, _config("capped", limits={"cpus": 0.5}), force=True)[0] == 200
        finally:
            fw.close()


def test_guarantees_are_kept_for_their_role() -> None:
    with running_cluster(agents=2, cpus=2.0, mem_mb=1024.0) as cluster:
        assert _update(cluster, _config("prod", {"cpus": 2, "mem": 512}))[0] == 200
        other = RawFramework(cluster.address, name="other", role="dev")
        prod = RawFramework(cluster.address, name="prod", role="prod")
        try:
            other.subscribe()
            wait_until(lambda: cluster.master.allocation_runs > 5)
            # Of 4 CPUs, the 2 prod's guarantee needs are held back from "dev".
            assert sum(offered(o, "cpus") for o in other.offers()) == 2.0
            assert sum(offered(o, "mem") for o in other.offers()) == 2048 - 512
            prod.subscribe()
            wait_until(lambda: sum(offered(o, "cpus") for o in prod.offers()) >= 2.0)
            assert sum(offered(o, "mem") for o in prod.offers()) >= 512
        finally:
            prod.close()
            other.close()


def _set(cluster: LocalCluster, request: dict[str, Any]) -> tuple[int, Any]:
    return operator_call(cluster, {"type": "SET_QUOTA", "set_quota": {"quota_request": request}})


def _remove(cluster: LocalCluster, role: str) -> tuple[int, Any]:
    return operator_call(cluster, {"type": "REMOVE_QUOTA", "remove_quota": {"role": role}})


def _scalar(name: str, value: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "SCALAR", "scalar": {"value": value}, **extra}


def test_the_deprecated_set_and_remove_quota_calls_are_served() -> None:
    """Mesos 1.11 still serves SET_QUOTA and REMOVE_QUOTA (``src/master/http.cpp``,
    ``src/master/quota_handler.cpp`` ``set``/``remove``): the guarantee is the limit too, 200
    with no body, refusals with their messages."""
    with running_cluster() as cluster:
        request = {"role": "ml", "guarantee": [_scalar("cpus", 1), _scalar("mem", 256)]}
        assert _set(cluster, request) == (200, "")
        status = operator_call(cluster, {"type": "GET_QUOTA"})[1]["get_quota"]["status"]
        assert status["configs"] == [{
            "role": "ml", "guarantees": {"cpus": {"value": 1.0}, "mem": {"value": 256.0}},
            "limits": {"cpus": {"value": 1.0}, "mem": {"value": 256.0}}}]
        assert _set(cluster, request) == (
            400, "Failed to validate set quota request: Cannot set quota for role 'ml' which "
                 "already has quota")
        assert _remove(cluster, "ml") == (200, "")
        assert operator_call(cluster, {"type": "GET_QUOTA"})[1]["get_quota"] == {"status": {}}
        assert _remove(cluster, "ml") == (
            400, "Failed to remove quota: Role 'ml' has no quota set")
        assert _set(cluster, {"role": "ml", "guarantee": [_scalar("cpus", 100)]}) == (
            409, "Quota guarantees overcommit the cluster (use 'force' to bypass this check): "
                 "Total quota guarantees 'cpus:100' exceed cluster capacity "
                 "'cpus:2; disk:4096; mem:2048'")
        assert _set(cluster, {"role": "ml", "guarantee": [_scalar("cpus", 100)],
                              "force": True}) == (200, "")
        assert operator_call(cluster, {"type": "SET_QUOTA"}) == (
            400, "Failed to validate master::Call: Expecting 'set_quota' to be present")
        assert operator_call(cluster, {"type": "REMOVE_QUOTA"}) == (
            400, "Failed to validate master::Call: Expecting 'remove_quota' to be present")
