"""The embeddable runtime: resident buffers, caller's tensors and streams, device-side epochs and scalars.

Every result is checked bit for bit against a numpy reference of the program
below (a copy at a runtime row, a runtime-length loop of doubled blocks and a
conditional block; doubling is exact in bf16), on fresh random inputs. The
simulator runs everything here; the GPU tests add torch tensors, torch's
stream and a CUDA graph replayed 1000 times.
"""

from __future__ import annotations

import gc
import os
import weakref

import numpy as np
import pytest
from ml_dtypes import bfloat16
from test_runtime_values import parse
from test_sim import R, cross_sm_program, gemv_inputs

import vdir
from vdir import isa
from vdir.device_runtime import PlatformError
from vdir.device_runtime.executable import ArgumentError, Executable
from vdir.device_runtime.sim import Simulation, decode_program
from vdir.device_runtime.tensors import dlpack_capsule, tensor_view
from vdir.families import FAMILIES
from vdir.target import get_target
from vdir.testing.compare import compare_outputs
from vdir.testing.gpu import gpu


def reference(x: np.ndarray, pos: int, n: int) -> np.ndarray:
    """The program's output: rows 2pos..2pos+1 copied, then blocks i < n doubled, then block 7 if pos < 10."""
    y = np.zeros_like(x)
    y[2 * pos : 2 * pos + 2] = x[2 * pos : 2 * pos + 2]
    for i in range(n):
        y[8 * i : 8 * i + 8] = x[8 * i : 8 * i + 8] * 2
    if pos < 10:
        y[56:64] = x[56:64] * 2
    return y


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(np.asarray(a).view(np.uint16), np.asarray(b).view(np.uint16))


def random_x(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((64, 32)).astype(bfloat16)


@pytest.fixture
def exe():
    with vdir.compile(parse(), backend="sim") as e:
        yield e


def test_the_reference_matches_the_evaluator():
    from test_runtime_values import reference as evaluated

    x = random_x(np.random.default_rng(1))
    for pos, n in [(0, 0), (3, 2), (30, 4), (9, 1)]:
        assert same_bits(reference(x, pos, n), evaluated(x, pos, n))


def test_a_bound_buffer_is_used_in_place_by_every_call(exe):
    rng = np.random.default_rng(2)
    x = random_x(rng)
    exe.bind_buffer("x", x)
    assert [b.name for b in exe.call_inputs] == []
    assert same_bits(exe(pos=3, n=2), reference(x, 3, 2))
    x[...] = random_x(rng)  # no copy was taken: the next call sees the new contents
    assert same_bits(exe(pos=5, n=1), reference(x, 5, 1))
    exe.unbind("x")
    with pytest.raises(ArgumentError, match="missing argument 'x'"):
        exe(pos=1, n=1)


def test_upload_copies_once_and_keeps_it(exe):
    x = random_x(np.random.default_rng(3))
    exe.upload("x", x)
    kept = x.copy()
    x[...] = 0  # the executable holds its own copy
    assert same_bits(exe(pos=4, n=3), reference(kept, 4, 3))


def test_launch_writes_into_the_callers_output(exe):
    rng = np.random.default_rng(4)
    x, y = random_x(rng), np.full((64, 32), np.nan, bfloat16)
    exe.launch(x, y=y, pos=12, n=4)
    exe.synchronize()
    assert same_bits(y, reference(x, 12, 4))


def test_buffers_are_shared_between_executables():
    rng = np.random.default_rng(5)
    x = random_x(rng)
    with vdir.compile(parse(), backend="sim") as first, vdir.compile(parse(), backend="sim") as second:
        first.launch(x, pos=2, n=4)  # y: the first executable's own buffer
        second.bind_buffer("x", first.buffer("y"))
        second.launch(pos=20, n=4)
        y1 = reference(x, 2, 4)
        assert same_bits(first.buffer("y").numpy(), y1)
        assert same_bits(second.buffer("y").numpy(), reference(y1, 20, 4))
        # DLPack out of an executable views the buffer in place (numpy reads no bf16: f32 is checked on the GPU)
        view = tensor_view(first.buffer("y"))
        assert view.address == first.buffer("y").numpy_view().ctypes.data and view.shape == (64, 32)


def test_the_launch_state_advances_on_the_device(exe):
    x = random_x(np.random.default_rng(6))
    for k in range(3):
        exe(x, pos=k, n=2)
    words = np.empty(isa.sync_block_words(exe.program.num_counters), np.uint32)
    exe.platform.copy_out(exe._sync, words)
    # each CTA counts the launches it finished in a word of its own; the words of SMs the program
    # does not use stay as they were
    n = exe.program.num_sms
    assert isa.finish_counts(words, n) == [3] * n
    assert isa.launches_done(words) == 3
    assert not words[isa.SYNC_FINISH_WORDS * n:isa.SYNC_HEADER_WORDS].any()


def test_counters_compare_modulo_2_32():
    """A sync block about to wrap: the epoch wraps to 0 and the waits still hold (on a cross-SM program)."""
    program = cross_sm_program().build()
    decoded = decode_program(program, get_target(program.target))
    w, x = gemv_inputs(1)
    counts = {int(f) for f in isa.WAIT_COUNT.column(program.instrs) if f}
    assert counts, "the program has a cross-SM counter wait"
    (count,) = counts
    sync = np.zeros(isa.sync_block_words(program.num_counters), np.uint32)
    isa.set_launches_done(sync, 2**32 - 2)
    sync[isa.SYNC_HEADER_WORDS:] = ((2**32 - 2) * count) % 2**32
    for _ in range(3):  # epochs 2**32 - 1, 0 (wrapped), 1
        r = np.full((1, R), 3, bfloat16)
        arrays = [w, x, r, np.zeros((1, R), bfloat16), np.zeros((1, R), bfloat16)]
        raw = [a.reshape(-1).view(np.uint8) for a in arrays]
        Simulation(decoded, raw, sync).run()
        h = FAMILIES["gemv"].run([w, x], {}, "bf16")
        assert same_bits(arrays[4], FAMILIES["add"].run([h, r], {}, "bf16"))
    assert isa.launches_done(sync) == 2**32 + 1  # the count goes on; the epoch wrapped


def test_scalars_from_the_device_block(exe):
    rng = np.random.default_rng(7)
    x = random_x(rng)
    with pytest.raises(ArgumentError, match=r"no values for the scalars \(pos, n\)"):
        exe.launch(x)
    exe.set_scalars(pos=6, n=3)
    exe.launch(x)
    exe.synchronize()
    assert same_bits(exe.buffer("y").numpy(), reference(x, 6, 3))
    block = exe.scalar_block.view().host
    block[:] = [11, 1]  # written in place, as a device write between graph replays would
    exe.launch(x)
    assert same_bits(exe.buffer("y").numpy(), reference(x, 11, 1))
    block[:] = [31, 1]  # outside 0 to 31: the launch fails, and the executable recovers
    with pytest.raises(PlatformError, match=r"scalar 'pos' = 31 is outside its range 0 to 31"):
        exe.launch(x)
    assert same_bits(exe(x, 2, 4), reference(x, 2, 4))


class _ForeignTensor:
    """A DLPack producer on a device the simulator cannot reach."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, **kwargs):
        return dlpack_capsule(0x10000, (64, 32), "bf16", (2, 0), self)  # never dereferenced


def _misaligned() -> np.ndarray:
    raw = np.zeros(64 * 32 * 2 + 2, np.uint8)
    return raw[2:].view(bfloat16).reshape(64, 32)


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("x", lambda: np.zeros((64, 31), bfloat16), r"argument 'x' \(#1\): expected 64x32 bf16, got 64x31 bf16"),
        ("x", lambda: np.zeros((64, 32), np.float32), r"expected 64x32 bf16, got 64x32 f32"),
        ("x", lambda: np.zeros((32, 64), bfloat16).T, r"must be contiguous in C order"),
        ("x", _misaligned, r"is not 16-byte aligned"),
        ("x", _ForeignTensor, r"argument 'x' \(#1\): it is on cuda:0; the simulator runs on host"),
        ("x", lambda: [[0.0] * 32] * 64, r"expected a numpy array or a tensor with __dlpack__"),
        ("y", lambda: np.zeros((64, 32), bfloat16).view(), "read-only"),
    ],
)
def test_bad_tensors_are_refused_before_launch(exe, name, make, message):
    value = make()
    if message == "read-only":
        value.flags.writeable = False
    with pytest.raises(ArgumentError, match=message):
        exe.bind_buffer(name, value)
    assert not exe._bound


def test_bad_launch_arguments_are_refused_and_nothing_runs(exe):
    x = random_x(np.random.default_rng(8))
    exe.bind_buffer("x", x)
    with pytest.raises(ArgumentError, match=r"'x' is bound to a buffer \(bind_buffer\)"):
        exe.launch(x=x, pos=1, n=1)
    with pytest.raises(ArgumentError, match="no argument named 'z'"):
        exe.launch(z=x, pos=1, n=1)
    with pytest.raises(PlatformError, match="the 'sim' backend has no streams"):
        exe.launch(pos=1, n=1, stream=7)
    with pytest.raises(ArgumentError, match="no buffer named 'w'"):
        exe.bind_buffer("w", x)
    with pytest.raises(ArgumentError, match="buffer 'y' is not bound"):
        exe.unbind("y")


def test_a_bound_tensor_is_kept_alive():
    with vdir.compile(parse(), backend="sim") as e:
        x = random_x(np.random.default_rng(9))
        want = reference(x, 3, 3)
        holder = _Owner(x)
        probe = weakref.ref(holder)
        e.bind_buffer("x", holder)
        del holder, x
        gc.collect()
        assert probe() is not None  # the executable holds the producer
        assert same_bits(e(pos=3, n=3), want)
    gc.collect()
    assert probe() is None  # and lets it go when closed


class _Owner:
    """A DLPack producer owning its memory (freed when the object goes)."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __dlpack__(self, stream=None, **kwargs):
        return dlpack_capsule(self.array.ctypes.data, self.array.shape, "bf16", (1, 0), self)


# ---------------------------------------------------------------------------
# GPU: torch tensors, torch's stream, CUDA graphs
# ---------------------------------------------------------------------------


def _torch():
    return pytest.importorskip("torch")


def _cuda(torch, host: np.ndarray):
    """A bf16 host array as a CUDA tensor (through its bits: torch reads no ml_dtypes array)."""
    return torch.from_numpy(host.view(np.int16)).view(torch.bfloat16).cuda()


def _host(torch, tensor) -> np.ndarray:
    """A bf16 torch tensor as a host bf16 array."""
    return tensor.cpu().view(torch.int16).numpy().view(bfloat16)


@gpu
def test_gpu_launches_on_torch_tensors_and_stream():
    torch = _torch()
    rng = np.random.default_rng(10)
    with vdir.compile(parse(), backend="cuda") as e:
        stream = torch.cuda.Stream()
        x = torch.empty((64, 32), dtype=torch.bfloat16, device="cuda")
        y = torch.empty_like(x)
        e.bind_buffer("x", x)
        for pos, n in [(0, 0), (3, 2), (30, 4), (9, 1), (17, 3)]:
            host = random_x(rng)
            with torch.cuda.stream(stream):
                x.copy_(_cuda(torch, host))
                e.launch(y=y, pos=pos, n=n, stream=stream)
            stream.synchronize()
            got = _host(torch, y)
            assert same_bits(got, reference(host, pos, n)), (pos, n)
        e.synchronize()
        # outputs out through DLPack, in place; bad tensors refused
        assert same_bits(_host(torch, torch.from_dlpack(e.buffer("x"))), host)
        with pytest.raises(ArgumentError, match="it is on cpu"):
            e.launch(y=torch.empty((64, 32), dtype=torch.bfloat16), pos=1, n=1)
        with pytest.raises(ArgumentError, match="must be contiguous"):
            e.launch(y=torch.empty((32, 64), dtype=torch.bfloat16, device="cuda").t(), pos=1, n=1)
        with pytest.raises(ArgumentError, match="expected 64x32 bf16, got 64x32 f32"):
            e.launch(y=torch.empty((64, 32), dtype=torch.float32, device="cuda"), pos=1, n=1)


@gpu
def test_gpu_graph_replays_are_correct_every_time():
    """One launch captured in a CUDA graph, replayed 1000 times with new inputs and new scalars."""
    torch = _torch()
    rng = np.random.default_rng(11)
    with vdir.compile(parse(), backend="cuda") as e:
        x = torch.empty((64, 32), dtype=torch.bfloat16, device="cuda")
        y = torch.empty_like(x)
        scalars = torch.from_dlpack(e.scalar_block)
        e.set_scalars(pos=0, n=0)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):  # warm-up outside the capture (builds the pointer table)
            e.launch(x, y=y, stream=side)
        torch.cuda.synchronize()
        e.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            e.launch(x, y=y, stream=torch.cuda.current_stream())
        for step in range(1000):
            host = random_x(rng)
            pos, n = int(rng.integers(0, 31)), int(rng.integers(0, 5))
            x.copy_(_cuda(torch, host))
            scalars.copy_(torch.tensor([pos, n], dtype=torch.int32))
            graph.replay()
            got = _host(torch, y)
            assert same_bits(got, reference(host, pos, n)), (step, pos, n)
        e.synchronize()
        # a bad scalar written on the device: the replay fails, reported at synchronize; then usable again
        scalars.copy_(torch.tensor([40, 1], dtype=torch.int32))
        graph.replay()
        with pytest.raises(PlatformError, match=r"scalar 'pos' = 40 is outside its range 0 to 31"):
            e.synchronize()
        host = random_x(rng)
        assert same_bits(e(host, 4, 2), reference(host, 4, 2))
        scalars.copy_(torch.tensor([5, 3], dtype=torch.int32))
        x.copy_(_cuda(torch, host))
        graph.replay()
        torch.cuda.synchronize()
        assert same_bits(_host(torch, y), reference(host, 5, 3))


@gpu
def test_gpu_counters_wrap_around_2_32():
    """The sync block forged just below 2**32 launches: the epoch wraps and waits still hold."""
    program = cross_sm_program().build()
    (count,) = {int(f) for f in isa.WAIT_COUNT.column(program.instrs) if f}
    w, x = gemv_inputs(1)
    with Executable(program, backend="cuda") as e:
        forged = np.zeros(isa.sync_block_words(program.num_counters), np.uint32)
        isa.set_launches_done(forged, 2**32 - 2)
        forged[isa.SYNC_HEADER_WORDS:] = ((2**32 - 2) * count) % 2**32
        e.platform.copy_in(e._sync, forged)
        for k in range(3):
            r = np.full((1, R), k + 1, bfloat16)
            out = e(w, x, r)["out"]
            want = FAMILIES["add"].run([FAMILIES["gemv"].run([w, x], {}, "bf16"), r], {}, "bf16")
            assert compare_outputs({"out": out}, {"out": want}, "cuda") is None
        words = np.empty_like(forged)
        e.platform.copy_out(e._sync, words)
        assert isa.launches_done(words) == 2**32 + 1


@gpu
def test_gpu_torch_mlp_example_passes():
    """examples/torch_mlp.py: a torch MLP's forward replaced by a vdir launch, eager and graph-replayed."""
    _torch()
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "torch_mlp.py"
    run = subprocess.run([sys.executable, str(example), "--hidden", "512", "--inter", "1024", "--steps", "5"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "PASS" in run.stdout, run.stdout + run.stderr


def test_fully_stored_outputs_are_not_zeroed():
    """The memset before a launch is skipped exactly where no byte of the initial contents can be seen."""
    from vdir.frontend.examples import build_gemv

    with vdir.compile(build_gemv(256, 512, rows_per_tile=8), backend="sim") as gemv:
        y = gemv.program.buffers.index(next(b for b in gemv.program.buffers if b.name == "y"))
        assert y in isa.fully_stored_buffers(gemv.program) and not gemv._zeroed
    with vdir.compile(parse(), backend="sim") as e:  # rows of y stay unwritten for small n: zeroed
        assert isa.fully_stored_buffers(e.program) == frozenset()
        assert e._zeroed == {1}
        rng = np.random.default_rng(12)
        for pos, n in [(3, 4), (0, 0)]:  # a full run, then one that leaves rows as they were: zeros
            x = random_x(rng)
            assert same_bits(e(x, pos, n), reference(x, pos, n))


@pytest.mark.parametrize("case", ["gemv", "mlp_block", "split_k_gemv", "runtime"])
def test_fully_stored_means_every_byte_is_written(case):
    """Checked against the simulator: a buffer the analysis calls fully stored keeps none of a sentinel."""
    from vdir.device_runtime.sim import simulate
    from vdir.frontend import examples
    from vdir.transforms.pipeline import compile_to_encoded

    modules = {
        "gemv": lambda: examples.build_gemv(128, 256, rows_per_tile=8),
        "mlp_block": lambda: examples.build_mlp_block(256, 512),
        "split_k_gemv": lambda: examples.build_split_k_gemv(128, 1024, splits=4, rows_per_tile=32, combine_cols=64),
        "runtime": parse,
    }
    program = compile_to_encoded(modules[case](), num_sms=4)
    covered = isa.fully_stored_buffers(program)
    rng = np.random.default_rng(13)
    arrays = []
    for info in program.buffers:
        dtype = {"bf16": bfloat16, "f32": np.float32, "i32": np.int32}[info.dtype]
        if info.is_input:
            arrays.append((rng.standard_normal(info.shape) * 0.1).astype(dtype))
        else:
            arrays.append(np.full(info.shape, 0x7F7F7F7F if info.dtype == "i32" else -1234.5, dtype))
    scalars = tuple(sc.lo for sc in program.scalars)
    simulate(program, arrays, scalars=scalars)
    for i, (info, a) in enumerate(zip(program.buffers, arrays, strict=True)):
        if i in covered:
            assert not np.any(np.asarray(a, np.float64) == -1234.5), f"{case}: {info.name} kept bytes"
    if case != "runtime":
        assert any(info.is_output and i in covered for i, info in enumerate(program.buffers)), case


def test_a_bound_output_keeps_what_a_launch_does_not_write(exe):
    """Bound memory is the caller's: rows the program leaves unwritten are not zeroed (a history, a cache)."""
    rng = np.random.default_rng(14)
    x = random_x(rng)
    y = np.full((64, 32), 7, bfloat16)
    exe.bind_buffer("y", y)
    exe.launch(x, pos=30, n=0)  # writes rows 60..61 only (pos >= 10: block 7 is off)
    expected = np.full((64, 32), 7, bfloat16)
    expected[60:62] = x[60:62]
    assert same_bits(y, expected)
    exe.unbind("y")
    assert same_bits(exe(x, 30, 0), reference(x, 30, 0))  # unbound: zeroed as the reference assumes


def test_words_written_into_a_buffer(exe):
    """A token id written into an i32-sized slot of a buffer, as a decoder feeds a prompt token."""
    block = exe.scalar_block
    block.write_words([9, 2])
    assert block.numpy().tolist() == [9, 2]
    x = random_x(np.random.default_rng(15))
    exe.launch(x)
    assert same_bits(exe.buffer("y").numpy(), reference(x, 9, 2))


def test_finish_counts_are_per_cta_and_wrap_at_2_64():
    """A launch on n SMs adds one to each of its CTAs' counts and leaves the others; the counts are
    u64s that wrap, and the launches done are CTA 0's."""
    sync = np.zeros(isa.sync_block_words(0), np.uint32)
    isa.set_launches_done(sync, 2**64 - 1)
    isa.finish_launch(sync, 3)
    assert isa.finish_counts(sync, 4) == [0, 0, 0, 2**64 - 1]
    assert isa.launches_done(sync) == 0
    isa.set_launches_done(sync, 2**32 - 1)  # the carry into the high word
    isa.finish_launch(sync, isa.SYNC_MAX_SMS)
    assert isa.finish_counts(sync, isa.SYNC_MAX_SMS) == [2**32] * isa.SYNC_MAX_SMS


# ---------------------------------------------------------------------------
# Hostile calls: each refused by name before anything is written, the executable usable after
# ---------------------------------------------------------------------------


def test_an_output_that_shares_memory_with_another_buffer_is_refused(exe):
    """``launch(a, y=a)`` zeroed y, and with it x, before the program read x: every element came back 0."""
    x = random_x(np.random.default_rng(11))
    a = x.copy()
    with pytest.raises(ArgumentError, match=r"'x' \(#1\) and 'y' \(#2\) share memory, and the program writes one"):
        exe.launch(a, y=a, pos=3, n=2)
    assert same_bits(a, x)  # nothing written
    overlapping = np.zeros((96, 32), bfloat16)
    overlapping[:64] = x
    exe.bind_buffer("x", overlapping[:64])  # a partial overlap, through bind_buffer: refused at the launch
    with pytest.raises(ArgumentError, match=r"'x' \(#1\) and 'y' \(#2\) share memory"):
        exe.launch(y=overlapping[32:], pos=3, n=2)
    exe.unbind("x")
    y = np.zeros_like(x)
    exe.launch(x, y=y, pos=3, n=2)
    assert same_bits(y, reference(x, 3, 2))


def test_a_launch_without_scalars_writes_nothing_before_it_is_refused(exe):
    x, y = random_x(np.random.default_rng(12)), np.full((64, 32), 7, bfloat16)
    with pytest.raises(ArgumentError, match=r"no values for the scalars \(pos, n\)"):
        exe.launch(x, y=y)
    assert np.all(y.astype(np.float32) == 7)  # it zeroed the caller's y before


def test_an_array_whose_strides_are_not_whole_elements_is_refused(exe):
    """A row stride of 65 bytes looked contiguous (65 // 2 elements) and the launch wrote a copy."""
    raw = np.zeros(65 * 64 + 64, np.uint8)
    y = np.lib.stride_tricks.as_strided(raw.view(bfloat16), shape=(64, 32), strides=(65, 2))
    with pytest.raises(ArgumentError, match=r"argument 'y' \(#2\): its strides \(65, 2 bytes\) are not whole 2-byte"):
        exe.launch(random_x(np.random.default_rng(13)), y=y, pos=3, n=2)


def test_set_scalars_refuses_extra_and_unknown_values(exe):
    with pytest.raises(ArgumentError, match=r"expected at most 2 scalars \(pos, n\), got 3"):
        exe.set_scalars(3, 2, 99)
    with pytest.raises(ArgumentError, match=r"no scalar named 'nn' \(scalars: pos, n\)"):
        exe.set_scalars(pos=3, n=2, nn=5)
    exe.set_scalars(pos=3, n=2)
    x = random_x(np.random.default_rng(14))
    y = np.zeros_like(x)
    exe.launch(x, y=y)
    assert same_bits(y, reference(x, 3, 2))


@pytest.mark.parametrize("values, message", [
    ([0] * 2049, "2049 words do not fit the buffer's 1024"),
    ([2**40], r"word 0 \(1099511627776\) is outside the s32 range"),
    ([1.7], "word 0 is 1.7, not an integer"),
    (["a"], "word 0 is 'a', not an integer"),
    ([True], "word 0 is True, not an integer"),
    (5, "expected a sequence of integers, got int"),
])
def test_write_words_refuses_what_is_not_s32_words(exe, values, message):
    with pytest.raises(ArgumentError, match=message):
        exe.buffer("y").write_words(values)
    exe.scalar_block.write_words(np.array([3, 2], np.int64))
    assert exe.scalar_block.numpy().tolist() == [3, 2]


def test_the_scalar_block_of_a_program_without_scalars_is_empty():
    from vdir.frontend.examples import build_gemv

    with vdir.compile(build_gemv(M=64, K=128), backend="sim", num_sms=4) as g:
        block = g.scalar_block
        assert block.numpy().shape == (0,) and block.numpy_view().shape == (0,)
        assert np.from_dlpack(block).shape == (0,)


def test_a_device_array_of_a_closed_executable_is_a_platform_error():
    e = vdir.compile(parse(), backend="sim")
    buf = e.buffer("y")
    e.close()
    for use in (buf.numpy_view, buf.numpy, lambda: np.from_dlpack(buf)):
        with pytest.raises(PlatformError, match="the executable is closed"):
            use()


def test_a_trace_path_that_cannot_be_written_is_refused_first(exe, tmp_path):
    x = random_x(np.random.default_rng(15))
    exe(x, 3, 2)
    with pytest.raises(ArgumentError, match="trace: no such folder"):
        exe.trace(tmp_path / "missing" / "t.json")
    with pytest.raises(ArgumentError, match="is a folder"):
        exe.trace(tmp_path)
    with pytest.raises(ArgumentError, match="the path is a int"):
        exe.trace(3)  # type: ignore[arg-type]
    exe.trace(tmp_path / "t.json")
    assert (tmp_path / "t.json").stat().st_size > 0


def test_a_host_call_reads_bf16_dlpack_tensors(exe):
    """The host call read DLPack tensors with numpy's from_dlpack, which knows no bf16."""
    x = random_x(np.random.default_rng(16))
    with vdir.compile(parse(), backend="sim") as other:
        other.upload("x", x)
        assert same_bits(exe(other.buffer("x"), 3, 2), reference(x, 3, 2))


class _RaisingInterface:
    """A tensor whose protocol attribute raises what torch raises for a tensor that requires grad."""

    @property
    def __cuda_array_interface__(self):  # noqa: PLW3201 -- the protocol's name
        raise RuntimeError("requires grad")


def test_a_protocol_attribute_that_raises_is_an_argument_error(exe):
    with pytest.raises(ArgumentError, match=r"argument 'x' \(#1\): its __cuda_array_interface__ failed "
                                            r"\(RuntimeError: requires grad\)"):
        exe.launch(_RaisingInterface(), pos=3, n=2)
    with pytest.raises(ArgumentError, match="its __cuda_array_interface__ failed"):
        exe(_RaisingInterface(), 3, 2)


class _NullCapsule:
    """A DLPack producer whose tensor has no data."""

    def __dlpack__(self, stream=None):  # noqa: ARG002 -- the protocol's signature
        return dlpack_capsule(0, (64, 32), "bf16", (1, 0), self)

    def __dlpack_device__(self):
        return (1, 0)


def test_a_dlpack_tensor_without_data_is_named(exe):
    """It was 'it is on cpu; the simulator runs on host memory', which contradicts itself."""
    with pytest.raises(ArgumentError, match=r"argument 'x' \(#1\): its DLPack tensor's data pointer is NULL"):
        exe.launch(_NullCapsule(), pos=3, n=2)


def test_numpy_integers_count_as_integers():
    with vdir.compile(parse(), backend="sim", num_sms=np.int64(4)) as e:
        x = random_x(np.random.default_rng(17))
        assert same_bits(e(x, np.int64(3), np.int32(2)), reference(x, 3, 2))
        e.upload("x", x)
        assert len(e.time(pos=3, n=2, iterations=np.int64(2))) == 2


class _MalformedInterface:
    """A CUDA array interface whose fields are of the wrong kind."""

    def __init__(self, **fields):
        self.__cuda_array_interface__ = {"shape": (64, 32), "typestr": "<f4", "data": (0, False), "version": 3,
                                          **fields}


@pytest.mark.parametrize("fields", [{"data": ("abc", False)}, {"strides": 5}, {"strides": ("a", "b")},
                                    {"shape": (-1, 32)}, {"strides": (4,)}])
def test_a_malformed_cuda_array_interface_is_an_argument_error(exe, fields):
    with pytest.raises(ArgumentError, match=r"argument 'x' \(#1\): its __cuda_array_interface__ is malformed"):
        exe.launch(_MalformedInterface(**fields), pos=3, n=2)


class _ForgedCapsule:
    """A DLPack producer whose tensor header ``forge`` changes after it is made."""

    def __init__(self, forge):
        self.forge = forge
        self.data = np.zeros((64, 32), bfloat16)

    def __dlpack__(self, stream=None):  # noqa: ARG002 -- the protocol's signature
        import ctypes

        from vdir.device_runtime.tensors import _DLTensor

        capsule = dlpack_capsule(self.data.ctypes.data, (64, 32), "bf16", (1, 0), self)
        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        self.forge(_DLTensor.from_address(get_pointer(capsule, b"dltensor")))
        return capsule

    def __dlpack_device__(self):
        return (1, 0)


def _set(field, value):
    return lambda t: setattr(t, field, value)


def _set_dim(i, value):
    return lambda t: t.shape.__setitem__(i, value)


@pytest.mark.parametrize("forge, message", [
    (_set("ndim", 2**31 - 1), r"malformed \(2147483647 dimensions\)"),  # its shape was read: a crash
    (_set("ndim", 100_000), r"malformed \(100000 dimensions\)"),
    (_set_dim(0, -1), r"malformed \(shape \(-1, 32\)\)"),
    (lambda t: (_set_dim(0, 2**40)(t), _set_dim(1, 2**40)(t)),  # its bytes overflowed int64 to 0
     r"malformed \(shape \(1099511627776, 1099511627776\)\)"),
])
def test_a_malformed_dlpack_tensor_is_an_argument_error(exe, forge, message):
    with pytest.raises(ArgumentError, match=r"argument 'x' \(#1\): its DLPack tensor is " + message):
        exe.launch(_ForgedCapsule(forge), pos=3, n=2)


def test_an_encoded_program_keeps_its_target_and_sms():
    """Given with an encoded program, ``target`` and ``num_sms`` must be the ones it was compiled for: it
    had run on its own SMs whatever ``num_sms`` said, and on a platform of the other GPU."""
    from vdir.compiler import CompileArgumentError
    from vdir.transforms.pipeline import compile_to_encoded

    program = compile_to_encoded(parse(), num_sms=4)
    with pytest.raises(CompileArgumentError, match="placed on 4 SMs, not 2; compile its source with num_sms=2"):
        vdir.compile(program, backend="sim", num_sms=2)
    with pytest.raises(CompileArgumentError, match="compiled for target 'h200', not 'h100'"):
        vdir.compile(program, backend="sim", target="h100")
    with vdir.compile(program, backend="sim", num_sms=4, target="h200") as e:
        assert e.program is program


def test_the_entry_points_name_an_argument_of_the_wrong_kind():
    from vdir.compiler import CompileArgumentError
    from vdir.transforms.pipeline import compile_to_encoded

    with pytest.raises(CompileArgumentError, match="compile_to_encoded takes an xDSL ModuleOp, got NoneType"):
        compile_to_encoded(None)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="Executable takes an EncodedProgram .*, got str"):
        Executable("program.mlir")  # type: ignore[arg-type]


def test_a_trace_that_cannot_be_written_is_named(exe, tmp_path):
    from vdir.device_runtime.trace import TraceWriteError

    exe(random_x(np.random.default_rng(3)), 3, 2)
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with pytest.raises(TraceWriteError, match="^/dev/full: cannot write the trace \\(No space left on device\\)$"):
        exe.trace("/dev/full")
    assert exe.trace(tmp_path / "t.json")["traceEvents"]  # still usable


class _DLPackOnly:
    """A host array seen through DLPack alone."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):  # noqa: ARG002 -- the protocol's signature
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.bool_])
def test_a_dlpack_tensor_of_another_element_type_says_so(exe, dtype):
    """It said its elements were not dense rows, and asked for a contiguous copy."""
    with pytest.raises(ArgumentError, match=r"argument 'x' \(#1\): a _DLPackOnly of \w+ elements; a program's "
                                            r"buffers hold bf16, f32, i32 or i64"):
        exe(_DLPackOnly(np.zeros((64, 32), dtype)), 3, 2)
