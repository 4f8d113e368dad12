"""Reducing stores (``vdir.store ... reduce add``): the split-K gemv without a combine phase.

A reducing store adds its f32 tile into its region. The simulator adds in
the order it runs the stores; the GPU adds with ``cp.reduce.async.bulk``
(``red.global.add.f32`` where rows are not 16-byte aligned), whose order
across SMs is in general not fixed. The dependency analysis orders two
reducing stores to one region like any two writes (program order), so in
these programs the order is in fact program order on both.

Tolerance against a float64 numpy reference, with ``S = sum_k |W[i,k] x[k]|``:
``|y - y64| <= 2^-13 * S``, the a-priori bound of f32 sums of about 1,000
terms added in any order (the same as ``test_split_k``'s). f32 sums in any
order also agree with each other to ``rtol = 1e-5`` here (checked against
the in-order sum of the partials). GPU tests carry the marker ``gpu`` and are
skipped without the cuda backend.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir import isa
from vdir.analysis.graph import build_graph
from vdir.compiler import compile_module
from vdir.device_runtime.sim import SimProgramError, decode_program
from vdir.dialects.vdir import ReduceKind
from vdir.families import FAMILIES
from vdir.frontend.builder import ProgramBuilder
from vdir.frontend.examples import build_split_k_gemv
from vdir.target import get_target
from vdir.testing.gpu import gpu
from vdir.testing.reference import evaluate

#: the example's shape: M x K weights, K in SPLITS chunks of KC, row blocks of ROWS
M, K, SPLITS, ROWS = 1024, 8192, 8, 32
KC = K // SPLITS
#: |y - y64| <= SUM_TOL * S (module docstring); the in-order sum within RTOL
SUM_TOL, RTOL = 2.0**-13, 1e-5


def inputs(seed: int) -> dict[str, np.ndarray]:
    """Random bf16 weights of scale 1/sqrt(K), a unit-scale x, and y zeroed (an inout buffer)."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((M, K)) / np.sqrt(K)).astype(bfloat16)
    x = rng.standard_normal((1, K)).astype(bfloat16)
    return {"w": w, "x": x, "y": np.zeros((1, M), np.float32)}


def in_order_sum(given: dict[str, np.ndarray]) -> np.ndarray:
    """y0 + p0 + p1 + ... + p7 in f32, in that order, each partial the gemv family's own f32 result."""
    y = given["y"].astype(np.float32).copy()
    gemv = FAMILIES["gemv"]
    for s in range(SPLITS):
        xs = given["x"][:, s * KC : (s + 1) * KC]
        for r in range(0, M, ROWS):
            p = gemv.run([given["w"][r : r + ROWS, s * KC : (s + 1) * KC], xs], {}, "f32")
            y[:, r : r + ROWS] += p
    return y


def assert_within_tolerance(y: np.ndarray, given: dict[str, np.ndarray]) -> None:
    """y against float64 numpy (module docstring's bound) and against the in-order f32 sum (RTOL)."""
    w, x = given["w"].astype(np.float64), given["x"].astype(np.float64)
    y64 = given["y"].astype(np.float64).reshape(-1) + (w @ x.T).reshape(-1)
    s = (np.abs(w) @ np.abs(x).T).reshape(-1)
    err = np.abs(y.astype(np.float64).reshape(-1) - y64)
    assert (err <= SUM_TOL * s).all(), f"y off by up to {(err / s).max():.3g} * S"
    np.testing.assert_allclose(y, in_order_sum(given), rtol=RTOL, atol=RTOL * float(s.max()))


@pytest.fixture(scope="module")
def module():
    return build_split_k_gemv(reduce=True)


# ---------------------------------------------------------------------------
# Compiling
# ---------------------------------------------------------------------------


def test_reducing_stores_are_encoded_with_the_flag(module):
    """Every store of the reduce form has REDUCE_ADD in word 31, no tensor map, and y is inout."""
    program = compile_module(module)
    instrs = program.executed_instrs()
    stores = instrs[isa.OPCODE.column(instrs) == isa.OP_STORE]
    assert len(stores) == SPLITS * M // ROWS
    assert (isa.REDUCE.column(stores) == isa.REDUCE_ADD).all()
    assert (isa.TMAP.column(stores) == 0).all()
    assert (isa.REDUCE.column(instrs[isa.OPCODE.column(instrs) != isa.OP_STORE]) == 0).all()
    assert [b.role for b in program.buffers] == ["in", "in", "inout"]
    assert "reduce add" in isa.disassemble(program)


def test_plain_programs_have_no_reduction_word():
    """The two-phase split-K gemv leaves word 31 zero everywhere (encodings of plain programs are unchanged)."""
    instrs = compile_module(build_split_k_gemv()).executed_instrs()
    assert not isa.REDUCE.column(instrs).any()


def test_reducing_stores_to_one_region_are_ordered(module):
    """The dependency analysis orders them like writes: each store to a row block waits for the one
    before it in program order (and none for a later one)."""
    graph = build_graph(module)
    stores = [n for n in graph.nodes if n.kind == "store"]
    assert all(n.reduce is ReduceKind.ADD for n in stores)
    by_region: dict[int, list] = {}
    for n in stores:
        by_region.setdefault(n.col, []).append(n)
    for chain in by_region.values():
        assert len(chain) == SPLITS
        for earlier, later in zip(chain, chain[1:], strict=False):
            assert any(earlier in group for group in later.deps), f"{later.name} does not wait for {earlier.name}"
        assert not any(s in group for s in chain for group in chain[0].deps)


def test_builder_refuses_a_reduction_it_cannot_do():
    b = ProgramBuilder("bad")
    a = b.buffer("a", (1, 8), "bf16")
    y = b.buffer("y", (1, 8), "bf16")
    t = b.load(a, (0, 0), (1, 8))
    with pytest.raises(ValueError, match="needs an f32 or i64 tile, got bf16"):
        b.store(t, y, (0, 0), reduce="add")
    with pytest.raises(ValueError, match="unknown reduction 'mul'"):
        b.store(t, y, (0, 0), reduce="mul")


# ---------------------------------------------------------------------------
# Forged instructions
# ---------------------------------------------------------------------------


def _forge(program: isa.EncodedProgram, opcode: int, value: int, buffer: int | None = None) -> isa.EncodedProgram:
    """A copy of ``program`` whose first record of ``opcode`` (naming ``buffer``, if given) has REDUCE = ``value``."""
    instrs = program.instrs.reshape(-1, isa.INSTR_WORDS).copy()
    match = isa.OPCODE.column(instrs) == opcode
    if buffer is not None:
        match &= isa.BUFFER.column(instrs) == buffer
    isa.REDUCE.set(instrs[int(np.nonzero(match)[0][0])], value)
    return dataclasses.replace(program, instrs=instrs)


@pytest.mark.parametrize("opcode, value, message", [
    (isa.OP_LOAD, isa.REDUCE_ADD, "a load instruction has reduction 1; only a store may reduce"),
    (isa.OP_COMPUTE, isa.REDUCE_ADD, "a compute instruction has reduction 1; only a store may reduce"),
    (isa.OP_STORE, 7, "unknown reduction 7"),
])
def test_a_forged_reduction_is_refused(module, opcode, value, message):
    forged = _forge(compile_module(module, num_sms=4), opcode, value)
    with pytest.raises(ValueError, match=message):
        isa.check_untrusted(forged)
    with pytest.raises(SimProgramError, match=message):
        decode_program(forged, get_target(forged.target))


def test_a_forged_reduction_of_a_bf16_region_is_refused():
    """The two-phase form's stores to its bf16 y may not reduce."""
    program = compile_module(build_split_k_gemv(), num_sms=4)
    y = [b.name for b in program.buffers].index("y")
    forged = _forge(program, isa.OP_STORE, isa.REDUCE_ADD, buffer=y)
    message = "'reduce add' store to 'y', a bf16 buffer [(]it combines f32 only[)]"
    with pytest.raises(ValueError, match=message):
        isa.check_untrusted(forged)
    with pytest.raises(SimProgramError, match=message):
        decode_program(forged, get_target(forged.target))


# ---------------------------------------------------------------------------
# The simulator
# ---------------------------------------------------------------------------


def test_split_k_reduce_matches_numpy_on_the_simulator(module):
    given = inputs(0)
    with vdir.compile(module, backend="sim") as exe:
        y = exe(**given)
    assert_within_tolerance(y, given)
    # the simulator adds in the order it runs the stores, here program order: the in-order sum exactly
    assert np.array_equal(y.view(np.uint32), in_order_sum(given).view(np.uint32))


def test_split_k_reduce_adds_into_what_y_holds(module):
    """y is inout: the partials are added to the values passed in."""
    given = inputs(1)
    given["y"] = np.random.default_rng(7).standard_normal((1, M)).astype(np.float32)
    for num_sms, seed in ((4, 0), (132, 1)):
        with vdir.compile(compile_module(module, num_sms=num_sms), backend="sim", seed=seed) as exe:
            y = exe(**given)
        assert_within_tolerance(y, given)


def test_reference_evaluator_adds(module):
    given = inputs(2)
    y = evaluate(module, given)["y"]
    assert np.array_equal(y.view(np.uint32), in_order_sum(given).view(np.uint32))


def unaligned_module():
    """Reducing stores to rows of 20 bytes: the second row's region is not 16-byte aligned."""
    b = ProgramBuilder("unaligned")
    x = b.buffer("x", (2, 4), "f32")
    y = b.buffer("y", (2, 5), "f32")
    for r in range(2):
        t = b.load(x, (r, 0), (1, 4), name=f"t{r}")
        b.store(t, y, (1 - r, 0), reduce="add", name=f"s{r}")
    return b.finish()


def unaligned_expected(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = y.copy()
    out[1, :4] += x[0]
    out[0, :4] += x[1]
    return out


def test_unaligned_reducing_stores_on_the_simulator():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((2, 4)).astype(np.float32), rng.standard_normal((2, 5)).astype(np.float32)
    with vdir.compile(unaligned_module(), backend="sim") as exe:
        out = exe(x=x, y=y)
    assert np.array_equal(out, unaligned_expected(x, y))


# ---------------------------------------------------------------------------
# The GPU
# ---------------------------------------------------------------------------


@gpu
def test_gpu_split_k_reduce_matches_numpy(module):
    """cp.reduce.async.bulk on 132 SMs: within the module docstring's tolerance, three runs."""
    given = inputs(4)
    with vdir.compile(module, backend="cuda") as exe:
        for _ in range(3):
            y = exe(**given)
            assert_within_tolerance(y, given)


@gpu
def test_gpu_unaligned_reducing_stores():
    """The red.global.add.f32 fallback (rows of 20 bytes): one add per element, exact here."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((2, 4)).astype(np.float32), rng.standard_normal((2, 5)).astype(np.float32)
    with vdir.compile(unaligned_module(), backend="cuda") as exe:
        out = exe(x=x, y=y)
    np.testing.assert_allclose(out, unaligned_expected(x, y), rtol=RTOL, atol=0)
