"""Body of the ``rope`` family: rotary position embedding, rotate-half form.

``y[h, c] = x[h, c] * cos[c] + r * sin[c]`` with ``r = -x[h, c + D/2]`` in
the first half of a row and ``x[h, c - D/2]`` in the second. Threads of the
compute group take elements round-robin; the two products and their sum are
rounded to f32 in that order (as ``vdir.families.builtin.rope_f32``), then
once to bf16.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from vdir import isa
from vdir.families import DTYPE_BYTES
from vdir.lowering import families as F


def rope(cc: "F.ComputeCtx") -> None:
    """Rotate each of the ``p0`` rows (heads) of ``x`` by the position's ``cos`` / ``sin`` rows."""
    F.per_dtype(cc, isa.ROPE_TABLES_F32, lambda dtype: _rope_loop(cc, dtype), "rope_f32", "rope_done")


def _rope_loop(cc: "F.ComputeCtx", table_dtype: str) -> None:
    """The element loop for ``table_dtype`` cos / sin rows."""
    b = cc.b
    d, half = cc.p1, b.i("shr.u32", "u32", cc.p1, 1)
    n = b.i("mul.lo.u32", "u32", cc.p0, d)
    x_bytes, t_bytes = DTYPE_BYTES["bf16"], DTYPE_BYTES[table_dtype]

    def body(i: SSAValue) -> None:
        row = b.i("div.u32", "u32", i, d)
        col = b.i("sub.u32", "u32", i, b.i("mul.lo.u32", "u32", row, d))
        first = b.setp("lt.u32", col, half)
        partner = b.i("selp.u32", "u32", b.i("add.u32", "u32", i, half), b.i("sub.u32", "u32", i, half), first)
        x = F.load_elem(b, b.i("mad.lo.u32", "u32", i, x_bytes, cc.ins[0]), "bf16")
        other = F.load_elem(b, b.i("mad.lo.u32", "u32", partner, x_bytes, cc.ins[0]), "bf16")
        rotated = b.i("selp.f32", "f32", b.i("neg.f32", "f32", other), other, first)
        cos = F.load_elem(b, b.i("mad.lo.u32", "u32", col, t_bytes, cc.ins[1]), table_dtype)
        sin = F.load_elem(b, b.i("mad.lo.u32", "u32", col, t_bytes, cc.ins[2]), table_dtype)
        y = b.i("add.rn.f32", "f32", b.i("mul.rn.f32", "f32", x, cos), b.i("mul.rn.f32", "f32", rotated, sin))
        F.store_elem(b, cc.out, b.i("mul.lo.u32", "u32", i, x_bytes), y, "bf16")

    b.for_range(cc.ct, n, cc.nthreads, body, f"rope_{table_dtype}")
