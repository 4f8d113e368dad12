"""Bodies of the gemv families: ``gemv``, ``rmsnorm_gemv``, ``gemv_silu_mul``,
``gemv_add``.

The weight tile is R x K bf16, dense rows of 2K bytes. Each compute warp takes
rows ``cw, cw + nwarps, ...``; its lanes read 16-byte chunks of the row and of
x (``ld.shared.v4.b32``), widen the bf16 pairs to f32 exactly (shift / mask),
and accumulate with ``fma``; a butterfly ``shfl`` reduces the row, leaving the
same total in every lane, and the warp applies the family's epilogue, every
lane storing the same result element. The chunk loop is unrolled
:data:`UNROLL` times so that several shared loads are in flight.

Every branch of the row loop is warp-uniform (``bra.uni``: no reconvergence
for ptxas to set up): the chunk loops count a group's first chunk, the same
in every lane, and the last group's lanes past the warp's end add zeros
instead of branching; the epilogue runs in every lane instead of lane 0.

Where a warp has whole rows to itself and four or two passes' rows remain,
it runs them as one pass (:func:`_grouped_passes`): each chunk of x is read
from shared memory and widened once for the group, and more loads are in
flight. Each row keeps its own accumulators in the same order, and the
group's sums leave the warp in one reduce-scatter (:func:`F.scatter_sum`),
which adds the same pairs as a butterfly per row: the result is the same
bit for bit, with fewer shuffles and one epilogue for the group.

A tile of :data:`BLOCK_ROWS` rows (the narrow tiles of long rows) runs as
one row block instead (:func:`_row_block`): every warp takes a slice of K
for all the rows, so x is read once per tile rather than once per row, and
the slices' partial sums are added in warp order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

from xdsl.ir import SSAValue

from vdir import isa
from vdir.lowering import families as F
from vdir.lowering.builder import PtxBuilder

UNROLL = 4

#: x transform: (builder, x f32) -> x' f32, given per-chunk context
XForm = Callable[[PtxBuilder, SSAValue, SSAValue], SSAValue]
#: epilogue: (cc, row, row sum f32) -> None (every lane of the row's warp, with the same sum)
Epilogue = Callable[["F.ComputeCtx", SSAValue, SSAValue], None]


@dataclass
class _Segment:
    """The 16-byte chunks of each of its rows that a warp reads (registers)."""

    rowb: SSAValue  # bytes of a weight row
    start: SSAValue  # this warp's first 16-byte chunk
    end: SSAValue  # end of this warp's chunks
    main_end: SSAValue  # the unrolled loop runs while its first chunk is below this
    unroll: int  # chunks per lane in one trip of the unrolled loop


@dataclass
class _RowSplit:
    """How the compute warps share the rows of one gemv (registers; see :func:`_gemv_core`)."""

    G: SSAValue  # warps per row
    rpp: SSAValue  # rows per pass
    npass: SSAValue  # passes over the rows
    sub: SSAValue  # this warp's index among the row's G warps
    rw: SSAValue  # this warp's row within a pass
    split: SSAValue  # predicate: G > 1
    lane0: SSAValue
    seg: _Segment  # this warp's chunks of each row


def _gemv_core(cc: "F.ComputeCtx", epilogue: Epilogue, inv: SSAValue | None = None) -> None:
    """The row loop; ``inv`` set means x is rmsnorm'ed (with ins[2] as weight) on the fly.

    Work split: with R rows and W compute warps, G = W // min(R, W) warps share
    a row, each taking a contiguous 1/G of its 16-byte chunks; a pass covers
    W // G rows. With G > 1 the per-warp partial sums meet in shared scratch
    (two buffers, alternating by pass) behind a group barrier, and the first
    warp of each row adds them in a fixed order and runs the epilogue.
    """
    b = cc.b
    R = cc.p0
    top, done = b.new_label("gemv_pass"), b.new_label("gemv_done")
    block = b.new_label("gemv_block") if blocked_rows_fit(cc.nwarps) else None
    if block is not None:
        b.bra(block, b.setp("eq.u32", R, BLOCK_ROWS), uniform=True)
    rs = _split_rows(cc)
    npass = rs.npass
    p = b.var("u32", 0)
    for rows in ROW_GROUPS:
        _grouped_passes(cc, rs, p, epilogue, inv, rows)
    b.place(top)
    b.bra(done, b.setp("ge.u32", p, npass), uniform=True)
    r = b.i("mad.lo.u32", "u32", p, rs.rpp, rs.rw)
    active = b.setp("lt.u32", r, R)
    s = F.warp_sum(b, _warp_row_partials(cc, rs.seg, [r], active, inv)[0])
    tot = _combine_partials(cc, rs, p, s)
    # -- epilogue: the row's first warp, every lane with the same total and the same stores ---------
    writer = b.setp("eq.u32", rs.sub, 0)
    writer = b.i("and.pred", "pred", writer, active)
    skip = b.new_label("gemv_epi_skip")
    b.bra(skip, writer, neg=True, uniform=True)
    epilogue(cc, r, tot)
    b.place(skip)
    b.i("add.u32", "u32", p, 1, dst=p)
    b.bra(top)
    if block is not None:
        b.place(block)
        _row_block(cc, epilogue, inv, done)
    b.place(done)


#: rows of the tiles whose gemv runs as one row block (:func:`_row_block`): the library's narrow tiles
#: (``vdir.frontend.layers.NARROW_TILE_ROWS``), wherever K is too long for 16 rows in a tile
BLOCK_ROWS = 8
#: chunks per lane in one trip of a row block's unrolled loop: its rows' weight words in flight per lane
#: are ``BLOCK_ROWS * BLOCK_UNROLL * 4``
BLOCK_UNROLL = 2


def blocked_rows_fit(warps: int) -> bool:
    """Whether ``warps`` compute warps run ``BLOCK_ROWS``-row tiles as one row block: groups of 2 to 8
    warps, whose partials (``BLOCK_ROWS`` words per warp) fit the shared scratch for them. A group of
    one warp keeps the row loop, as measured before the row block (a warp alone has no partials to
    combine, and no measurement said the block is better for it)."""
    return 2 <= warps and BLOCK_ROWS * warps * 4 <= F.L.GEMV_ROW_PARTIALS_BYTES


def _row_block(cc: "F.ComputeCtx", epilogue: Epilogue, inv: SSAValue | None, done: str) -> None:
    """A tile of exactly :data:`BLOCK_ROWS` rows as one block (the caller branches here for them),
    ending at ``done``, placed right after it.

    Each warp takes a contiguous 1/W of K for every row, so each chunk of x
    is read from shared memory once for all the rows (in the row loop, each
    row's warp reads the whole x: half of a narrow tile's shared-memory
    reads). Each warp's partial sums of the rows meet in shared scratch
    behind the group barrier, and the warp of row r (warps ``r mod W``) adds
    that row's partials in warp order and runs its epilogue: a fixed order,
    the same at every run.

    Each warp's row sums leave it in one reduce-scatter (:func:`F.scatter_sum`,
    nine shuffles for the eight rows instead of forty), and the first lane of
    each row's lanes writes that row's partial.

    Memory model: each warp writes its partials with ``st.shared``
    before the group's ``barrier.sync``, which orders them before every
    warp's reads after it. The scratch is written again only by the next
    micro-op, after the compute step's closing barrier, so one buffer does
    (the row loop's split rows alternate two: several passes in one step).
    """
    b = cc.b
    W = cc.nwarps
    chunks = b.i("shr.u32", "u32", cc.p1, 3)
    per = _div_by_constant(b, chunks, W)
    start = b.i("mul.lo.u32", "u32", cc.cw, per)
    end = b.i("add.u32", "u32", start, per)
    end = b.i("selp.u32", "u32", chunks, end, b.setp("eq.u32", cc.cw, W - 1))
    seg = _segment(b, b.i("shl.b32", "u32", cc.p1, 1), start, end, BLOCK_UNROLL)
    partials = _warp_row_partials(cc, seg, [b.var("u32", r) for r in range(BLOCK_ROWS)], None, inv)
    slot, s = F.scatter_sum(b, cc.lane, partials)
    base = cc.c.base  # type: ignore[attr-defined]
    mine = b.i("mad.lo.u32", "u32", cc.cw, 4 * BLOCK_ROWS, base)
    mine = b.i("mad.lo.u32", "u32", slot, 4, mine)
    first = b.i("and.b32", "u32", cc.lane, 32 // BLOCK_ROWS - 1)  # the slot's first lane writes its row
    b.st("st.shared.f32", mine, F.L.SMEM_GEMV_ROW_PARTIALS, s, guard=b.setp("eq.u32", first, 0))
    b.raw("barrier.sync", "%d, %d" % (F.L.COMPUTE_BARRIER, cc.nthreads))
    for first in range(0, BLOCK_ROWS, W):  # rows first + cw: every lane of the warp alike
        row = b.i("add.u32", "u32", cc.cw, first) if first else cc.cw
        if first + W > BLOCK_ROWS:
            b.bra(done, b.setp("ge.u32", row, BLOCK_ROWS), uniform=True)
        col = b.i("mad.lo.u32", "u32", row, 4, base)
        tot = b.var("f32", 0.0)
        for w in range(W):
            v = b.ld("ld.shared.f32", "f32", col, F.L.SMEM_GEMV_ROW_PARTIALS + 4 * BLOCK_ROWS * w)
            b.i("add.rn.f32", "f32", tot, v, dst=tot)
        epilogue(cc, row, tot)


#: rows a warp with whole rows (G = 1) sums in one pass, most first, while that many passes' rows remain
#: (:func:`_grouped_passes`); the rest run one row at a time
ROW_GROUPS = (4, 2)
#: each group's label names (``$L_gemv_pair_0``, ...)
_GROUP_NAMES = {4: "quad", 2: "pair"}


def _grouped_passes(cc: "F.ComputeCtx", rs: _RowSplit, p: SSAValue, epilogue: Epilogue,
                    inv: SSAValue | None, rows: int) -> None:
    """Passes ``p .. p + rows - 1`` as one while each warp has whole rows (G = 1) and all those passes'
    rows exist; ``p`` is left at the first pass not done. (Uniform branches: G and R are per op.)

    x is read and widened once for the ``rows`` rows; their sums leave the warp in one reduce-scatter
    (:func:`F.scatter_sum`), so that each lane holds one row's total and the warp runs one epilogue, each
    lane for its row (the lanes of a row store the same element, as in the one-row pass)."""
    b = cc.b
    name = _GROUP_NAMES[rows]
    top, done = b.new_label("gemv_" + name), b.new_label("gemv_%s_done" % name)
    b.place(top)
    b.bra(done, rs.split, uniform=True)
    end = b.i("add.u32", "u32", p, rows)
    end = b.i("mul.lo.u32", "u32", end, rs.rpp)
    b.bra(done, b.setp("gt.u32", end, cc.p0), uniform=True)
    r = b.i("mad.lo.u32", "u32", p, rs.rpp, rs.rw)
    group = [r] + [b.i("mad.lo.u32", "u32", rs.rpp, k, r) for k in range(1, rows)]
    slot, s = F.scatter_sum(b, cc.lane, _warp_row_partials(cc, rs.seg, group, None, inv))
    epilogue(cc, b.i("mad.lo.u32", "u32", slot, rs.rpp, r), s)
    b.i("add.u32", "u32", p, rows, dst=p)
    b.bra(top)
    b.place(done)


def share_classes(warps: int) -> list[tuple[int, int]]:
    """(G, the largest ``min(R, W)`` that gives it) for each distinct ``G = W // min(R, W)`` with ``W =
    warps``, most warps per row first: the cases :func:`_split_rows` selects between."""
    classes: list[tuple[int, int]] = []
    for r in range(1, warps + 1):
        g = warps // r
        if classes and classes[-1][0] == g:
            classes[-1] = (g, r)
        else:
            classes.append((g, r))
    return classes


#: :func:`_div_by_constant` is exact for dividends below this (divisors up to 32, a CTA's warps): a
#: tile's rows and 16-byte chunks per row are far below it
DIV_EXACT_BELOW = 1 << 27


def _div_by_constant(b: PtxBuilder, n: SSAValue, d: int) -> SSAValue:
    """``n // d`` for ``n < DIV_EXACT_BELOW`` and ``1 <= d <= 32``, without a division instruction
    (ptxas expands ``div.u32`` by an immediate into the full reciprocal sequence): a shift for a power
    of two, else the high word of ``n * ceil(2^32 / d)``, exact because ``n * (that * d - 2^32) < 2^32``."""
    assert 1 <= d <= 32, d
    if d & (d - 1) == 0:
        return b.i("shr.u32", "u32", n, d.bit_length() - 1) if d > 1 else n
    return b.i("mul.hi.u32", "u32", n, div_magic(d))


def div_magic(d: int) -> int:
    """``ceil(2^32 / d)``: the multiplier of :func:`_div_by_constant`."""
    return -(-(1 << 32) // d)


def _split_rows(cc: "F.ComputeCtx") -> _RowSplit:
    """The work split of :func:`_gemv_core` for this warp and lane: the group's cached one
    (:class:`SplitCache`) where the last gemv it ran had this tile's rows and K, else worked out
    (:func:`_work_out_split`) and cached. Without a cache (a body emitted outside a compute group's
    loop), worked out every time."""
    cache = cc.state(split_cache)
    if cache is None:
        return _row_split(cc, _work_out_split(cc))
    b = cc.b
    kept = b.new_label("gemv_split_kept")
    same = b.i("and.pred", "pred", b.setp("eq.u32", cc.p0, cache.rows), b.setp("eq.u32", cc.p1, cache.k))
    b.bra(kept, same, uniform=True)
    cache.keep(cc, _work_out_split(cc))
    b.place(kept)
    return _row_split(cc, cache.words)


@dataclass
class _SplitWords:
    """The registers that make a row split (:class:`_RowSplit`, whose predicates and row bytes follow
    from them and the instruction): what a :class:`SplitCache` keeps."""

    G: SSAValue
    rpp: SSAValue
    npass: SSAValue
    rw: SSAValue
    sub: SSAValue
    start: SSAValue  # this warp's chunks of each row (_Segment)
    end: SSAValue
    main_end: SSAValue


def _row_split(cc: "F.ComputeCtx", w: _SplitWords) -> _RowSplit:
    """The split that ``w`` makes, for this warp and lane."""
    b = cc.b
    seg = _Segment(rowb=b.i("shl.b32", "u32", cc.p1, 1), start=w.start, end=w.end, main_end=w.main_end,
                   unroll=UNROLL)
    return _RowSplit(G=w.G, rpp=w.rpp, npass=w.npass, sub=w.sub, rw=w.rw, split=b.setp("gt.u32", w.G, 1),
                     lane0=b.setp("eq.u32", cc.lane, 0), seg=seg)


#: the rows a :class:`SplitCache` holds before the group's first gemv: no tile has them (a tile's rows
#: are far below :data:`DIV_EXACT_BELOW`)
NO_ROWS = 0xFFFFFFFF


@dataclass
class SplitCache:
    """The row split of the last gemv the compute group ran, in registers (each thread its own), kept
    from one micro-op to the next: the gemv bodies' group state (``Family.ptx_state``).

    The split depends only on the tile's rows and K (and the group's warps,
    fixed in the kernel), and an SM's gemv tiles mostly share one shape: a
    projection's tiles, or a decode layer's q/k/v, output and gate/up tiles
    of one hidden size. A step whose rows and K are the cached ones takes the
    split from here (a compare and a uniform branch) instead of working it
    out again (the classes, the divisions by constants and the segment:
    about 44 SASS instructions per warp; docs/performance.md, round 56).

    Every thread of the group runs every gemv body with the same rows and K,
    so the cached key, and the branch on it, is the same in every thread.
    """

    rows: SSAValue  # the key: the last gemv's rows (NO_ROWS before the first)
    k: SSAValue  # and its K
    words: _SplitWords  # its split

    def keep(self, cc: "F.ComputeCtx", words: _SplitWords) -> None:
        """Cache ``words``, the split of this tile's rows and K."""
        b = cc.b
        b.set(self.rows, cc.p0)
        b.set(self.k, cc.p1)
        for f in fields(_SplitWords):
            b.set(getattr(self.words, f.name), getattr(words, f.name))


def split_cache(c: object) -> SplitCache:
    """The gemv families' group state (``Family.ptx_state``): a :class:`SplitCache` that no tile's
    shape matches yet, made in kernel context ``c`` before the compute group's loop."""
    b: PtxBuilder = c.b  # type: ignore[attr-defined]
    rows, k = b.var("u32", NO_ROWS), b.var("u32", 0)
    return SplitCache(rows, k, _SplitWords(*(b.var("u32", 0) for _ in fields(_SplitWords))))


def _work_out_split(cc: "F.ComputeCtx") -> _SplitWords:
    """Work out the split of :func:`_gemv_core` for this warp and lane.

    W is known when the kernel is built, so G takes one of a few values
    (:func:`share_classes`): each class's quantities are divisions by
    constants (:func:`_div_by_constant`: shifts or one multiplication), and
    comparisons of ``min(R, W)`` select the class. Three chained divisions by register values (about a
    hundred instructions on the gemv's critical path) are gone; the split
    itself is the same.
    """
    b = cc.b
    W = cc.nwarps
    R, K = cc.p0, cc.p1
    chunks = b.i("shr.u32", "u32", K, 3)
    rmin = b.i("min.u32", "u32", R, W)
    rmin = b.i("max.u32", "u32", rmin, 1)
    classes = share_classes(W)
    picks = [b.setp("le.u32", rmin, most) for _g, most in classes[:-1]]

    def pick(value: Callable[[int], int | SSAValue]) -> SSAValue:
        """``value(G)`` of the class ``rmin`` falls in."""
        chosen = b.var("u32", value(classes[-1][0]))
        for pred, (g, _most) in zip(reversed(picks), reversed(classes[:-1]), strict=True):
            chosen = b.i("selp.u32", "u32", value(g), chosen, pred)
        return chosen

    G = pick(lambda g: g)
    rpp = pick(lambda g: W // g)  # rows per pass
    npass = pick(lambda g: _div_by_constant(b, b.i("add.u32", "u32", R, W // g - 1) if g < W else R, W // g))
    rw = pick(lambda g: _div_by_constant(b, cc.cw, g))
    sub = b.i("mul.lo.u32", "u32", rw, G)
    sub = b.i("sub.u32", "u32", cc.cw, sub)
    seg = pick(lambda g: _div_by_constant(b, chunks, g))
    seg_start = b.i("mul.lo.u32", "u32", sub, seg)
    last = b.i("add.u32", "u32", sub, 1)
    last = b.setp("eq.u32", last, G)
    seg_end = b.i("add.u32", "u32", seg_start, seg)
    seg_end = b.i("selp.u32", "u32", chunks, seg_end, last)
    return _SplitWords(G=G, rpp=rpp, npass=npass, rw=rw, sub=sub, start=seg_start, end=seg_end,
                       main_end=_main_end(b, seg_end, UNROLL))


def _segment(b: PtxBuilder, rowb: SSAValue, start: SSAValue, end: SSAValue, unroll: int) -> _Segment:
    """Chunks ``start .. end`` of each row, read ``unroll`` chunks per lane at a time while they last."""
    return _Segment(rowb=rowb, start=start, end=end, main_end=_main_end(b, end, unroll), unroll=unroll)


def _main_end(b: PtxBuilder, end: SSAValue, unroll: int) -> SSAValue:
    """Where the unrolled loop over chunks up to ``end`` stops (:attr:`_Segment.main_end`)."""
    # the unrolled loop takes 32 * unroll chunks from jb while all of them are the warp's:
    # jb + 32 * unroll <= end, that is jb < end - 32 * unroll + 1
    span = 32 * unroll
    has_main = b.setp("ge.u32", end, span)
    main_end = b.i("sub.u32", "u32", end, span - 1)
    return b.i("selp.u32", "u32", main_end, 0, has_main)


def _xvals(b: PtxBuilder, xw: SSAValue, gw: SSAValue | None, inv: SSAValue | None) -> tuple[SSAValue, SSAValue]:
    """The two x elements of word ``xw`` as f32; rmsnorm'ed with weight word ``gw`` when ``inv`` is set."""
    x0, x1 = F.bf16_pair(b, xw)
    if inv is None:
        return x0, x1
    assert gw is not None
    g0, g1 = F.bf16_pair(b, gw)
    out = []
    for xv, gv in ((x0, g0), (x1, g1)):
        t = b.i("mul.rn.f32", "f32", xv, inv)
        t = b.i("mul.rn.f32", "f32", t, gv)
        out.append(F.round_bf16(b, t))
    return out[0], out[1]


def _chunk_group(cc: "F.ComputeCtx", j: SSAValue, accs: list[list[SSAValue]], n: int, wrows: list[SSAValue],
                 inv: SSAValue | None, keep: SSAValue | None = None) -> None:
    """Accumulate chunks ``j, j + 32, .. j + 32 (n - 1)`` of the rows at ``wrows`` into their ``accs``
    (x read once for all of them); where ``keep`` is false in a lane, its products are zeros."""
    b = cc.b
    x, g = cc.ins[1], cc.ins[2]
    # chunk j + 32k is 512k bytes after chunk j
    off = b.i("shl.b32", "u32", j, 4)
    was = [b.i("add.u32", "u32", wrow, off) for wrow in wrows]
    xa = b.i("add.u32", "u32", x, off)
    ga = b.i("add.u32", "u32", g, off) if inv is not None else None
    ws = [[b.ld_v4("ld.shared.v4.b32", "b32", wa, 512 * k) for k in range(n)] for wa in was]
    xs = [b.ld_v4("ld.shared.v4.b32", "b32", xa, 512 * k) for k in range(n)]
    gs = [b.ld_v4("ld.shared.v4.b32", "b32", ga, 512 * k) if ga is not None else [None] * 4 for k in range(n)]
    for k in range(n):
        for q in range(4):
            wws = [row_ws[k][q] for row_ws in ws]
            if keep is not None:  # a zero word is two +0.0 bf16: finite products whatever x and w hold
                wws = [b.i("selp.b32", "b32", w, 0, keep) for w in wws]
            wps = [F.bf16_pair(b, w) for w in wws]
            x0, x1 = _xvals(b, xs[k][q], gs[k][q], inv)
            if keep is not None:
                x0, x1 = (b.i("selp.f32", "f32", x, 0.0, keep) for x in (x0, x1))
            for row_accs, (w0, w1) in zip(accs, wps, strict=True):
                a = row_accs[(2 * q) % len(row_accs)]
                b.i("fma.rn.f32", "f32", w0, x0, a, dst=a)
                a = row_accs[(2 * q + 1) % len(row_accs)]
                b.i("fma.rn.f32", "f32", w1, x1, a, dst=a)


def _warp_row_partials(cc: "F.ComputeCtx", seg: _Segment, rows: list[SSAValue], active: SSAValue | None,
                       inv: SSAValue | None) -> list[SSAValue]:
    """Each lane's share of this warp's dot products of ``rows`` over its chunks ``seg`` (0 when not
    ``active``; None: always): summed over the warp (:func:`F.warp_sum`, :func:`F.scatter_sum`), the
    warp's partial sums of the rows."""
    b = cc.b
    accs = [[b.var("f32", 0.0) for _ in range(4)] for _ in rows]
    skip_rows = b.new_label("gemv_inactive")
    if active is not None:
        b.bra(skip_rows, active, neg=True, uniform=True)
    wrows = [b.i("mad.lo.u32", "u32", r, seg.rowb, cc.ins[0]) for r in rows]
    # jb, the first chunk of the warp's next group, is the same in every lane, and so are both loops'
    # tests: lane l takes chunk jb + l (+ 32 k)
    jb = b.var("u32", 0)
    b.set(jb, seg.start)
    ml, md = b.new_label("gemv_main"), b.new_label("gemv_main_end")
    b.place(ml)
    b.bra(md, b.setp("ge.u32", jb, seg.main_end), uniform=True)
    _chunk_group(cc, b.i("add.u32", "u32", jb, cc.lane), accs, seg.unroll, wrows, inv)
    b.i("add.u32", "u32", jb, 32 * seg.unroll, dst=jb)
    b.bra(ml)
    b.place(md)
    # the last chunks, 32 at a time; a lane past the warp's end reads chunk jb and adds zeros
    tl, td = b.new_label("gemv_tail"), b.new_label("gemv_tail_end")
    b.place(tl)
    b.bra(td, b.setp("ge.u32", jb, seg.end), uniform=True)
    j = b.i("add.u32", "u32", jb, cc.lane)
    keep = b.setp("lt.u32", j, seg.end)
    _chunk_group(cc, b.i("selp.u32", "u32", j, jb, keep), accs, 1, wrows, inv, keep)
    b.i("add.u32", "u32", jb, 32, dst=jb)
    b.bra(tl)
    b.place(td)
    b.place(skip_rows)
    partials = []
    for a in accs:
        s = b.i("add.rn.f32", "f32", a[0], a[1])
        s2 = b.i("add.rn.f32", "f32", a[2], a[3])
        partials.append(b.i("add.rn.f32", "f32", s, s2))
    return partials


def _combine_partials(cc: "F.ComputeCtx", rs: _RowSplit, p: SSAValue, s: SSAValue) -> SSAValue:
    """The row's total in the first warp of the row: ``s`` itself, or with G > 1 the
    sum of the G warps' partials (through shared scratch buffer ``p & 1``)."""
    b = cc.b
    W = cc.nwarps
    base = cc.c.base  # type: ignore[attr-defined]
    tot = b.var("f32", 0.0)
    b.set(tot, s)
    # -- combine the G partial sums of a row (uniform branch: G is per op) ----
    no_split = b.new_label("gemv_nosplit")
    b.bra(no_split, rs.split, neg=True, uniform=True)
    buf = b.i("and.b32", "u32", p, 1)
    buf = b.i("mad.lo.u32", "u32", buf, 4 * W, base)
    slot = b.i("mad.lo.u32", "u32", cc.cw, 4, buf)
    b.st("st.shared.f32", slot, F.L.SMEM_GEMV_PARTIALS, s, guard=rs.lane0)
    b.raw("barrier.sync", "%d, %d" % (F.L.COMPUTE_BARRIER, cc.nthreads))
    first = b.setp("eq.u32", rs.sub, 0)
    skip_sum = b.new_label("gemv_nosum")
    b.bra(skip_sum, first, neg=True, uniform=True)
    b.set(tot, 0.0)
    gi = b.var("u32", 0)
    sl, sd = b.new_label("gemv_sum"), b.new_label("gemv_sum_end")
    b.place(sl)
    b.bra(sd, b.setp("ge.u32", gi, rs.G), uniform=True)
    ga = b.i("mad.lo.u32", "u32", gi, 4, slot)
    v = b.ld("ld.shared.f32", "f32", ga, F.L.SMEM_GEMV_PARTIALS)
    b.i("add.rn.f32", "f32", tot, v, dst=tot)
    b.i("add.u32", "u32", gi, 1, dst=gi)
    b.bra(sl)
    b.place(sd)
    b.place(skip_sum)
    b.place(no_split)
    return tot


def _store_bf16(cc: "F.ComputeCtx", r: SSAValue, v: SSAValue) -> None:
    b = cc.b
    a = b.i("mad.lo.u32", "u32", r, 2, cc.out)
    b.st("st.shared.b16", a, 0, F.to_bf16(b, v))


def _other(cc: "F.ComputeCtx", r: SSAValue) -> SSAValue:
    b = cc.b
    return F.load_bf16(b, b.i("mad.lo.u32", "u32", r, 2, cc.ins[2]))


def gemv(cc: "F.ComputeCtx") -> None:
    """y = w . x (+ acc f32 when p2 & 1); bf16 out, or f32 when p2 & 2."""
    b = cc.b

    def epi(cc: "F.ComputeCtx", r: SSAValue, s: SSAValue) -> None:
        has_acc = b.i("and.b32", "u32", cc.p2, isa.GEMV_HAS_ACC)
        p_acc = b.setp("ne.u32", has_acc, 0)
        aa = b.i("mad.lo.u32", "u32", r, 4, cc.ins[2])
        accv = b.var("f32", 0.0)
        b.ld("ld.shared.f32", "f32", aa, dst=accv, guard=p_acc)
        y = b.i("add.rn.f32", "f32", s, accv)
        # adding +0.0 changes nothing except -0.0 -> +0.0; keep s when no acc
        y = b.i("selp.f32", "f32", y, s, p_acc)
        f32o = b.i("and.b32", "u32", cc.p2, isa.GEMV_OUT_F32)
        p_f32 = b.setp("ne.u32", f32o, 0)
        fa = b.i("mad.lo.u32", "u32", r, 4, cc.out)
        b.st("st.shared.f32", fa, 0, y, guard=p_f32)
        ha = b.i("mad.lo.u32", "u32", r, 2, cc.out)
        b.st("st.shared.b16", ha, 0, F.to_bf16(b, y), guard=p_f32, neg=True)

    _gemv_core(cc, epi)


def rmsnorm_gemv(cc: "F.ComputeCtx") -> None:
    """y = w . bf16(rmsnorm(x, g)); x is normalised on the fly per chunk."""
    inv = F.rms_inv(cc, cc.ins[1], cc.p1)
    _gemv_core(cc, _store_bf16, inv=inv)


def gemv_silu_mul(cc: "F.ComputeCtx") -> None:
    """y = bf16(w . x); silu(y) * other (p2 == 0) or silu(other) * y (p2 == 1)."""
    b = cc.b

    def epi(cc: "F.ComputeCtx", r: SSAValue, s: SSAValue) -> None:
        y = F.round_bf16(b, s)
        o = _other(cc, r)
        first = b.setp("eq.u32", cc.p2, 0)
        sv = b.i("selp.f32", "f32", y, o, first)  # silu's argument
        mv = b.i("selp.f32", "f32", o, y, first)
        res = b.i("mul.rn.f32", "f32", F.silu(b, sv), mv)
        _store_bf16(cc, r, res)

    _gemv_core(cc, epi)


def gemv_add(cc: "F.ComputeCtx") -> None:
    """y = bf16(w . x) + residual."""
    b = cc.b

    def epi(cc: "F.ComputeCtx", r: SSAValue, s: SSAValue) -> None:
        y = F.round_bf16(b, s)
        res = b.i("add.rn.f32", "f32", y, _other(cc, r))
        _store_bf16(cc, r, res)

    _gemv_core(cc, epi)
