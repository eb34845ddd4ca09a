"""Errors in what the user gave ``da-submit``: flags, files, parameter files."""

from __future__ import annotations


__all__ = ["DisAutoUsageError", "ParameterFileError"]


class DisAutoUsageError(Exception):
    """Base of errors in the user's input to ``da-submit``.

    The message is one line that names the flag, file, line or value at fault and what would be
    valid; the CLI prints it as ``da-submit: error: <message>`` without a traceback (unless
    ``--debug``).
    """


class ParameterFileError(DisAutoUsageError, ValueError):
    """A parameter file is missing, unreadable, not JSON, or describes an invalid search space.

    The message reads ``<file>: [parameter '<name>' | parameter #<n>: ]<what is wrong>``.

    Args:
        path: The file, as the user gave it.
        message: What is wrong and what would be valid.
        parameter: The parameter's name, or its 1-based position when it has no usable name;
            ``None`` for a problem with the whole file.

    Attributes:
        path: As given.
        parameter: As given.
        detail: ``message``, without the file and parameter prefix.
    """

    def __init__(self, path: str, message: str, parameter: str | int | None = None) -> None:
        self.path = path
        self.parameter = parameter
        self.detail = message
        if parameter is None:
            where = f"{path}: "
        elif isinstance(parameter, int):
            where = f"{path}: parameter #{parameter}: "
        else:
            where = f"{path}: parameter {parameter!r}: "
        super().__init__(where + message)
