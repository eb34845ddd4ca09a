"""Declared settings checked in one way for every owner: the value parsers, defaults, unknown
names and bad values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from disauto.common.setting_values import Configurable
from disauto.common.setting_values import SettingSpec
from disauto.common.setting_values import int_at_least
from disauto.common.setting_values import int_setting
from disauto.common.setting_values import non_negative_number
from disauto.common.setting_values import parse_settings
from disauto.common.setting_values import positive_numbers


SPECS = {
    "rounds": SettingSpec("3", int_at_least(1), "an integer >= 1"),
    "wait": SettingSpec("0.5", non_negative_number, "a number >= 0"),
}


class Bad(ValueError):
    pass


def test_int_at_least() -> None:
    parse = int_at_least(2)
    assert parse("2") == 2 and parse(" 7 ") == 7 and parse("123456789") == 123456789
    for bad in ("1", "-3", "2.5", "two", ""):
        with pytest.raises(ValueError):
            parse(bad)


def test_int_at_least_with_an_upper_bound() -> None:
    parse = int_at_least(2, at_most=10)
    assert parse("2") == 2 and parse("10") == 10
    for bad in ("1", "11", "1e1"):
        with pytest.raises(ValueError):
            parse(bad)


def test_an_int_setting_says_what_is_valid_and_parses_its_default() -> None:
    open_ended = int_setting(3, 1, "rounds")
    assert (open_ended.default, open_ended.valid, open_ended.help) == ("3", "an integer >= 1",
                                                                       "rounds")
    bounded = int_setting(5, 2, "points", high=10_000)
    assert bounded.valid == "an integer from 2 to 10000"
    assert bounded.parse(bounded.default) == 5 and bounded.parse("10000") == 10_000
    with pytest.raises(ValueError):
        bounded.parse("10001")


def test_non_negative_number() -> None:
    assert non_negative_number("0") == 0.0 and non_negative_number("1.5") == 1.5
    for bad in ("-0.1", "nan", "inf", "x"):
        with pytest.raises(ValueError):
            non_negative_number(bad)


def test_positive_numbers() -> None:
    assert positive_numbers("0.01,0.005") == (0.01, 0.005)
    for bad in ("", "0.01,0", "0.01,-1", "0.01,nan", "a,b"):
        with pytest.raises(ValueError):
            positive_numbers(bad)


def test_defaults_are_filled_in_and_values_parsed() -> None:
    assert parse_settings(SPECS, {}, owner="rule 'x'") == {"rounds": 3, "wait": 0.5}
    assert parse_settings(SPECS, {"rounds": " 7 "}, owner="rule 'x'") == {"rounds": 7,
                                                                           "wait": 0.5}


def test_an_unknown_name_lists_the_valid_ones_and_the_skipped_ones_pass() -> None:
    with pytest.raises(Bad) as caught:
        parse_settings(SPECS, {"speed": "1"}, owner="rule 'x'", error=Bad)
    assert str(caught.value) == ("unknown setting 'speed' for rule 'x'; valid settings: rounds, "
                                 "wait")
    assert parse_settings(SPECS, {"speed": "1"}, owner="rule 'x'",
                          skip=frozenset({"speed"})) == {"rounds": 3, "wait": 0.5}
    with pytest.raises(Bad, match="valid settings: none"):
        parse_settings({}, {"a": "1"}, owner="rule 'y'", error=Bad)


@pytest.mark.parametrize(("name", "text", "valid"), [
    ("rounds", "0", "an integer >= 1"), ("rounds", "two", "an integer >= 1"),
    ("wait", "-1", "a number >= 0"), ("wait", "nan", "a number >= 0"),
])
def test_a_bad_value_names_the_setting_its_owner_and_what_is_valid(name: str, text: str,
                                                                    valid: str) -> None:
    with pytest.raises(Bad) as caught:
        parse_settings(SPECS, {name: text}, owner="rule 'x'", error=Bad)
    assert str(caught.value) == f"setting {name!r} for rule 'x' must be {valid}, got {text!r}"


def test_a_value_that_is_not_text_is_refused() -> None:
    with pytest.raises(Bad, match="got 3"):
        parse_settings(SPECS, {"rounds": 3}, owner="rule 'x'", error=Bad)  # type: ignore[dict-item]


class Rule(Configurable):
    NAME = "patient"
    KIND = "rule"
    SETTINGS = SPECS
    SETTINGS_ERROR = Bad

    @classmethod
    def _check_settings(cls, settings: Mapping[str, Any]) -> None:
        if settings["rounds"] > 5 and settings["wait"] == 0:
            raise Bad("rule 'patient': more than 5 rounds need a wait")


def test_a_configurable_names_itself_in_its_errors_and_checks_across_settings() -> None:
    assert Rule.parse_settings({"wait": "2"}) == {"rounds": 3, "wait": 2.0}
    assert Rule.parse_settings({"wait": "2", "k": "1"}, others=frozenset({"k"})) == {
        "rounds": 3, "wait": 2.0}
    with pytest.raises(Bad, match=r"^unknown setting 'k' for rule 'patient'; valid settings: "):
        Rule.parse_settings({"k": "1"})
    with pytest.raises(Bad, match=r"^setting 'rounds' for rule 'patient' must be an integer >= 1"):
        Rule.parse_settings({"rounds": "0"})
    with pytest.raises(Bad, match="more than 5 rounds need a wait"):
        Rule.parse_settings({"rounds": "6", "wait": "0"})
