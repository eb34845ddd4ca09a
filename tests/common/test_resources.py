"""Mesos resource parsing and arithmetic."""

from __future__ import annotations

import pytest

from disauto.common.resources import ResourceError
from disauto.common.resources import Resources
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
