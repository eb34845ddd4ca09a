"""The shared setting-value parsers."""

from __future__ import annotations

import pytest

from disauto.common.setting_values import int_at_least
from disauto.common.setting_values import non_negative_number
from disauto.common.setting_values import positive_numbers


def test_int_at_least() -> None:
    parse = int_at_least(2)
    assert parse("2") == 2 and parse(" 7 ") == 7
    for bad in ("1", "-3", "2.5", "two", ""):
        with pytest.raises(ValueError):
            parse(bad)


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
