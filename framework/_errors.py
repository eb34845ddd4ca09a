"""Domain errors of the framework's job controller; the gRPC servicer maps each to a status."""

from __future__ import annotations


class JobError(Exception):
    """Base class."""


class InvalidArgumentError(JobError, ValueError):
    """A request is malformed (bad metric, unknown parameter)."""


class NotFoundError(JobError, LookupError):
    """The trial does not exist."""


class AlreadyExistsError(JobError):
    """The trial number is taken by a different assignment."""


class FailedPreconditionError(JobError):
    """The request is valid but not now (report after final, job over)."""


class JobEndedError(FailedPreconditionError):
    """The job has ended: the record is closed (a report that arrives now is not recorded)."""


class UnauthenticatedError(JobError, PermissionError):
    """The token is missing or wrong."""
