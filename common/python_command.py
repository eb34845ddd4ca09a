"""A launch command that is one Python program: what a pre-imported interpreter can run.

``da-submit --slot-preload`` runs each trial by forking a warm slot's interpreter that has
already imported the declared modules, instead of starting ``/bin/sh -c '<launch command>'``.
That is only the same program when the launch command is a plain Python invocation::

    python train.py --epochs 3        python3 -u train.py        python -m mypkg.train --x 1

:func:`parse_python_command` accepts exactly those forms (``-u``, ``-B`` and ``-O`` are allowed
before the program; ``-u`` is always in effect in a slot) and says why anything else cannot be
pre-imported: shell syntax (pipes, ``&&``, redirections, variables), another program, or an
interpreter option that changes how Python starts.
"""

from __future__ import annotations

from dataclasses import dataclass
import re
import shlex


PYTHON_NAME = re.compile(r"(?:.*/)?python(?:3(?:\.\d+)?)?")
"""``python``, ``python3``, ``python3.11``, or a path to one."""
ALLOWED_OPTIONS = frozenset({"-u", "-B", "-O"})
SHELL_CHARACTERS = frozenset("|&;<>()$`*?[]{}~\n")
MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
EXAMPLE = "'python train.py ARGS' or 'python -m PACKAGE.MODULE ARGS'"


class NotAPythonCommandError(ValueError):
    """The launch command is not one plain Python invocation."""


@dataclass(frozen=True)
class PythonCommand:
    """A launch command of the form ``python [-u|-B|-O] (SCRIPT | -m MODULE) ARGS...``."""

    python: str
    """The interpreter as written (looked up on the task's ``PATH``)."""
    target: str
    """The script's path (relative to the sandbox) or the module's dotted name."""
    is_module: bool
    args: tuple[str, ...] = ()
    options: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"python": self.python, "target": self.target, "is_module": self.is_module,
                "args": list(self.args), "options": list(self.options)}

    @classmethod
    def from_json(cls, body: object) -> PythonCommand:
        if not isinstance(body, dict):
            raise NotAPythonCommandError("the program is not an object")
        try:
            return cls(python=str(body["python"]), target=str(body["target"]),
                       is_module=bool(body["is_module"]),
                       args=tuple(str(a) for a in body.get("args", ())),
                       options=tuple(str(o) for o in body.get("options", ())))
        except (KeyError, TypeError) as err:
            raise NotAPythonCommandError(f"the program lacks {err}") from None


def parse_python_command(command: str) -> PythonCommand:
    """The Python program ``command`` runs, or :class:`NotAPythonCommandError` saying why it is
    not one (the message names the forms that are)."""
    shown = command.strip()
    if not shown:
        raise NotAPythonCommandError(f"the launch command is empty; expected {EXAMPLE}")
    used = sorted(SHELL_CHARACTERS.intersection(shown) - {"\n"}) or (
        ["a new line"] if "\n" in shown else [])
    if used:
        raise NotAPythonCommandError(
            f"{shown!r} uses shell syntax ({' '.join(used)}), which a pre-imported interpreter "
            f"cannot run; expected {EXAMPLE}")
    try:
        words = shlex.split(shown)
    except ValueError as err:
        raise NotAPythonCommandError(f"{shown!r} cannot be split into words ({err})") from None
    python, rest = words[0], words[1:]
    if "=" in python or not PYTHON_NAME.fullmatch(python):
        raise NotAPythonCommandError(
            f"{shown!r} does not start with a Python interpreter (python, python3, a path to "
            f"one); expected {EXAMPLE}")
    options: list[str] = []
    while rest and rest[0].startswith("-") and rest[0] != "-m":
        if rest[0] not in ALLOWED_OPTIONS:
            raise NotAPythonCommandError(
                f"{shown!r}: the interpreter option {rest[0]} cannot be pre-imported (allowed: "
                f"{', '.join(sorted(ALLOWED_OPTIONS))})")
        options.append(rest.pop(0))
    if not rest:
        raise NotAPythonCommandError(f"{shown!r} names no script or module; expected {EXAMPLE}")
    if rest[0] == "-m":
        if len(rest) < 2 or not MODULE_NAME.fullmatch(rest[1]):
            raise NotAPythonCommandError(
                f"{shown!r}: -m needs a dotted module name; expected {EXAMPLE}")
        return PythonCommand(python, rest[1], True, tuple(rest[2:]), tuple(options))
    return PythonCommand(python, rest[0], False, tuple(rest[1:]), tuple(options))
