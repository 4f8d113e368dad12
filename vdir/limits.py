"""The size limits that keep a huge or hostile input a one-line error.

A program is refused, before anything is expanded, if it expands to more
than ``max_micro_ops`` micro-ops; the code and micro-op names of a
``vdir.encoded_program`` read back from text are inflated only up to
``max_code_bytes`` and ``max_names_bytes`` (a compression bomb is an error,
not a machine out of memory). :class:`Limits` owns the three values, their
defaults (:data:`MAX_MICRO_OPS`, :data:`MAX_CODE_BYTES`,
:data:`MAX_NAMES_BYTES`) and their check.

The limits in effect are read where the checks are (the graph's expansion,
:func:`vdir.isa.decode_code` and :func:`vdir.isa.decode_text`, and so the
encoded program's verifier) from :func:`current_limits`; a caller sets them
for a stretch of work with :func:`limits_in_effect`. The tools do so from
their options (``--max-micro-ops``, ``--max-code-bytes``,
``--max-names-bytes``, see :data:`OPTIONS`); ``vdir.compile`` and
:func:`vdir.transforms.pipeline.compile_to_encoded` take ``max_micro_ops``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from vdir.diagnostics import VdirError
from vdir.isa import INSTR_BYTES

#: the most micro-ops one program may expand to by default. Compile time and
#: memory grow linearly with the expanded program, at about 40-100 us and 2 KB per
#: micro-op through ``vdir-pipeline`` on a 2-core machine, so this many compile
#: in about 20-50 s and 1.1 GB (a repeat of 250,000 trips of a load and a
#: store: 20 s, 1.08 GB): six times the 16-layer MLP stack (84k), four times
#: the 1B decode step (122k). The Llama-3.1-8B step (733k) and
#: anything larger need the limit raised (``--max-micro-ops``,
#: ``max_micro_ops=``), as would a repeat of a million trips (2M micro-ops: 2
#: minutes and 4.5 GB); beyond it, a program is refused before anything is
#: expanded, whatever its size.
MAX_MICRO_OPS = 500_000
#: bytes an encoded program's code holds beside its instructions (header, queue and buffer tables), at most
CODE_TABLE_BYTES = 1 << 24


def code_bytes_for(micro_ops: int) -> int:
    """The code bytes that ``micro_ops`` micro-ops encode to: one instruction each, and the tables."""
    return micro_ops * INSTR_BYTES + CODE_TABLE_BYTES


#: the most bytes an encoded program's code may decompress to by default: the
#: instructions of :data:`MAX_MICRO_OPS` micro-ops and their tables
MAX_CODE_BYTES = code_bytes_for(MAX_MICRO_OPS)
#: the most bytes an encoded program's micro-op names may decompress to by default
MAX_NAMES_BYTES = 1 << 28

#: the most elements a builtin dense attribute (``dense<...> : tensor<...>``) of a parsed file may hold:
#: vdir's dialects use none, and xDSL's parser expands a splat into one Python value per element (4
#: million take 9 s), so a larger one is refused when its type is read, before anything is expanded
MAX_DENSE_ELEMENTS = 1 << 20

#: each limit's command-line option (the tools' spelling; the field is the Python one)
OPTIONS = {
    "max_micro_ops": "--max-micro-ops",
    "max_code_bytes": "--max-code-bytes",
    "max_names_bytes": "--max-names-bytes",
}


class LimitError(VdirError, ValueError):
    """A limit is not a positive integer; the message names it."""


@dataclass(frozen=True)
class Limits:
    """The size limits in effect; each is a positive integer."""

    max_micro_ops: int = MAX_MICRO_OPS
    """The most micro-ops one program may expand to (its repeats' iterations counted)."""

    max_code_bytes: int = MAX_CODE_BYTES
    """The most bytes an encoded program's code may decompress to."""

    max_names_bytes: int = MAX_NAMES_BYTES
    """The most bytes an encoded program's micro-op names may decompress to."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise LimitError(f"{f.name} must be a positive integer, got {value!r}")

    def replace(self, **changes: int | None) -> Limits:
        """These limits with the given ones changed (a None leaves its limit as it is)."""
        given = {name: value for name, value in changes.items() if value is not None}
        return dataclasses.replace(self, **given) if given else self


#: the limits in effect where no :func:`limits_in_effect` sets others
DEFAULT_LIMITS = Limits()

_CURRENT: ContextVar[Limits] = ContextVar("vdir_limits", default=DEFAULT_LIMITS)


def current_limits() -> Limits:
    """The limits in effect: those of the innermost :func:`limits_in_effect`, else the defaults."""
    return _CURRENT.get()


@contextmanager
def limits_in_effect(limits: Limits) -> Iterator[Limits]:
    """Put ``limits`` in effect for the ``with`` block (for this thread or task only)."""
    token = _CURRENT.set(limits)
    try:
        yield limits
    finally:
        _CURRENT.reset(token)
