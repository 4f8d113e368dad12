"""The ``vecmat`` family: ``x[1,K] . w[K,N]`` (+ acc) in f32, each column's products added in row order.

It is the partial of a split-K projection over its weights' rows (the down
projection, its weights stored transposed). Its numpy semantics claim the GPU's
bits: each ``fma`` adds a bf16 product, which is exact in f32, so numpy's f32
``total + x * w`` rounds as the ``fma`` does. The GPU test holds the body to
that claim bit for bit; the simulator runs the semantics themselves.
"""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir.families import FamilyError, get_family
from vdir.families.builtin import vecmat_f32
from vdir.families.core import TileSig
from vdir.frontend import ProgramBuilder
from vdir.testing.gpu import gpu


def vecmat_program(k: int, n: int, acc: bool, sms: int = 1):
    """``sms`` vecmats of one ``1 x k`` x by ``k x n`` column blocks of w (one per SM), each with its
    column block of an f32 accumulator or not."""
    b = ProgramBuilder(f"vecmat_{k}x{n}")
    x, w = b.buffer("x", (1, k)), b.buffer("w", (k, sms * n))
    a = b.buffer("a", (1, sms * n), dtype="f32") if acc else None
    y = b.buffer("y", (1, sms * n), dtype="f32")
    with b.repeat(0, sms * n, n) as c:
        ins = [b.load(x, (0, 0), (1, k)), b.load(w, (0, c), (k, n))]
        if a is not None:
            ins.append(b.load(a, (0, c), (1, n)))
        b.store(b.compute("vecmat", ins), y, (0, c))
    return b.finish()


def inputs(k: int, n: int, acc: bool, sms: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    given = {"x": rng.standard_normal((1, k)).astype(bfloat16),
             "w": (rng.standard_normal((k, sms * n)) * 0.05).astype(bfloat16)}
    if acc:
        given["a"] = rng.standard_normal((1, sms * n)).astype(np.float32)
    return given


def expected(given: dict[str, np.ndarray]) -> np.ndarray:
    """The whole row at once: each column's sum is the same sequence of roundings in any column block."""
    return vecmat_f32(given["x"], given["w"], given.get("a"))


def test_the_semantics_add_each_column_in_row_order():
    """Row by row from the accumulator, not numpy's pairwise matmul: the bits of a fixed order."""
    given = inputs(16, 64, acc=True)
    x, w, a = (given[name].astype(np.float32) for name in ("x", "w", "a"))
    total = a.copy()
    for k in range(16):
        total = total + x[0, k] * w[k]  # f32 each time
    y = vecmat_f32(given["x"], given["w"], given["a"])
    assert y.dtype == np.float32 and np.array_equal(y.view(np.uint32), total.view(np.uint32))
    exact = x.astype(np.float64) @ w.astype(np.float64) + a
    assert np.abs(y - exact).max() <= 1e-5 * np.abs(exact).max()


def test_a_bf16_product_is_exact_in_f32():
    """The premise of the bit-for-bit claim: the product of two bf16 values loses nothing in f32."""
    rng = np.random.default_rng(3)
    p, q = (rng.standard_normal(4096).astype(bfloat16) for _ in range(2))
    assert np.array_equal(p.astype(np.float32) * q.astype(np.float32), p.astype(np.float64) * q.astype(np.float64))


@pytest.mark.parametrize("k, n, acc", [(16, 2048, True), (16, 256, False), (8, 64, True), (64, 512, False)])
def test_vecmat_on_the_simulator(k, n, acc):
    given = inputs(k, n, acc, sms=2)
    y = vdir.compile(vecmat_program(k, n, acc, sms=2), backend="sim")(**given)
    assert isinstance(y, np.ndarray)
    assert np.array_equal(y.view(np.uint32), expected(given).view(np.uint32))


@pytest.mark.parametrize(
    "ins, message",
    [
        ([TileSig((1, 16), "bf16"), TileSig((8, 64), "bf16")], "x 1x16xbf16 and weights 8x64xbf16 disagree on K (16 vs 8)"),
        ([TileSig((1, 8), "bf16"), TileSig((8, 12), "bf16")], "N = 12 must be a multiple of 8"),
        ([TileSig((2, 8), "bf16"), TileSig((8, 64), "bf16")], "x must be a 1xN tile"),
        ([TileSig((1, 8), "f32"), TileSig((8, 64), "bf16")], "x must be bf16"),
        ([TileSig((1, 8), "bf16"), TileSig((8, 64), "bf16"), TileSig((1, 64), "bf16")],
         "the accumulator must be 1x64xf32, got 1x64xbf16"),
    ],
)
def test_vecmat_names_what_is_wrong_with_its_operands(ins, message):
    with pytest.raises(FamilyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        get_family("vecmat").infer(ins, {})


@gpu
@pytest.mark.parametrize("k, n, acc", [(16, 2048, True), (64, 512, False)])
def test_gpu_vecmat_is_the_semantics_bit_for_bit(k, n, acc):
    """On 132 SMs, three launches: the body's fma per product gives numpy's f32 bits exactly."""
    given = inputs(k, n, acc, sms=132, seed=11)
    want = expected(given)
    with vdir.compile(vecmat_program(k, n, acc, sms=132), backend="cuda") as exe:
        for _ in range(3):
            y = exe(**given)
            assert isinstance(y, np.ndarray) and np.array_equal(y.view(np.uint32), want.view(np.uint32))
