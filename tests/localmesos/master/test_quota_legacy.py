"""SET_QUOTA's checks, pure (``src/master/quota_handler.cpp`` ``_set``, ``overcommitCheck``;
``src/master/quota.cpp`` ``quota::validation::quotaInfo``; ``src/common/resources.cpp``
``Resources::validate``); the calls on a real cluster are in ``test_quota.py``."""

from __future__ import annotations

from typing import Any

import pytest

from disauto.localmesos.master import quota_legacy as legacy
from disauto.localmesos.protocol.protojson import CallError


def _scalar(name: str, value: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "SCALAR", "scalar": {"value": value}, **extra}


SET = "Failed to validate set quota request: "


@pytest.mark.parametrize(("request_", "message"), [
    ({"role": "ml", "guarantee": [_scalar("cpus", -1)]},
     SET + "QuotaInfo with invalid resource: Resource 'cpus:-1' is invalid: Invalid scalar "
           "resource: value <= 0"),
    ({"role": "ml", "guarantee": [_scalar("", 1)]},
     SET + "QuotaInfo with invalid resource: Resource ':1' is invalid: Empty resource name"),
    ({"role": "ml", "guarantee": [{"name": "ports", "type": "RANGES", "scalar": {"value": 1}}]},
     SET + "QuotaInfo with invalid resource: Resource 'ports:[]' is invalid: Invalid ranges "
           "resource"),
    ({"guarantee": [_scalar("cpus", 1)]},
     SET + "QuotaInfo with invalid role: Empty role name is invalid"),
    ({"role": "-a", "guarantee": [_scalar("cpus", 1)]},
     SET + "QuotaInfo with invalid role: Role '-a' cannot start a path segment with '-'"),
    ({"role": "ml"}, SET + "QuotaInfo with empty 'guarantee'"),
    ({"role": "ml", "guarantee": [_scalar("cpus", 1, role="ml")]},
     SET + "QuotaInfo must not contain any ReservationInfo"),
    ({"role": "ml", "guarantee": [_scalar("disk", 1, disk={"persistence": {"id": "v"}})]},
     SET + "QuotaInfo must not contain DiskInfo"),
    ({"role": "ml", "guarantee": [_scalar("cpus", 1, revocable={})]},
     SET + "QuotaInfo must not contain RevocableInfo"),
    ({"role": "ml", "guarantee": [{"name": "ports", "type": "RANGES",
                                   "ranges": {"range": [{"begin": 1, "end": 2}]}}]},
     SET + "QuotaInfo must not include non-scalar resources"),
    ({"role": "ml", "guarantee": [_scalar("cpus", 1), _scalar("cpus", 2)]},
     SET + "QuotaInfo contains duplicate resource name 'cpus'"),
    ({"role": "dev", "guarantee": [_scalar("cpus", 1)]},
     SET + "Cannot set quota for role 'dev' which already has quota"),
    ({"role": "eng/ml", "guarantee": [_scalar("cpus", 1)]},
     SET + "Invalid quota configuration. Parent role 'eng' with guarantees ({}) does not "
           "contain the sum of its children's guarantees (cpus:1)"),
    ({"role": "dev/ml", "guarantee": [_scalar("cpus", 1)]},
     "Setting quota on nested role 'dev/ml' is not supported yet"),
])
def test_set_quota_refuses_what_mesos_refuses(request_: dict[str, Any], message: str) -> None:
    with pytest.raises(CallError) as refused:
        legacy.check_set(request_, {"dev": {"cpus": 2.0}})
    assert (refused.value.status, str(refused.value)) == (400, message)


def test_a_valid_request_passes_and_its_guarantee_counts_once_per_name() -> None:
    request = {"role": "ml", "guarantee": [_scalar("cpus", 1.5), _scalar("mem", 0)]}
    legacy.check_set(request, {"dev": {"cpus": 2.0}})
    assert legacy.guarantees_of(request["guarantee"]) == {"cpus": 1.5}


def test_guarantees_over_the_capacity_are_a_conflict() -> None:
    capacity = {"cpus": 4.0, "mem": 1024.0, "disk": 0.0}
    legacy.check_capacity({"dev": {"cpus": 2.0}, "ml": {"cpus": 2.0}}, capacity)
    with pytest.raises(CallError) as refused:
        legacy.check_capacity({"dev": {"cpus": 2.0}, "ml": {"cpus": 2.5, "mem": 8.0}}, capacity)
    assert refused.value.status == 409
    assert str(refused.value) == (
        "Quota guarantees overcommit the cluster (use 'force' to bypass this check): Total "
        "quota guarantees 'cpus:4.5; mem:8' exceed cluster capacity 'cpus:4; mem:1024'")


def test_resources_are_written_as_mesos_writes_them() -> None:
    assert legacy.resource_str(_scalar("cpus", 0.5)) == "cpus:0.5"
    assert legacy.resource_str(_scalar("cpus", 1, allocation_info={"role": "ml"},
                                       revocable={})) == "cpus(allocated: ml){REV}:1"
    assert legacy.resource_str({"name": "s", "type": "SET", "set": {"item": ["a", "b"]}}) == (
        "s:{a, b}")
