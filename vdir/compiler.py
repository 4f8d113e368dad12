"""The compiler entry point: ``vdir.compile``.

Takes an xDSL module (or an already encoded program), runs the pass pipeline
for a target, and hands the encoded program with its lowering options to a
backend, which returns a callable :class:`~vdir.device_runtime.executable.Executable`.
This module sits above both the compiler core and the runtime; the core never
imports it (nor any backend).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from vdir.device_runtime import platform_class
from vdir.device_runtime.executable import Executable
from vdir.diagnostics import UserError, VdirError
from vdir.isa import EncodedProgram, check_untrusted
from vdir.limits import Limits, code_bytes_for, current_limits
from vdir.target import get_target

if TYPE_CHECKING:
    from vdir.lowering.options import LoweringOptions
    from vdir.program_cache import CachedProgram
    from vdir.transforms.pipeline_options import PipelineOptions


class InvalidModuleError(VdirError, ValueError):
    """The module given to :func:`compile` does not verify; ``str(e)`` is vdir-opt's one-line message."""


class CompileArgumentError(VdirError, TypeError):
    """An argument of :func:`compile` of the wrong type (a ``TypeError`` that ``except VdirError`` also catches)."""


def compile(
    module_or_program: Any,
    backend: str = "sim",
    target: str | None = None,
    num_sms: int | None = None,
    options: LoweringOptions | Mapping[str, Any] | str | None = None,
    max_micro_ops: int | None = None,
    pipeline: PipelineOptions | Mapping[str, Any] | str | None = None,
    **launch_options: Any,
) -> Executable:
    """Compile an xDSL module (or take an encoded program) and load it on ``backend``.

    A ``ModuleOp`` goes through the pass pipeline (:func:`compile_module`) for
    ``target`` (default: the program's own), restricted to ``num_sms`` SMs
    when given, and refused if it expands to more than ``max_micro_ops``
    micro-ops (None: the limit in effect, by default
    :data:`vdir.limits.MAX_MICRO_OPS`; not a positive integer: a
    :class:`~vdir.limits.LimitError`, before anything is compiled); an
    :class:`EncodedProgram` is used as it is, checked as one read back from
    text is (:func:`vdir.isa.check_untrusted`, a ``ValueError``), its code,
    loops unrolled, held to the ``max_code_bytes`` in effect or to what
    ``max_micro_ops`` micro-ops encode to where that is more. ``options`` are
    the lowering options (:class:`~vdir.lowering.options.LoweringOptions`, a
    dict or a ``"key=value ..."`` string), checked before anything is
    compiled; ``launch_options`` become launch options of the returned
    :class:`Executable`, checked first against the backend's
    (``Platform.LAUNCH_OPTIONS``). ``pipeline`` are the pass pipeline's
    options (:class:`~vdir.transforms.pipeline_options.PipelineOptions`, a
    dict or a ``"key=value ..."`` string, e.g. ``"flag-words=4096"``), also
    checked before anything is compiled; ``target`` and ``num_sms``, where
    given, are those options' too (given in both places, they must agree). An
    encoded program takes none: it is compiled already. A module is verified
    first: an invalid one raises :class:`InvalidModuleError` with the located
    message vdir-opt gives.
    """
    if num_sms is not None and (isinstance(num_sms, bool) or not isinstance(num_sms, int | np.integer)):
        raise CompileArgumentError(f"vdir.compile: num_sms must be an integer, got {num_sms!r}")
    num_sms = None if num_sms is None else int(num_sms)
    if target is not None:
        get_target(target, num_sms)  # an unknown target or too many SMs fails here, by name
    if max_micro_ops is not None:
        Limits(max_micro_ops=max_micro_ops)  # a bad limit fails here, by name
    platform_class(backend).check_launch_options(launch_options)  # a misspelt option fails before compiling
    if options is not None:
        from vdir.lowering.options import LoweringOptions

        options = LoweringOptions.coerce(options)
    if isinstance(module_or_program, EncodedProgram):
        if pipeline is not None:
            from vdir.transforms.pipeline_options import PipelineOptionError

            raise PipelineOptionError("vdir.compile: an encoded program is compiled already; it takes no pipeline options")
        program = module_or_program
        _check_encoded_agrees(program, target, num_sms)
        check_untrusted(program, _code_limit(max_micro_ops), "max_micro_ops=")
        compiled = None
    else:
        from xdsl.dialects.builtin import ModuleOp

        if not isinstance(module_or_program, ModuleOp):
            raise CompileArgumentError(
                f"vdir.compile takes an xDSL ModuleOp or an EncodedProgram, got {type(module_or_program).__name__}"
            )
        passes = _pipeline_options(pipeline, target, num_sms)
        verify(module_or_program)
        t0 = time.perf_counter()
        compiled = _compile_cached(module_or_program, passes, max_micro_ops)
        seconds = time.perf_counter() - t0
        program = compiled.program
    exe = Executable(program, backend=backend, target=target or program.target, options=options, **launch_options)
    if compiled is not None:
        exe.compile_seconds, exe.compile_cache_hit = seconds, compiled.cache_hit
    return exe


def _pipeline_options(pipeline: Any, target: str | None, num_sms: int | None) -> PipelineOptions:
    """``pipeline`` as pipeline options with :func:`compile`'s ``target`` and ``num_sms`` (None: not given)
    put in (:meth:`~vdir.transforms.pipeline_options.PipelineOptions.with_given`)."""
    from vdir.transforms.pipeline_options import PipelineOptions

    return PipelineOptions.coerce(pipeline).with_given(target=target, num_sms=num_sms)


def _check_encoded_agrees(program: EncodedProgram, target: str | None, num_sms: int | None) -> None:
    """An encoded program was placed for its target and SMs: a ``target`` or ``num_sms`` given with it must
    be those (otherwise it would run on its own SMs, or a platform of another GPU would run it)."""
    if target is not None and target != program.target:
        raise CompileArgumentError(f"vdir.compile: the encoded program is compiled for target '{program.target}', "
                                   f"not '{target}'; compile its source for '{target}' instead")
    if num_sms is not None and num_sms != program.num_sms:
        raise CompileArgumentError(f"vdir.compile: the encoded program is placed on {program.num_sms} SMs, not "
                                   f"{num_sms}; compile its source with num_sms={num_sms} instead")


def _code_limit(max_micro_ops: int | None) -> int:
    """The code bytes an encoded program given to :func:`compile` may unroll to: the ``max_code_bytes``
    in effect, or more where ``max_micro_ops`` allows a larger program."""
    limit = current_limits().max_code_bytes
    return limit if max_micro_ops is None else max(limit, code_bytes_for(max_micro_ops))


def verify(module: Any) -> None:
    """Run every verifier of ``module``; raise :class:`InvalidModuleError` at the first failure.

    A module built in Python skips the parser's checks and may never have
    been verified: an invalid one would otherwise compile and misbehave later.
    """
    from vdir.tools.common import verify_module

    try:
        verify_module(module)
    except UserError as e:
        raise InvalidModuleError(str(e)) from None


def compile_module(
    module: Any, target: str | None = None, num_sms: int | None = None, max_micro_ops: int | None = None,
    pipeline: PipelineOptions | Mapping[str, Any] | str | None = None,
) -> EncodedProgram:
    """Run the pass pipeline on a verified module (left unchanged); return its encoding.

    ``max_micro_ops`` and ``pipeline``: see :func:`compile`. A module compiled the same way before, by
    this or another process, is read from the program cache (:mod:`vdir.program_cache`;
    ``VDIR_PROGRAM_CACHE=0`` turns it off).

    The pipeline is imported here, lazily, so that ``import vdir`` and the
    runtime do not pull in the compiler unless asked to compile.
    """
    return _compile_cached(module, _pipeline_options(pipeline, target, num_sms), max_micro_ops).program


def _compile_cached(module: Any, options: PipelineOptions, max_micro_ops: int | None) -> CachedProgram:
    """:func:`compile_module` with its options merged, saying whether the program came from the program
    cache."""
    from vdir.program_cache import cached_compile
    from vdir.transforms.pipeline import compile_to_encoded

    limits = current_limits().replace(max_micro_ops=max_micro_ops)
    return cached_compile(module, options, limits,
                          lambda: compile_to_encoded(module, options, max_micro_ops=max_micro_ops))
