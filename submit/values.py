"""Parsers of single flag values: numbers, sizes, ``SRC#NAME`` pairs, ``KEY=VALUE`` items and
files. Each raises :class:`~submit.parser.UsageError` naming the flag and what would be valid.
"""

from __future__ import annotations

from collections.abc import Sequence
import getpass
import logging
import os
from pathlib import Path
import pwd
import re

from disauto.common.resources import ResourceError
from disauto.common.resources import parse_size_bytes
from disauto.common.resources import parse_size_mb
from disauto.framework.run import role_problem
from disauto.submit.parser import UsageError


logger = logging.getLogger(__name__)


def positive_number(flag: str, text: str, *, integer: bool = False, zero: bool = False,
                    most: float | None = None) -> float:
    """A number ``> 0`` (``>= 0`` with ``zero``), an integer with ``integer``, at most ``most``."""
    try:
        value = float(text)
    except (ValueError, OverflowError):
        value = float("nan")
    ok = value == value and value != float("inf") and (value >= 0 if zero else value > 0)
    if ok and integer and value != int(value):
        ok = False
    if ok and most is not None and value > most:
        ok = False
    if not ok:
        kind = "an integer" if integer else "a number"
        bound = ">= 0" if zero else "> 0"
        limit = f" and <= {most:g}" if most is not None else ""
        raise UsageError(f"{flag}: invalid value {text!r}: expected {kind} {bound}{limit}")
    return value


def size_bytes(flag: str, text: str) -> int:
    try:
        return parse_size_bytes(text, what=flag)
    except ResourceError as err:
        raise UsageError(str(err)) from None


def size_mb(flag: str, text: str) -> float:
    try:
        return parse_size_mb(text, what=flag)
    except ResourceError as err:
        raise UsageError(str(err)) from None


def pair(flag: str, text: str) -> tuple[str, str]:
    source, sep, name = text.rpartition("#")
    if not sep or not source or not name:
        raise UsageError(
            f"{flag}: invalid value {text!r}: expected SRC#NAME, e.g. /data/mnist#data")
    if "/" in name or name in (".", ".."):
        raise UsageError(f"{flag}: invalid NAME {name!r} in {text!r}: must be a plain file name")
    return source, name


def existing_file(flag: str, text: str) -> str:
    path = Path(text).expanduser()
    if not path.exists():
        raise UsageError(f"{flag}: {text}: no such file")
    if not path.is_file():
        raise UsageError(f"{flag}: {text}: not a regular file")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{flag}: {text}: not readable")
    return str(path.resolve())


def key_values(flag: str, items: Sequence[str]) -> dict[str, str]:
    """Repeated ``KEY=VALUE`` items (blanks around each side trimmed)."""
    settings: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag}: invalid value {item!r}: expected KEY=VALUE")
        settings[key.strip()] = value.strip()
    return settings


def roles(items: Sequence[str], flag: str = "--role") -> tuple[str, ...]:
    """Repeated Mesos roles, each valid (``framework/_roles.py``) and given once, in order."""
    seen: list[str] = []
    for role in items:
        problem = role_problem(role)
        if problem:
            raise UsageError(f"{flag}: {problem}")
        if role in seen:
            raise UsageError(f"{flag}: role {role!r} is given twice")
        seen.append(role)
    return tuple(seen)


USER_NAME = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.@-]*\$?")
"""A user name as systems spell them: letters, digits, ``.``, ``_``, ``-`` and ``@`` (``-`` not
first, where it would read as a flag), a trailing ``$`` (Samba machine accounts)."""
MAX_USER_NAME = 256


def user_name(text: str | None, flag: str = "--user") -> str:
    """``--user``: the user Mesos runs the job's tasks as (FrameworkInfo.user); without it the
    submitter's login, as before the flag existed.

    Raises:
        UsageError: a name no system would have (or a uid: Mesos looks users up by name), or
            no login to default to.
    """
    if text is None:
        # The process's own user first, as Mesos' scheduler drivers take it (os::user(), the
        # passwd entry of the uid): a LOGNAME or USER inherited through sudo would name a
        # user the tasks then run as, on agents that switch user.
        try:
            return pwd.getpwuid(os.getuid()).pw_name
        except KeyError:
            pass
        try:
            return getpass.getuser()
        except (KeyError, OSError):  # no LOGNAME/USER and no passwd entry (a bare container)
            raise UsageError(f"{flag}: cannot tell your login name (no LOGNAME or USER, and "
                             f"uid {os.getuid()} has no passwd entry); give {flag} NAME, the "
                             "user the agents run the job's tasks as") from None
    if text.isdigit():
        raise UsageError(f"{flag}: {text!r} is a uid; give the user's name (Mesos runs tasks "
                         "as a user it looks up by name on each agent)")
    if len(text) > MAX_USER_NAME or not USER_NAME.fullmatch(text):
        raise UsageError(f"{flag}: {text!r} is not a user name: letters, digits, '.', '_', "
                         f"'-' and '@' ('-' not first), at most {MAX_USER_NAME} characters")
    return text
