"""The ``rope`` family and its tables, and ``rmsnorm_rows`` (per-head RMSNorm): the decode step's per-head families.

The family's numpy semantics (what the simulator runs and the GPU body
matches) are checked against an independent formulation: each pair
``(x[i], x[i + D/2])`` rotated as the complex number ``x[i] + j x[i + D/2]``
times ``exp(j p w_i)`` in float64. Llama-3's frequency scaling is checked
against its defining properties. A program that loads the tables at a
launch-time position runs for several positions on the simulator (and the
GPU in the ``gpu`` test) without recompiling.

Tolerance: bf16 output of one rounding of f32 arithmetic: within 2^-8
relative of the float64 value plus 2^-12 of the row's scale.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir.device_runtime.cuda import CudaPlatform
from vdir.families import FAMILIES, TileSig
from vdir.families.core import FamilyError
from vdir.frontend import ProgramBuilder
from vdir.frontend.rope import Llama3Scaling, inverse_frequencies, rope_tables
from vdir.testing.compare import compare_outputs


def rotate_complex(x: np.ndarray, position: int, inv_freq: np.ndarray) -> np.ndarray:
    """The rotation of each head of ``x`` (``H x D``) as complex multiplication, float64."""
    half = x.shape[1] // 2
    z = x[:, :half].astype(np.float64) + 1j * x[:, half:].astype(np.float64)
    z = z * np.exp(1j * position * inv_freq)
    return np.concatenate([z.real, z.imag], axis=1)


def close(got: np.ndarray, want: np.ndarray) -> bool:
    scale = np.abs(want).max(axis=1, keepdims=True)
    return bool(np.all(np.abs(got.astype(np.float64) - want) <= 2.0**-8 * np.abs(want) + 2.0**-12 * scale))


@pytest.mark.parametrize("head_dim, theta, scaling", [
    (64, 10000.0, None), (128, 500000.0, Llama3Scaling()), (128, 1000000.0, None),
])
def test_family_rotates_each_pair(head_dim, theta, scaling):
    rng = np.random.default_rng(head_dim)
    x = rng.standard_normal((8, head_dim)).astype(bfloat16)
    cos, sin = rope_tables(4096, head_dim, theta, scaling)
    inv_freq = inverse_frequencies(head_dim, theta, scaling)
    for position in (0, 1, 17, 4095):
        got = FAMILIES["rope"].run([x, cos[position:position + 1], sin[position:position + 1]], {}, "bf16")
        assert got.dtype == bfloat16 and got.shape == x.shape
        assert close(got, rotate_complex(x, position, inv_freq)), position
    # position 0 is the identity, exactly
    assert np.array_equal(FAMILIES["rope"].run([x, cos[:1], sin[:1]], {}, "bf16").view(np.uint16), x.view(np.uint16))


def test_llama3_scaling_keeps_short_waves_divides_long_ones_and_is_continuous():
    s = Llama3Scaling(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position=8192)
    plain = inverse_frequencies(128, 500000.0)
    scaled = inverse_frequencies(128, 500000.0, s)
    wavelength = 2 * math.pi / plain
    short = wavelength < s.original_max_position / s.high_freq_factor
    long = wavelength > s.original_max_position / s.low_freq_factor
    assert short.any() and long.any() and (~short & ~long).any()
    np.testing.assert_array_equal(scaled[short], plain[short])
    np.testing.assert_allclose(scaled[long], plain[long] / 8.0, rtol=1e-15)
    between = ~short & ~long
    assert np.all(scaled[between] <= plain[between]) and np.all(scaled[between] >= plain[between] / 8.0)
    # continuous at both edges of the band: the interpolation meets each side
    edge = s.apply(np.array([2 * math.pi * s.high_freq_factor / s.original_max_position,
                             2 * math.pi * s.low_freq_factor / s.original_max_position]))
    np.testing.assert_allclose(edge, [2 * math.pi * 4 / 8192, 2 * math.pi / 8192 / 8], rtol=1e-12)


@pytest.mark.parametrize("bad, message", [
    (dict(factor=0.0), "Llama-3 scaling needs"), (dict(low_freq_factor=4.0, high_freq_factor=1.0), "Llama-3 scaling needs"),
])
def test_bad_scaling_is_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        Llama3Scaling(**bad)


def test_bad_tables_are_refused():
    with pytest.raises(ValueError, match="head_dim must be positive and even, got 63"):
        rope_tables(16, 63)
    with pytest.raises(ValueError, match="theta must be greater than 1"):
        rope_tables(16, 64, theta=1.0)


@pytest.mark.parametrize("ins, message", [
    ([TileSig((4, 63), "bf16"), TileSig((1, 63), "f32"), TileSig((1, 63), "f32")], "must be even"),
    ([TileSig((4, 64), "bf16"), TileSig((1, 32), "f32"), TileSig((1, 64), "f32")], "cos must be 1x64"),
    ([TileSig((4, 64), "bf16"), TileSig((1, 64), "f32"), TileSig((1, 64), "bf16")], "cos and sin dtypes differ"),
    ([TileSig((4, 64), "f32"), TileSig((1, 64), "f32"), TileSig((1, 64), "f32")], "x must be bf16"),
])
def test_family_signature_errors(ins, message):
    with pytest.raises(FamilyError, match=message):
        FAMILIES["rope"].check(ins, {}, None)


def rope_program(heads: int = 8, head_dim: int = 128, max_positions: int = 256):
    """q (heads x head_dim) rotated by the tables' row at the launch-time %pos."""
    b = ProgramBuilder("rope_at_pos")
    q = b.buffer("q", (heads, head_dim))
    cos = b.buffer("cos", (max_positions, head_dim), "f32")
    sin = b.buffer("sin", (max_positions, head_dim), "f32")
    out = b.buffer("out", (heads, head_dim))
    pos = b.scalar("pos", 0, max_positions)
    qt = b.load(q, (0, 0), (heads, head_dim), name="qt")
    ct = b.load(cos, (pos, 0), (1, head_dim), name="ct")
    st = b.load(sin, (pos, 0), (1, head_dim), name="st")
    b.store(b.compute("rope", [qt, ct, st], name="qr"), out, (0, 0))
    return b.finish()


def check_rope_program(backend: str) -> None:
    rng = np.random.default_rng(7)
    q = rng.standard_normal((8, 128)).astype(bfloat16)
    cos, sin = rope_tables(256, 128, 500000.0, Llama3Scaling())
    inv_freq = inverse_frequencies(128, 500000.0, Llama3Scaling())
    with vdir.compile(rope_program(), backend=backend) as exe:
        for position in (0, 3, 100, 255):
            got = exe(q=q, cos=cos, sin=sin, pos=position)
            want = FAMILIES["rope"].run([q, cos[position:position + 1], sin[position:position + 1]], {}, "bf16")
            assert compare_outputs({"out": got}, {"out": want}, backend) is None, position
            assert close(got, rotate_complex(q, position, inv_freq)), position


def test_rope_at_a_launch_time_position_on_the_simulator():
    check_rope_program("sim")


_OK, _WHY = CudaPlatform.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _OK, reason=f"cuda backend unavailable: {_WHY}")
def test_rope_at_a_launch_time_position_on_the_gpu():
    check_rope_program("cuda")


# ---------------------------------------------------------------------------
# rmsnorm_rows: Qwen3's QK-norm, one RMSNorm per head (row)
# ---------------------------------------------------------------------------


def test_rmsnorm_rows_normalises_each_head_on_its_own():
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((8, 128)) * np.arange(1, 9).reshape(8, 1)).astype(bfloat16)  # rows of different scale
    g = rng.standard_normal((1, 128)).astype(bfloat16)
    got = FAMILIES["rmsnorm_rows"].run([x, g], {"eps": 1e-6}, "bf16").astype(np.float64)
    xf, gf = x.astype(np.float64), g.astype(np.float64)
    want = xf / np.sqrt((xf * xf).mean(axis=1, keepdims=True) + 1e-6) * gf
    assert np.all(np.abs(got - want) <= 2.0**-8 * np.abs(want) + 2.0**-12 * np.abs(want).max(axis=1, keepdims=True))
    # each row is the one-row rmsnorm of that row
    for r in range(8):
        one = FAMILIES["rmsnorm"].run([x[r:r + 1], g], {"eps": 1e-6}, "bf16")
        assert np.array_equal(FAMILIES["rmsnorm_rows"].run([x, g], {"eps": 1e-6}, "bf16")[r:r + 1].view(np.uint16),
                              one.view(np.uint16))


def test_rmsnorm_rows_signature_errors():
    with pytest.raises(FamilyError, match="weight must be 1x128"):
        FAMILIES["rmsnorm_rows"].check([TileSig((8, 128), "bf16"), TileSig((1, 64), "bf16")], {"eps": 1e-6}, None)
    with pytest.raises(FamilyError, match="eps must be positive"):
        FAMILIES["rmsnorm_rows"].check([TileSig((8, 128), "bf16"), TileSig((1, 128), "bf16")], {"eps": 0.0}, None)
