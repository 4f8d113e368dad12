"""The gemv bodies' work split without division instructions (``vdir/lowering/families/gemv.py``).

With R rows and W compute warps, G = W // min(R, W) warps share a row. W is
fixed when the kernel is built, so the body picks G among the few values
``share_classes(W)`` lists, by comparing ``min(R, W)`` with each class's
bound, and divides by constants with shifts or one multiplication
(``div_magic``). These tests check the picking and the multiplication
against plain integer division, and run gemvs of awkward row counts on the
GPU with compute groups whose G is not a power of two.

A tile of exactly ``BLOCK_ROWS`` rows runs as one row block instead, on a
group whose partials fit their scratch (``blocked_rows_fit``): K split over
the warps, each warp's slice read for all the rows. The same GPU cases run
it with a group of 5 warps (two rounds of epilogues: rows ``cw`` and ``cw +
5``), of 8, and not at all with 12, at K whose slices leave remainders;
rows long enough for the block's unrolled loop run alone.

Where a warp has whole rows, it sums four or two passes' rows at once and
reduces them in one reduce-scatter (``families.scatter_sum``), which adds the same
pairs as a butterfly per row: a GPU case checks the bytes against tiles
whose rows run one per pass, and a CPU model of the shuffles checks the
scatter against the butterfly for every group size.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir.frontend import ProgramBuilder
from vdir.frontend.layers import NARROW_TILE_ROWS
from vdir.lowering import layout
from vdir.lowering.families.gemv import (
    BLOCK_ROWS,
    DIV_EXACT_BELOW,
    ROW_GROUPS,
    blocked_rows_fit,
    div_magic,
    share_classes,
)
from vdir.lowering.options import MAX_COMPUTE_WARPS
from vdir.testing.gpu import gpu

#: gemv tiles' row counts (f32 results: whole 16-byte rows): fewer rows than warps (G > 1, 3 on 12
#: warps), as many, more, and not multiples of them
ROW_COUNTS = (4, 8, 12, 20, 24)


def _picked(warps: int, rows: int) -> int:
    """G as the body picks it: the first class whose bound ``min(R, W)`` does not exceed."""
    rmin = max(min(rows, warps), 1)
    return next(g for g, most in share_classes(warps) if rmin <= most)


@pytest.mark.parametrize("warps", range(1, MAX_COMPUTE_WARPS + 1))
def test_the_picked_class_is_the_warps_per_row(warps):
    for rows in range(0, 3 * warps + 2):
        assert _picked(warps, rows) == warps // max(min(rows, warps), 1), rows


@pytest.mark.parametrize("divisor", [d for d in range(3, 33) if d & (d - 1)])
def test_division_by_a_constant_is_exact_below_the_bound(divisor):
    rng = np.random.default_rng(divisor)
    n = np.concatenate([np.arange(1 << 16, dtype=np.uint64), rng.integers(0, DIV_EXACT_BELOW, 1 << 18).astype(np.uint64),
                        np.array([DIV_EXACT_BELOW - 1], np.uint64)])
    high_word = (n * np.uint64(div_magic(divisor))) >> np.uint64(32)
    assert np.array_equal(high_word, n // np.uint64(divisor))


def test_a_row_block_runs_where_its_partials_fit_their_scratch():
    fits = [w for w in range(1, MAX_COMPUTE_WARPS + 1) if blocked_rows_fit(w)]
    assert fits == list(range(2, layout.GEMV_ROW_PARTIALS_BYTES // (4 * BLOCK_ROWS) + 1))
    assert 8 in fits and 12 not in fits  # the default group runs row blocks
    assert BLOCK_ROWS in ROW_COUNTS
    assert BLOCK_ROWS == NARROW_TILE_ROWS  # the row block serves the library's narrow tiles


@pytest.mark.parametrize("warps", [0, 2, 5])
def test_the_gemv_families_assemble_without_spills(warps):
    """Every gemv family (gemv; an MLP block has gemv_silu_mul and gemv_add; rmsnorm_gemv), the row loop
    and the row block in each, assembles for groups that run row blocks, with no spills: the block's eight
    rows of weight words in flight fit the registers (0: the default group)."""
    from test_ptx_lowering import assemble

    from vdir.frontend.examples import build_mlp_block
    from vdir.lowering.emit import lower_to_ptx
    from vdir.transforms.pipeline import compile_to_encoded

    # (module, its gemv families: each body has a row block)
    for module, families in ((_gemvs(512)[0], 1), (build_mlp_block(256, 1024, down_rows=BLOCK_ROWS), 3),
                             (_rmsnorm_gemvs(1024), 1)):
        ptx = lower_to_ptx(compile_to_encoded(module, num_sms=4), "h200", {"compute_warps": warps})
        assert len(re.findall(r"^\$L_gemv_block_\d+:", ptx, re.MULTILINE)) == families
        info = assemble(ptx)
        assert "spill" not in info or "0 bytes spill stores" in info


def _rmsnorm_gemvs(k: int):
    """Two 8-row ``rmsnorm_gemv`` tiles (the family itself: vdir-fuse merges an rmsnorm into a gemv only
    where its cost model says so)."""
    b = ProgramBuilder("rmsnorm_gemvs")
    w, x, g = b.buffer("w", (2 * BLOCK_ROWS, k)), b.buffer("x", (1, k)), b.buffer("g", (1, k))
    y = b.buffer("y", (1, 2 * BLOCK_ROWS))
    xt, gt = b.load(x, (0, 0), (1, k), name="xt"), b.load(g, (0, 0), (1, k), name="gt")
    for t in range(2):
        wt = b.load(w, (t * BLOCK_ROWS, 0), (BLOCK_ROWS, k), name=f"w{t}")
        yt = b.compute("rmsnorm_gemv", [wt, xt, gt], params={"eps": 1e-5}, name=f"y{t}")
        b.store(yt, y, (0, t * BLOCK_ROWS), name=f"s{t}")
    return b.finish()


def _tiled_gemv(k: int, tiles: list[int]):
    """One gemv over ``sum(tiles)`` rows in tiles of those row counts, f32 out."""
    b = ProgramBuilder("gemv_tiles")
    total = sum(tiles)
    w, x, y = b.buffer("w", (total, k)), b.buffer("x", (1, k)), b.buffer("y", (1, total), "f32")
    xt = b.load(x, (0, 0), (1, k), name="xt")
    row = 0
    for t, rows in enumerate(tiles):
        wt = b.load(w, (row, 0), (rows, k), name=f"w{t}")
        b.store(b.compute("gemv", [wt, xt], out_dtype="f32", name=f"y{t}"), y, (0, row), name=f"s{t}")
        row += rows
    return b.finish()


def _gemvs(k: int):
    """One gemv in tiles of each of :data:`ROW_COUNTS` rows, and its rows."""
    return _tiled_gemv(k, list(ROW_COUNTS)), sum(ROW_COUNTS)


@gpu
@pytest.mark.parametrize("k", [512, 2056])
@pytest.mark.parametrize("warps", [5, 8, 12])
def test_gemvs_of_any_row_count_on_any_compute_group(warps, k):
    module, total = _gemvs(k)
    rng = np.random.default_rng(warps)
    w = (rng.standard_normal((total, k)) / np.sqrt(k)).astype(bfloat16)
    x = rng.standard_normal((1, k)).astype(bfloat16)
    with vdir.compile(module, backend="cuda", num_sms=4, options={"compute_warps": warps}) as exe:
        got = np.asarray(exe(w=w, x=x), np.float64).reshape(-1)
    want = w.astype(np.float64) @ x.astype(np.float64).reshape(-1)
    # f32 sums of bf16 products in another order than float64's
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


@gpu
@pytest.mark.parametrize("warps", [5, 8])
def test_row_blocks_of_long_rows(warps):
    """Two 8-row tiles of K = 8200 (1025 chunks: the unrolled loop's trips, then a partial last group)."""
    k, rows = 8200, 2 * BLOCK_ROWS
    rng = np.random.default_rng(100 + warps)
    wv = (rng.standard_normal((rows, k)) / np.sqrt(k)).astype(bfloat16)
    xv = rng.standard_normal((1, k)).astype(bfloat16)
    with vdir.compile(_tiled_gemv(k, [BLOCK_ROWS] * 2), backend="cuda", num_sms=2,
                      options={"compute_warps": warps}) as exe:
        got = np.asarray(exe(w=wv, x=xv), np.float64).reshape(-1)
    want = wv.astype(np.float64) @ xv.astype(np.float64).reshape(-1)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def _butterfly(v: np.ndarray) -> np.ndarray:
    """``F.warp_sum`` on 32 lanes' f32 values: each lane adds its own value and its partner's."""
    for k in (16, 8, 4, 2, 1):
        v = (v + v[np.arange(32) ^ k]).astype(np.float32)
    return v


def _scatter(vals: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The shuffles of ``families.scatter_sum`` on 32 lanes, step for step as the body emits them: (slot,
    total) per lane."""
    lane = np.arange(32)
    m = len(vals).bit_length() - 1
    for step in range(m):
        mask = 16 >> step
        upper = (lane & mask) != 0
        half = len(vals) // 2
        vals = [(np.where(upper, hi, lo) + np.where(upper, lo, hi)[lane ^ mask]).astype(np.float32)
                for lo, hi in zip(vals[:half], vals[half:], strict=True)]
    v = vals[0]
    for k in (16 >> s for s in range(m, 5)):
        v = (v + v[lane ^ k]).astype(np.float32)
    return lane >> (5 - m), v


#: the reduce-scatter's group sizes checked: every power of two a warp's lanes allow
_SCATTER_SIZES = (1, 2, 4, 8, 16, 32)


@pytest.mark.parametrize("n", _SCATTER_SIZES)
def test_the_reduce_scatter_gives_each_lane_its_rows_butterfly_sum(n):
    """Every lane ends with the total the butterfly gives its slot's row, bit for bit, over values of mixed
    magnitudes and signs (where the order of the additions shows); the model itself is checked to see a
    reordering: summing the lanes in index order differs."""
    rng = np.random.default_rng(n)
    reordered = False
    for _ in range(50):
        vals = [(rng.standard_normal(32) * 10.0 ** rng.uniform(-4, 4, 32)).astype(np.float32) for _ in range(n)]
        slot, total = _scatter(vals)
        assert np.array_equal(slot, np.arange(32) // (32 // n))
        for lane in range(32):
            assert total[lane].tobytes() == _butterfly(vals[slot[lane]])[lane].tobytes(), (n, lane)
        serial = np.float32(0)
        for v in vals[0]:
            serial = np.float32(serial + v)
        reordered |= serial.tobytes() != _butterfly(vals[0])[0].tobytes()
    assert reordered


def test_the_bodies_scatter_only_checked_group_sizes():
    """The groups the gemv bodies reduce-scatter (their grouped passes, the row block's rows) are among
    the sizes the model above checks."""
    assert {*ROW_GROUPS, BLOCK_ROWS} <= set(_SCATTER_SIZES)


#: compute warps -> (tiles whose warps sum four rows at once, then two or one; tiles of one row per pass)
_GROUPED = {8: ([32, 48, 40], [12] * 10), 7: ([28, 32, 44, 40], [12] * 12)}


@gpu
@pytest.mark.parametrize("k", [520, 1032])
@pytest.mark.parametrize("warps", sorted(_GROUPED))
def test_grouped_rows_give_the_bytes_of_one_row_per_pass(warps, k):
    """Rows summed four or two at a time (28 to 48-row tiles: quads, then a pair or single rows) give the
    same bytes as the same rows in 12-row tiles, where each warp sums one row per pass with a butterfly;
    K = 520 runs the tail groups only, 1032 the unrolled loop and a partial tail."""
    grouped, single = _GROUPED[warps]
    assert sum(grouped) == sum(single) and all(r >= 4 * warps for r in grouped)
    assert all(warps <= r < 2 * warps and r != BLOCK_ROWS for r in single)
    rng = np.random.default_rng(7 * warps + k)
    w = (rng.standard_normal((sum(grouped), k)) / np.sqrt(k)).astype(bfloat16)
    x = rng.standard_normal((1, k)).astype(bfloat16)
    outs = []
    for tiles in (grouped, single):
        with vdir.compile(_tiled_gemv(k, tiles), backend="cuda", num_sms=4,
                          options={"compute_warps": warps}) as exe:
            outs.append(np.asarray(exe(w=w, x=x)).copy())
    assert np.array_equal(outs[0].view(np.uint32), outs[1].view(np.uint32))
    want = w.astype(np.float64) @ x.astype(np.float64).reshape(-1)
    assert np.abs(outs[0].astype(np.float64).reshape(-1) - want).max() <= 1e-4 * np.abs(want).max()


#: (family, rows, K) of the gemvs of :func:`_shape_run`, in program order on one SM: the same shape again
#: (the split kept), another K, other rows, fewer rows than warps (G > 1 on 8 warps), the first shape back
#: through another gemv family (the split is shared by the gemv families), and an odd K
_SHAPE_RUN = (("gemv", 16, 512), ("gemv", 16, 512), ("gemv", 16, 1024), ("gemv", 12, 1024), ("gemv", 4, 1024),
              ("gemv", 4, 1024), ("gemv", 16, 512), ("rmsnorm_gemv", 16, 512), ("gemv", 20, 520))


def _shape_run():
    """Each gemv of :data:`_SHAPE_RUN` on its own buffers (``w<t>``, ``x<t>``, for rmsnorm_gemv ``g<t>``;
    out ``y<t>``: f32 for gemv, bf16 for rmsnorm_gemv)."""
    b = ProgramBuilder("shape_run")
    for t, (family, rows, k) in enumerate(_SHAPE_RUN):
        w, x = b.buffer(f"w{t}", (rows, k)), b.buffer(f"x{t}", (1, k))
        wt, xt = b.load(w, (0, 0), (rows, k), name=f"wt{t}"), b.load(x, (0, 0), (1, k), name=f"xt{t}")
        if family == "gemv":
            y = b.buffer(f"y{t}", (1, rows), "f32")
            out = b.compute("gemv", [wt, xt], out_dtype="f32", name=f"out{t}")
        else:
            g, y = b.buffer(f"g{t}", (1, k)), b.buffer(f"y{t}", (1, rows))
            gt = b.load(g, (0, 0), (1, k), name=f"gt{t}")
            out = b.compute(family, [wt, xt, gt], params={"eps": 1e-5}, name=f"out{t}")
        b.store(out, y, (0, 0), name=f"s{t}")
    return b.finish()


@gpu
@pytest.mark.parametrize("warps", [5, 8])
def test_a_kept_split_serves_only_gemvs_of_its_shape(warps):
    """The compute group keeps the row split of the last gemv it ran (``gemv.SplitCache``) and takes it for
    a gemv of the same rows and K: on one SM, gemvs of the same shape, of another K, of other rows and of
    another gemv family in turn each give their own product (f32 results to 1e-4 of the largest, the
    rmsnorm_gemv's bf16 result to its rounding), against numpy."""
    from vdir.families import get_family

    rng = np.random.default_rng(warps)
    inputs = {}
    for t, (family, rows, k) in enumerate(_SHAPE_RUN):
        inputs[f"w{t}"] = (rng.standard_normal((rows, k)) / np.sqrt(k)).astype(bfloat16)
        inputs[f"x{t}"] = rng.standard_normal((1, k)).astype(bfloat16)
        if family != "gemv":
            inputs[f"g{t}"] = (1.0 + 0.1 * rng.standard_normal((1, k))).astype(bfloat16)
    with vdir.compile(_shape_run(), backend="cuda", num_sms=1, options={"compute_warps": warps}) as exe:
        got = {name: np.asarray(v, np.float64).reshape(-1) for name, v in exe(**inputs).items()}
    for t, (family, _rows, _k) in enumerate(_SHAPE_RUN):
        w, x = inputs[f"w{t}"], inputs[f"x{t}"]
        if family == "gemv":
            want = w.astype(np.float64) @ x.astype(np.float64).reshape(-1)
            tol = 1e-4
        else:
            want = get_family(family).run([w, x, inputs[f"g{t}"]], {"eps": 1e-5}, "bf16").astype(np.float64)
            want, tol = want.reshape(-1), 1e-2
        assert np.abs(got[f"y{t}"] - want).max() <= tol * np.abs(want).max(), (t, family)


@pytest.mark.parametrize("lowering", [{}, {"control_warp": True}, {"run_loops": True}])
def test_every_compute_group_keeps_the_split(lowering):
    """Each form of the compute group (the default; with the control warp; fed by the compute fetch warp
    in a kernel that runs loops) makes the gemv's kept split once, before its loop, and every gemv body
    of the stack (several gemv families, sharing it) tests it; the PTX assembles."""
    from test_ptx_lowering import assemble

    from vdir.families import family_by_opcode
    from vdir.frontend.examples import build_mlp_stack
    from vdir.lowering.emit import lower_to_ptx, used_families
    from vdir.lowering.families.gemv import split_cache
    from vdir.transforms.pipeline import compile_to_encoded

    program = compile_to_encoded(build_mlp_stack(2, 256, 1024), num_sms=4, keep_trips=True)
    assert program.has_loops
    ptx = lower_to_ptx(program, "h200", lowering)
    gemvs = [op for op in used_families(program) if family_by_opcode(op).state_emitter() is split_cache]
    assert len(gemvs) >= 2
    # each gemv body tests the kept rows and K, and takes the kept split where they match
    tests = re.findall(r"setp\.eq\.u32 %p\d+, %r\d+, (%r\d+);\n\tsetp\.eq\.u32 %p\d+, %r\d+, (%r\d+);\n"
                       r"\tand\.pred (%p\d+), %p\d+, %p\d+;\n\t@\3 bra\.uni \$L_gemv_split_kept_\d+;", ptx)
    assert len(tests) == len(gemvs)
    # against one state shared by all of them, made once, before the loop: no tile's rows at first
    assert len({(rows, k) for rows, k, _ in tests}) == 1
    rows = tests[0][0]
    made = [m.start() for m in re.finditer(rf"mov\.u32 {rows}, 4294967295;", ptx)]
    assert len(made) == 1 and made[0] < ptx.index("$L_cp_top_0:")
    assemble(ptx)
