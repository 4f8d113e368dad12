"""The compute group's signal warp (lowering option ``signal_warp``, on by default): where it goes, and
on the GPU that programs give the bytes they give when the first compute warp signals.

Its PTX is checked line by line in ``test/lowering/sched-compute.mlir``; here:
the warp's place, that the kernel has it only where it should, that it
assembles, the harness on the simulator, and on the GPU a gemv, an MLP stack,
a chain of dependent computes and a program whose next compute waits on a bit
the compute before it toggles (the case the first warp must not test early),
bit for bit as the kernel without the option computes them.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from test_compute_control import _case, _inputs, _run
from test_ptx_lowering import assemble

from vdir import isa
from vdir.families import FAMILIES
from vdir.frontend import examples
from vdir.lowering import layout as L
from vdir.lowering.emit import lower_to_ptx
from vdir.target import get_target
from vdir.testing.assembler import ProgramAssembler
from vdir.testing.gpu import gpu
from vdir.transforms.pipeline import compile_to_encoded

H200 = get_target("h200")
OFF = {"signal_warp": False}


def test_the_signal_warp_is_the_groups_last_and_only_without_loops():
    """Warp 7 of the H200's 8-warp group; none with loops, without the option, or in a one-warp group."""
    assert L.compute_signal_warp(H200, loops=False, signal_warp=True) == 7
    assert L.compute_signal_warp(H200, loops=True, signal_warp=True) is None
    assert L.compute_signal_warp(H200, loops=False, signal_warp=False) is None
    one = dataclasses.replace(H200, compute_threads=32)
    assert L.compute_signal_warp(one, loops=False, signal_warp=True) is None


def test_the_lowered_kernel_signals_from_the_last_warp_only_with_the_option():
    program = compile_to_encoded(examples.build_mlp_stack(2, 256, 512), num_sms=2)
    text = lower_to_ptx(program)
    assert "$L_cp_signalled_0" in text and "$L_cp_bits_apart_0" in text
    assert re.search(rf"st\.release\.cta\.shared\.u32 \[%r\d+\+{L.SMEM_SIGNALLED}\]", text)
    plain = lower_to_ptx(program, options=OFF)
    assert "$L_cp_signalled" not in plain and "$L_cp_bits_apart" not in plain
    # with a control warp, or with loops, the option changes nothing
    for options in ({"control_warp": True}, {"run_loops": True}):
        assert lower_to_ptx(program, options=options) == lower_to_ptx(program, options={**options, **OFF})


@pytest.mark.parametrize("options", [{}, {"trace": True, "uniform_checks": True}], ids=["default", "traced_and_checked"])
def test_the_kernel_with_the_signal_warp_assembles_without_spills(options):
    program = compile_to_encoded(examples.build_mlp_stack(2, 256, 512), num_sms=2)
    info = assemble(lower_to_ptx(program, options=options))
    if info:
        assert "0 bytes spill stores" in info and "0 bytes stack frame" in info, info


def _shared_bit() -> isa.EncodedProgram:
    """Two adds on one SM whose second waits on a bit the first toggles: the first signals bit 1, the
    store of its result waits for that and toggles bit 1 back, and the second add, which doubles the
    first's result in place, waits for bit 1 at parity 0, which it holds before either toggle. Tested
    before the first add's signal, the second would run early and the store would write 4a, not 2a."""
    bufs = [isa.BufferInfo("a", (1, 64), "bf16", False), isa.BufferInfo("b", (2, 64), "bf16", True)]
    asm = ProgramAssembler(1, bufs, 4096)
    add = FAMILIES["add"].opcode
    asm.load(0, 0, 0, 1, 128, 128, 0, signal=1, name="load a")
    asm.compute(0, add, 1024, [0, 0], 1, 64, wait=1, parity=1, signal=2, name="add a a")
    asm.store(0, 1, 0, 1, 128, 128, 1024, wait=2, parity=2, signal=2, name="store b[0]")
    asm.compute(0, add, 1024, [1024, 1024], 1, 64, wait=2, parity=0, signal=4, name="double in place")
    asm.store(0, 1, 128, 1, 128, 128, 1024, wait=4, parity=4, name="store b[1]")
    return asm.finish()


def _expected_shared_bit(a: np.ndarray) -> np.ndarray:
    a32 = a.astype(np.float32)
    return np.concatenate([a32 * 2, a32 * 4])


def test_the_shared_bit_case_is_what_the_simulator_computes():
    program = _shared_bit()
    inputs = _inputs(program, np.random.default_rng(0))
    (out,) = _run(program, inputs, backend="sim")
    np.testing.assert_array_equal(out.astype(np.float32), _expected_shared_bit(inputs["a"]))


@gpu
@pytest.mark.parametrize("case", ["gemv", "stack", "chain", "shared_bit"])
def test_programs_give_the_same_bytes_with_and_without_the_signal_warp(case):
    """Three launches each with the signal warp, one without: the same bytes (and for the two hand-made
    programs, the values they must have)."""
    program = _shared_bit() if case == "shared_bit" else _case(case)
    inputs = _inputs(program, np.random.default_rng())
    plain = _run(program, inputs, OFF)
    signalled = _run(program, inputs, launches=3)
    for p, q in zip(plain, signalled, strict=True):
        assert np.array_equal(p.view(np.uint8), q.view(np.uint8))
    if case == "chain":
        np.testing.assert_array_equal(signalled[0].astype(np.float32), inputs["a"].astype(np.float32) * 2 ** 9)
    if case == "shared_bit":
        np.testing.assert_array_equal(signalled[0].astype(np.float32), _expected_shared_bit(inputs["a"]))
