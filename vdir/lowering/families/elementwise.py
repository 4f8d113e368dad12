"""Bodies of the elementwise families: ``rmsnorm``, ``silu_mul``, ``add``, ``fixed_add``, ``zeros``, ``slice``.

Threads of the compute group take elements round-robin (2- or 4-byte
accesses: these tiles are small next to the gemv weights).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from vdir import isa
from vdir.families import DTYPE_BYTES, FIXED_SCALE
from vdir.families.builtin import ZEROS_DTYPES
from vdir.lowering import families as F
from vdir.lowering import layout as L
from vdir.lowering.builder import PtxBuilder

#: the (operand, result) dtypes of add other than bf16 -> bf16, by their flags
#: in p2; each gets its own loop, so the bf16 loop is the one without flags
_ADD_FORMS = {
    isa.ADD_OUT_F32: ("bf16", "f32"),
    isa.ADD_IN_F32: ("f32", "bf16"),
    isa.ADD_IN_F32 | isa.ADD_OUT_F32: ("f32", "f32"),
}


def _binary(cc: "F.ComputeCtx", op: Callable[[PtxBuilder, SSAValue, SSAValue], SSAValue], hint: str,
            in_dtype: str = "bf16", out_dtype: str = "bf16") -> None:
    b = cc.b
    n = b.i("mul.lo.u32", "u32", cc.p0, cc.p1)
    in_bytes, out_bytes = DTYPE_BYTES[in_dtype], DTYPE_BYTES[out_dtype]

    def body(i: SSAValue) -> None:
        o = b.i("mul.lo.u32", "u32", i, in_bytes)
        a = F.load_elem(b, b.i("add.u32", "u32", cc.ins[0], o), in_dtype)
        c = F.load_elem(b, b.i("add.u32", "u32", cc.ins[1], o), in_dtype)
        r = op(b, a, c)
        F.store_elem(b, cc.out, o if out_bytes == in_bytes else b.i("mul.lo.u32", "u32", i, out_bytes), r, out_dtype)

    b.for_range(cc.ct, n, cc.nthreads, body, hint)


def silu_mul(cc: "F.ComputeCtx") -> None:
    """y = silu(gate) * up over an RxC tile."""
    _binary(cc, lambda b, g, u: b.i("mul.rn.f32", "f32", F.silu(b, g), u), "silu_mul")


def add(cc: "F.ComputeCtx") -> None:
    """y = lhs + rhs over an RxC tile; p2's flags pick f32 operands and/or result.

    The flags select one of four loops (branches taken uniformly by the
    group); the bf16 loop, the common case, comes first, behind a single
    test of p2.
    """
    b = cc.b
    done, wide = b.new_label("add_done"), b.new_label("add_wide")
    forms = {flags: b.new_label(f"add_{src}_{dst}") for flags, (src, dst) in _ADD_FORMS.items()}
    form = b.i("and.b32", "b32", cc.p2, isa.ADD_IN_F32 | isa.ADD_OUT_F32)  # as the decoder reads p2
    b.bra(wide, b.setp("ne.u32", form, 0))
    _add_loop(cc, "bf16", "bf16")
    b.bra(done)
    b.place(wide)
    for flags, label in forms.items():
        b.bra(label, b.setp("eq.u32", form, flags))
    for flags, label in forms.items():
        b.place(label)
        _add_loop(cc, *_ADD_FORMS[flags])
        b.bra(done)
    b.place(done)


def _add_loop(cc: "F.ComputeCtx", in_dtype: str, out_dtype: str) -> None:
    hint = "add" if (in_dtype, out_dtype) == ("bf16", "bf16") else f"add_{in_dtype}_{out_dtype}_loop"
    _binary(cc, lambda b, x, y: b.i("add.rn.f32", "f32", x, y), hint, in_dtype, out_dtype)


#: 1 / FIXED_SCALE: a fixed-point value rounded to f32 times it is its f32 value (exact scaling)
_FIXED_UNIT = 1.0 / FIXED_SCALE


def fixed_add(cc: "F.ComputeCtx") -> None:
    """y = f32(sum) * 2^-32 + residual over an RxC tile: ``sum`` i64 fixed point (rounded once to f32 by
    ``cvt.rn.f32.s64``, then scaled exactly), ``residual`` bf16, the result rounded once to bf16."""
    b = cc.b
    n = b.i("mul.lo.u32", "u32", cc.p0, cc.p1)
    i64_bytes, bf16_bytes = DTYPE_BYTES["i64"], DTYPE_BYTES["bf16"]

    def body(i: SSAValue) -> None:
        total = b.ld("ld.shared.s64", "s64", b.i("mad.lo.u32", "u32", i, i64_bytes, cc.ins[0]))
        value = b.i("mul.rn.f32", "f32", b.i("cvt.rn.f32.s64", "f32", total), _FIXED_UNIT)
        o = b.i("mul.lo.u32", "u32", i, bf16_bytes)
        residual = F.load_bf16(b, b.i("add.u32", "u32", cc.ins[1], o))
        F.store_elem(b, cc.out, o, b.i("add.rn.f32", "f32", value, residual), "bf16")

    b.for_range(cc.ct, n, cc.nthreads, body, "fixed_add")


#: each ``zeros`` result dtype's element size in 2-byte halves, 4 bits a dtype in ``ZEROS_DTYPES`` order
_ZEROS_HALVES = sum((DTYPE_BYTES[d] // 2) << (4 * i) for i, d in enumerate(ZEROS_DTYPES))


def zeros(cc: "F.ComputeCtx") -> None:
    """y = 0 over an RxC tile of any dtype (p2: its index in ``ZEROS_DTYPES``), 2 bytes a store: every
    element size is a whole number of them."""
    b = cc.b
    halves = b.i("and.b32", "b32", b.i("shr.u32", "u32", _ZEROS_HALVES, b.i("shl.b32", "b32", cc.p2, 2)), 15)
    n = b.i("mul.lo.u32", "u32", b.i("mul.lo.u32", "u32", cc.p0, cc.p1), halves)
    b.for_range(cc.ct, n, cc.nthreads,
                lambda i: b.st("st.shared.b16", b.i("mad.lo.u32", "u32", i, 2, cc.out), 0, 0), "zeros")


def rmsnorm(cc: "F.ComputeCtx") -> None:
    """y = x * (1/sqrt(mean(x^2) + eps)) * weight over a 1xN tile (N in p1)."""
    _rmsnorm_row(cc, cc.ins[0], cc.out, cc.p1, "rmsnorm")


def _rmsnorm_row(cc: "F.ComputeCtx", x_row: SSAValue, out_row: SSAValue, n: SSAValue, hint: str) -> None:
    """One row of N bf16 values normalised by its own mean square, times the weight row ``ins[1]``."""
    b = cc.b
    inv = F.rms_inv(cc, x_row, n)

    def body(i: SSAValue) -> None:
        o = b.i("mul.lo.u32", "u32", i, 2)
        x = F.load_bf16(b, b.i("add.u32", "u32", x_row, o))
        g = F.load_bf16(b, b.i("add.u32", "u32", cc.ins[1], o))
        t = b.i("mul.rn.f32", "f32", x, inv)
        t = b.i("mul.rn.f32", "f32", t, g)
        b.st("st.shared.b16", b.i("add.u32", "u32", out_row, o), 0, F.to_bf16(b, t))

    b.for_range(cc.ct, n, cc.nthreads, body, hint)


def rmsnorm_rows(cc: "F.ComputeCtx") -> None:
    """Each of the p0 rows (heads) of an RxN tile normalised on its own (Qwen3's QK-norm).

    Rows one after the other, each as ``rmsnorm``; a group barrier after a
    row keeps the next row's reduction from overwriting the scratch words
    the slowest warp may still be reading.
    """
    b = cc.b
    row_bytes = b.i("mul.lo.u32", "u32", cc.p1, 2)

    def row(r: SSAValue) -> None:
        offset = b.i("mul.lo.u32", "u32", r, row_bytes)
        x_row = b.i("add.u32", "u32", cc.ins[0], offset)
        _rmsnorm_row(cc, x_row, b.i("add.u32", "u32", cc.out, offset), cc.p1, "rmsnorm_rows_col")
        b.raw("barrier.sync", "%d, %d" % (L.COMPUTE_BARRIER, cc.nthreads))

    b.for_range(0, cc.p0, 1, row, "rmsnorm_rows")


def slice_columns(cc: "F.ComputeCtx") -> None:
    """y[r, c] = x[r, start + c] over the ``R x width`` result (``p0`` = R, ``p1`` = K, ``p2`` = width,
    ``p3`` = start): 2-byte copies, the bits as they are."""
    b = cc.b
    width = cc.p2
    n = b.i("mul.lo.u32", "u32", cc.p0, width)

    def body(i: SSAValue) -> None:
        r = b.i("div.u32", "u32", i, width)
        c = b.i("sub.u32", "u32", i, b.i("mul.lo.u32", "u32", r, width))
        src = b.i("add.u32", "u32", b.i("mad.lo.u32", "u32", r, cc.p1, cc.p3), c)
        v = b.ld("ld.shared.b16", "b16", b.i("mad.lo.u32", "u32", src, 2, cc.ins[0]))
        b.st("st.shared.b16", b.i("mad.lo.u32", "u32", i, 2, cc.out), 0, v)

    b.for_range(cc.ct, n, cc.nthreads, body, "slice")

