"""Mesos resource parsing and arithmetic."""

from __future__ import annotations

import json
import re

import pytest

from disauto.common.resources import ResourceError
from disauto.common.resources import Resources
from disauto.common.resources import RoleResources
from disauto.common.resources import parse_ranges
from disauto.common.resources import parse_size_mb


@pytest.mark.parametrize(
    ("text", "mb"),
    [("20GB", 20480.0), ("512MB", 512.0), ("5G", 5120.0), ("1024", 1024.0), ("1.5g", 1536.0),
     ("2048KB", 2.0), (256, 256.0), ("1TB", 1048576.0)],
)
def test_sizes_accept_mesos_units(text: str | int, mb: float) -> None:
    assert parse_size_mb(text) == mb


@pytest.mark.parametrize("text", ["5X", "", "GB", "-1G", "0", "1.2.3G", "nan", True])
def test_bad_sizes_name_the_value_and_the_valid_forms(text: object) -> None:
    with pytest.raises(ResourceError) as err:
        parse_size_mb(text, what="--mem")  # type: ignore[arg-type]
    assert "--mem" in str(err.value)
    assert "512MB" in str(err.value) or "greater than zero" in str(err.value)


def test_ranges_parse_merge_and_reject() -> None:
    assert parse_ranges("[31000-32000]") == [(31000, 32000)]
    assert parse_ranges("[5-7, 8-9, 1-2]") == [(1, 2), (5, 9)]
    assert parse_ranges("80") == [(80, 80)]
    for bad in ("[9-1]", "[a-b]", "[1-2-3]"):
        with pytest.raises(ResourceError):
            parse_ranges(bad)


def test_json_round_trip_and_state_form() -> None:
    res = Resources({"cpus": 4, "mem": 1024, "gpus": 1}, {"ports": [(31000, 31002)]})
    again = Resources.from_json(res.to_json())
    assert again == res
    assert res.to_json()[0] == {"name": "cpus", "type": "SCALAR", "scalar": {"value": 4},
                                "role": "*"}
    state = Resources({"cpus": 2}).to_state()
    assert state == {"cpus": 2, "gpus": 0.0, "mem": 0.0, "disk": 0.0}
    assert res.to_state()["ports"] == "[31000-31002]"


def test_arithmetic_contains_and_port_subtraction() -> None:
    total = Resources({"cpus": 4, "mem": 4096}, {"ports": [(31000, 31010)]})
    need = Resources({"cpus": 1.5, "mem": 1024}, {"ports": [(31003, 31004)]})
    assert total.contains(need)
    left = total - need
    assert left.scalar("cpus") == 2.5
    assert left.ranges("ports") == [(31000, 31002), (31005, 31010)]
    assert not left.contains(need)
    assert left + need == total
    assert not total.contains(Resources({"gpus": 1}))


def test_fixed_point_precision() -> None:
    total = Resources({"cpus": 0.1}) + Resources({"cpus": 0.2})
    assert total.scalar("cpus") == 0.3
    assert (Resources({"cpus": 1}) - Resources({"cpus": 1})).is_empty()


@pytest.mark.parametrize(
    "bad",
    [
        [{"type": "SCALAR", "scalar": {"value": 1}}],
        [{"name": "cpus", "type": "SCALAR"}],
        [{"name": "cpus", "type": "SCALAR", "scalar": {"value": -1}}],
        [{"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 9, "end": 1}]}}],
        [{"name": "x", "type": "SET", "set": {"item": ["a"]}}],
        ["cpus"],
    ],
)
def test_malformed_json_resources_are_rejected(bad: list[object]) -> None:
    with pytest.raises(ResourceError):
        Resources.from_json(bad)  # type: ignore[arg-type]


# -- reservations -----------------------------------------------------------------------------


def test_role_resources_parse_mesos_text_and_json() -> None:
    text = "cpus(ml):4;gpus(ml):1;mem(*):8192;ports:[31000-31005]"
    parsed = RoleResources.parse(text)
    assert parsed.reserved_for("ml") == Resources({"cpus": 4, "gpus": 1})
    assert parsed.reserved_for("*") == Resources({"mem": 8192}, {"ports": [(31000, 31005)]})
    assert parsed.reservation_roles == ["ml"] and parsed.scalar("cpus") == 4
    assert str(parsed) == "mem(*):8192; ports(*):[31000-31005]; cpus(ml):4; gpus(ml):1"
    assert RoleResources.parse(json.dumps(parsed.to_json())) == parsed
    assert RoleResources.parse("cpus:2", default_role="dev").reservation_roles == ["dev"]


@pytest.mark.parametrize(("text", "message"), [
    ("cpus", "expected NAME:VALUE or NAME(ROLE):VALUE"),
    ("cpus(ml:4", "expected NAME:VALUE or NAME(ROLE):VALUE"),
    ("cpus(/ml):4", "invalid role '/ml'"),
    ("cpus(ml):four", "invalid value 'four'"),
    ("cpus(ml):-1", "invalid value '-1'"),
    ("disks:{a,b}", "set values are not supported"),
    ("[1,", "not a JSON array"),
])
def test_role_resources_refuse_bad_text_with_one_line(text: str, message: str) -> None:
    with pytest.raises(ResourceError, match=re.escape(message)):
        RoleResources.parse(text)


def test_role_resources_formats_of_mesos() -> None:
    parsed = RoleResources.parse("cpus(ml):1;mem:32")
    post = parsed.to_json(allocation_role="ml")
    assert post == [
        {"name": "mem", "type": "SCALAR", "scalar": {"value": 32.0},
         "allocation_info": {"role": "ml"}},
        {"name": "cpus", "type": "SCALAR", "scalar": {"value": 1.0},
         "reservations": [{"type": "STATIC", "role": "ml"}], "allocation_info": {"role": "ml"}},
    ]
    assert [r["role"] for r in parsed.to_json(format="pre")] == ["*", "ml"]
    assert "reservations" not in parsed.to_json(format="pre")[1]
    endpoint = parsed.to_json(format="endpoint")[1]
    assert endpoint["role"] == "ml" and endpoint["reservations"][0]["role"] == "ml"
    for form in ("post", "pre", "endpoint"):
        assert RoleResources.from_json(parsed.to_json(format=form)) == parsed


def test_role_resources_keep_reservations_apart() -> None:
    agent = RoleResources.parse("cpus(ml):2;cpus:1;mem(ml/a):64;mem:128")
    assert agent.allocatable_to("dev") == RoleResources.parse("cpus:1;mem:128")
    assert agent.allocatable_to("ml/a") == agent  # its own and its parent's reservations
    assert agent.allocatable_to("ml").reserved_for("ml/a").is_empty()
    assert agent.contains(RoleResources.parse("cpus(ml):2"))
    assert not agent.contains(RoleResources.parse("cpus:2"))  # unreserved: only 1
    left = agent - RoleResources.parse("cpus(ml):0.5;mem:28")
    assert left == RoleResources.parse("cpus(ml):1.5;cpus:1;mem(ml/a):64;mem:100")
    assert (left + Resources({"cpus": 1})).reserved_for("*").scalar("cpus") == 2
    assert agent.quantities() == Resources({"cpus": 3, "mem": 192})
    assert agent.shrink_unreserved({"cpus": 0.25}) == RoleResources.parse(
        "cpus(ml):2;cpus:0.25;mem(ml/a):64;mem:128")
    assert RoleResources.parse("cpus:1") == Resources({"cpus": 1})
