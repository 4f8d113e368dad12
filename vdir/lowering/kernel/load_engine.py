"""The load engines (warp 0, and the stream engine's warp): copy tiles from global into shared memory.

The load and the stream engine run the same code on their own queues, each
with its own ring of mbarriers (``copies.ring_barrier``) and instruction
window: the stream engine's loads (weight tiles, which wait on nothing)
stream while the load engine waits on other SMs.

All 32 lanes run the same control flow; lane 0 arms the mbarrier and
signals, the lanes split a tile's rows between copies (``copies.py``). Each
trip of the loop first retires the oldest in-flight load if its bytes have
landed, and otherwise issues the next load if its wait is satisfied and a
ring slot is free. Retiring first is what a consumer waits for: an engine
that issued whenever it could held a landed load's signal back behind the
issue of every ready load after it (with a deep ring, several microseconds
on the decode step's chain of hand-offs). And since every trip tries to
retire, a load waiting on bits that an older load's retirement (or a
consumer of it) will toggle can never deadlock the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from vdir import isa
from vdir.lowering import layout as L
from vdir.lowering.kernel.context import FULL, Ctx
from vdir.lowering.kernel.copies import (
    buffer_address,
    bulk_load,
    bulk_prefetch,
    copy_fields,
    evict_first_policy,
    issuer_index,
    lsu_load,
    mbar_count,
    ring_barrier,
    ring_landed,
    tensor_load,
)
from vdir.lowering.kernel.fetch import Fields, Queue, SmemFetcher, WarpFetcher, fetch, region_fields
from vdir.lowering.kernel.flag_words import is_flag_words, read_flag_words
from vdir.lowering.kernel.runtime_values import condition_holds, runtime_offset
from vdir.lowering.kernel.sync import ready_check, report, signal, stall_poll
from vdir.lowering.kernel.trace import stamp
from vdir.target import EngineKind


@dataclass
class LoadLoop:
    """The load engine's registers and the labels of its loop."""

    c: Ctx
    engine: int
    ring: int  # which of the header's load rings (layout.load_ring_index)
    depth: int  # the loads it keeps in flight (LoweringOptions.ring_depth)
    q: Queue
    lane0: SSAValue
    pos: SSAValue  # next queue position to issue
    ret: SSAValue  # oldest queue position still in flight
    phases: SSAValue  # bit s: the parity of slot s's current phase
    held: tuple[SSAValue, SSAValue, SSAValue]  # lane s: slot s's signal mask (lo, hi) and release counter
    t0: SSAValue  # start of the current stall (0: not stalled)
    tclk: SSAValue
    fe: WarpFetcher | SmemFetcher
    top: str
    test: str  # the oldest in-flight load's test (something is in flight)
    issue: str
    idle: str
    done: str
    abort: str
    policy: SSAValue | None  # the L2 cache policy the copies carry (None: the default)


def load_engine(c: Ctx, kind: EngineKind = EngineKind.LOAD) -> None:
    """The warp of load engine ``kind``: issue loads ahead through its mbarrier ring, retire in order (see the module)."""
    s = _start(c, kind)
    _retire_oldest(s)
    _issue_next(s)
    _idle(s)
    _drain(s)


def _start(c: Ctx, kind: EngineKind) -> LoadLoop:
    """The engine's registers, the primed fetcher and the loop's labels."""
    b = c.b
    engine = c.target.engine_index(kind)
    q = c.queue
    lane0 = b.setp("eq.u32", c.lane, 0)
    pos = b.var("u32", 0)
    ret = b.var("u32", 0)
    phases = b.var("u32", 0)
    held = (b.var("u32", 0), b.var("u32", 0), b.var("u32", 0))
    t0 = b.var("u64", 0)
    tclk = b.var("u64", 0)
    # (the lsu path's own cp.async would join the fetcher's commit groups)
    fe = WarpFetcher(c, q) if c.options.lsu_loads else SmemFetcher(c, q, engine)
    fe.prime(pos)
    prefix = "ld" if kind == EngineKind.LOAD else f"ld_{kind}"
    top, test = b.new_label(f"{prefix}_top"), b.new_label(f"{prefix}_test")
    issue, idle = b.new_label(f"{prefix}_issue"), b.new_label(f"{prefix}_idle")
    done, abort = b.new_label(f"{prefix}_done"), b.new_label(f"{prefix}_abort")
    # weight tiles are read once per launch: their lines go first when L2 needs room
    policy = evict_first_policy(c) if kind == EngineKind.STREAM and c.options.stream_evict_first else None
    return LoadLoop(c, engine, L.load_ring_index(c.target, engine), c.options.ring_depth(kind), q,
                    lane0, pos, ret, phases, held, t0, tclk, fe, top, test, issue, idle, done, abort, policy)


def _issue_next(s: LoadLoop) -> None:
    """Issue the next load if a ring slot is free and its wait is satisfied, else go idle."""
    c, b = s.c, s.c.b
    b.place(s.issue)
    b.bra(s.idle, b.setp("ge.u32", s.pos, s.q.count))
    inflight = b.i("sub.u32", "u32", s.pos, s.ret)
    b.bra(s.idle, b.setp("ge.u32", inflight, s.depth))
    f = s.fe.fields() if isinstance(s.fe, WarpFetcher) else s.fe.fields_at(s.pos)
    # every word the issue reads, loaded at once ahead of the wait's test (their latencies overlap,
    # and every path after the test uses registers defined on all of them)
    f.prefetch(copy_fields(c))
    ready, _bm, _cv, _wt = ready_check(c, f, warp_uniform=True)
    b.bra(s.idle, ready, neg=True)
    flagged = _poll_flag_words(s, f) if c.flag_words else None
    stamp(c, s.q.exec_start, s.pos, L.TRACE_START, s.lane0)
    # Cross-SM RAW: another SM's writes into the source, made visible here by
    # the ld.acquire.gpu of the counter, must be ordered before this
    # async-proxy read: fence.proxy.async.global, by each lane that issues a
    # copy of this load (every lane did its own acquire). The fence waits for
    # the lane's own outstanding bulk copies, so a counter-waiting load is
    # issued by the lanes counting down from 31 (issuer_index), which no other
    # load's copies keep busy: it does not wait for the weight tiles in
    # flight. The WAR on the slot (compute
    # threads' ld.shared, then this bulk write) is ordered by the release /
    # acquire of the dependency bits, as with an mbarrier-based pipeline; a
    # same-SM RAW through global memory is fenced by the store engine.
    p_ctr = b.setp("ne.u32", f.wctr, 0)
    first = issuer_index(c, p_ctr)
    slot, bar = ring_barrier(c, s.ring, s.depth, s.pos)
    # what to signal at retirement (in order, from the ring), kept in the registers of the lane
    # whose index is the slot: the retirement needs no round trip through shared memory
    holder = b.setp("eq.u32", c.lane, slot)
    for reg, word in zip(s.held, (*f.halves(isa.SIGNAL_MASK), f.rel), strict=True):
        b.i("mov.u32", None, word, dst=reg, guard=holder)
    opcode = f.read(isa.OPCODE)
    # a load whose condition fails completes like a nop: no bytes, same signals
    is_load = b.i("and.pred", "pred", b.setp("eq.u32", opcode, isa.OP_LOAD), condition_holds(c, f))
    nop_path, issued = b.new_label("ld_nop"), b.new_label("ld_issued")
    b.bra(nop_path, is_load, neg=True)
    _copy_region(s, f, bar, first, p_ctr, issued, flagged)
    b.bra(issued)
    b.place(nop_path)
    _prefetch(s, f, b.setp("eq.u32", opcode, isa.OP_PREFETCH))
    # a nop (or anything not a load) completes at once but still retires in order
    b.raw("mbarrier.arrive.shared::cta.b64", "{0}, [{1}], %d" % mbar_count(c), outs=["b64"], ins=[bar],
          guard=s.lane0)
    b.raw("bar.warp.sync", "%d" % FULL)
    b.place(issued)
    b.i("add.u32", "u32", s.pos, 1, dst=s.pos)
    s.fe.advance(s.pos)
    _progress(s)
    s.c.b.bra(s.test)  # a load is in flight now: straight to the oldest's test


def _poll_flag_words(s: LoadLoop, f: Fields) -> SSAValue:
    """A flag-word load (``isa.TRANSFER_FLAG_WORDS``) whose bits are met reads its words into its slot:
    where some word does not hold this launch's epoch yet, the engine goes idle (retiring what has
    landed meanwhile) and reads them all again on its next try; else the issue goes on, and
    :func:`_copy_region` completes the slot's mbarrier. A load that only reads the sync block and its
    own slot: no counter, no proxy fence (``vdir.lowering.kernel.flag_words``). Returns the predicate
    that the record is a flag-word load."""
    c, b = s.c, s.c.b
    flagged = is_flag_words(c, f)
    plain = b.new_label("ld_plain_words")
    b.bra(plain, flagged, neg=True, uniform=True)
    landed = read_flag_words(c, f, b.i("add.u32", "u32", c.arena, f.read(isa.SMEM)))
    b.bra(s.idle, landed, neg=True, uniform=True)
    b.place(plain)
    return flagged


def _copy_region(s: LoadLoop, f: Fields, bar: SSAValue, first: SSAValue, p_ctr: SSAValue, issued: str,
                 flagged: SSAValue | None = None) -> None:
    """Issue the copies of load ``f`` into its tile slot, completing on ``bar``.

    Tensor copies where the region has a tensor map (and they are enabled),
    else the ``lsu`` path or plain bulk copies; the tensor and ``lsu`` paths
    branch to ``issued`` when done, the bulk path falls through. Where ``flagged``
    (a flag-word load, its words in the slot already) only the mbarrier is completed.
    """
    c, b = s.c, s.c.b
    if flagged is not None:  # a flag-word load's words are in the slot already (_poll_flag_words)
        plain = b.new_label("ld_plain_copy")
        b.bra(plain, flagged, neg=True, uniform=True)
        b.raw("mbarrier.arrive.shared::cta.b64", "{0}, [{1}], %d" % mbar_count(c), outs=["b64"], ins=[bar],
              guard=s.lane0)
        b.raw("bar.warp.sync", "%d" % FULL)
        b.bra(issued)
        b.place(plain)
    bufi, off_lo, off_hi, rows, row_bytes, stride, smem = region_fields(f)
    total = b.i("mul.lo.u32", "u32", rows, row_bytes)
    dst0 = b.i("add.u32", "u32", c.arena, smem)
    if c.options.tensor_copies_enabled:
        plain = b.new_label("ld_plain")
        b.bra(plain, b.setp("eq.u32", f.read(isa.TMAP), 0))
        tensor_load(c, f, dst0, row_bytes, total, bar, first, p_ctr, s.policy)
        b.bra(issued)
        b.place(plain)
    # plain copies address the buffer through the pointer table (a region
    # with a runtime offset never has a tensor map)
    off_lo, off_hi = runtime_offset(c, f, off_lo, off_hi, s.engine, s.pos, s.abort)
    gptr = buffer_address(c, bufi, off_lo, off_hi)
    contig = b.setp("eq.u32", stride, row_bytes)
    if c.options.lsu_loads:
        b.raw("fence.proxy.async.global", "", guard=p_ctr)
        lsu_load(c, gptr, dst0, rows, row_bytes, stride, total, contig, bar)
        b.bra(issued)
    bulk_load(c, gptr, dst0, rows, row_bytes, stride, total, contig, bar, first, p_ctr, s.lane0, s.policy)


def _prefetch(s: LoadLoop, f: Fields, is_prefetch: SSAValue) -> None:
    """If the record is a prefetch, ask L2 for its region (``vdir.analysis.l2_prefetch``); then it completes as a nop."""
    c, b = s.c, s.c.b
    skip = b.new_label("ld_no_prefetch")
    b.bra(skip, is_prefetch, neg=True)
    bufi, off_lo, off_hi, rows, row_bytes, stride, _smem = region_fields(f)
    bulk_prefetch(c, buffer_address(c, bufi, off_lo, off_hi), rows, row_bytes, stride)
    b.place(skip)


def _progress(s: LoadLoop) -> None:
    """The engine made progress: clear the stall timers."""
    b = s.c.b
    b.set(s.t0, 0)
    b.set(s.tclk, 0)


def _retire_oldest(s: LoadLoop) -> None:
    """The loop's head: retire the oldest in-flight load if it has landed (signal what it names,
    free its slot) and loop; else go on to issue."""
    c, b = s.c, s.c.b
    b.place(s.top)
    b.bra(s.issue, b.setp("eq.u32", s.ret, s.pos))
    b.place(s.test)
    rslot, landed = ring_landed(c, s.ring, s.depth, s.ret, s.phases, "test_wait")
    b.bra(s.issue, landed, neg=True)
    bit = b.i("shl.b32", "u32", 1, rslot)
    b.i("xor.b32", "u32", s.phases, bit, dst=s.phases)
    # The lane that holds the slot's signal signals: like every lane, it observed the phase's
    # completion itself (test_wait has acquire semantics at CTA scope; the vote only makes the
    # warp agree), so the copied bytes are visible to it, and its releases (the bits'
    # atom.release.cta, the counter's red.release.gpu) pass them on to the consumers.
    signal(c, b.pack64(*s.held[:2]), s.held[2], b.setp("eq.u32", c.lane, rslot))
    stamp(c, s.q.exec_start, s.ret, L.TRACE_END, s.lane0)
    b.raw("bar.warp.sync", "%d" % FULL)
    b.i("add.u32", "u32", s.ret, 1, dst=s.ret)
    _progress(s)
    # the next oldest's test if another load is in flight, else straight to the issue
    b.bra(s.issue, b.setp("eq.u32", s.ret, s.pos))
    b.bra(s.test)


def _idle(s: LoadLoop) -> None:
    """Nothing to do right now: finish, abort, keep polling, or report a stall."""
    c, b = s.c, s.c.b
    b.place(s.idle)
    fin = b.setp("ge.u32", s.pos, s.q.count)
    empty = b.setp("eq.u32", s.ret, s.pos)
    b.bra(s.done, b.i("and.pred", "pred", fin, empty))
    stall_poll(c, s.tclk, s.t0, True, s.top, s.abort)
    # report the instruction the engine is stuck on: the next to issue if any
    # remain (its wait is unsatisfied), else the oldest in flight
    has_next = b.setp("lt.u32", s.pos, s.q.count)
    which = b.i("selp.u32", "u32", s.pos, s.ret, has_next)
    sf = fetch(c, s.q, which)
    _r, sbm, scv, swt = ready_check(c, sf, warp_uniform=True)
    report(c, L.ERR_WATCHDOG, s.engine, which, sf, sbm, scv, swt)


def _drain(s: LoadLoop) -> None:
    """On abort, wait for the copies still in flight; then exit.

    They write into this CTA's shared memory, and they complete: their
    sources are valid.
    """
    c, b = s.c, s.c.b
    b.place(s.abort)
    dl, dd = b.new_label("ld_drain"), b.new_label("ld_drain_done")
    b.place(dl)
    b.bra(dd, b.setp("eq.u32", s.ret, s.pos))
    dslot, ok = ring_landed(c, s.ring, s.depth, s.ret, s.phases, "try_wait")
    b.bra(dl, ok, neg=True)
    dbit = b.i("shl.b32", "u32", 1, dslot)
    b.i("xor.b32", "u32", s.phases, dbit, dst=s.phases)
    b.i("add.u32", "u32", s.ret, 1, dst=s.ret)
    b.bra(dl)
    b.place(dd)
    b.place(s.done)
    b.bra(c.exit_label)
