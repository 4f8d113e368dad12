"""Runtime values end to end: launch-time scalars in offsets and conditions, runtime-bounded repeats.

One compiled program runs for several scalar values without recompiling;
every result is compared bit for bit with the reference evaluator (the same
bf16 copies and one-rounding adds), on several interleavings of the
simulator, and on the H200 in the ``gpu`` tests. The device-side range check
is exercised by forging an instruction's checked range (the host already
refuses a scalar outside its declared range), and a failed launch must
leave the executable usable.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16
from xdsl.context import Context
from xdsl.dialects.affine import Affine
from xdsl.dialects.arith import Arith

import vdir
from vdir import isa
from vdir.analysis.graph import build_graph
from vdir.device_runtime.executable import ArgumentError, Executable
from vdir.device_runtime.platform import PlatformError
from vdir.device_runtime.sim import SimBoundsError, SimProgramError, decode_program
from vdir.target import get_target
from vdir.testing.compare import compare_outputs
from vdir.testing.gpu import gpu
from vdir.testing.reference import evaluate
from vdir.tools.common import parse_text, register_vdir_dialects

#: a copy at a runtime row, a runtime-length loop of doubled row blocks, and
#: a conditional add at the end
PROGRAM = """
vdir.program @runtime(%x: !vdir.buffer<64x32xbf16>, %y: !vdir.buffer<64x32xbf16>,
                      %pos: index in 0 to 31, %n: index in 0 to 5) {
  %r0 = affine.apply affine_map<(d0) -> (d0 * 2)> (%pos)
  %t = vdir.load %x[%r0, 0] : !vdir.buffer<64x32xbf16> -> !vdir.tile<2x32xbf16>
  %s = vdir.store %t, %y[%r0, 0] : !vdir.tile<2x32xbf16>, !vdir.buffer<64x32xbf16>
  vdir.repeat %i = 0 to %n max 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 8)> (%i)
    %a = vdir.load %x[%r, 0] : !vdir.buffer<64x32xbf16> -> !vdir.tile<8x32xbf16>
    %b = vdir.compute add(%a, %a) : (!vdir.tile<8x32xbf16>, !vdir.tile<8x32xbf16>) -> !vdir.tile<8x32xbf16>
    %c = vdir.store %b, %y[%r, 0] : !vdir.tile<8x32xbf16>, !vdir.buffer<64x32xbf16>
  }
  %e = vdir.load %x[56, 0] : !vdir.buffer<64x32xbf16> -> !vdir.tile<8x32xbf16>
  %f = vdir.compute add(%e, %e) when %pos < 10 : (!vdir.tile<8x32xbf16>, !vdir.tile<8x32xbf16>) -> !vdir.tile<8x32xbf16>
  %g = vdir.store %f, %y[56, 0] when %pos < 10 : !vdir.tile<8x32xbf16>, !vdir.buffer<64x32xbf16>
}
"""

#: (pos, n): the loop empty, partly and fully run; the copy overlapping the
#: loop's rows or not; the conditional block on and off
VALUES = [(0, 0), (3, 2), (30, 4), (9, 1), (17, 3)]


def parse(text: str = PROGRAM):
    ctx = Context()
    register_vdir_dialects(ctx)
    ctx.load_dialect(Affine)
    ctx.load_dialect(Arith)
    return parse_text(ctx, text, "runtime.mlir")


def random_x(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((64, 32)).astype(bfloat16)


def reference(x: np.ndarray, pos: int, n: int) -> np.ndarray:
    y0 = np.zeros((64, 32), dtype=bfloat16)
    return evaluate(parse(), {"x": x, "y": y0}, {"pos": pos, "n": n})["y"]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(a.view(np.uint16), b.view(np.uint16))


def test_one_compiled_program_runs_for_every_scalar_value():
    x = random_x()
    exe = vdir.compile(parse())
    assert [s.name for s in exe.scalars] == ["pos", "n"]
    for pos, n in VALUES:
        want = reference(x, pos, n)
        for seed in range(3):  # several interleavings of the engines
            exe.launch_options["seed"] = seed
            assert same_bits(exe(x, pos=pos, n=n), want), (pos, n, seed)
    # positionally, after the buffer inputs
    assert same_bits(exe(x, 3, 2), reference(x, 3, 2))


def test_reference_skips_what_the_conditions_turn_off():
    x = random_x(1)
    y = reference(x, 20, 0)
    assert same_bits(y[40:42], x[40:42])  # the copy ran
    assert not y[:8].any() and not y[56:].any()  # no loop iteration, no conditional block
    y = reference(x, 3, 4)
    assert same_bits(y[8:16], (x[8:16].astype(np.float32) * 2).astype(bfloat16))
    assert same_bits(y[56:], (x[56:].astype(np.float32) * 2).astype(bfloat16))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n": 1}, "missing scalar 'pos' (an integer in 0 to 31)"),
        ({"pos": 31, "n": 1}, "scalar 'pos' = 31 is outside its range 0 to 31"),
        ({"pos": -1, "n": 1}, "scalar 'pos' = -1 is outside its range 0 to 31"),
        ({"pos": 1.0, "n": 1}, "scalar 'pos': expected an integer, got float"),
        ({"pos": True, "n": 1}, "scalar 'pos': expected an integer, got bool"),
    ],
)
def test_bad_scalars_are_refused_before_anything_runs(kwargs, message):
    exe = vdir.compile(parse())
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        exe(random_x(), **kwargs)


def test_scalars_given_twice_are_refused():
    exe = vdir.compile(parse())
    with pytest.raises(ArgumentError, match="scalar 'pos' given both by position and by name"):
        exe(random_x(), 1, 2, pos=1)


def forged_range(program: isa.EncodedProgram, dyn_max: int) -> isa.EncodedProgram:
    """``program`` with every runtime offset's checked range cut to ``0..dyn_max``."""
    instrs = program.instrs.copy()
    for row in np.nonzero(isa.DYN_SOURCE.column(instrs))[0]:
        isa.DYN_MAX.set(instrs[row], dyn_max)
    return dataclasses.replace(program, instrs=instrs)


def check_offset_out_of_range(backend: str, error: type[Exception]) -> None:
    """A forged range (0..5) with pos = 9: a reported error; then the executable runs valid calls."""
    program = forged_range(vdir.compile(parse()).program, 5)
    x = random_x(2)
    with Executable(program, backend) as exe:
        with pytest.raises(error, match=r"runtime offset %pos = 9 is outside its checked range 0\.\.5"):
            exe(x, pos=9, n=1)
        for pos, n in [(4, 2), (0, 4)]:
            assert same_bits(exe(x, pos=pos, n=n), reference(x, pos, n))


def test_an_offset_outside_its_checked_range_stops_the_launch_and_the_executable_recovers():
    check_offset_out_of_range("sim", SimBoundsError)


def test_forged_sources_are_rejected_when_decoding():
    program = vdir.compile(parse()).program
    instrs = program.instrs.copy()
    # the first load with a runtime offset (the load of x)
    row = int(np.nonzero((isa.DYN_SOURCE.column(instrs) != 0) & (isa.OPCODE.column(instrs) == isa.OP_LOAD))[0][0])
    isa.DYN_INDEX.set(instrs[row], 7)
    with pytest.raises(SimProgramError, match="its offset reads scalar 7; the program has 2"):
        decode_program(dataclasses.replace(program, instrs=instrs), get_target("h200"))
    instrs = program.instrs.copy()
    isa.DYN_SOURCE.set(instrs[row], isa.SOURCE_BUFFER0 + 0)  # x is bf16, not an i32 buffer
    with pytest.raises(SimProgramError, match="reads element 0 of 'x', not an i32 element of it"):
        decode_program(dataclasses.replace(program, instrs=instrs), get_target("h200"))
    instrs = program.instrs.copy()
    isa.DYN_MAX.set(instrs[row], 40)  # row 2 * 40 of a 64-row buffer
    with pytest.raises(SimProgramError, match="is outside buffer 'x'"):
        decode_program(dataclasses.replace(program, instrs=instrs), get_target("h200"))


def test_a_conditional_or_runtime_store_never_hides_earlier_writes():
    # y[0:8] is written unconditionally, then maybe again; the load must wait
    # for both stores (the second may not happen)
    text = """
    vdir.program @p(%x: !vdir.buffer<16x32xbf16>, %y: !vdir.buffer<16x32xbf16>, %z: !vdir.buffer<16x32xbf16>,
                    %n: index in 0 to 2, %pos: index in 0 to 9) {
      %a = vdir.load %x[0, 0] : !vdir.buffer<16x32xbf16> -> !vdir.tile<8x32xbf16>
      %s0 = vdir.store %a, %y[0, 0] : !vdir.tile<8x32xbf16>, !vdir.buffer<16x32xbf16>
      %b = vdir.load %x[8, 0] : !vdir.buffer<16x32xbf16> -> !vdir.tile<8x32xbf16>
      %s1 = vdir.store %b, %y[0, 0] when %n >= 1 : !vdir.tile<8x32xbf16>, !vdir.buffer<16x32xbf16>
      %s2 = vdir.store %b, %y[%pos, 0] : !vdir.tile<8x32xbf16>, !vdir.buffer<16x32xbf16>
      %c = vdir.load %y[0, 0] : !vdir.buffer<16x32xbf16> -> !vdir.tile<8x32xbf16>
      %s3 = vdir.store %c, %z[0, 0] : !vdir.tile<8x32xbf16>, !vdir.buffer<16x32xbf16>
    }
    """
    graph = build_graph(parse(text))
    load_y = next(n for n in graph.nodes if n.name == "%c")
    waited = {p.name for group in load_y.deps for p in group}
    assert waited == {"store to @y"}
    assert sum(1 for group in load_y.deps for _ in group) == 3  # all three stores to y
    x = random_x(3)[:16].copy()
    exe = vdir.compile(parse(text))
    for n, pos in [(0, 8), (1, 8), (0, 3), (1, 0)]:
        want = evaluate(parse(text), {"x": x, "y": np.zeros_like(x), "z": np.zeros_like(x)}, {"n": n, "pos": pos})
        got = exe(x, n=n, pos=pos)
        assert same_bits(got["z"], want["z"]) and same_bits(got["y"], want["y"]), (n, pos)


# ---------------------------------------------------------------------------
# On the GPU
# ---------------------------------------------------------------------------



@gpu
def test_gpu_runs_every_scalar_value_without_recompiling():
    x = random_x(4)
    with vdir.compile(parse(), backend="cuda") as exe:
        for pos, n in VALUES * 2:
            assert same_bits(exe(x, pos=pos, n=n), reference(x, pos, n)), (pos, n)


@gpu
def test_gpu_reports_an_offset_outside_its_range_and_stays_usable():
    check_offset_out_of_range("cuda", PlatformError)


# ---------------------------------------------------------------------------
# examples/runtime_values.mlir: a gather by a token id read on the device, an
# append at a runtime position, a runtime-length loop, a two-phase reduction
# ---------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "runtime_values.mlir"

#: (token id, position, blocks): the append inside and outside the scored
#: blocks, one block and all eight
EXAMPLE_VALUES = [(7, 3, 1), (255, 63, 8), (0, 20, 3), (128, 40, 5)]


def example_inputs(seed: int, token: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "ids": np.array([[token, -1, 1000, 5]], dtype=np.int32),  # only element 0 is read
        "emb": (rng.standard_normal((256, 64)) * 0.25).astype(bfloat16),
        "cache": (rng.standard_normal((64, 64)) * 0.25).astype(bfloat16),
        "partial": np.zeros((8, 8), dtype=np.float32),
    }


def example_reference(inputs: dict[str, np.ndarray], pos: int, blocks: int) -> dict[str, np.ndarray]:
    module = parse(EXAMPLE.read_text())
    return evaluate(module, {**inputs, "out": np.zeros((1, 8), np.float32)}, {"pos": pos, "blocks": blocks})


def check_example(backend: str) -> None:
    with vdir.compile(parse(EXAMPLE.read_text()), backend=backend) as exe:
        for k, (token, pos, blocks) in enumerate(EXAMPLE_VALUES):
            inputs = example_inputs(k, token)
            got = exe(**inputs, pos=pos, blocks=blocks)
            want = example_reference(inputs, pos, blocks)
            mismatch = compare_outputs(got, {name: want[name] for name in got}, backend)
            assert mismatch is None, f"{(token, pos, blocks)}: {mismatch}"
            # the appended row is the token's embedding row
            assert same_bits(got["cache"][pos], inputs["emb"][token])
            # the result is the fixed-order sum of the partial rows the loop wrote
            rows = np.zeros(8, np.float32)
            for r in range(8):
                rows += got["partial"][r]
            assert np.array_equal(got["out"][0], rows)
        # a token id outside the embedding table: a reported error naming
        # the gather, and the executable stays usable
        bad = example_inputs(9, 300)
        with pytest.raises(PlatformError, match=r"%q.*runtime offset @ids\[0\] = 300 is outside its checked range 0\.\.255"):
            exe(**bad, pos=1, blocks=2)
        inputs = example_inputs(10, 17)
        got = exe(**inputs, pos=5, blocks=4)
        assert compare_outputs(got, {n: v for n, v in example_reference(inputs, 5, 4).items() if n in got},
                               backend) is None


def test_example_runs_every_value_on_the_simulator():
    check_example("sim")


@gpu
def test_example_runs_every_value_on_the_gpu():
    check_example("cuda")
