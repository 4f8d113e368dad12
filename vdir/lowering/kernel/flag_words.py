"""Flag-word hand-offs (``isa.TRANSFER_FLAG_WORDS``): a store writes its tile as flag words into the
sync block, and a load polls them into its tile slot.

A flag word is 8 bytes: 4 bytes of the row, then the epoch of the launch
that wrote them (``launches done + 1``, the same in every CTA of a launch).
Row ``r`` of a record's region lies ``GLOBAL_OFFSET + 2 * r * ROW_STRIDE``
bytes into the sync block and holds ``2 * ROW_BYTES`` bytes of words; the
lanes move two words (16 bytes) at a time.

Memory-model notes:

* the words are written with ``st.relaxed.gpu.global.v2.b64`` and read with
  ``ld.relaxed.gpu.global.v2.b64``: each 8-byte element of a vector access
  is a single-copy-atomic access of its own, so a reader that sees a word's
  epoch sees the 4 bytes written with it, and nothing else is ordered by
  it. That is all a flag-word load needs: ``vdir.analysis.flag_words``
  gives it only groups whose bytes it reads, every byte of which one store
  of the launch writes, once;
* the epoch names the launch: the words of earlier launches hold smaller
  epochs (every launch writes every word of a hand-off), and a sync block
  is zeroed whole (counters and words together) whenever the epochs start
  again, so a word never holds a live epoch by accident;
* the store reads its tile with ``ld.shared`` after its waits (the tile's
  producer signalled the bits with a release, the waits acquire), so the
  words hold the tile's bytes. Its signals (a store into a words-only
  buffer has the store's; one followed by its plain record, none) come
  after every lane's stores, which carry the values those reads returned:
  the tile's slot is free once they are issued, and a load on this SM that
  polled the words fills a slot only after the reads its words came from;
* the load writes the data into its slot with ``st.shared`` in every lane,
  then ``bar.warp.sync`` orders those writes before lane 0's
  ``mbarrier.arrive`` (a release at CTA scope), which the retirement's
  ``test_wait`` acquires before the consumers' bits are signalled.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from vdir import isa
from vdir.lowering.kernel.context import FULL, Ctx
from vdir.lowering.kernel.fetch import Fields

#: bytes of a buffer two flag words hold, moved by one vector access
PAIR_DATA_BYTES = 2 * isa.FLAG_WORD_DATA


def is_flag_words(c: Ctx, f: Fields) -> SSAValue:
    """A predicate: ``f`` is a flag-word load or store, as ``isa.moves_flag_words`` says (warp-uniform:
    every lane read the same word). Any other record ignores the flag: a forged nop with it polls nothing."""
    b = c.b
    flags = b.i("and.b32", "u32", f.read(isa.TRANSFER_FLAGS), isa.TRANSFER_FLAG_WORDS)
    opcode = f.read(isa.OPCODE)
    moves = b.i("or.pred", "pred", b.setp("eq.u32", opcode, isa.OP_LOAD), b.setp("eq.u32", opcode, isa.OP_STORE))
    return b.i("and.pred", "pred", b.setp("ne.u32", flags, 0), moves)


def _epoch(c: Ctx) -> SSAValue:
    """This launch's epoch, the flag its words carry."""
    assert c.launches_done is not None, "the launches done are worked out after the prologue's barrier"
    return c.b.i("add.u32", "u32", c.launches_done, 1)


def _rows(c: Ctx, f: Fields, body) -> None:
    """``body(words_row, tile_row, pairs)`` for each row of ``f``'s region: the u64 address of its first
    flag word, the u32 shared offset of its tile row from the tile, and its pairs of words."""
    b = c.b
    rows, row_bytes, stride = f.read(isa.ROWS), f.read(isa.ROW_BYTES), f.read(isa.ROW_STRIDE)
    lo, hi = f.halves(isa.GLOBAL_OFFSET)
    words0 = b.i("add.u64", "u64", c.sync, b.pack64(lo, hi))
    pairs = b.i("shr.u32", "u32", row_bytes, 3)
    stride2 = b.i("shl.b32", "u32", stride, 1)

    def row(r: SSAValue) -> None:
        at = b.i("mul.wide.u32", "u64", r, stride2)
        body(b.i("add.u64", "u64", words0, at), b.i("mul.lo.u32", "u32", r, row_bytes), pairs)

    b.for_range(0, rows, 1, row, "fw_row")


def write_flag_words(c: Ctx, f: Fields, src0: SSAValue) -> None:
    """Store engine: write the tile at shared ``src0`` as ``f``'s flag words with this launch's epoch."""
    b = c.b
    epoch = _epoch(c)

    def row(words: SSAValue, tile_row: SSAValue, pairs: SSAValue) -> None:
        src = b.i("add.u32", "u32", src0, tile_row)

        def pair(p: SSAValue) -> None:
            d0, d1 = b.raw("ld.shared.v2.b32", "{{{0}, {1}}}, [{2}]", outs=["b32", "b32"],
                           ins=[b.i("mad.lo.u32", "u32", p, PAIR_DATA_BYTES, src)])
            at = b.i("add.u64", "u64", words, b.i("mul.wide.u32", "u64", p, 2 * PAIR_DATA_BYTES))
            b.raw("st.relaxed.gpu.global.v2.b64", "[{0}], {{{1}, {2}}}",
                  ins=[at, b.pack64(d0, epoch), b.pack64(d1, epoch)])

        b.for_range(c.lane, pairs, 32, pair, "fw_put")

    _rows(c, f, row)


def read_flag_words(c: Ctx, f: Fields, dst0: SSAValue) -> SSAValue:
    """Load engine, one attempt: read ``f``'s flag words, keep their data in the tile at shared ``dst0``;
    a warp-uniform predicate, true where every word held this launch's epoch (else the tile holds
    nothing usable, and the caller tries again later)."""
    b = c.b
    epoch = _epoch(c)
    ok = b.var("u32", 1)

    def fetch(at: SSAValue) -> tuple[SSAValue, SSAValue]:
        """The data of the two words at ``at``; ``ok`` cleared unless both hold the epoch."""
        w0, w1 = b.raw("ld.relaxed.gpu.global.v2.b64", "{{{0}, {1}}}, [{2}]", outs=["b64", "b64"], ins=[at])
        d0, e0 = b.unpack64(w0)
        d1, e1 = b.unpack64(w1)
        both = b.i("and.pred", "pred", b.setp("eq.u32", e0, epoch), b.setp("eq.u32", e1, epoch))
        b.i("mov.u32", None, 0, dst=ok, guard=both, neg=True)
        return d0, d1

    # a probe first: each lane's first pair of the first row, so that a try while the row is still
    # being written reads 512 bytes, not the whole row
    done = b.new_label("fw_probe_failed")
    lo, hi = f.halves(isa.GLOBAL_OFFSET)
    first = b.i("add.u64", "u64", c.sync, b.pack64(lo, hi))
    probes = b.setp("lt.u32", c.lane, b.i("shr.u32", "u32", f.read(isa.ROW_BYTES), 3))
    probe = b.new_label("fw_no_probe")
    b.bra(probe, probes, neg=True)
    fetch(b.i("add.u64", "u64", first, b.i("mul.wide.u32", "u64", c.lane, 2 * PAIR_DATA_BYTES)))
    b.place(probe)
    b.bra(done, b.i("vote.sync.all.pred", "pred", b.setp("ne.u32", ok, 0), FULL), neg=True, uniform=True)

    def row(words: SSAValue, tile_row: SSAValue, pairs: SSAValue) -> None:
        dst = b.i("add.u32", "u32", dst0, tile_row)

        def pair(p: SSAValue) -> None:
            d0, d1 = fetch(b.i("add.u64", "u64", words, b.i("mul.wide.u32", "u64", p, 2 * PAIR_DATA_BYTES)))
            b.raw("st.shared.v2.b32", "[{0}], {{{1}, {2}}}",
                  ins=[b.i("mad.lo.u32", "u32", p, PAIR_DATA_BYTES, dst), d0, d1])

        b.for_range(c.lane, pairs, 32, pair, "fw_get")

    _rows(c, f, row)
    b.place(done)
    b.raw("bar.warp.sync", "%d" % FULL)
    return b.i("vote.sync.all.pred", "pred", b.setp("ne.u32", ok, 0), FULL)
