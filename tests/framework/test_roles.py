"""Mesos roles as the job reads them (apache/mesos src/common/roles.cpp, resources.cpp)."""

from __future__ import annotations

import pytest

from disauto.framework._roles import allocatable_to
from disauto.framework._roles import role_problem
from disauto.framework._roles import usable_by


@pytest.mark.parametrize("role", ["*", "ml", "eng/ml", "a.b", "team-1/gpu_pool"])
def test_valid_roles(role: str) -> None:
    assert role_problem(role) == ""


@pytest.mark.parametrize(("role", "problem"), [
    ("", "empty string"), ("/a", "start with a slash"), ("a/", "end with a slash"),
    ("a//b", "adjacent slashes"), (".", "'.'"), ("a/..", "'..'"), ("*/a", "'*'"),
    ("-a", "dash"), ("a\tb", "whitespace"), ("a\x7fb", "DEL"),
])
def test_invalid_roles_say_why(role: str, problem: str) -> None:
    assert problem in role_problem(role)


def test_a_reservation_is_allocatable_to_its_role_and_the_roles_below_it() -> None:
    assert allocatable_to("*", "ml") and allocatable_to("*", "*")
    assert allocatable_to("eng", "eng") and allocatable_to("eng", "eng/ml")
    assert not allocatable_to("eng/ml", "eng")  # not upwards
    assert not allocatable_to("eng", "engineering")  # a component, not a prefix
    assert not allocatable_to("ml", "*")
    assert usable_by("ml", ("*", "ml")) and not usable_by("ml", ("*",))
