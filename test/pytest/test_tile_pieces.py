"""Weight tiles that land in two halves (``vdir-pipeline{tile-pieces=true}``, ``vdir.analysis.tile_pieces``).

A load of the stream engine whose every reader is a ``gemv`` reading it as
its weights lands in two halves of rows (``isa.TRANSFER_PIECES``): it
signals its readers once the first half has landed, and each reader
(``isa.GEMV_WEIGHT_PIECES``) waits for the second before the rows in it.
The CPU tests check which tiles the encoder marks, that a forged program
breaking the rules is refused with the micro-op named, and that only a
program with such tiles gets the kernel's piece paths; the GPU tests check
the results bit for bit against the same programs landing whole, over
several launches and with more tiles per SM than ring slots.
"""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir import isa
from vdir.frontend import ProgramBuilder
from vdir.frontend.examples import build_gemv, build_mlp_block
from vdir.lowering.emit import lower_to_ptx, uses_tile_pieces
from vdir.testing.gpu import gpu
from vdir.transforms.pipeline import compile_to_encoded

PIECES = {"tile_pieces": True}


def _tiled_gemv(k: int, tiles: list[int], out_dtype: str = "bf16"):
    """One gemv over ``sum(tiles)`` rows in tiles of those row counts."""
    b = ProgramBuilder("gemv_tiles")
    total = sum(tiles)
    w, x, y = b.buffer("w", (total, k)), b.buffer("x", (1, k)), b.buffer("y", (1, total), out_dtype)
    xt = b.load(x, (0, 0), (1, k), name="xt")
    row = 0
    for t, rows in enumerate(tiles):
        wt = b.load(w, (row, 0), (rows, k), name=f"w{t}")
        b.store(b.compute("gemv", [wt, xt], out_dtype=out_dtype, name=f"y{t}"), y, (0, row), name=f"s{t}")
        row += rows
    return b.finish()


def _flagged(program: isa.EncodedProgram) -> tuple[int, int]:
    """(loads in pieces, gemvs that wait for them) among the program's records."""
    words = program.instrs.reshape(-1, isa.INSTR_WORDS)
    ops = isa.OPCODE.column(words)
    loads = (ops == isa.OP_LOAD) & ((isa.TRANSFER_FLAGS.column(words) & isa.TRANSFER_PIECES) != 0)
    gemvs = (ops == isa.OP_COMPUTE) & ((isa.P2.column(words) & isa.GEMV_WEIGHT_PIECES) != 0)
    return int(loads.sum()), int(gemvs.sum())


def test_a_gemvs_weight_tiles_land_in_pieces_and_its_gemvs_wait_for_them():
    program = compile_to_encoded(build_gemv(512, 1024, rows_per_tile=16, k_chunks=1), num_sms=4, **PIECES)
    assert _flagged(program) == (32, 32)
    assert uses_tile_pieces(program)
    isa.check_untrusted(program)


def test_nothing_lands_in_pieces_by_default():
    program = compile_to_encoded(build_gemv(512, 1024, rows_per_tile=16, k_chunks=1), num_sms=4)
    assert _flagged(program) == (0, 0)
    ptx = lower_to_ptx(program)
    assert "ld_piece" not in ptx and "gemv_half" not in ptx


def test_tiles_under_the_smallest_in_pieces_land_whole():
    """(An odd number of rows cannot be stored from a gemv's result; a forged one is refused below.)"""
    program = compile_to_encoded(_tiled_gemv(256, [8, 8]), num_sms=2, **PIECES)
    assert 8 * 256 * 2 < isa.TILE_PIECE_MIN_BYTES
    assert _flagged(program) == (0, 0)


def test_tiles_read_by_other_families_land_whole():
    """An MLP block's weights are read by fused families (gemv_silu_mul, gemv_add), which do not wait."""
    program = compile_to_encoded(build_mlp_block(256, 512), num_sms=4, **PIECES)
    assert _flagged(program) == (0, 0)


def test_the_kernel_carries_the_piece_paths_and_assembles():
    program = compile_to_encoded(build_gemv(256, 1024, rows_per_tile=16, k_chunks=1), num_sms=2, **PIECES)
    ptx = lower_to_ptx(program)
    assert "ld_piece_window_free" in ptx and "gemv_half_wait" in ptx and "ld_piece_drain_0" in ptx


def _forge(program: isa.EncodedProgram, pick, change) -> isa.EncodedProgram:
    """A copy of ``program`` with ``change(row)`` applied to the first record ``pick(words)`` selects."""
    instrs = program.instrs.copy()
    words = instrs.reshape(-1, isa.INSTR_WORDS)
    k = int(np.nonzero(pick(words))[0][0])
    change(words[k])
    return isa.EncodedProgram(**{**program.__dict__, "instrs": instrs})


def _loads(words):
    return isa.OPCODE.column(words) == isa.OP_LOAD


def _piece_loads(words):
    return _loads(words) & ((isa.TRANSFER_FLAGS.column(words) & isa.TRANSFER_PIECES) != 0)


def _set_flag(field, flag):
    def change(row):
        field.set(row, field.get(row) | flag)
    return change


def _clear_flag(field, flag):
    def change(row):
        field.set(row, field.get(row) & ~flag)
    return change


def _gemvs(words):
    return (isa.OPCODE.column(words) == isa.OP_COMPUTE) & ((isa.P2.column(words) & isa.GEMV_WEIGHT_PIECES) != 0)


@pytest.mark.parametrize("pick, change, message", [
    (_gemvs, _clear_flag(isa.P2, isa.GEMV_WEIGHT_PIECES), "reads a tile that lands in pieces without waiting"),
    (_piece_loads, _clear_flag(isa.TRANSFER_FLAGS, isa.TRANSFER_PIECES), "a load lands whole at shared offset"),
    (_gemvs, lambda row: isa.IN_SMEM[0].set(row, isa.IN_SMEM[0].get(row) + 16), "no load of its SM lands a tile"),
    (lambda w: isa.OPCODE.column(w) == isa.OP_STORE, _set_flag(isa.TRANSFER_FLAGS, isa.TRANSFER_PIECES),
     "only a load lands in pieces"),
    (_piece_loads, lambda row: isa.GUARD_SOURCE.set(row, isa.SOURCE_SCALAR), "a load with a condition"),
    (_piece_loads, lambda row: isa.ROWS.set(row, 15), "cannot land in 2 pieces"),
    (_piece_loads, lambda row: isa.TBOXES.set(row, 1), "copies whole boxes in each piece"),
])
def test_a_forged_program_breaking_the_rules_is_refused_naming_the_micro_op(pick, change, message):
    program = compile_to_encoded(build_gemv(256, 1024, rows_per_tile=16, k_chunks=1), num_sms=2, **PIECES)
    forged = _forge(program, pick, change)
    with pytest.raises(ValueError, match=message) as info:
        isa.check_untrusted(forged)
    assert "(SM " in str(info.value) and "queue position" in str(info.value)


def test_the_lsu_load_path_refuses_a_kernel_with_tiles_in_pieces():
    program = compile_to_encoded(build_gemv(256, 1024, rows_per_tile=16, k_chunks=1), num_sms=2, **PIECES)
    with pytest.raises(ValueError, match="tiles land in pieces through bulk copies, not lowering option load_path='lsu'"):
        lower_to_ptx(program, options={"load_path": "lsu"})


def _run(module, w, x, launches: int, pipeline=None, options=None, num_sms: int = 4) -> list[np.ndarray]:
    with vdir.compile(module, backend="cuda", num_sms=num_sms, pipeline=pipeline, options=options) as exe:
        return [np.asarray(exe(w=w, x=x)).copy() for _ in range(launches)]


@gpu
@pytest.mark.parametrize("tiles, k", [
    ([16] * 8, 1024),  # 32 KiB tiles: the first half's pass runs before the second lands
    ([8] * 8, 2048),  # row blocks: wait for both halves first
    ([32, 32], 1024),  # four passes: a pair group on each side of the half
    ([12, 12, 12, 20], 1400),  # passes across the half
])
@pytest.mark.parametrize("options", [None, {"tensor_copies": False}])
def test_tiles_in_pieces_give_the_bytes_of_whole_tiles(tiles, k, options):
    rng = np.random.default_rng(sum(tiles) + k)
    total = sum(tiles)
    w = (rng.standard_normal((total, k)) / np.sqrt(k)).astype(bfloat16)
    x = rng.standard_normal((1, k)).astype(bfloat16)
    module = _tiled_gemv(k, tiles, "f32")
    assert _flagged(compile_to_encoded(module, num_sms=4, **PIECES))[0] == len(tiles)
    whole = _run(module, w, x, 1, options=options)[0]
    for got in _run(module, w, x, 3, PIECES, options):
        assert np.array_equal(got.view(np.uint32), whole.view(np.uint32))
    want = w.astype(np.float64) @ x.astype(np.float64).reshape(-1)
    assert np.abs(whole.astype(np.float64).reshape(-1) - want).max() <= 1e-4 * np.abs(want).max()


@gpu
def test_more_tiles_in_pieces_than_ring_slots_per_sm():
    """64 tiles per SM, through a ring of two slots and a few tile buffers: each window's piece mbarrier
    is initialised again for each tile that lands in it."""
    k, rows = 1024, 2048
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((rows, k)) / np.sqrt(k)).astype(bfloat16)
    x = rng.standard_normal((1, k)).astype(bfloat16)
    module = build_gemv(rows, k, rows_per_tile=16, k_chunks=1)
    whole = _run(module, w, x, 1, num_sms=2)[0]
    for got in _run(module, w, x, 2, PIECES, num_sms=2):
        assert np.array_equal(got.view(np.uint16), whole.view(np.uint16))
    want = w.astype(np.float64) @ x.astype(np.float64).reshape(-1)
    assert np.abs(whole.astype(np.float64).reshape(-1) - want).max() <= 2e-2 * np.abs(want).max()


def test_tiles_in_pieces_inside_rerolled_loops_pass_the_checks():
    """64 tiles per SM encode as loop records whose ring words step the tiles' offsets: the marks and the
    checks go by the executed queues, and every stream load of each SM lands in pieces."""
    program = compile_to_encoded(build_gemv(2048, 1024, rows_per_tile=16, k_chunks=1), num_sms=2, **PIECES)
    assert program.has_loops
    isa.check_untrusted(program)
    executed = program.executed_instrs().reshape(-1, isa.INSTR_WORDS)
    ops = isa.OPCODE.column(executed)
    pieces = (ops == isa.OP_LOAD) & ((isa.TRANSFER_FLAGS.column(executed) & isa.TRANSFER_PIECES) != 0)
    assert int(pieces.sum()) == 2048 // 16
    assert uses_tile_pieces(program)


def test_the_simulators_clock_starts_a_gemv_on_the_first_half_of_its_tile():
    """The clock retires a tile in pieces when its first half has landed and holds the gemv's second half
    of body until its last half has: the same bytes, a sooner end (the GPU measured the first form
    slower: docs/performance.md, round 48)."""
    from vdir.device_runtime.sim import simulate

    module = build_gemv(512, 1024, rows_per_tile=16, k_chunks=1)
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((512, 1024)) / 32).astype(bfloat16)
    x = rng.standard_normal((1, 1024)).astype(bfloat16)
    runs = []
    for pipeline in ({}, PIECES):
        program = compile_to_encoded(module, num_sms=4, **pipeline)
        arrays = [w.copy(), x.copy(), np.zeros((1, 512), bfloat16)]
        runs.append((simulate(program, arrays).launch_time_us, arrays[2]))
    (whole_us, whole), (pieces_us, pieces) = runs
    assert np.abs(whole.astype(np.float32)).max() > 0
    assert np.array_equal(whole.view(np.uint16), pieces.view(np.uint16))
    assert pieces_us < whole_us
