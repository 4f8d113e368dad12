"""The decode-attention families ``attn_block``, ``attn_self`` and ``attn_merge``.

Against a float64 numpy reference of softmax attention (fresh random inputs
each run): one block's partial state, masked rows, a fully masked block, a
merge of several blocks that must equal attention over their
concatenation, and the same with the new row's state (``attn_self``) merged
last. On the simulator (the families' numpy semantics, bit for bit
against the reference evaluator) and, marked ``gpu``, on the GPU (skipped
without one). The PTX bodies assemble for sm_90a without spills.

Tolerances: a state's ``m`` within ``1e-5 * (1 + |m|)``, its ``l`` and ``o``
within ``1e-5`` relative to their scale (f32 arithmetic over at most 128
terms); a merged bf16 output within one bf16 rounding (``2^-8``) of the
largest reference value plus ``2^-8`` of its own. The GPU computes ``exp``
with ``ex2.approx`` and sums in another order: its states are checked with
``2e-5`` in place of ``1e-5``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ml_dtypes import bfloat16
from test_ptx_lowering import assemble

import vdir
from vdir.device_runtime.sim import simulate
from vdir.families import FAMILIES, ComputeSignature, TileSig
from vdir.families.attention import STATE_EXTRA
from vdir.families.core import FamilyError
from vdir.frontend import ProgramBuilder
from vdir.lowering import lower_to_ptx
from vdir.lowering.options import MAX_COMPUTE_WARPS
from vdir.testing.assembler import family_program
from vdir.testing.gpu import gpu

BLOCK, MERGE, SELF = FAMILIES["attn_block"], FAMILIES["attn_merge"], FAMILIES["attn_self"]
BF16_ULP = 2.0 ** -8


def attention_f64(q, k, v, bias, scale):
    """softmax(scale * q k^T + bias) v in float64: the reference (zeros for a fully masked row)."""
    s = scale * (q.astype(np.float64) @ k.astype(np.float64).T) + bias.astype(np.float64)
    out = np.zeros((q.shape[0], v.shape[1]))
    for g in range(q.shape[0]):
        if np.all(np.isneginf(s[g])):
            continue
        p = np.exp(s[g] - s[g].max())
        out[g] = (p / p.sum()) @ v.astype(np.float64)
    return out


def state_f64(q, k, v, bias, scale):
    """The partial state's (o, m, l) in float64."""
    s = scale * (q.astype(np.float64) @ k.astype(np.float64).T) + bias.astype(np.float64)
    m = s.max(axis=1)
    p = np.exp(s - np.where(np.isneginf(m), 0.0, m)[:, None])
    return p @ v.astype(np.float64), m, p.sum(axis=1)


def random_block(rng, groups, dim, rows, masked=()):
    """q, k, v (bf16) and the bias row (f32: -inf at ``masked``, else 0)."""
    q = rng.standard_normal((groups, dim)).astype(bfloat16)
    k = rng.standard_normal((rows, dim)).astype(bfloat16)
    v = rng.standard_normal((rows, dim)).astype(bfloat16)
    bias = np.zeros((1, rows), np.float32)
    bias[0, list(masked)] = -np.inf
    return q, k, v, bias


def block_states(q, k, v, bias, rows, scale):
    """attn_block's states over each ``rows``-row block of ``k``, ``v`` and ``bias``, stacked in order."""
    return np.concatenate([
        BLOCK.run([q, k[s:s + rows], v[s:s + rows], bias[:, s:s + rows]], {"scale": scale}, "f32")
        for s in range(0, k.shape[0], rows)
    ])


def check_state(state, q, k, v, bias, scale, rel=1e-5):
    """``state`` (G x (D+4) f32) against the float64 partial state."""
    dim = q.shape[1]
    o, m, total = state_f64(q, k, v, bias, scale)
    assert not np.isnan(state).any()
    assert np.array_equal(state[:, dim + 2:], np.zeros((q.shape[0], 2), np.float32))
    got_m = state[:, dim].astype(np.float64)
    finite = np.isfinite(m)
    assert np.array_equal(np.isneginf(got_m), ~finite)
    assert np.all(np.abs(got_m[finite] - m[finite]) <= rel * (1 + np.abs(m[finite])))
    assert np.all(np.abs(state[:, dim + 1] - total) <= rel * np.maximum(total, 1))
    assert np.all(np.abs(state[:, :dim] - o) <= rel * (np.abs(o).max() + 1) * 4)
    assert np.all(state[~finite, dim + 1] == 0) and np.all(state[~finite, :dim] == 0)


def check_output(out, want):
    """A bf16 attention output against the float64 reference (module docstring tolerance)."""
    out = np.asarray(out, np.float64)
    assert np.all(np.isfinite(out))
    tol = BF16_ULP * (np.abs(want).max() + np.abs(want)) + 1e-6
    assert np.all(np.abs(out - want) <= tol), float(np.abs(out - want).max())


# ---------------------------------------------------------------------------
# Numpy semantics
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("groups", "dim", "rows"), [(1, 64, 8), (4, 128, 64), (16, 128, 128), (8, 64, 120)])
def test_block_state_matches_float64(groups, dim, rows):
    rng = np.random.default_rng()
    masked = rng.choice(rows, size=rows // 4, replace=False)
    q, k, v, bias = random_block(rng, groups, dim, rows, masked)
    scale = 1 / math.sqrt(dim)
    state = BLOCK.run([q, k, v, bias], {"scale": scale}, "f32")
    assert state.shape == (groups, dim + STATE_EXTRA) and state.dtype == np.float32
    check_state(state, q, k, v, bias, scale)


def test_fully_masked_block_is_an_empty_state():
    rng = np.random.default_rng()
    q, k, v, bias = random_block(rng, 4, 64, 16, masked=range(16))
    state = BLOCK.run([q, k, v, bias], {"scale": 0.125}, "f32")
    assert np.all(np.isneginf(state[:, 64])) and np.all(state[:, 65] == 0) and np.all(state[:, :64] == 0)
    assert not np.isnan(state).any()


@pytest.mark.parametrize(("groups", "dim", "rows", "blocks"), [(4, 128, 64, 4), (2, 64, 32, 3), (1, 64, 128, 1)])
def test_merge_of_blocks_is_attention_over_their_concatenation(groups, dim, rows, blocks):
    rng = np.random.default_rng()
    masked = rng.choice(rows * blocks, size=rows * blocks // 3, replace=False)
    q, k, v, bias = random_block(rng, groups, dim, rows * blocks, masked)
    scale = 1 / math.sqrt(dim)
    states = block_states(q, k, v, bias, rows, scale)
    out = MERGE.run([states, np.zeros((1, blocks), np.float32)], {"groups": groups}, "bf16")
    assert out.shape == (groups, dim) and out.dtype == bfloat16
    check_output(out, attention_f64(q, k, v, bias, scale))


def test_merge_skips_masked_states_and_empty_blocks():
    """A masked state does not count; a fully masked block (m = -inf) adds nothing; none used -> zeros."""
    rng = np.random.default_rng()
    groups, dim, rows = 2, 64, 16
    q, k, v, bias = random_block(rng, groups, dim, 3 * rows, masked=range(rows, 2 * rows))
    scale = 0.125
    states = block_states(q, k, v, bias, rows, scale)
    params = {"groups": groups}
    used = MERGE.run([states, np.zeros((1, 3), np.float32)], params, "bf16")
    check_output(used, attention_f64(q, k, v, bias, scale))
    skip_last = MERGE.run([states, np.array([[0, 0, -np.inf]], np.float32)], params, "bf16")
    check_output(skip_last, attention_f64(q, k[:rows], v[:rows], bias[:, :rows], scale))
    for mask in ([[-np.inf] * 3], [[-np.inf, 0, -np.inf]]):
        none = MERGE.run([states, np.array(mask, np.float32)], params, "bf16")
        assert np.array_equal(none.astype(np.float32), np.zeros((groups, dim), np.float32))


@pytest.mark.parametrize(("groups", "dim"), [(1, 64), (4, 128), (16, 64)])
def test_self_state_is_a_block_of_its_one_row(groups, dim):
    """attn_self's state: m the scaled score of the one row (as float64 within f32 rounding), l exactly 1,
    o exactly v, the padding zeros."""
    rng = np.random.default_rng()
    q, k, v, _ = random_block(rng, groups, dim, 1)
    scale = 1 / math.sqrt(dim)
    state = SELF.run([q, k, v], {"scale": scale}, "f32")
    assert state.shape == (groups, dim + STATE_EXTRA) and state.dtype == np.float32
    check_state(state, q, k, v, np.zeros((1, 1), np.float32), scale)
    assert np.all(state[:, dim + 1] == 1) and np.array_equal(state[:, :dim], v.astype(np.float32).repeat(groups, 0))


def self_case(rng, groups, dim, rows, blocks):
    """q, cached k and v over ``blocks`` blocks (a quarter of the rows masked), the new row's k and v, the
    block states, the self state, and the float64 attention over the cache and the new row."""
    masked = rng.choice(rows * blocks, size=rows * blocks // 4, replace=False)
    q, k, v, bias = random_block(rng, groups, dim, rows * blocks, masked)
    k_new, v_new = (rng.standard_normal((1, dim)).astype(bfloat16) for _ in range(2))
    scale = 1 / math.sqrt(dim)
    states = block_states(q, k, v, bias, rows, scale)
    own = SELF.run([q, k_new, v_new], {"scale": scale}, "f32")
    want = attention_f64(q, np.concatenate([k, k_new]), np.concatenate([v, v_new]),
                         np.concatenate([bias, np.zeros((1, 1), np.float32)], axis=1), scale)
    return (q, k, v, bias, k_new, v_new), states, own, want


@pytest.mark.parametrize(("groups", "dim", "rows", "blocks"), [(4, 64, 32, 3), (2, 128, 128, 1)])
def test_merge_with_the_self_state_is_attention_over_the_cache_and_the_new_row(groups, dim, rows, blocks):
    _, states, own, want = self_case(np.random.default_rng(), groups, dim, rows, blocks)
    out = MERGE.run([states, np.zeros((1, blocks), np.float32), own], {"groups": groups}, "bf16")
    check_output(out, want)
    # every block masked (position 0): the new row alone, softmax of one score is 1, the output is v
    alone = MERGE.run([states, np.full((1, blocks), -np.inf, np.float32), own], {"groups": groups}, "bf16")
    assert np.array_equal(alone.view(np.uint16), own[:, :dim].astype(bfloat16).view(np.uint16))


@pytest.mark.parametrize(("family", "ins", "params", "message"), [
    ("attn_block", [((4, 96), "bf16"), ((8, 96), "bf16"), ((8, 96), "bf16"), ((1, 8), "f32")], {"scale": 1.0},
     "head dimension 96 .* must be one of 64, 128"),
    ("attn_block", [((17, 64), "bf16"), ((8, 64), "bf16"), ((8, 64), "bf16"), ((1, 8), "f32")], {"scale": 1.0},
     "17 query heads .* at most 16"),
    ("attn_block", [((4, 64), "bf16"), ((12, 64), "bf16"), ((12, 64), "bf16"), ((1, 12), "f32")], {"scale": 1.0},
     "12 cached rows .* multiple of 8 up to 128"),
    ("attn_block", [((4, 64), "bf16"), ((136, 64), "bf16"), ((136, 64), "bf16"), ((1, 136), "f32")],
     {"scale": 1.0}, "136 cached rows"),
    ("attn_block", [((4, 64), "bf16"), ((8, 64), "bf16"), ((8, 64), "bf16"), ((1, 8), "bf16")], {"scale": 1.0},
     "bias must be f32"),
    ("attn_merge", [((12, 68), "f32"), ((1, 3), "f32")], {"groups": 5}, "12 state rows are not whole states"),
    ("attn_merge", [((12, 68), "f32"), ((1, 4), "f32")], {"groups": 4}, r"mask must be 1x3"),
    ("attn_merge", [((12, 68), "f32"), ((1, 3), "f32")], {"groups": 0}, "'groups' = 0 is outside its range 1 to 16"),
    ("attn_merge", [((12, 68), "f32"), ((1, 3), "f32"), ((3, 68), "f32")], {"groups": 4},
     r"self must be one state of 4x68 like the stacked ones, got 3x68"),
    ("attn_merge", [((12, 68), "f32"), ((1, 3), "f32"), ((4, 68), "bf16")], {"groups": 4}, "self must be f32"),
    ("attn_self", [((4, 64), "bf16"), ((2, 64), "bf16"), ((1, 64), "bf16")], {"scale": 1.0},
     "k must be the one row 1x64, got 2x64"),
    ("attn_self", [((4, 64), "bf16"), ((1, 64), "bf16"), ((1, 128), "bf16")], {"scale": 1.0},
     "v must be the one row 1x64"),
    ("attn_self", [((4, 96), "bf16"), ((1, 96), "bf16"), ((1, 96), "bf16")], {"scale": 1.0},
     "head dimension 96"),
])
def test_signature_errors_name_the_family_and_the_value(family, ins, params, message):
    with pytest.raises(FamilyError, match=f"family '{family}'.*{message}"):
        FAMILIES[family].check([TileSig(s, d) for s, d in ins], params, None)


def test_words_round_trip():
    for family, ins, params in [
        (BLOCK, [((4, 128), "bf16"), ((64, 128), "bf16"), ((64, 128), "bf16"), ((1, 64), "f32")], {"scale": 0.125}),
        (MERGE, [((16, 132), "f32"), ((1, 4), "f32")], {"groups": 4}),
        (MERGE, [((16, 132), "f32"), ((1, 4), "f32")], {"groups": 4, "flat": 1}),
        (MERGE, [((16, 132), "f32"), ((1, 4), "f32"), ((4, 132), "f32")], {"groups": 4, "flat": 1}),
        (MERGE, [((16, 68), "f32"), ((1, 4), "f32"), ((4, 68), "f32")], {"groups": 4}),
        (SELF, [((8, 64), "bf16"), ((1, 64), "bf16"), ((1, 64), "bf16")], {"scale": 0.125}),
    ]:
        sigs = [TileSig(s, d) for s, d in ins]
        out = family.check(sigs, params, None)
        back = family.decode_operands(family.encode_params(ComputeSignature(tuple(sigs), out, params)))
        # the decoded parameters are complete: a left-out one comes back as its default
        assert back.inputs == tuple(sigs) and back.result == out and back.params == {**family.param_defaults,
                                                                                     **params}


def test_flat_merge_is_the_same_values_in_one_row():
    rng = np.random.default_rng(7)
    groups, dim, count = 4, 64, 3
    states = rng.standard_normal((count * groups, dim + 4)).astype(np.float32)
    states[:, dim] = rng.standard_normal(count * groups).astype(np.float32)  # m
    states[:, dim + 1] = rng.uniform(0.5, 2.0, count * groups).astype(np.float32)  # l
    mask = np.zeros((1, count), np.float32)
    square = MERGE.run([states, mask], {"groups": groups}, "bf16")
    flat = MERGE.run([states, mask], {"groups": groups, "flat": 1}, "bf16")
    sig = MERGE.check([TileSig(states.shape, "f32"), TileSig(mask.shape, "f32")], {"groups": groups, "flat": 1}, None)
    assert square.shape == (groups, dim) and flat.shape == sig.shape == (1, groups * dim)
    assert np.array_equal(flat.view(np.uint16), square.reshape(1, -1).view(np.uint16))


# ---------------------------------------------------------------------------
# Programs: the simulator, the GPU, the PTX
# ---------------------------------------------------------------------------

BLOCK_CASES = {
    # name: (G, D, B, masked rows)
    "g1_d64_b8": (1, 64, 8, ()),
    "g4_d128_b64_masked": (4, 128, 64, (0, 5, 63)),
    "g16_d128_b128": (16, 128, 128, (7,)),
    "g8_d64_b120_masked": (8, 64, 120, tuple(range(100, 120))),
    "g3_d64_b32_all_masked": (3, 64, 32, tuple(range(32))),
}


def block_program(groups, dim, rows):
    """Load q, k, v and the bias, run attn_block, store the states."""
    b = ProgramBuilder("attn_block_alone")
    bufs = [b.buffer("q", (groups, dim)), b.buffer("k", (rows, dim)), b.buffer("v", (rows, dim)),
            b.buffer("bias", (1, rows), "f32")]
    out = b.buffer("states", (groups, dim + STATE_EXTRA), "f32")
    tiles = [b.load(buf, (0, 0), shape, name=f"t{i}")
             for i, (buf, shape) in enumerate(zip(bufs, [(groups, dim), (rows, dim), (rows, dim), (1, rows)],
                                                  strict=True))]
    st = b.compute("attn_block", tiles, params={"scale": 1 / math.sqrt(dim)}, name="st")
    b.store(st, out, (0, 0))
    return b.finish()


def split_context_program(groups, dim, rows, blocks):
    """The context split in ``blocks`` blocks (one attn_block each, states stored), then one ordered merge."""
    b = ProgramBuilder("attn_split")
    q, k, v = b.buffer("q", (groups, dim)), b.buffer("k", (rows * blocks, dim)), b.buffer("v", (rows * blocks, dim))
    bias, mask = b.buffer("bias", (1, rows * blocks), "f32"), b.buffer("mask", (1, blocks), "f32")
    states = b.buffer("states", (groups * blocks, dim + STATE_EXTRA), "f32")
    out = b.buffer("out", (groups, dim))
    for s in range(blocks):
        tiles = [b.load(q, (0, 0), (groups, dim), name=f"q{s}"), b.load(k, (s * rows, 0), (rows, dim), name=f"k{s}"),
                 b.load(v, (s * rows, 0), (rows, dim), name=f"v{s}"),
                 b.load(bias, (0, s * rows), (1, rows), name=f"b{s}")]
        st = b.compute("attn_block", tiles, params={"scale": 1 / math.sqrt(dim)}, name=f"st{s}")
        b.store(st, states, (s * groups, 0))
    all_states = b.load(states, (0, 0), (groups * blocks, dim + STATE_EXTRA), name="all")
    mt = b.load(mask, (0, 0), (1, blocks), name="mt")
    b.store(b.compute("attn_merge", [all_states, mt], params={"groups": groups}, name="ot"), out, (0, 0))
    return b.finish()


def self_program(groups, dim, rows, blocks):
    """The split-context program with the new row kept apart: blocks over the cache, ``attn_self`` over the new
    row (k_new, v_new), one merge of the stacked states and the self state."""
    b = ProgramBuilder("attn_split_self")
    q, k, v = b.buffer("q", (groups, dim)), b.buffer("k", (rows * blocks, dim)), b.buffer("v", (rows * blocks, dim))
    k_new, v_new = b.buffer("k_new", (1, dim)), b.buffer("v_new", (1, dim))
    bias, mask = b.buffer("bias", (1, rows * blocks), "f32"), b.buffer("mask", (1, blocks), "f32")
    states = b.buffer("states", (groups * blocks, dim + STATE_EXTRA), "f32")
    out = b.buffer("out", (groups, dim))
    scale = 1 / math.sqrt(dim)
    for s in range(blocks):
        tiles = [b.load(q, (0, 0), (groups, dim), name=f"q{s}"), b.load(k, (s * rows, 0), (rows, dim), name=f"k{s}"),
                 b.load(v, (s * rows, 0), (rows, dim), name=f"v{s}"),
                 b.load(bias, (0, s * rows), (1, rows), name=f"b{s}")]
        b.store(b.compute("attn_block", tiles, params={"scale": scale}, name=f"st{s}"), states, (s * groups, 0))
    own = b.compute("attn_self", [b.load(q, (0, 0), (groups, dim), name="qs"),
                                  b.load(k_new, (0, 0), (1, dim), name="kn"),
                                  b.load(v_new, (0, 0), (1, dim), name="vn")], params={"scale": scale}, name="own")
    all_states = b.load(states, (0, 0), (groups * blocks, dim + STATE_EXTRA), name="all")
    mt = b.load(mask, (0, 0), (1, blocks), name="mt")
    b.store(b.compute("attn_merge", [all_states, mt, own], params={"groups": groups}, name="ot"), out, (0, 0))
    return b.finish()


def run_self_case(backend, groups=4, dim=64, rows=64, blocks=4):
    """:func:`self_program` on fresh inputs, checked against float64 attention over the cache and the new row
    (on the simulator also bit for bit against the families' numpy semantics); returns the output."""
    (q, k, v, bias, k_new, v_new), states, own, want = self_case(np.random.default_rng(), groups, dim, rows, blocks)
    mask = np.zeros((1, blocks), np.float32)
    with vdir.compile(self_program(groups, dim, rows, blocks), backend=backend) as exe:
        got = exe(q=q, k=k, v=v, k_new=k_new, v_new=v_new, bias=bias, mask=mask)
    check_output(got["out"], want)
    if backend == "sim":
        exact = MERGE.run([states, mask, own], {"groups": groups}, "bf16")
        assert np.array_equal(got["out"].view(np.uint16), exact.view(np.uint16))
    return got["out"]


def run_block_case(backend, case, inputs=None, **options):
    """The one-block program of ``case`` on ``inputs`` (default: fresh random ones), checked; returns the states."""
    groups, dim, rows, masked = BLOCK_CASES[case]
    q, k, v, bias = inputs or random_block(np.random.default_rng(), groups, dim, rows, masked)
    with vdir.compile(block_program(groups, dim, rows), backend=backend, **options) as exe:
        got = exe(q=q, k=k, v=v, bias=bias)
    want = BLOCK.run([q, k, v, bias], {"scale": 1 / math.sqrt(dim)}, "f32")
    if backend == "sim":
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    check_state(got, q, k, v, bias, 1 / math.sqrt(dim), rel=2e-5)
    return got


def run_split_context(backend, groups=4, dim=128, rows=64, blocks=4, launches=1, **options):
    """The split-context program on fresh inputs (the last block masked out), launched ``launches`` times.

    Each launch's outputs are checked against float64 attention; returns them all.
    """
    rng = np.random.default_rng()
    masked = list(range(rows, 2 * rows)) + list(rng.choice(rows * blocks, size=rows // 2, replace=False))
    q, k, v, bias = random_block(rng, groups, dim, rows * blocks, masked)
    mask = np.zeros((1, blocks), np.float32)
    mask[0, -1] = -np.inf  # the last block lies past the position
    bias_used = bias.copy()
    bias_used[0, (blocks - 1) * rows:] = -np.inf
    want = attention_f64(q, k, v, bias_used, 1 / math.sqrt(dim))
    results = []
    with vdir.compile(split_context_program(groups, dim, rows, blocks), backend=backend, **options) as exe:
        for _ in range(launches):
            got = exe(q=q, k=k, v=v, bias=bias, mask=mask)
            check_output(got["out"], want)
            results.append(got)
    return results


@pytest.mark.parametrize("case", sorted(BLOCK_CASES))
def test_block_program_on_the_simulator(case):
    run_block_case("sim", case)


def test_split_context_on_the_simulator_equals_attention():
    (got,) = run_split_context("sim")
    assert np.all(np.isneginf(got["states"][4:8, 128]))  # the fully masked block: m = -inf, no NaN
    assert not np.isnan(got["states"]).any()


def test_self_state_program_on_the_simulator_equals_attention():
    run_self_case("sim")


def test_merge_program_on_the_simulator_matches_numpy_bit_for_bit():
    rng = np.random.default_rng()
    groups, dim, count = 4, 64, 5
    states = rng.standard_normal((groups * count, dim + STATE_EXTRA)).astype(np.float32)
    states[:, dim + 1] = rng.uniform(1, 4, groups * count)
    mask = np.array([[0, -np.inf, 0, 0, -np.inf]], np.float32)
    prog = family_program("attn_merge", [states.shape, mask.shape], ["f32", "f32"], (groups, dim), "bf16",
                          {"groups": groups})
    out = np.zeros((groups, dim), bfloat16)
    simulate(prog, [states, mask, out])
    want = MERGE.run([states, mask], {"groups": groups}, "bf16")
    assert np.array_equal(out.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("warps", [0, 1, 3, MAX_COMPUTE_WARPS])
def test_bodies_assemble(warps):
    """Both families (each head dimension) assemble for several compute-group sizes; no spills in the default one.

    (With one compute warp ptxas spills a few bytes around ``div.rn.f32``'s
    slow path, as it does for rmsnorm_rows.)
    """
    progs = [family_program("attn_block", [(4, d), (64, d), (64, d), (1, 64)], ["bf16"] * 3 + ["f32"],
                            (4, d + STATE_EXTRA), "f32", {"scale": 0.125}) for d in (64, 128)]
    progs.append(family_program("attn_merge", [(16, 132), (1, 4)], ["f32", "f32"], (4, 128), "bf16", {"groups": 4}))
    progs.append(family_program("attn_merge", [(16, 68), (1, 4), (4, 68)], ["f32"] * 3, (4, 64), "bf16",
                                {"groups": 4}))
    progs += [family_program("attn_self", [(4, d), (1, d), (1, d)], ["bf16"] * 3, (4, d + STATE_EXTRA), "f32",
                             {"scale": 0.125}) for d in (64, 128)]
    for prog in progs:
        info = assemble(lower_to_ptx(prog, "h200", {"compute_warps": warps}))
        if warps == 0:
            assert "spill" not in info or "0 bytes spill stores" in info


@gpu
@pytest.mark.parametrize("case", sorted(BLOCK_CASES))
def test_block_program_on_the_gpu(case):
    run_block_case("cuda", case)


@gpu
def test_block_on_the_gpu_is_the_same_bits_for_any_compute_group():
    """More heads than warps, fewer heads than warps: every reduction has one order, so the same states."""
    groups, dim, rows, masked = BLOCK_CASES["g16_d128_b128"]
    inputs = random_block(np.random.default_rng(), groups, dim, rows, masked)
    states = [run_block_case("cuda", "g16_d128_b128", inputs, options={"compute_warps": w})
              for w in (1, 5, 8, MAX_COMPUTE_WARPS)]
    for got in states[1:]:
        assert np.array_equal(got.view(np.uint32), states[0].view(np.uint32))


@gpu
@pytest.mark.parametrize(("groups", "dim", "rows", "blocks"), [(4, 64, 32, 4), (8, 128, 128, 8)])
def test_self_state_program_on_the_gpu_equals_attention(groups, dim, rows, blocks):
    """Blocks over the cache on several SMs, the new row's state on the merge's SM, one merge."""
    run_self_case("cuda", groups, dim, rows, blocks)


@gpu
def test_split_context_on_the_gpu_equals_attention_and_is_deterministic():
    """Blocks on several SMs, merged after a counter: attention within tolerance, the same bits every launch."""
    runs = run_split_context("cuda", launches=3)
    for got in runs[1:]:
        for name in ("states", "out"):
            assert np.array_equal(got[name].view(np.uint8), runs[0][name].view(np.uint8)), name
