"""``submit(...)``'s keyword arguments as ``da-submit``'s command line.

Each keyword is a flag's name with underscores (``app_runner_launch_cmd`` is
``--app-runner-launch-cmd``, ``trail_steps`` or ``trial_steps`` the budget); the line is parsed
and checked by ``da-submit``'s own parser and validators, so a wrong keyword or value is the one
line ``da-submit`` would print (a mistyped keyword gets its "did you mean"). Values: a string or
number as typed on the command line; a repeatable flag (``files``, ``input``,
``tuning_setting``...) takes a list, and a setting flag a dict too (``{"k": "v"}`` is ``k=v``);
a comma-separated one (``objective``, ``direction``, ``target``) a list; a switch (``tls``,
``quiet``) True or False; None leaves a flag out; ``tuning_parameters`` a file or the parameter
file's content as a dict. A function is no value of a flag: :func:`submit.api.optimize.optimize`
runs one as the trials' objective.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import json
import os
from pathlib import Path
from typing import Any

from disauto.submit.parser import UsageError


PARAMETERS = "tuning_parameters"
"""The keyword whose value may be the parameter file's content."""
PARAMETER_FILE = "parameters.json"
"""Where a job submitted with its parameters as a dict keeps them, in its folder (the job's
process reads them from there, as da-submit reads a parameter file)."""
NOT_OPTIONS = {"detach": "submit() always runs the job in the background, as --detach does",
               "job_id": "the job's id is made when it is submitted",
               "help": "help(disauto.submit) describes the keywords"}
"""Flags of da-submit that are no keyword of submit(), and why."""


@dataclass(frozen=True)
class CommandLine:
    """``da-submit``'s arguments for the keywords, and the parameter file's content when the
    keywords gave it as a dict (its place in ``argv`` is a path to fill in)."""

    argv: tuple[str, ...]
    parameters: Mapping[str, Any] | None = None
    shipped: Mapping[str, bytes] = field(default_factory=dict)
    """Files made in memory (``optimize()``'s function), by name: shipped with the job as
    ``--files`` from the folder the line is written to (:meth:`written_to`)."""

    def with_parameters_file(self, path: Path) -> tuple[str, ...]:
        """``argv`` with the parameter file at ``path`` (it must hold :attr:`parameters`)."""
        if self.parameters is None:
            return self.argv
        flag = "--tuning-parameters"
        at = self.argv.index(flag) + 1
        return (*self.argv[:at], str(path), *self.argv[at + 1:])

    def written_to(self, folder: Path) -> tuple[str, ...]:
        """``argv`` with its parameter file and its shipped files written in ``folder`` (a
        scratch folder to check them, then the job's own, which the job reads them from)."""
        argv = self.argv
        if self.parameters is not None:
            kept = folder / PARAMETER_FILE
            kept.write_text(json.dumps(self.parameters, indent=2))
            argv = self.with_parameters_file(kept)
        for name, content in self.shipped.items():
            (folder / name).write_bytes(content)
            argv = (*argv, "--files", str(folder / name))
        return argv


def command_line(parser: argparse.ArgumentParser, options: Mapping[str, Any],
                 shipped: Mapping[str, bytes] | None = None) -> CommandLine:
    """The arguments of ``options`` in ``parser``'s flags, with ``shipped`` files to write.

    Raises:
        UsageError: a keyword that is no option of submit(), or a value of the wrong kind.
    """
    actions = _actions(parser)
    argv: list[str] = []
    parameters: Mapping[str, Any] | None = None
    for key, value in options.items():
        if key in NOT_OPTIONS:
            raise UsageError(f"{key}: not an option of submit(): {NOT_OPTIONS[key]}")
        flag = "--" + key.replace("_", "-")
        if value is None:
            continue
        if callable(value) and not isinstance(value, type):
            raise UsageError(f"{key}: a function is no value of a flag; disauto.optimize(fn, "
                             "space, ...) runs a function as the trials' objective")
        if key == PARAMETERS and isinstance(value, Mapping):
            parameters = value
            value = "<parameters>"  # the file it is written to, once there is one
        action = actions.get(flag)
        if action is None:
            argv += [flag, _text(flag, value)]  # unknown: da-submit's parser names it
        elif action.nargs == 0:
            if not isinstance(value, bool):
                raise UsageError(f"{flag}: {key}={value!r}: expected True or False")
            argv += [flag] if value else []
        elif isinstance(action.default, list):  # repeatable
            argv += [item for one in _items(flag, value) for item in (flag, one)]
        else:
            argv += [flag, _text(flag, value)]
    return CommandLine(tuple(argv), parameters, dict(shipped or {}))


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Each ``--flag`` of ``parser`` and its action."""
    return {flag: action for action in parser._actions for flag in action.option_strings}


def _text(flag: str, value: Any) -> str:
    """One flag's value as typed: a number or string; a list is comma-separated."""
    if isinstance(value, bool):
        raise UsageError(f"{flag}: expected a value, not {value}")
    if isinstance(value, str | int | float | os.PathLike):
        return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    if isinstance(value, Sequence):
        return ",".join(_text(flag, item) for item in value)
    raise UsageError(f"{flag}: expected a string, a number or a list, not "
                     f"{type(value).__name__}")


def _items(flag: str, value: Any) -> list[str]:
    """A repeatable flag's items: one value, a list of them, or a dict of settings."""
    if isinstance(value, Mapping):
        return [f"{key}={_text(flag, item)}" for key, item in value.items()]
    if isinstance(value, str | os.PathLike) or not isinstance(value, Sequence):
        return [_text(flag, value)]
    return [_text(flag, item) for item in value]
