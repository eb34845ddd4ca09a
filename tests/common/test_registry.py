"""The registry of named implementations: lazy imports, aliases, one-line errors."""

from __future__ import annotations

import sys

import pytest

from disauto.common.registry import Registry


class Local:
    pass


class Unknown(LookupError):
    pass


def test_entries_import_on_first_lookup_and_stay() -> None:
    registry: Registry[object] = Registry("codec", "codecs", {
        "local": Local, "wave": "wave:Wave_read"}, error=Unknown)
    was_imported = "wave" in sys.modules
    assert registry.location("wave") == "wave"
    assert ("wave" in sys.modules) == was_imported  # naming the module imports nothing
    reader = registry["wave"]
    assert reader.__name__ == "Wave_read" and registry["wave"] is reader
    assert "wave" in sys.modules
    assert registry["local"] is Local and registry.location("local") == __name__


def test_it_reads_as_a_mapping_of_its_names() -> None:
    registry: Registry[object] = Registry("codec", "codecs", {"a": Local, "b": Local},
                                          aliases={"": "a"})
    assert list(registry) == ["a", "b"] and len(registry) == 2
    assert "a" in registry and "" in registry and "c" not in registry
    assert registry[""] is Local
    assert sorted(registry) == ["a", "b"]


@pytest.mark.parametrize("name", ["c", 3, None])
def test_an_unknown_name_lists_the_valid_ones(name: object) -> None:
    registry: Registry[object] = Registry("codec", "codecs", {"a": Local, "b": Local},
                                          error=Unknown)
    with pytest.raises(Unknown) as caught:
        registry[name]  # type: ignore[index]
    assert str(caught.value) == f"unknown codec {name!r}; valid codecs: a, b"


def test_every_registry_of_the_project_resolves_each_name() -> None:
    from disauto.appcore.algorithms import ALGORITHMS
    from disauto.appcore.algorithms.bayesian import BACKENDS
    from disauto.appcore.pruners import PRUNERS
    from disauto.framework.policies import POLICIES

    for registry in (ALGORITHMS, BACKENDS, PRUNERS, POLICIES):
        for name in registry:
            if registry is BACKENDS and name == "gp":
                continue  # scikit-optimize is an extra; tests/appcore checks it separately
            assert isinstance(registry[name], type)
