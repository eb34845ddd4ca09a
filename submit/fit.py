"""Terminal output that fits: ``$COLUMNS`` wide (80 when unknown), long paths shortened.

``da-submit`` and ``da-job`` print through these: a table shrinks its loose columns (clipped
with ``…``) and drops the least needed ones before it wraps; a line of parts keeps the most
needed parts and the shorter form of the others; prose wraps between words, never inside a
path or a URL (those stay copyable whole).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math
import os
from pathlib import Path
import shutil
import textwrap


DEFAULT_COLUMNS = 80
MIN_COLUMNS = 40
ELLIPSIS = "…"


def columns() -> int:
    """The terminal's width: ``$COLUMNS``, else the terminal's own, else 80 (a pipe, a file)."""
    return max(MIN_COLUMNS, shutil.get_terminal_size((DEFAULT_COLUMNS, 24)).columns)


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ending ``…`` where it was cut."""
    if len(text) <= width:
        return text
    return text[:max(0, width - 1)] + ELLIPSIS if width > 0 else ""


def clip_left(text: str, width: int) -> str:
    """``text`` cut to its last ``width`` characters, starting ``…`` where it was cut."""
    if len(text) <= width:
        return text
    return ELLIPSIS + text[len(text) - width + 1:] if width > 1 else ELLIPSIS[:width]


def short_path(path: str | Path, width: int = 60) -> str:
    """``path`` with the home folder as ``~`` and, when still longer than ``width``, its middle
    folders as ``…``: ``~/.disauto/…/jobs/mnist-20261126-060756-33fd/results.json``."""
    text = str(path)
    home = os.path.expanduser("~")
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        text = "~" + text[len(home):]
    if len(text) <= width:
        return text
    parts = text.split(os.sep)
    head, tail = parts[:2], parts[2:]
    while len(tail) > 1 and len(os.sep.join([*head, ELLIPSIS, *tail])) > width:
        tail = tail[1:]
    return os.sep.join([*head, ELLIPSIS, *tail])


def wrap(text: str, width: int | None = None, indent: str = "  ") -> list[str]:
    """``text`` as lines of at most ``width`` (the terminal's) characters, broken between words
    only (a path or URL longer than a line stays whole on a line of its own); the lines after
    the first start with ``indent``."""
    width = columns() if width is None else width
    return textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False) or [""]


@dataclass(frozen=True)
class Part:
    """One part of a line: its forms, longest first; how much it is needed (the least needed
    part is shortened first); whether it may be left out when its shortest form is too long."""

    forms: tuple[str, ...]
    need: int = 0
    optional: bool = False


def fit_parts(parts: Sequence[Part], width: int) -> str:
    """The parts joined in their order, each in its longest form that lets the line fit
    ``width``: the least needed part takes its next shorter form first; when every part is at
    its shortest, optional parts are left out, the least needed first (and taken back, the most
    needed first, where the line has room for them after all, and so are longer forms). The
    line may still be longer than ``width`` (:func:`clip` it)."""
    chosen = [0] * len(parts)
    dropped: set[int] = set()

    def line() -> str:
        return "".join(part.forms[i] for n, (part, i) in enumerate(zip(parts, chosen,
                                                                        strict=True))
                       if n not in dropped)

    order = sorted(range(len(parts)), key=lambda i: parts[i].need)
    for index in order:
        while len(line()) > width and chosen[index] < len(parts[index].forms) - 1:
            chosen[index] += 1
    for index in order:
        if len(line()) > width and parts[index].optional:
            dropped.add(index)
    for index in sorted(dropped, key=lambda i: -parts[i].need):  # back what fits after all
        dropped.discard(index)
        if len(line()) > width:
            dropped.add(index)
    for index in reversed(order):  # and the longer forms, the most needed part first
        while chosen[index] > 0:
            chosen[index] -= 1
            if len(line()) > width:
                chosen[index] += 1
                break
    return line()


@dataclass(frozen=True)
class Column:
    """A table column: its heading, the narrowest it may be clipped to (its natural width when
    ``None``), whether to keep a clipped cell's end rather than its start, its rank among the
    columns dropped when even the narrowest table is too wide (0: never dropped; 1 goes first),
    whether it is clipped only as a last resort (after the columns are dropped), and its rank
    among the loose columns clipped (the highest first; equal ranks: the rightmost first)."""

    title: str
    narrowest: int | None = None
    keep_end: bool = False
    drop: int = 0
    last: bool = False
    first: int = 0


@dataclass(frozen=True)
class Fitted:
    """A table fitted to a width: its lines, and the titles of the columns left out."""

    lines: list[str]
    left_out: list[str]


def fit_table(table_columns: Sequence[Column], rows: Sequence[Sequence[str]],
              width: int | None = None, gap: int = 2) -> list[str]:
    """The lines of :func:`fit_columns`' table."""
    return fit_columns(table_columns, rows, width, gap).lines


def fit_columns(table_columns: Sequence[Column], rows: Sequence[Sequence[str]],
                width: int | None = None, gap: int = 2) -> Fitted:
    """An aligned text table (heading, a rule, the rows) no wider than ``width``: loose columns
    clipped to their narrowest, last column first, then droppable columns dropped, then the
    last-resort columns clipped (the room left over given back to clipped columns). Only a
    table whose unclippable columns are wider than ``width`` is wider."""
    width = columns() if width is None else width
    keep = list(range(len(table_columns)))
    natural = [max([len(table_columns[i].title), *(len(str(r[i])) for r in rows)])
               for i in keep]
    widths = list(natural)

    def total() -> int:
        return sum(widths[i] for i in keep) + gap * (len(keep) - 1)

    def shrink(last: bool) -> None:
        for i in sorted(reversed(keep), key=lambda i: -table_columns[i].first):
            narrowest = table_columns[i].narrowest
            if narrowest is not None and table_columns[i].last == last and total() > width:
                widths[i] = max(min(narrowest, widths[i]), widths[i] - (total() - width))

    shrink(last=False)
    for i in sorted((i for i in keep if table_columns[i].drop), key=lambda i:
                    table_columns[i].drop):
        if total() <= width:
            break
        keep.remove(i)
    shrink(last=True)
    for i in keep:  # what a dropped column left goes back to the clipped ones
        widths[i] = min(natural[i], widths[i] + max(0, width - total()))

    def cell(i: int, text: str) -> str:
        cut = clip_left if table_columns[i].keep_end else clip
        return cut(str(text), widths[i]).ljust(widths[i])

    space = " " * gap
    lines = [space.join(cell(i, table_columns[i].title) for i in keep).rstrip(),
             space.join("-" * widths[i] for i in keep)]
    lines += [space.join(cell(i, row[i]) for i in keep).rstrip() for row in rows]
    return Fitted(lines, [table_columns[i].title for i in range(len(table_columns))
                          if i not in keep])


def significant(values: Sequence[float], least: int = 4, most: int = 15) -> int:
    """The fewest significant digits, at least ``least``, at which the distinct ``values`` read
    distinct (``%.4g`` tells 0.00612 from 0.00618; 0.00612341 and 0.00612349 need ``%.5g``)."""
    distinct = {value for value in values if math.isfinite(value)}  # nan reads nan
    for digits in range(least, most):
        if len({f"{value:.{digits}g}" for value in distinct}) == len(distinct):
            return digits
    return most


def left_out_line(titles: Sequence[str], width: int, where: str) -> list[str]:
    """The line that says which columns a table left out at ``width`` and where they all are:
    the titles where they fit on the line, else how many (without the width where even that is
    too long; wrapped where that still is)."""
    count = f"{len(titles)} column{'s' if len(titles) != 1 else ''}"
    forms = [f"({', '.join(titles)} left out at {width} columns: {where} shows all)",
             f"({count} left out at {width} columns: {where} shows all)",
             f"({count} left out: {where} shows all)"]
    return wrap(next((form for form in forms if len(form) <= width), forms[-1]), width)
