"""The argmax families: ``argmax_partial`` and ``argmax_final``, greedy decoding's two-phase argmax.

A row of logits is cut into slices; ``argmax_partial`` gives each slice's
``[best, base + index, 0, 0]`` and ``argmax_final`` picks the token id from
the stacked partials, in whatever order their rows come. The answer must be
``numpy.argmax`` of the whole row: the first NaN, else the first maximum
(``-0.0 == +0.0``), so ties across slices go to the lowest index.

Checked here: the numpy semantics against ``numpy.argmax`` (fresh random
rows, planted ties, NaN, infinities, N not a power of two, uneven slices,
shuffled partials) and as a hypothesis property; the parameter words; each
family alone on the simulator; ``examples/argmax.mlir`` (which
``build_argmax`` builds) on the simulator with logits chosen through a
one-hot hidden state (exact ties and NaN across SMs, several placements);
the PTX assembling; and, marked ``gpu`` (skipped
without the cuda backend), each family alone and the example on the GPU,
bit for bit against numpy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ml_dtypes import bfloat16
from test_ptx_lowering import assemble

import vdir
from vdir.device_runtime.sim import simulate
from vdir.families import DTYPES, FAMILIES, ComputeSignature, FamilyError, TileSig
from vdir.families.builtin import ARGMAX_INDEX_LIMIT, argmax_index_column
from vdir.frontend.examples import build_argmax
from vdir.lowering import lower_to_ptx
from vdir.testing.assembler import family_program
from vdir.testing.gpu import gpu
from vdir.tools.common import parse_module_file

PARTIAL, FINAL = FAMILIES["argmax_partial"], FAMILIES["argmax_final"]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "argmax.mlir"
#: the example's vocabulary, hidden size and slice starts (the last slice is shorter)
VOCAB, HIDDEN = 1000, 256
SLICE_STARTS = (0, 128, 256, 384, 512, 640, 768, 896)
#: values that make ties and the special cases likely when drawn from
SPECIALS = (-np.inf, -2.5, -1.0, -0.0, 0.0, 1.0, 2.5, np.inf, np.nan)





def partial(row: np.ndarray, base: int) -> np.ndarray:
    """argmax_partial's numpy semantics on a ``1 x N`` row."""
    return PARTIAL.run([row], {"base": base}, "f32")


def two_phase(row: np.ndarray, starts: list[int], order: np.ndarray) -> int:
    """The token id that argmax_final gives for the partials of the slices at ``starts``, stacked in ``order``."""
    bounds = [*starts, row.shape[1]]
    parts = [partial(row[:, lo:hi], lo) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    token = FINAL.run([np.concatenate([parts[i] for i in order])], {"stride": 0}, "i32")
    assert token.dtype == np.int32 and token.shape == (1, 4) and (token[0, 1:] == 0).all()
    return int(token[0, 0])


def planted_row(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    """A random ``1 x n`` row with about a tenth of its elements replaced by :data:`SPECIALS`."""
    row = rng.standard_normal(n).astype(np.float32)
    where = rng.random(n) < 0.1
    row[where] = rng.choice(np.array(SPECIALS, dtype=np.float32), size=int(where.sum()))
    return row.reshape(1, n).astype(DTYPES[dtype])


def uneven_starts(rng: np.random.Generator, n: int, slices: int) -> list[int]:
    """Slice starts: 0 and ``slices - 1`` distinct random cut points."""
    return [0, *sorted(rng.choice(np.arange(1, n), size=slices - 1, replace=False).tolist())]


# ---------------------------------------------------------------------------
# The numpy semantics
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_partial_is_numpy_argmax_of_its_slice(dtype):
    rng = np.random.default_rng()
    for specials in (False, True):
        row = planted_row(rng, 1000, dtype) if specials else rng.standard_normal((1, 1000)).astype(DTYPES[dtype])
        base = int(rng.integers(0, 100_000))
        out = partial(row, base)
        i = int(np.argmax(row.astype(np.float32)))
        assert out.dtype == np.float32 and out.shape == (1, 4)
        assert out[0, 1] == base + i and (out[0, 2:] == 0).all()
        assert out[0, 0].tobytes() == row.astype(np.float32)[0, i].tobytes()


@pytest.mark.parametrize("values, want", [
    ([1.0, 3.0, 3.0, 2.0], 1),  # the first of equal maxima
    ([-0.0, 0.0, -1.0], 0),  # -0.0 == +0.0: the first
    ([0.0, -0.0], 0),
    ([1.0, np.nan, 5.0, np.nan], 1),  # the first NaN beats every number
    ([np.inf, 2.0, np.nan], 2),
    ([-np.inf, -np.inf, -np.inf], 0),  # all -inf: the first
    ([-np.inf, -np.inf, -3.0], 2),
    ([-7.0], 0),
])
def test_partial_ties_nan_and_infinities(values, want):
    row = np.array([values], dtype=np.float32)
    assert partial(row, 40)[0, 1] == 40 + want == 40 + np.argmax(row)


def test_two_phase_is_numpy_argmax_with_ties_across_slices():
    """Equal maxima in two slices: the lower index wins even when its partial row comes last."""
    rng = np.random.default_rng()
    row = rng.standard_normal((1, 1000)).astype(np.float32)
    row[0, 300] = row[0, 700] = 9.0
    starts = [0, 250, 600, 900]
    assert two_phase(row, starts, np.array([3, 2, 1, 0])) == 300 == np.argmax(row)
    row[0, 650] = np.nan  # NaN beats 9.0 ...
    row[0, 950] = np.nan  # ... and the first NaN beats the later one
    assert two_phase(row, starts, np.array([3, 2, 1, 0])) == 650 == np.argmax(row)
    assert two_phase(np.full((1, 1000), -np.inf, np.float32), starts, np.array([2, 0, 3, 1])) == 0


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_two_phase_is_numpy_argmax_on_fresh_rows(dtype):
    rng = np.random.default_rng()
    for n in (1000, 1003, 4099):
        row = planted_row(rng, n, dtype)
        slices = int(rng.integers(1, 9))
        order = rng.permutation(slices)
        assert two_phase(row, uneven_starts(rng, n, slices) if slices > 1 else [0], order) == np.argmax(
            row.astype(np.float32))


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.sampled_from(SPECIALS), min_size=1, max_size=64), data=st.data())
def test_two_phase_is_numpy_argmax_property(values, data):
    """Any row, any cut into slices, any order of the partials: numpy.argmax of the whole row."""
    row = np.array([values], dtype=np.float32)
    n = row.shape[1]
    cuts = data.draw(st.sets(st.integers(1, n - 1), max_size=7)) if n > 1 else set()
    starts = [0, *sorted(cuts)]
    order = np.array(data.draw(st.permutations(range(len(starts)))))
    assert two_phase(row, starts, order) == np.argmax(row)


def test_final_reads_indices_as_the_gpu_converts_them():
    """Truncated toward zero, clamped to 0..2^24, a NaN read as 0 (cvt.rzi.u32.f32, then min)."""
    column = np.array([3.7, -1.0, np.nan, 2.0**30, np.inf, -np.inf, 12.0], np.float32)
    partials = np.zeros((7, 4), np.float32)
    partials[:, 1] = column
    assert argmax_index_column(partials).tolist() == [3, 0, 0, ARGMAX_INDEX_LIMIT, ARGMAX_INDEX_LIMIT, 0, 12]
    partials[:, 0] = 1.0  # all tied: the lowest index read
    assert FINAL.run([partials], {"stride": 0}, "i32")[0, 0] == 0


def test_parameter_words_round_trip():
    for dtype, base in (("bf16", 0), ("f32", 128_000)):
        sig = ComputeSignature((TileSig((1, 1000), dtype),), TileSig((1, 4), "f32"), {"base": base})
        words = PARTIAL.encode_params(sig)
        assert (words.p0, words.p1, words.p3) == (1, 1000, base)
        assert PARTIAL.decode_operands(words) == sig
    for stride in (0, 64):
        sig = ComputeSignature((TileSig((8, 4), "f32"),), TileSig((1, 4), "i32"), {"stride": stride})
        assert FINAL.encode_params(sig).p3 == stride and FINAL.decode_operands(FINAL.encode_params(sig)) == sig


def test_signature_errors():
    with pytest.raises(FamilyError, match=r"base \+ N = 16777000 \+ 1000 exceeds 2\^24"):
        PARTIAL.check([TileSig((1, 1000), "bf16")], {"base": 16_777_000}, None)
    assert PARTIAL.check([TileSig((1, 1000), "bf16")], {"base": ARGMAX_INDEX_LIMIT - 1000}, None) == TileSig(
        (1, 4), "f32")
    with pytest.raises(FamilyError, match="partials must be Sx4"):
        FINAL.check([TileSig((8, 8), "f32")], {"stride": 0}, None)
    with pytest.raises(FamilyError, match=r"the last row's offset \(S - 1\) \* stride = 16777216 reaches 2\^24"):
        FINAL.check([TileSig((257, 4), "f32")], {"stride": 65536}, None)


def test_a_stride_gives_looped_slices_their_place_in_the_row():
    """Slices computed in a loop, each argmax_partial with base 0: argmax_final adds r * stride to row r."""
    rng = np.random.default_rng()
    for width, slices in ((64, 7), (128, 3)):
        row = rng.standard_normal((1, width * slices)).astype(np.float32)
        row[0, 3 * width // 2] = row[0, width * slices - 1] = 50.0  # a tie across slices: the lower index
        parts = np.concatenate([PARTIAL.run([row[:, s * width : (s + 1) * width]], {"base": 0}, "f32")
                                for s in range(slices)])
        token = FINAL.run([parts], {"stride": width}, "i32")
        assert token[0, 0] == np.argmax(row) == 3 * width // 2


# ---------------------------------------------------------------------------
# The simulator
# ---------------------------------------------------------------------------


def alone(family: str, tile: np.ndarray, dtype: str, params: dict):
    """The one-SM program of ``family`` on ``tile``, and its numpy result."""
    out_dtype = FAMILIES[family].out_dtypes[0]
    program = family_program(family, [tile.shape], [dtype], (1, 4), out_dtype, params)
    return program, FAMILIES[family].run([tile], params, out_dtype)


def stacked_partials(rng: np.random.Generator, rows: int) -> np.ndarray:
    """``rows`` partial rows with planted specials and repeated values (ties), indices shuffled."""
    partials = np.zeros((rows, 4), np.float32)
    partials[:, 0] = planted_row(rng, rows, "f32")[0]
    partials[rows // 3, 0] = partials[rows // 2, 0] = np.float32(50.0)
    partials[:, 1] = rng.permutation(rows) * 1000
    return partials


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_each_family_alone_on_the_simulator(dtype):
    rng = np.random.default_rng()
    row = planted_row(rng, 1000, dtype)
    program, want = alone("argmax_partial", row, dtype, {"base": 7000})
    out = np.zeros((1, 4), np.float32)
    simulate(program, [row, out])
    assert out.tobytes() == want.tobytes() and out[0, 1] == 7000 + np.argmax(row.astype(np.float32))
    partials = stacked_partials(rng, 40)
    program, want = alone("argmax_final", partials, "f32", {"stride": 0})
    token = np.zeros((1, 4), np.int32)
    simulate(program, [partials, token])
    assert np.array_equal(token, want)


def example_inputs(logits: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs of ``examples/argmax.mlir`` whose logits are exactly ``logits`` (bf16 values).

    The hidden state is one-hot (h[0] = 1), so each logit is one weight
    times 1 plus zeros: the gemv computes it exactly, and the logits can be
    chosen to tie or be NaN.
    """
    w = (rng.standard_normal((VOCAB, HIDDEN)) * 0.1).astype(bfloat16)
    w[:, 0] = logits.astype(bfloat16)
    h = np.zeros((1, HIDDEN), bfloat16)
    h[0, 0] = 1.0
    emb = rng.standard_normal((VOCAB, HIDDEN)).astype(bfloat16)
    return {"w": w, "h": h, "emb": emb}


def example_logits(rng: np.random.Generator, case: str) -> np.ndarray:
    """Logits of the example: ``tie`` (equal maxima in slices 5 and 2), ``nan`` (NaN in slices 6 and 4) or ``random``."""
    logits = rng.standard_normal(VOCAB).astype(bfloat16).astype(np.float32)
    if case == "tie":
        logits[[700, 300]] = 8.0
    elif case == "nan":
        logits[[800, 600]] = np.nan
        logits[300] = np.inf
    return logits


def check_example_outputs(outputs: dict, inputs: dict, logits: np.ndarray) -> None:
    """The token is numpy.argmax of the logits, the partials each slice's, the gathered row its embedding."""
    token = int(outputs["token"][0, 0])
    assert token == np.argmax(logits) and (outputs["token"][0, 1:] == 0).all()
    bounds = [*SLICE_STARTS, VOCAB]
    for s, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        assert outputs["partials"][s, 1] == lo + np.argmax(logits[lo:hi])
    assert np.array_equal(outputs["next"].view(np.uint16), inputs["emb"][token:token + 1].view(np.uint16))


@pytest.mark.parametrize("case", ["tie", "nan", "random"])
def test_example_on_the_simulator_is_numpy_argmax(case):
    rng = np.random.default_rng()
    module = parse_module_file(str(EXAMPLE))
    logits = example_logits(rng, case)
    inputs = example_inputs(logits, rng)
    tokens = set()
    for num_sms in (1, 4, 132):
        with vdir.compile(module, backend="sim", num_sms=num_sms) as exe:
            outputs = exe(**inputs)
        check_example_outputs(outputs, inputs, logits)
        tokens.add(int(outputs["token"][0, 0]))
    assert len(tokens) == 1


def test_builder_gives_the_example_file():
    assert str(build_argmax()) == str(parse_module_file(str(EXAMPLE)))


def test_a_smaller_build_on_the_simulator_is_numpy_argmax():
    """196 logits in slices of 48 (the last one 4): a tie between the first and the last slice."""
    rng = np.random.default_rng()
    w = (rng.standard_normal((196, 64)) * 0.1).astype(bfloat16)
    w[[5, 194], 0] = 9.0
    h = np.zeros((1, 64), bfloat16)
    h[0, 0] = 1.0
    emb = rng.standard_normal((196, 64)).astype(bfloat16)
    with vdir.compile(build_argmax(196, 64, slice_rows=48), backend="sim") as exe:
        outputs = exe(w=w, h=h, emb=emb)
    assert int(outputs["token"][0, 0]) == 5 == np.argmax(w[:, 0].astype(np.float32))
    assert outputs["partials"].shape == (5, 4) and outputs["partials"][4, 1] == 194


def test_builder_refuses_slices_of_partial_rows():
    with pytest.raises(ValueError, match="slice_rows = 50 must be a positive multiple of 4"):
        build_argmax(200, 64, slice_rows=50)


# ---------------------------------------------------------------------------
# PTX
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family, shape, dtype", [
    ("argmax_partial", (1, 1000), "bf16"), ("argmax_partial", (1, 1000), "f32"), ("argmax_final", (24, 4), "f32"),
])
def test_body_assembles(family, shape, dtype):
    program, _ = alone(family, np.zeros(shape, DTYPES[dtype]), dtype, {"base": 0} if family == "argmax_partial" else {"stride": 64})
    info = assemble(lower_to_ptx(program, "h200"))
    assert "spill" not in info or "0 bytes spill stores" in info


# ---------------------------------------------------------------------------
# The GPU
# ---------------------------------------------------------------------------


@gpu
@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_gpu_each_family_alone_is_numpy(dtype):
    """Bit for bit: the best value's bits (a NaN's payload too), the index, the zeros; the token id."""
    rng = np.random.default_rng()
    for n in (1000, 4104):
        row = planted_row(rng, n, dtype)
        row[0, n // 5] = row[0, n - 3] = np.inf  # a tie of +inf, unless a NaN comes first
        program, want = alone("argmax_partial", row, dtype, {"base": 123_456})
        with vdir.compile(program, backend="cuda") as exe:
            out = exe(row, np.full((1, 4), np.nan, np.float32))
        assert out.tobytes() == want.tobytes()
    for rows in (1, 40, 700):
        partials = stacked_partials(rng, rows)
        program, want = alone("argmax_final", partials, "f32", {"stride": 0})
        with vdir.compile(program, backend="cuda") as exe:
            token = exe(partials, np.full((1, 4), -1, np.int32))
        assert np.array_equal(token, want)


@gpu
@pytest.mark.parametrize("case", ["tie", "nan", "random"])
def test_gpu_example_is_numpy_argmax(case):
    """The example on the GPU: the token id numpy.argmax gives, three runs alike."""
    rng = np.random.default_rng()
    logits = example_logits(rng, case)
    inputs = example_inputs(logits, rng)
    with vdir.compile(parse_module_file(str(EXAMPLE)), backend="cuda") as exe:
        runs = [exe(**inputs) for _ in range(3)]
    for outputs in runs:
        check_example_outputs(outputs, inputs, logits)
        assert outputs["token"].tobytes() == runs[0]["token"].tobytes()
