"""i32 buffers and tiles: loaded and stored like bf16 and f32, bit for bit.

Token ids, positions and indices travel through programs as i32; no family
computes on them, so every layer's job is to move the bytes unchanged. The
values cover the whole int32 range (negative ones and both extremes), so a
dtype map that widens, narrows or reinterprets them anywhere shows up as a
mismatch. The GPU tests (marker ``gpu``) need the cuda backend.
"""

from __future__ import annotations

import numpy as np
import pytest

import vdir
from vdir.device_runtime.cuda import CudaPlatform
from vdir.frontend.builder import ProgramBuilder
from vdir.testing.compare import compare_outputs
from vdir.tools.vdir_run import INT_RANGES, main, random_inputs

#: rows gathered by :func:`gather_program`, in output order (repeats and the last row too)
GATHERED = (5, 0, 63, 17, 17, 2, 40, 9)


def full_range_i32(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Random int32 over the whole range, with both extremes, -1 and 0 planted."""
    lo, hi = INT_RANGES["i32"]
    a = rng.integers(lo, hi, shape, dtype=np.int32, endpoint=True)
    a.flat[:4] = [lo, hi, -1, 0]
    return a


def copy_program(rows: int = 32, cols: int = 64, tile_rows: int = 8):
    """dst = src, one tile of ``tile_rows`` rows at a time."""
    b = ProgramBuilder("copy_i32")
    src = b.buffer("src", (rows, cols), "i32")
    dst = b.buffer("dst", (rows, cols), "i32")
    with b.repeat(0, rows // tile_rows, name="i") as i:
        r = b.affine(i, scale=tile_rows, name="r")
        t = b.load(src, (r, 0), (tile_rows, cols), name="t")
        b.store(t, dst, (r, 0), name="done")
    return b.finish()


def gather_program():
    """out[i] = table[GATHERED[i]]: a gather of rows of 4 i32 (16 bytes, the narrowest row)."""
    b = ProgramBuilder("gather_i32")
    table = b.buffer("table", (64, 4), "i32")
    out = b.buffer("out", (len(GATHERED), 4), "i32")
    for i, row in enumerate(GATHERED):
        t = b.load(table, (row, 0), (1, 4), name=f"t{i}")
        b.store(t, out, (i, 0), name=f"s{i}")
    return b.finish()


# ---------------------------------------------------------------------------
# The simulator
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("num_sms", [1, 3])
def test_sim_copy_is_bit_exact(num_sms):
    src = full_range_i32(np.random.default_rng(num_sms), (32, 64))
    with vdir.compile(copy_program(), backend="sim", num_sms=num_sms) as exe:
        out = exe(src=src)
    assert out.dtype == np.int32
    assert np.array_equal(out, src)
    assert (src < 0).any() and (src > 0).any()


def test_sim_gather_is_bit_exact():
    table = full_range_i32(np.random.default_rng(7), (64, 4))
    with vdir.compile(gather_program(), backend="sim", num_sms=4) as exe:
        out = exe(table=table)
    assert np.array_equal(out, table[list(GATHERED)])


def test_reference_evaluator_and_exact_comparison():
    """The reference evaluator copies i32 unchanged; an integer output must match exactly."""
    from vdir.testing.reference import evaluate

    table = full_range_i32(np.random.default_rng(3), (64, 4))
    expected = evaluate(gather_program(), {"table": table, "out": np.zeros((len(GATHERED), 4), np.int32)})
    assert np.array_equal(expected["out"], table[list(GATHERED)])
    off_by_one = expected["out"].copy()
    off_by_one[2, 1] ^= 1
    mismatch = compare_outputs({"out": off_by_one}, expected, "sim")
    assert mismatch is not None and mismatch.index == (2, 1) and "exact" in str(mismatch)
    assert compare_outputs({"out": expected["out"].copy()}, expected, "cuda") is None


def test_random_inputs_cover_the_int32_range():
    from vdir.isa import BufferInfo

    (ids,) = random_inputs([BufferInfo("ids", (64, 64), "i32", False)], seed=0).values()
    assert ids.dtype == np.int32 and ids.min() < -(2**30) and ids.max() > 2**30


# ---------------------------------------------------------------------------
# vdir-run: inputs, outputs, --check
# ---------------------------------------------------------------------------


@pytest.fixture
def gather_file(tmp_path):
    path = tmp_path / "gather.mlir"
    path.write_text(str(gather_program()))
    return path


def test_vdir_run_checks_and_saves_int32(gather_file, tmp_path, capsys):
    table = full_range_i32(np.random.default_rng(11), (64, 4))
    np.savez(tmp_path / "in.npz", table=table.astype(np.int64))  # any integer array whose values fit
    status = main([str(gather_file), "--backend", "sim", "--inputs", str(tmp_path / "in.npz"),
                   "--outputs", str(tmp_path / "out.npz"), "--check"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "out: 8x4 i32" in out and "check passed" in out
    with np.load(tmp_path / "out.npz") as saved:
        assert saved["out"].dtype == np.int32
        assert np.array_equal(saved["out"], table[list(GATHERED)])


@pytest.mark.parametrize(
    "array, fragment",
    [
        (np.zeros((64, 4), np.float32), "array 'table' has dtype float32, expected an integer array for i32"),
        (np.full((64, 4), 2**31, np.int64), "array 'table' has values outside the int32 range"),
    ],
    ids=["float", "out-of-range"],
)
def test_vdir_run_rejects_bad_i32_inputs(gather_file, tmp_path, capsys, array, fragment):
    np.savez(tmp_path / "bad.npz", table=array)
    status = main([str(gather_file), "--backend", "sim", "--inputs", str(tmp_path / "bad.npz")])
    err = capsys.readouterr().err.strip()
    assert status == 1 and "\n" not in err and "Traceback" not in err
    assert err == f"{tmp_path / 'bad.npz'}: error: {fragment}"


@pytest.mark.parametrize("build", [copy_program, gather_program], ids=["copy", "gather"])
def test_ptx_assembles(build):
    """The kernel of an i32 program assembles for sm_90a (ptxas, else nvJitLink)."""
    from test_ptx_lowering import assemble

    from vdir.compiler import compile_module
    from vdir.lowering import lower_to_ptx

    assemble(lower_to_ptx(compile_module(build(), num_sms=2), "h200"))


# ---------------------------------------------------------------------------
# The GPU
# ---------------------------------------------------------------------------

_CUDA_OK, _CUDA_WHY = CudaPlatform.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _CUDA_OK, reason=f"cuda backend unavailable: {_CUDA_WHY}")
@pytest.mark.parametrize("options", [None, {"tensor_copies": False}], ids=["tensor", "plain"])
def test_gpu_copy_and_gather_are_bit_exact(options):
    rng = np.random.default_rng()
    src = full_range_i32(rng, (32, 64))
    with vdir.compile(copy_program(), backend="cuda", num_sms=3, options=options) as exe:
        assert np.array_equal(exe(src=src), src)
    table = full_range_i32(rng, (64, 4))
    with vdir.compile(gather_program(), backend="cuda", num_sms=4, options=options) as exe:
        assert np.array_equal(exe(table=table), table[list(GATHERED)])
