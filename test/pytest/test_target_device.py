"""The device a program runs on: which target describes it, and the stream ring its kernel gets.

The CUDA backend adjusts the program's target to the GPU it opens
(``TargetDescription.on_device``): at most the device's SMs and shared
memory, and the stream ring of the GPU it is, so that a program compiled
for the H200 (the default target) keeps one weight tile in flight per SM
on an H100, as measured faster there (docs/performance.md, round 44).
"""

from __future__ import annotations

import re

import pytest

from vdir.frontend import ProgramBuilder
from vdir.lowering.emit import lower_to_ptx
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


def test_each_target_keeps_a_stream_ring_the_lowering_takes() -> None:
    assert get_target("h200").stream_ring == DEFAULT_STREAM_RING == 2
    assert get_target("h100").stream_ring == 1
    for target in TARGETS.values():
        LoweringOptions(stream_ring=target.stream_ring)  # a ring the option accepts (it raises on others)
        assert LoweringOptions().for_target(target).stream_ring == target.stream_ring


def test_on_device_takes_the_devices_limits_and_stream_ring() -> None:
    h200 = get_target("h200")
    on_h100 = h200.on_device(114, 200_000, "NVIDIA H100 PCIe")
    assert (on_h100.name, on_h100.num_sms, on_h100.smem_per_block, on_h100.stream_ring) == ("h200", 114, 200_000, 1)
    assert h200.on_device(132, 10**6, H200_NAME) == h200  # never more than the description says
    unknown = h200.on_device(132, 10**6, "a GPU no target names")
    assert unknown.stream_ring == h200.stream_ring


def _program():
    b = ProgramBuilder("copy", target="h200")
    x = b.buffer("x", (16, 64))
    y = b.buffer("y", (16, 64))
    t = b.load(x, (0, 0), (16, 64), name="t")
    b.store(t, y, (0, 0), name="s")
    return compile_to_encoded(b.finish(), num_sms=1)


def test_the_stream_ring_left_to_the_target_is_its_ring() -> None:
    program = _program()
    default = lower_to_ptx(program)
    assert len(STREAM_MBARRIER.findall(default)) == get_target("h200").stream_ring
    on_h100 = get_target("h200").on_device(132, 232_448, H100_NAME)
    one = lower_to_ptx(program, on_h100)
    assert len(STREAM_MBARRIER.findall(one)) == 1
    # the kernel an H100 runs is the kernel the option asks for by name, byte for byte
    assert one == lower_to_ptx(program, options="stream_ring=1")
    # an explicit ring wins over the target's
    assert lower_to_ptx(program, on_h100, options="stream_ring=4") == lower_to_ptx(program, options="stream_ring=4")


def test_a_ring_left_to_the_target_is_filled_in_before_the_kernel_reads_it() -> None:
    opts = LoweringOptions()
    assert opts.stream_ring == 0 and opts.changed() == {}
    assert opts.for_target(get_target("h100")).stream_ring == 1
    with pytest.raises(AssertionError, match="the stream ring is the target's"):
        opts.ring_depth(get_target("h200").engines[3].kind)
