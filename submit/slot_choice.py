"""How a job's trials run: ``--slot-mode`` and ``--slot-preload``, or the choice made for it.

Without ``--slot-mode`` a job whose launch command is one plain Python program (``python
SCRIPT``, ``python3 -u SCRIPT``, ``python -m MODULE``; ``common/python_command.py``) runs on
warm slots with ``--slot-preload auto``: each slot's interpreter imports the SDK and the
script's top-level imports once (``common/auto_preload.py``) and forks every trial. That is
safe where nothing else decides how a trial starts; so a job with a trial image
(``--docker-image``), GPUs (a GPU slot holds its devices for its life), an AppCore that does not
run DisAuto on the agents' hosts (``--app-core-docker-image``, ``--app-core-command``: the
slot's executor is DisAuto's, on the host) or another launch command runs a task per trial, as
before. ``--slot-mode task`` opts out; ``--slot-preload`` alone implies ``warm``. The choice
and why is one line when the job starts (:attr:`SlotChoice.line`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
import logging
from pathlib import Path

from disauto.common.auto_preload import AUTO
from disauto.common.auto_preload import ScriptReadError
from disauto.common.auto_preload import choose
from disauto.common.auto_preload import top_level_imports
from disauto.common.python_command import MODULE_NAME
from disauto.common.python_command import NotAPythonCommandError
from disauto.common.python_command import PythonCommand
from disauto.common.python_command import parse_python_command
from disauto.common.slots import SLOT_MODES
from disauto.framework.record import InputSpec
from disauto.submit.parser import UsageError


logger = logging.getLogger(__name__)

WIDTH = 80
"""The start line's width, ``da-submit: `` included."""
PREFIX = "da-submit: "
MAX_SCRIPT_BYTES = 8 << 20
"""A bigger "script" is not read (it is data, or generated)."""


@dataclass(frozen=True)
class SlotChoice:
    """How the job's trials run (JobConfig's ``slot_mode`` and ``slot_preload*`` fields)."""

    mode: str
    preload: tuple[str, ...] = ()
    """The modules named in ``--slot-preload`` (each must import, as before)."""
    auto: bool = False
    """``--slot-preload auto``, given or chosen."""
    optional: tuple[str, ...] = ()
    """With ``auto``: the script's imports to preload where they can be."""
    line: str = ""
    """The start line: the mode and why, at most :data:`WIDTH` columns with its prefix."""
    notes: tuple[str, ...] = ()
    """What ``auto`` left out for fork safety, or could not read."""


def choose_slots(args: argparse.Namespace, *, gpus: int, docker_image: str,
                 appcore_image: str, files: Sequence[str],
                 inputs: Sequence[InputSpec]) -> SlotChoice:
    """The job's slot mode and preload from its flags.

    Raises:
        UsageError: a bad ``--slot-mode`` or ``--slot-preload``, in one line.
    """
    mode = args.slot_mode
    if mode is not None and mode not in SLOT_MODES:
        raise UsageError(f"--slot-mode: expected one of {', '.join(SLOT_MODES)}, not {mode!r}")
    named, auto = _preload_items(args.slot_preload)
    given = bool(named or auto)
    if given and mode == "task":
        raise UsageError("--slot-preload needs --slot-mode warm (a task per trial has no "
                         "interpreter to keep)")
    try:
        program: PythonCommand | None = parse_python_command(args.app_runner_launch_cmd)
        not_python = ""
    except NotAPythonCommandError as err:
        program, not_python = None, str(err)
    if given and program is None:
        raise UsageError(f"--slot-preload: {not_python}")
    if mode is None and not given:
        blocker = _blocker(args, program, gpus, docker_image, appcore_image)
        if blocker:
            return SlotChoice("task", line=_fit(f"slot mode task: {blocker}"))
        mode, auto, why = "warm", True, "default: python script"
    else:
        why = f"--slot-mode {mode}" if mode else f"--slot-preload {args.slot_preload.strip()}"
        mode = mode or "warm"
    if mode == "task":
        return SlotChoice("task", line=_fit(f"slot mode task ({why})"))
    if not (named or auto):
        return SlotChoice("warm", line=_fit(f"slot mode warm ({why})"))
    optional, notes = _script_modules(program, files, inputs) if auto else ((), ())
    optional = tuple(m for m in optional if m not in named)
    line = _preload_line(named, optional, auto, why)
    return SlotChoice("warm", named, auto, optional, line, notes)


def _preload_items(text: str | None) -> tuple[tuple[str, ...], bool]:
    """``--slot-preload``'s module names, and whether it says ``auto``."""
    text = (text or "").strip()
    if not text:
        return (), False
    items = tuple(name.strip() for name in text.split(","))
    for name in items:
        if name != AUTO and not MODULE_NAME.fullmatch(name):
            raise UsageError(f"--slot-preload: {name!r} is not a module name; expected dotted "
                             "names separated by commas, e.g. numpy,sklearn.ensemble, or auto")
    named = tuple(dict.fromkeys(name for name in items if name != AUTO))
    return named, AUTO in items


def _blocker(args: argparse.Namespace, program: PythonCommand | None, gpus: int,
             docker_image: str, appcore_image: str) -> str:
    """Why the job keeps a task per trial by default ("" when warm slots are safe)."""
    if program is None:
        return "the launch command is not 'python SCRIPT'"
    if docker_image:
        return "--docker-image (warm slots: --slot-mode warm)"
    if gpus:
        return f"--app-runner-gpus {gpus} (warm slots: --slot-mode warm)"
    if appcore_image:
        return "--app-core-docker-image (the agents may lack DisAuto)"
    if args.app_core_command:
        return "--app-core-command (the agents may lack DisAuto)"
    return ""


def _preload_line(named: Sequence[str], optional: Sequence[str], auto: bool, why: str) -> str:
    """``slot mode warm, preload auto: numpy, sklearn.svm (...)``, the list shortened to fit
    (the whole list is in the job's log)."""
    modules = [*named, *optional]
    head = f"slot mode warm, preload{' auto' if auto else ''}: "
    tail = f" ({why})"
    if not modules:
        return _fit(f"{head}the SDK alone{tail}")
    packages = list(dict.fromkeys(name.split(".", 1)[0] for name in modules))
    fewer = [f"{', '.join(packages[:count])} +{len(packages) - count}"
             for count in range(len(packages) - 1, 0, -1)]
    for shown in (", ".join(modules), ", ".join(packages), *fewer):
        if len(PREFIX + head + shown + tail) <= WIDTH:
            break
    else:
        shown = f"{len(modules)} modules"
    return _fit(head + shown + tail)


def _fit(line: str) -> str:
    room = WIDTH - len(PREFIX)
    return line if len(line) <= room else line[:room - 1] + "…"


def _script_modules(program: PythonCommand | None, files: Sequence[str],
                    inputs: Sequence[InputSpec]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What ``auto`` preloads of the launch command's script, and the notes for the user."""
    if program is None:
        return (), ()
    path = script_path(program, files, inputs)
    if path is None:
        logger.info("--slot-preload auto: %s is not among --files or --input: preloading the "
                    "SDK alone", program.target)
        return (), ()
    try:
        if path.stat().st_size > MAX_SCRIPT_BYTES:
            return (), (f"--slot-preload auto: {path.name} is over {MAX_SCRIPT_BYTES >> 20} MB; "
                        "preloading the SDK alone",)
        imports = top_level_imports(path.read_bytes(), path.name)
    except (OSError, ScriptReadError) as err:
        return (), (f"--slot-preload auto: {err}; preloading the SDK alone",)
    chosen = choose(imports, own_modules(path, files, inputs))
    notes = tuple(f"--slot-preload auto leaves out {name}: {why}" for name, why in chosen.denied)
    return chosen.modules, notes


def script_path(program: PythonCommand, files: Sequence[str],
                inputs: Sequence[InputSpec]) -> Path | None:
    """The file the launch command runs, on this machine: its script (or ``-m`` module) among
    ``--files`` or in an ``--input`` folder, or an absolute path here; None when it is not."""
    target = program.target.replace(".", "/") if program.is_module else program.target
    candidates = [f"{target}.py", f"{target}/__main__.py"] if program.is_module else [target]
    for relative in candidates:
        if Path(relative).is_absolute():
            found = Path(relative)
            if found.is_file():
                return found
            continue
        parts = Path(relative).parts
        for file in files:
            if len(parts) == 1 and Path(file).name == parts[0]:
                return Path(file)
        for spec in inputs:
            if spec.name == parts[0] and "://" not in spec.source:
                found = Path(spec.source, *parts[1:])
                if found.is_file():
                    return found
    return None


def own_modules(script: Path, files: Sequence[str], inputs: Sequence[InputSpec]) -> set[str]:
    """The top-level module names of the job's own code: its ``--files`` and ``--input``
    names, and the modules and packages beside the script."""
    names = {Path(file).name for file in files} | {spec.name for spec in inputs}
    try:
        names |= {entry.name for entry in script.parent.iterdir()
                  if entry.suffix == ".py" or (entry / "__init__.py").is_file()}
    except OSError:
        pass
    return {name.split(".", 1)[0] for name in names}
