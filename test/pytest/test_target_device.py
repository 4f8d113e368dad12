"""The device a program runs on: which target describes it, and the stream ring its kernel gets.

The CUDA backend adjusts the program's target to the GPU it opens
(``TargetDescription.on_device``): at most the device's SMs and shared
memory, and the stream rings of the GPU it is. The ring a kernel gets is the
target's for the program (``TargetDescription.stream_ring_for``): a program
that hands rows through global memory keeps one weight tile in flight per SM
on an H100, one that does not (a gemv) two, as measured faster there
(docs/performance.md, rounds 44 and 45); the H200 keeps two for both.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from vdir import isa
from vdir.frontend import ProgramBuilder
from vdir.frontend.examples import build_mlp_block
from vdir.lowering.emit import lower, lower_to_ptx
from vdir.lowering.options import LoweringOptions
from vdir.target import DEFAULT_STREAM_RING, TARGETS, get_target, target_for_device
from vdir.transforms.pipeline import compile_to_encoded

#: what the driver calls the GPUs measured (``cuDeviceGetName``)
H100_NAME = "NVIDIA H100 80GB HBM3"
H200_NAME = "NVIDIA H200"
#: the stream engine's mbarrier initialisations: the ring's slots, from header byte 80
STREAM_MBARRIER = re.compile(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\+(8\d|9\d|1[0-3]\d)\], 1;")


@pytest.mark.parametrize("name, target", [(H100_NAME, "h100"), ("NVIDIA H100 PCIe", "h100"),
                                          (H200_NAME, "h200"), ("NVIDIA H200 NVL", "h200")])
def test_the_driver_name_finds_the_target(name: str, target: str) -> None:
    found = target_for_device(name)
    assert found is not None and found.name == target


@pytest.mark.parametrize("name", ["NVIDIA A100-SXM4-80GB", "", "NVIDIA H1000", "NVIDIA GH2000"])
def test_an_unknown_gpu_has_no_target(name: str) -> None:
    assert target_for_device(name) is None


def test_each_target_keeps_stream_rings_the_lowering_takes() -> None:
    h200, h100 = get_target("h200"), get_target("h100")
    assert (h200.stream_ring, h200.handoff_stream_ring) == (DEFAULT_STREAM_RING, DEFAULT_STREAM_RING) == (2, 2)
    assert (h100.stream_ring, h100.handoff_stream_ring) == (2, 1)
    programs = {False: _copy_program(), True: _handoff_program()}
    for target in TARGETS.values():
        for handoffs, ring in ((False, target.stream_ring), (True, target.handoff_stream_ring)):
            LoweringOptions(stream_ring=ring)  # a ring the option accepts (it raises on others)
            assert target.stream_ring_for(handoffs) == ring
            assert LoweringOptions().for_program(programs[handoffs], target).stream_ring == ring


def test_on_device_takes_the_devices_limits_and_stream_rings() -> None:
    h200 = get_target("h200")
    on_h100 = h200.on_device(114, 200_000, "NVIDIA H100 PCIe")
    assert (on_h100.name, on_h100.num_sms, on_h100.smem_per_block) == ("h200", 114, 200_000)
    assert (on_h100.stream_ring, on_h100.handoff_stream_ring) == (2, 1)
    assert h200.on_device(132, 10**6, H200_NAME) == h200  # never more than the description says
    unknown = h200.on_device(132, 10**6, "a GPU no target names")
    assert (unknown.stream_ring, unknown.handoff_stream_ring) == (h200.stream_ring, h200.handoff_stream_ring)


def _copy_program() -> isa.EncodedProgram:
    """A tile copied on one SM: no hand-off through global memory."""
    b = ProgramBuilder("copy", target="h200")
    x = b.buffer("x", (16, 64))
    y = b.buffer("y", (16, 64))
    t = b.load(x, (0, 0), (16, 64), name="t")
    b.store(t, y, (0, 0), name="s")
    return compile_to_encoded(b.finish(), num_sms=1)


def _handoff_program() -> isa.EncodedProgram:
    """A small MLP block on two SMs: its activation row goes from SM to SM through global memory."""
    return compile_to_encoded(build_mlp_block(256, 512), num_sms=2)


def test_global_handoffs_are_counters_or_flag_words() -> None:
    copy, handoff = _copy_program(), _handoff_program()
    assert (copy.num_counters, copy.has_global_handoffs) == (0, False)
    assert handoff.num_counters > 0 and handoff.has_global_handoffs
    assert dataclasses.replace(copy, flag_word_bytes=16).has_global_handoffs


@pytest.mark.parametrize("program, h100_ring", [(_copy_program, 2), (_handoff_program, 1)])
def test_the_stream_ring_left_to_the_target_is_its_ring_for_the_program(program, h100_ring: int) -> None:
    prog = program()
    default = lower_to_ptx(prog)
    assert len(STREAM_MBARRIER.findall(default)) == 2  # the H200's, either way
    on_h100 = get_target("h200").on_device(132, 232_448, H100_NAME)
    kernel = lower_to_ptx(prog, on_h100)
    assert len(STREAM_MBARRIER.findall(kernel)) == h100_ring
    # what a launch (and a bench's report) learns of the ring is the one the kernel was built with
    assert (lower(prog).stream_ring, lower(prog, on_h100).stream_ring) == (2, h100_ring)
    # the kernel an H100 runs is the kernel the option asks for by name, byte for byte
    assert kernel == lower_to_ptx(prog, options=f"stream_ring={h100_ring}")
    # an explicit ring wins over the target's
    assert lower_to_ptx(prog, on_h100, options="stream_ring=4") == lower_to_ptx(prog, options="stream_ring=4")


def test_a_ring_left_to_the_target_is_filled_in_before_the_kernel_reads_it() -> None:
    opts = LoweringOptions()
    assert opts.stream_ring == 0 and opts.changed() == {}
    program = _handoff_program()
    assert opts.for_program(program, get_target("h100")).stream_ring == 1
    assert LoweringOptions(stream_ring=4).for_program(program, get_target("h100")).stream_ring == 4
    with pytest.raises(AssertionError, match="the stream ring is the target's"):
        opts.ring_depth(get_target("h200").engines[3].kind)


class _FakeDriver:
    """As much of ``cuda.bindings.driver`` as ``CudaPlatform.device_target`` reads: one sm_90 device
    called ``name``, or none (``count`` 0)."""

    class CUresult:
        CUDA_SUCCESS = 0

    class CUdevice_attribute:
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75

    def __init__(self, name: str, count: int = 1):
        self.name, self.count = name, count

    def cuInit(self, flags: int) -> tuple[int]:
        return (0,)

    def cuDeviceGetCount(self) -> tuple[int, int]:
        return 0, self.count

    def cuDeviceGet(self, ordinal: int) -> tuple[int, int]:
        return 0, ordinal

    def cuDeviceGetAttribute(self, attribute: int, dev: int) -> tuple[int, int]:
        return 0, 9

    def cuDeviceGetName(self, length: int, dev: int) -> tuple[int, bytes]:
        return 0, self.name.encode() + b"\0" * (length - len(self.name))


@pytest.mark.parametrize("driver, target", [
    (_FakeDriver(H100_NAME), "h100"), (_FakeDriver(H200_NAME), "h200"),
    (_FakeDriver("NVIDIA GH2000"), None), (_FakeDriver(H100_NAME, count=0), None),
])
def test_the_cuda_backend_names_the_target_of_its_device(monkeypatch, driver, target) -> None:
    """``CudaPlatform.device_target``, what a caller compiles for (``LlamaDecoder``, the benches): the
    target device 0's name finds, None for a GPU no target describes or without a device."""
    from vdir.device_runtime import cuda
    from vdir.device_runtime.sim import SimPlatform

    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    assert cuda.CudaPlatform.device_target() == target
    assert SimPlatform.device_target() is None  # the simulator runs any target's program as compiled
