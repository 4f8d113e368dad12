"""Body of the ``sum_rows`` family: the combine step of a reduction across SMs.

Each thread of the compute group owns the columns ``c = thread, thread +
threads, ...`` of the ``P x C`` f32 tile of partial sums and adds its rows in
order, row 0 first (starting from +0.0, one ``add.rn.f32`` per row). No
shuffles, no shared scratch and no atomics: the sum of a column is the same
sequence of roundings whatever the group size, so the result is bit-identical
run after run and equals the numpy semantics (``vdir.families.builtin.sum_rows_f32``).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from vdir import isa
from vdir.families import DTYPE_BYTES
from vdir.lowering import families as F


def sum_rows(cc: "F.ComputeCtx") -> None:
    """y[0, c] = sum over p = 0..P-1 of partials[p, c], in that order (P in p0, C in p1).

    The result is f32, or bf16 rounded once at the end, as p2's
    ``isa.SUM_ROWS_OUT_F32`` flag says.
    """
    b = cc.b
    rows, cols = cc.p0, cc.p1
    f32_bytes, bf16_bytes = DTYPE_BYTES["f32"], DTYPE_BYTES["bf16"]
    row_bytes = b.i("mul.lo.u32", "u32", cols, f32_bytes)
    out_f32 = b.setp("ne.u32", b.i("and.b32", "b32", cc.p2, isa.SUM_ROWS_OUT_F32), 0)

    def column(c: SSAValue) -> None:
        total = b.var("f32", 0.0)
        addr = b.i("mad.lo.u32", "u32", c, f32_bytes, cc.ins[0])

        def add_row(_: SSAValue) -> None:
            b.i("add.rn.f32", "f32", total, b.ld("ld.shared.f32", "f32", addr), dst=total)
            b.i("add.u32", "u32", addr, row_bytes, dst=addr)

        b.for_range(0, rows, 1, add_row, "sum_rows_row")
        b.st("st.shared.f32", b.i("mad.lo.u32", "u32", c, f32_bytes, cc.out), 0, total, guard=out_f32)
        b.st("st.shared.b16", b.i("mad.lo.u32", "u32", c, bf16_bytes, cc.out), 0, F.to_bf16(b, total),
             guard=out_f32, neg=True)

    b.for_range(cc.ct, cols, cc.nthreads, column, "sum_rows")
