"""The launch's prologue and epilogue on the sync block: the epoch, the scalar checks, the finish count.

The epoch lives in device memory (``isa.SYNC_LAUNCHES_DONE`` of the sync
block), not in a kernel argument, so that a launch captured once in a CUDA
graph and replayed many times waits for the right counter values on every
replay. Each launch reads it in its prologue and the last warp to finish
advances it:

* every thread reads ``launches done`` before the CTA's first ``bar.sync``;
  nothing writes that word until every warp of every CTA has finished, so
  every thread of the launch reads the same value. The value is first used
  by a wait's counter target (:func:`counter_target`), not in the
  prologue, so that no thread stalls on the load's round trip before the
  barrier and its queue's load (measured: docs/performance.md, round 21);
* each warp's lane 0 counts its warp out in shared memory; the CTA's last
  warp adds one to ``SYNC_CTAS_DONE`` with ``atom.acq_rel.gpu``; the CTA that
  completes the count zeroes it and writes the new ``launches done``. The
  next launch on the stream starts after this one has ended, which orders
  these writes before its reads.

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


def read_launches_done(b, sync: SSAValue) -> SSAValue:  # noqa: ANN001 -- a PtxBuilder
    """The sync block's ``launches done``: the launch's epoch less one (u32, wrapping)."""
    return b.ld("ld.relaxed.gpu.global.u32", "u32", sync, 4 * isa.SYNC_LAUNCHES_DONE)


def counter_target(c: Ctx, count: SSAValue) -> SSAValue:
    """The value a counter of ``count`` releases per launch reaches in this launch: ``epoch * count``,
    worked out as ``launches done * count + count`` (one ``mad``, modulo 2**32)."""
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


def finish(c: Ctx, warps_per_cta: int) -> None:
    """Count this warp out; the launch's last warp advances the epoch (then every thread returns)."""
    b = c.b
    lane0 = b.setp("eq.u32", c.lane, 0)
    # (a result is read only under the predicate that guarded its atom)
    out = b.raw("atom.shared.add.u32", "{0}, [{1}+%d], 1" % L.SMEM_WARPS_DONE, outs=["u32"], ins=[c.base],
                guard=lane0)[0]
    cta_done = b.i("and.pred", "pred", lane0, b.setp("eq.u32", out, warps_per_cta - 1))
    # acq_rel: the last CTA to arrive has seen every other CTA's arrival
    ctas = b.raw("atom.acq_rel.gpu.global.add.u32", "{0}, [{1}+%d], 1" % (4 * isa.SYNC_CTAS_DONE),
                 outs=["u32"], ins=[c.sync], guard=cta_done)[0]
    grid = b.special("u32", "%nctaid.x")
    last = b.i("and.pred", "pred", cta_done, b.setp("eq.u32", b.i("add.u32", "u32", ctas, 1), grid))
    b.st("st.relaxed.gpu.global.u32", c.sync, 4 * isa.SYNC_CTAS_DONE, 0, guard=last)
    epoch = b.i("add.u32", "u32", c.launches_done, 1)
    b.st("st.relaxed.gpu.global.u32", c.sync, 4 * isa.SYNC_LAUNCHES_DONE, epoch, guard=last)
    b.raw("ret", "")
