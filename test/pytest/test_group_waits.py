"""Every compute warp testing the wait itself (lowering option ``group_waits``): where the kernel has it,
that it assembles, and on the GPU that programs give the bytes the default kernel gives.

Its PTX is checked line by line in ``test/lowering/sched-compute-group-waits.mlir``;
here: that the kernel has one group barrier per compute instruction only with
the option and without loops or a control warp, that it assembles without
spills, and on the GPU a gemv, an MLP stack, a chain of dependent computes
and a program whose next compute waits on a bit the compute before it
toggles, bit for bit as the default kernel computes them (with and without
the signal warp), and a watchdog report from the group (twice, the platform
usable after).
"""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16
from test_compute_control import _case, _inputs, _run
from test_ptx_lowering import assemble
from test_signal_warp import _expected_shared_bit, _shared_bit

import vdir
from vdir import isa
from vdir.device_runtime.platform import PlatformError
from vdir.families import FAMILIES
from vdir.frontend import examples
from vdir.lowering.emit import lower_to_ptx
from vdir.testing.assembler import ProgramAssembler, family_program
from vdir.testing.gpu import gpu
from vdir.transforms.pipeline import compile_to_encoded

WAITS = {"group_waits": 1}


def _compute_loop(text: str) -> str:
    """The compute group's loop: from its top to its exit."""
    return text.split("$L_cp_top_0:")[1].split("$L_cp_done_0:")[0]


def test_the_group_meets_at_one_barrier_per_instruction_only_with_the_option():
    program = compile_to_encoded(examples.build_mlp_stack(2, 256, 512), num_sms=2)
    plain, waits = lower_to_ptx(program), lower_to_ptx(program, options=WAITS)
    loop = _compute_loop(waits)
    # the same bodies (some with barriers of their own), and one group barrier fewer around them
    assert _compute_loop(plain).count("barrier.sync 1,") - loop.count("barrier.sync 1,") == 1
    assert "$L_cp_sync_0" in plain and "$L_cp_sync" not in waits and "nanosleep.u32" in loop
    assert "$L_cp_primed_0" in waits and "$L_cp_primed" not in plain
    # with a control warp, or with loops, the option changes nothing
    for options in ({"control_warp": True}, {"run_loops": True}):
        assert lower_to_ptx(program, options={**options, **WAITS}) == lower_to_ptx(program, options=options)


@pytest.mark.parametrize("options", [WAITS, {**WAITS, "signal_warp": False},
                                     {**WAITS, "trace": True, "uniform_checks": True}],
                         ids=["group_waits", "without_signal_warp", "traced_and_checked"])
def test_the_kernel_with_group_waits_assembles_without_spills(options):
    program = compile_to_encoded(examples.build_mlp_stack(2, 256, 512), num_sms=2)
    info = assemble(lower_to_ptx(program, options=options))
    if info:
        assert "0 bytes spill stores" in info and "0 bytes stack frame" in info, info


# ---------------------------------------------------------------------------
# on the GPU
# ---------------------------------------------------------------------------


@gpu
@pytest.mark.parametrize("form", [1, 2])
@pytest.mark.parametrize("signal_warp", [True, False], ids=["signal_warp", "leader_signals"])
@pytest.mark.parametrize("case", ["gemv", "stack", "chain", "shared_bit"])
def test_programs_give_the_same_bytes_with_group_waits(case, signal_warp, form):
    """A gemv (several tiles per SM), a 2-layer MLP stack on 8 SMs (counter waits across SMs), a chain of
    dependent adds (the same engine's order only) and the shared-bit program, three launches each: the
    bytes of the default kernel (and for the two hand-made programs, the values they must have)."""
    program = _shared_bit() if case == "shared_bit" else _case(case)
    inputs = _inputs(program, np.random.default_rng())
    plain = _run(program, inputs)
    waited = _run(program, inputs, {"group_waits": form, "signal_warp": signal_warp}, launches=3)
    for p, q in zip(plain, waited, strict=True):
        assert np.array_equal(p.view(np.uint8), q.view(np.uint8))
    if case == "chain":  # a doubling per add: exact in bf16 while it does not overflow
        np.testing.assert_array_equal(waited[0].astype(np.float32), inputs["a"].astype(np.float32) * 2 ** 9)
    if case == "shared_bit":
        np.testing.assert_array_equal(waited[0].astype(np.float32), _expected_shared_bit(inputs["a"]))


@gpu
@pytest.mark.parametrize("form", [1, 2])
def test_a_watchdog_report_of_the_group_leaves_the_platform_usable(form):
    """Every compute warp reports a wait that never comes (one report wins), twice on one executable: the
    group meets at its barrier and leaves on its flag, so the launch ends; a program run after it
    computes its result."""
    bufs = [isa.BufferInfo("a", (1, 64), "bf16", False), isa.BufferInfo("b", (1, 64), "bf16", True)]
    hang = ProgramAssembler(1, bufs, 2048)
    hang.load(0, 0, 0, 1, 128, 128, 0, signal=1, name="load a")
    hang.compute(0, FAMILIES["add"].opcode, 1024, [0, 0], 1, 64, wait=1 | (1 << 5), parity=1 | (1 << 5),
                 signal=2, name="%s = add (never ready)")
    hang.store(0, 1, 0, 1, 128, 128, 1024, name="store b")
    data = (np.random.default_rng().standard_normal((1, 64), dtype=np.float32) / 8).astype(bfloat16)
    with vdir.compile(hang.finish(), backend="cuda", options={"group_waits": form}, watchdog_ms=200) as exe:
        for _ in range(2):
            with pytest.raises(PlatformError, match=r"watchdog.*never ready.*compute engine"):
                exe(a=data, b=data)
    program = family_program("add", [(1, 64), (1, 64)], ["bf16", "bf16"], (1, 64), "bf16", {})
    inputs = _inputs(program, np.random.default_rng())
    (out,) = _run(program, inputs, WAITS)
    np.testing.assert_array_equal(out.astype(np.float32), (inputs["in0"].astype(np.float32) + inputs["in1"].astype(
        np.float32)).astype(bfloat16).astype(np.float32))
