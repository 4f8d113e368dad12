"""The tile choice of the frontend (``gemv_tiling``, ``mlp_tiling``) and the example builders that use it."""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir.frontend import examples
from vdir.frontend.layers import (
    LONE_TILE_FACTOR,
    NARROW_TILE_ROWS,
    WEIGHT_TILE_BYTES,
    WIDE_TILE_ROWS,
    gemv_tiling,
    mlp_tiling,
)
from vdir.transforms.pipeline import compile_to_encoded

SIZES = (1024, 2048, 4096, 8192, 14336, 28672)


@pytest.mark.parametrize("M", SIZES)
@pytest.mark.parametrize("K", SIZES)
def test_gemv_tiles_fit_the_limit(M, K):
    rows, chunks = gemv_tiling(M, K)
    assert rows in (WIDE_TILE_ROWS, NARROW_TILE_ROWS) and M % rows == 0 and K % chunks == 0
    assert rows * (K // chunks) * 2 <= WEIGHT_TILE_BYTES
    # wide tiles exactly where one of the whole K fits; never more chunks than needed
    assert (rows == WIDE_TILE_ROWS) == (WIDE_TILE_ROWS * K * 2 <= WEIGHT_TILE_BYTES)
    fewest = min(c for c in range(1, K + 1)
                 if K % c == 0 and K // c * 2 % 16 == 0 and rows * (K // c) * 2 <= WEIGHT_TILE_BYTES)
    assert chunks == fewest


@pytest.mark.parametrize("M", SIZES)
@pytest.mark.parametrize("K", SIZES)
def test_lone_tiles_take_the_whole_k(M, K):
    """On ``sms`` SMs the tiling differs from the limit's only where every SM has at most one tile: then
    the K is whole if such a tile is within LONE_TILE_FACTOR times the limit, else split as before."""
    sms = 132
    rows, chunks = gemv_tiling(M, K)
    lone = M <= rows * sms and rows * K * 2 <= LONE_TILE_FACTOR * WEIGHT_TILE_BYTES
    assert gemv_tiling(M, K, sms=sms) == ((rows, 1) if lone else (rows, chunks))


def test_the_lone_tile_rule_at_its_edges():
    assert gemv_tiling(1024, 8192, sms=132) == (8, 1)  # 128 tiles of 128 KiB on 132 SMs
    assert gemv_tiling(1024, 8192, sms=127) == (8, 2)  # two tiles on some SM: the chunks overlap their loads
    assert gemv_tiling(2048, 8192, sms=132) == (8, 2)
    assert gemv_tiling(1024, 14336, sms=132) == (8, 4)  # a whole-K tile of 224 KiB would not fit beside x
    assert gemv_tiling(1024, 8192, k_chunks=4, sms=132) == (8, 4)  # given chunks are kept


def test_given_arguments_are_kept():
    assert gemv_tiling(8192, 8192, rows=16) == (16, 4)  # the chunks follow the rows given
    assert gemv_tiling(8192, 8192, k_chunks=8) == (8, 8)
    assert mlp_tiling(2048, 8192, down_rows=16) == (16, 16, 4)
    assert mlp_tiling(2048, 8192, up_rows=8, down_chunks=1) == (8, 8, 1)


def test_the_examples_keep_their_tiling():
    """Left out, the builders' tiling is what their defaults used to be written as."""
    assert str(examples.build_gemv()) == str(examples.build_gemv(rows_per_tile=8, k_chunks=2))
    # a lone tile per SM of the target (an H200's 132): the whole K
    assert str(examples.build_gemv(1024, 8192)) == str(examples.build_gemv(1024, 8192, rows_per_tile=8, k_chunks=1))
    assert str(examples.build_mlp_block()) == str(examples.build_mlp_block(up_rows=16, down_rows=8, down_chunks=2))
    assert str(examples.build_mlp_stack(2)) == str(examples.build_mlp_stack(2, up_rows=16, down_rows=8,
                                                                            down_chunks=2))


def test_a_shape_without_a_fitting_split_is_named():
    with pytest.raises(ValueError, match="gemv 8x24: no equal split of K = 24"):
        gemv_tiling(8, 24, tile_bytes=16)


@pytest.mark.parametrize("M, K", [(1056, 8192), (8, 8192), (264, 4104)])
def test_lone_whole_k_tiles_fit_an_h200_sm(M, K):
    """The lone-tile rule's largest tiles (8 x 8192, 128 KiB, beside a 16 KiB x) and its smallest
    (8 x 4104, just over the limit) compile for all 132 SMs: one tile each, one gemv micro-op."""
    program = compile_to_encoded(examples.build_gemv(M, K), num_sms=132)
    assert gemv_tiling(M, K, sms=132) == (8, 1)
    # every SM with a tile: x's load, the tile's load, its gemv and its store; one micro-op for the K
    assert len(program.instrs) == 4 * (M // 8)


def test_a_lone_whole_k_gemv_is_right_on_the_simulator():
    rng = np.random.default_rng(23)
    M, K = 264, 4104
    w = (rng.standard_normal((M, K)) * K ** -0.5).astype(bfloat16)
    x = rng.standard_normal((1, K)).astype(bfloat16)
    with vdir.compile(compile_to_encoded(examples.build_gemv(M, K), num_sms=132), backend="sim") as exe:
        y = np.asarray(exe(w=w, x=x), np.float32).reshape(-1)
    ref = w.astype(np.float32) @ x.astype(np.float32).reshape(-1)
    assert np.max(np.abs(y - ref)) <= 1e-2 * np.max(np.abs(ref))
