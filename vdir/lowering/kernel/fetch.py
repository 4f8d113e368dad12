"""Instruction fetch: where an engine's queue is, and how its instructions reach registers.

Each role walks its own queue of 128-byte instructions (``vdir/isa.py``).
:class:`SmemFetcher` prefetches them with ``cp.async`` into a shared-memory
window, :class:`WarpFetcher` (the ``lsu`` load path) into registers, one word
per lane; :func:`fetch` loads one directly (slow paths: reports).
:class:`Fields` decodes an instruction's fields (``isa.Field``) into registers.

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

        return fields_from(self.c, load, self.word_at)


class SmemFetcher:
    """Instructions prefetched ``FETCH_DEPTH`` ahead into a shared-memory window (``layout.fetch_window``).

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
        self.win = b.i("add.u32", "u32", c.base, L.fetch_window(engine))
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
    return fields_from(c, vector_loader(lambda off: c.b.ld_v4("ld.shared.v4.b32", "u32", addr, off)),
                       lambda off: c.b.ld("ld.shared.u32", "u32", addr, off))


def region_fields(f: Fields) -> tuple[SSAValue, ...]:
    """(buffer, offset lo, offset hi, rows, row bytes, stride, smem) of a load or store."""
    f.prefetch(isa.REGION_FIELDS)
    off_lo, off_hi = f.halves(isa.GLOBAL_OFFSET)
    return (f.read(isa.BUFFER), off_lo, off_hi, f.read(isa.ROWS), f.read(isa.ROW_BYTES),
            f.read(isa.ROW_STRIDE), f.read(isa.SMEM))
