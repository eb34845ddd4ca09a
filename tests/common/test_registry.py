"""The registry of named implementations: lazy imports, aliases, one-line errors."""

from __future__ import annotations

import re
import sys
import types

import pytest

from disauto.common.registry import Registry
from disauto.common.registry import lazy_attributes


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


def test_a_near_miss_names_the_name_meant_in_the_same_line() -> None:
    registry: Registry[object] = Registry("codec", "codecs", {"wave": Local, "aiff": Local},
                                          error=Unknown)
    with pytest.raises(Unknown) as caught:
        registry["wav"]
    assert str(caught.value) == "unknown codec 'wav' (did you mean 'wave'?); valid codecs: " \
        "wave, aiff"


def test_a_plug_in_registers_by_where_it_lives_and_cannot_take_a_name() -> None:
    registry: Registry[object] = Registry("codec", "codecs", {"a": Local}, aliases={"": "a"})
    registry.register("wave", "wave:Wave_read")
    assert list(registry) == ["a", "wave"] and registry["wave"].__name__ == "Wave_read"
    for name, entry, says in (("a", "x:Y", "codec 'a' is registered already; taken: a, wave, "),
                              ("", "x:Y", "codec '' is registered already"),
                              ("b", "wave", "codec 'b': 'wave' is not 'module:Class'"),
                              ("b", "wave:", "codec 'b': 'wave:' is not")):
        with pytest.raises(ValueError, match="^" + re.escape(says)):
            registry.register(name, entry)


def test_lazy_attributes_load_on_first_read_and_list_the_public_names(
        monkeypatch: pytest.MonkeyPatch) -> None:
    package = types.ModuleType("made_up_package")
    package.__all__ = ["Reader", "wave"]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "made_up_package", package)
    getattr_, dir_ = lazy_attributes("made_up_package", {
        "Reader": "wave:Wave_read", "wave": "wave"})
    assert getattr_("Reader").__name__ == "Wave_read" and getattr_("wave") is sys.modules["wave"]
    assert dir_() == ["Reader", "__all__", "__doc__", "__loader__", "__name__", "__package__",
                      "__spec__", "wave"]
    with pytest.raises(AttributeError, match="module 'made_up_package' has no attribute 'x'"):
        getattr_("x")


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
