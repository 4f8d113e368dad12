"""The launch's prologue and epilogue on the sync block: the epoch, the scalar checks, the finish counts.

The epoch lives in device memory (``isa.SYNC_FINISH_COUNTS`` of the sync
block), not in a kernel argument, so that a launch captured once in a CUDA
graph and replayed many times waits for the right counter values on every
replay. Each CTA keeps its own finish count there, the launches it has
finished:

* every thread reads its CTA's count before the CTA's first ``bar.sync``
  and uses it only after it (:func:`read_finish_count`,
  :func:`launches_done`), so no thread stalls on the load's round trip
  before the barrier and its queue's load; the launches done are used only
  by a wait's counter target (:func:`counter_target`). A launch begins
  after the one before it ended, and every CTA of every launch runs, so
  every CTA of a launch reads the same launches done;
* thread 0 writes the count plus one as it leaves (:func:`finish`), with
  ``st.relaxed.gpu``: after the CTA's first barrier, so after every thread
  of the CTA read it, and before the launch ends, so before the next one
  reads it. Relaxed suffices: the count orders no other memory, and kernel
  boundaries order this launch's writes before the next launch's reads.
  One plain store per CTA to a word of its own: a single count that every
  CTA added to (``red.relaxed.gpu`` on one address) made an empty kernel on
  132 CTAs 0.35-0.4 us longer, the reductions serialising at the end of the
  launch, and a one-triple program 0.3-0.4 us longer; where the CTAs leave
  at different times (the gemvs) it cost nothing measurable
  (docs/performance.md, round 23).

Launch-time scalars may be written into the scalar block by the device (a
replayed graph), so the host's range check is not enough: the prologue
checks each scalar against its declared range, and on a value outside it
every CTA leaves at once (the record names the scalar; CTA 0 writes it).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from vdir import isa
from vdir.lowering import layout as L
from vdir.lowering.kernel.context import Ctx

#: byte offset of the finish counts in the sync block (``isa.SYNC_FINISH_COUNTS``), in the address of
#: the prologue's load and of the exit's store
_FINISH_COUNTS_BYTE = isa.WORD_BYTES * isa.SYNC_FINISH_COUNTS


def finish_count_address(b, sync: SSAValue, sm: SSAValue) -> SSAValue:  # noqa: ANN001 -- a PtxBuilder
    """The global address of CTA ``sm``'s finish count (``isa.SYNC_FINISH_COUNTS``)."""
    offset = b.i("mul.wide.u32", "u64", sm, isa.WORD_BYTES * isa.SYNC_FINISH_WORDS)
    return b.i("add.u64", "u64", sync, offset)


def read_finish_count(b, address: SSAValue) -> SSAValue:  # noqa: ANN001 -- a PtxBuilder
    """The CTA's finish count (u64) at ``address`` (:func:`finish_count_address`), loaded in the prologue."""
    return b.ld("ld.relaxed.gpu.global.u64", "u64", address, _FINISH_COUNTS_BYTE)


def launches_done(b, count: SSAValue) -> SSAValue:  # noqa: ANN001 -- a PtxBuilder
    """The launches done before this one (u32, wrapping): the CTA's finish count's low word.

    Emitted after the CTA's first barrier, where the count's load has had
    the header's initialisation and the barrier to land.
    """
    return b.i("cvt.u32.u64", "u32", count)


def counter_target(c: Ctx, count: SSAValue) -> SSAValue:
    """The value a counter of ``count`` releases per launch reaches in this launch: ``epoch * count``,
    worked out as ``launches done * count + count`` (one ``mad``, modulo 2**32)."""
    assert c.launches_done is not None, "the launches done are worked out after the prologue's barrier"
    return c.b.i("mad.lo.u32", "u32", c.launches_done, count, count)


def check_scalars(c: Ctx, scalars: list[isa.ScalarInfo]) -> None:
    """Leave the launch (every thread, to ``c.exit_label``) if a scalar is outside its range.

    CTA 0's thread 0 writes the record: ``ERR_SCALAR_RANGE``, the first bad
    scalar's slot in ``E_POS`` and its value in ``E_VALUE``.
    """
    if not scalars:
        return
    b = c.b
    bad_any = b.var("u32", 0)
    slot, value = b.var("u32", 0), b.var("s32", 0)
    for i in reversed(range(len(scalars))):  # the first bad slot is written last
        sc = scalars[i]
        v = b.ld("ld.relaxed.gpu.global.s32", "s32", c.scalars, 4 * i)
        bad = b.i("or.pred", "pred", b.setp("lt.s32", v, sc.lo), b.setp("ge.s32", v, sc.hi))
        b.i("mov.u32", None, 1, dst=bad_any, guard=bad)
        b.i("mov.u32", None, i, dst=slot, guard=bad)
        b.i("mov.s32", None, v, dst=value, guard=bad)
    ok = b.new_label("scalars_ok")
    b.bra(ok, b.setp("eq.u32", bad_any, 0))
    writer = b.i("and.pred", "pred", b.setp("eq.u32", c.tid, 0), b.setp("eq.u32", c.sm, 0))
    old = b.raw("atom.relaxed.gpu.global.cas.b32", "{0}, [{1}], 0, %d" % L.ERR_SCALAR_RANGE,
                outs=["b32"], ins=[c.err], guard=writer)[0]
    won = b.i("and.pred", "pred", writer, b.setp("eq.u32", old, 0))
    st = "st.relaxed.gpu.global.u32"
    b.st(st, c.err, 4 * L.E_POS, slot, guard=won)
    b.st(st, c.err, 4 * L.E_VALUE, value, guard=won)
    b.bra(c.exit_label)
    b.place(ok)


def finish(c: Ctx, address: SSAValue, count: SSAValue) -> None:
    """Thread 0 writes its CTA's finish count at ``address``: ``count`` (read in the prologue) plus
    one; then every thread returns."""
    b = c.b
    t0 = b.setp("eq.u32", c.tid, 0)
    # relaxed, after the CTA's first barrier: see the module's note
    b.st("st.relaxed.gpu.global.u64", address, _FINISH_COUNTS_BYTE,
         b.i("add.u64", "u64", count, 1), guard=t0)
    b.raw("ret", "")
