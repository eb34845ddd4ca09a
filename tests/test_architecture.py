"""The floors of the code, read from its imports: who may import whom.

Ground floor ``common`` (and the generated ``protos``) is imported by every side and imports
none of them. The user SDK ``apprunner_sdk``, the embedded cluster ``localmesos`` and the warm
slots' executor ``executor`` (it runs on agents: ``common`` and pymesos only) stand on it
alone; AppCore (``appcore``) and the framework (``framework``) stand on it too and not on each
other, nor on the embedded development master, so what runs against real Mesos never depends on
it. ``submit`` puts a job together (only its start of the embedded cluster, ``submit/local.py``,
reaches into ``localmesos``); ``bench`` and ``tools`` are on top. No module imports another
package's private module (a name starting with ``_``). Installed, every package but the SDK is
``disauto.<package>``, and the code imports it by that name only.
"""

from __future__ import annotations

import ast
from pathlib import Path
import re

import pytest


ROOT = Path(__file__).resolve().parents[1]
# The job record's meta: the keys are named in framework/meta.py alone, its table's SQL is the
# store's; every other installed module reads and writes through the typed keys.
META_MODULE = "disauto.framework.meta"
META_TABLE_OWNER = "disauto.framework.store"
STORE_META_CALLS = frozenset({"get_meta", "set_meta", "set_meta_many"})
META_SQL = re.compile(r"\b(FROM|INTO|UPDATE|TABLE)\s+meta\b", re.IGNORECASE)
NAMESPACED = ("common", "protos", "localmesos", "executor", "appcore", "framework", "submit")
PACKAGES = (*NAMESPACED, "apprunner_sdk", "bench", "tools")

# package → the packages of this project it may import.
ALLOWED: dict[str, frozenset[str]] = {
    "protos": frozenset(),
    "common": frozenset({"protos"}),
    "apprunner_sdk": frozenset({"common", "protos"}),
    "localmesos": frozenset({"common", "protos"}),
    "executor": frozenset({"common"}),
    "appcore": frozenset({"common", "protos"}),
    "framework": frozenset({"common", "protos"}),
    "submit": frozenset({"common", "protos", "appcore", "framework", "localmesos"}),
    "bench": frozenset(PACKAGES) - {"tools"},
    "tools": frozenset(),
}
# The modules of a package that may import localmesos (starting the embedded cluster).
LOCALMESOS_IMPORTERS = {"submit": {"disauto.submit.local"}}


def _modules() -> list[tuple[str, Path]]:
    """``(module name as installed, file)`` of every source module."""
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out.append((f"disauto.{name}" if package in NAMESPACED else name, path))
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
    return sorted(set(found), key=lambda item: (item[1], item[0]))


def _package(module: str) -> str:
    """The project package a module name belongs to (``disauto.framework.job`` → framework)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "disauto" and len(parts) > 1 else parts[0]


MODULES = _modules()
KNOWN = {name for name, _ in MODULES}


def _where(path: Path, line: int, target: str) -> str:
    return f"{path.relative_to(ROOT)}:{line} imports {target}"


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


def _violations() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"floors": [], "private": [], "localmesos": [], "bare": []}
    for name, path in MODULES:
        home = _package(name)
        for target, line in _imports(name, path):
            top = _package(target)
            if top not in PACKAGES:
                continue
            where = _where(path, line, target)
            if top in NAMESPACED and not target.startswith("disauto."):
                found["bare"].append(where)
            _check_private(name, target, where, found["private"])
            if top == home:
                continue
            if top not in ALLOWED[home]:
                found["floors"].append(where)
            if top == "localmesos" and home in LOCALMESOS_IMPORTERS \
                    and name not in LOCALMESOS_IMPORTERS[home]:
                found["localmesos"].append(where)
    return found


VIOLATIONS = _violations()


def test_every_import_runs_down_the_floors() -> None:
    floors = VIOLATIONS["floors"]
    assert floors == [], "imports that run up or across the floors:\n" + "\n".join(floors)


def test_no_package_imports_another_packages_private_module() -> None:
    private = VIOLATIONS["private"]
    assert private == [], "private modules imported from outside:\n" + "\n".join(private)


def test_only_the_embedded_cluster_start_imports_localmesos() -> None:
    assert VIOLATIONS["localmesos"] == [], "\n".join(VIOLATIONS["localmesos"])


def test_packages_are_imported_by_their_installed_name() -> None:
    """``import framework`` would work only from the repository, and load a second copy."""
    assert VIOLATIONS["bare"] == [], "\n".join(VIOLATIONS["bare"])


@pytest.mark.parametrize("package", ["framework", "appcore", "apprunner_sdk", "common"])
def test_what_runs_against_real_mesos_never_imports_the_embedded_master(package: str) -> None:
    offenders = [f"{path.relative_to(ROOT)}:{line}" for name, path in MODULES
                 if _package(name) == package
                 for target, line in _imports(name, path) if _package(target) == "localmesos"]
    assert offenders == []


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    """The rules above are not vacuous: a made-up module that breaks them is caught."""
    probe = tmp_path / "probe.py"
    probe.write_text("from disauto.localmesos.master import Master\n"
                     "from ..appcore.algorithms import _base\n")
    targets = [t for t, _ in _imports("disauto.framework.probe", probe)]
    assert "disauto.localmesos.master" in targets
    assert "disauto.appcore.algorithms._base" in targets
    assert "localmesos" not in ALLOWED["framework"]
    out: list[str] = []
    _check_private("disauto.framework.probe", "disauto.appcore.algorithms._base", "probe", out)
    _check_private("disauto.appcore.algorithms.grid", "disauto.appcore.algorithms._base", "in",
                   out)
    assert out == ["probe"]


def _spelled(node: ast.expr | None) -> bool:
    """Whether an expression spells text itself: a string, an f-string, or text joined on."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _spelled(node.left) or _spelled(node.right)
    return False


def _meta_by_name(name: str, path: Path) -> list[str]:
    """Where a module names a meta key itself instead of through framework/meta.py: text given
    to the store's meta calls, a key made elsewhere, SQL on the meta table outside the store."""
    found = []
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        where = f"{shown}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in STORE_META_CALLS and node.args:
            first = node.args[0]
            keys = first.keys if isinstance(first, ast.Dict) else [first]
            if any(_spelled(key) for key in keys):
                found.append(f"{where} passes a meta key as text to {node.func.attr}")
        elif isinstance(node, ast.Call) and name != META_MODULE and (
                getattr(node.func, "id", None) or getattr(node.func, "attr", None)) in (
                    "MetaKey", "MetaFamily"):
            found.append(f"{where} declares a meta key outside {META_MODULE}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and name != META_TABLE_OWNER and META_SQL.search(node.value):
            found.append(f"{where} reads or writes the meta table itself")
    return found


def test_job_meta_is_read_and_written_through_its_typed_keys_only() -> None:
    """A key spelled where it is used drifts (a typo reads as "never recorded"); the typed keys
    of framework/meta.py are the one place a key's name, type and format live."""
    offenders = [line for name, path in MODULES if _package(name) in NAMESPACED
                 for line in _meta_by_name(name, path)]
    assert offenders == [], "\n".join(offenders)


def test_the_meta_checker_sees_a_key_spelled_out(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('store.get_meta("outcome")\n'
                     'store.set_meta_many({"state": "ENDED", meta.PID: 1})\n'
                     'store.set_meta("slot_executor:" + name, info)\n'
                     'KEY = MetaKey("x", str, str, "", "")\n'
                     'db.execute("SELECT value FROM meta WHERE key = ?")\n'
                     'store.set_meta(meta.OUTCOME, "STOPPED")\n')
    found = _meta_by_name("disauto.framework.probe", probe)
    assert [line.split(" ", 1)[0].rsplit(":", 1)[1] for line in found] == [
        "1", "2", "3", "4", "5"]
