"""Bodies of the elementwise families: ``rmsnorm``, ``silu_mul``, ``add``.

Threads of the compute group take elements round-robin (2-byte accesses:
these tiles are small next to the gemv weights).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from vdir.lowering import families as F
from vdir.lowering.builder import PtxBuilder


def _binary(cc: "F.ComputeCtx", op: Callable[[PtxBuilder, SSAValue, SSAValue], SSAValue], hint: str) -> None:
    b = cc.b
    n = b.i("mul.lo.u32", "u32", cc.p0, cc.p1)

    def body(i: SSAValue) -> None:
        o = b.i("mul.lo.u32", "u32", i, 2)
        a = F.load_bf16(b, b.i("add.u32", "u32", cc.ins[0], o))
        c = F.load_bf16(b, b.i("add.u32", "u32", cc.ins[1], o))
        r = F.to_bf16(b, op(b, a, c))
        b.st("st.shared.b16", b.i("add.u32", "u32", cc.out, o), 0, r)

    b.for_range(cc.ct, n, cc.nthreads, body, hint)


def silu_mul(cc: "F.ComputeCtx") -> None:
    """y = silu(gate) * up over an RxC tile."""
    _binary(cc, lambda b, g, u: b.i("mul.rn.f32", "f32", F.silu(b, g), u), "silu_mul")


def add(cc: "F.ComputeCtx") -> None:
    """y = lhs + rhs over an RxC tile."""
    _binary(cc, lambda b, x, y: b.i("add.rn.f32", "f32", x, y), "add")


def rmsnorm(cc: "F.ComputeCtx") -> None:
    """y = x * (1/sqrt(mean(x^2) + eps)) * weight over a 1xN tile (N in p1)."""
    b = cc.b
    n = cc.p1
    inv = F.rms_inv(cc, cc.ins[0], n)

    def body(i: SSAValue) -> None:
        o = b.i("mul.lo.u32", "u32", i, 2)
        x = F.load_bf16(b, b.i("add.u32", "u32", cc.ins[0], o))
        g = F.load_bf16(b, b.i("add.u32", "u32", cc.ins[1], o))
        t = b.i("mul.rn.f32", "f32", x, inv)
        t = b.i("mul.rn.f32", "f32", t, g)
        b.st("st.shared.b16", b.i("add.u32", "u32", cc.out, o), 0, F.to_bf16(b, t))

    b.for_range(cc.ct, n, cc.nthreads, body, "rmsnorm")
