"""The programs of ``examples/``, built with :class:`ProgramBuilder`.

Each function's defaults give exactly the program in the example file of the
same name (the printed modules are identical); smaller sizes give the same
program structure at a size that tests and the simulator handle quickly.

* :func:`build_gemv` — ``examples/gemv.mlir``
* :func:`build_rmsnorm_gemv` — ``examples/rmsnorm_gemv.mlir``
* :func:`build_mlp_block` — ``examples/mlp.mlir``
* :func:`build_mlp_stack` — ``examples/mlp_stack.mlir``; :func:`build_split_k_mlp_stack`, its split-K form
* :func:`build_split_k_gemv` — ``examples/split_k_gemv.mlir``
* :func:`build_argmax` — ``examples/argmax.mlir``
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from vdir.diagnostics import BuildError
from vdir.frontend.builder import ProgramBuilder
from vdir.frontend.layers import (
    chunked_gemv,
    clear_rows,
    fixed_point_residual,
    gemv_tiling,
    load_chunks,
    mlp_layer,
    mlp_tiling,
    split_evenly,
    split_k_groups,
    split_k_mlp_layer,
    split_k_rows,
    tile_count,
)
from vdir.target import get_target


def build_gemv(
    M: int = 8192,
    K: int = 8192,
    *,
    rows_per_tile: int | None = None,
    k_chunks: int | None = None,
    target: str = "h200",
) -> ModuleOp:
    """y[1, M] = W[M, K] . x[1, K] in bf16 (``examples/gemv.mlir``).

    Row blocks of ``rows_per_tile`` rows, K in ``k_chunks`` chunks with f32
    partial sums; x is loaded once, before the repeat over row blocks. Left
    out, the tiling is :func:`~vdir.frontend.layers.gemv_tiling`'s for all
    of the target's SMs.
    """
    rows_per_tile, k_chunks = gemv_tiling(M, K, rows_per_tile, k_chunks, sms=get_target(target).num_sms)
    b = ProgramBuilder("gemv", target=target)
    w = b.buffer("w", (M, K), "bf16")
    x = b.buffer("x", (1, K), "bf16")
    y = b.buffer("y", (1, M), "bf16")
    xs = load_chunks(b, x, 0, K, k_chunks, "x")
    with b.repeat(0, tile_count(M, rows_per_tile, "M"), name="i") as i:
        r = b.affine(i, scale=rows_per_tile, name="r")
        yt = chunked_gemv(b, w, r, rows_per_tile, xs, "w", "p", "yt")
        b.store(yt, y, (0, r), name="done")
    return b.finish()


def build_rmsnorm_gemv(
    M: int = 8192,
    K: int = 2048,
    *,
    rows_per_tile: int = 16,
    eps: float = 1e-5,
    target: str = "h200",
) -> ModuleOp:
    """y = W . rmsnorm(x, g) (``examples/rmsnorm_gemv.mlir``).

    The normalised vector stays on chip and feeds every row block's gemv.
    """
    b = ProgramBuilder("rmsnorm_gemv", target=target)
    x = b.buffer("x", (1, K), "bf16")
    g = b.buffer("g", (1, K), "bf16")
    w = b.buffer("w", (M, K), "bf16")
    y = b.buffer("y", (1, M), "bf16")
    xt = b.load(x, (0, 0), (1, K), name="xt")
    gt = b.load(g, (0, 0), (1, K), name="gt")
    xn = b.compute("rmsnorm", [xt, gt], params={"eps": eps}, name="xn")
    with b.repeat(0, tile_count(M, rows_per_tile, "M"), name="i") as i:
        r = b.affine(i, scale=rows_per_tile, name="r")
        wt = b.load(w, (r, 0), (rows_per_tile, K), name="wt")
        yt = b.compute("gemv", [wt, xn], name="yt")
        b.store(yt, y, (0, r), name="done")
    return b.finish()


def build_mlp_block(
    hidden: int = 2048,
    intermediate: int = 8192,
    *,
    up_rows: int | None = None,
    down_rows: int | None = None,
    down_chunks: int | None = None,
    eps: float = 1e-5,
    target: str = "h200",
    scratch_act: bool = False,
) -> ModuleOp:
    """A Llama-style MLP block with residual (``examples/mlp.mlir``).

    ``out = h + Wd . (silu(Wg . xn) * (Wu . xn))`` with ``xn = rmsnorm(h, g)``;
    ``act`` is a 1 x intermediate buffer between the two halves, an output
    unless ``scratch_act`` declares it ``scratch`` (the caller never gets it;
    flag-word hand-offs may then carry it in their words alone). A
    tiling argument left out is :func:`~vdir.frontend.layers.mlp_tiling`'s.
    """
    up_rows, down_rows, down_chunks = mlp_tiling(hidden, intermediate, up_rows, down_rows, down_chunks)
    b = ProgramBuilder("mlp", target=target)
    bufs = {
        "h": b.buffer("h", (1, hidden), "bf16"),
        "g": b.buffer("g", (1, hidden), "bf16"),
        "wg": b.buffer("wg", (intermediate, hidden), "bf16"),
        "wu": b.buffer("wu", (intermediate, hidden), "bf16"),
        "wd": b.buffer("wd", (hidden, intermediate), "bf16"),
        "act": b.buffer("act", (1, intermediate), "bf16", scratch=scratch_act),
        "out": b.buffer("out", (1, hidden), "bf16"),
    }
    mlp_layer(b, bufs, None, hidden, intermediate, up_rows, down_rows, down_chunks, eps)
    return b.finish()


def build_mlp_stack(
    layers: int = 16,
    hidden: int = 2048,
    intermediate: int = 8192,
    *,
    up_rows: int | None = None,
    down_rows: int | None = None,
    down_chunks: int | None = None,
    eps: float = 1e-5,
    target: str = "h200",
    scratch_act: bool = False,
) -> ModuleOp:
    """``layers`` MLP blocks in sequence (``examples/mlp_stack.mlir``).

    Weights are stacked by layer (``wg``: layers*intermediate x hidden, ...);
    the residual stream ``hs`` has ``layers + 1`` rows, row 0 the input and
    row ``layers`` the output; ``act`` has one row per layer (``scratch``
    with ``scratch_act``, as :func:`build_mlp_block`'s). A
    tiling argument left out is :func:`~vdir.frontend.layers.mlp_tiling`'s.
    :func:`build_split_k_mlp_stack` is the same layers with their down
    projections split along K.
    """
    if layers <= 0:
        raise BuildError(f"layers must be positive, got {layers}")
    up_rows, down_rows, down_chunks = mlp_tiling(hidden, intermediate, up_rows, down_rows, down_chunks)
    b = ProgramBuilder("mlp_stack", target=target)
    hs = b.buffer("hs", (layers + 1, hidden), "bf16")
    bufs = {
        "h": hs,
        "g": b.buffer("g", (layers, hidden), "bf16"),
        "wg": b.buffer("wg", (layers * intermediate, hidden), "bf16"),
        "wu": b.buffer("wu", (layers * intermediate, hidden), "bf16"),
        "wd": b.buffer("wd", (layers * hidden, intermediate), "bf16"),
        "act": b.buffer("act", (layers, intermediate), "bf16", scratch=scratch_act),
        "out": hs,
    }
    with b.repeat(0, layers, name="l") as layer:
        mlp_layer(b, bufs, layer, hidden, intermediate, up_rows, down_rows, down_chunks, eps)
    return b.finish()


def build_split_k_mlp_stack(
    layers: int = 16,
    hidden: int = 2048,
    intermediate: int = 8192,
    *,
    up_rows: int | None = None,
    group: int | None = None,
    eps: float = 1e-5,
    target: str = "h200",
) -> ModuleOp:
    """:func:`build_mlp_stack`'s layers with each down projection split along K across the SMs.

    Each SM multiplies the activation tiles it made by the matching rows of
    the transposed down weights ``wdt`` (``layers * intermediate x hidden``:
    row ``l * intermediate + i`` is column ``i`` of layer l's ``Wd``) and adds
    its partial row, in fixed point, into row l of the i64 scratch
    accumulator ``acc`` (:func:`~vdir.frontend.layers.split_k_mlp_layer`;
    ``group`` activation tiles an SM, by default
    :func:`~vdir.frontend.layers.split_k_groups` for the target's SMs; tiles
    of ``up_rows`` rows, by default :func:`~vdir.frontend.layers.split_k_rows`:
    the plain layer's, halved where two of them would not fit beside the
    layer's own rows). The
    next layer's residual row is ``fixed_add(acc[l], hs[l])``, made by every
    SM that needs it; one of them also stores it to ``hs[l + 1]``. A layer
    thus hands over one row among the SMs, not two. The program first
    clears ``acc`` (a ``zeros`` tile stored to each row), so each launch
    starts from zero.

    The result differs from :func:`build_mlp_stack`'s in its roundings: the
    down projection is summed exactly (to 2^-32) and rounded once, with the
    residual, to bf16, where the plain stack rounds it to bf16 before adding.
    """
    if layers <= 0:
        raise BuildError(f"layers must be positive, got {layers}")
    chip = get_target(target)
    if up_rows is None:
        up_rows = split_k_rows(hidden, intermediate, mlp_tiling(hidden, intermediate)[0], chip.smem_per_block)
    if group is None:
        group = split_k_groups(tile_count(intermediate, up_rows, "intermediate"), chip.num_sms)
    elif group <= 0:
        raise BuildError(f"group must be positive, got {group}")
    b = ProgramBuilder("mlp_stack_split_k", target=target)
    hs = b.buffer("hs", (layers + 1, hidden), "bf16")
    bufs = {
        "g": b.buffer("g", (layers, hidden), "bf16"),
        "wg": b.buffer("wg", (layers * intermediate, hidden), "bf16"),
        "wu": b.buffer("wu", (layers * intermediate, hidden), "bf16"),
        "wdt": b.buffer("wdt", (layers * intermediate, hidden), "bf16"),
        "acc": b.buffer("acc", (layers, hidden), "i64", scratch=True),
    }
    acc = bufs["acc"]
    clear_rows(b, acc, layers, hidden)
    split_k_mlp_layer(b, bufs, 0, b.load(hs, (0, 0), (1, hidden), name="h0"), hidden, intermediate, up_rows,
                      group, eps)
    if layers > 1:
        with b.repeat(1, layers, name="l") as layer:
            prev = b.affine(layer, offset=-1, name="prev")
            ht = fixed_point_residual(b, acc, prev, hs, prev, layer, hidden)
            split_k_mlp_layer(b, bufs, layer, ht, hidden, intermediate, up_rows, group, eps)
    fixed_point_residual(b, acc, layers - 1, hs, layers - 1, layers, hidden)
    return b.finish()


def build_split_k_gemv(
    M: int = 1024,
    K: int = 8192,
    *,
    splits: int = 8,
    rows_per_tile: int = 32,
    combine_cols: int = 256,
    target: str = "h200",
    reduce: bool = False,
) -> ModuleOp:
    """y[1, M] = W[M, K] . x[1, K] with K split across SMs (``examples/split_k_gemv.mlir``).

    A deterministic two-phase reduction. Phase 1: for each of the ``splits``
    K chunks and each block of ``rows_per_tile`` rows, a gemv over the chunk
    stores its f32 partial sum to row ``s`` of the f32 buffer ``partials``
    (``splits x M``); placement spreads these gemvs over the SMs. Phase 2:
    each block of ``combine_cols`` columns loads ``partials[0:splits, c:c+C]``
    (the dependency analysis makes it wait for every store to that region,
    through a cross-SM counter) and ``sum_rows`` adds the rows in order
    0, 1, ..., splits-1 in f32, rounding once to bf16. ``partials`` is an
    output too: the per-chunk sums can be inspected.

    With ``reduce`` (``examples/split_k_gemv_reduce.mlir``) there is no
    second phase: each f32 partial is added straight into the f32 output
    ``y`` (``1 x M``) by a reducing store (``reduce add``), so the caller
    passes ``y`` zeroed (it is an ``inout`` buffer). The result is the f32
    sum of the partials in the order the stores run; this program orders
    them in program order (the dependency analysis treats two reducing
    stores to one region like any two writes), but in general the order of
    reducing stores is not fixed, which is why this form is an option and
    not the default.
    """
    if reduce:
        b = ProgramBuilder("split_k_gemv_reduce", target=target)
        w, x = b.buffer("w", (M, K), "bf16"), b.buffer("x", (1, K), "bf16")
        y = b.buffer("y", (1, M), "f32")
        _split_k_partials(b, w, x, M, K, splits, rows_per_tile,
                          lambda pt, s, r: b.store(pt, y, (0, r), name="added", reduce="add"))
        return b.finish()
    b = ProgramBuilder("split_k_gemv", target=target)
    w, x = b.buffer("w", (M, K), "bf16"), b.buffer("x", (1, K), "bf16")
    partials = b.buffer("partials", (splits, M), "f32")
    y = b.buffer("y", (1, M), "bf16")
    _split_k_partials(b, w, x, M, K, splits, rows_per_tile, lambda pt, s, r: b.store(pt, partials, (s, r), name="stored"))
    with b.repeat(0, tile_count(M, combine_cols, "M"), name="j") as j:
        c = b.affine(j, scale=combine_cols, name="c")
        parts = b.load(partials, (0, c), (splits, combine_cols), name="parts")
        yt = b.compute("sum_rows", [parts], out_dtype="bf16", name="yt")
        b.store(yt, y, (0, c), name="done")
    return b.finish()


def _split_k_partials(b: ProgramBuilder, w: SSAValue, x: SSAValue, M: int, K: int, splits: int,
                      rows_per_tile: int, store: Callable[[SSAValue, SSAValue, SSAValue], object]) -> None:
    """Phase 1 of :func:`build_split_k_gemv`: for each K chunk ``s`` and row block at ``r`` of
    ``W[M, K] . x[1, K]``, the chunk's f32 gemv ``pt``, handed to ``store(pt, s, r)``."""
    kc = split_evenly(K, splits, "K")
    with b.repeat(0, splits, name="s") as s:
        k = b.affine(s, scale=kc, name="k")
        xs = b.load(x, (0, k), (1, kc), name="xs")
        with b.repeat(0, tile_count(M, rows_per_tile, "M"), name="i") as i:
            r = b.affine(i, scale=rows_per_tile, name="r")
            wt = b.load(w, (r, k), (rows_per_tile, kc), name="wt")
            pt = b.compute("gemv", [wt, xs], out_dtype="f32", name="pt")
            store(pt, s, r)


def build_argmax(vocab: int = 1000, hidden: int = 256, *, slice_rows: int = 128, target: str = "h200") -> ModuleOp:
    """Greedy decoding's token id: a deterministic two-phase argmax of the logits ``W h`` (``examples/argmax.mlir``).

    Phase 1: each slice of ``slice_rows`` logits (the last one shorter when
    ``vocab`` is not a multiple) is a gemv of its weight rows (f32 logits)
    and ``argmax_partial`` with ``base`` = the slice's first row, stored to
    row ``s`` of the f32 buffer ``partials``; placement spreads the slices
    over the SMs. ``base`` is a parameter, so the slices are unrolled here.
    Phase 2: ``partials`` is loaded after every store (a cross-SM counter)
    and ``argmax_final`` stores the token id to the i32 buffer ``token``.
    The id is then read on the device and gathers its row of ``emb`` into
    ``next``, as the next decode step would.
    """
    if slice_rows <= 0 or slice_rows % 4:
        raise BuildError(f"slice_rows = {slice_rows} must be a positive multiple of 4 (16-byte f32 rows)")
    if vocab % 4:
        raise BuildError(f"vocab = {vocab} must be a multiple of 4 (16-byte f32 rows)")
    starts = list(range(0, vocab, slice_rows))
    b = ProgramBuilder("argmax", target=target)
    w = b.buffer("w", (vocab, hidden), "bf16")
    h = b.buffer("h", (1, hidden), "bf16")
    emb = b.buffer("emb", (vocab, hidden), "bf16")
    partials = b.buffer("partials", (len(starts), 4), "f32")
    token = b.buffer("token", (1, 4), "i32")
    nxt = b.buffer("next", (1, hidden), "bf16")
    ht = b.load(h, (0, 0), (1, hidden), name="ht")
    for s, base in enumerate(starts):
        rows = min(slice_rows, vocab - base)
        wt = b.load(w, (base, 0), (rows, hidden), name=f"w{s}")
        logits = b.compute("gemv", [wt, ht], out_dtype="f32", name=f"l{s}")
        best = b.compute("argmax_partial", [logits], params={"base": base}, name=f"b{s}")
        b.store(best, partials, (s, 0), name=f"p{s}")
    every = b.load(partials, (0, 0), (len(starts), 4), name="all")
    best = b.compute("argmax_final", [every], params={"stride": 0}, name="best")
    b.store(best, token, (0, 0), name="stored")
    token_id = b.read(token, 0, 0, name="id")
    row = b.load(emb, (token_id, 0), (1, hidden), name="e")
    b.store(row, nxt, (0, 0), name="gathered")
    return b.finish()
