"""The persistent scheduler kernel, built over the ``ptx`` dialect.

One CTA per SM. Warp 0 is the load engine, warp 1 the store engine, and the
remaining warps (``target.compute_threads`` threads) the compute engine. Each
role walks its own queue of 128-byte instructions (``vdir/isa.py``), waits for
the dependency bits and global counters each instruction names, executes it,
and on completion toggles its signal bits and releases its counter.

Memory-model notes, written where the instructions are emitted:

* dependency bits are toggled with ``atom.release.cta.shared.xor.b64`` and
  read with ``ld.acquire.cta.shared.b64``; a role that waits on them
  therefore sees every shared/global write the signalling role made before
  signalling;
* global counters are released with ``red.release.gpu`` (a release: the
  writes ordered before it, including other lanes' and threads' through the
  role's barrier, are cumulative) after the releasing role's writes and read
  with ``ld.acquire.gpu``;
* the copies (tensor copies, or plain bulk copies where a region has no
  tensor form) run in the async proxy: after acquiring a counter (another
  SM's writes into the source) the lanes that issue the load execute
  ``fence.proxy.async.global``; the store engine fences the async proxy
  against the compute threads' tile writes before a tensor store
  (``fence.proxy.async.shared::cta``) and its stores against later loads
  when it signals bits (``fence.proxy.async.global``); the WAR on a tile
  slot (compute threads' ``ld.shared``, then a copy into the slot) is
  ordered by the bits' release/acquire, as in an mbarrier-based pipeline;
* a load completes when its mbarrier phase completes, which makes the copied
  bytes visible to the threads that observed the phase;
* a release waits for the releasing thread's outstanding loads (measured:
  register prefetches of the next instructions made every signal wait for
  a global round trip), so the
  engines prefetch their instructions with ``cp.async`` into shared memory
  (:class:`SmemFetcher`), never with plain loads still in flight at a
  signal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import SSAValue

from vdir import isa
from vdir.dialects import ptx
from vdir.lowering import layout as L
from vdir.lowering.builder import PtxBuilder
from vdir.lowering.options import LoweringOptions
from vdir.target import EngineKind, TargetDescription

FULL = 0xFFFFFFFF


@dataclass
class Ctx:
    """Registers every role shares (parameters, ids, shared addresses)."""

    b: PtxBuilder
    target: TargetDescription
    instrs: SSAValue
    queues: SSAValue
    buffers: SSAValue
    counters: SSAValue
    tmaps: SSAValue  # u64 global address of the tensor maps
    epoch: SSAValue
    err: SSAValue
    bound: SSAValue
    tid: SSAValue
    warp: SSAValue
    lane: SSAValue
    sm: SSAValue
    base: SSAValue  # u32 shared address of the dynamic smem
    arena: SSAValue  # base + HEADER_BYTES
    options: LoweringOptions
    zero: SSAValue  # u32 register holding 0 (a tensor copy's innermost coordinate)


@dataclass
class Fields:
    """One instruction's fields (``isa.Field``) as registers.

    ``load(byte_offset)`` gives the u32 word at that byte offset of the
    instruction (cached: each word is loaded once); the sync fields every
    engine needs are decoded up front.
    """

    b: PtxBuilder
    load: Callable[[int], SSAValue]
    mask: SSAValue
    parity: SSAValue
    signal: SSAValue
    wctr: SSAValue
    wcount: SSAValue
    rel: SSAValue
    uop: SSAValue

    def halves(self, f: isa.Field) -> list[SSAValue]:
        """The words of ``f`` (low word first), unshifted."""
        return [self.load(f.byte_offset + k * isa.WORD_BYTES) for k in range(f.nwords)]

    def read(self, f: isa.Field) -> SSAValue:
        """The u32 value of a one-word field (a packed one shifted and masked)."""
        v = self.load(f.byte_offset)
        if f.shift:
            v = self.b.i("shr.u32", "u32", v, f.shift)
        if f.packed:
            v = self.b.i("and.b32", "u32", v, f.mask)
        return v

    def prefetch(self, fields: tuple[isa.Field, ...]) -> None:
        """Load the words of ``fields`` now, in order (loads ahead of their uses)."""
        for f in fields:
            self.halves(f)


#: the fields decoded for every instruction, in load order
SYNC_FIELDS = (isa.OPCODE, isa.WAIT_MASK, isa.WAIT_PARITY, isa.SIGNAL_MASK, isa.WAIT_COUNTER,
               isa.WAIT_COUNT, isa.RELEASE_COUNTER, isa.UOP_ID)


def fields_from(c: Ctx, load: Callable[[int], SSAValue]) -> Fields:
    """Decode the sync fields through ``load(byte_offset)``."""
    b = c.b
    w = {f: [load(f.byte_offset + k * isa.WORD_BYTES) for k in range(f.nwords)] for f in SYNC_FIELDS}
    return Fields(
        b=b, load=load, mask=b.pack64(*w[isa.WAIT_MASK]), parity=b.pack64(*w[isa.WAIT_PARITY]),
        signal=b.pack64(*w[isa.SIGNAL_MASK]), wctr=w[isa.WAIT_COUNTER][0], wcount=w[isa.WAIT_COUNT][0],
        rel=w[isa.RELEASE_COUNTER][0], uop=w[isa.UOP_ID][0],
    )


#: bytes of one vector load of instruction words (``ld.*.v4.u32``)
VECTOR_BYTES = 16


def vector_loader(ld_v4: Callable[[int], list[SSAValue]]) -> Callable[[int], SSAValue]:
    """A cached ``load(byte_offset)`` that fetches the 16 bytes around a word with ``ld_v4(offset)``."""
    cache: dict[int, SSAValue] = {}

    def load(offset: int) -> SSAValue:
        if offset not in cache:
            base = offset // VECTOR_BYTES * VECTOR_BYTES
            for n, v in enumerate(ld_v4(base)):
                cache[base + n * isa.WORD_BYTES] = v
        return cache[offset]

    return load


def instr_address(c: Ctx, start: SSAValue, pos: SSAValue) -> SSAValue:
    """Global address of instruction ``start + pos``."""
    b = c.b
    idx = b.i("add.u32", "u32", start, pos)
    off = b.i("mul.wide.u32", "u64", idx, isa.INSTR_BYTES)
    return b.i("add.u64", "u64", c.instrs, off)


def fetch(c: Ctx, start: SSAValue, pos: SSAValue) -> Fields:
    """Load instruction ``start + pos`` with vector loads (slow paths: reports)."""
    b = c.b
    a = instr_address(c, start, pos)
    return fields_from(c, vector_loader(lambda off: b.ld_v4("ld.global.nc.v4.u32", "u32", a, off)))


class WarpFetcher:
    """Instructions held one word per lane, prefetched ``fetch_depth`` ahead.

    Lane k of the warp holds word k of the current instruction (one coalesced
    128-byte load); fields are read with ``shfl.sync.idx``. The next
    ``fetch_depth - 1`` instructions are already being loaded into a shift
    register chain, so an instruction fetch (an L2 or HBM round trip, several
    microseconds while the memory system streams weights) is never on the
    critical path of a short micro-op. At the start the whole queue is also
    prefetched into L2 with one ``cp.async.bulk.prefetch.L2``.
    """

    def __init__(self, c: Ctx, start: SSAValue, count: SSAValue):
        b = self.b = c.b
        self.c, self.start, self.count = c, start, count
        lane4 = b.i("mul.wide.u32", "u64", c.lane, 4)
        self.base = b.i("add.u64", "u64", c.instrs, lane4)
        depth = c.options.fetch_depth
        self.regs = [b.var("u32", 0) for _ in range(depth)]
        self.cur = self.regs[0]
        # warm L2 with this queue's instructions (lane 0, non-empty queue)
        qa = instr_address(c, start, b.mov("u32", 0))
        qbytes = b.i("mul.lo.u32", "u32", count, isa.INSTR_BYTES)
        p = b.setp("ne.u32", qbytes, 0)
        p = b.i("and.pred", "pred", p, b.setp("eq.u32", c.lane, 0))
        b.raw("cp.async.bulk.prefetch.L2.global", "[{0}], {1}", ins=[qa, qbytes], guard=p)

    def _load(self, dst: SSAValue, pos: SSAValue) -> None:
        b = self.b
        ok = b.setp("lt.u32", pos, self.count)
        idx = b.i("add.u32", "u32", self.start, pos)
        off = b.i("mul.wide.u32", "u64", idx, isa.INSTR_BYTES)
        a = b.i("add.u64", "u64", self.base, off)
        b.ld("ld.global.nc.u32", "u32", a, dst=dst, guard=ok)

    def prime(self, pos: SSAValue) -> None:
        """Load instructions ``pos .. pos + depth - 1``."""
        for k, r in enumerate(self.regs):
            self._load(r, self.b.i("add.u32", "u32", pos, k) if k else pos)

    def advance(self, new_pos: SSAValue) -> None:
        """The engine moved to ``new_pos``: shift the chain, prefetch one more."""
        for k in range(len(self.regs) - 1):
            self.b.set(self.regs[k], self.regs[k + 1])
        pk = self.b.i("add.u32", "u32", new_pos, len(self.regs) - 1)
        self._load(self.regs[-1], pk)

    def word_at(self, offset: int) -> SSAValue:
        """The word at byte ``offset`` of the current instruction, in every lane."""
        return self.b.i("shfl.sync.idx.b32", "u32", self.cur, offset // isa.WORD_BYTES, 31, FULL)

    def fields(self) -> Fields:
        """The current instruction's fields."""
        cache: dict[int, SSAValue] = {}

        def load(offset: int) -> SSAValue:
            if offset not in cache:
                cache[offset] = self.word_at(offset)
            return cache[offset]

        return fields_from(self.c, load)


class SmemFetcher:
    """Instructions prefetched ``FETCH_DEPTH`` ahead into a shared-memory window.

    Lanes 0..7 copy an instruction's 128 bytes with ``cp.async.ca`` (one
    commit group per instruction) into slot ``pos % FETCH_DEPTH`` of this
    engine's window; ``cp.async.wait_group`` plus a warp barrier make the
    oldest one readable. Unlike prefetches into registers, these copies are
    not outstanding loads of the thread, so a later release (signalling the
    dependency bits) does not wait for them.
    """

    def __init__(self, c: Ctx, start: SSAValue, count: SSAValue, engine: int):
        b = self.b = c.b
        self.c, self.start, self.count = c, start, count
        self.win = b.i("add.u32", "u32", c.base, L.SMEM_IWINDOW + engine * L.FETCH_DEPTH * isa.INSTR_BYTES)
        lane16 = b.i("shl.b32", "u32", c.lane, 4)
        self.lane_dst = b.i("add.u32", "u32", self.win, lane16)
        lane16_64 = b.i("cvt.u64.u32", "u64", lane16)
        self.lane_src = b.i("add.u64", "u64", c.instrs, lane16_64)
        self.copier = b.setp("lt.u32", c.lane, isa.INSTR_BYTES // 16)

    def _issue(self, pos: SSAValue) -> None:
        b = self.b
        ok = b.i("and.pred", "pred", b.setp("lt.u32", pos, self.count), self.copier)
        idx = b.i("add.u32", "u32", self.start, pos)
        off = b.i("mul.wide.u32", "u64", idx, isa.INSTR_BYTES)
        src = b.i("add.u64", "u64", self.lane_src, off)
        slot = b.i("and.b32", "u32", pos, L.FETCH_DEPTH - 1)
        dst = b.i("mad.lo.u32", "u32", slot, isa.INSTR_BYTES, self.lane_dst)
        b.raw("cp.async.ca.shared.global", "[{0}], [{1}], 16", ins=[dst, src], guard=ok)
        b.raw("cp.async.commit_group", "")

    def prime(self, pos: SSAValue) -> None:
        """Start copying instructions ``pos .. pos + FETCH_DEPTH - 1``."""
        for k in range(L.FETCH_DEPTH):
            self._issue(self.b.i("add.u32", "u32", pos, k) if k else pos)

    def slot_address(self, pos: SSAValue) -> SSAValue:
        """Shared address of instruction ``pos`` in the window."""
        slot = self.b.i("and.b32", "u32", pos, L.FETCH_DEPTH - 1)
        return self.b.i("mad.lo.u32", "u32", slot, isa.INSTR_BYTES, self.win)

    def fields_at(self, pos: SSAValue) -> Fields:
        """Wait for instruction ``pos`` (the oldest pending) and decode it."""
        b = self.b
        b.raw("cp.async.wait_group", "%d" % (L.FETCH_DEPTH - 1))
        b.raw("bar.warp.sync", "%d" % FULL)
        return smem_fields(self.c, self.slot_address(pos))

    def advance(self, new_pos: SSAValue) -> None:
        """Instruction ``new_pos - 1`` is done: reuse its slot for ``new_pos + FETCH_DEPTH - 1``."""
        self._issue(self.b.i("add.u32", "u32", new_pos, L.FETCH_DEPTH - 1))


def smem_fields(c: Ctx, addr: SSAValue) -> Fields:
    """Decode an instruction held in shared memory at ``addr``."""
    return fields_from(c, vector_loader(lambda off: c.b.ld_v4("ld.shared.v4.b32", "u32", addr, off)))


def region_fields(f: Fields) -> tuple[SSAValue, ...]:
    """(buffer, offset lo, offset hi, rows, row bytes, stride, smem) of a load or store."""
    f.prefetch(isa.REGION_FIELDS)
    off_lo, off_hi = f.halves(isa.GLOBAL_OFFSET)
    return (f.read(isa.BUFFER), off_lo, off_hi, f.read(isa.ROWS), f.read(isa.ROW_BYTES),
            f.read(isa.ROW_STRIDE), f.read(isa.SMEM))


def ready_check(c: Ctx, f: Fields, warp_uniform: bool) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
    """Non-blocking: (ready, bitmap, counter value, wanted) for ``f``.

    ready = ((bitmap ^ parity) & mask) == 0 and, with a counter,
    counter >= epoch * count. With ``warp_uniform`` every lane reads and the
    warp agrees through ``vote.sync.all`` (so each lane did its own acquire).
    """
    b = c.b
    # acquire: pairs with the signalling engines' atom.release.cta
    bm = b.ld("ld.acquire.cta.shared.b64", "b64", c.base, L.SMEM_BITMAP)
    t = b.i("xor.b64", "b64", bm, f.parity)
    t = b.i("and.b64", "b64", t, f.mask)
    p_bits = b.setp("eq.b64", t, 0)
    p_noctr = b.setp("eq.u32", f.wctr, 0)
    cidx = b.i("add.u32", "u32", f.wctr, -1)
    coff = b.i("mul.wide.u32", "u64", cidx, 4)
    caddr = b.i("add.u64", "u64", c.counters, coff)
    cval = b.var("u32", 0)
    # acquire at gpu scope: pairs with the producer SM's red.release.gpu
    b.ld("ld.acquire.gpu.global.u32", "u32", caddr, dst=cval, guard=p_noctr, neg=True)
    wanted = b.i("mul.lo.u32", "u32", c.epoch, f.wcount)
    p_ctr = b.setp("ge.u32", cval, wanted)
    p_ctr = b.i("or.pred", "pred", p_ctr, p_noctr)
    ready = b.i("and.pred", "pred", p_bits, p_ctr)
    if warp_uniform:
        ready = b.i("vote.sync.all.pred", "pred", ready, FULL)
    return ready, bm, cval, wanted


def abort_check(c: Ctx, warp_uniform: bool) -> SSAValue:
    """A predicate: some role (on any SM) has written the error record."""
    b = c.b
    code = b.ld("ld.relaxed.gpu.global.u32", "u32", c.err, 0)
    p = b.setp("ne.u32", code, 0)
    if warp_uniform:
        p = b.i("vote.sync.any.pred", "pred", p, FULL)
    return p


def watchdog_expired(c: Ctx, t0: SSAValue, warp_uniform: bool) -> SSAValue:
    """A predicate: more than the watchdog bound has passed since ``t0``.

    ``t0`` is a register that holds 0 until the first call after progress:
    the timer is read only while an engine is actually stalled.
    """
    b = c.b
    now = b.special("u64", "%globaltimer")
    unset = b.setp("eq.u64", t0, 0)
    b.i("mov.u64", None, now, dst=t0, guard=unset)
    el = b.i("sub.u64", "u64", now, t0)
    p = b.setp("gt.u64", el, c.bound)
    if warp_uniform:
        p = b.i("vote.sync.any.pred", "pred", p, FULL)
    return p


#: SM clock cycles a stalled engine spins on shared memory alone before it
#: also polls the global abort flag and the watchdog timer (keeps the
#: reaction to a toggled bit fast while the memory system is busy)
FAST_SPIN_CYCLES = 1 << 16


def stall_poll(c: Ctx, tclk: SSAValue, tgl: SSAValue, warp_uniform: bool, retry: str, on_abort: str) -> None:
    """The slow part of a spin: branch to ``retry`` unless the engine has
    stalled for a while; then to ``on_abort`` if an abort is flagged; then to
    ``retry`` unless the watchdog expired; else fall through (to a report).

    ``tclk`` / ``tgl`` are 0 until the stall's first poll, and the caller
    resets them to 0 on progress.
    """
    b = c.b
    clk = b.special("u64", "%clock64")
    b.i("mov.u64", None, clk, dst=tclk, guard=b.setp("eq.u64", tclk, 0))
    d = b.i("sub.u64", "u64", clk, tclk)
    slow = b.setp("ge.u64", d, FAST_SPIN_CYCLES)
    if warp_uniform:
        slow = b.i("vote.sync.any.pred", "pred", slow, FULL)
    b.bra(retry, slow, neg=True)
    b.bra(on_abort, abort_check(c, warp_uniform))
    b.bra(retry, watchdog_expired(c, tgl, warp_uniform), neg=True)


def report(
    c: Ctx, code: int, engine: int, pos: SSAValue, f: Fields,
    bm: SSAValue | None, cval: SSAValue | None, wanted: SSAValue | None,
) -> None:
    """Write the error record; one ``atom.cas`` winner fills it in.

    The CAS makes the code word non-zero first, which is also the abort flag
    every spin loop polls.
    """
    b = c.b
    old = b.raw("atom.relaxed.gpu.global.cas.b32", "{0}, [{1}], 0, %d" % code, outs=["b32"], ins=[c.err])[0]
    won = b.setp("eq.u32", old, 0)
    skip = b.new_label("report_done")
    b.bra(skip, won, neg=True)
    st = "st.relaxed.gpu.global.u32"
    b.st(st, c.err, 4 * L.E_SM, c.sm)
    b.st(st, c.err, 4 * L.E_ENGINE, engine)
    b.st(st, c.err, 4 * L.E_POS, pos)
    b.st(st, c.err, 4 * L.E_UOP, f.uop)
    for word, v in ((L.E_WAIT_MASK, f.mask), (L.E_WAIT_PARITY, f.parity), (L.E_BITMAP, bm)):
        if v is None:
            continue
        lo, hi = b.unpack64(v)
        b.st(st, c.err, 4 * word, lo)
        b.st(st, c.err, 4 * word + 4, hi)
    b.st(st, c.err, 4 * L.E_COUNTER, f.wctr)
    if cval is not None and wanted is not None:
        b.st(st, c.err, 4 * L.E_COUNTER_VALUE, cval)
        b.st(st, c.err, 4 * L.E_COUNTER_WANTED, wanted)
    b.place(skip)


def spin_wait(c: Ctx, f: Fields, engine: int, pos: SSAValue, on_abort: str, warp_uniform: bool) -> None:
    """Block until ``f`` may start; on watchdog expiry or abort jump to ``on_abort``."""
    b = c.b
    t0 = b.var("u64", 0)
    tclk = b.var("u64", 0)
    top, go = b.new_label("spin"), b.new_label("go")
    b.place(top)
    ready, bm, cval, wanted = ready_check(c, f, warp_uniform)
    b.bra(go, ready)
    stall_poll(c, tclk, t0, warp_uniform, top, on_abort)
    report(c, L.ERR_WATCHDOG, engine, pos, f, bm, cval, wanted)
    b.bra(on_abort)
    b.place(go)


def signal(c: Ctx, sig: SSAValue, rel: SSAValue, leader: SSAValue) -> None:
    """Completion by ``leader``: toggle the signal bits, release the counter.

    The caller has made the role's writes visible to ``leader`` (a barrier;
    async-proxy writes also fenced with ``fence.proxy.async``).
    """
    b = c.b
    has_sig = b.setp("ne.b64", sig, 0)
    p = b.i("and.pred", "pred", has_sig, leader)
    # release at cta scope: everything this role wrote to shared memory
    # happens-before a waiter's ld.acquire that observes the toggled bits
    b.raw("atom.release.cta.shared.xor.b64", "{0}, [{1}], {2}", outs=["b64"], ins=[c.base, sig], guard=p)
    has_rel = b.setp("ne.u32", rel, 0)
    p = b.i("and.pred", "pred", has_rel, leader)
    ridx = b.i("add.u32", "u32", rel, -1)
    # red.release.gpu is a release: cumulative over the writes of the whole
    # role (ordered before this thread by the caller's barrier), which become
    # visible before the counter moves. Option release_fence=1 adds the
    # equivalent fence.acq_rel.gpu in front of it (measured: 3% slower on the
    # 16-layer MLP stack, no other effect).
    if c.options.release_fence:
        b.raw("fence.acq_rel.gpu", "", guard=p)
    roff = b.i("mul.wide.u32", "u64", ridx, 4)
    raddr = b.i("add.u64", "u64", c.counters, roff)
    # release at gpu scope: pairs with the waiting SM's ld.acquire.gpu
    b.raw("red.release.gpu.global.add.u32", "[{0}], 1", ins=[raddr], guard=p)


def queue_of(c: Ctx, engine: int) -> tuple[SSAValue, SSAValue]:
    """(first instruction, count) of this SM's queue for ``engine``."""
    b = c.b
    row = b.i("mad.lo.u32", "u32", c.sm, c.target.num_engines, engine)
    off = b.i("mul.wide.u32", "u64", row, isa.QUEUE_ENTRY_BYTES)
    a = b.i("add.u64", "u64", c.queues, off)
    start = b.ld("ld.global.nc.u32", "u32", a, isa.QUEUE_START.byte_offset)
    count = b.ld("ld.global.nc.u32", "u32", a, isa.QUEUE_COUNT.byte_offset)
    return start, count


def buffer_address(c: Ctx, buf: SSAValue, off_lo: SSAValue, off_hi: SSAValue) -> SSAValue:
    """Global address of a buffer argument plus a 64-bit byte offset."""
    b = c.b
    po = b.i("mul.wide.u32", "u64", buf, 8)
    pa = b.i("add.u64", "u64", c.buffers, po)
    ptr = b.ld("ld.global.nc.u64", "u64", pa, 0)
    off = b.pack64(off_lo, off_hi)
    return b.i("add.u64", "u64", ptr, off)


# ---------------------------------------------------------------------------
# tensor copies (cp.async.bulk.tensor through the program's tensor maps)
# ---------------------------------------------------------------------------


def issuer_index(c: Ctx, from_top: SSAValue) -> SSAValue:
    """The first copy index of this lane: the lane, or ``31 - lane`` with ``from_top``.

    Lane ``i`` issues copies ``i, i + 32, ...`` of a load; counted from the
    top, the copies of a load go to the lanes the other loads leave idle.
    """
    b = c.b
    top = b.i("sub.u32", "u32", 31, c.lane)
    return b.i("selp.u32", "u32", top, c.lane, from_top)


def cross_sm_fence(c: Ctx, p_ctr: SSAValue, first: SSAValue, n: SSAValue) -> None:
    """``fence.proxy.async.global`` on the lanes that issue a counter-waiting load's ``n`` copies."""
    b = c.b
    p = b.i("and.pred", "pred", p_ctr, b.setp("lt.u32", first, n))
    b.raw("fence.proxy.async.global", "", guard=p)


def tensor_boxes(c: Ctx, f: Fields, smem0: SSAValue, row_bytes: SSAValue, issue,
                 first: SSAValue | None = None, fence_if: SSAValue | None = None) -> None:
    """Call ``issue(smem, tmap, chunk, row)`` for each box of the region, boxes split over the lanes.

    Box k covers rows ``TROW + k * TBOX_ROWS ..`` and lands at
    ``smem0 + k * TBOX_ROWS * row_bytes`` (tiles are dense row-major). Lane
    i takes boxes ``first, first + 32, ..`` (``first``: the lane by default);
    with ``fence_if`` the issuing lanes first fence the async proxy.
    """
    b = c.b
    tm, boxes, box_rows, chunk, row0 = (f.read(x) for x in (isa.TMAP, isa.TBOXES, isa.TBOX_ROWS, isa.TCHUNK, isa.TROW))
    if fence_if is not None:
        cross_sm_fence(c, fence_if, first, boxes)
    tidx = b.i("add.u32", "u32", tm, -1)
    toff = b.i("mul.wide.u32", "u64", tidx, L.TMAP_BYTES)
    tmap = b.i("add.u64", "u64", c.tmaps, toff)
    box_bytes = b.i("mul.lo.u32", "u32", box_rows, row_bytes)

    def box(k: SSAValue) -> None:
        sa = b.i("mad.lo.u32", "u32", k, box_bytes, smem0)
        r = b.i("mad.lo.u32", "u32", k, box_rows, row0)
        issue(sa, tmap, chunk, r)

    b.for_range(c.lane if first is None else first, boxes, 32, box, "tbox")


def tensor_load(c: Ctx, f: Fields, dst0: SSAValue, row_bytes: SSAValue, total: SSAValue, bar: SSAValue,
                first: SSAValue, p_ctr: SSAValue) -> None:
    """Issue a load as tensor copies completing on the ring slot's mbarrier.

    ``first`` / ``p_ctr``: see :func:`issuer_index` and the load engine's
    cross-SM fence.

    Racecheck attributes a plain bulk copy's shared-memory write to the
    issuing thread and cannot see the mbarrier + dependency-bit chain that
    orders it before the compute engine's reads; a tensor copy is the copy
    engine's own access, so no thread pair is reported (the order is the
    same: mbarrier completion, then the bits' release/acquire).
    """
    b = c.b
    lane0 = b.setp("eq.u32", c.lane, 0)
    b.raw("mbarrier.arrive.expect_tx.shared::cta.b64", "{0}, [{1}], {2}", outs=["b64"],
          ins=[bar, total], guard=lane0)
    b.raw("bar.warp.sync", "%d" % FULL)

    def issue(sa, tmap, chunk, r):
        b.raw("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
              "[{0}], [{1}, {{{2}, {3}, {4}}}], [{5}]", ins=[sa, tmap, c.zero, chunk, r, bar])

    tensor_boxes(c, f, dst0, row_bytes, issue, first, p_ctr)
    b.raw("bar.warp.sync", "%d" % FULL)


def tensor_store(c: Ctx, f: Fields, src0: SSAValue, row_bytes: SSAValue) -> None:
    """Store a tile with tensor copies and wait until their writes are performed.

    The compute threads wrote the tile with generic stores, which reach this
    warp through the bits' release/acquire; ``fence.proxy.async.shared::cta``
    then orders them before the copy engine's reads. Each issuing lane
    commits and waits for its own bulk group; then the async-proxy writes
    are fenced against the generic proxy, so the store engine's release
    (bits, counter) covers them as it covers ``st.global``.
    """
    b = c.b
    b.raw("fence.proxy.async.shared::cta", "")

    def issue(sa, tmap, chunk, r):
        b.raw("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group",
              "[{0}, {{{1}, {2}, {3}}}], [{4}]", ins=[tmap, c.zero, chunk, r, sa])

    tensor_boxes(c, f, src0, row_bytes, issue)
    b.raw("cp.async.bulk.commit_group", "")
    b.raw("cp.async.bulk.wait_group", "0")
    b.raw("fence.proxy.async.global", "")
    b.raw("bar.warp.sync", "%d" % FULL)


# ---------------------------------------------------------------------------
# load engine
# ---------------------------------------------------------------------------


def mbar_count(c: Ctx) -> int:
    """Arrivals that complete a load-ring mbarrier phase: 1 (bulk copies,
    completion by transaction bytes) or 32 (one per lane, ``lsu`` path)."""
    return 32 if c.options.lsu_loads else 1


def _issue_lsu(c: Ctx, gptr: SSAValue, dst0: SSAValue, rows: SSAValue, row_bytes: SSAValue,
               stride: SSAValue, total: SSAValue, contig: SSAValue, bar: SSAValue) -> None:
    """The ``lsu`` load path: 16-byte ``cp.async.cg`` per lane (generic proxy),
    each lane then arrives on the slot's mbarrier when its copies land
    (``cp.async.mbarrier.arrive.noinc``; the barrier counts 32 arrivals)."""
    b = c.b
    n = b.i("selp.u32", "u32", 1, rows, contig)
    rb = b.i("selp.u32", "u32", total, row_bytes, contig)
    lane16 = b.i("shl.b32", "u32", c.lane, 4)
    span = 512 * 3
    has_main = b.setp("gt.u32", rb, span)
    main_end = b.i("sub.u32", "u32", rb, span)
    main_end = b.i("selp.u32", "u32", main_end, 0, has_main)
    r = b.var("u32", 0)
    rl, rd = b.new_label("lsu_row"), b.new_label("lsu_rows_done")
    b.place(rl)
    b.bra(rd, b.setp("ge.u32", r, n))
    so = b.i("mul.wide.u32", "u64", r, stride)
    srow = b.i("add.u64", "u64", gptr, so)
    drow = b.i("mad.lo.u32", "u32", r, rb, dst0)
    off = b.var("u32", 0)
    b.set(off, lane16)
    for unroll, end, hint in ((4, main_end, "lsu_main"), (1, rb, "lsu_tail")):
        top, done = b.new_label(hint), b.new_label(hint + "_end")
        b.place(top)
        b.bra(done, b.setp("ge.u32", off, end))
        o64 = b.i("cvt.u64.u32", "u64", off)
        src = b.i("add.u64", "u64", srow, o64)
        dst = b.i("add.u32", "u32", drow, off)
        for k in range(unroll):
            o = f"+{512 * k}" if k else ""
            b.raw("cp.async.cg.shared.global", "[{0}%s], [{1}%s], 16" % (o, o), ins=[dst, src])
        b.i("add.u32", "u32", off, 512 * unroll, dst=off)
        b.bra(top)
        b.place(done)
    b.i("add.u32", "u32", r, 1, dst=r)
    b.bra(rl)
    b.place(rd)
    b.raw("cp.async.mbarrier.arrive.noinc.shared::cta.b64", "[{0}]", ins=[bar])
    b.raw("bar.warp.sync", "%d" % FULL)


def ring_barrier(c: Ctx, index) -> tuple:
    """(ring slot, mbarrier address) of the load with queue position ``index``."""
    b = c.b
    slot = b.i("and.b32", "u32", index, L.LOAD_RING - 1)
    bar = b.i("mad.lo.u32", "u32", slot, 8, c.base)
    bar = b.i("add.u32", "u32", bar, L.SMEM_MBARRIERS)
    return slot, bar


def ring_landed(c: Ctx, index, phases, wait: str) -> tuple:
    """(ring slot, warp-uniform predicate) saying whether load ``index`` has landed.

    ``wait`` is ``test_wait`` (a poll) or ``try_wait`` (may suspend a while);
    the expected phase of each slot's mbarrier is its bit in ``phases``.
    """
    b = c.b
    slot, bar = ring_barrier(c, index)
    parity = b.i("shr.b32", "u32", phases, slot)
    parity = b.i("and.b32", "u32", parity, 1)
    landed = b.raw(f"mbarrier.{wait}.parity.shared::cta.b64", "{0}, [{1}], {2}", outs=["pred"],
                   ins=[bar, parity])[0]
    return slot, b.i("vote.sync.all.pred", "pred", landed, FULL)


def load_engine(c: Ctx) -> None:
    """Warp 0: issue loads ahead through the mbarrier ring, retire in order.

    All 32 lanes run the same control flow; lane 0 arms the mbarrier and
    signals, the lanes split a tile's rows between bulk copies. The loop
    issues the next load whenever its wait is satisfied and a ring slot is
    free, and otherwise retires the oldest in-flight load if its bytes have
    landed, so a load waiting on bits that an older load's retirement (or a
    consumer of it) will toggle can never deadlock the engine.
    """
    b = c.b
    engine = c.target.engine_index(EngineKind.LOAD)
    start, count = queue_of(c, engine)
    lane0 = b.setp("eq.u32", c.lane, 0)
    pos = b.var("u32", 0)
    ret = b.var("u32", 0)
    phases = b.var("u32", 0)  # bit s: the parity of slot s's current phase
    t0 = b.var("u64", 0)  # start of the current stall (0: not stalled)
    tclk = b.var("u64", 0)
    lsu = c.options.lsu_loads
    # (the lsu path's own cp.async would join the fetcher's commit groups)
    fe = WarpFetcher(c, start, count) if lsu else SmemFetcher(c, start, count, engine)
    fe.prime(pos)
    top, retire, idle = b.new_label("ld_top"), b.new_label("ld_retire"), b.new_label("ld_idle")
    done, abort = b.new_label("ld_done"), b.new_label("ld_abort")

    b.place(top)
    b.bra(retire, b.setp("ge.u32", pos, count))
    inflight = b.i("sub.u32", "u32", pos, ret)
    b.bra(retire, b.setp("ge.u32", inflight, L.LOAD_RING))
    f = fe.fields() if lsu else fe.fields_at(pos)
    ready, _bm, _cv, _wt = ready_check(c, f, warp_uniform=True)
    b.bra(retire, ready, neg=True)
    # -- issue ---------------------------------------------------------------
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
    slot, bar = ring_barrier(c, pos)
    # remember what to signal at retirement (retired in order, from the ring)
    info = b.i("mad.lo.u32", "u32", slot, 16, c.base)
    b.raw("st.shared.v4.b32", "[{0}+%d], {{{1}, {2}, {3}, 0}}" % L.SMEM_RING_INFO,
          ins=[info, *f.halves(isa.SIGNAL_MASK), f.rel], guard=lane0)
    opcode = f.read(isa.OPCODE)
    is_load = b.setp("eq.u32", opcode, isa.OP_LOAD)
    nop_path, issued = b.new_label("ld_nop"), b.new_label("ld_issued")
    b.bra(nop_path, is_load, neg=True)
    bufi, off_lo, off_hi, rows, row_bytes, stride, smem = region_fields(f)
    total = b.i("mul.lo.u32", "u32", rows, row_bytes)
    dst0 = b.i("add.u32", "u32", c.arena, smem)
    if c.options.tensor_copies_enabled:
        plain = b.new_label("ld_plain")
        b.bra(plain, b.setp("eq.u32", f.read(isa.TMAP), 0))
        tensor_load(c, f, dst0, row_bytes, total, bar, first, p_ctr)
        b.bra(issued)
        b.place(plain)
    # plain copies address the buffer through the pointer table
    gptr = buffer_address(c, bufi, off_lo, off_hi)
    contig = b.setp("eq.u32", stride, row_bytes)
    if c.options.lsu_loads:
        b.raw("fence.proxy.async.global", "", guard=p_ctr)
        _issue_lsu(c, gptr, dst0, rows, row_bytes, stride, total, contig, bar)
        b.bra(issued)
    # a dense region (stride == row bytes) is one copy
    # a dense region is cut into up to `split` chunks (multiples of 16 bytes)
    # that the lanes issue as separate copies; strided regions go row by row
    split = c.options.split_copies
    unit = 16 * split
    chunk = b.i("add.u32", "u32", total, unit - 1)
    chunk = b.i("div.u32", "u32", chunk, unit) if split > 1 else b.i("shr.u32", "u32", chunk, 4)
    chunk = b.i("shl.b32", "u32", chunk, 4)
    nchunks = b.i("add.u32", "u32", total, chunk)
    nchunks = b.i("add.u32", "u32", nchunks, -1)
    nchunks = b.i("div.u32", "u32", nchunks, chunk)
    n = b.i("selp.u32", "u32", nchunks, rows, contig)
    rb = b.i("selp.u32", "u32", chunk, row_bytes, contig)
    stride = b.i("selp.u32", "u32", chunk, stride, contig)
    # arm the barrier with the byte count before any copy can complete on it
    b.raw("mbarrier.arrive.expect_tx.shared::cta.b64", "{0}, [{1}], {2}", outs=["b64"],
          ins=[bar, total], guard=lane0)
    b.raw("bar.warp.sync", "%d" % FULL)
    cross_sm_fence(c, p_ctr, first, n)

    def copy(r: SSAValue) -> None:
        so = b.i("mul.wide.u32", "u64", r, stride)
        src = b.i("add.u64", "u64", gptr, so)
        dst = b.i("mad.lo.u32", "u32", r, rb, dst0)
        done_b = b.i("mul.lo.u32", "u32", r, rb)
        left = b.i("sub.u32", "u32", total, done_b)
        size = b.i("min.u32", "u32", rb, left)
        b.raw("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
              "[{0}], [{1}], {2}, [{3}]", ins=[dst, src, size, bar])

    b.for_range(first, n, 32, copy, "ld_rows")
    b.raw("bar.warp.sync", "%d" % FULL)
    b.bra(issued)
    b.place(nop_path)
    # a nop (or anything not a load) completes at once but still retires in order
    b.raw("mbarrier.arrive.shared::cta.b64", "{0}, [{1}], %d" % mbar_count(c), outs=["b64"], ins=[bar],
          guard=lane0)
    b.raw("bar.warp.sync", "%d" % FULL)
    b.place(issued)
    b.i("add.u32", "u32", pos, 1, dst=pos)
    fe.advance(pos)
    b.set(t0, 0)
    b.set(tclk, 0)
    b.bra(top)

    # -- retire the oldest in-flight load if it has landed --------------------
    b.place(retire)
    b.bra(idle, b.setp("eq.u32", ret, pos))
    rslot, landed = ring_landed(c, ret, phases, "test_wait")
    b.bra(idle, landed, neg=True)
    bit = b.i("shl.b32", "u32", 1, rslot)
    b.i("xor.b32", "u32", phases, bit, dst=phases)
    rinfo = b.i("mad.lo.u32", "u32", rslot, 16, c.base)
    slo, shi, srel, _ = b.ld_v4("ld.shared.v4.b32", "b32", rinfo, L.SMEM_RING_INFO)
    signal(c, b.pack64(slo, shi), srel, lane0)
    b.raw("bar.warp.sync", "%d" % FULL)
    b.i("add.u32", "u32", ret, 1, dst=ret)
    b.set(t0, 0)
    b.set(tclk, 0)
    b.bra(top)

    # -- nothing to do right now: done, aborted, or keep polling ----------------
    b.place(idle)
    fin = b.setp("ge.u32", pos, count)
    empty = b.setp("eq.u32", ret, pos)
    b.bra(done, b.i("and.pred", "pred", fin, empty))
    stall_poll(c, tclk, t0, True, top, abort)
    # report the instruction the engine is stuck on: the next to issue if any
    # remain (its wait is unsatisfied), else the oldest in flight
    has_next = b.setp("lt.u32", pos, count)
    which = b.i("selp.u32", "u32", pos, ret, has_next)
    sf = fetch(c, start, which)
    _r, sbm, scv, swt = ready_check(c, sf, warp_uniform=True)
    report(c, L.ERR_WATCHDOG, engine, which, sf, sbm, scv, swt)
    b.place(abort)
    # drain: copies still in flight write into this CTA's shared memory, so
    # wait for them (they complete: their sources are valid) before exiting
    dl, dd = b.new_label("ld_drain"), b.new_label("ld_drain_done")
    b.place(dl)
    b.bra(dd, b.setp("eq.u32", ret, pos))
    dslot, ok = ring_landed(c, ret, phases, "try_wait")
    b.bra(dl, ok, neg=True)
    dbit = b.i("shl.b32", "u32", 1, dslot)
    b.i("xor.b32", "u32", phases, dbit, dst=phases)
    b.i("add.u32", "u32", ret, 1, dst=ret)
    b.bra(dl)
    b.place(dd)
    b.place(done)
    b.raw("ret", "")


# ---------------------------------------------------------------------------
# store engine
# ---------------------------------------------------------------------------


def store_engine(c: Ctx) -> None:
    """Warp 1: copy result tiles from shared to global memory, in queue order.

    16-byte ``ld.shared.v4`` / ``st.global.v4`` when the destination rows are
    16-byte aligned, else 2-byte copies. Then a warp barrier, and lane 0
    signals (cta scope: enough for this CTA's engines, including a later load
    of the same global data) and, with a release counter, fences at gpu scope
    and releases the counter.
    """
    b = c.b
    engine = c.target.engine_index(EngineKind.STORE)
    start, count = queue_of(c, engine)
    lane0 = b.setp("eq.u32", c.lane, 0)
    pos = b.var("u32", 0)
    fe = SmemFetcher(c, start, count, engine)
    fe.prime(pos)
    top, done, nxt = b.new_label("st_top"), b.new_label("st_done"), b.new_label("st_next")
    b.place(top)
    b.bra(done, b.setp("ge.u32", pos, count))
    f = fe.fields_at(pos)
    spin_wait(c, f, engine, pos, done, warp_uniform=True)
    opcode = f.read(isa.OPCODE)
    b.bra(nxt, b.setp("ne.u32", opcode, isa.OP_STORE))
    bufi, off_lo, off_hi, rows, row_bytes, stride, smem = region_fields(f)
    src0 = b.i("add.u32", "u32", c.arena, smem)
    if c.options.tensor_copies_enabled:
        plain = b.new_label("st_plain")
        b.bra(plain, b.setp("eq.u32", f.read(isa.TMAP), 0))
        tensor_store(c, f, src0, row_bytes)
        b.bra(nxt)
        b.place(plain)
    gptr = buffer_address(c, bufi, off_lo, off_hi)
    g64 = b.i("cvt.u64.u32", "u64", stride)
    rb64 = b.i("cvt.u64.u32", "u64", row_bytes)
    al = b.i("or.b64", "b64", gptr, g64)
    al = b.i("or.b64", "b64", al, rb64)  # 16-byte path only for whole 16-byte rows
    al = b.i("and.b64", "b64", al, 15)
    aligned = b.setp("eq.b64", al, 0)
    for wide in (True, False):
        unit = 16 if wide else 2
        lab_skip = b.new_label("st_skip")
        b.bra(lab_skip, aligned, neg=wide)
        units = b.i("shr.u32", "u32", row_bytes, 4 if wide else 1)

        def row(r: SSAValue, unit: int = unit, wide: bool = wide, units: SSAValue = units) -> None:
            srow = b.i("mad.lo.u32", "u32", r, row_bytes, src0)
            go = b.i("mul.wide.u32", "u64", r, stride)
            grow = b.i("add.u64", "u64", gptr, go)

            def column(j: SSAValue) -> None:
                sa = b.i("mad.lo.u32", "u32", j, unit, srow)
                ga = b.i("mul.wide.u32", "u64", j, unit)
                ga = b.i("add.u64", "u64", grow, ga)
                if wide:
                    b.st_v4("st.global.v4.b32", ga, 0, b.ld_v4("ld.shared.v4.b32", "b32", sa, 0))
                else:
                    b.st("st.global.b16", ga, 0, b.ld("ld.shared.b16", "b16", sa, 0))

            b.for_range(c.lane, units, 32, column, "st_col")

        b.for_range(0, rows, 1, row, "st_row")
        b.place(lab_skip)
    b.place(nxt)
    # make every lane's global stores visible at gpu scope before lane 0's
    # release of the counter (and the WAR bit on the tile it read)
    # a load on this SM may read these bytes through the async proxy after
    # waiting on our signal bits: order the generic stores before it
    has_sig = b.setp("ne.b64", f.signal, 0)
    b.raw("fence.proxy.async.global", "", guard=has_sig)
    # the warp barrier orders every lane's global stores before lane 0's
    # gpu-scope release of the counter (signal(): red.release.gpu)
    b.raw("bar.warp.sync", "%d" % FULL)
    signal(c, f.signal, f.rel, lane0)
    b.raw("bar.warp.sync", "%d" % FULL)
    b.i("add.u32", "u32", pos, 1, dst=pos)
    fe.advance(pos)
    b.bra(top)
    b.place(done)
    b.raw("ret", "")


# ---------------------------------------------------------------------------
# compute engine
# ---------------------------------------------------------------------------


def compute_engine(c: Ctx, families: list[int]) -> None:
    """Warps 2..: the first compute warp waits, a named barrier releases the
    group, the family body runs, a barrier, and the leader thread signals."""
    from vdir.lowering.families import ComputeCtx, body_of

    b = c.b
    nthreads = c.target.compute_threads
    engine = c.target.engine_index(EngineKind.COMPUTE)
    start, count = queue_of(c, engine)
    ct = b.i("sub.u32", "u32", c.tid, 32 * L.COMPUTE_FIRST_WARP)
    cw = b.i("shr.u32", "u32", ct, 5)
    leader = b.setp("eq.u32", ct, 0)
    first_warp = b.setp("eq.u32", cw, 0)
    pos = b.var("u32", 0)
    # the waiting (first) warp prefetches instructions into the window; the
    # group reads the current one from there after the barrier
    fe = SmemFetcher(c, start, count, engine)
    prime_skip = b.new_label("cp_prime_skip")
    b.bra(prime_skip, first_warp, neg=True)
    fe.prime(pos)
    b.place(prime_skip)
    top, done, sync = b.new_label("cp_top"), b.new_label("cp_done"), b.new_label("cp_sync")
    body_done, abort_w = b.new_label("cp_body_done"), b.new_label("cp_abort")
    bar_txt = "%d, %d" % (L.COMPUTE_BARRIER, nthreads)

    b.place(top)
    b.bra(done, b.setp("ge.u32", pos, count))
    b.bra(sync, first_warp, neg=True)
    fw = fe.fields_at(pos)
    spin_wait(c, fw, engine, pos, abort_w, warp_uniform=True)
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
    fam = f.read(isa.FAMILY)
    f.prefetch(isa.COMPUTE_FIELDS)
    cc = ComputeCtx(
        c=c, ct=ct, cw=cw, nthreads=nthreads,
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
    b.place(body_done)
    # every compute thread's shared-memory writes precede the leader's release
    b.raw("barrier.sync", bar_txt)
    signal(c, f.signal, f.rel, leader)
    b.i("add.u32", "u32", pos, 1, dst=pos)
    b.bra(top, first_warp, neg=True)
    fe.advance(pos)
    b.bra(top)
    b.place(done)
    b.raw("ret", "")


# ---------------------------------------------------------------------------
# the kernel
# ---------------------------------------------------------------------------


def build_kernel(kernel: ptx.KernelOp, target: TargetDescription, families: list[int],
                 options: LoweringOptions = LoweringOptions()) -> None:
    """Fill ``kernel``'s body: prologue, then one branch per warp role."""
    L.check_engines(target)
    b = PtxBuilder(kernel)
    p = {name: b.param(t, name) for t, name in L.PARAMS}
    gl = {k: b.i("cvta.to.global.u64", "u64", p[k])
          for k in ("p_instrs", "p_queues", "p_buffers", "p_counters", "p_error", "p_tmaps")}
    tid = b.special("u32", "%tid.x")
    base = b.mov("u32", "vdir_smem")
    c = Ctx(
        b=b, target=target, instrs=gl["p_instrs"], queues=gl["p_queues"], buffers=gl["p_buffers"],
        counters=gl["p_counters"], tmaps=gl["p_tmaps"], epoch=p["p_epoch"], err=gl["p_error"], bound=p["p_watchdog_ns"],
        tid=tid, warp=b.i("shr.u32", "u32", tid, 5), lane=b.i("and.b32", "u32", tid, 31),
        sm=b.special("u32", "%ctaid.x"), base=base, arena=b.i("add.u32", "u32", base, L.HEADER_BYTES),
        options=options, zero=b.mov("u32", 0),
    )
    # thread 0 clears the header and initialises the mbarrier ring
    t0 = b.setp("eq.u32", tid, 0)
    b.st("st.shared.u64", base, L.SMEM_BITMAP, 0, guard=t0)
    b.st("st.shared.u32", base, L.SMEM_ABORT, 0, guard=t0)
    for s in range(L.LOAD_RING):
        b.raw("mbarrier.init.shared::cta.b64", "[{0}+%d], %d" % (L.SMEM_MBARRIERS + 8 * s, mbar_count(c)),
              ins=[base], guard=t0)
    # make the initialised mbarriers visible to the async proxy and the CTA
    b.raw("fence.mbarrier_init.release.cluster", "", guard=t0)
    b.raw("fence.proxy.async.shared::cta", "", guard=t0)
    b.raw("bar.sync", "0")
    lab_store, lab_compute = b.new_label("role_store"), b.new_label("role_compute")
    b.bra(lab_store, b.setp("eq.u32", c.warp, L.STORE_WARP))
    b.bra(lab_compute, b.setp("ge.u32", c.warp, L.COMPUTE_FIRST_WARP))
    load_engine(c)
    b.place(lab_store)
    store_engine(c)
    b.place(lab_compute)
    compute_engine(c, families)
