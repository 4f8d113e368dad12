"""Instruction fetch: where an engine's queue is, and how its instructions reach registers.

Each role walks its own queue of 128-byte instructions (``vdir/isa.py``).
:class:`SmemFetcher` prefetches them with ``cp.async`` into a shared-memory
window, :class:`WarpFetcher` (the ``lsu`` load path) into registers, one word
per lane; :func:`fetch` loads one directly (slow paths: reports).
:class:`Fields` decodes an instruction's fields (``isa.Field``) into registers.

Loops (programs with ``isa.OP_LOOP`` records; the kernel is built in loop
mode only for those, so the PTX of other programs is unchanged): a
:class:`Cursor` walks the records in execution order (body instruction
``j`` of trip ``t`` is base record ``j`` plus ``t`` times step record
``j``, word by word), one for the copies issued ahead and one for the
instruction the engine is at. A window slot then holds a base and its step
(:data:`~vdir.lowering.layout.LOOP_FETCH_DEPTH` slots of 256 bytes, the
same bytes as the plain window), and :func:`loop_fields` adds ``t * step``
to every word it loads. The issuing cursor runs through records without
knowing where loops start; when the engine reaches a loop record it waits
for the copies in flight, enters the loop in both cursors and refills the
window from the loop's first instruction (:meth:`SmemFetcher.enter_loop`).

Memory-model note: a release waits for the releasing thread's outstanding
loads (measured: register prefetches of the next instructions made every
signal wait for a global round trip), so the engines prefetch their
instructions with ``cp.async`` into shared memory (:class:`SmemFetcher`),
never with plain loads still in flight at a signal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import SSAValue

from vdir import isa
from vdir.lowering import layout as L
from vdir.lowering.builder import PtxBuilder
from vdir.lowering.kernel.context import FULL, Ctx


def queue_of(c: Ctx, engine: int) -> tuple[SSAValue, SSAValue]:
    """(first instruction, count) of this SM's queue for ``engine``."""
    b = c.b
    row = b.i("mad.lo.u32", "u32", c.sm, c.target.num_engines, engine)
    off = b.i("mul.wide.u32", "u64", row, isa.QUEUE_ENTRY_BYTES)
    a = b.i("add.u64", "u64", c.queues, off)
    start = b.ld("ld.global.nc.u32", "u32", a, isa.QUEUE_START.byte_offset)
    count = b.ld("ld.global.nc.u32", "u32", a, isa.QUEUE_COUNT.byte_offset)
    return start, count


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
    #: ``fresh(byte_offset)`` loads a word without the cache, for reads on a
    #: branch (a cached register defined on one branch must not be reused
    #: on another)
    fresh: Callable[[int], SSAValue] | None = None

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

    def read_on_branch(self, f: isa.Field) -> SSAValue:
        """A one-word field read where only some paths run (not cached; see ``fresh``)."""
        assert f.nwords == 1 and not f.packed, f"{f.name}: read_on_branch reads whole words"
        return (self.fresh or self.load)(f.byte_offset)

    def prefetch(self, fields: tuple[isa.Field, ...]) -> None:
        """Load the words of ``fields`` now, in order (loads ahead of their uses)."""
        for f in fields:
            self.halves(f)


#: the fields decoded for every instruction, in load order
SYNC_FIELDS = (isa.OPCODE, isa.WAIT_MASK, isa.WAIT_PARITY, isa.SIGNAL_MASK, isa.WAIT_COUNTER,
               isa.WAIT_COUNT, isa.RELEASE_COUNTER, isa.UOP_ID)


def fields_from(c: Ctx, load: Callable[[int], SSAValue], fresh: Callable[[int], SSAValue] | None = None) -> Fields:
    """Decode the sync fields through ``load(byte_offset)`` (``fresh``: the uncached loader)."""
    b = c.b
    w = {f: [load(f.byte_offset + k * isa.WORD_BYTES) for k in range(f.nwords)] for f in SYNC_FIELDS}
    return Fields(
        b=b, load=load, mask=b.pack64(*w[isa.WAIT_MASK]), parity=b.pack64(*w[isa.WAIT_PARITY]),
        signal=b.pack64(*w[isa.SIGNAL_MASK]), wctr=w[isa.WAIT_COUNTER][0], wcount=w[isa.WAIT_COUNT][0],
        rel=w[isa.RELEASE_COUNTER][0], uop=w[isa.UOP_ID][0], fresh=fresh,
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


def loop_fields(c: Ctx, addr: SSAValue, trip: SSAValue) -> Fields:
    """Decode the instruction whose base is in shared memory at ``addr`` and its step 128 bytes on,
    as trip ``trip`` of its loop runs it: every word is base + trip * step (mod 2^32)."""
    b = c.b

    def ld_v4(off: int) -> list[SSAValue]:
        base = b.ld_v4("ld.shared.v4.b32", "u32", addr, off)
        step = b.ld_v4("ld.shared.v4.b32", "u32", addr, isa.INSTR_BYTES + off)
        return [b.i("mad.lo.u32", "u32", s, trip, w) for w, s in zip(base, step, strict=True)]

    def fresh(off: int) -> SSAValue:
        base = b.ld("ld.shared.u32", "u32", addr, off)
        return b.i("mad.lo.u32", "u32", b.ld("ld.shared.u32", "u32", addr, isa.INSTR_BYTES + off), trip, base)

    return fields_from(c, vector_loader(ld_v4), fresh)


class Cursor:
    """Where a walk of one queue is, in execution order, as registers.

    Outside a loop ``rec`` is the record of the next instruction and ``body``
    is 0; inside one, ``rec`` is the loop's first base, instruction ``j`` of
    trip ``t`` of a ``body``-instruction loop run ``trips`` times.
    """

    def __init__(self, b: PtxBuilder):
        self.b = b
        self.rec, self.j, self.t = b.var("u32", 0), b.var("u32", 0), b.var("u32", 0)
        self.body, self.trips = b.var("u32", 0), b.var("u32", 0)

    def registers(self) -> tuple[SSAValue, ...]:
        return (self.rec, self.j, self.t, self.body, self.trips)

    def base_record(self) -> SSAValue:
        """Queue position of the current instruction's (base) record."""
        return self.b.i("add.u32", "u32", self.rec, self.j)

    def step_record(self) -> SSAValue:
        """Queue position of its step record (meaningless, and harmless, outside a loop: t is 0)."""
        return self.b.i("add.u32", "u32", self.base_record(), self.body)

    def finished(self, count: SSAValue) -> SSAValue:
        """A predicate: the walk has passed the queue's last record."""
        b = self.b
        past = b.setp("ge.u32", self.rec, count)
        return b.i("and.pred", "pred", past, b.setp("eq.u32", self.body, 0))

    def advance(self) -> None:
        """Move to the next instruction: the next record, the next body instruction or trip, or past the loop."""
        b = self.b
        in_loop = b.setp("ne.u32", self.body, 0)
        b.i("add.u32", "u32", self.rec, 1, dst=self.rec, guard=in_loop, neg=True)
        b.i("add.u32", "u32", self.j, 1, dst=self.j, guard=in_loop)
        self._wrap(b.i("and.pred", "pred", in_loop, b.setp("ge.u32", self.j, self.body)))

    def _wrap(self, wrap: SSAValue) -> None:
        """At the end of a trip: the next trip, or past the loop after the last."""
        b = self.b
        b.i("mov.u32", "u32", 0, dst=self.j, guard=wrap)
        b.i("add.u32", "u32", self.t, 1, dst=self.t, guard=wrap)
        done = b.i("and.pred", "pred", wrap, b.setp("ge.u32", self.t, self.trips))
        b.i("mad.lo.u32", "u32", self.body, 2, self.rec, dst=self.rec, guard=done)
        b.i("mov.u32", "u32", 0, dst=self.body, guard=done)
        b.i("mov.u32", "u32", 0, dst=self.t, guard=done)

    def enter(self, body: SSAValue, trips: SSAValue) -> None:
        """At a loop record: start trip 0 of its loop."""
        b = self.b
        b.i("add.u32", "u32", self.rec, 1, dst=self.rec)
        b.set(self.body, body)
        b.set(self.trips, trips)
        b.set(self.j, 0)
        b.set(self.t, 0)

    def copy_from(self, other: Cursor) -> None:
        """Set this cursor to where ``other`` is."""
        for mine, theirs in zip(self.registers(), other.registers(), strict=True):
            self.b.set(mine, theirs)


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
    return fields_from(c, vector_loader(lambda off: b.ld_v4("ld.global.nc.v4.u32", "u32", a, off)),
                       lambda off: b.ld("ld.global.nc.u32", "u32", a, off))


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
        if c.loops:
            # loop mode: each instruction's step word beside its base word,
            # and the trip of each instruction in the chain
            self.steps = [b.var("u32", 0) for _ in range(depth)]
            self.trips = [b.var("u32", 0) for _ in range(depth)]
            self.issuing, self.current = Cursor(b), Cursor(b)
        # warm L2 with this queue's instructions (lane 0, non-empty queue)
        qa = instr_address(c, start, b.mov("u32", 0))
        qbytes = b.i("mul.lo.u32", "u32", count, isa.INSTR_BYTES)
        p = b.setp("ne.u32", qbytes, 0)
        p = b.i("and.pred", "pred", p, b.setp("eq.u32", c.lane, 0))
        b.raw("cp.async.bulk.prefetch.L2.global", "[{0}], {1}", ins=[qa, qbytes], guard=p)

    def _load_loop(self, k: int) -> None:
        """Loop mode: load the issuing cursor's instruction (base, step, trip) into chain entry ``k``."""
        b, cur = self.b, self.issuing
        ok = b.i("not.pred", "pred", cur.finished(self.count))
        for dst, rec in ((self.regs[k], cur.base_record()), (self.steps[k], cur.step_record())):
            idx = b.i("add.u32", "u32", self.start, rec)
            a = b.i("add.u64", "u64", self.base, b.i("mul.wide.u32", "u64", idx, isa.INSTR_BYTES))
            b.ld("ld.global.nc.u32", "u32", a, dst=dst, guard=ok)
        b.set(self.trips[k], cur.t)
        cur.advance()

    def finished(self) -> SSAValue:
        """A predicate: the engine has run its queue's last instruction (loop mode)."""
        return self.current.finished(self.count)

    def is_loop(self, f: Fields) -> SSAValue:
        """A predicate: the instruction ``f`` the engine is at is a loop record (loop mode)."""
        return self.b.setp("eq.u32", f.read(isa.OPCODE), isa.OP_LOOP)

    def enter_loop(self, pos: SSAValue, f: Fields) -> None:
        """At loop record ``f``: enter the loop and reload the chain from its first instruction."""
        self.current.enter(f.read(isa.LOOP_BODY), f.read(isa.LOOP_TRIPS))
        self.issuing.copy_from(self.current)
        self.prime(pos)

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
            if self.c.loops:
                self._load_loop(k)
                continue
            self._load(r, self.b.i("add.u32", "u32", pos, k) if k else pos)

    def advance(self, new_pos: SSAValue) -> None:
        """The engine moved to ``new_pos``: shift the chain, prefetch one more."""
        chains = (self.regs, self.steps, self.trips) if self.c.loops else (self.regs,)
        for chain in chains:
            for k in range(len(chain) - 1):
                self.b.set(chain[k], chain[k + 1])
        if self.c.loops:
            self.current.advance()
            self._load_loop(len(self.regs) - 1)
            return
        pk = self.b.i("add.u32", "u32", new_pos, len(self.regs) - 1)
        self._load(self.regs[-1], pk)

    def word_at(self, offset: int, word: SSAValue | None = None) -> SSAValue:
        """The word at byte ``offset`` of the current instruction (lane k holding ``word``), in every lane."""
        return self.b.i("shfl.sync.idx.b32", "u32", self.cur if word is None else word, offset // isa.WORD_BYTES,
                        31, FULL)

    def fields(self) -> Fields:
        """The current instruction's fields (in loop mode: each lane's word is base + trip * step)."""
        cache: dict[int, SSAValue] = {}
        word = self.b.i("mad.lo.u32", "u32", self.steps[0], self.trips[0], self.cur) if self.c.loops else None

        def load(offset: int) -> SSAValue:
            if offset not in cache:
                cache[offset] = self.word_at(offset, word)
            return cache[offset]

        fresh = (lambda offset: self.word_at(offset, word)) if self.c.loops else self.word_at
        return fields_from(self.c, load, fresh)


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
        if c.loops:
            self._init_loops(lane16)
            return
        lane16_64 = b.i("cvt.u64.u32", "u64", lane16)
        self.lane_src = b.i("add.u64", "u64", c.instrs, lane16_64)
        self.copier = b.setp("lt.u32", c.lane, isa.INSTR_BYTES // 16)

    # -- loop mode: slots of (base, step), two cursors ----------------------
    def _init_loops(self, lane16: SSAValue) -> None:
        """Lanes 0..7 copy a base record, lanes 8..15 its step; both cursors start at the queue's front."""
        b, c = self.b, self.c
        self.depth, self.slot_bytes = L.LOOP_FETCH_DEPTH, 2 * isa.INSTR_BYTES
        chunk = b.i("and.b32", "u32", lane16, isa.INSTR_BYTES - 1)
        self.lane_src = b.i("add.u64", "u64", c.instrs, b.i("cvt.u64.u32", "u64", chunk))
        self.copier = b.setp("lt.u32", c.lane, self.slot_bytes // 16)
        self.copies_step = b.setp("ge.u32", c.lane, isa.INSTR_BYTES // 16)
        self.issuing, self.current = Cursor(b), Cursor(b)

    def _issue_loop(self, pos: SSAValue) -> None:
        """Copy the issuing cursor's instruction (base and step) into slot ``pos``; move that cursor on."""
        b, cur = self.b, self.issuing
        live = b.i("not.pred", "pred", cur.finished(self.count))
        ok = b.i("and.pred", "pred", live, self.copier)
        rec = b.i("selp.u32", "u32", cur.step_record(), cur.base_record(), self.copies_step)
        idx = b.i("add.u32", "u32", self.start, rec)
        src = b.i("add.u64", "u64", self.lane_src, b.i("mul.wide.u32", "u64", idx, isa.INSTR_BYTES))
        slot = b.i("and.b32", "u32", pos, self.depth - 1)
        dst = b.i("mad.lo.u32", "u32", slot, self.slot_bytes, self.lane_dst)
        b.raw("cp.async.ca.shared.global", "[{0}], [{1}], 16", ins=[dst, src], guard=ok)
        b.raw("cp.async.commit_group", "")
        cur.advance()

    def finished(self) -> SSAValue:
        """A predicate: the engine has run its queue's last instruction (loop mode)."""
        return self.current.finished(self.count)

    def is_loop(self, f: Fields) -> SSAValue:
        """A predicate: the instruction ``f`` the engine is at is a loop record (loop mode)."""
        return self.b.setp("eq.u32", f.read(isa.OPCODE), isa.OP_LOOP)

    def enter_loop(self, pos: SSAValue, f: Fields) -> None:
        """At loop record ``f``: drop the copies in flight, enter the loop, refill the window from ``pos``."""
        b = self.b
        b.raw("cp.async.wait_all", "")
        b.raw("bar.warp.sync", "%d" % FULL)
        self.current.enter(f.read(isa.LOOP_BODY), f.read(isa.LOOP_TRIPS))
        self.issuing.copy_from(self.current)
        self.prime(pos)

    def _issue(self, pos: SSAValue) -> None:
        b = self.b
        if self.c.loops:
            self._issue_loop(pos)
            return
        ok = b.i("and.pred", "pred", b.setp("lt.u32", pos, self.count), self.copier)
        idx = b.i("add.u32", "u32", self.start, pos)
        off = b.i("mul.wide.u32", "u64", idx, isa.INSTR_BYTES)
        src = b.i("add.u64", "u64", self.lane_src, off)
        slot = b.i("and.b32", "u32", pos, L.FETCH_DEPTH - 1)
        dst = b.i("mad.lo.u32", "u32", slot, isa.INSTR_BYTES, self.lane_dst)
        b.raw("cp.async.ca.shared.global", "[{0}], [{1}], 16", ins=[dst, src], guard=ok)
        b.raw("cp.async.commit_group", "")

    @property
    def _depth(self) -> int:
        return L.LOOP_FETCH_DEPTH if self.c.loops else L.FETCH_DEPTH

    def prime(self, pos: SSAValue) -> None:
        """Start copying instructions ``pos .. pos + depth - 1``."""
        for k in range(self._depth):
            self._issue(self.b.i("add.u32", "u32", pos, k) if k else pos)

    def slot_address(self, pos: SSAValue) -> SSAValue:
        """Shared address of instruction ``pos`` in the window."""
        slot = self.b.i("and.b32", "u32", pos, self._depth - 1)
        slot_bytes = 2 * isa.INSTR_BYTES if self.c.loops else isa.INSTR_BYTES
        return self.b.i("mad.lo.u32", "u32", slot, slot_bytes, self.win)

    def fields_at(self, pos: SSAValue) -> Fields:
        """Wait for instruction ``pos`` (the oldest pending) and decode it."""
        b = self.b
        b.raw("cp.async.wait_group", "%d" % (self._depth - 1))
        b.raw("bar.warp.sync", "%d" % FULL)
        return self.slot_fields(pos)

    def slot_fields(self, pos: SSAValue, trip: SSAValue | None = None) -> Fields:
        """Decode instruction ``pos`` from its slot, already landed (in loop mode as trip ``trip``,
        by default the engine's current trip)."""
        if not self.c.loops:
            return smem_fields(self.c, self.slot_address(pos))
        return loop_fields(self.c, self.slot_address(pos), self.current.t if trip is None else trip)

    def advance(self, new_pos: SSAValue) -> None:
        """Instruction ``new_pos - 1`` is done: reuse its slot for ``new_pos + depth - 1``."""
        if self.c.loops:
            self.current.advance()
        self._issue(self.b.i("add.u32", "u32", new_pos, self._depth - 1))


def smem_fields(c: Ctx, addr: SSAValue) -> Fields:
    """Decode an instruction held in shared memory at ``addr``."""
    return fields_from(c, vector_loader(lambda off: c.b.ld_v4("ld.shared.v4.b32", "u32", addr, off)),
                       lambda off: c.b.ld("ld.shared.u32", "u32", addr, off))


def region_fields(f: Fields) -> tuple[SSAValue, ...]:
    """(buffer, offset lo, offset hi, rows, row bytes, stride, smem) of a load or store."""
    f.prefetch(isa.REGION_FIELDS)
    off_lo, off_hi = f.halves(isa.GLOBAL_OFFSET)
    return (f.read(isa.BUFFER), off_lo, off_hi, f.read(isa.ROWS), f.read(isa.ROW_BYTES),
            f.read(isa.ROW_STRIDE), f.read(isa.SMEM))
