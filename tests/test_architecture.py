"""The floors of the code, read from its imports: who may import whom; and the size of its rooms.

Ground floor ``common`` (and the generated ``protos``) is imported by every side and imports
none of them. The user SDK ``apprunner_sdk``, the embedded cluster ``localmesos`` and the warm
slots' executor ``executor`` (it runs on agents: ``common`` and pymesos only) stand on it
alone; AppCore (``appcore``) and the framework (``framework``) stand on it too and not on each
other, nor on the embedded development master, so what runs against real Mesos never depends on
it. ``submit`` puts a job together (only its start of the embedded cluster, ``submit/local.py``,
reaches into ``localmesos``); the namespace package ``disauto`` itself gives the Python API's
names, from ``submit`` alone; its ``disauto.testing`` (the contract suites a plug-in runs, and
a job in one process) stands on the sides it tests; ``bench`` and ``tools`` are on top. Nothing
of the product, ``disauto.testing`` or ``bench`` imports the tree's ``tests``, which are not
installed (:data:`NOT_INSTALLED`). No module imports another
package's private module (a name starting with ``_``). Installed, every package but the SDK is
``disauto.<package>``, and the code imports it by that name only.

Inside ``localmesos`` the rooms keep to themselves (:data:`LOCALMESOS_ROOMS`): ``protocol``
(what every side speaks) imports no other room; ``containerizer`` only ``protocol``; the
``agent`` ``protocol`` and ``containerizer``; the ``master`` ``protocol`` alone, so the master
never imports the agent or the containerizer and they never import the master: they meet only
through ``protocol`` and the callbacks the cluster wires. The HTTP ``server`` routes to the
master, the agents and the ``webui``. The top-level modules (``cluster``, ``cluster_process``,
``cli``, ``reaper``) put the cluster together and may import any room; no room imports them.

The framework's faces: ``submit``, ``disauto.testing`` and ``bench`` import only the public
modules ``framework/__init__.py`` lists in ``__all__`` (at most :data:`MAX_FRAMEWORK_FACES`);
the rest of the framework is private.

Size: no file of the product is over 800 lines, no class over 400 and no function over 60,
package by package (:data:`SIZE_LIMITED`); in ``localmesos`` (:data:`COMPOSED`) a class counts
the lines of its in-project base classes too, so the embedded master and agent stay composed of
parts they hold, not mixins they inherit. Repeats: no run of :data:`REPEAT_LINES` lines (blank,
comment-only and import lines aside, whitespace normalised) stands twice in the product.

Each file is read and parsed once per session (:func:`_parsed`, :func:`_imports` and
:func:`_violations` are cached), whatever number of tests read it; ``make test-fast`` runs
with ``--dist loadscope``, which keeps a module's functions on one xdist worker, so its two
workers do not parse the tree twice.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
import re
import sys

import pytest


ROOT = Path(__file__).resolve().parents[1]
# The job record's meta: the keys are named in framework/_meta.py alone, its table's SQL is the
# store's; every other installed module reads and writes through the typed keys.
META_MODULE = "disauto.framework._meta"
META_TABLE_OWNER = "disauto.framework._store"
STORE_META_CALLS = frozenset({"get_meta", "set_meta", "set_meta_many"})
#: ``JobRecord.write``: its meta values as a mapping of typed keys.
RECORD_META_WRITE = "write"
META_SQL = re.compile(r"\b(FROM|INTO|UPDATE|TABLE)\s+meta\b", re.IGNORECASE)
NAMESPACED = ("common", "protos", "localmesos", "executor", "appcore", "framework", "submit")
PACKAGES = (*NAMESPACED, "apprunner_sdk", "bench", "tools", "disauto")
#: The namespace's own subpackage (``disauto/testing``), a package of its own here.
TESTING = "testing"
#: The tree's tests: no package may import them (they are not installed).
NOT_INSTALLED = "tests"
#: Every package of this project an import may name.
PROJECT = (*PACKAGES, TESTING, NOT_INSTALLED)

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
    # The namespace's own __init__: the Python API's names, from submit (README), loaded on
    # first use by common's lazy-attribute helper.
    "disauto": frozenset({"submit", "common"}),
    # The contract suites and a job in one process, for the tree's tests and a plug-in's.
    TESTING: frozenset({"common", "protos", "apprunner_sdk", "appcore", "framework"}),
    "bench": frozenset({*PACKAGES, TESTING}) - {"tools"},
    "tools": frozenset(),
}
# The modules of a package that may import localmesos (starting the embedded cluster).
LOCALMESOS_IMPORTERS = {"submit": {"disauto.submit.local"}}
# localmesos' rooms (its subpackages) → the rooms each may import; its top-level modules
# (cluster, cluster_process, cli, reaper) may import every room, and no room imports them.
LOCALMESOS_ROOMS: dict[str, frozenset[str]] = {
    "protocol": frozenset(),
    "containerizer": frozenset({"protocol"}),
    "agent": frozenset({"protocol", "containerizer"}),
    "master": frozenset({"protocol"}),
    "webui": frozenset(),
    "server": frozenset({"protocol", "master", "agent", "webui"}),
}


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


@functools.cache
def _parsed(path: Path) -> tuple[str, ast.Module]:
    """The file's text and syntax tree, read once per session."""
    text = path.read_text()
    return text, ast.parse(text, filename=str(path))


@functools.cache
def _imports(name: str, path: Path) -> list[tuple[str, int]]:
    """Every module this file imports (relative imports resolved), with its line."""
    tree = _parsed(path)[1]
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
    """The project package a module name belongs to (``disauto.framework._job`` → framework)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "disauto" and len(parts) > 1 else parts[0]


MODULES = _modules()
KNOWN = {name for name, _ in MODULES}


def _where(path: Path, line: int, target: str) -> str:
    return f"{_shown(path)}:{line} imports {target}"


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


def _room(module: str) -> str | None:
    """The localmesos room a module is in (``disauto.localmesos.master.calls`` → master), ``""``
    for its top-level modules, None outside localmesos and for the bare package."""
    parts = module.split(".")
    if parts[:2] != ["disauto", "localmesos"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in LOCALMESOS_ROOMS else ""


def _check_room(importer: str, target: str, where: str, out: list[str]) -> None:
    """A room imports only itself and the rooms :data:`LOCALMESOS_ROOMS` gives it."""
    home, room = _room(importer), _room(target)
    if not home or room is None or room == home:
        return  # outside localmesos, a top-level module, the bare package, or its own room
    if room == "" or room not in LOCALMESOS_ROOMS[home]:
        out.append(where)


@functools.cache
def _violations() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"floors": [], "private": [], "localmesos": [], "bare": [],
                                   "rooms": [], "tests": []}
    for name, path in MODULES:
        home = _package(name)
        for target, line in _imports(name, path):
            top = _package(target)
            if top not in PROJECT:
                continue
            where = _where(path, line, target)
            if top == NOT_INSTALLED:
                found["tests"].append(where)
                continue
            if top in NAMESPACED and not target.startswith("disauto."):
                found["bare"].append(where)
            _check_private(name, target, where, found["private"])
            if top == home:
                _check_room(name, target, where, found["rooms"])
                continue
            if top not in ALLOWED[home]:
                found["floors"].append(where)
            if top == "localmesos" and home in LOCALMESOS_IMPORTERS \
                    and name not in LOCALMESOS_IMPORTERS[home]:
                found["localmesos"].append(where)
    return found


def _graph(modules: list[tuple[str, Path]]) -> dict[str, set[str]]:
    """Module → the modules of the project it imports (anywhere in it, a function's too).

    ``from package import module`` depends on that module, not on the package's ``__init__``
    (which may itself load its children lazily, as ``disauto.submit`` does for its API)."""
    known = {name for name, _ in modules}
    graph: dict[str, set[str]] = {}
    for name, path in modules:
        found = set()
        imports = _imports(name, path)
        reached = {(target.rpartition(".")[0], line) for target, line in imports
                   if target in known}
        for target, line in imports:
            if (target, line) in reached:
                continue  # only the way to the module imported on this line
            owner = target if target in known else target.rpartition(".")[0]
            if owner in known and owner != name:
                found.add(owner)
        graph[name] = found
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_every_import_runs_down_the_floors() -> None:
    floors = _violations()["floors"]
    assert floors == [], "imports that run up or across the floors:\n" + "\n".join(floors)


def test_no_package_imports_another_packages_private_module() -> None:
    private = _violations()["private"]
    assert private == [], "private modules imported from outside:\n" + "\n".join(private)


def test_only_the_embedded_cluster_start_imports_localmesos() -> None:
    assert _violations()["localmesos"] == [], "\n".join(_violations()["localmesos"])


def test_localmesos_rooms_import_only_the_rooms_below_them() -> None:
    """The master and the agent (with its containerizer) meet only through ``protocol``."""
    rooms = _violations()["rooms"]
    assert rooms == [], "imports across localmesos' rooms:\n" + "\n".join(rooms)


def test_nothing_of_the_product_or_bench_imports_the_tests() -> None:
    """The tests are not installed: what the product, ``disauto.testing`` or a benchmark needs
    of them lives in ``disauto.testing``."""
    scanned = {_package(name) for name, _ in MODULES}
    assert {"bench", TESTING, *NAMESPACED, "apprunner_sdk"} <= scanned
    assert _violations()["tests"] == [], "imports of the tests:\n" + "\n".join(
        _violations()["tests"])


FRAMEWORK = "disauto.framework"
#: The packages that use the framework: each through its public modules alone.
FRAMEWORK_USERS = ("submit", TESTING, "bench")
#: How many public modules the framework may have (its ``__init__``'s ``__all__``).
MAX_FRAMEWORK_FACES = 5


def _framework_faces() -> frozenset[str]:
    """The framework's public modules, as its ``__init__.py`` lists them in ``__all__``."""
    for node in _parsed(ROOT / "framework" / "__init__.py")[1].body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", "") == "__all__"
                                                for target in node.targets):
            return frozenset(f"{FRAMEWORK}.{name}" for name in ast.literal_eval(node.value))
    return frozenset()


def _behind_the_faces(modules: list[tuple[str, Path]], faces: frozenset[str]) -> list[str]:
    """Where a user of the framework imports one of its modules that is not a public one."""
    found = []
    for name, path in modules:
        if _package(name) not in FRAMEWORK_USERS:
            continue
        for target, line in _imports(name, path):
            if target.startswith(FRAMEWORK + ".") \
                    and ".".join(target.split(".")[:3]) not in faces:
                found.append(_where(path, line, target))
    return found


def test_the_framework_is_used_through_its_public_modules_only() -> None:
    """``submit``, ``disauto.testing`` and ``bench`` see the framework through the few modules
    its ``__init__`` lists (the job's record, running it, the control channel, the policies,
    the page), so that its internals can change without them."""
    faces = _framework_faces()
    assert 0 < len(faces) <= MAX_FRAMEWORK_FACES, sorted(faces)
    assert faces <= KNOWN, sorted(faces - KNOWN)
    found = _behind_the_faces(MODULES, faces)
    assert found == [], "imports past the framework's public modules:\n" + "\n".join(found)


def test_the_face_checker_sees_an_import_behind_them(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from disauto.framework import _meta as meta\n"
                     "from disauto.framework._store import JobStore\n"
                     "from disauto.framework.record import JobRecord\n"
                     "from disauto.framework import record\n")
    faces = frozenset({f"{FRAMEWORK}.record"})
    assert _behind_the_faces([("disauto.submit.probe", probe)], faces) == [
        f"{probe}:1 imports disauto.framework._meta",
        f"{probe}:2 imports disauto.framework._store",
        f"{probe}:2 imports disauto.framework._store.JobStore",
    ]
    assert _behind_the_faces([("disauto.appcore.probe", probe)], faces) == []


def test_the_checker_sees_an_import_of_the_tests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from tests.inprocess import AppCore\nimport tests.conftest\n")
    monkeypatch.setattr(sys.modules[__name__], "MODULES", [("bench.probe", probe)])
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    _violations.cache_clear()
    try:
        assert _violations()["tests"] == ["probe.py:1 imports tests.inprocess",
                                          "probe.py:1 imports tests.inprocess.AppCore",
                                          "probe.py:2 imports tests.conftest"]
    finally:
        _violations.cache_clear()


def test_packages_are_imported_by_their_installed_name() -> None:
    """``import framework`` would work only from the repository, and load a second copy."""
    assert _violations()["bare"] == [], "\n".join(_violations()["bare"])


@pytest.mark.parametrize("package", ["framework", "appcore", "apprunner_sdk", "common"])
def test_what_runs_against_real_mesos_never_imports_the_embedded_master(package: str) -> None:
    offenders = [f"{path.relative_to(ROOT)}:{line}" for name, path in MODULES
                 if _package(name) == package
                 for target, line in _imports(name, path) if _package(target) == "localmesos"]
    assert offenders == []


def test_no_modules_import_each_other() -> None:
    """A module that both sides need lives in a third one (bench.deadline_sim, paper_records):
    an import cycle, even through a function's import, means two modules hold one concern."""
    assert _cycles(_graph(MODULES)) == []


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    """The rules above are not vacuous: a made-up module that breaks them is caught."""
    probe = tmp_path / "probe.py"
    probe.write_text("from disauto.localmesos.master.master import Master\n"
                     "from ..appcore.algorithms import _base\n")
    targets = [t for t, _ in _imports("disauto.framework.probe", probe)]
    assert "disauto.localmesos.master.master" in targets
    assert "disauto.appcore.algorithms._base" in targets
    assert "localmesos" not in ALLOWED["framework"]
    out: list[str] = []
    _check_private("disauto.framework.probe", "disauto.appcore.algorithms._base", "probe", out)
    _check_private("disauto.appcore.algorithms.grid", "disauto.appcore.algorithms._base", "in",
                   out)
    assert out == ["probe"]
    (tmp_path / "a.py").write_text("def run() -> None:\n    from bench import b\n")
    (tmp_path / "b.py").write_text("from bench.a import run\n")
    (tmp_path / "c.py").write_text("from bench.a import run\n")
    made_up = [(f"bench.{n}", tmp_path / f"{n}.py") for n in "abc"]
    assert _cycles(_graph(made_up)) == [["bench.a", "bench.b"]]


def test_the_room_checker_sees_a_violation() -> None:
    """The master reaching into the agent, a room reaching up into the cluster, and the
    containerizer into the agent are caught; the cluster using every room and a room using
    protocol are not."""
    out: list[str] = []
    for importer, target in [
        ("disauto.localmesos.master.launch", "disauto.localmesos.agent.health"),
        ("disauto.localmesos.agent.agent", "disauto.localmesos.cluster"),
        ("disauto.localmesos.containerizer.docker", "disauto.localmesos.agent.launch"),
        ("disauto.localmesos.cluster", "disauto.localmesos.agent.agent"),
        ("disauto.localmesos.agent.agent", "disauto.localmesos.protocol.recordio"),
        ("disauto.localmesos.server.routes", "disauto.localmesos.master.master"),
    ]:
        _check_room(importer, target, f"{importer} -> {target}", out)
    assert out == [
        "disauto.localmesos.master.launch -> disauto.localmesos.agent.health",
        "disauto.localmesos.agent.agent -> disauto.localmesos.cluster",
        "disauto.localmesos.containerizer.docker -> disauto.localmesos.agent.launch",
    ]
    assert set(LOCALMESOS_ROOMS) == {
        path.parent.name for path in (ROOT / "localmesos").glob("*/__init__.py")}


# -- size -------------------------------------------------------------------------------------

MAX_FILE_LINES = 800
MAX_CLASS_LINES = 400
MAX_FUNCTION_LINES = 60
#: The product's packages (the generated ``protos`` aside), every one held to the size limits:
#: no file over MAX_FILE_LINES, no class over MAX_CLASS_LINES, no function over
#: MAX_FUNCTION_LINES (issue 27; docs/design.md, "The floors").
SIZE_LIMITED = ("localmesos", "common", "executor", "appcore", "apprunner_sdk", "framework",
                "submit", TESTING)
#: Packages whose every function is also held to MAX_FUNCTION_LINES: all of them.
FUNCTION_LIMITED = SIZE_LIMITED


def _too_large(package: str) -> list[str]:
    """``path: what`` for each file, class (and, in FUNCTION_LIMITED, function) of ``package``
    over its limit."""
    out = []
    for name, path in MODULES:
        if _package(name) != package:
            continue
        where = path.relative_to(ROOT)
        text, tree = _parsed(path)
        if len(text.splitlines()) > MAX_FILE_LINES:
            out.append(f"{where}: {len(text.splitlines())} lines")
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                limit = MAX_CLASS_LINES
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) \
                    and package in FUNCTION_LIMITED:
                limit = MAX_FUNCTION_LINES
            else:
                continue
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            if size > limit:
                out.append(f"{where}:{node.lineno} {node.name}: {size} lines")
    return out


@pytest.mark.parametrize("package", SIZE_LIMITED)
def test_no_file_over_800_lines_no_class_over_400_no_function_over_60(package: str) -> None:
    assert _too_large(package) == []


def test_every_product_package_is_held_to_the_limits_or_listed() -> None:
    product = {*NAMESPACED, "apprunner_sdk", TESTING} - {"protos"}
    assert set(SIZE_LIMITED) == product


def test_the_size_checker_sees_a_large_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("class Big:\n" + "    x = 1\n" * MAX_CLASS_LINES + "\n\n"
                     + "def long():\n" + "    y = 1\n" * MAX_FUNCTION_LINES)
    monkeypatch.setattr(sys.modules[__name__], "MODULES", [("disauto.localmesos.probe", probe)])
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert _too_large("localmesos") == [
        f"probe.py:1 Big: {MAX_CLASS_LINES + 1} lines",
        f"probe.py:{MAX_CLASS_LINES + 4} long: {MAX_FUNCTION_LINES + 1} lines",
    ]


# -- composition ------------------------------------------------------------------------------

#: Packages whose classes are held to MAX_CLASS_LINES counted with their in-project base
#: classes: a class that gathers mixins is as large as all of them (docs/design.md, "The
#: floors": the embedded master and agent are façades over parts, not sums of mixins).
COMPOSED = ("localmesos",)


def _classes(name: str, path: Path) -> dict[str, tuple[int, list[tuple[str, str]]]]:
    """Each class of a module: its lines and its bases that name a class of this project, as
    ``(module, class name)`` (a base of the module itself, or imported from one of ours)."""
    tree = _parsed(path)[1]
    imported = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in KNOWN and not node.level:
            imported.update({alias.asname or alias.name: (node.module, alias.name)
                             for alias in node.names})
    local = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    out = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [(name, base.id) if base.id in local else imported[base.id]
                 for base in node.bases
                 if isinstance(base, ast.Name) and (base.id in local or base.id in imported)]
        out[node.name] = ((node.end_lineno or node.lineno) - node.lineno + 1, bases)
    return out


def _mixed_too_large(modules: list[tuple[str, Path]], package: str) -> list[str]:
    """``path:line class: N lines with its bases`` for each class of ``package`` whose lines
    and its in-project base classes' (recursively, each once) are over MAX_CLASS_LINES."""
    table = {(name, cls): info for name, path in modules
             for cls, info in _classes(name, path).items()}
    out = []
    for name, path in modules:
        if _package(name) != package:
            continue
        for cls, (lines, bases) in _classes(name, path).items():
            seen: set[tuple[str, str]] = set()
            todo = list(bases)
            while todo:
                base = todo.pop()
                if base in seen or base not in table:
                    continue
                seen.add(base)
                lines += table[base][0]
                todo += table[base][1]
            if seen and lines > MAX_CLASS_LINES:
                out.append(f"{path.relative_to(ROOT)} {cls}: {lines} lines with its bases")
    return out


@pytest.mark.parametrize("package", COMPOSED)
def test_no_class_over_400_lines_counted_with_its_mixins(package: str) -> None:
    """A class made of in-project base classes counts their lines as its own: the embedded
    master and agent are façades over parts they hold, not a sum of mixins."""
    assert _mixed_too_large(MODULES, package) == []


def test_the_composition_checker_sees_a_class_made_of_mixins(tmp_path: Path) -> None:
    body = "    def f(self) -> None:\n        pass\n" * (MAX_CLASS_LINES // 4)
    (tmp_path / "a.py").write_text(f"class A:\n{body}\n\nclass Error(ValueError):\n    pass\n")
    (tmp_path / "b.py").write_text(
        "from disauto.localmesos.a import A\nfrom disauto.localmesos.a import Error\n\n\n"
        f"class B:\n{body}\n\nclass Big(A, B):\n    pass\n\n\n"
        "class Small(B):\n    pass\n\n\nclass Failure(Error):\n    pass\n")
    modules = [(f"disauto.localmesos.{n}", tmp_path / f"{n}.py") for n in "ab"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys.modules[__name__], "KNOWN", {n for n, _ in modules})
        patch.setattr(sys.modules[__name__], "ROOT", tmp_path)
        found = _mixed_too_large(modules, "localmesos")
    assert found == [f"b.py Big: {2 + 2 * (MAX_CLASS_LINES // 2 + 1)} lines with its bases"]


#: The composed rooms: each declares its parts' table and their protocols in ``parts.py``.
COMPOSED_ROOMS = ("master", "agent")


def _offered(parts: Path) -> dict[str, set[str]]:
    """Part name → the methods its protocol names, read from a room's ``parts.py``: the
    fields of its ``*Parts`` table, each typed with a protocol of that module."""
    tree = _parsed(parts)[1]
    protocols = {node.name: {item.name for item in node.body
                             if isinstance(item, ast.FunctionDef)}
                 for node in tree.body if isinstance(node, ast.ClassDef)
                 and any(getattr(base, "id", None) == "Protocol" for base in node.bases)}
    table = next(node for node in tree.body
                 if isinstance(node, ast.ClassDef) and node.name.endswith("Parts"))
    return {item.target.id: protocols.get(ast.unparse(item.annotation), {"*"})
            for item in table.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)}


def _calls_past_the_protocols(room: Path) -> list[str]:
    """``file:line parts.X.Y`` for each ``self.parts.X.Y`` of a room where X is no part of
    its table or Y no method of X's protocol."""
    offered = _offered(room / "parts.py")
    out = []
    for path in sorted(room.glob("*.py")):
        for node in ast.walk(_parsed(path)[1]):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                    and isinstance(node.value.value, ast.Attribute) \
                    and node.value.value.attr == "parts" \
                    and getattr(node.value.value.value, "id", None) == "self":
                part, method = node.value.attr, node.attr
                names = offered.get(part, set())
                if method not in names and "*" not in names:
                    out.append(f"{path.name}:{node.lineno} parts.{part}.{method}")
    return out


@pytest.mark.parametrize("room", COMPOSED_ROOMS)
def test_the_parts_call_each_other_only_through_their_protocols(room: str) -> None:
    """A part of the embedded master or agent reaches another only by a method the protocol
    of ``parts.py`` names: the named interface is the whole of what one part knows of another."""
    assert _calls_past_the_protocols(ROOT / "localmesos" / room) == []


def test_the_protocol_checker_sees_a_call_past_the_protocol(tmp_path: Path) -> None:
    (tmp_path / "parts.py").write_text(
        "from typing import Protocol\n\n\nclass Killing(Protocol):\n"
        "    def kill(self) -> None: ...\n\n\nclass RoomParts:\n    killing: Killing\n")
    (tmp_path / "part.py").write_text(
        "class Part:\n    def run(self) -> None:\n        self.parts.killing.kill()\n"
        "        self.parts.killing.escalate()\n        self.parts.other.go()\n")
    assert _calls_past_the_protocols(tmp_path) == ["part.py:4 parts.killing.escalate",
                                                  "part.py:5 parts.other.go"]


def _spelled(node: ast.expr | None) -> bool:
    """Whether an expression spells text itself: a string, an f-string, or text joined on."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _spelled(node.left) or _spelled(node.right)
    return False


def _names_meta(node: ast.expr) -> bool:
    """``meta``, ``recorded``, ``x.meta``: what holds a record's meta by the code's names."""
    if isinstance(node, ast.Attribute):
        return node.attr == "meta"
    return isinstance(node, ast.Name) and node.id in ("meta", "recorded")


def _reads_meta_by_name(node: ast.AST) -> bool:
    """``x.meta["outcome"]`` or ``x.meta.get("outcome")``: a record's meta read by name."""
    if isinstance(node, ast.Subscript) and _names_meta(node.value):
        return _spelled(node.slice)
    if isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn)
                                             for op in node.ops):
        return _spelled(node.left) and any(_names_meta(c) for c in node.comparators)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "get" and isinstance(node.func.value, ast.Attribute):
        return node.func.value.attr == "meta" and bool(node.args) and _spelled(node.args[0])
    return False


def _meta_by_name(name: str, path: Path) -> list[str]:
    """Where a module names a meta key itself instead of through framework/_meta.py: text given
    to the store's meta calls, a key made elsewhere, SQL on the meta table outside the store."""
    found = []
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    for node in ast.walk(_parsed(path)[1]):
        where = f"{shown}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in STORE_META_CALLS and node.args:
            first = node.args[0]
            keys = first.keys if isinstance(first, ast.Dict) else [first]
            if any(_spelled(key) for key in keys):
                found.append(f"{where} passes a meta key as text to {node.func.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == RECORD_META_WRITE and node.args \
                and isinstance(node.args[0], ast.Dict) \
                and any(_spelled(key) for key in node.args[0].keys):
            found.append(f"{where} passes a meta key as text to {node.func.attr}")
        elif _reads_meta_by_name(node):
            found.append(f"{where} reads a meta value by its name")
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
    of framework/_meta.py are the one place a key's name, type and format live."""
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
                     'record.meta["outcome"]\n'
                     "job.meta.get('pid')\n"
                     'store.set_meta(meta.OUTCOME, "STOPPED")\n'
                     'job.meta[meta.PID]\n'
                     'meta["config"] if "config" in meta else None\n'
                     'record.write({"state": "ENDED"})\n'
                     'out.write("text")\n')
    found = _meta_by_name("disauto.framework.probe", probe)
    assert sorted(int(line.split(" ", 1)[0].rsplit(":", 1)[1]) for line in found) == [
        1, 2, 3, 4, 5, 6, 7, 10, 10, 11]


TICKET = re.compile(r"\bissues? \d+\b", re.IGNORECASE)


def test_product_code_says_what_and_why_not_which_ticket() -> None:
    """A comment or docstring that cites "issue 29" tells a reader nothing the code does not;
    the issue's number belongs in the commit and the issue, its reason in the code."""
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for name, path in MODULES if _package(name) in SIZE_LIMITED
             for number, line in enumerate(_parsed(path)[0].splitlines(), start=1)
             if TICKET.search(line)]
    assert found == []


# -- repeats ----------------------------------------------------------------------------------

#: How many lines (blank, comment-only and import lines aside) the product may not repeat.
REPEAT_LINES = 12


def _kept_lines(path: Path) -> list[tuple[str, int]]:
    """``(line with its whitespace normalised, line number)`` of each line a repeat counts:
    not blank, not a comment alone, not part of an import statement."""
    text, tree = _parsed(path)
    imports = {number for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
               for number in range(node.lineno, (node.end_lineno or node.lineno) + 1)}
    kept = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = " ".join(line.split())
        if words and not words.startswith("#") and number not in imports:
            kept.append((words, number))
    return kept


def _repeats(modules: list[tuple[str, Path]], size: int = REPEAT_LINES) -> list[str]:
    """``a.py:10-24 ~ b.py:40-54`` for each run of ``size`` or more kept lines that stands,
    to the letter, in two places of ``modules``; a longer run is one row, not one a line."""
    kept = {path: _kept_lines(path) for _, path in modules}
    seen: dict[tuple[str, ...], tuple[Path, int]] = {}
    # (first file, second file, distance) → its runs, each [first window, last window] in the
    # first file: the windows one step apart at the same distance make one run.
    runs: dict[tuple[Path, Path, int], list[list[int]]] = {}
    for _, path in modules:
        lines = kept[path]
        for start in range(len(lines) - size + 1):
            window = tuple(words for words, _ in lines[start:start + size])
            if window not in seen:
                seen[window] = (path, start)
                continue
            first, at = seen[window]
            pair = runs.setdefault((first, path, start - at), [])
            if pair and at == pair[-1][1] + 1:
                pair[-1][1] = at
            else:
                pair.append([at, at])
    found = []
    for (first, second, distance), pair in runs.items():
        for begin, last in pair:
            a = kept[first][begin][1], kept[first][last + size - 1][1]
            b = kept[second][begin + distance][1], kept[second][last + distance + size - 1][1]
            found.append(f"{_shown(first)}:{a[0]}-{a[1]} ~ {_shown(second)}:{b[0]}-{b[1]}")
    return sorted(found)


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def test_no_twelve_lines_of_the_product_repeat() -> None:
    """Logic written twice drifts apart; where it is the same it is one function both call."""
    product = [(name, path) for name, path in MODULES if _package(name) in SIZE_LIMITED]
    assert _repeats(product) == [], "repeated runs of lines:\n" + "\n".join(_repeats(product))


def test_the_repeat_checker_sees_a_repeat(tmp_path: Path) -> None:
    """A repeat is found across files whatever its indentation or the blank
    lines, comments and imports between; eleven shared lines are not a repeat."""
    body = [f"    value_{n} = compute({n})" for n in range(REPEAT_LINES)]
    (tmp_path / "a.py").write_text("import os\n\ndef one():\n" + "\n".join(body) + "\n")
    (tmp_path / "b.py").write_text(
        "def two():\n    if True:\n" + "\n".join(
            ("    " + line + "\n\n        # a note\n" if n == 3 else "    " + line)
            for n, line in enumerate(body)) + "\n        return 1\n")
    (tmp_path / "c.py").write_text("def three():\n" + "\n".join(body[1:]) + "\n")
    found = _repeats([(name, tmp_path / f"{name}.py") for name in "abc"])
    assert found == [f"{tmp_path / 'a.py'}:4-15 ~ {tmp_path / 'b.py'}:3-17"]
