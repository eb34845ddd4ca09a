"""The floors of the code, read from its imports: who may import whom.

Ground floor ``common`` (and the generated ``protos``) is imported by every side and imports
none of them. The user SDK ``apprunner_sdk`` and the embedded cluster ``localmesos`` stand on it
alone; AppCore (``appcore``) and the framework (``framework``) stand on it too and not on each
other, nor on the embedded development master, so what runs against real Mesos never depends on
it. ``submit`` puts a job together (only its start of the embedded cluster, ``submit/local.py``,
reaches into ``localmesos``); ``bench`` and ``tools`` are on top. No module imports another
package's private module (a name starting with ``_``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("common", "protos", "apprunner_sdk", "localmesos", "appcore", "framework", "submit",
            "bench", "tools")

# package → the packages of this project it may import.
ALLOWED: dict[str, frozenset[str]] = {
    "protos": frozenset(),
    "common": frozenset({"protos"}),
    "apprunner_sdk": frozenset({"common", "protos"}),
    "localmesos": frozenset({"common", "protos"}),
    "appcore": frozenset({"common", "protos"}),
    "framework": frozenset({"common", "protos"}),
    "submit": frozenset({"common", "protos", "appcore", "framework", "localmesos"}),
    "bench": frozenset(PACKAGES) - {"tools"},
    "tools": frozenset(),
}
# Single modules allowed more than their package (module path → extra packages).
EXTRA: dict[str, frozenset[str]] = {}
# The modules of a package that may import localmesos (starting the embedded cluster).
LOCALMESOS_IMPORTERS = {"submit": {"submit.local"}}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out.append((name, path))
    return out


def _imports(name: str, path: Path) -> list[tuple[str, int]]:
    """Every module this file imports (relative imports resolved), with its line."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((base, node.lineno))
            found += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return found


MODULES = _modules()
KNOWN = {name for name, _ in MODULES}


def _violations() -> tuple[list[str], list[str], list[str]]:
    floors, private, localmesos = [], [], []
    for name, path in MODULES:
        home = name.split(".")[0]
        for target, line in _imports(name, path):
            top = target.split(".")[0]
            where = f"{path.relative_to(ROOT)}:{line} imports {target}"
            if top not in PACKAGES or top == home:
                if top == home:
                    _check_private(name, target, where, private)
                continue
            if top not in ALLOWED[home] | EXTRA.get(name, frozenset()):
                floors.append(where)
            if top == "localmesos" and home in LOCALMESOS_IMPORTERS \
                    and name not in LOCALMESOS_IMPORTERS[home]:
                localmesos.append(where)
            _check_private(name, target, where, private)
    return floors, private, localmesos


def _check_private(importer: str, target: str, where: str, out: list[str]) -> None:
    """A private module (``pkg._mod``) is imported only from inside ``pkg``."""
    parts = target.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            owner = ".".join(parts[:index])
            module = ".".join(parts[:index + 1])
            if module in KNOWN and not (importer == owner or importer.startswith(owner + ".")):
                out.append(where)
            return


def test_every_import_runs_down_the_floors() -> None:
    floors, _, _ = _violations()
    assert floors == [], "imports that run up or across the floors:\n" + "\n".join(floors)


def test_no_package_imports_another_packages_private_module() -> None:
    _, private, _ = _violations()
    assert private == [], "private modules imported from outside:\n" + "\n".join(private)


def test_only_the_embedded_cluster_start_imports_localmesos() -> None:
    _, _, localmesos = _violations()
    assert localmesos == [], "\n".join(localmesos)


@pytest.mark.parametrize("package", ["framework", "appcore", "apprunner_sdk", "common"])
def test_what_runs_against_real_mesos_never_imports_the_embedded_master(package: str) -> None:
    offenders = [f"{path.relative_to(ROOT)}:{line}" for name, path in MODULES
                 if name.split(".")[0] == package
                 for target, line in _imports(name, path) if target.split(".")[0] == "localmesos"]
    assert offenders == []


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    """The rules above are not vacuous: a made-up module that breaks them is caught."""
    probe = tmp_path / "probe.py"
    probe.write_text("from localmesos.master import Master\n"
                     "from ..appcore.algorithms import _base\n")
    targets = [t for t, _ in _imports("framework.probe", probe)]
    assert "localmesos.master" in targets and "appcore.algorithms._base" in targets
    assert "localmesos" not in ALLOWED["framework"]
    out: list[str] = []
    _check_private("framework.probe", "appcore.algorithms._base", "probe", out)
    _check_private("appcore.algorithms.grid", "appcore.algorithms._base", "inside", out)
    assert out == ["probe"]
