"""PTX bodies of the compute op families.

A body runs on every thread of the compute group between the two group
barriers of the compute engine (``vdir/lowering/kernel/compute_engine.py``). It reads its
operands from the tile arena at the offsets the instruction names and writes
its result tile; the numerics follow ``vdir/families`` exactly in structure:
fp32 arithmetic, one rounding to the output dtype, and the bf16 rounding of
the intermediate tile in the fused families.

Each family object names its body (``Family.ptx_body``, a lazy
``"module:function"`` reference for the built-in ones, which live in
``gemv.py``, ``elementwise.py``, ``reduce.py``, ``rope.py``, ``attention.py`` and ``argmax.py``);
:func:`body_of` looks it up by opcode.

A family may also name a group state (``Family.ptx_state``): registers the
compute group keeps from one of its micro-ops to the next, made once before
the group's loop (:func:`group_states`) and found by the body in its context
(:meth:`ComputeCtx.state`). The gemv bodies keep the row split of the last
gemv there (``gemv.split_cache``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from xdsl.ir import SSAValue

from vdir.families import family_by_opcode
from vdir.lowering import layout as L  # noqa: F401  (bodies use F.L)
from vdir.lowering.builder import PtxBuilder

#: group-state emitter -> the state it made (:func:`group_states`)
GroupStates = Mapping[Callable[[Any], Any], Any]

FULL = 0xFFFFFFFF
LOG2E = 1.4426950408889634


@dataclass
class ComputeCtx:
    """What a family body gets: thread ids in the group and the decoded operands."""

    c: object  # vdir.lowering.kernel.Ctx
    ct: SSAValue  # thread index in the compute group
    cw: SSAValue  # warp index in the compute group
    nthreads: int
    out: SSAValue  # u32 shared address of the result tile
    ins: list[SSAValue]  # u32 shared addresses of the inputs
    # the family's parameter words (vdir.families.ParamWords)
    p0: SSAValue
    p1: SSAValue
    p2: SSAValue
    p3: SSAValue
    f0: SSAValue  # f32
    #: group-state emitter -> the state it made before the group's loop (:func:`group_states`)
    states: GroupStates = field(default_factory=dict)

    def state(self, emitter: Callable[[Any], Any]) -> Any:
        """The group state ``emitter`` made for this kernel, or None where the group made none (a body
        emitted outside a compute group's loop, such as a test's)."""
        return self.states.get(emitter)

    @property
    def b(self) -> PtxBuilder:
        """The kernel's builder."""
        return self.c.b  # type: ignore[attr-defined]

    @property
    def lane(self) -> SSAValue:
        """Lane index in the warp."""
        return self.c.lane  # type: ignore[attr-defined]

    @property
    def nwarps(self) -> int:
        """Warps in the compute group."""
        return self.nthreads // 32


# ---- numeric helpers ---------------------------------------------------------


def bf16_pair(b: PtxBuilder, w: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The two bf16 halves of a 32-bit word as f32 (low element first); exact."""
    lo = b.i("shl.b32", "b32", w, 16)
    hi = b.i("and.b32", "b32", w, 0xFFFF0000)
    return (
        b.raw("mov.b32", "{0}, {1}", outs=["f32"], ins=[lo])[0],
        b.raw("mov.b32", "{0}, {1}", outs=["f32"], ins=[hi])[0],
    )


def to_bf16(b: PtxBuilder, f: SSAValue) -> SSAValue:
    """Round an f32 to bf16 (round to nearest even)."""
    return b.i("cvt.rn.bf16.f32", "b16", f)


def from_bf16(b: PtxBuilder, h: SSAValue) -> SSAValue:
    """Widen a bf16 to f32 (exact)."""
    return b.i("cvt.f32.bf16", "f32", h)


def round_bf16(b: PtxBuilder, f: SSAValue) -> SSAValue:
    """f32 -> bf16 -> f32: the rounding of an intermediate bf16 tile."""
    return from_bf16(b, to_bf16(b, f))


def load_bf16(b: PtxBuilder, addr: SSAValue, off: int = 0) -> SSAValue:
    """One bf16 from shared memory, as f32."""
    return from_bf16(b, b.ld("ld.shared.b16", "b16", addr, off))


def load_elem(b: PtxBuilder, addr: SSAValue, dtype: str) -> SSAValue:
    """One ``dtype`` (bf16 or f32) element from shared memory, as f32."""
    return load_bf16(b, addr) if dtype == "bf16" else b.ld("ld.shared.f32", "f32", addr)


def per_dtype(cc: ComputeCtx, flag: int, emit: Callable[[str], None], f32_label: str, done_label: str) -> None:
    """Emit ``emit("bf16")`` and ``emit("f32")``, the f32 copy taken when ``p2`` has ``flag``.

    A body whose operand dtype is a flag of the instruction (not known when
    the kernel is built) is two copies behind one test, rather than a test
    per element.
    """
    b = cc.b
    f32, done = b.new_label(f32_label), b.new_label(done_label)
    b.bra(f32, b.setp("ne.u32", b.i("and.b32", "b32", cc.p2, flag), 0))
    emit("bf16")
    b.bra(done)
    b.place(f32)
    emit("f32")
    b.place(done)


def store_elem(b: PtxBuilder, base: SSAValue, offset: SSAValue, value: SSAValue, dtype: str) -> None:
    """Store an f32 to shared memory at ``base + offset`` as ``dtype`` (bf16: rounded to nearest even)."""
    if dtype == "bf16":
        data = to_bf16(b, value)
        b.st("st.shared.b16", b.i("add.u32", "u32", base, offset), 0, data)
    else:
        b.st("st.shared.f32", b.i("add.u32", "u32", base, offset), 0, value)


def silu(b: PtxBuilder, x: SSAValue) -> SSAValue:
    """x / (1 + exp(-x)) in f32 (exp through ex2.approx)."""
    t = b.i("mul.rn.f32", "f32", x, -LOG2E)
    e = b.i("ex2.approx.ftz.f32", "f32", t)
    d = b.i("add.rn.f32", "f32", e, 1.0)
    return b.i("div.rn.f32", "f32", x, d)


def warp_sum(b: PtxBuilder, v: SSAValue, lanes: int = 32) -> SSAValue:
    """Butterfly sum over each group of ``lanes`` consecutive lanes (a power of two; the whole warp by
    default), masks ``lanes / 2`` down to 1; every lane gets its group's total."""
    k = lanes // 2
    while k:
        o = b.i("shfl.sync.bfly.b32", "f32", v, k, 31, FULL)
        v = b.i("add.rn.f32", "f32", v, o)
        k //= 2
    return v


def scatter_sum(b: PtxBuilder, lane: SSAValue, vals: list[SSAValue]) -> tuple[SSAValue, SSAValue]:
    """Butterfly sums over the warp of ``n = len(vals)`` values (a power of two up to 32), scattered:
    returns ``(slot, total)``, where lane ``l`` holds the total of ``vals[slot]`` with ``slot = l >> (5 -
    log2 n)``.

    The first ``log2 n`` steps halve the values a lane carries: across the step's mask, the lower lane
    keeps the lower half and sends the upper half, the upper lane the reverse; the rest is
    :func:`warp_sum` over groups of ``32 / n`` lanes. Each step adds a lane's own value and its
    partner's, as ``warp_sum`` does, and two lanes across a mask carry the same values before it, so
    every lane ends with the total ``warp_sum`` gives its slot over the whole warp, bit for bit, after
    ``n - 1 + 5 - log2 n`` shuffles instead of ``5 n``."""
    n = len(vals)
    m = n.bit_length() - 1
    assert n == 1 << m and m <= 5, n
    for step in range(m):
        mask = 16 >> step
        upper = b.setp("ne.u32", b.i("and.b32", "u32", lane, mask), 0)
        half = len(vals) // 2
        kept = []
        for lo, hi in zip(vals[:half], vals[half:], strict=True):
            keep = b.i("selp.f32", "f32", hi, lo, upper)
            send = b.i("selp.f32", "f32", lo, hi, upper)
            got = b.i("shfl.sync.bfly.b32", "f32", send, mask, 31, FULL)
            kept.append(b.i("add.rn.f32", "f32", keep, got))
        vals = kept
    total = warp_sum(b, vals[0], 32 >> m)
    slot = b.i("shr.u32", "u32", lane, 5 - m) if m else b.var("u32", 0)
    return slot, total


def block_sum(cc: ComputeCtx, v: SSAValue) -> SSAValue:
    """Sum over the compute group; every thread gets the same total."""
    b = cc.b
    v = warp_sum(b, v)
    lane0 = b.setp("eq.u32", cc.lane, 0)
    sa = b.i("mad.lo.u32", "u32", cc.cw, 4, cc.c.base)  # type: ignore[attr-defined]
    b.st("st.shared.f32", sa, L.SMEM_SCRATCH, v, guard=lane0)
    b.raw("barrier.sync", "%d, %d" % (L.COMPUTE_BARRIER, cc.nthreads))
    tot = None
    for w in range(cc.nwarps):
        x = b.ld("ld.shared.f32", "f32", cc.c.base, L.SMEM_SCRATCH + 4 * w)  # type: ignore[attr-defined]
        tot = x if tot is None else b.i("add.rn.f32", "f32", tot, x)
    assert tot is not None
    return tot


def rms_inv(cc: ComputeCtx, x: SSAValue, n: SSAValue) -> SSAValue:
    """1 / sqrt(mean(x^2) + eps) over a 1xN bf16 tile, on every thread."""
    b = cc.b
    acc = b.var("f32", 0.0)

    def body(i: SSAValue) -> None:
        a = b.i("mad.lo.u32", "u32", i, 2, x)
        v = load_bf16(b, a)
        b.i("fma.rn.f32", "f32", v, v, acc, dst=acc)

    b.for_range(cc.ct, n, cc.nthreads, body, "rms_sq")
    tot = block_sum(cc, acc)
    nf = b.i("cvt.rn.f32.u32", "f32", n)
    mean = b.i("div.rn.f32", "f32", tot, nf)
    t = b.i("add.rn.f32", "f32", mean, cc.f0)
    s = b.i("sqrt.rn.f32", "f32", t)
    return b.i("div.rn.f32", "f32", 1.0, s)


def body_of(opcode: int) -> Callable[[ComputeCtx], None]:
    """The body emitter of the family with ``opcode``, as the family object names it.

    ValueError when no registered family has the opcode or the family has
    no PTX body.
    """
    family = family_by_opcode(opcode)
    if family is None:
        raise ValueError(f"no op family has opcode {opcode}")
    return family.ptx_emitter()


def group_states(c: Any, families: list[int]) -> dict[Callable[[Any], Any], Any]:
    """Make the group states of ``families`` (``Family.ptx_state``), one per emitter however many
    families name it, in the kernel context ``c``: the compute group calls this once, before its loop."""
    states: dict[Callable[[Any], Any], Any] = {}
    for opcode in families:
        family = family_by_opcode(opcode)
        emitter = family.state_emitter() if family is not None else None
        if emitter is not None and emitter not in states:
            states[emitter] = emitter(c)
    return states


def has_body(opcode: int) -> bool:
    """Whether a registered family has ``opcode`` and a PTX body."""
    family = family_by_opcode(opcode)
    return family is not None and family.ptx_body is not None
