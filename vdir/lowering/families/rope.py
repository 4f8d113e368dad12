"""Bodies of the ``rope`` family, rotary position embedding in rotate-half form, and of ``rmsnorm_rope``.

``y[h, c] = x[h, c] * cos[c] + r * sin[c]`` with ``r = -x[h, c + D/2]`` in
the first half of a row and ``x[h, c - D/2]`` in the second. Threads of the
compute group take elements round-robin; the two products and their sum are
rounded to f32 in that order (as ``vdir.families.builtin.rope_f32``), then
once to bf16.

``rmsnorm_rope`` (Qwen3's QK-norm, then RoPE, as one micro-op: the compute
engine's fixed cost once) writes ``rmsnorm_rows``' bf16 result into its
result tile and rotates it there in place, each thread taking both elements
of a pair ``(c, c + D/2)``, so that no thread reads an element another
writes; the same arithmetic as the two families one after the other.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from vdir import isa
from vdir.families import DTYPE_BYTES
from vdir.lowering import families as F
from vdir.lowering.families.elementwise import rmsnorm_rows


def rope(cc: "F.ComputeCtx") -> None:
    """Rotate each of the ``p0`` rows (heads) of ``x`` by the position's ``cos`` / ``sin`` rows."""
    F.per_dtype(cc, isa.ROPE_TABLES_F32, lambda dtype: _rope_loop(cc, dtype), "rope_f32", "rope_done")


def _rope_loop(cc: "F.ComputeCtx", table_dtype: str) -> None:
    """The element loop for ``table_dtype`` cos / sin rows."""
    b = cc.b
    d, half = cc.p1, b.i("shr.u32", "u32", cc.p1, 1)
    x_bytes, t_bytes = DTYPE_BYTES["bf16"], DTYPE_BYTES[table_dtype]

    def element(i: SSAValue, _row: SSAValue, col: SSAValue) -> None:
        first = b.setp("lt.u32", col, half)
        partner = b.i("selp.u32", "u32", b.i("add.u32", "u32", i, half), b.i("sub.u32", "u32", i, half), first)
        x = F.load_elem(b, b.i("mad.lo.u32", "u32", i, x_bytes, cc.ins[0]), "bf16")
        other = F.load_elem(b, b.i("mad.lo.u32", "u32", partner, x_bytes, cc.ins[0]), "bf16")
        rotated = b.i("selp.f32", "f32", b.i("neg.f32", "f32", other), other, first)
        cos = F.load_elem(b, b.i("mad.lo.u32", "u32", col, t_bytes, cc.ins[1]), table_dtype)
        sin = F.load_elem(b, b.i("mad.lo.u32", "u32", col, t_bytes, cc.ins[2]), table_dtype)
        y = b.i("add.rn.f32", "f32", b.i("mul.rn.f32", "f32", x, cos), b.i("mul.rn.f32", "f32", rotated, sin))
        F.store_elem(b, cc.out, b.i("mul.lo.u32", "u32", i, x_bytes), y, "bf16")

    _by_row_and_column(cc, d, element, f"rope_{table_dtype}")


def _by_row_and_column(cc: "F.ComputeCtx", width: SSAValue, emit: Callable[[SSAValue, SSAValue, SSAValue], None],
                       hint: str) -> None:
    """``emit(i, row, col)`` for every ``i < p0 * width``, the group's threads taking them round-robin:
    ``row = i / width``, ``col = i - row * width``."""
    b = cc.b
    n = b.i("mul.lo.u32", "u32", cc.p0, width)

    def body(i: SSAValue) -> None:
        row = b.i("div.u32", "u32", i, width)
        emit(i, row, b.i("sub.u32", "u32", i, b.i("mul.lo.u32", "u32", row, width)))

    b.for_range(cc.ct, n, cc.nthreads, body, hint)


def rmsnorm_rope(cc: "F.ComputeCtx") -> None:
    """``rope(rmsnorm_rows(x, weight) {eps}, cos, sin)`` over the ``p0`` heads of ``x`` (``ins``: x, weight,
    cos, sin), in place in the result tile after the norm's closing group barrier."""
    rmsnorm_rows(cc)
    F.per_dtype(cc, isa.ROPE_TABLES_F32, lambda dtype: _rope_pairs_in_place(cc, dtype), "rmsnorm_rope_f32",
                "rmsnorm_rope_done")


def _rope_pairs_in_place(cc: "F.ComputeCtx", table_dtype: str) -> None:
    """Rotate the result tile's heads by ``ins[2]`` / ``ins[3]``, one pair ``(c, c + D/2)`` per thread a trip."""
    b = cc.b
    d, half = cc.p1, b.i("shr.u32", "u32", cc.p1, 1)
    x_bytes, t_bytes = DTYPE_BYTES["bf16"], DTYPE_BYTES[table_dtype]

    def pair(_j: SSAValue, row: SSAValue, col: SSAValue) -> None:
        lo_at = b.i("mul.lo.u32", "u32", b.i("mad.lo.u32", "u32", row, d, col), x_bytes)
        hi_at = b.i("mad.lo.u32", "u32", half, x_bytes, lo_at)
        lo = F.load_elem(b, b.i("add.u32", "u32", cc.out, lo_at), "bf16")
        hi = F.load_elem(b, b.i("add.u32", "u32", cc.out, hi_at), "bf16")
        tables = []
        for c in (col, b.i("add.u32", "u32", col, half)):
            tables.append([F.load_elem(b, b.i("mad.lo.u32", "u32", c, t_bytes, cc.ins[k]), table_dtype) for k in (2, 3)])
        (cos_lo, sin_lo), (cos_hi, sin_hi) = tables
        y_lo = b.i("add.rn.f32", "f32", b.i("mul.rn.f32", "f32", lo, cos_lo),
                   b.i("mul.rn.f32", "f32", b.i("neg.f32", "f32", hi), sin_lo))
        y_hi = b.i("add.rn.f32", "f32", b.i("mul.rn.f32", "f32", hi, cos_hi), b.i("mul.rn.f32", "f32", lo, sin_hi))
        F.store_elem(b, cc.out, lo_at, y_lo, "bf16")
        F.store_elem(b, cc.out, hi_at, y_hi, "bf16")

    _by_row_and_column(cc, half, pair, f"rmsnorm_rope_{table_dtype}")
