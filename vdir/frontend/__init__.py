"""Python front end: build vdir programs without writing IR text.

:class:`ProgramBuilder` is the API an embedding compiler uses;
:mod:`vdir.frontend.examples` builds the programs of ``examples/``.
"""

from vdir.diagnostics import BuildError
from vdir.frontend.builder import Offset, ProgramBuilder, verify

__all__ = ["BuildError", "Offset", "ProgramBuilder", "verify"]
