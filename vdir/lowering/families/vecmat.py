"""Body of the ``vecmat`` family: ``y[1, N] = x[1, K] . w[K, N]`` (+ acc), f32 or i64 fixed point.

The partial of a split-K projection over the rows of its weights: with the
weights stored transposed, an SM that made K elements of x multiplies them by
K whole rows, and every column of the result is a sum over those rows.

Each thread of the compute group owns the 8-column groups ``g = thread,
thread + threads, ...`` of the result (16 bytes of every weight row, 32 bytes
of the result). Its eight f32 totals start at the accumulator's (or +0.0) and
take the rows' products in order, row 0 first, one ``fma`` each: no
shuffles, no shared scratch, no barrier. A bf16 product is exact in f32
(8-bit significands), so each ``fma`` rounds as numpy's f32 ``total + x * w``
does (:func:`vdir.families.builtin.vecmat_f32`, away from f32's underflow and
overflow), and the result does not depend on the group's size. A warp reads
512 contiguous bytes of a weight row per load (no bank conflicts) and x's
element k as one broadcast 2-byte load. A fixed-point result
(``isa.VECMAT_OUT_FIXED``) is each total times 2^32 rounded to the nearest
integer (:func:`vdir.families.core.to_fixed`), stored as i64.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from vdir import isa
from vdir.families import DTYPE_BYTES, FIXED_SCALE
from vdir.lowering import families as F

#: result columns a thread owns at a time: one 16-byte chunk of a weight row
GROUP = 8


def vecmat(cc: "F.ComputeCtx") -> None:
    """y[0, c] = acc[0, c] (or +0.0) + x[0, 0] w[0, c] + ... + x[0, K-1] w[K-1, c], in that order (K in p0,
    N in p1; the accumulator, ins[2], where p2 has ``isa.VECMAT_HAS_ACC``)."""
    b = cc.b
    rows, cols = cc.p0, cc.p1
    f32_bytes, bf16_bytes = DTYPE_BYTES["f32"], DTYPE_BYTES["bf16"]
    i64_bytes = DTYPE_BYTES["i64"]
    has_acc = b.setp("ne.u32", b.i("and.b32", "b32", cc.p2, isa.VECMAT_HAS_ACC), 0)
    out_fixed = b.setp("ne.u32", b.i("and.b32", "b32", cc.p2, isa.VECMAT_OUT_FIXED), 0)
    row_bytes = b.i("mul.lo.u32", "u32", cols, bf16_bytes)
    groups = b.i("shr.u32", "u32", cols, GROUP.bit_length() - 1)

    def group(g: SSAValue) -> None:
        totals = [b.var("f32", 0.0) for _ in range(GROUP)]
        acc = b.i("mad.lo.u32", "u32", g, GROUP * f32_bytes, cc.ins[2])
        for k, total in enumerate(totals):
            b.ld("ld.shared.f32", "f32", acc, k * f32_bytes, dst=total, guard=has_acc)
        w = b.var("u32", b.i("mad.lo.u32", "u32", g, GROUP * bf16_bytes, cc.ins[1]))
        x = b.var("u32", cc.ins[0])

        def row(_: SSAValue) -> None:
            xk = F.load_bf16(b, x)
            for q, word in enumerate(b.ld_v4("ld.shared.v4.b32", "b32", w)):
                for half, wv in enumerate(F.bf16_pair(b, word)):
                    b.i("fma.rn.f32", "f32", wv, xk, totals[2 * q + half], dst=totals[2 * q + half])
            b.i("add.u32", "u32", w, row_bytes, dst=w)
            b.i("add.u32", "u32", x, bf16_bytes, dst=x)

        b.for_range(0, rows, 1, row, "vecmat_row")
        fixed, stored = b.new_label("vecmat_fixed"), b.new_label("vecmat_stored")
        b.bra(fixed, out_fixed, uniform=True)
        out = b.i("mad.lo.u32", "u32", g, GROUP * f32_bytes, cc.out)
        b.st_v4("st.shared.v4.f32", out, 0, totals[:4])
        b.st_v4("st.shared.v4.f32", out, 4 * f32_bytes, totals[4:])
        b.bra(stored, uniform=True)
        b.place(fixed)
        out = b.i("mad.lo.u32", "u32", g, GROUP * i64_bytes, cc.out)
        # exact scaling below f32's overflow; cvt.rni saturates beyond it and reads NaN as 0 (to_fixed)
        words = [b.i("cvt.rni.s64.f32", "s64", b.i("mul.rn.f32", "f32", t, FIXED_SCALE)) for t in totals]
        for pair in range(GROUP // 2):
            b.raw("st.shared.v2.b64", "[{0}+%d], {{{1}, {2}}}" % (pair * 2 * i64_bytes),
                  ins=[out, words[2 * pair], words[2 * pair + 1]])
        b.place(stored)

    b.for_range(cc.ct, groups, cc.nthreads, group, "vecmat")
