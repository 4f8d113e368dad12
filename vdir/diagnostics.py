"""The project's exceptions and its located, one-line diagnostics.

Every error vdir raises on purpose derives from :class:`VdirError`, so an
embedder can catch them all with one clause; each class keeps the standard
base its callers rely on (``ValueError`` for bad values, ``RuntimeError`` for
device failures). Every error a user can cause in a tool ends as a
:class:`UserError` whose message reads ``file:line:col: error: what is
wrong``. Passes raise :class:`PassFailure` (xDSL's ``PassFailedException``)
with the operation at fault; the drivers turn it into a located message.

This module imports no xDSL IR classes at import time, so that the light
modules (targets, families) can use the exceptions cheaply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.utils.exceptions import DiagnosticException, PassFailedException, VerifyException

if TYPE_CHECKING:
    from xdsl.ir import Operation


class VdirError(Exception):
    """Root of every exception vdir raises on purpose; ``str(e)`` is the message."""


class BuildError(VdirError, ValueError):
    """A program built in Python (``vdir.frontend``: ``ProgramBuilder``, the example and model builders)
    that cannot be what was asked: a bad shape, dtype, region, parameter or configuration, named in the
    message. A ``ValueError`` too, as the builders raised before it existed."""


class UserError(VdirError, DiagnosticException):
    """An error caused by the user's input; ``str(e)`` is the one-line message.

    A ``DiagnosticException``, so that xDSL's driver loop prints it in place
    under ``--verify-diagnostics``.
    """


class PassFailure(VdirError, PassFailedException):
    """A pass cannot transform the program; ``op`` (if any) is where, else ``loc`` (``file:line:col``)."""

    def __init__(self, message: str, op: Operation | None = None, loc: str | None = None):
        super().__init__(message)
        self.op = op
        self.loc = loc


def location_of(op: Operation | None) -> str | None:
    """``file:line:col`` of ``op`` (or its closest located ancestor)."""
    from xdsl.dialects.builtin import FileLineColLoc

    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        op = op.parent_op()
    return None


def located(message: str, op: Operation | None = None, fallback: str = "<input>") -> str:
    """Prefix ``message`` with the location of ``op``."""
    return f"{location_of(op) or fallback}: error: {message}"


class OpVerifyException(VdirError, VerifyException):
    """A verifier's error about one particular op; ``op`` is where it is reported.

    A program's verifier checks its micro-ops together (unique ids, queue
    positions, counters); it raises this to point at the micro-op at fault
    rather than at the program.
    """

    def __init__(self, message: str, op: Operation):
        super().__init__(message)
        self.op = op
