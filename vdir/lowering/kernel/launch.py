"""The launch's prologue and epilogue on the sync block: the epoch, the scalar checks, the finish count.

The epoch lives in device memory (``isa.SYNC_FINISH_COUNT`` of the sync
block), not in a kernel argument, so that a launch captured once in a CUDA
graph and replayed many times waits for the right counter values on every
replay. Each launch reads it in its prologue and every CTA advances it as
it leaves:

* every thread reads the finish count before the CTA's first ``bar.sync``
  and shifts it right by ``isa.LAUNCH_SHIFT`` after it
  (:func:`read_finish_count`, :func:`launches_done`), so no thread stalls
  on the load's round trip before the barrier and its queue's load; the
  launches done are used only by a wait's counter target
  (:func:`counter_target`). The launches before this one ended before it
  began, each having added ``2**LAUNCH_SHIFT``; the CTAs of this launch
  that have already left add less (``isa.SYNC_FINISH_COUNT``), so every
  thread finds the same launches done;
* each warp's lane 0 counts its warp out in shared memory, and the CTA's
  last warp adds the CTA's share to the count with ``red.relaxed.gpu``:
  one, or ``2**LAUNCH_SHIFT - grid + 1`` for the grid's last CTA. No fence
  and no round trip before the CTA leaves (measured: docs/performance.md,
  round 21). Relaxed suffices: the count orders no other memory, a later
  launch reads it after this one has ended, and this launch's readers only
  shift it.

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


def read_finish_count(b, sync: SSAValue) -> SSAValue:  # noqa: ANN001 -- a PtxBuilder
    """The sync block's finish count (u64), loaded in the prologue."""
    return b.ld("ld.relaxed.gpu.global.u64", "u64", sync, 4 * isa.SYNC_FINISH_COUNT)


def launches_done(b, count: SSAValue) -> SSAValue:  # noqa: ANN001 -- a PtxBuilder
    """The launches done before this one (u32, wrapping): the finish count shifted right by
    ``isa.LAUNCH_SHIFT``.

    Emitted after the CTA's first barrier, where the count's load has had
    the header's initialisation and the barrier to land.
    """
    return b.i("cvt.u32.u64", "u32", b.i("shr.b64", "u64", count, isa.LAUNCH_SHIFT))


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


def finish(c: Ctx, warps_per_cta: int) -> None:
    """Count this warp out; the CTA's last warp adds the CTA's share to the finish count (then every
    thread returns)."""
    b = c.b
    lane0 = b.setp("eq.u32", c.lane, 0)
    # (a result is read only under the predicate that guarded its atom)
    out = b.raw("atom.shared.add.u32", "{0}, [{1}+%d], 1" % L.SMEM_WARPS_DONE, outs=["u32"], ins=[c.base],
                guard=lane0)[0]
    cta_done = b.i("and.pred", "pred", lane0, b.setp("eq.u32", out, warps_per_cta - 1))
    # the CTA's share: 1, or 2**LAUNCH_SHIFT - grid + 1 for the grid's last CTA (a launch adds 2**LAUNCH_SHIFT)
    grid = b.special("u32", "%nctaid.x")
    last = b.setp("eq.u32", b.i("add.u32", "u32", c.sm, 1), grid)
    rest = b.i("sub.u32", "u32", 1 << isa.LAUNCH_SHIFT, grid)
    share = b.i("cvt.u64.u32", "u64", b.i("add.u32", "u32", b.i("selp.u32", "u32", rest, 0, last), 1))
    # relaxed, no result: see the module's note
    b.raw("red.relaxed.gpu.global.add.u64", "[{0}+%d], {1}" % (4 * isa.SYNC_FINISH_COUNT), ins=[c.sync, share],
          guard=cta_done)
    b.raw("ret", "")
