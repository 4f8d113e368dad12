"""The compute engine (warps 2..): run each compute instruction's family body over the group.

The first compute warp waits for the instruction, a named barrier releases
the group, the family body (``vdir/lowering/families``) runs on every thread,
a second barrier, and the leader thread signals.

In a kernel that runs loops, the second compute warp owns the instruction
window: it hands the current instruction over with a two-warp named barrier
(``layout.FETCH_BARRIER``: its writes to the window are ordered before the
first warp's reads by the barrier, ``bar.arrive`` to ``bar.sync``), then
works out the next one's trip words at once, while the first warp waits for
the handed one's dependencies; at the next trip the hand-off only waits.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from vdir import isa
from vdir.lowering import layout as L
from vdir.lowering.kernel.context import Ctx
from vdir.lowering.kernel.fetch import Fields, SmemFetcher, queue_of, smem_fields
from vdir.lowering.kernel.runtime_values import condition_holds
from vdir.lowering.kernel.sync import report, signal, spin_wait
from vdir.lowering.kernel.trace import stamp
from vdir.target import EngineKind


def compute_engine(c: Ctx, families: list[int]) -> None:
    """Warps 2..: the first compute warp waits, a named barrier releases the
    group, the family body runs, a barrier, and the leader thread signals."""
    b = c.b
    nthreads = c.target.compute_threads
    engine = c.target.engine_index(EngineKind.COMPUTE)
    q = queue_of(c, engine)
    ct = b.i("sub.u32", "u32", c.tid, 32 * L.COMPUTE_FIRST_WARP)
    cw = b.i("shr.u32", "u32", ct, 5)
    leader = b.setp("eq.u32", ct, 0)
    first_warp = b.setp("eq.u32", cw, 0)
    pos = b.var("u32", 0)
    # the waiting (first) warp prefetches instructions into the window (in a
    # kernel that runs loops, the second warp: see the module); the group
    # reads the current one from there after the barrier
    fe = SmemFetcher(c, q, engine)
    handed = c.loops and nthreads >= 64
    fetch_warp = b.setp("eq.u32", cw, 1) if handed else first_warp
    prime_skip = b.new_label("cp_prime_skip")
    b.bra(prime_skip, fetch_warp, neg=True)
    fe.prime(pos)
    b.place(prime_skip)
    top, done, sync = b.new_label("cp_top"), b.new_label("cp_done"), b.new_label("cp_sync")
    body_done, abort_w = b.new_label("cp_body_done"), b.new_label("cp_abort")
    bar_txt = "%d, %d" % (L.COMPUTE_BARRIER, nthreads)

    b.place(top)
    b.bra(done, b.setp("ge.u32", pos, q.count))
    if handed:
        waiter = b.new_label("cp_waiter")
        b.bra(waiter, fetch_warp, neg=True)
        fe.prepare(pos)
        b.raw("bar.arrive", "%d, 64" % L.FETCH_BARRIER)
        fe.prepare_next(pos)  # while the first warp waits for pos's dependencies
        b.bra(sync)
        b.place(waiter)
    b.bra(sync, first_warp, neg=True)
    if handed:
        b.raw("bar.sync", "%d, 64" % L.FETCH_BARRIER)
        fw = smem_fields(c, fe.slot_address(pos))
    else:
        fw = fe.fields_at(pos)
    spin_wait(c, fw, engine, pos, abort_w, warp_uniform=True)
    stamp(c, q.exec_start, pos, L.TRACE_START, leader)
    b.bra(sync)
    b.place(abort_w)
    b.st("st.shared.u32", c.base, L.SMEM_ABORT, 1, guard=leader)
    b.place(sync)
    # the waiting warp's acquire is passed on to the group by the barrier
    b.raw("barrier.sync", bar_txt)
    ab = b.ld("ld.shared.u32", "u32", c.base, L.SMEM_ABORT)
    b.bra(done, b.setp("ne.u32", ab, 0))
    f = smem_fields(c, fe.slot_address(pos))
    opcode = f.read(isa.OPCODE)
    b.bra(body_done, b.setp("ne.u32", opcode, isa.OP_COMPUTE))
    b.bra(body_done, condition_holds(c, f), neg=True)  # skipped: no result, same signals
    _run_family_body(c, f, families, ct, cw, engine, pos, done, body_done)
    b.place(body_done)
    # every compute thread's shared-memory writes precede the leader's release
    b.raw("barrier.sync", bar_txt)
    signal(c, f.signal, f.rel, leader)
    stamp(c, q.exec_start, pos, L.TRACE_END, leader)
    b.i("add.u32", "u32", pos, 1, dst=pos)
    b.bra(top, fetch_warp, neg=True)
    fe.advance(pos)
    b.bra(top)
    b.place(done)
    b.bra(c.exit_label)


def _run_family_body(c: Ctx, f: Fields, families: list[int], ct: SSAValue, cw: SSAValue, engine: int,
                     pos: SSAValue, done: str, body_done: str) -> None:
    """Decode compute instruction ``f``'s operands and dispatch on its family to the body.

    One body per family in ``families``, each ending in a branch to
    ``body_done``; an unknown family writes the error record and branches to
    ``done``.
    """
    from vdir.lowering.families import ComputeCtx, body_of

    b = c.b
    fam = f.read(isa.FAMILY)
    f.prefetch(isa.COMPUTE_FIELDS)
    cc = ComputeCtx(
        c=c, ct=ct, cw=cw, nthreads=c.target.compute_threads,
        out=b.i("add.u32", "u32", c.arena, f.read(isa.OUT_SMEM)),
        ins=[b.i("add.u32", "u32", c.arena, f.read(x)) for x in isa.IN_SMEM],
        p0=f.read(isa.P0), p1=f.read(isa.P1), p2=f.read(isa.P2), p3=f.read(isa.P3),
        f0=b.raw("mov.b32", "{0}, {1}", outs=["f32"], ins=[f.read(isa.F0)])[0],
    )
    labels = {fo: b.new_label(f"fam{fo}") for fo in families}
    for fo, lab in labels.items():
        b.bra(lab, b.setp("eq.u32", fam, fo))
    report(c, L.ERR_BAD_FAMILY, engine, pos, f, None, None, None)
    b.bra(done)
    for fo, lab in labels.items():
        b.place(lab)
        body_of(fo)(cc)
        b.bra(body_done)
