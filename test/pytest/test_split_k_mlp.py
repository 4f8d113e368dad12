"""Gate and up tiles split along K: the ``slice`` family and an MLP block whose hidden size needs it.

At hidden 8192 a gate tile and an up tile of the whole hidden size (8 rows,
128 KB each) do not fit an SM's shared memory together, so ``mlp_layer``
normalises the row once, cuts it into K chunks with ``slice`` (an exact copy
of columns) and runs each projection as a chunked gemv with f32 partial
sums. The simulator, with race checking, runs it against the reference
evaluator (the families' numpy semantics, bit for bit) and against a
float64 MLP within a bf16 tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir.families import FamilyError, get_family
from vdir.families.core import TileSig
from vdir.frontend import ProgramBuilder
from vdir.frontend.examples import build_mlp_block
from vdir.frontend.layers import WEIGHT_TILE_BYTES, up_chunks_for
from vdir.testing.gpu import gpu
from vdir.testing.reference import evaluate

#: worst |out - float64 out| / max |float64 out| of the 8192-wide block (bf16 roundings of four tiles)
TOLERANCE = 2e-2


def _columns_program():
    b = ProgramBuilder("columns")
    x, y = b.buffer("x", (2, 64)), b.buffer("y", (2, 16))
    b.store(b.compute("slice", [b.load(x, (0, 0), (2, 64))], params={"start": 40, "width": 16}), y, (0, 0))
    return b.finish()


def _check_columns(backend: str) -> None:
    data = np.random.default_rng(1).standard_normal((2, 64)).astype(bfloat16)
    data[0, 41] = np.nan  # bits, not values, are copied
    with vdir.compile(_columns_program(), backend=backend) as exe:
        out = exe(x=data)
    assert np.array_equal(out.view(np.uint16), data[:, 40:56].view(np.uint16))


@pytest.mark.parametrize(
    "operand, params, message",
    [
        (TileSig((1, 64), "bf16"), {"start": 56, "width": 16}, "columns 56 to 71 are not within the 64 columns"),
        (TileSig((1, 64), "bf16"), {"start": 0, "width": 0}, "parameter 'width' = 0 is outside its range 1"),
        (TileSig((1, 64), "f32"), {"start": 0, "width": 8}, "family 'slice': x must be bf16, got 1x64xf32"),
    ],
)
def test_slice_refuses_columns_outside_its_operand(operand, params, message):
    with pytest.raises(FamilyError, match=message):
        get_family("slice").check([operand], params, None)


def test_gate_and_up_are_split_only_where_whole_tiles_cannot_fit_together():
    assert up_chunks_for(16, 2048) == 1 and up_chunks_for(8, 4096) == 1
    assert up_chunks_for(8, 5120) == 1  # 80 KB tiles stay whole: measured fast
    assert up_chunks_for(8, 8192) == 2 and 8 * 8192 * 2 // 2 <= WEIGHT_TILE_BYTES


def _check_block(backend: str) -> None:
    hidden, inter = 8192, 64
    module = build_mlp_block(hidden, inter)
    text = str(module)
    # the row in two chunks, the gate and up weights in 8 x 4096 tiles (64 KB), none of the whole 8192
    assert text.count("vdir.compute slice(") == 2
    assert "!vdir.tile<8x4096xbf16>" in text and "!vdir.tile<8x8192xbf16>" not in text
    rng = np.random.default_rng(7)
    inputs = {
        "h": rng.standard_normal((1, hidden)).astype(bfloat16),
        "g": (1 + 0.1 * rng.standard_normal((1, hidden))).astype(bfloat16),
        "wg": (rng.standard_normal((inter, hidden)) / np.sqrt(hidden)).astype(bfloat16),
        "wu": (rng.standard_normal((inter, hidden)) / np.sqrt(hidden)).astype(bfloat16),
        "wd": (rng.standard_normal((hidden, inter)) / np.sqrt(inter)).astype(bfloat16),
    }
    with vdir.compile(module, backend=backend, num_sms=4) as exe:
        out = exe(**inputs)
    if backend == "sim":  # bit for bit; the GPU's gemv sums in another order (the tolerance below)
        want = evaluate(module, {**inputs, "act": np.zeros((1, inter), bfloat16),
                                 "out": np.zeros((1, hidden), bfloat16)})
        assert np.array_equal(np.asarray(out["out"]).view(np.uint16), want["out"].view(np.uint16))
    f = {k: v.astype(np.float64) for k, v in inputs.items()}
    xn = f["h"] / np.sqrt(np.mean(f["h"] ** 2) + 1e-5) * f["g"]
    gate, up = xn @ f["wg"].T, xn @ f["wu"].T
    ideal = f["h"] + (gate / (1 + np.exp(-gate)) * up) @ f["wd"].T
    err = np.abs(np.asarray(out["out"], np.float64) - ideal).max() / np.abs(ideal).max()
    assert err < TOLERANCE, err


def test_slice_copies_columns_of_every_row_exactly():
    _check_columns("sim")


@gpu
def test_slice_copies_columns_exactly_on_the_gpu():
    _check_columns("cuda")


def test_an_mlp_block_8192_wide_runs_split_along_k():
    _check_block("sim")


@gpu
def test_an_mlp_block_8192_wide_runs_split_along_k_on_the_gpu():
    _check_block("cuda")

