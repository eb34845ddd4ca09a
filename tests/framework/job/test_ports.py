"""The controller's ports: each caller asks only what its port lists, and the controller, made
for real, answers every port with the same signatures."""

from __future__ import annotations

import ast
import importlib.util
import inspect
from pathlib import Path

import pytest

from disauto.framework._job import JobController
from disauto.framework._job import ports
from disauto.framework.record import JobStore
from disauto.testing.inprocess import job_config


#: Each caller of the controller (its module) → the port it is typed against.
CALLERS = {
    "disauto.framework._service": ports.TrialService,
    "disauto.framework._scheduler": ports.SchedulerPort,
    "disauto.framework._launcher": ports.SchedulerPort,
    "disauto.framework._warm_slots": ports.SchedulerPort,
    "disauto.framework.webui.sources": ports.PageView,
    "disauto.framework._job.desk": ports.JobControl,
}


def members(port: type) -> set[str]:
    """The names a port lists: its methods, properties and attributes."""
    own = {name for name in vars(port) if not name.startswith("_")}
    return own | set(getattr(port, "__annotations__", {}))


def _annotated(node: ast.arg, port: str) -> bool:
    note = node.annotation
    return (isinstance(note, ast.Name) and note.id == port) or (
        isinstance(note, ast.Constant) and note.value == port)


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef, port: str) -> set[str]:
    every = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    return {arg.arg for arg in every if _annotated(arg, port)}


def _is_field(node: ast.expr, fields: set[str]) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
        and node.value.id == "self" and node.attr in fields


def asked(source: str, port: str) -> set[tuple[str, int]]:
    """``(name, line)`` of everything a module asks of what it holds as ``port``: a parameter
    annotated with it, a ``self`` field set from one, a local name set from such a field."""
    tree = ast.parse(source)
    fields: set[str] = set()
    for function in _functions(tree):
        held = _params(function, port)
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) \
                    and node.value.id in held:
                fields |= {target.attr for target in node.targets
                           if isinstance(target, ast.Attribute)
                           and getattr(target.value, "id", "") == "self"}
    found = set()
    for function in _functions(tree):
        held = _params(function, port)
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and _is_field(node.value, fields):
                held |= {target.id for target in node.targets if isinstance(target, ast.Name)}
        for node in ast.walk(function):
            if isinstance(node, ast.Attribute) and (
                    (isinstance(node.value, ast.Name) and node.value.id in held)
                    or _is_field(node.value, fields)):
                found.add((node.attr, node.lineno))
    return found


@pytest.mark.parametrize(("caller", "port"), CALLERS.items(),
                         ids=[caller.rpartition(".")[2] for caller in CALLERS])
def test_each_caller_asks_only_what_its_port_lists(caller: str, port: type) -> None:
    spec = importlib.util.find_spec(caller)
    assert spec is not None and spec.origin is not None, caller
    source = Path(spec.origin).read_text()
    used = asked(source, port.__name__)
    assert used, f"{caller} holds no {port.__name__}: the check would be vacuous"
    beyond = sorted((name, line) for name, line in used if name not in members(port))
    assert beyond == [], f"{caller} asks of its {port.__name__} what it does not list: {beyond}"
    assert "JobController" not in source, f"{caller} names the controller, not its port"


def test_the_ports_check_sees_a_question_beyond_the_port() -> None:
    source = ("class Caller:\n"
              "    def __init__(self, controller: PageView) -> None:\n"
              "        self._job = controller\n"
              "        controller.version()\n"
              "    def read(self) -> None:\n"
              "        job = self._job\n"
              "        job.finish(1, 'x')\n"
              "        self._job.store.meta()\n"
              "def other(controller: SchedulerPort) -> None:\n"
              "    controller.trials()\n")
    assert asked(source, "PageView") == {("version", 4), ("finish", 7), ("store", 8)}
    assert "finish" not in members(ports.PageView)


def test_the_controller_answers_every_port(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "job.db")
    controller = JobController(job_config(max_trials=2, parallelism=1), store, "token")
    try:
        for port in ports.PORTS:
            for name in members(port):
                assert hasattr(controller, name), f"the controller lacks {port.__name__}.{name}"
                listed = inspect.getattr_static(port, name, None)
                if isinstance(listed, property):
                    assert isinstance(inspect.getattr_static(JobController, name), property)
                elif callable(listed):
                    assert inspect.signature(listed) == inspect.signature(
                        getattr(JobController, name)), f"{port.__name__}.{name}"
    finally:
        store.close()


def test_every_port_is_narrower_than_the_controller() -> None:
    public = {name for name in dir(JobController) if not name.startswith("_")}
    for port in ports.PORTS:
        assert members(port) < public | {"config", "store", "job_token", "tasks"}
        assert len(members(port)) < len(public) // 2, port.__name__
