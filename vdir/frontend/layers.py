"""Pieces of programs that several builders share: tile counts, chunked gemvs, a Llama MLP layer.

:mod:`vdir.frontend.examples` and :mod:`vdir.frontend.llama` build their
programs from these, so that a change to how a gemv is chunked or an MLP is
tiled is made once.
"""

from __future__ import annotations

import math

from xdsl.ir import SSAValue

from vdir.diagnostics import BuildError
from vdir.dialects.vdir import BULK_COPY_ALIGN
from vdir.families import DTYPE_BYTES
from vdir.frontend.builder import Offset, ProgramBuilder


def split_evenly(total: int, parts: int, what: str) -> int:
    """``total / parts``; a :class:`ValueError` naming ``what`` unless it divides evenly."""
    if parts <= 0 or total % parts:
        raise BuildError(f"{what} = {total} does not split into {parts} equal chunks")
    return total // parts


def tile_count(total: int, rows: int, what: str) -> int:
    """How many ``rows``-row tiles cover ``total`` rows; a :class:`ValueError` naming ``what`` unless exactly."""
    if rows <= 0 or total % rows:
        raise BuildError(f"{what} = {total} is not a multiple of the {rows}-row tile")
    return total // rows


#: the largest weight tile :func:`chunks_for` picks: two in flight (the load
#: engine ahead of the gemv) and the activations fit the 227 KB of shared
#: memory an H200 SM gives one block
WEIGHT_TILE_BYTES = 64 * 1024
#: bytes of a bf16 element
_BF16 = DTYPE_BYTES["bf16"]


def chunks_for(rows: int, k: int, what: str, tile_bytes: int = WEIGHT_TILE_BYTES) -> int:
    """The fewest equal K chunks that keep a ``rows x K/chunks`` bf16 tile within ``tile_bytes``.

    A chunk's row must be whole bulk-copy units (``BULK_COPY_ALIGN``
    bytes); a :class:`ValueError` naming ``what`` where no split of ``k``
    gives one. The search runs over the chunk widths that fit the tile,
    widest (the fewest chunks) first: at most ``tile_bytes / BULK_COPY_ALIGN``
    steps for a positive ``rows``, however large ``k``.
    """
    unit = BULK_COPY_ALIGN // math.gcd(BULK_COPY_ALIGN, _BF16)  # the elements of a row's whole units
    widest = k if rows <= 0 else min(k, tile_bytes // (rows * _BF16))  # the widest chunk within the tile
    for width in range(widest - widest % unit, 0, -unit):
        if k % width == 0:
            return k // width
    raise BuildError(f"{what}: no equal split of K = {k} gives a {rows}-row bf16 tile of at most "
                     f"{tile_bytes} bytes in whole {BULK_COPY_ALIGN}-byte rows")


#: rows of a gemv weight tile where one of the whole K fits the tile limit
WIDE_TILE_ROWS = 16
#: rows otherwise: the fewest whose ``1 x rows`` bf16 result is a whole bulk-copy unit when stored
NARROW_TILE_ROWS = BULK_COPY_ALIGN // _BF16


def tile_rows_for(M: int, K: int, tile_bytes: int = WEIGHT_TILE_BYTES) -> int:
    """Weight-tile rows of a gemv over ``M x K``: :data:`WIDE_TILE_ROWS` where such a tile of the
    whole K fits ``tile_bytes`` and divides M, else :data:`NARROW_TILE_ROWS`."""
    if WIDE_TILE_ROWS * K * _BF16 <= tile_bytes and M % WIDE_TILE_ROWS == 0:
        return WIDE_TILE_ROWS
    return NARROW_TILE_ROWS


def balanced_rows(total: int, rows: int, sms: int) -> int:
    """Rows of the tiles of a ``total``-row projection on ``sms`` SMs: ``rows``, or half as many where
    that leaves the busiest SM fewer weight rows.

    The tiles of one projection are a phase that ends with its busiest SM,
    and placement gives each SM whole tiles: 3072 rows in 16-row tiles put
    two tiles (32 rows) on 60 of 132 SMs, in 8-row tiles at most three (24
    rows). Half is taken only where it divides ``total`` and keeps
    :data:`NARROW_TILE_ROWS` rows (a whole bulk-copy unit of bf16 results),
    and only where the tiles outnumber the SMs: where they fit one per SM,
    more tiles add only their per-tile work (a store, a release to wait for).
    """
    half = rows // 2
    if rows % 2 or half < NARROW_TILE_ROWS or total % rows or total % half or total // rows <= sms:
        return rows

    def busiest(r: int) -> int:
        return -(-(total // r) // sms) * r

    return half if busiest(half) < busiest(rows) else rows


#: where a gemv's tiles number at most one per SM, its K chunks are merged into one tile of up to this many
#: times ``tile_bytes`` (:func:`gemv_tiling`): with nothing to overlap on an SM, one micro-op per tile
#: beats chained K chunks (1024 x 8192, 8 x 8192 tiles of 128 KiB: 12.4 against 13.2-13.3 us on the
#: H200, docs/performance.md round 23)
LONE_TILE_FACTOR = 2


def gemv_tiling(M: int, K: int, rows: int | None = None, k_chunks: int | None = None,
                tile_bytes: int = WEIGHT_TILE_BYTES, sms: int | None = None) -> tuple[int, int]:
    """(tile rows, K chunks) of a gemv ``y = W x`` with ``W`` of ``M x K``, each chosen unless given.

    Rows: :func:`tile_rows_for`; K: the fewest chunks that keep a tile
    within ``tile_bytes`` (:func:`chunks_for`), or the whole K where the
    gemv spreads over ``sms`` SMs at most one tile each and such a tile is
    within :data:`LONE_TILE_FACTOR` times ``tile_bytes``. Measured on the
    H200 at 13 shapes (docs/performance.md, shape sweep and round 23).
    """
    rows = tile_rows_for(M, K, tile_bytes) if rows is None else rows
    if k_chunks is not None:
        return rows, k_chunks
    if sms is not None and M <= rows * sms and rows * K * _BF16 <= LONE_TILE_FACTOR * tile_bytes:
        return rows, chunks_for(rows, K, f"gemv {M}x{K}", LONE_TILE_FACTOR * tile_bytes)
    return rows, chunks_for(rows, K, f"gemv {M}x{K}", tile_bytes)


#: a gate or up tile of the whole hidden size at least this many times ``tile_bytes`` is split along K
#: (:func:`up_chunks_for`): a gate and an up tile of that size would fill an SM's shared memory
SPLIT_K_FACTOR = 2


def up_chunks_for(up_rows: int, hidden: int, tile_bytes: int = WEIGHT_TILE_BYTES) -> int:
    """K chunks of an MLP's gate and up tiles: 1 (the whole hidden size, the fast case) unless such a
    tile is at least :data:`SPLIT_K_FACTOR` times ``tile_bytes``; then the fewest that fit ``tile_bytes``.

    A tile only somewhat over the limit stays whole (hidden 5120: 80 KB tiles, measured at 91% of the
    copy bandwidth in the 16-layer stack); hidden 8192 needs the split (a 128 KB gate tile and a 128 KB
    up tile do not fit 227 KB).
    """
    if up_rows * hidden * _BF16 < SPLIT_K_FACTOR * tile_bytes:
        return 1
    return chunks_for(up_rows, hidden, "MLP gate/up projection", tile_bytes)


def mlp_tiling(hidden: int, intermediate: int, up_rows: int | None = None, down_rows: int | None = None,
               down_chunks: int | None = None, tile_bytes: int = WEIGHT_TILE_BYTES) -> tuple[int, int, int]:
    """(gate/up tile rows, down tile rows, down K chunks) of an MLP block, each chosen unless given.

    The gate and up tiles span the whole hidden size (:func:`tile_rows_for`
    of the intermediate x hidden weights); the down projection takes
    :data:`NARROW_TILE_ROWS`-row tiles, its K in the fewest chunks that fit.
    Where a gate/up tile of the whole hidden size exceeds ``tile_bytes`` even
    at the narrow rows, the tiles are larger than the limit, up to
    :data:`SPLIT_K_FACTOR` times it; beyond, :func:`mlp_layer` splits them
    along K (:func:`up_chunks_for`).
    """
    up = tile_rows_for(intermediate, hidden, tile_bytes) if up_rows is None else up_rows
    down = NARROW_TILE_ROWS if down_rows is None else down_rows
    if down_chunks is None:
        down_chunks = chunks_for(down, intermediate, "MLP down projection", tile_bytes)
    return up, down, down_chunks


def chunked_gemv(
    b: ProgramBuilder,
    w: SSAValue,
    row: Offset,
    rows: int,
    xs: list[SSAValue],
    prefix: str,
    partial: str,
    result: str,
) -> SSAValue:
    """A gemv over K chunks: f32 partial sums, the last chunk rounds to bf16.

    ``xs`` are the K chunks of the vector; weight chunk ``c`` is loaded as
    ``%{prefix}{c}`` right before its gemv (so only the chunk in use must be
    live) and the partial sums are ``%{partial}{c}``.
    """
    kc = xs[0].type.dims[1]  # type: ignore[attr-defined]
    acc = None
    n = len(xs)
    for c, x in enumerate(xs):
        wt = b.load(w, (row, c * kc), (rows, kc), name=f"{prefix}{c}")
        last = c == n - 1
        ins = [wt, x] if acc is None else [wt, x, acc]
        acc = b.compute(
            "gemv",
            ins,
            out_dtype=None if last else "f32",
            name=result if last else f"{partial}{c}",
        )
    assert acc is not None
    return acc


def load_chunks(
    b: ProgramBuilder, buf: SSAValue, row: int | SSAValue, n: int, chunks: int, prefix: str
) -> list[SSAValue]:
    """``chunks`` equal 1-row tiles of ``buf``'s row ``row`` (``n`` columns), named ``%{prefix}{c}``."""
    kc = split_evenly(n, chunks, "K")
    return [b.load(buf, (row, c * kc), (1, kc), name=f"{prefix}{c}") for c in range(chunks)]


def gate_up_inputs(b: ProgramBuilder, xn: SSAValue, up_rows: int, hidden: int) -> list[SSAValue]:
    """What an MLP's gate and up tiles multiply: ``[xn]`` where they span the whole hidden size, else its
    K chunks (:func:`up_chunks_for`), sliced once (``%xn0``, ``%xn1``, ..)."""
    up_chunks = up_chunks_for(up_rows, hidden)
    if up_chunks == 1:
        return [xn]
    kc = split_evenly(hidden, up_chunks, "hidden")
    return [b.compute("slice", [xn], params={"start": c * kc, "width": kc}, name=f"xn{c}") for c in range(up_chunks)]


def activation_tile(b: ProgramBuilder, wg: SSAValue, wu: SSAValue, row: Offset, up_rows: int, hidden: int,
                    xs: list[SSAValue], suffix: str) -> SSAValue:
    """``silu(Wg . xn) * (Wu . xn)`` for the ``up_rows`` gate and up weight rows at ``row``: an MLP's
    activation tile ``%a{suffix}``; ``xs`` is :func:`gate_up_inputs`' (the tiles span the whole hidden
    size, or K chunks of it)."""
    if len(xs) == 1:
        wgt = b.load(wg, (row, 0), (up_rows, hidden), name=f"wgt{suffix}")
        wut = b.load(wu, (row, 0), (up_rows, hidden), name=f"wut{suffix}")
        gate = b.compute("gemv", [wgt, xs[0]], name=f"gate{suffix}")
        up = b.compute("gemv", [wut, xs[0]], name=f"up{suffix}")
    else:
        sep = "_" if suffix else ""  # chunk c of tile "_t1": "wgt_t1_0"; of the one tile: "wgt0"
        gate = chunked_gemv(b, wg, row, up_rows, xs, f"wgt{suffix}{sep}", f"gp{suffix}{sep}", f"gate{suffix}")
        up = chunked_gemv(b, wu, row, up_rows, xs, f"wut{suffix}{sep}", f"upp{suffix}{sep}", f"up{suffix}")
    return b.compute("silu_mul", [gate, up], name=f"a{suffix}")


def mlp_layer(
    b: ProgramBuilder,
    bufs: dict[str, SSAValue],
    layer: SSAValue | None,
    hidden: int,
    inter: int,
    up_rows: int,
    down_rows: int,
    down_chunks: int,
    eps: float,
    *,
    in_row: Offset | None = None,
    out_row: Offset | None = None,
) -> None:
    """One MLP block; ``layer`` is the layer index of a stack (None: one block).

    In a stack the residual stream ``hs`` holds one row per layer boundary
    (layer l reads row l and writes row l + 1, unless ``in_row`` /
    ``out_row`` say otherwise) and the stacked weights hold the layer's rows
    at ``l * rows``; the layer's norm weight and ``act`` row are row l.
    """
    stacked = layer is not None
    h, g, wg, wu, wd, act = (bufs[k] for k in ("h", "g", "wg", "wu", "wd", "act"))
    out = bufs["out"]
    row = layer if stacked else 0
    h_row = row if in_row is None else in_row
    ht = b.load(h, (h_row, 0), (1, hidden), name="ht")
    gt = b.load(g, (row, 0), (1, hidden), name="gt")
    xn = b.compute("rmsnorm", [ht, gt], params={"eps": eps}, name="xn")
    xs = gate_up_inputs(b, xn, up_rows, hidden)

    # gate and up projections, silu_mul, into the act scratch row
    with b.repeat(0, tile_count(inter, up_rows, "intermediate"), name="j") as j:
        if stacked:
            wrow = b.linear([(layer, inter), (j, up_rows)], name="wrow")
        rj = b.affine(j, scale=up_rows, name="rj")
        a = activation_tile(b, wg, wu, wrow if stacked else rj, up_rows, hidden, xs, "")
        b.store(a, act, (row, rj), name="a_saved")

    # down projection over the act row (read after the writes above: the
    # dependency analysis orders it through the act buffer), plus residual
    avec = load_chunks(b, act, row, inter, down_chunks, "act")
    if out_row is None:
        out_row = b.affine(layer, offset=1, name="next") if layer is not None else 0
    with b.repeat(0, tile_count(hidden, down_rows, "hidden"), name="k") as k:
        if stacked:
            drow = b.linear([(layer, hidden), (k, down_rows)], name="drow")
        rk = b.affine(k, scale=down_rows, name="rk")
        d = chunked_gemv(b, wd, drow if stacked else rk, down_rows, avec, "wd", "dp", "d")
        res = b.load(h, (h_row, rk), (1, down_rows), name="res")
        o = b.compute("add", [d, res], name="o")
        b.store(o, out, (out_row, rk), name="o_saved")


#: bytes per hidden column that a split-K layer keeps in an SM's shared memory beside its weight tiles: the
#: accumulator row it loads and the fixed-point row it adds (8 bytes an element each), and two chained f32
#: partials (4 each)
SPLIT_K_ROW_BYTES = 8 + 8 + 4 + 4


def split_k_rows(hidden: int, inter: int, rows: int, smem_bytes: int) -> int:
    """Activation-tile rows of a split-K MLP layer: ``rows``, halved while two weight tiles of
    ``rows x hidden`` bf16 beside the layer's rows (:data:`SPLIT_K_ROW_BYTES` a column) would not fit
    ``smem_bytes``, and while the halves still divide ``inter``; at 5120/13824, 4 rows (40 KiB tiles)
    where the plain layer takes 8."""
    while rows % 2 == 0 and inter % (rows // 2) == 0 and \
            2 * rows * hidden * _BF16 + SPLIT_K_ROW_BYTES * hidden > smem_bytes:
        rows //= 2
    return rows


def split_k_groups(tiles: int, sms: int) -> int:
    """Activation tiles per SM group of a split-K MLP layer: as many as the busiest SM would take
    anyway (``tiles`` over ``sms``, rounded up), so grouping costs no SM more tiles."""
    return max(1, -(-tiles // sms))


def split_k_mlp_layer(
    b: ProgramBuilder,
    bufs: dict[str, SSAValue],
    layer: Offset,
    h: SSAValue,
    hidden: int,
    inter: int,
    up_rows: int,
    group: int,
    eps: float,
    acc_row: Offset | None = None,
) -> None:
    """One MLP layer on the row ``h``, its down projection split along K: ``h`` normalised by row ``layer`` of
    ``g``, and ``Wd . act`` added into row ``acc_row`` (default ``layer``) of the i64 accumulator ``acc``
    (fixed point), which must hold zeros.

    The activation tiles (:func:`activation_tile`, ``up_rows`` each) go in
    groups of ``group``: a group's tiles chain their down partials through an
    f32 accumulator (``vecmat`` of the tile by the matching ``up_rows`` rows of
    the transposed down weights ``wdt``, ``layers * inter x hidden``), and the
    last one's partial, in fixed point, is added into ``acc`` by one reducing
    store. A group's micro-ops are joined by the tiles they pass, so placement
    keeps each group on one SM: the activations never leave it, and the layer
    hands over one row (the accumulator's) instead of two. The adds are
    exact, so the sum does not depend on the order the SMs' stores land in.
    """
    wg, wu, wdt, acc = (bufs[k] for k in ("wg", "wu", "wdt", "acc"))
    gt = b.load(bufs["g"], (layer, 0), (1, hidden), name="gt")
    xn = b.compute("rmsnorm", [h, gt], params={"eps": eps}, name="xn")
    xs = gate_up_inputs(b, xn, up_rows, hidden)
    tiles = tile_count(inter, up_rows, "intermediate")
    full, rest = divmod(tiles, group)
    base = layer * inter if isinstance(layer, int) else b.affine(layer, scale=inter, name="lrow")

    def one_group(first: Offset, size: int) -> None:
        partial = None
        for t in range(size):
            row = _row_plus(b, base, first, t * up_rows)
            a = activation_tile(b, wg, wu, row, up_rows, hidden, xs, f"_t{t}")
            wdt_t = b.load(wdt, (row, 0), (up_rows, hidden), name=f"wdt_t{t}")
            ins = [a, wdt_t] if partial is None else [a, wdt_t, partial]
            last = t == size - 1
            partial = b.compute("vecmat", ins, out_dtype="i64" if last else "f32",
                                name="dsum" if last else f"dp_t{t}")
        assert partial is not None
        b.store(partial, acc, (layer if acc_row is None else acc_row, 0), name="added", reduce="add")

    if full:
        with b.repeat(0, full, name="q") as q:
            one_group(b.affine(q, scale=group * up_rows, name="rq"), group)
    if rest:
        one_group(full * group * up_rows, rest)


def fixed_point_residual(b: ProgramBuilder, acc: SSAValue, acc_row: Offset, hs: SSAValue, before_row: Offset,
                         row: Offset, hidden: int) -> SSAValue:
    """The residual row after a split-K MLP: ``hs[before_row]`` (the row entering it) plus ``acc[acc_row]``
    (its down projection, fixed point), made by ``fixed_add`` on each SM that needs it, and stored to
    ``hs[row]`` once for the readers that want it from memory."""
    total = b.load(acc, (acc_row, 0), (1, hidden), name="total")
    before = b.load(hs, (before_row, 0), (1, hidden), name="before")
    ht = b.compute("fixed_add", [total, before], name="ht")
    b.store(ht, hs, (row, 0), name="h_saved")
    return ht


def clear_rows(b: ProgramBuilder, acc: SSAValue, rows: int, cols: int) -> None:
    """Store a ``1 x cols`` i64 ``zeros`` tile to each of rows ``0 .. rows - 1`` of ``acc``: the accumulator a
    split-K layer adds into starts every launch at zero (:func:`split_k_mlp_layer`)."""
    zero = b.compute("zeros", [], params={"rows": 1, "cols": cols}, out_dtype="i64", name="zero")
    with b.repeat(0, rows, name="c") as c:
        b.store(zero, acc, (c, 0), name="cleared")


def _row_plus(b: ProgramBuilder, base: Offset, first: Offset, extra: int) -> Offset:
    """``base + first + extra`` as an index value (or a plain int where all three are)."""
    terms = [(v, 1) for v in (base, first) if not isinstance(v, int)]
    const = sum(v for v in (base, first) if isinstance(v, int)) + extra
    if not terms:
        return const
    if len(terms) == 1 and const == 0:
        return terms[0][0]
    return b.linear(terms, const, name="wrow")
