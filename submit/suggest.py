""""Did you mean": the nearest flag or command to a mistyped one (``difflib``'s ratio).

Both command lines use it: ``da-submit --paralelism 3`` says ``unrecognized arguments:
--paralelism 3 (did you mean --parallelism?)``, ``da-job stauts`` says ``unknown command
'stauts' (did you mean status?)`` instead of listing every choice.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from collections.abc import Sequence
import difflib
import re


CUTOFF = 0.6
"""How alike (difflib's ratio) a word must be to a known one to be suggested."""

_INVALID_CHOICE = re.compile(r"argument (\S+): invalid choice: '([^']*)'")


def nearest(word: str, known: Iterable[str]) -> str | None:
    """The known word closest to ``word``, or None when none is close enough."""
    found = difflib.get_close_matches(word, list(known), n=1, cutoff=CUTOFF)
    return found[0] if found else None


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every ``--flag`` (and ``-f``) ``parser`` accepts."""
    return [flag for action in parser._actions for flag in action.option_strings]


def unrecognized(extras: Sequence[str], flags: Iterable[str]) -> str:
    """argparse's message for arguments it did not recognize, with the nearest flag to each
    unknown ``--flag`` (its ``=value`` left out)."""
    known = list(flags)
    hints = []
    for extra in extras:
        if extra.startswith("-"):
            close = nearest(extra.split("=", 1)[0], known)
            if close is not None and close not in hints:
                hints.append(close)
    message = f"unrecognized arguments: {' '.join(extras)}"
    if hints:
        message += f" (did you mean {' or '.join(hints)}?)"
    return message


def invalid_choice(parser: argparse.ArgumentParser, message: str, what: str = "",
                   listed: str = "") -> str:
    """argparse's "invalid choice" message with the one nearest choice; when none is near, all
    of them, or ``listed`` (where they are listed) if given. Other messages are unchanged.
    ``what`` names the argument (``command``)."""
    match = _INVALID_CHOICE.search(message)
    if match is None:
        return message
    name, given = match.group(1), match.group(2)
    known: list[str] = []
    for action in parser._actions:
        if name in (*action.option_strings, action.dest, action.metavar) and action.choices:
            known = [str(choice) for choice in action.choices]
    close = nearest(given, known)
    hint = f"did you mean {close}?" if close is not None else (
        listed or f"one of {', '.join(known)}")
    if what:
        return f"unknown {what} {given!r} ({hint})"
    return f"argument {name}: invalid choice {given!r} ({hint})"
