"""vdir: a compiler toolkit for GPU programs written as micro-ops on virtual engines.

The embedding entry point is :func:`compile`: give it an xDSL module (or an
already encoded program) and call the result on numpy arrays.
"""

from __future__ import annotations

from typing import Any


def compile(
    module_or_program: Any, backend: str = "sim", target: str | None = None, num_sms: int | None = None, **options: Any
):
    """Compile a vdir module for ``target`` and load it on ``backend``; returns an :class:`Executable`.

    ``target`` defaults to the program's own (``h200`` unless it says otherwise).

    See :func:`vdir.device_runtime.executable.compile`; imported lazily so
    that ``import vdir`` stays cheap for the command-line tools.
    """
    from vdir.device_runtime.executable import compile as compile_program

    return compile_program(module_or_program, backend=backend, target=target, num_sms=num_sms, **options)


__all__ = ["compile"]
