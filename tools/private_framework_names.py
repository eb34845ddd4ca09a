"""Rename the framework's old module names to their private ones in files written before them.

The framework's internals became private (``framework/_store.py``, ``framework/_job/``, ...;
``docs/design.md``, "The framework's faces"). A branch written before that still names the old
modules; after merging it, this rewrites those names, and nothing else:

* ``disauto.framework.store`` → ``disauto.framework._store`` (imports, and strings such as a
  lazy import's ``"module:attr"`` or a logger's name);
* ``from disauto.framework import meta`` → ``from disauto.framework import _meta as meta``;
* in text (a docstring, a comment, a document), ``framework.store`` and ``framework/store.py``
  → ``framework._store``, ``framework/_store.py`` (``framework/job/`` → ``framework/_job/``);
  ``tests/framework/...`` and an attribute ``x.framework.store`` in code stay as they are.

Usage::

    python tools/private_framework_names.py [FILE ...]

rewrites the given files, or every file git tracks, and prints each one it changed (itself and
its test, which spell the old names on purpose, are left as they are). Run ``ruff check --fix
--select I`` afterwards: a renamed import sorts elsewhere.
"""

from __future__ import annotations

import io
from pathlib import Path
import re
import subprocess
import sys
import tokenize


MODULES = (
    "agent_measures", "authorization", "capacity", "checkpoints", "containers",
    "deadline_status", "errors", "fileserver", "framework_info", "launcher", "log_collector",
    "maintenance", "master_endpoint", "mesos_link", "meta", "offer_claims", "offers", "peers",
    "recorded_end", "revival", "roles", "runner_builder", "runner_parts", "runtime",
    "sandbox_logs", "scheduler", "scheduler_driver", "service", "slot_adoption", "slots",
    "spec", "store", "task_places", "tasks", "warm_slots",
)
"""The framework's modules that became private (``framework/<name>.py`` → ``_<name>.py``)."""
PACKAGES = ("job", "telemetry")
"""Its subpackages that became private (``framework/<name>/`` → ``_<name>/``)."""
OWN = ("tools/private_framework_names.py", "tests/tools/test_private_framework_names.py")
"""This tool and its test: they spell the old names on purpose."""
TEXT = frozenset({".py", ".md", ".cfg", ".toml", ".txt", ".ini", ".js", ".html", ".sh", ".yml",
                  ".yaml"})

_NAMES = "|".join(sorted((*MODULES, *PACKAGES), key=len, reverse=True))
_INSTALLED = re.compile(rf"\bdisauto\.framework\.({_NAMES})\b")
_FROM_PACKAGE = re.compile(rf"^(\s*from disauto\.framework import )({_NAMES})\b( as \w+)?", re.M)
_BARE = re.compile(rf"(?<![\w.])framework\.({_NAMES})\b")
_MODULE_PATH = re.compile(rf"(?<![\w./-])framework/({'|'.join(MODULES)})\.py\b")
_PACKAGE_PATH = re.compile(rf"(?<![\w./-])framework/({'|'.join(PACKAGES)})(?=[/`\s)\]:,.'\"]|$)",
                           re.M)


def _private(match: re.Match[str]) -> str:
    return match.group(0).replace(match.group(1), "_" + match.group(1), 1)


def _from_package(match: re.Match[str]) -> str:
    start, name, alias = match.groups()
    return f"{start}_{name}{alias or ' as ' + name}"


def _text(text: str) -> str:
    """Text that is not code: every form of an old name."""
    for pattern in (_BARE, _MODULE_PATH, _PACKAGE_PATH):
        text = pattern.sub(_private, text)
    return text


def _python(source: str) -> str:
    """A module: the installed names everywhere, the bare ones in its strings and comments
    only (in code, ``x.framework.store`` is an attribute, not a module)."""
    source = _INSTALLED.sub(_private, _FROM_PACKAGE.sub(_from_package, source))
    lines = source.splitlines(keepends=True)
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    prose = [token for token in tokens if token.type in (tokenize.STRING, tokenize.COMMENT)]
    for token in reversed(prose):  # from the end, so the positions before stay right
        (row, col), (end_row, end_col) = token.start, token.end
        before = "".join(lines[row - 1:end_row])
        cut = len(before) - (len(lines[end_row - 1]) - end_col)
        middle = _text(before[col:cut])
        if middle != before[col:cut]:
            whole = before[:col] + middle + before[cut:]
            lines[row - 1:end_row] = whole.splitlines(keepends=True)
    return "".join(lines)


def rewrite(path: Path) -> bool:
    """Rewrite one file in place; whether it changed."""
    try:
        text = path.read_text()
    except (UnicodeDecodeError, OSError):
        return False
    new = _python(text) if path.suffix == ".py" else _INSTALLED.sub(
        _private, _text(text)) if path.suffix in TEXT else text
    if new == text:
        return False
    path.write_text(new)
    return True


def main(argv: list[str]) -> int:
    files = [Path(arg) for arg in argv] or [
        Path(name) for name in subprocess.run(["git", "ls-files"], capture_output=True,
                                              text=True, check=True).stdout.splitlines()]
    for path in files:
        if path.is_file() and not path.resolve().as_posix().endswith(OWN) and rewrite(path):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
