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
from vdir.lowering.families.gemv import BLOCK_ROWS, DIV_EXACT_BELOW, blocked_rows_fit, div_magic, share_classes
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


def _gemvs(k: int):
    b = ProgramBuilder("gemv_rows")
    total = sum(ROW_COUNTS)
    w, x, y = b.buffer("w", (total, k)), b.buffer("x", (1, k)), b.buffer("y", (1, total), "f32")
    xt = b.load(x, (0, 0), (1, k), name="xt")
    row = 0
    for rows in ROW_COUNTS:
        wt = b.load(w, (row, 0), (rows, k), name=f"w{rows}")
        b.store(b.compute("gemv", [wt, xt], out_dtype="f32", name=f"y{rows}"), y, (0, row), name=f"s{rows}")
        row += rows
    return b.finish(), total


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
    b = ProgramBuilder("row_blocks")
    w, x, y = b.buffer("w", (rows, k)), b.buffer("x", (1, k)), b.buffer("y", (1, rows), "f32")
    xt = b.load(x, (0, 0), (1, k), name="xt")
    for t in range(2):
        wt = b.load(w, (t * BLOCK_ROWS, 0), (BLOCK_ROWS, k), name=f"w{t}")
        b.store(b.compute("gemv", [wt, xt], out_dtype="f32", name=f"y{t}"), y, (0, t * BLOCK_ROWS), name=f"s{t}")
    rng = np.random.default_rng(100 + warps)
    wv = (rng.standard_normal((rows, k)) / np.sqrt(k)).astype(bfloat16)
    xv = rng.standard_normal((1, k)).astype(bfloat16)
    with vdir.compile(b.finish(), backend="cuda", num_sms=2, options={"compute_warps": warps}) as exe:
        got = np.asarray(exe(w=wv, x=xv), np.float64).reshape(-1)
    want = wv.astype(np.float64) @ xv.astype(np.float64).reshape(-1)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
