"""The README's and docs/design.md's lists of named implementations keep up with the registries:
a name registered but missing from a list fails here, with the list and the name."""

from __future__ import annotations

from pathlib import Path
import re

import pytest

from disauto.appcore.algorithms import ALGORITHMS
from disauto.appcore.algorithms.bayesian import BACKENDS
from disauto.appcore.pruners import PRUNERS
from disauto.common.registry import Registry
from disauto.framework.policies import POLICIES


ROOT = Path(__file__).resolve().parents[1]
REGISTRIES: dict[str, Registry[object]] = {
    "ALGORITHMS": ALGORITHMS, "BACKENDS": BACKENDS, "PRUNERS": PRUNERS, "POLICIES": POLICIES}
"""Each registry by the name the docs give it."""
README_ROWS = {"ALGORITHMS": "--tuning-type", "BACKENDS": "--bayes-backend",
               "PRUNERS": "--early-stopping", "POLICIES": "--offer-policy"}
"""The README's option table: the flag whose row lists each registry's names."""


def missing(names: list[str], text: str) -> list[str]:
    """The names not quoted as code (``name``) in ``text``."""
    return [name for name in names if f"`{name}`" not in text]


def readme_row(flag: str, readme: str) -> str:
    """The description cell of the README table row of ``flag`` (``--flag`` or ``--flag X``)."""
    rows = re.findall(rf"^\| `{re.escape(flag)}(?: [A-Z]+)?` \|(.*)$", readme, re.MULTILINE)
    assert len(rows) == 1, f"README.md: {len(rows)} table rows for {flag}"
    return rows[0]


def design_list(registry: str, design: str) -> str:
    """docs/design.md's list of a registry's names: ``(`REGISTRY`: `a`, `b`)``."""
    found = re.search(rf"`{registry}`: ([^)]*)\)", design)
    assert found, f"docs/design.md names no list of {registry}"
    return found.group(1)


@pytest.mark.parametrize("registry", list(REGISTRIES))
def test_the_readme_lists_every_registered_name(registry: str) -> None:
    row = readme_row(README_ROWS[registry], (ROOT / "README.md").read_text())
    absent = missing(list(REGISTRIES[registry]), row)
    assert absent == [], f"README.md's {README_ROWS[registry]} row lacks {absent}"


@pytest.mark.parametrize("registry", list(REGISTRIES))
def test_the_design_lists_every_registered_name(registry: str) -> None:
    listed = design_list(registry, (ROOT / "docs" / "design.md").read_text())
    absent = missing(list(REGISTRIES[registry]), listed)
    assert absent == [], f"docs/design.md's list of {registry} lacks {absent}"


def test_a_name_missing_from_a_list_is_caught() -> None:
    readme = "| `--offer-policy` | `fifo` (default) or `dynamic` |\n| `--x` | `drf` |\n"
    assert missing(["fifo", "dynamic", "drf"], readme_row("--offer-policy", readme)) == ["drf"]
    assert readme_row("--bayes-backend", "| `--bayes-backend NAME` | `tpe` |") == " `tpe` |"
    design = "policies (`POLICIES`: `fifo`, `dynamic`) and more"
    assert missing(["fifo", "deadline"], design_list("POLICIES", design)) == ["deadline"]
