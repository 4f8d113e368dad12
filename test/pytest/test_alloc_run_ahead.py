"""Room for the stream engine to run ahead where the rings would single-buffer the weight tiles.

Two phases as in an MLP block 8192 wide: 64 KB weight tiles against a row
cut into two 8 KB chunks (beside the 16 KB vectors it came from), then 64 KB
tiles against seven 8 KB chunks of another row. Rings, each as deep as its
class's peak, fit the SM but leave the weight tiles one slot, so every load
would wait for the gemv reading the tile before it. ``vdir-alloc-smem``
allocates such an SM by liveness with the streamed tiles ``run-ahead``
places ahead (``vdir/transforms/alloc_smem.py``): three slots in the first
phase, two in the second. The simulator, with race checking, is the oracle
that no tile reuses bytes too early.
"""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir import isa
from vdir.frontend import ProgramBuilder
from vdir.frontend.layers import chunked_gemv, load_chunks
from vdir.testing.reference import evaluate
from vdir.transforms.pipeline import compile_to_encoded

HIDDEN, WIDE = 8192, 28672
#: weight-tile rows (8 x 4096 bf16: 64 KB) and row blocks per phase
ROWS, FIRST, SECOND = 8, 3, 2


def _two_phases():
    b = ProgramBuilder("phases")
    h, g = b.buffer("h", (1, HIDDEN)), b.buffer("g", (1, HIDDEN))
    w, v = b.buffer("w", (FIRST * ROWS, HIDDEN)), b.buffer("v", (1, WIDE))
    d = b.buffer("d", (SECOND * ROWS, WIDE))
    y, z = b.buffer("y", (1, FIRST * ROWS)), b.buffer("z", (1, SECOND * ROWS))
    xn = b.compute("add", [b.load(h, (0, 0), (1, HIDDEN), name="ht"), b.load(g, (0, 0), (1, HIDDEN), name="gt")],
                   name="xn")
    xs = [b.compute("slice", [xn], params={"start": c * 4096, "width": 4096}, name=f"x{c}") for c in range(2)]
    with b.repeat(0, FIRST, name="i") as i:
        r = b.affine(i, scale=ROWS, name="r")
        b.store(chunked_gemv(b, w, r, ROWS, xs, "w", "p", "yt"), y, (0, r), name="ys")
    vs = load_chunks(b, v, 0, WIDE, WIDE // 4096, "v")
    with b.repeat(0, SECOND, name="k") as k:
        q = b.affine(k, scale=ROWS, name="q")
        b.store(chunked_gemv(b, d, q, ROWS, vs, "d", "a", "zt"), z, (0, q), name="zs")
    return b.finish()


def _weight_offsets(program: isa.EncodedProgram, buffer: str) -> list[int]:
    """Shared-memory offsets of the tiles loaded from ``buffer`` on SM 0, in queue order."""
    index = [b.name for b in program.buffers].index(buffer)
    offsets = []
    for engine in range(program.num_engines):
        for ins in program.executed_queue(0, engine):
            if isa.OPCODE.get(ins) == isa.OP_LOAD and isa.BUFFER.get(ins) == index:
                offsets.append(isa.SMEM.get(ins))
    return offsets


def test_single_buffered_rings_give_way_to_run_ahead():
    module = _two_phases()
    ahead = compile_to_encoded(module, num_sms=1)
    rings = compile_to_encoded(module, num_sms=1, run_ahead=0)
    assert set(_weight_offsets(rings, "w")) == {0} and set(_weight_offsets(rings, "d")) == {0}
    first, second = _weight_offsets(ahead, "w"), _weight_offsets(ahead, "d")
    assert len(set(first)) == 3, first  # three 64 KB slots beside the two 8 KB chunks
    assert len(set(second)) == 2, second  # two beside the seven chunks
    assert first[:3] == sorted(first[:3]) and len(set(first[:3])) == 3  # consecutive tiles rotate


@pytest.mark.parametrize("options", [{"run_ahead": 0}, {"run_ahead": 2}, {"weight_ring": 2}])
def test_each_allocation_runs_exactly(options):
    module = _two_phases()
    program = compile_to_encoded(module, num_sms=1, **options)
    rng = np.random.default_rng(11)
    r = lambda *shape: rng.standard_normal(shape).astype(bfloat16)  # noqa: E731
    inputs = {"h": r(1, HIDDEN), "g": r(1, HIDDEN), "w": r(FIRST * ROWS, HIDDEN), "v": r(1, WIDE),
              "d": r(SECOND * ROWS, WIDE)}
    want = evaluate(module, {**inputs, "y": np.zeros((1, FIRST * ROWS), bfloat16),
                             "z": np.zeros((1, SECOND * ROWS), bfloat16)})
    for seed in (0, 1):
        with vdir.compile(program, backend="sim", seed=seed) as exe:
            got = exe(**inputs)
        for name in ("y", "z"):
            assert np.array_equal(np.asarray(got[name]).view(np.uint16), want[name].view(np.uint16)), name


def test_a_weight_ring_keeps_the_streamed_tiles_apart_from_the_others():
    """``weight_ring=2``: every weight tile in one of two slots at the top of the arena, rotating; every
    other tile below them. A ring that cannot fit (four 64 KB slots and the vectors) leaves the
    allocation as without the option."""
    module = _two_phases()
    program = compile_to_encoded(module, num_sms=1, weight_ring=2)
    below = program.smem_bytes - 2 * ROWS * 4096 * 2
    ring = {below, below + ROWS * 4096 * 2}
    weights = _weight_offsets(program, "w") + _weight_offsets(program, "d")
    assert set(weights) == ring and weights[:2] == sorted(ring), weights
    executed = [ins for engine in range(program.num_engines) for ins in program.executed_queue(0, engine)]
    others = [isa.SMEM.get(ins) for ins in executed
              if isa.OPCODE.get(ins) == isa.OP_LOAD and program.buffers[isa.BUFFER.get(ins)].name not in ("w", "d")]
    assert others and max(others) < below
    too_deep = compile_to_encoded(module, num_sms=1, weight_ring=4)
    default = compile_to_encoded(module, num_sms=1)
    assert np.array_equal(too_deep.instrs, default.instrs)


def test_a_decode_step_with_a_weight_ring_matches_its_mirror():
    """The tiny Llama step with its weight tiles in a ring of three (its other tiles by liveness below):
    bit-identical logits and tokens against the model in the families' numpy semantics, on the
    simulator with race checking."""
    from vdir.frontend.llama import build_decode_step
    from vdir.models.llama import NAMED_CONFIGS, LlamaDecoder
    from vdir.testing.llama import MirrorModel, follow_mirror_exactly, random_weights

    cfg = NAMED_CONFIGS["tiny"]
    program = compile_to_encoded(build_decode_step(cfg), weight_ring=3)
    assert program.smem_bytes != compile_to_encoded(build_decode_step(cfg)).smem_bytes  # the ring took the top
    weights = random_weights(cfg, seed=5)
    with LlamaDecoder(cfg, weights, backend="sim", program=program) as decoder:
        follow_mirror_exactly(decoder, MirrorModel(cfg, weights), token=11, steps=4)
