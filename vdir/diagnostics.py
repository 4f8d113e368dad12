"""Located, one-line diagnostics shared by the verifiers, passes and tools.

Every error a user can cause ends as a :class:`UserError` whose message reads
``file:line:col: error: what is wrong``. Passes raise :class:`PassFailure` with
the operation at fault; the driver turns it into a located message.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException


class UserError(Exception):
    """An error caused by the user's input; ``str(e)`` is the one-line message."""


class PassFailure(Exception):
    """A pass cannot transform the program; ``op`` (if any) is where."""

    def __init__(self, message: str, op: Operation | None = None, loc: str | None = None):
        super().__init__(message)
        self.op = op
        self.loc = loc


def location_of(op: Operation | None) -> str | None:
    """``file:line:col`` of ``op`` (or its closest located ancestor)."""
    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        op = op.parent_op()
    return None


def located(message: str, op: Operation | None = None, fallback: str = "<input>") -> str:
    """Prefix ``message`` with the location of ``op``."""
    return f"{location_of(op) or fallback}: error: {message}"


class OpVerifyException(VerifyException):
    """A verifier's error about one particular op; ``op`` is where it is reported.

    A program's verifier checks its micro-ops together (unique ids, queue
    positions, counters); it raises this to point at the micro-op at fault
    rather than at the program.
    """

    def __init__(self, message: str, op: Operation):
        super().__init__(message)
        self.op = op
