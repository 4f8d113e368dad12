"""Copies between global and shared memory, and the load ring's mbarriers.

The load engine copies a region into a tile slot as tensor copies
(``cp.async.bulk.tensor`` through the program's tensor maps), as plain bulk
copies (``cp.async.bulk``, where a region has no tensor form) or, on the
``lsu`` path, as 16-byte ``cp.async`` per lane; each load completes on the
mbarrier of its slot in the load ring. The store engine copies a result tile
out with tensor stores or ``st.global``, and adds a reducing store's f32 tile
into its region with bulk reductions (``cp.reduce.async.bulk``).

Memory-model notes, written where the instructions are emitted:

* the copies run in the async proxy: after acquiring a counter (another
  SM's writes into the source) the lanes that issue the load execute
  ``fence.proxy.async.global`` (:func:`cross_sm_fence`); the store engine
  fences the async proxy against the compute threads' tile writes before a
  tensor store (``fence.proxy.async.shared::cta``) and, once each store's
  copies are performed, its writes against the generic proxy and later
  loads (``fence.proxy.async.global``, ``store_engine._complete``); the WAR
  on a tile slot (compute threads' ``ld.shared``, then a copy into the slot)
  is ordered by the bits' release/acquire, as in an mbarrier-based pipeline;
* a load completes when its mbarrier phase completes, which makes the copied
  bytes visible to the threads that observed the phase.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from vdir import isa
from vdir.lowering import layout as L
from vdir.lowering.kernel.context import FULL, Ctx
from vdir.lowering.kernel.fetch import Fields


def buffer_address(c: Ctx, buf: SSAValue, off_lo: SSAValue, off_hi: SSAValue) -> SSAValue:
    """Global address of a buffer argument plus a 64-bit byte offset."""
    b = c.b
    po = b.i("mul.wide.u32", "u64", buf, 8)
    pa = b.i("add.u64", "u64", c.buffers, po)
    ptr = b.ld("ld.global.nc.u64", "u64", pa, 0)
    off = b.pack64(off_lo, off_hi)
    return b.i("add.u64", "u64", ptr, off)


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


#: the tensor map's words a tensor copy reads (:func:`tensor_boxes`)
TENSOR_BOX_FIELDS = (isa.TMAP, isa.TBOXES, isa.TBOX_ROWS, isa.TCHUNK, isa.TROW)


def copy_fields(c: Ctx) -> tuple[isa.Field, ...]:
    """The words a load's or store's copies read from its instruction: the region's and, where tensor
    copies are emitted, the tensor map's (:data:`TENSOR_BOX_FIELDS`). The engines load them with the
    sync words, ahead of the wait, so that their shared-memory latency passes while it waits; loaded
    there, they are also defined on every path after it (a word the fields first load on one path is a
    register another path would read undefined)."""
    tensor = TENSOR_BOX_FIELDS if c.options.tensor_copies_enabled else ()
    return (*isa.REGION_FIELDS, *tensor)


def tensor_boxes(c: Ctx, f: Fields, smem0: SSAValue, row_bytes: SSAValue, issue,
                 first: SSAValue | None = None, fence_if: SSAValue | None = None) -> None:
    """Call ``issue(smem, tmap, chunk, row)`` for each box of the region, boxes split over the lanes.

    Box k covers rows ``TROW + k * TBOX_ROWS ..`` and lands at
    ``smem0 + k * TBOX_ROWS * row_bytes`` (tiles are dense row-major). Lane
    i takes boxes ``first, first + 32, ..`` (``first``: the lane by default);
    with ``fence_if`` the issuing lanes first fence the async proxy.
    """
    b = c.b
    tm, boxes, box_rows, chunk, row0 = (f.read(x) for x in TENSOR_BOX_FIELDS)
    if fence_if is not None:
        assert first is not None, "a fenced tensor copy names its first issuing lane"
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
                first: SSAValue, p_ctr: SSAValue, policy: SSAValue | None = None) -> None:
    """Issue a load as tensor copies completing on the ring slot's mbarrier.

    ``first`` / ``p_ctr``: see :func:`issuer_index` and the load engine's
    cross-SM fence.

    Racecheck attributes a plain bulk copy's shared-memory write to the
    issuing thread and cannot see the mbarrier + dependency-bit chain that
    orders it before the compute engine's reads; a tensor copy is the copy
    engine's own access, so no thread pair is reported (the order is the
    same: mbarrier completion, then the bits' release/acquire). ``policy``:
    an L2 cache policy (``createpolicy``) the copies carry.
    """
    b = c.b
    lane0 = b.setp("eq.u32", c.lane, 0)
    b.raw("mbarrier.arrive.expect_tx.shared::cta.b64", "{0}, [{1}], {2}", outs=["b64"],
          ins=[bar, total], guard=lane0)
    b.raw("bar.warp.sync", "%d" % FULL)

    def issue(sa, tmap, chunk, r):
        _copy_in(c, "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                 "[{0}], [{1}, {{{2}, {3}, {4}}}], [{5}]", [sa, tmap, c.zero, chunk, r, bar], policy)

    tensor_boxes(c, f, dst0, row_bytes, issue, first, p_ctr)
    b.raw("bar.warp.sync", "%d" % FULL)


def tensor_store(c: Ctx, f: Fields, src0: SSAValue, row_bytes: SSAValue) -> None:
    """Issue a tile's tensor stores (``bulk_group`` completion; the store engine commits and waits).

    The compute threads wrote the tile with generic stores, which reach this
    warp through the bits' release/acquire; ``fence.proxy.async.shared::cta``
    then orders them before the copy engine's reads. The store engine
    commits each lane's copies as one bulk group, waits for it, and fences
    the async-proxy writes against the generic proxy, so that its release
    of the bits and the counter covers them as it covers ``st.global``
    (``store_engine._complete``).
    """
    b = c.b
    b.raw("fence.proxy.async.shared::cta", "")

    def issue(sa, tmap, chunk, r):
        b.raw("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group",
              "[{0}, {{{1}, {2}, {3}}}], [{4}]", ins=[tmap, c.zero, chunk, r, sa])

    tensor_boxes(c, f, src0, row_bytes, issue)


@dataclass(frozen=True)
class Reduction:
    """How the kernel adds a tile into a region for one ``isa.REDUCE_*`` code: the bulk reduction of a
    row (``[global], [shared], bytes``, a ``bulk_group`` completion), and the element-wise fallback
    (``red.global``) with its element's bytes and shared-memory load."""

    bulk: str
    red: str
    element_bytes: int
    load: str
    reg: str


#: each reduction the store engine performs, by its ``isa.REDUCE`` code
REDUCTIONS = {
    isa.REDUCE_ADD: Reduction("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32", "red.global.add.f32",
                              4, "ld.shared.f32", "f32"),
    # two's-complement adds: u64 adds give an i64 sum's bits
    isa.REDUCE_ADD_I64: Reduction("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u64",
                                  "red.global.add.u64", 8, "ld.shared.u64", "u64"),
}


def reduce_rows(c: Ctx, gptr: SSAValue, src0: SSAValue, rows: SSAValue, row_bytes: SSAValue,
                stride: SSAValue, how: Reduction) -> None:
    """Add a tile at shared ``src0`` into global ``gptr`` (a reducing store, ``isa.REDUCE``), as ``how``
    says.

    One bulk reduction (``how.bulk``) per row, lane i taking rows ``i, i + 32, ..``, when the global rows
    are 16-byte aligned (a bulk copy's rule; rows are whole 16-byte units and tiles start on 128 bytes);
    else ``how.red`` per element, the lanes splitting each row. Each add is atomic per element; the
    order of the adds of different SMs is whatever order they reach L2 in (f32 sums depend on it, i64
    sums do not). The protocol is the tensor store's (:func:`tensor_store`):
    ``fence.proxy.async.shared::cta`` orders the compute threads' writes of the tile before the copy
    engine reads it; the store engine commits, waits for and fences the bulk reductions as it does a
    tensor store's copies.
    """
    b = c.b
    g64 = b.i("cvt.u64.u32", "u64", stride)
    al = b.i("or.b64", "b64", gptr, g64)
    al = b.i("and.b64", "b64", al, 15)
    aligned = b.setp("eq.b64", al, 0)
    unaligned, done = b.new_label("red_unaligned"), b.new_label("red_done")
    b.bra(unaligned, aligned, neg=True)
    b.raw("fence.proxy.async.shared::cta", "")

    def bulk_row(r: SSAValue) -> None:
        srow = b.i("mad.lo.u32", "u32", r, row_bytes, src0)
        grow = b.i("add.u64", "u64", gptr, b.i("mul.wide.u32", "u64", r, stride))
        b.raw(how.bulk, "[{0}], [{1}], {2}", ins=[grow, srow, row_bytes])

    b.for_range(c.lane, rows, 32, bulk_row, "red_rows")
    b.bra(done)
    b.place(unaligned)
    units = b.i("shr.u32", "u32", row_bytes, how.element_bytes.bit_length() - 1)

    def element_row(r: SSAValue) -> None:
        srow = b.i("mad.lo.u32", "u32", r, row_bytes, src0)
        grow = b.i("add.u64", "u64", gptr, b.i("mul.wide.u32", "u64", r, stride))

        def element(j: SSAValue) -> None:
            v = b.ld(how.load, how.reg, b.i("mad.lo.u32", "u32", j, how.element_bytes, srow), 0)
            ga = b.i("add.u64", "u64", grow, b.i("mul.wide.u32", "u64", j, how.element_bytes))
            b.raw(how.red, "[{0}], {1}", ins=[ga, v])

        b.for_range(c.lane, units, 32, element, "red_col")

    b.for_range(0, rows, 1, element_row, "red_row")
    b.place(done)
    b.raw("bar.warp.sync", "%d" % FULL)


def store_rows(c: Ctx, gptr: SSAValue, src0: SSAValue, rows: SSAValue, row_bytes: SSAValue,
               stride: SSAValue) -> None:
    """Copy a tile at shared ``src0`` to global ``gptr`` with ``st.global``, the lanes splitting each row.

    16-byte ``ld.shared.v4`` / ``st.global.v4`` when the destination rows are
    16-byte aligned, else 2-byte copies (both paths are emitted; a branch on
    the alignment picks one).
    """
    b = c.b
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


def mbar_count(c: Ctx) -> int:
    """Arrivals that complete a load-ring mbarrier phase: 1 (bulk copies,
    completion by transaction bytes) or 32 (one per lane, ``lsu`` path)."""
    return 32 if c.options.lsu_loads else 1


def lsu_load(c: Ctx, gptr: SSAValue, dst0: SSAValue, rows: SSAValue, row_bytes: SSAValue,
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


def bulk_load(c: Ctx, gptr: SSAValue, dst0: SSAValue, rows: SSAValue, row_bytes: SSAValue, stride: SSAValue,
              total: SSAValue, contig: SSAValue, bar: SSAValue, first: SSAValue, p_ctr: SSAValue,
              lane0: SSAValue, policy: SSAValue | None = None) -> None:
    """Issue a load as plain bulk copies (``cp.async.bulk``) completing on ``bar`` by transaction bytes.

    ``first`` / ``p_ctr``: see :func:`issuer_index` and :func:`cross_sm_fence`;
    ``lane0`` arms the barrier; ``policy``: an L2 cache policy (``createpolicy``) the copies carry.
    """
    b = c.b
    # a dense region (stride == row bytes) is one copy
    # a dense region is cut into up to `split` chunks (multiples of 16 bytes)
    # that the lanes issue as separate copies; strided regions go row by row
    split = c.options.split_copies
    unit = 16 * split
    if split > 1:
        chunk = b.i("add.u32", "u32", total, unit - 1)
        chunk = b.i("div.u32", "u32", chunk, unit)  # by a constant: a multiply-high
        chunk = b.i("shl.b32", "u32", chunk, 4)
        nchunks = b.i("add.u32", "u32", total, chunk)
        nchunks = b.i("add.u32", "u32", nchunks, -1)
        nchunks = b.i("div.u32", "u32", nchunks, chunk)
    else:
        # one copy of the whole region (no division by a register on the issue path)
        chunk = b.i("add.u32", "u32", total, 15)
        chunk = b.i("and.b32", "u32", chunk, -16)
        nchunks = b.mov("u32", 1)
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
        _copy_in(c, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
                 "[{0}], [{1}], {2}, [{3}]", [dst, src, size, bar], policy)

    b.for_range(first, n, 32, copy, "ld_rows")
    b.raw("bar.warp.sync", "%d" % FULL)


#: bytes of one L2 prefetch copy of a dense region (the lanes issue the pieces side by side)
PREFETCH_PIECE_BYTES = 4096


def bulk_prefetch(c: Ctx, gptr: SSAValue, rows: SSAValue, row_bytes: SSAValue, stride: SSAValue) -> None:
    """Ask L2 for a region (``cp.async.bulk.prefetch.L2``): no shared memory, no completion, no wait.

    A dense region (stride == row bytes) goes in :data:`PREFETCH_PIECE_BYTES`
    pieces, a strided one row by row; lane ``i`` issues pieces ``i, i + 32, ...``.
    A prefetch is a hint with no effect on any value, so it needs no fence.
    """
    b = c.b
    total = b.i("mul.lo.u32", "u32", rows, row_bytes)
    contig = b.setp("eq.u32", stride, row_bytes)
    pieces = b.i("add.u32", "u32", total, PREFETCH_PIECE_BYTES - 1)
    pieces = b.i("shr.u32", "u32", pieces, PREFETCH_PIECE_BYTES.bit_length() - 1)
    n = b.i("selp.u32", "u32", pieces, rows, contig)
    rb = b.i("selp.u32", "u32", PREFETCH_PIECE_BYTES, row_bytes, contig)
    step = b.i("selp.u32", "u32", PREFETCH_PIECE_BYTES, stride, contig)

    def piece(r: SSAValue) -> None:
        src = b.i("add.u64", "u64", gptr, b.i("mul.wide.u32", "u64", r, step))
        left = b.i("sub.u32", "u32", total, b.i("mul.lo.u32", "u32", r, rb))
        size = b.i("min.u32", "u32", rb, left)
        b.raw("cp.async.bulk.prefetch.L2.global", "[{0}], {1}", ins=[src, size])

    b.for_range(c.lane, n, 32, piece, "pf_rows")
    b.raw("bar.warp.sync", "%d" % FULL)


def _copy_in(c: Ctx, mnemonic: str, operands: str, ins: list[SSAValue], policy: SSAValue | None) -> None:
    """One copy into shared memory; with ``policy``, carrying it as an L2 cache hint (``.L2::cache_hint``)."""
    if policy is None:
        c.b.raw(mnemonic, operands, ins=ins)
    else:
        c.b.raw(f"{mnemonic}.L2::cache_hint", f"{operands}, {{{len(ins)}}}", ins=[*ins, policy])


def evict_first_policy(c: Ctx) -> SSAValue:
    """An L2 cache policy register (``createpolicy``) that marks every line a copy brings in ``evict_first``."""
    return c.b.raw("createpolicy.fractional.L2::evict_first.b64", "{0}", outs=["b64"])[0]


def ring_barrier(c: Ctx, ring: int, depth: int, index) -> tuple:
    """(ring slot, mbarrier address) of the load with queue position ``index`` in load ring ``ring``
    (of ``depth`` slots)."""
    b = c.b
    slot = b.i("and.b32", "u32", index, depth - 1)
    bar = b.i("mad.lo.u32", "u32", slot, 8, c.base)
    bar = b.i("add.u32", "u32", bar, L.ring_mbarriers(ring))
    return slot, bar


def ring_landed(c: Ctx, ring: int, depth: int, index, phases, wait: str) -> tuple:
    """(ring slot, warp-uniform predicate) saying whether load ``index`` of ring ``ring`` has landed.

    ``wait`` is ``test_wait`` (a poll) or ``try_wait`` (may suspend a while);
    the expected phase of each slot's mbarrier is its bit in ``phases``.
    """
    b = c.b
    slot, bar = ring_barrier(c, ring, depth, index)
    parity = b.i("shr.b32", "u32", phases, slot)
    parity = b.i("and.b32", "u32", parity, 1)
    landed = b.raw(f"mbarrier.{wait}.parity.shared::cta.b64", "{0}, [{1}], {2}", outs=["pred"],
                   ins=[bar, parity])[0]
    return slot, b.i("vote.sync.all.pred", "pred", landed, FULL)
