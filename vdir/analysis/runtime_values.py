"""Index values known only at run time, as the analysis carries them.

A program's offsets and conditions are affine in its induction variables
(compile-time: expansion gives them numbers) and in at most one *runtime
value*: a launch-time scalar argument, or an ``i32`` element of a buffer
read with ``vdir.read``. Expansion evaluates every index value to either an
``int`` or a :class:`RuntimeIndex` ``coeff * source + const``; the encoder
writes the source, the coefficient and the constant into the instruction,
and the engines finish the arithmetic when the micro-op starts.

This module owns those two facts (:class:`RuntimeSource`,
:class:`RuntimeIndex`) and the range arithmetic on them; it raises
:class:`RuntimeValueError` for what the ISA cannot express, which expansion
turns into a located error.
"""

from __future__ import annotations

from dataclasses import dataclass

from vdir.diagnostics import VdirError
from vdir.dialects.vdir import INT32_MAX, INT32_MIN


class RuntimeValueError(VdirError, ValueError):
    """An index expression the micro-op ISA cannot evaluate at run time."""


@dataclass(frozen=True)
class RuntimeSource:
    """Where a runtime value lives.

    ``buffer`` is -1 for a launch-time scalar (``index`` is then its slot in
    the program's scalar list) or a buffer argument (``index`` is the
    element's position ``row * cols + col`` in that ``i32`` buffer).
    ``lo``/``hi`` bound the value: the declared half-open range of a scalar,
    the whole 32-bit range for a value read from memory.
    """

    buffer: int
    index: int
    name: str
    lo: int = INT32_MIN
    hi: int = INT32_MAX + 1

    @property
    def is_scalar(self) -> bool:
        """True for a launch-time scalar, False for a value read from a buffer."""
        return self.buffer < 0


@dataclass(frozen=True)
class RuntimeIndex:
    """``coeff * source + const``: an index value that depends on one runtime value."""

    source: RuntimeSource
    coeff: int = 1
    const: int = 0

    def _combine(self, other: object, sign: int) -> "RuntimeIndex | int":
        if isinstance(other, int):
            return RuntimeIndex(self.source, self.coeff, self.const + sign * other)
        if isinstance(other, RuntimeIndex):
            if other.source != self.source:
                raise RuntimeValueError(
                    f"an index may depend on one runtime value, not on both {self.source.name} "
                    f"and {other.source.name}"
                )
            coeff = self.coeff + sign * other.coeff
            const = self.const + sign * other.const
            return RuntimeIndex(self.source, coeff, const) if coeff else const
        return NotImplemented

    def __add__(self, other: object) -> "RuntimeIndex | int":
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other: object) -> "RuntimeIndex | int":
        return self._combine(other, -1)

    def __neg__(self) -> "RuntimeIndex":
        return RuntimeIndex(self.source, -self.coeff, -self.const)

    def __mul__(self, other: object) -> "RuntimeIndex | int":
        if isinstance(other, RuntimeIndex):
            raise RuntimeValueError(f"runtime value {self.source.name} is multiplied by a runtime value")
        if not isinstance(other, int):
            return NotImplemented
        return RuntimeIndex(self.source, self.coeff * other, self.const * other) if other else 0

    __rmul__ = __mul__

    def __floordiv__(self, other: object) -> "RuntimeIndex":
        raise RuntimeValueError(f"runtime value {self.source.name} can only be scaled and offset, not divided")

    __mod__ = __rfloordiv__ = __rmod__ = __floordiv__

    def value_range(self) -> tuple[int, int]:
        """[lo, hi] (inclusive) of the index over the source's range."""
        a = self.coeff * self.source.lo + self.const
        b = self.coeff * (self.source.hi - 1) + self.const
        return min(a, b), max(a, b)

    def __str__(self) -> str:
        term = self.source.name if self.coeff == 1 else f"{self.coeff} * {self.source.name}"
        return f"{term} + {self.const}" if self.const > 0 else f"{term} - {-self.const}" if self.const else term


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for a positive ``b``."""
    return -(-a // b)


def source_values_keeping(index: RuntimeIndex, lo: int, hi: int) -> tuple[int, int]:
    """The source values ``v`` (inclusive range) for which ``lo <= coeff * v + const <= hi``.

    Intersected with the source's own range; ``(1, 0)`` (empty) when none.
    """
    a, c = index.coeff, index.const
    if a > 0:
        vmin, vmax = ceil_div(lo - c, a), (hi - c) // a
    else:
        vmin, vmax = ceil_div(c - hi, -a), (c - lo) // -a
    return max(vmin, index.source.lo), min(vmax, index.source.hi - 1)


@dataclass(frozen=True)
class Condition:
    """A micro-op's runtime condition: it runs iff ``coeff * source + const >= 0``."""

    source: RuntimeSource
    coeff: int
    const: int

    @classmethod
    def of(cls, value: RuntimeIndex, op: str, bound: int) -> "Condition":
        """The condition ``value >= bound`` (op ``ge``) or ``value < bound`` (op ``lt``)."""
        if op == "ge":
            return cls(value.source, value.coeff, value.const - bound)
        return cls(value.source, -value.coeff, bound - 1 - value.const)

    def holds(self, v: int) -> bool:
        """Whether a micro-op with this condition runs when its source holds ``v``."""
        return self.coeff * v + self.const >= 0

    def as_index(self) -> RuntimeIndex:
        """``coeff * source + const``, the value compared with 0."""
        return RuntimeIndex(self.source, self.coeff, self.const)

    def __str__(self) -> str:
        return f"{self.as_index()} >= 0"
