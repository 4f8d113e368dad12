"""Bodies of the argmax families: the two phases of a deterministic argmax across SMs.

Both reduce (value, index) candidates to the best one: the largest value, a
NaN larger than every number, and of equal values the lowest index. A
candidate is one u64 *rank*, so that the best is simply the largest rank:

* the high word is the value's *order key*, a u32 that orders like the
  value: ``0x80000000 + |x|`` for a number with its sign bit clear,
  ``0x80000000 - |x|`` for one with it set (``|x|`` the magnitude's bits, so
  ``-0.0`` and ``+0.0`` get the same key), and ``0xFFFFFFFF`` for every NaN;
  a key is computed from the value's bits alone, no float arithmetic;
* the low word is the index, inverted (``~index``), so the lower index of
  equal keys gives the larger rank.

Rank 0 is below every candidate (the smallest key, ``-inf``'s, is
``0x00800000``), so it starts each thread's running maximum. Each thread
takes the elements (rows) ``thread, thread + threads, ...``, then the warps
combine with butterfly shuffles (``max.u64`` of the two words shuffled
apart) and lane 0 of each warp leaves its warp's rank in the shared scratch
(8 bytes per warp). After a group barrier every thread takes the maximum of
those ranks, and thread 0 writes the result. ``max`` is associative and
commutative, so the answer is the same whatever the group size or the
order in which the candidates meet: it is the numpy semantics
(``vdir.families.builtin.argmax_partial_f32`` / ``argmax_final_f32``).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from vdir import isa
from vdir.families import DTYPE_BYTES
from vdir.families.builtin import ARGMAX_INDEX_LIMIT
from vdir.lowering import families as F
from vdir.lowering import layout as L
from vdir.lowering.builder import PtxBuilder

#: the order key's offset: numbers with the sign bit clear rank above it, the others below
_KEY_ZERO = 0x80000000
#: the bits of an f32 without its sign, and the largest of them that is not a NaN (+inf's)
_MAGNITUDE = 0x7FFFFFFF
_INF_BITS = 0x7F800000
#: every NaN's order key: above +inf's (``_KEY_ZERO + _INF_BITS``)
_NAN_KEY = 0xFFFFFFFF
#: bytes of one warp's rank in the scratch
_RANK_BYTES = 8
#: the columns of an argmax_partial result row ``[value, index, 0, 0]``
_ROW_WORDS = 4


def order_key(b: PtxBuilder, bits: SSAValue) -> SSAValue:
    """The u32 order key of the f32 whose bit pattern is ``bits`` (see the module docstring)."""
    magnitude = b.i("and.b32", "u32", bits, _MAGNITUDE)
    negative = b.setp("lt.s32", bits, 0)
    key = b.i("selp.b32", "u32", b.i("sub.u32", "u32", _KEY_ZERO, magnitude),
              b.i("add.u32", "u32", magnitude, _KEY_ZERO), negative)
    return b.i("selp.b32", "u32", _NAN_KEY, key, b.setp("gt.u32", magnitude, _INF_BITS))


def rank(b: PtxBuilder, bits: SSAValue, index: SSAValue) -> SSAValue:
    """The u64 rank of a candidate: its order key above its inverted index."""
    return b.pack64(b.i("not.b32", "u32", index), order_key(b, bits))


def best_in_group(cc: "F.ComputeCtx", best: SSAValue) -> SSAValue:
    """The index of the largest of every thread's rank ``best``, on every thread."""
    b = cc.b
    for distance in (16, 8, 4, 2, 1):
        lo, hi = b.unpack64(best)
        other = b.pack64(b.i("shfl.sync.bfly.b32", "u32", lo, distance, 31, F.FULL),
                         b.i("shfl.sync.bfly.b32", "u32", hi, distance, 31, F.FULL))
        best = b.i("max.u64", "u64", best, other)
    assert L.SMEM_SCRATCH + _RANK_BYTES * cc.nwarps <= L.SMEM_GEMV_PARTIALS, "the scratch holds a rank per warp"
    slot = b.i("mad.lo.u32", "u32", cc.cw, _RANK_BYTES, cc.c.base)  # type: ignore[attr-defined]
    b.st("st.shared.u64", slot, L.SMEM_SCRATCH, best, guard=b.setp("eq.u32", cc.lane, 0))
    b.raw("barrier.sync", "%d, %d" % (L.COMPUTE_BARRIER, cc.nthreads))
    total = None
    for warp in range(cc.nwarps):
        r = b.ld("ld.shared.u64", "u64", cc.c.base, L.SMEM_SCRATCH + _RANK_BYTES * warp)  # type: ignore[attr-defined]
        total = r if total is None else b.i("max.u64", "u64", total, r)
    assert total is not None
    lo, _ = b.unpack64(total)
    return b.i("not.b32", "u32", lo)


def _element_bits(b: PtxBuilder, row: SSAValue, index: SSAValue, dtype: str) -> SSAValue:
    """The f32 bit pattern of element ``index`` of a bf16 or f32 row (a bf16 widened exactly)."""
    address = b.i("mad.lo.u32", "u32", index, DTYPE_BYTES[dtype], row)
    if dtype == "f32":
        return b.ld("ld.shared.b32", "u32", address)
    half = b.i("cvt.u32.u16", "u32", b.ld("ld.shared.b16", "b16", address))
    return b.i("shl.b32", "u32", half, 16)


def argmax_partial(cc: "F.ComputeCtx") -> None:
    """``[best, base + index, 0, 0]`` (f32) of the ``1 x N`` row ``x`` (N in p1, base in p3).

    The row is bf16, or f32 when p2 has ``isa.ARGMAX_IN_F32``: a copy of
    the body for each, behind one test of the flag.
    """
    F.per_dtype(cc, isa.ARGMAX_IN_F32, lambda dtype: _argmax_row(cc, dtype), "argmax_partial_in_f32",
                "argmax_partial_done")


def _argmax_row(cc: "F.ComputeCtx", dtype: str) -> None:
    """argmax_partial's body for a ``dtype`` row: each thread's best, the group's, thread 0's result row.

    The winner is read again (every thread reads it; thread 0 stores it), so
    the best value keeps its exact bits, a NaN its payload.
    """
    b = cc.b
    best = b.var("u64", 0)

    def element(i: SSAValue) -> None:
        b.i("max.u64", "u64", best, rank(b, _element_bits(b, cc.ins[0], i, dtype), i), dst=best)

    b.for_range(cc.ct, cc.p1, cc.nthreads, element, f"argmax_partial_{dtype}")
    index = best_in_group(cc, best)
    bits = _element_bits(b, cc.ins[0], index, dtype)
    column = b.i("cvt.rn.f32.u32", "f32", b.i("add.u32", "u32", index, cc.p3))
    first = b.setp("eq.u32", cc.ct, 0)
    b.st("st.shared.b32", cc.out, 0, bits, guard=first)
    b.st("st.shared.f32", cc.out, 4, column, guard=first)
    for word in range(2, _ROW_WORDS):
        b.st("st.shared.b32", cc.out, 4 * word, 0, guard=first)


def argmax_final(cc: "F.ComputeCtx") -> None:
    """``[index, 0, 0, 0]`` (i32) of the best of the ``S x 4`` f32 rows ``[value, index, 0, 0]`` (S in p0),
    row ``r``'s index plus ``r * stride`` (stride in p3).

    An index is read with a saturating truncation (``cvt.rzi.u32.f32``: a
    NaN or a negative value gives 0) and clamped to ``2^24``, as
    ``vdir.families.builtin.argmax_index_column`` says.
    """
    b = cc.b
    best = b.var("u64", 0)
    row_bytes = _ROW_WORDS * DTYPE_BYTES["f32"]

    def row(r: SSAValue) -> None:
        address = b.i("mad.lo.u32", "u32", r, row_bytes, cc.ins[0])
        bits = b.ld("ld.shared.b32", "u32", address)
        index = b.i("cvt.rzi.u32.f32", "u32", b.ld("ld.shared.f32", "f32", address, 4))
        index = b.i("min.u32", "u32", index, ARGMAX_INDEX_LIMIT)
        index = b.i("mad.lo.u32", "u32", r, cc.p3, index)  # plus the row's offset, r * stride (p3)
        b.i("max.u64", "u64", best, rank(b, bits, index), dst=best)

    b.for_range(cc.ct, cc.p0, cc.nthreads, row, "argmax_final")
    index = best_in_group(cc, best)
    first = b.setp("eq.u32", cc.ct, 0)
    b.st("st.shared.b32", cc.out, 0, index, guard=first)
    for word in range(1, _ROW_WORDS):
        b.st("st.shared.b32", cc.out, 4 * word, 0, guard=first)
