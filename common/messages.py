"""What a person reads of a recorded message: the cause first, sandbox paths shortened.

A failed trial's message is recorded whole (``TASK_FAILED REASON_...: Command exited with status
1; stderr: Traceback ... | File "/<work dir>/slaves/<agent>/frameworks/<framework>/executors/
<task>/runs/<run>/train.py", line 3, in <module> | ... | KeyError: 'hidden'``): the tail of
the task's stderr, its lines joined by `` | ``. Read as it is, the cause comes last, after a
sandbox path of 200 characters. :func:`cause_first` puts the last line of that stderr (the
exception of a Python traceback) first and writes every sandbox path relative to its sandbox,
as the user's script knows it (``train.py``); the record keeps the message as it was.
"""

from __future__ import annotations

import re


STDERR_MARK = "; stderr: "
"""Where the framework appends a failed task's stderr to its status message."""

LINE_JOIN = " | "
"""How the framework joins the lines of that stderr."""

_SANDBOX = re.compile(r"(?:/[^\s/\"']+)*?/runs/[^\s/\"']+/(?:tasks/[^\s/\"']+/)?")
"""A Mesos sandbox's path up to its run (a warm slot's task: up to its task folder), as in
``<work dir>/slaves/<agent>/frameworks/<framework>/executors/<executor>/runs/<run>/``."""


def short_sandbox_paths(text: str) -> str:
    """``text`` with each path inside a task's sandbox written relative to the sandbox."""
    return _SANDBOX.sub("", text)


def cause(message: str) -> str:
    """The cause of a failure: the last line of the stderr in ``message`` (the exception of a
    Python traceback), or the message itself when it carries no stderr."""
    head, _, stderr = message.partition(STDERR_MARK)
    lines = [line.strip() for line in stderr.split(LINE_JOIN) if line.strip()]
    return short_sandbox_paths(lines[-1] if lines else head.strip())


def cause_first(message: str) -> str:
    """``message`` with its cause first, then what the task's status said, then the rest of its
    stderr; sandbox paths relative to the sandbox. A message without stderr is unchanged but
    for its paths."""
    head, mark, stderr = message.partition(STDERR_MARK)
    lines = [line.strip() for line in stderr.split(LINE_JOIN) if line.strip()]
    if not mark or not lines:
        return short_sandbox_paths(message)
    rest = LINE_JOIN.join(lines[:-1])
    text = f"{lines[-1]} ({head.strip()}" + (f"; stderr: {rest})" if rest else ")")
    return short_sandbox_paths(text)
