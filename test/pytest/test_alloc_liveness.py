"""Shared memory allocated by liveness: programs whose per-size rings would not fit an SM.

A ring per tile size, each as deep as its peak, needs the sum of the peaks;
phases of different tile sizes (a model's attention, then its MLP) can need
more than the SM has although their live tiles never do. Such an SM is
allocated by liveness (``vdir/transforms/alloc_smem.py``). The simulator,
with race checking, is the oracle: a tile that reused bytes too early would
be a reported race or a wrong result.
"""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir.compiler import compile_module
from vdir.frontend import ProgramBuilder
from vdir.isa import tile_arena_bytes
from vdir.target import get_target
from vdir.transforms import alloc_smem

#: (rows of each phase's tiles, tiles per phase): 64, 32 and 48 KiB bf16 tiles of 1024 columns
PHASES = ((32, 4), (16, 6), (24, 3))
COLS = 1024


def _phased_program():
    b = ProgramBuilder("phases")
    total = sum(rows * 2 * count for rows, count in PHASES)
    src = b.buffer("src", (total, COLS), "bf16")
    out = b.buffer("out", (total // 2, COLS), "bf16")
    row = 0
    for p, (rows, count) in enumerate(PHASES):
        with b.repeat(0, count, name=f"i{p}") as i:
            first = b.linear([(i, 2 * rows)], row, name=f"r{p}")
            x = b.load(src, (first, 0), (rows, COLS), name=f"x{p}")
            y = b.load(src, (b.affine(first, 1, rows, name=f"q{p}"), 0), (rows, COLS), name=f"y{p}")
            b.store(b.compute("add", [x, y], name=f"s{p}"), out,
                    (b.linear([(i, rows)], row // 2, name=f"o{p}"), 0), name=f"s{p}_saved")
        row += 2 * rows * count
    return b.finish(), total


def test_rings_would_not_fit_the_phases():
    budget = tile_arena_bytes(get_target("h200").smem_per_block)
    # each phase's add keeps two inputs and a result live: three tiles of its size at the peak
    assert sum(3 * rows * COLS * 2 for rows, _ in PHASES) > budget


@pytest.mark.parametrize("num_sms", [1, 3])
def test_phases_allocated_by_liveness_run_exactly(num_sms, monkeypatch):
    module, total = _phased_program()
    by_liveness = []
    real = alloc_smem._allocate_by_liveness
    monkeypatch.setattr(alloc_smem, "_allocate_by_liveness",
                        lambda sm, *args: by_liveness.append(sm) or real(sm, *args))
    program = compile_module(module, num_sms=num_sms)
    assert by_liveness, "no SM needed the liveness allocator: the test does not test it"
    assert program.smem_bytes <= tile_arena_bytes(get_target("h200").smem_per_block)
    rng = np.random.default_rng(3)
    src = rng.standard_normal((total, COLS)).astype(bfloat16)
    want = []
    row = 0
    for rows, count in PHASES:
        for i in range(count):
            first = row + 2 * rows * i
            a = src[first : first + rows].astype(np.float32)
            c = src[first + rows : first + 2 * rows].astype(np.float32)
            want.append((a + c).astype(bfloat16))
        row += 2 * rows * count
    for seed in (0, 1):
        with vdir.compile(program, backend="sim", seed=seed) as exe:
            got = exe(src=src)
        assert np.array_equal(np.asarray(got).view(np.uint16), np.concatenate(want).view(np.uint16))
