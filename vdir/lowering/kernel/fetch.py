"""Instruction fetch: where an engine's queue is, and how its instructions reach registers.

Each role walks its own queue of 128-byte instructions (``vdir/isa.py``).
:class:`SmemFetcher` prefetches them with ``cp.async`` into a shared-memory
window, :class:`WarpFetcher` (the ``lsu`` load path) into registers, one word
per lane; :func:`fetch` loads one directly (slow paths: reports).
:class:`Fields` decodes an instruction's fields (``isa.Field``) into registers.
In a kernel that runs loops (lowering option ``run_loops``), a
:class:`LoopCursor` maps each executed position to its base and step records
and :func:`loop_word` works out its trip's words (``docs/lowering.md``, Loops).

Memory-model note: a release waits for the releasing thread's outstanding
loads (measured: register prefetches of the next instructions made every
signal wait for a global round trip), so the engines prefetch their
instructions with ``cp.async`` into shared memory (:class:`SmemFetcher`),
never with plain loads still in flight at a signal. A cursor's loads of a
loop entry (``ld.global.nc``, once per loop) are used at once, to choose the
records: none is outstanding at the next release. The entries and records
are written by the host before the launch and never change during it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import SSAValue

from vdir import isa
from vdir.lowering import layout as L
from vdir.lowering.builder import PtxBuilder
from vdir.lowering.kernel.context import FULL, Ctx, Queue


def load_queue(b: PtxBuilder, queues: SSAValue, sm: SSAValue, engines: int, engine: SSAValue) -> Queue:
    """SM ``sm``'s queue for ``engine`` (a register: the calling warp's own engine) from the queue table
    at ``queues``.

    The prologue loads each warp's queue before the CTA's first barrier
    (``Ctx.queue``), so that the table's round trip overlaps the header's
    initialisation and the barrier instead of following them. The words
    are used at once after the barrier: no load of the table is outstanding
    at a release (see the module's memory-model note).
    """
    row = b.i("mad.lo.u32", "u32", sm, engines, engine)
    off = b.i("mul.wide.u32", "u64", row, L.QUEUE_ROW_WORDS * isa.WORD_BYTES)
    a = b.i("add.u64", "u64", queues, off)
    words = b.ld_v4("ld.global.nc.v4.u32", "u32", a)
    return Queue(words[L.Q_RECORDS], words[L.Q_COUNT], words[L.Q_EXEC_START], words[L.Q_LOOPS])


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


def record_address(c: Ctx, record: SSAValue) -> SSAValue:
    """Global address of record ``record`` of p_instrs."""
    b = c.b
    off = b.i("mul.wide.u32", "u64", record, isa.INSTR_BYTES)
    return b.i("add.u64", "u64", c.instrs, off)


def instr_address(c: Ctx, q: Queue, pos: SSAValue) -> SSAValue:
    """Global address of record ``pos`` of queue ``q`` (its executed position ``pos`` when it has no loops)."""
    return record_address(c, c.b.i("add.u32", "u32", q.records, pos))


def fetch(c: Ctx, q: Queue, pos: SSAValue) -> Fields:
    """The instruction queue ``q`` executes at ``pos``, loaded from global memory (slow paths: reports)."""
    b = c.b
    if c.loops:
        return _fetch_in_loop(c, q, pos)
    a = instr_address(c, q, pos)
    return fields_from(c, vector_loader(lambda off: b.ld_v4("ld.global.nc.v4.u32", "u32", a, off)),
                       lambda off: b.ld("ld.global.nc.u32", "u32", a, off))


def _fetch_in_loop(c: Ctx, q: Queue, pos: SSAValue) -> Fields:
    """:func:`fetch` in a kernel that runs loops: each lane loads its word of the base and step
    records that ``pos`` runs (a cursor walked from the queue's first loop entry) and steps it."""
    b = c.b
    at = LoopCursor(c, q, with_params=True).locate(pos)
    lane4 = b.i("mul.wide.u32", "u64", c.lane, isa.WORD_BYTES)
    base = b.ld("ld.global.nc.u32", "u32", b.i("add.u64", "u64", record_address(c, at.base), lane4))
    step = b.var("u32", 0)
    b.ld("ld.global.nc.u32", "u32", b.i("add.u64", "u64", record_address(c, at.step), lane4), dst=step,
         guard=at.in_loop)
    word = b.i("selp.b32", "b32", loop_word(c, at, base, step), base, at.in_loop)
    return lane_fields(c, word)


def lane_fields(c: Ctx, word: SSAValue) -> Fields:
    """The fields of an instruction whose word k lane k holds (read with ``shfl.sync.idx``)."""
    def word_at(offset: int) -> SSAValue:
        return c.b.i("shfl.sync.idx.b32", "u32", word, offset // isa.WORD_BYTES, 31, FULL)

    cache: dict[int, SSAValue] = {}

    def load(offset: int) -> SSAValue:
        if offset not in cache:
            cache[offset] = word_at(offset)
        return cache[offset]

    return fields_from(c, load, word_at)


@dataclass
class LoopPosition:
    """Where an executed position lies: the records it runs and its trip, with its loop's parameters."""

    in_loop: SSAValue  # pred: inside a loop (else ``base`` is a plain record and the rest is unused)
    base: SSAValue  # u32: the base record (an index into p_instrs)
    step: SSAValue  # u32: its step record
    trip: SSAValue  # u32
    cursor: "LoopCursor"


class LoopCursor:
    """Walks a queue's loop entries (``layout.kernel_queue_table``) to map executed positions to records.

    The positions it is asked for never decrease: it moves to the next entry
    once a position is past the current entry's loop (a load of the entry's
    words, once per loop). ``sequential``: it is asked for every position in
    turn, and counts the body index and the trip up instead of dividing.
    Lane k (k < 16) holds the entry's step-index word k; ``with_params`` also
    keeps what :func:`loop_word` needs: the ring (its base, its bytes, their
    reciprocal and the trip modulo them), and in lane k the half (k odd:
    low, even: high) of the pairs and flips that its dependency-bit word
    holds.
    """

    def __init__(self, c: Ctx, q: Queue, with_params: bool = False, sequential: bool = False):
        b = self.b = c.b
        self.c, self.with_params, self.sequential = c, with_params, sequential
        self.entry = b.var("u64", b.i("add.u64", "u64", c.queues, b.i("cvt.u64.u32", "u64", q.loops)))
        lane_word = b.i("and.b32", "u32", c.lane, isa.INSTR_WORDS - L.LE_STEP_INDEX - 1)
        self.lane_off = b.i("mul.wide.u32", "u64", lane_word, isa.WORD_BYTES)
        self.begin, self.end, self.delta, self.record, self.body, self.index = (b.var("u32", 0) for _ in range(6))
        self.j, self.trip = b.var("u32", 0), b.var("u32", 0)
        if with_params:
            self.low_half = b.setp("ne.u32", b.i("and.b32", "u32", c.lane, 1), 0)
            self.pairs, self.steady, self.paired = b.var("u32", 0), b.var("u32", 0), b.var("u32", 0)
            self.ring_base, self.ring_bytes = b.var("u32", 0), b.var("u32", 0)
            self.ring_trip = b.var("u32", 0)  # the trip mod ring_bytes (0 without a ring)
            # 1 / ring_bytes, rounded (1 without a ring): a register made by a conversion (an f64 mov
            # would need an f64 literal)
            self.ring_inverse = b.i("cvt.rn.f64.u32", "f64", b.mov("u32", 1))
        self._load()

    def _load(self) -> None:
        """Read the current entry's words into the cursor's registers."""
        b, e = self.b, self.entry
        first = b.ld_v4("ld.global.nc.v4.u32", "u32", e, 0)
        for reg, word in ((self.begin, L.LE_BEGIN), (self.end, L.LE_END), (self.delta, L.LE_DELTA),
                          (self.record, L.LE_RECORD)):
            b.set(reg, first[word])
        b.ld("ld.global.nc.u32", "u32", e, L.LE_BODY * isa.WORD_BYTES, dst=self.body)
        b.ld("ld.global.nc.u32", "u32", b.i("add.u64", "u64", e, self.lane_off), L.LE_STEP_INDEX * isa.WORD_BYTES,
             dst=self.index)
        if self.with_params:
            pairs_lo, pairs_hi, flips_lo, flips_hi = b.ld_v4("ld.global.nc.v4.u32", "u32", e,
                                                             L.LE_PAIRS * isa.WORD_BYTES)
            b.i("selp.b32", "b32", pairs_lo, pairs_hi, self.low_half, dst=self.pairs)
            flips = b.i("selp.b32", "b32", flips_lo, flips_hi, self.low_half)
            b.i("and.b32", "b32", flips, self.pairs, dst=self.paired)
            b.i("xor.b32", "b32", flips, self.paired, dst=self.steady)
            b.ld("ld.global.nc.u32", "u32", e, L.LE_RING_BASE * isa.WORD_BYTES, dst=self.ring_base)
            b.ld("ld.global.nc.u32", "u32", e, L.LE_RING_BYTES * isa.WORD_BYTES, dst=self.ring_bytes)
            ring = b.i("cvt.rn.f64.u32", "f64", b.i("max.u32", "u32", self.ring_bytes, 1))
            b.i("rcp.rn.f64", "f64", ring, dst=self.ring_inverse)

    def locate(self, pos: SSAValue, records: bool = True) -> LoopPosition:
        """Where ``pos`` lies (every lane of the warp, converged: the step index is a shuffle);
        ``records`` False: only whether it is in a loop, and its trip (the records are left 0)."""
        b = self.b
        scan, found, straight = b.new_label("loop_scan"), b.new_label("loop_found"), b.new_label("loop_straight")
        b.place(scan)
        b.bra(found, b.setp("lt.u32", pos, self.end))
        b.i("add.u64", "u64", self.entry, L.LOOP_ENTRY_BYTES, dst=self.entry)
        self._load()
        b.bra(scan)
        b.place(found)
        in_loop = b.setp("ge.u32", pos, self.begin)
        base, step = b.var("u32", 0), b.var("u32", 0)
        b.i("add.u32", "u32", pos, self.delta, dst=base)
        b.bra(straight, in_loop, neg=True)
        self._count(pos)
        if not records:
            b.place(straight)
            return LoopPosition(in_loop, base, step, self.trip, self)
        first_base = b.i("add.u32", "u32", self.record, 1)
        b.i("add.u32", "u32", first_base, self.j, dst=base)
        word = b.i("shfl.sync.idx.b32", "u32", self.index, b.i("shr.u32", "u32", self.j, 2), 31, FULL)
        shift = b.i("shl.b32", "u32", b.i("and.b32", "u32", self.j, 3), 3)
        index = b.i("and.b32", "u32", b.i("shr.u32", "u32", word, shift), 0xFF)
        first_step = b.i("add.u32", "u32", first_base, self.body)
        b.i("add.u32", "u32", first_step, index, dst=step)
        b.place(straight)
        return LoopPosition(in_loop, base, step, self.trip, self)

    def _count(self, pos: SSAValue) -> None:
        """Set the body index ``j`` and the trip of ``pos`` (inside the current loop)."""
        b = self.b
        run = b.i("sub.u32", "u32", pos, self.begin)
        if not self.sequential:
            b.i("div.u32", "u32", run, self.body, dst=self.trip)
            b.i("sub.u32", "u32", run, b.i("mul.lo.u32", "u32", self.trip, self.body), dst=self.j)
            if self.with_params:
                ring = b.i("max.u32", "u32", self.ring_bytes, 1)
                b.i("rem.u32", "u32", self.trip, ring, dst=self.ring_trip)
            return
        # the position after the previous one: j + 1, wrapping into the next trip (or the loop's first)
        first = b.setp("eq.u32", run, 0)
        nxt = b.i("add.u32", "u32", self.j, 1)
        wrap = b.setp("eq.u32", nxt, self.body)
        b.i("add.u32", "u32", self.trip, b.i("selp.u32", "u32", 1, 0, wrap), dst=self.trip)
        b.i("selp.u32", "u32", 0, nxt, wrap, dst=self.j)
        b.i("selp.u32", "u32", 0, self.trip, first, dst=self.trip)
        b.i("selp.u32", "u32", 0, self.j, first, dst=self.j)
        if self.with_params:  # the trip mod ring_bytes, counted the same way (0 where there is no ring)
            ring_next = b.i("add.u32", "u32", self.ring_trip, b.i("selp.u32", "u32", 1, 0, wrap))
            around = b.i("or.pred", "pred", b.setp("ge.u32", ring_next, self.ring_bytes), first)
            b.i("selp.u32", "u32", 0, ring_next, around, dst=self.ring_trip)


#: the low bit of every pair (2k, 2k + 1) of a 32-bit half of a mask, and the high one (pairs never
#: straddle the halves: ``isa.swap_pairs``)
_EVEN_BITS, _ODD_BITS = 0x5555_5555, 0xAAAA_AAAA


def loop_word(c: Ctx, at: LoopPosition, base: SSAValue, step: SSAValue) -> SSAValue:
    """Lane k's word k of the instruction that base word ``base`` and step word ``step`` (lane k's)
    make on trip ``at.trip``, as :meth:`vdir.isa.Loop.expand` says: word 0 as it is, a ring word in
    the loop's ring, the dependency-bit words by the loop's pairs and flips, the rest stepped.

    Every lane of the warp takes part (shuffles); ``at.cursor`` holds the loop's parameters. A pair
    of bits lies within one 32-bit word, so each dependency-bit word is worked out in its own lane.
    """
    b, cur, t = c.b, at.cursor, at.trip
    word = b.var("u32", 0)
    b.i("mad.lo.u32", "u32", t, step, base, dst=word)
    _step_in_ring(c, cur, base, step, word)
    odd = b.setp("ne.u32", b.i("and.b32", "u32", t, 1), 0)
    second = b.setp("ne.u32", b.i("and.b32", "u32", t, 2), 0)

    def swapped_on_odd(bits: SSAValue) -> SSAValue:
        moving = b.i("and.b32", "b32", bits, cur.pairs)
        kept = b.i("xor.b32", "b32", bits, moving)
        up = b.i("shl.b32", "b32", b.i("and.b32", "b32", moving, _EVEN_BITS), 1)
        down = b.i("shr.b32", "b32", b.i("and.b32", "b32", moving, _ODD_BITS), 1)
        swapped = b.i("or.b32", "b32", kept, b.i("or.b32", "b32", up, down))
        return b.i("selp.b32", "b32", swapped, bits, odd)

    # the wait mask (lanes 1, 2) and the signal mask (5, 6) swap their pairs on the odd trips; the
    # parity (3, 4) flips, swaps and keeps the trip's mask bits: the swapped wait mask that lane k - 2
    # works out for itself
    lane = c.lane
    in_parity = b.setp("eq.u32", b.i("shr.u32", "u32", b.i("sub.u32", "u32", lane, isa.WAIT_PARITY.word), 1), 0)
    flipped = b.i("xor.b32", "b32", base, b.i("selp.b32", "b32", cur.steady, 0, odd))
    flipped = b.i("xor.b32", "b32", flipped, b.i("selp.b32", "b32", cur.paired, 0, second))
    swapped = swapped_on_odd(b.i("selp.b32", "b32", flipped, base, in_parity))
    mask_of_parity = b.i("shfl.sync.up.b32", "u32", swapped, isa.WAIT_PARITY.word - isa.WAIT_MASK.word, 0, FULL)
    bits = b.i("selp.b32", "b32", b.i("and.b32", "b32", swapped, mask_of_parity), swapped, in_parity)
    first_bit, last_bit = min(isa.DEPENDENCY_BIT_WORDS), max(isa.DEPENDENCY_BIT_WORDS)
    in_bits = b.setp("le.u32", b.i("sub.u32", "u32", lane, first_bit), last_bit - first_bit)
    b.i("selp.b32", "b32", bits, word, in_bits, dst=word)
    return b.i("selp.b32", "b32", base, word, b.setp("eq.u32", lane, isa.OPCODE.word))


def _step_in_ring(c: Ctx, cur: LoopCursor, base: SSAValue, step: SSAValue, word: SSAValue) -> None:
    """Where the loop has a ring and the instruction's step record names ring words (uniform tests),
    lane k's word k is ``ring_base + (base - ring_base + t * step) mod ring_bytes`` on trip ``t`` if k
    is one of them.

    Worked out from the cursor's trip mod ring_bytes (``ring_trip``, so the same value), without a
    64-bit division: ``x = (base - ring_base) + ring_trip * step`` is below ``ring_bytes^2 <= 2^48``
    (``isa.MAX_LOOP_RING_BYTES``), so its f64 conversion is exact and ``x * (1 / ring_bytes)``
    truncates to the quotient or one off it; the remainder is then set right by one add or subtract.
    """
    b = c.b
    done = b.new_label("ring_done")
    b.bra(done, b.setp("eq.u32", cur.ring_bytes, 0))  # the loop has no ring
    ring_mask = b.i("shfl.sync.idx.b32", "u32", step, isa.STEP_RING_WORDS.word, 31, FULL)
    b.bra(done, b.setp("eq.u32", ring_mask, 0))
    in_ring = b.setp("ne.u32", b.i("and.b32", "u32", b.i("shr.u32", "u32", ring_mask, c.lane), 1), 0)
    offset = b.i("cvt.u64.u32", "u64", b.i("sub.u32", "u32", base, cur.ring_base))
    x = b.i("add.u64", "u64", offset, b.i("mul.wide.u32", "u64", cur.ring_trip, step))
    quotient = b.i("cvt.rzi.u64.f64", "u64", b.i("mul.rn.f64", "f64", b.i("cvt.rn.f64.u64", "f64", x), cur.ring_inverse))
    ring = b.i("cvt.u64.u32", "u64", cur.ring_bytes)
    rest = b.var("s64", 0)
    b.i("sub.s64", "s64", x, b.i("mul.lo.u64", "u64", quotient, ring), dst=rest)
    b.i("add.s64", "s64", rest, ring, dst=rest, guard=b.setp("lt.s64", rest, 0))
    b.i("sub.s64", "s64", rest, ring, dst=rest, guard=b.setp("ge.s64", rest, ring))
    b.i("add.u32", "u32", cur.ring_base, b.i("cvt.u32.u64", "u32", rest), dst=word, guard=in_ring)
    b.place(done)


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

    def __init__(self, c: Ctx, q: Queue):
        b = self.b = c.b
        self.c, self.start, self.count = c, q.records, q.count
        lane4 = b.i("mul.wide.u32", "u64", c.lane, 4)
        self.base = b.i("add.u64", "u64", c.instrs, lane4)
        depth = c.options.fetch_depth
        self.regs = [b.var("u32", 0) for _ in range(depth)]
        self.cur = self.regs[0]
        # warm L2 with this queue's instructions (lane 0, non-empty queue)
        qa = instr_address(c, q, b.mov("u32", 0))
        qbytes = b.i("mul.lo.u32", "u32", q.count, isa.INSTR_BYTES)
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

    def fields(self) -> Fields:
        """The current instruction's fields."""
        return lane_fields(self.c, self.cur)


class SmemFetcher:
    """Instructions prefetched into a shared-memory window (``layout.fetch_window``), several ahead.

    Lanes 0..7 copy an instruction's 128 bytes with ``cp.async.ca`` (one
    commit group per instruction) into slot ``pos % depth`` of this engine's
    window; ``cp.async.wait_group`` plus a warp barrier make the oldest one
    readable. Unlike prefetches into registers, these copies are not
    outstanding loads of the thread, so a later release (signalling the
    dependency bits) does not wait for them.

    In a kernel that runs loops (``Ctx.loops``) a slot holds two records,
    :data:`~vdir.lowering.layout.LOOP_FETCH_DEPTH` slots a window: the base
    record that the position runs and, inside a loop, its step record, which
    lanes 8..15 copy. An issue cursor (:class:`LoopCursor`) finds the records
    of the position being prefetched, a second one the trip of the position
    being read, and :func:`loop_word` writes the trip's words over the base
    in the slot, once per position, before the engine reads it.
    """

    def __init__(self, c: Ctx, q: Queue, engine: int):
        b = self.b = c.b
        self.c, self.q = c, q
        self.depth, self.slot_bytes = L.window_shape(c.loops)
        self.win = b.i("add.u32", "u32", c.base, L.fetch_window(engine))
        lane16 = b.i("shl.b32", "u32", c.lane, 4)
        self.lane_dst = b.i("add.u32", "u32", self.win, lane16)
        self.copier = b.setp("lt.u32", c.lane, isa.INSTR_BYTES // 16)
        if c.loops:
            chunk = b.i("and.b32", "u32", lane16, isa.INSTR_BYTES - 1)
            self.lane_chunk = b.i("cvt.u64.u32", "u64", chunk)
            self.step_copier = b.setp("lt.u32", c.lane, 2 * isa.INSTR_BYTES // 16)
            self.issuing = LoopCursor(c, q, sequential=True)
            self.reading = LoopCursor(c, q, with_params=True, sequential=True)
            self.ready = b.var("u32", 0xFFFFFFFF)  # the position whose slot holds its trip's words
        else:
            self.lane_src = b.i("add.u64", "u64", c.instrs, b.i("cvt.u64.u32", "u64", lane16))

    def _issue(self, pos: SSAValue) -> None:
        b, c = self.b, self.c
        in_queue = b.setp("lt.u32", pos, self.q.count)
        if c.loops:
            at = self.issuing.locate(pos)
            copies = b.i("and.pred", "pred", at.in_loop, self.step_copier)
            copies = b.i("or.pred", "pred", copies, self.copier)
            record = b.i("selp.b32", "b32", at.base, at.step, self.copier)
            src = b.i("add.u64", "u64", record_address(c, record), self.lane_chunk)
            ok = b.i("and.pred", "pred", in_queue, copies)
        else:
            ok = b.i("and.pred", "pred", in_queue, self.copier)
            idx = b.i("add.u32", "u32", self.q.records, pos)
            src = b.i("add.u64", "u64", self.lane_src, b.i("mul.wide.u32", "u64", idx, isa.INSTR_BYTES))
        slot = b.i("and.b32", "u32", pos, self.depth - 1)
        dst = b.i("mad.lo.u32", "u32", slot, self.slot_bytes, self.lane_dst)
        b.raw("cp.async.ca.shared.global", "[{0}], [{1}], 16", ins=[dst, src], guard=ok)
        b.raw("cp.async.commit_group", "")

    def prime(self, pos: SSAValue) -> None:
        """Start copying instructions ``pos .. pos + depth - 1``."""
        for k in range(self.depth):
            self._issue(self.b.i("add.u32", "u32", pos, k) if k else pos)

    def slot_address(self, pos: SSAValue) -> SSAValue:
        """Shared address of instruction ``pos`` in the window."""
        return window_slot(self.c, self.win, pos)

    def fields_at(self, pos: SSAValue, ahead: bool = False) -> Fields:
        """Wait for instruction ``pos`` (the oldest pending) and decode it; with ``ahead``, ``pos`` is
        the second oldest (the slot before it not yet refilled: :meth:`advance` comes after), in a
        kernel without loops."""
        if not self.c.loops:
            self._wait(self.depth - 2 if ahead else None)
            return smem_fields(self.c, self.slot_address(pos))
        assert not ahead, "fields_at(ahead=True) walks plain queues only"
        addr = self.slot_address(pos)
        self._wait_and_step(pos, addr)
        return smem_fields(self.c, addr)

    def step(self, pos: SSAValue, ahead: bool = False) -> None:
        """In a kernel that runs loops, work out instruction ``pos``'s words in its slot now (waiting
        for its copies), so that a later read only decodes them; else nothing.

        ``pos`` is the oldest instruction whose copies are pending, or with ``ahead`` the second
        oldest (the one after a position stepped and not yet handed back: the wait leaves one commit
        group fewer pending). A position is stepped once; stepping it again only waits.
        """
        if self.c.loops:
            self._wait_and_step(pos, self.slot_address(pos), pending=self.depth - 2 if ahead else None)

    def _wait(self, pending: int | None = None) -> None:
        """Wait until at most ``pending`` commit groups (one per instruction) are in flight (default
        ``depth - 1``: the oldest pending instruction has landed)."""
        self.b.raw("cp.async.wait_group", "%d" % (self.depth - 1 if pending is None else pending))
        self.b.raw("bar.warp.sync", "%d" % FULL)

    def _wait_and_step(self, pos: SSAValue, addr: SSAValue, pending: int | None = None) -> None:
        """Wait for ``pos``'s records and write its trip's words over the base record in its slot;
        once (an engine may read a position again after an idle spin). Where ``pos`` lies is worked
        out before the wait, while the copies land."""
        b, c = self.b, self.c
        again, done = b.new_label("fetch_again"), b.new_label("fetch_stepped")
        b.bra(again, b.setp("eq.u32", pos, self.ready))
        b.set(self.ready, pos)
        at = self.reading.locate(pos, records=False)
        self._wait(pending)
        b.bra(done, at.in_loop, neg=True)
        # lane k reads and writes word k only (the other words it needs come by shuffles)
        lane_addr = b.i("mad.lo.u32", "u32", c.lane, isa.WORD_BYTES, addr)
        base = b.ld("ld.shared.u32", "u32", lane_addr)
        step = b.ld("ld.shared.u32", "u32", lane_addr, isa.INSTR_BYTES)
        b.st("st.shared.u32", lane_addr, 0, loop_word(c, at, base, step))
        b.raw("bar.warp.sync", "%d" % FULL)
        b.bra(done)
        b.place(again)
        self._wait(pending)
        b.place(done)

    def advance(self, new_pos: SSAValue) -> None:
        """Instruction ``new_pos - 1`` is done: reuse its slot for ``new_pos + depth - 1``."""
        self._issue(self.b.i("add.u32", "u32", new_pos, self.depth - 1))


def window_slot(c: Ctx, win: SSAValue, pos: SSAValue) -> SSAValue:
    """Shared address of instruction ``pos``'s slot in the instruction window at ``win`` (its depth and
    slot size: those of a kernel that runs loops, or of the plain walk)."""
    depth, slot_bytes = L.window_shape(c.loops)
    slot = c.b.i("and.b32", "u32", pos, depth - 1)
    return c.b.i("mad.lo.u32", "u32", slot, slot_bytes, win)


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
