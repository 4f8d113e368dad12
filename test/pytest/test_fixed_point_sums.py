"""Fixed-point sums across SMs: i64 reducing stores whose adds commute, and the split-K MLP stack.

``vecmat`` can give its partial row as i64 fixed point (the value times 2^32,
rounded); a reducing store adds it into an i64 region with integer adds,
which are exact, so the sum has the same bits whatever order the SMs' stores
land in. The dependency analysis therefore leaves such stores unordered among
themselves, and the simulator's race check knows they commute (but still
holds every later read to all of them). ``fixed_add`` reads the sum back.

The split-K MLP stack is checked against a float64 numpy model of the layers
with the bf16 tolerance of the plain stack's tests (``TOL`` of the largest
magnitude of each residual row), and its bits against themselves: every
placement (SM count) and every interleaving (simulator seed) gives the same
result, the determinism the fixed point buys. GPU tests carry the marker
``gpu`` and are skipped without the cuda backend.
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
from vdir.device_runtime.sim import SimRaceError
from vdir.families import FAMILIES, FamilyError, from_fixed, to_fixed
from vdir.families.builtin import vecmat_f32
from vdir.families.core import ComputeSignature, TileSig
from vdir.frontend.builder import ProgramBuilder
from vdir.frontend.examples import build_split_k_mlp_stack
from vdir.frontend.layers import split_k_rows
from vdir.testing.gpu import gpu

#: |h - h64| <= TOL * max|h64| per residual row (bf16 activations, as the plain stack's tests)
TOL = 2e-2


# ---------------------------------------------------------------------------
# The fixed-point numbers
# ---------------------------------------------------------------------------


def test_to_fixed_rounds_to_nearest_even_and_saturates():
    x = np.array([1.0, -1.5, 2.0**-33, 3 * 2.0**-33, 2.0**40, -(2.0**40), np.inf, -np.inf, np.nan], np.float32)
    want = [2**32, -3 * 2**31, 0, 2, 2**63 - 1, -(2**63), 2**63 - 1, -(2**63), 0]
    assert to_fixed(x).tolist() == want


def test_from_fixed_rounds_once_to_f32():
    fixed = np.array([2**32, -(2**31), 2**56 + 1, 1], np.int64)
    want = np.array([1.0, -0.5, 2.0**24, 2.0**-32], np.float32)  # 2^56 + 1 rounds to 2^56 in f32
    assert np.array_equal(from_fixed(fixed), want)


def test_fixed_point_round_trips_what_it_holds():
    rng = np.random.default_rng(0)
    x = (rng.integers(-(2**40), 2**40, 1000) * 2.0**-32).astype(np.float32)
    assert np.array_equal(from_fixed(to_fixed(x)), x)


def test_vecmat_gives_its_f32_result_in_fixed_point():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((1, 16)).astype(bfloat16), rng.standard_normal((16, 64)).astype(bfloat16)
    fixed = FAMILIES["vecmat"].run([x, w], {}, "i64")
    assert fixed.dtype == np.int64 and np.array_equal(fixed, to_fixed(vecmat_f32(x, w)))


def test_vecmat_fixed_point_result_encodes_and_decodes():
    fam = FAMILIES["vecmat"]
    ins = [TileSig((1, 16), "bf16"), TileSig((16, 64), "bf16"), TileSig((1, 64), "f32")]
    out = fam.check(ins, {}, TileSig((1, 64), "i64"))
    words = fam.encode_params(ComputeSignature(tuple(ins), out, {}))
    assert words.p2 == isa.VECMAT_HAS_ACC | isa.VECMAT_OUT_FIXED
    assert fam.decode_operands(words).result == TileSig((1, 64), "i64")


def test_fixed_add_and_zeros_families():
    rng = np.random.default_rng(2)
    total = rng.integers(-(2**40), 2**40, (2, 8))
    residual = rng.standard_normal((2, 8)).astype(bfloat16)
    y = FAMILIES["fixed_add"].run([total, residual], {}, "bf16")
    assert np.array_equal(y, (from_fixed(total) + residual.astype(np.float32)).astype(bfloat16))
    with pytest.raises(FamilyError, match="sum must be i64"):
        FAMILIES["fixed_add"].check([TileSig((1, 8), "f32"), TileSig((1, 8), "bf16")], {}, None)
    zeros = FAMILIES["zeros"]
    assert zeros.check([], {"rows": 2, "cols": 8}, TileSig((2, 8), "i64")) == TileSig((2, 8), "i64")
    assert not zeros.run([], {"rows": 2, "cols": 8}, "i64").any()
    with pytest.raises(FamilyError, match="'rows'"):
        zeros.check([], {"rows": 0, "cols": 8}, None)


# ---------------------------------------------------------------------------
# Commuting reducing stores
# ---------------------------------------------------------------------------


def summing_program(parts: int = 4, k: int = 32, n: int = 64):
    """``parts`` vecmats of the K chunks of x and w added, in fixed point, into a cleared i64 ``acc``,
    and ``y = acc + r`` (fixed_add)."""
    b = ProgramBuilder("fixed_sum")
    x, w = b.buffer("x", (1, parts * k)), b.buffer("w", (parts * k, n))
    acc = b.buffer("acc", (1, n), "i64", scratch=True)
    r, y = b.buffer("r", (1, n)), b.buffer("y", (1, n))
    b.store(b.compute("zeros", [], params={"rows": 1, "cols": n}, out_dtype="i64", name="zero"), acc, (0, 0),
            name="cleared")
    with b.repeat(0, parts, name="s") as s:
        kk = b.affine(s, scale=k, name="k")
        p = b.compute("vecmat", [b.load(x, (0, kk), (1, k), name="xs"), b.load(w, (kk, 0), (k, n), name="ws")],
                      out_dtype="i64", name="p")
        b.store(p, acc, (0, 0), reduce="add", name="added")
    total = b.compute("fixed_add", [b.load(acc, (0, 0), (1, n), name="total"), b.load(r, (0, 0), (1, n))])
    b.store(total, y, (0, 0), name="done")
    return b.finish()


def summing_inputs(parts: int = 4, k: int = 32, n: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((1, parts * k)).astype(bfloat16),
            "w": (rng.standard_normal((parts * k, n)) * 0.1).astype(bfloat16),
            "r": rng.standard_normal((1, n)).astype(bfloat16)}


def summing_expected(given: dict[str, np.ndarray], parts: int = 4, k: int = 32) -> np.ndarray:
    """The partials in fixed point, summed exactly, plus r: the bits every order gives."""
    total = sum(to_fixed(vecmat_f32(given["x"][:, s * k:(s + 1) * k], given["w"][s * k:(s + 1) * k]))
                for s in range(parts))
    return (from_fixed(total) + given["r"].astype(np.float32)).astype(bfloat16)


def test_i64_reducing_stores_are_left_unordered():
    """Each waits for the clearing store only; the load of the sum waits for all of them (and it)."""
    graph = build_graph(summing_program())
    adds = [n for n in graph.nodes if n.kind == "store" and n.reduce is not None]
    assert len(adds) == 4
    for node in adds:
        assert [[p.name for p in group] for group in node.deps] == [["store to @acc"]]
    load = next(n for n in graph.nodes if n.kind == "load" and n.name == "%total")
    clearing = next(n for n in graph.nodes if n.name == "store to @acc")
    assert {p.id for group in load.deps for p in group} == {n.id for n in adds} | {clearing.id}


@pytest.mark.parametrize("num_sms, seed", [(1, 0), (4, 1), (4, 2), (3, 5)])
def test_the_sum_is_the_same_bits_in_any_order(num_sms, seed):
    given = summing_inputs(seed=seed)
    with vdir.compile(compile_module(summing_program(), num_sms=num_sms), backend="sim", seed=seed) as exe:
        y = exe(**given)
    assert np.array_equal(np.asarray(y).view(np.uint16), summing_expected(given).view(np.uint16))


def test_the_race_check_holds_a_read_to_every_add():
    """With the sum's load waiting for one add fewer, the simulator names a race on the sum: the add it
    does not wait for is either recorded (the read misses it) or still to come (it adds under the read)."""
    program = compile_module(summing_program(), num_sms=4)
    instrs = program.instrs.reshape(-1, isa.INSTR_WORDS).copy()
    waits = np.nonzero(isa.WAIT_COUNT.column(instrs) == 4)[0]  # the counter the four adds release
    assert waits.size
    for row in waits:
        isa.WAIT_COUNT.set(instrs[row], 3)
    forged = dataclasses.replace(program, instrs=instrs)
    for seed in range(3):
        with pytest.raises(SimRaceError, match="race on buffer 'acc'"), \
                vdir.compile(forged, backend="sim", seed=seed) as exe:
            exe(**summing_inputs())


def test_an_f32_tile_is_not_added_into_an_i64_region():
    """An add's tile has its region's element type: the builder refuses an f32 tile into an i64 region."""
    b = ProgramBuilder("mixed")
    x = b.buffer("x", (1, 8), "f32")
    acc = b.buffer("acc", (1, 8), "i64")
    with pytest.raises(ValueError, match="tile"):
        b.store(b.load(x, (0, 0), (1, 8)), acc, (0, 0), reduce="add")


# ---------------------------------------------------------------------------
# The split-K MLP stack
# ---------------------------------------------------------------------------


def stack_inputs(layers: int, hidden: int, inter: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def bf(shape, scale):
        return (rng.standard_normal(shape) * scale).astype(bfloat16)

    hs = np.zeros((layers + 1, hidden), bfloat16)
    hs[0] = bf(hidden, 1.0)
    return {"hs": hs, "g": (1 + bf((layers, hidden), 0.1).astype(np.float32)).astype(bfloat16),
            "wg": bf((layers * inter, hidden), hidden**-0.5), "wu": bf((layers * inter, hidden), hidden**-0.5),
            "wdt": bf((layers * inter, hidden), inter**-0.5)}


def stack_reference(given: dict[str, np.ndarray], layers: int, inter: int, eps: float = 1e-5) -> np.ndarray:
    """The residual rows h_1 .. h_L in float64 (the down weights given transposed)."""
    f = {k: v.astype(np.float64) for k, v in given.items()}
    h, rows = f["hs"][0], []
    for layer in range(layers):
        w = slice(layer * inter, (layer + 1) * inter)
        xn = h / np.sqrt(np.mean(h * h) + eps) * f["g"][layer]
        gate, up = f["wg"][w] @ xn, f["wu"][w] @ xn
        h = h + f["wdt"][w].T @ (gate / (1 + np.exp(-gate)) * up)
        rows.append(h)
    return np.array(rows)


def assert_stack_close(hs: np.ndarray, given: dict[str, np.ndarray], layers: int, inter: int) -> None:
    want = stack_reference(given, layers, inter)
    for layer in range(layers):
        err = np.abs(hs[layer + 1].astype(np.float64) - want[layer]).max()
        assert err <= TOL * np.abs(want[layer]).max(), f"layer {layer}: |diff| {err:.3g}"
    assert np.array_equal(hs[0].view(np.uint16), given["hs"][0].view(np.uint16))


@pytest.mark.parametrize("layers, hidden, inter, group", [(2, 256, 512, None), (3, 256, 768, 5), (1, 128, 256, 1)])
def test_split_k_stack_matches_numpy_on_the_simulator(layers, hidden, inter, group):
    given = stack_inputs(layers, hidden, inter, seed=layers)
    module = build_split_k_mlp_stack(layers, hidden, inter, group=group)
    with vdir.compile(compile_module(module, num_sms=4), backend="sim") as exe:
        hs = exe(**given)
    assert_stack_close(np.asarray(hs), given, layers, inter)


def test_split_k_stack_bits_do_not_depend_on_placement_or_order():
    layers, hidden, inter = 2, 256, 512
    given = stack_inputs(layers, hidden, inter, seed=9)
    module = build_split_k_mlp_stack(layers, hidden, inter, group=4)
    results = []
    for num_sms, seed in ((2, 0), (5, 1), (8, 2)):
        with vdir.compile(compile_module(module, num_sms=num_sms), backend="sim", seed=seed) as exe:
            results.append(np.asarray(exe(**given)).view(np.uint16).copy())
    assert all(np.array_equal(results[0], r) for r in results[1:])


def test_split_k_stack_keeps_each_group_on_one_sm():
    """A group's activation tiles and its one reducing store share an SM: the activations never leave it
    (each SM runs four vecmats for every reducing store it makes)."""
    program = compile_module(build_split_k_mlp_stack(1, 256, 512, group=4), num_sms=8)
    vecmat = FAMILIES["vecmat"].opcode
    total = 0
    for sm in range(len(program.queues)):
        words = np.concatenate([program.executed_queue(sm, e) for e in range(len(program.queues[sm]))])
        adds = int((isa.REDUCE.column(words) != isa.REDUCE_NONE).sum())
        vecmats = int(((isa.OPCODE.column(words) == isa.OP_COMPUTE) & (isa.FAMILY.column(words) == vecmat)).sum())
        assert vecmats == 4 * adds, f"SM {sm}: {vecmats} vecmats, {adds} reducing stores"
        total += adds
    assert total == 512 // 16 // 4  # one reducing store a group


def test_split_k_stack_takes_tiles_that_fit_at_every_swept_shape():
    """The plain layer's tile rows, halved where two weight tiles would not fit beside the layer's rows
    (5120/13824: 4 rows of 40 KiB; at 8 rows, 80 KiB, the program does not compile)."""
    assert split_k_rows(2048, 8192, 16, 227 * 1024) == 16
    assert split_k_rows(4096, 14336, 8, 227 * 1024) == 8
    assert split_k_rows(5120, 13824, 8, 227 * 1024) == 4
    program = compile_module(build_split_k_mlp_stack(1, 5120, 13824), num_sms=132)
    assert program.smem_bytes <= 227 * 1024


def test_split_k_stack_refuses_a_bad_group():
    with pytest.raises(ValueError, match="group must be positive"):
        build_split_k_mlp_stack(1, 256, 512, group=0)


@gpu
def test_split_k_stack_on_the_gpu_is_deterministic_and_close():
    """Two launches on 132 SMs, and one placed on 100: the same bits (the accumulators are cleared each
    launch, a group's partial is computed the same way on any SM, and the sum does not depend on the order
    the adds land in), within tolerance of float64. (Not the simulator's bits: its gemv is numpy's.)"""
    layers, hidden, inter = 2, 2048, 8192
    given = stack_inputs(layers, hidden, inter, seed=11)
    module = build_split_k_mlp_stack(layers, hidden, inter)
    results = []
    for num_sms, launches in ((132, 2), (100, 1)):
        with vdir.compile(module, backend="cuda", num_sms=num_sms) as exe:
            results += [np.asarray(exe(**given)).copy() for _ in range(launches)]
    assert all(np.array_equal(results[0].view(np.uint16), r.view(np.uint16)) for r in results[1:])
    assert_stack_close(results[0], given, layers, inter)


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("code, message", [
    (isa.REDUCE_ADD, "'reduce add' store to 'acc', an i64 buffer [(]it combines f32 only[)]"),
    (9, "unknown reduction 9 [(]known: 1 add [(]f32[)], 2 add [(]i64[)][)]"),
])
def test_a_forged_reduction_code_is_refused(code, message):
    """The kernel adds f32 or 64-bit integers by the code: one that does not match its region is refused."""
    program = compile_module(summing_program(), num_sms=2)
    instrs = program.instrs.reshape(-1, isa.INSTR_WORDS).copy()
    adds = np.nonzero(isa.REDUCE.column(instrs) == isa.REDUCE_ADD_I64)[0]
    assert adds.size == 4
    isa.REDUCE.set(instrs[adds[0]], code)
    with pytest.raises(ValueError, match=message):
        isa.check_untrusted(dataclasses.replace(program, instrs=instrs))


def test_zeros_words_name_a_dtype_it_knows():
    words = FAMILIES["zeros"].encode_params(ComputeSignature((), TileSig((1, 8), "i64"), {"rows": 1, "cols": 8}))
    assert FAMILIES["zeros"].decode_operands(words).result == TileSig((1, 8), "i64")
    with pytest.raises(FamilyError, match="family 'zeros': dtype code 7 is not one of 0..3"):
        FAMILIES["zeros"].decode_operands(dataclasses.replace(words, p2=7))


def test_vdir_run_takes_integer_arrays_within_int64_for_an_i64_input(tmp_path):
    from vdir.isa import BufferInfo
    from vdir.tools.vdir_run import RunError, read_inputs

    buffers = [BufferInfo("acc", (1, 4), "i64", False)]
    path = tmp_path / "in.npz"
    np.savez(path, acc=np.array([[-(2**63), 2**63 - 1, -1, 0]], np.int64))
    assert read_inputs(str(path), buffers)["acc"].tolist() == [[-(2**63), 2**63 - 1, -1, 0]]
    np.savez(path, acc=np.array([[2**63, 0, 0, 0]], np.uint64))
    with pytest.raises(RunError, match="array 'acc' has values outside the int64 range"):
        read_inputs(str(path), buffers)
    np.savez(path, acc=np.zeros((1, 4), np.float32))
    with pytest.raises(RunError, match="expected an integer array for i64"):
        read_inputs(str(path), buffers)
