"""The backend certification suite: what "a backend works" means.

Every test runs once per known backend; a backend that cannot run on this
machine is skipped with the reason its ``is_available`` gives (``sim``
always runs). Results are compared with numpy / the reference evaluator
within the backend's stated tolerance (``vdir.testing.compare.TOLERANCES``).
"""

from __future__ import annotations

import glob
import math
from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16
from test_sim import FAMILY_CASES, R, cross_sm_program, family_program, gemv_inputs, gemv_program

import vdir
from vdir.device_runtime import PlatformError, backend_names, backend_status, get_platform
from vdir.device_runtime.executable import ArgumentError, Executable
from vdir.families import DTYPES, FAMILIES
from vdir.isa import index_ranges
from vdir.testing.compare import compare_outputs

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(glob.glob(str(REPO / "examples" / "*.mlir")))


@pytest.fixture(params=backend_names())
def backend(request) -> str:
    """Each backend vdir knows; skipped (with the reason) where it cannot run."""
    ok, reason = backend_status(request.param)
    if not ok:
        pytest.skip(f"backend '{request.param}' unavailable: {reason}")
    return request.param


def assert_close(backend: str, actual: dict, expected: dict) -> None:
    mismatch = compare_outputs(actual, expected, backend)
    assert mismatch is None, str(mismatch)


# ---------------------------------------------------------------------------
# Buffers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [bfloat16, np.float32, np.uint8])
def test_buffer_round_trip(backend, dtype):
    platform = get_platform(backend)
    try:
        host = (np.arange(3 * 1000) % 251 - 125).astype(dtype).reshape(3, 1000)
        buf = platform.allocate(host.nbytes)
        platform.copy_in(buf, host)
        back = np.empty_like(host)
        platform.copy_out(buf, back)
        assert np.array_equal(back.view(np.uint8), host.view(np.uint8))
        platform.fill_zero(buf)
        platform.copy_out(buf, back)
        assert not back.view(np.uint8).any()
        platform.free(buf)
    finally:
        platform.close()


def test_device_to_device_copy_and_word_writes(backend):
    platform = get_platform(backend)
    try:
        host = (np.arange(4096) % 251).astype(np.uint8)
        src, dst = platform.allocate(host.nbytes), platform.allocate(host.nbytes)
        platform.copy_in(src, host)
        platform.fill_zero(dst)
        platform.copy_device(dst, src)
        back = np.empty_like(host)
        platform.copy_out(dst, back)
        assert np.array_equal(back, host)
        values = [-5, 7, 2**31 - 1, -(2**31)]
        platform.write_words(dst, values)
        platform.copy_out(dst, back)
        assert back[:16].view(np.int32).tolist() == values and np.array_equal(back[16:], host[16:])
        small = platform.allocate(16)
        with pytest.raises(PlatformError, match="copy_device"):
            platform.copy_device(small, src)
        for buf in (src, dst, small):
            platform.free(buf)
    finally:
        platform.close()


def test_foreign_memory_is_refused_by_wrap(backend):
    """A platform borrows only memory its launches can reach, and says where the tensor is otherwise."""
    from vdir.device_runtime.tensors import dlpack_capsule, tensor_view

    class Elsewhere:  # a DLPack tensor on a device type neither backend runs on (ROCm)
        def __dlpack_device__(self):
            return (10, 0)

        def __dlpack__(self, stream=None, **kwargs):
            return dlpack_capsule(0x10000, (4, 4), "f32", (10, 0), self)

    platform = get_platform(backend)
    try:
        with pytest.raises(PlatformError, match="it is on device type 10"):
            platform.wrap(tensor_view(Elsewhere()))
        host = np.zeros((4, 4), np.float32)
        if backend == "sim":
            buf = platform.wrap(tensor_view(host))
            assert buf.nbytes == host.nbytes and not buf.owned
        else:
            with pytest.raises(PlatformError, match="it is on cpu"):
                platform.wrap(tensor_view(host))
    finally:
        platform.close()


def test_streams_and_shared_memory_limit(backend):
    """The target a platform reports is the device's: on cuda its shared-memory limit is the driver's."""
    platform = get_platform(backend)
    try:
        described = get_platform("sim").target().smem_per_block
        if backend == "cuda":
            from cuda.bindings import driver  # pyright: ignore[reportAttributeAccessIssue]

            attribute = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
            err, queried = driver.cuDeviceGetAttribute(attribute, driver.cuDeviceGet(0)[1])
            assert err == driver.CUresult.CUDA_SUCCESS
            assert platform.target().smem_per_block == min(described, int(queried))
        else:
            assert platform.target().smem_per_block == described
        if backend == "sim":
            assert platform.stream_handle(None) is None
            with pytest.raises(PlatformError, match="has no streams"):
                platform.stream_handle(3)
        else:
            own = platform.stream_handle(None)
            assert not platform.is_capturing(own)
            with pytest.raises(PlatformError, match="expected a stream handle"):
                platform.stream_handle("stream 0")
    finally:
        platform.close()


# ---------------------------------------------------------------------------
# Op families and launches
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(FAMILY_CASES))
def test_each_family(backend, case):
    program, arrays, _, expected = family_program(case)
    with Executable(program, backend=backend) as exe:
        out = exe(*arrays)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    assert_close(backend, {"out": out}, {"out": expected})


def test_cross_sm_counters_over_repeated_launches(backend):
    """Counters are never reset: launch n waits for n * count (epochs)."""
    w, x = gemv_inputs(1)
    with Executable(cross_sm_program().build(), backend=backend) as exe:
        for launch in range(3):
            r = np.full((1, R), launch + 1, bfloat16)
            out = exe(w, x, r)
            expected = FAMILIES["add"].run([FAMILIES["gemv"].run([w, x], {}, "bf16"), r], {}, "bf16")
            assert_close(backend, {"out": out["out"]}, {"out": expected})


def test_outputs_are_returned_by_name_when_several(backend):
    w, x = gemv_inputs(1)
    with Executable(cross_sm_program().build(), backend=backend) as exe:
        result = exe(w=w, x=x, r=np.zeros((1, R), bfloat16))
    assert set(result) == {"h", "out"}
    assert_close(backend, {"h": result["h"]}, {"h": FAMILIES["gemv"].run([w, x], {}, "bf16")})


def test_timing_and_trace(backend, tmp_path):
    """time() gives one positive figure per launch; a GPU records a trace only when lowered for it."""
    w, x = gemv_inputs()
    with Executable(gemv_program().build(), backend=backend) as exe:
        times = exe.time(w, x, iterations=3)
        assert len(times) == 3 and all(t > 0 for t in times)
        exe(w, x)
        if backend == "sim":
            trace = exe.trace(tmp_path / "t.json")
            assert (tmp_path / "t.json").exists() and trace["traceEvents"]
        else:
            with pytest.raises(PlatformError, match="lowered without the trace option"):
                exe.trace(tmp_path / "t.json")


class DLPackOnly:
    """A tensor that only speaks DLPack (as a framework's CPU tensor would)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_dlpack_arguments_are_accepted(backend):
    case = "gemv+acc->f32"
    program, arrays, _, expected = family_program(case)
    with Executable(program, backend=backend) as exe:
        # the f32 accumulator through DLPack (numpy exports f32, not bf16)
        out = exe(arrays[0], arrays[1], DLPackOnly(arrays[2]))
    assert_close(backend, {"out": out}, {"out": expected})


# ---------------------------------------------------------------------------
# Argument validation: every error before anything runs
# ---------------------------------------------------------------------------


@pytest.fixture
def gemv_exe(backend):
    exe = Executable(gemv_program().build(), backend=backend)
    launches = []
    original = exe.platform.launch
    exe.platform.launch = lambda *a, **k: (launches.append(a), original(*a, **k))[1]
    yield exe, launches
    exe.close()


@pytest.mark.parametrize(
    "make_args, message",
    [
        (lambda w, x: ((w,), {}), r"missing argument 'x' \(#2\)"),
        (lambda w, x: ((w, x, x), {}), r"expected at most 2 positional arguments \(w, x\), got 3"),
        (lambda w, x: ((w, x), {"q": x}), r"no argument named 'q' \(inputs: w, x\)"),
        (lambda w, x: ((w, x), {"y": x}), r"'y' is not an input of the program \(its role is out"),
        (lambda w, x: ((w, x), {"x": x}), r"argument 'x' given both by position and by name"),
        (lambda w, x: ((w.astype(np.float32), x), {}),
         r"argument 'w' \(#1\): expected 64x256 bf16, got 64x256 float32"),
        (lambda w, x: ((w, x[:, :128]), {}), r"argument 'x' \(#2\): expected 1x256 bf16, got 1x128 bfloat16"),
        (lambda w, x: ((np.asfortranarray(np.concatenate([w, w])[::2]), x), {}),
         r"argument 'w' \(#1\): the array must be C-contiguous"),
        (lambda w, x: ((w.tolist(), x), {}), r"argument 'w' \(#1\): expected a numpy array or a tensor with __dlpack__ or __cuda_array_interface__, got list"),
    ],
    ids=["missing", "too-many", "unknown-name", "output-given", "duplicate", "dtype", "shape", "layout", "not-an-array"],
)
def test_argument_errors_are_raised_before_launching(gemv_exe, make_args, message):
    exe, launches = gemv_exe
    args, named = make_args(*gemv_inputs())
    with pytest.raises(ArgumentError, match=message):
        exe(*args, **named)
    assert launches == []
    out = exe(*gemv_inputs())  # the executable is still usable afterwards
    assert launches and out.shape == (1, R)


# ---------------------------------------------------------------------------
# The examples, end to end, against the reference evaluator
# ---------------------------------------------------------------------------


TWO_PHASE = """\
vdir.program @two_phase(%x: !vdir.buffer<1x256xbf16>, %w1: !vdir.buffer<512x256xbf16>, %w2: !vdir.buffer<256x512xbf16>, %h: !vdir.buffer<1x512xbf16>, %y: !vdir.buffer<1x256xbf16>) {
  vdir.repeat %i = 0 to 8 {
    %r = affine.apply affine_map<(d0) -> (d0 * 64)> (%i)
    %xt = vdir.load %x[0, 0] : !vdir.buffer<1x256xbf16> -> !vdir.tile<1x256xbf16>
    %wt = vdir.load %w1[%r, 0] : !vdir.buffer<512x256xbf16> -> !vdir.tile<64x256xbf16>
    %ht = vdir.compute gemv(%wt, %xt) : (!vdir.tile<64x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x64xbf16>
    %s = vdir.store %ht, %h[0, %r] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x512xbf16>
  }
  vdir.repeat %j = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 64)> (%j)
    %hb = vdir.load %h[0, 0] : !vdir.buffer<1x512xbf16> -> !vdir.tile<1x512xbf16>
    %wt = vdir.load %w2[%r, 0] : !vdir.buffer<256x512xbf16> -> !vdir.tile<64x512xbf16>
    %yt = vdir.compute gemv(%wt, %hb) : (!vdir.tile<64x512xbf16>, !vdir.tile<1x512xbf16>) -> !vdir.tile<1x64xbf16>
    %s = vdir.store %yt, %y[0, %r] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x256xbf16>
  }
}
"""


@pytest.mark.parametrize("num_sms", [1, 3, 8])
def test_compiled_module_matches_reference(backend, num_sms, tmp_path):
    """vdir.compile on a module: two gemv layers exchanging h through global memory."""
    from vdir.testing.reference import evaluate
    from vdir.tools.common import parse_module_file
    from vdir.tools.vdir_run import random_inputs

    path = tmp_path / "two_phase.mlir"
    path.write_text(TWO_PHASE)
    module = parse_module_file(path)
    with vdir.compile(module, backend=backend, num_sms=num_sms) as exe:
        inputs = random_inputs(exe.signature, seed=num_sms)
        result = exe(**inputs)
    zeros = {b.name: np.zeros(b.shape, bfloat16) for b in exe.outputs}
    expected = evaluate(module, {**zeros, **inputs})
    assert set(result) == {"h", "y"}
    assert_close(backend, result, expected)
    assert np.abs(result["y"].astype(np.float32)).max() > 0


@pytest.mark.parametrize("path", EXAMPLES, ids=[Path(p).name for p in EXAMPLES])
def test_example_matches_reference(backend, path):
    from vdir.testing.reference import evaluate
    from vdir.tools.common import parse_module_file
    from vdir.tools.vdir_run import parse_scalars, random_inputs

    module = parse_module_file(path)
    exe = vdir.compile(module, backend=backend)
    with exe:
        # token ids in the range their readers accept; scalars random in theirs
        inputs = random_inputs(exe.signature, seed=3, offset_ranges=index_ranges(exe.program))
        scalars = parse_scalars([], exe.scalars, seed=3)
        result = exe(**inputs, **scalars)
    outputs = result if isinstance(result, dict) else {exe.outputs[0].name: result}
    zeros = {b.name: np.zeros(b.shape, dtype=DTYPES[b.dtype]) for b in exe.outputs}
    expected = evaluate(module, {**zeros, **inputs}, scalars)
    assert_close(backend, outputs, {k: expected[k] for k in outputs})
    assert any(np.abs(a.astype(np.float32)).max() > 0 for a in outputs.values())
    assert math.isfinite(sum(float(np.abs(a.astype(np.float32)).sum()) for a in outputs.values()))
