"""Deterministic two-phase reductions across SMs: ``sum_rows`` and the split-K gemv.

Phase 1 stores one f32 partial per K chunk to a row of a scratch buffer, on
many SMs; phase 2 loads the rows after every store (a cross-SM counter) and
``sum_rows`` adds them in the fixed order row 0, 1, ..., P-1.

Tolerance against a float64 numpy reference, with ``S = sum_k |W[i,k] x[k]|``:

* each f32 partial (1024 products): ``|p - p64| <= 2^-14 * S`` (the bound
  ``n * u`` of n = 2^10 f32 additions, u = 2^-24);
* the bf16 result: ``|y - y64| <= 2^-8 * |y64| + 2^-13 * S`` (one bf16
  rounding, at most half an ulp of 8 significant bits, plus the partials'
  and the combine's f32 error).

Determinism: the combine's order is fixed, so the result is bit-identical
whatever the placement (4, 16 or 132 SMs), the interleaving (the
simulator's seed) or the run (the GPU), and equals the in-order f32 sum of
the partials that phase 1 stored, bit for bit. GPU tests carry the marker
``gpu`` and are skipped without the cuda backend.
"""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir import isa
from vdir.compiler import compile_module
from vdir.families import DTYPES, FAMILIES, round_to
from vdir.families.builtin import sum_rows_f32
from vdir.frontend.examples import build_split_k_gemv
from vdir.testing.assembler import family_program
from vdir.testing.gpu import gpu

#: the example's shape: M x K weights, K in SPLITS chunks
M, K, SPLITS = 1024, 8192, 8
#: |p - p64| <= PARTIAL_TOL * S and |y - y64| <= BF16_TOL * |y64| + SUM_TOL * S (module docstring)
PARTIAL_TOL, BF16_TOL, SUM_TOL = 2.0**-14, 2.0**-8, 2.0**-13
#: rows whose in-order f32 sum (1) differs from the pairwise and the reversed sums (0)
ORDER_SENSITIVE = np.array([1e8, 1.0, -1e8, 1.0], dtype=np.float32)

def split_k_inputs(seed: int) -> dict[str, np.ndarray]:
    """Random bf16 weights of scale 1/sqrt(K) and a unit-scale x."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((M, K)) / np.sqrt(K)).astype(bfloat16)
    x = rng.standard_normal((1, K)).astype(bfloat16)
    return {"w": w, "x": x}


def assert_within_tolerance(outputs: dict[str, np.ndarray], inputs: dict[str, np.ndarray]) -> None:
    """The partials and y against float64 numpy, within the module docstring's bounds."""
    w, x = (inputs[k].astype(np.float64) for k in ("w", "x"))
    products = w.reshape(M, SPLITS, K // SPLITS) * x.reshape(1, SPLITS, K // SPLITS)
    p64 = products.sum(axis=2).T  # [SPLITS, M]
    s_chunk = np.abs(products).sum(axis=2).T
    y64, s = p64.sum(axis=0), s_chunk.sum(axis=0)
    p_err = np.abs(outputs["partials"].astype(np.float64) - p64)
    assert (p_err <= PARTIAL_TOL * s_chunk).all(), f"partials off by up to {(p_err / s_chunk).max():.3g} * S"
    y_err = np.abs(outputs["y"].astype(np.float64).reshape(-1) - y64)
    allowed = BF16_TOL * np.abs(y64) + SUM_TOL * s
    assert (y_err <= allowed).all(), f"y off by {y_err.max():.3g} (allowed {allowed[np.argmax(y_err)]:.3g})"


def assert_combine_is_in_order(outputs: dict[str, np.ndarray]) -> None:
    """y is exactly the in-order f32 sum of the stored partials, rounded once to bf16."""
    expected = round_to(sum_rows_f32(outputs["partials"]), "bf16")
    assert np.array_equal(outputs["y"].view(np.uint16), expected.view(np.uint16))


def bits(outputs: dict[str, np.ndarray]) -> dict[str, bytes]:
    return {name: a.tobytes() for name, a in outputs.items()}


# ---------------------------------------------------------------------------
# The family
# ---------------------------------------------------------------------------


def test_sum_rows_adds_rows_in_order():
    tile = np.tile(ORDER_SENSITIVE.reshape(4, 1), (1, 8))
    out = FAMILIES["sum_rows"].run([tile], {}, "f32")
    assert out.shape == (1, 8) and (out == 1.0).all()
    a, b, c, d = ORDER_SENSITIVE
    assert (a + b) + (c + d) == 0.0 and ((d + c) + b) + a == 0.0  # pairwise, reversed


@pytest.mark.parametrize("out_dtype", ["f32", "bf16"])
def test_sum_rows_on_the_simulator_is_the_in_order_sum(out_dtype):
    from vdir.device_runtime.sim import simulate

    rng = np.random.default_rng(5)
    tile = rng.standard_normal((12, 64)).astype(np.float32)
    tile[:4, :8] = ORDER_SENSITIVE.reshape(4, 1)
    tile[4:, :8] = 0.0
    out = np.zeros((1, 64), bfloat16 if out_dtype == "bf16" else np.float32)
    simulate(family_program("sum_rows", [(12, 64)], ["f32"], (1, 64), out_dtype), [tile, out])
    assert np.array_equal(out.view(np.uint8), round_to(sum_rows_f32(tile), out_dtype).view(np.uint8))
    assert (out[0, :8].astype(np.float32) == 1.0).all()


# ---------------------------------------------------------------------------
# The split-K gemv on the simulator
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def module():
    return build_split_k_gemv()


def test_split_k_matches_float64_within_tolerance(module):
    inputs = split_k_inputs(0)
    with vdir.compile(module, backend="sim") as exe:
        outputs = exe(**inputs)
    assert_within_tolerance(outputs, inputs)
    assert_combine_is_in_order(outputs)


def test_split_k_partials_run_on_different_sms(module):
    """Phase 1's 256 stores to %partials are spread over the SMs; phase 2 has 4 combines."""
    program = compile_module(module)
    index = {b.name: i for i, b in enumerate(program.buffers)}
    stores: dict[int, list[int]] = {index["partials"]: [], index["y"]: []}
    for sm in range(program.num_sms):
        for engine in range(program.num_engines):
            for pos in range(program.queues[sm][engine][1]):
                ins = program.instruction(sm, engine, pos)
                if ins.opcode == isa.OP_STORE and ins.get(isa.BUFFER) in stores:
                    stores[ins.get(isa.BUFFER)].append(sm)
    partial_sms = stores[index["partials"]]
    assert len(partial_sms) == SPLITS * M // 32 and len(set(partial_sms)) == program.num_sms
    assert len(stores[index["y"]]) == M // 256


def test_split_k_is_bit_identical_across_placements_and_interleavings(module):
    inputs = split_k_inputs(1)
    results = []
    for num_sms in (4, 16, 132):
        program = compile_module(module, num_sms=num_sms)
        for seed in (0, 1):
            with vdir.compile(program, backend="sim", seed=seed) as exe:
                results.append(bits(exe(**inputs)))
    assert all(r == results[0] for r in results[1:])


# ---------------------------------------------------------------------------
# The GPU
# ---------------------------------------------------------------------------


@gpu
@pytest.mark.parametrize("out_dtype", ["f32", "bf16"])
def test_gpu_sum_rows_is_the_in_order_sum(out_dtype):
    """The PTX body adds the rows in order with add.rn.f32: bit-identical to numpy (320 columns: 2 per thread)."""
    rng = np.random.default_rng()
    tile = rng.standard_normal((12, 320)).astype(np.float32)
    tile[:4, :8] = ORDER_SENSITIVE.reshape(4, 1)
    tile[4:, :8] = 0.0
    with vdir.compile(family_program("sum_rows", [(12, 320)], ["f32"], (1, 320), out_dtype), backend="cuda") as exe:
        out = exe(tile, np.zeros((1, 320), DTYPES[out_dtype]))  # the assembled output is an inout buffer
    assert np.array_equal(out.view(np.uint8), round_to(sum_rows_f32(tile), out_dtype).view(np.uint8))
    assert (out[0, :8].astype(np.float32) == 1.0).all()


@gpu
@pytest.mark.parametrize("in_dtype, out_dtype", [("f32", "f32"), ("f32", "bf16"), ("bf16", "f32")])
def test_gpu_add_f32_forms_match_numpy(in_dtype, out_dtype):
    """add on f32 operands and/or to an f32 result: one add.rn.f32 and one rounding, as numpy."""
    rng = np.random.default_rng()
    lhs, rhs = (rng.standard_normal((3, 320)).astype(bfloat16 if in_dtype == "bf16" else np.float32)
                for _ in range(2))
    with vdir.compile(family_program("add", [(3, 320)] * 2, [in_dtype] * 2, (3, 320), out_dtype),
                      backend="cuda") as exe:
        out = exe(lhs, rhs, np.zeros((3, 320), DTYPES[out_dtype]))  # the assembled output is an inout buffer
    expected = FAMILIES["add"].run([lhs, rhs], {}, out_dtype)
    assert np.array_equal(out.view(np.uint8), expected.view(np.uint8))


@gpu
def test_gpu_split_k_is_accurate_and_deterministic(module):
    """Within tolerance of float64, the combine in order, and three runs bit-identical."""
    inputs = split_k_inputs(2)
    with vdir.compile(module, backend="cuda") as exe:
        runs = [exe(**inputs) for _ in range(3)]
    assert_within_tolerance(runs[0], inputs)
    assert_combine_is_in_order(runs[0])
    assert all(bits(r) == bits(runs[0]) for r in runs[1:])
