"""Errors AppCore raises for bad search input.

Every error here is a :class:`ValueError` (the input is wrong, not the program) and derives from
:class:`SearchInputError`, so the gRPC layer maps the whole family to ``INVALID_ARGUMENT`` with one
``except`` clause and ``da-submit`` can print it as one line. Messages name the thing at fault
(parameter, setting, algorithm) and say what would be valid.
"""

from __future__ import annotations


__all__ = [
    "InvalidAssignmentError",
    "InvalidSettingsError",
    "SearchInputError",
    "SearchSpaceError",
    "UnknownAlgorithmError",
    "UnknownNameError",
    "UnknownRuleError",
]


class SearchInputError(ValueError):
    """Base of AppCore's input errors: the search space, an assignment, an algorithm or setting."""


class SearchSpaceError(SearchInputError):
    """A search space, or one of its parameters, is malformed (empty range, bad step, ...)."""


class InvalidAssignmentError(SearchInputError):
    """An assignment does not fit its search space (missing, unknown or out-of-range value)."""


class InvalidSettingsError(SearchInputError):
    """An algorithm setting (or seed, direction, budget) is unknown or has an invalid value."""


class UnknownNameError(SearchInputError, LookupError):
    """No implementation is registered under the requested name (the message lists the valid
    ones)."""


class UnknownAlgorithmError(UnknownNameError):
    """No search algorithm is registered under the requested name."""


class UnknownRuleError(UnknownNameError):
    """No early-stopping rule is registered under the requested name."""
