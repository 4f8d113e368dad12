"""The compute control warp (lowering option ``control_warp``): where it goes, and on the GPU that the
programs it runs give the bytes they give without it.

Its PTX is checked line by line in ``test/lowering/sched-compute-control.mlir``;
here: the warp's place and the block size, that the kernel assembles, and on
the GPU a gemv, an MLP stack and a chain of dependent computes bit for bit
as the default kernel computes them, and a watchdog report from the
control warp (twice, the platform usable after).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from ml_dtypes import bfloat16
from test_ptx_lowering import assemble

import vdir
from vdir import isa
from vdir.device_runtime.platform import PlatformError
from vdir.families import FAMILIES
from vdir.frontend import examples
from vdir.lowering import layout as L
from vdir.lowering.emit import lower, lower_to_ptx
from vdir.lowering.options import MAX_COMPUTE_WARPS
from vdir.target import get_target
from vdir.testing.assembler import ProgramAssembler, family_program
from vdir.testing.gpu import gpu
from vdir.transforms.pipeline import compile_to_encoded

H200 = get_target("h200")
CONTROL = {"control_warp": True}


def test_the_control_warp_follows_the_roles_where_there_is_room_and_only_without_loops():
    """Warp 11 on the H200 (after the stream warp), 384 threads; none with loops (the fetch warp's
    place), without the option, or with a 29-warp group (32 warps already)."""
    assert L.compute_control_warp(H200, loops=False, control=True) == L.stream_warp(H200) + 1 == 11
    assert L.compute_control_warp(H200, loops=True, control=True) is None
    assert L.compute_control_warp(H200, loops=False, control=False) is None
    full = dataclasses.replace(H200, compute_threads=32 * MAX_COMPUTE_WARPS)
    assert L.compute_control_warp(full, loops=False, control=True) is None
    assert (L.block_threads(H200), L.block_threads(H200, control=True)) == (352, 384)
    assert L.block_threads(full, control=True) == 32 * L.MAX_CTA_WARPS
    assert (L.control_threads(H200), L.control_done_arrivals(H200)) == (288, 256)


def test_the_lowered_kernel_has_the_control_warp_only_with_the_option():
    program = compile_to_encoded(examples.build_gemv(), num_sms=1)  # its row blocks in a loop
    assert lower(program).block_threads == 352
    assert lower(program, options=CONTROL).block_threads == 384
    assert "$L_role_compute_control" not in lower_to_ptx(program)
    text = lower_to_ptx(program, options=CONTROL)
    assert "$L_role_compute_control" in text and f"+{L.SMEM_CONTROL_DONE}], 256;" in text
    assert "bar.warp.sync" not in text.split("$L_cp_body_done_0:")[1].split("$L_cp_done_0:")[0]  # every lane arrives
    # with loops the fetch warp takes the place
    looped = lower_to_ptx(program, options={**CONTROL, "run_loops": True})
    assert "$L_role_compute_control" not in looped and "$L_role_compute_fetch" in looped


@pytest.mark.parametrize("options", [CONTROL, {**CONTROL, "trace": True, "uniform_checks": True}],
                         ids=["control", "traced_and_checked"])
def test_the_kernel_with_the_control_warp_assembles_without_spills(options):
    program = compile_to_encoded(examples.build_mlp_stack(2, 256, 512), num_sms=2)
    info = assemble(lower_to_ptx(program, options=options))
    if info:
        assert "0 bytes spill stores" in info and "0 bytes stack frame" in info, info


@pytest.mark.parametrize("case", ["gemv", "stack", "chain"])
def test_the_gpu_cases_are_repeatable_on_the_simulator(case):
    """The GPU test's harness (below), checked on the simulator: its inputs are the programs'
    arguments, one launch and three give the same bytes, and the chain doubles its input nine
    times."""
    program = _case(case)
    inputs = _inputs(program, np.random.default_rng(0))
    once = _run(program, inputs, backend="sim")
    thrice = _run(program, inputs, launches=3, backend="sim")
    for p, q in zip(once, thrice, strict=True):
        assert np.array_equal(p.view(np.uint8), q.view(np.uint8))
    if case == "chain":
        np.testing.assert_array_equal(once[0].astype(np.float32), inputs["a"].astype(np.float32) * 2 ** 9)


# ---------------------------------------------------------------------------
# on the GPU
# ---------------------------------------------------------------------------

def _inputs(program, rng) -> dict[str, np.ndarray]:
    """Random values for the program's inputs (a buffer it only writes starts zeroed on its own)."""
    return {b.name: (rng.standard_normal(b.shape, dtype=np.float32) / 8).astype(
        bfloat16 if b.dtype == "bf16" else np.float32) for b in program.buffers if b.is_input}


def _run(program, inputs, options=None, launches=1, backend="cuda") -> list[np.ndarray]:
    """The program's outputs after ``launches`` launches on ``backend``, copied out."""
    with vdir.compile(program, backend=backend, options=options) as exe:
        for _ in range(launches):
            out = exe(**inputs)
        names = [b.name for b in program.buffers if b.is_output]
        outs = [out[n] for n in names] if isinstance(out, dict) else [out]
        return [np.array(o) for o in outs]


def _case(case: str) -> isa.EncodedProgram:
    """The programs the GPU test runs with and without the control warp."""
    if case == "gemv":
        return compile_to_encoded(examples.build_gemv(2048, 1024), num_sms=8)
    if case == "stack":
        return compile_to_encoded(examples.build_mlp_stack(2, 256, 512), num_sms=8)
    return _chain(9)


def _chain(n: int) -> isa.EncodedProgram:
    """``n`` adds on one SM, each reading the one before (the bits of the same engine: no waits
    between them but the queue order), and one store of the last."""
    bufs = [isa.BufferInfo("a", (1, 64), "bf16", False), isa.BufferInfo("b", (1, 64), "bf16", True)]
    asm = ProgramAssembler(1, bufs, 4096)
    asm.load(0, 0, 0, 1, 128, 128, 0, signal=1, name="load a")
    for k in range(n):
        src, dst = 128 * (k % 2) + (0 if k == 0 else 1024), 1024 + 128 * ((k + 1) % 2)
        wait = 1 if k == 0 else 0
        asm.compute(0, FAMILIES["add"].opcode, dst, [src, src], 1, 64, wait=wait, parity=wait,
                    signal=2 if k == n - 1 else 0, name=f"add {k}")
    asm.store(0, 1, 0, 1, 128, 128, 1024 + 128 * (n % 2), wait=2, parity=2, name="store b")
    return asm.finish()


@gpu
@pytest.mark.parametrize("case", ["gemv", "stack", "chain"])
def test_programs_give_the_same_bytes_with_the_control_warp(case):
    """A gemv (several tiles per SM: the early hand-over), a 2-layer MLP stack on 8 SMs (counter waits
    across SMs) and a chain of dependent adds (the same engine's order only), three launches each:
    the bytes of the default kernel."""
    rng = np.random.default_rng()
    program = _case(case)
    inputs = _inputs(program, rng)
    plain = _run(program, inputs)
    controlled = _run(program, inputs, CONTROL, launches=3)
    for p, q in zip(plain, controlled, strict=True):
        assert np.array_equal(p.view(np.uint8), q.view(np.uint8))
    if case == "chain":  # a doubling per add: exact in bf16 while it does not overflow
        a = inputs["a"].astype(np.float32)
        np.testing.assert_array_equal(controlled[0].astype(np.float32), a * 2 ** 9)


@gpu
def test_a_watchdog_report_of_the_control_warp_leaves_the_platform_usable():
    """The control warp reports a wait that never comes, twice on one executable (the group leaves on
    its flag, so the launch ends); a program run after it computes its result."""
    bufs = [isa.BufferInfo("a", (1, 64), "bf16", False), isa.BufferInfo("b", (1, 64), "bf16", True)]
    hang = ProgramAssembler(1, bufs, 2048)
    hang.load(0, 0, 0, 1, 128, 128, 0, signal=1, name="load a")
    hang.compute(0, FAMILIES["add"].opcode, 1024, [0, 0], 1, 64, wait=1 | (1 << 5), parity=1 | (1 << 5),
                 signal=2, name="%s = add (never ready)")
    hang.store(0, 1, 0, 1, 128, 128, 1024, name="store b")
    data = (np.random.default_rng().standard_normal((1, 64), dtype=np.float32) / 8).astype(bfloat16)
    with vdir.compile(hang.finish(), backend="cuda", options=CONTROL, watchdog_ms=200) as exe:
        for _ in range(2):
            with pytest.raises(PlatformError, match=r"watchdog.*never ready.*compute engine"):
                exe(a=data, b=data)
    program = family_program("add", [(1, 64), (1, 64)], ["bf16", "bf16"], (1, 64), "bf16", {})
    inputs = _inputs(program, np.random.default_rng())
    (out,) = _run(program, inputs, CONTROL)
    np.testing.assert_array_equal(out.astype(np.float32), (inputs["in0"].astype(np.float32) + inputs["in1"].astype(
        np.float32)).astype(bfloat16).astype(np.float32))
