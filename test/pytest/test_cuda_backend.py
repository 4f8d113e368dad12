"""The CUDA backend on a real GPU (skipped, with the reason, without one).

Each family alone on fresh random bf16 (or f32) inputs against the numpy semantics in
``vdir.families``, with tensor copies, with plain bulk copies, and with every warp-uniform branch
checked; a two-SM program joined by a global counter; an
unsatisfiable wait that must come back as a watchdog error, not a hang; and
programs encoded with loop records against their unrolled encoding.

Tolerance: bf16 outputs within ``2e-2 * max|ref| + 2e-2 * |ref|`` (one bf16
rounding is 2^-8 relative; the kernel sums in a different order than numpy
and may round an intermediate differently near a tie); f32 outputs within
``1e-3`` of the output scale.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from ml_dtypes import bfloat16

from vdir import isa
from vdir.device_runtime.cuda import CudaPlatform
from vdir.device_runtime.platform import LaunchSpec, PlatformError
from vdir.device_runtime.sim import simulate
from vdir.families import FAMILIES
from vdir.frontend import examples
from vdir.lowering.options import LoweringOptions
from vdir.testing.assembler import ProgramAssembler, family_program, run_once
from vdir.transforms.pipeline import compile_to_encoded

pytestmark = pytest.mark.gpu

_OK, _WHY = CudaPlatform.is_available()


@pytest.fixture(scope="module")
def platform():
    """One CudaPlatform for the module (skips without a usable GPU)."""
    if not _OK:
        pytest.skip(f"cuda backend unavailable: {_WHY}")
    p = CudaPlatform()
    yield p
    p.close()


def rand(rng, shape, dtype="bf16", scale=1.0):
    """Random normal data (never zeros) in the given dtype."""
    a = rng.standard_normal(shape).astype(np.float32) * scale
    return a.astype(bfloat16) if dtype == "bf16" else a


def check(out, ref, dtype):
    """Assert ``out`` matches ``ref`` within the module docstring tolerance."""
    out = np.asarray(out, dtype=np.float32)
    ref = np.asarray(ref, dtype=np.float32)
    assert np.all(np.isfinite(out))
    scale = float(np.max(np.abs(ref))) or 1.0
    if dtype == "bf16":
        tol = 2e-2 * scale + 2e-2 * np.abs(ref)
    else:
        tol = 1e-3 * scale + 1e-3 * np.abs(ref)
    bad = np.abs(out - ref) > tol
    assert not bad.any(), f"{bad.sum()} of {bad.size} elements off; max err {np.max(np.abs(out - ref))}"


CASES = {
    # name: (family, shapes, dtypes, out_shape, out_dtype, params)
    "gemv": ("gemv", [(24, 2048), (1, 2048)], ["bf16", "bf16"], (1, 24), "bf16", {}),
    "gemv_odd_k": ("gemv", [(8, 2056), (1, 2056)], ["bf16", "bf16"], (1, 8), "bf16", {}),
    "gemv_split_rows": ("gemv", [(3, 1000), (1, 1000)], ["bf16", "bf16"], (1, 3), "bf16", {}),
    "gemv_acc_f32": ("gemv", [(16, 1024), (1, 1024), (1, 16)], ["bf16", "bf16", "f32"], (1, 16), "f32", {}),
    "gemv_f32_out": ("gemv", [(16, 512), (1, 512)], ["bf16", "bf16"], (1, 16), "f32", {}),
    "rmsnorm": ("rmsnorm", [(1, 4096), (1, 4096)], ["bf16", "bf16"], (1, 4096), "bf16", {"eps": 1e-5}),
    "silu_mul": ("silu_mul", [(4, 512), (4, 512)], ["bf16", "bf16"], (4, 512), "bf16", {}),
    "add": ("add", [(3, 200), (3, 200)], ["bf16", "bf16"], (3, 200), "bf16", {}),
    "add_f32": ("add", [(3, 200), (3, 200)], ["f32", "f32"], (3, 200), "f32", {}),
    "add_f32_to_bf16": ("add", [(3, 200), (3, 200)], ["f32", "f32"], (3, 200), "bf16", {}),
    "add_bf16_to_f32": ("add", [(3, 200), (3, 200)], ["bf16", "bf16"], (3, 200), "f32", {}),
    "sum_rows": ("sum_rows", [(12, 520)], ["f32"], (1, 520), "f32", {}),
    "sum_rows_bf16": ("sum_rows", [(12, 520)], ["f32"], (1, 520), "bf16", {}),
    "rope": ("rope", [(32, 128), (1, 128), (1, 128)], ["bf16"] * 3, (32, 128), "bf16", {}),
    "rmsnorm_rows": ("rmsnorm_rows", [(16, 128), (1, 128)], ["bf16"] * 2, (16, 128), "bf16", {"eps": 1e-6}),
    "rope_f32_tables": ("rope", [(8, 64), (1, 64), (1, 64)], ["bf16", "f32", "f32"], (8, 64), "bf16", {}),
    "rmsnorm_rope": ("rmsnorm_rope", [(16, 128), (1, 128), (1, 128), (1, 128)], ["bf16"] * 4, (16, 128), "bf16",
                     {"eps": 1e-6}),
    "rmsnorm_rope_f32_tables": ("rmsnorm_rope", [(8, 64), (1, 64), (1, 64), (1, 64)], ["bf16", "bf16", "f32", "f32"],
                                (8, 64), "bf16", {"eps": 1e-6}),
    "rmsnorm_gemv": ("rmsnorm_gemv", [(16, 2048), (1, 2048), (1, 2048)], ["bf16"] * 3, (1, 16), "bf16",
                     {"eps": 1e-5}),
    "gemv_silu_mul_0": ("gemv_silu_mul", [(16, 1024), (1, 1024), (1, 16)], ["bf16"] * 3, (1, 16), "bf16",
                        {"operand": 0}),
    "gemv_silu_mul_1": ("gemv_silu_mul", [(16, 1024), (1, 1024), (1, 16)], ["bf16"] * 3, (1, 16), "bf16",
                        {"operand": 1}),
    "gemv_add": ("gemv_add", [(16, 1024), (1, 1024), (1, 16)], ["bf16"] * 3, (1, 16), "bf16", {}),
    # 8-row tiles: each family's row block (K split over the warps, a partial last group)
    "gemv_rows8": ("gemv", [(8, 2056), (1, 2056)], ["bf16"] * 2, (1, 8), "bf16", {}),
    "rmsnorm_gemv_rows8": ("rmsnorm_gemv", [(8, 2056), (1, 2056), (1, 2056)], ["bf16"] * 3, (1, 8), "bf16",
                           {"eps": 1e-5}),
    "gemv_silu_mul_rows8": ("gemv_silu_mul", [(8, 4104), (1, 4104), (1, 8)], ["bf16"] * 3, (1, 8), "bf16",
                            {"operand": 1}),
    "gemv_add_rows8": ("gemv_add", [(8, 8200), (1, 8200), (1, 8)], ["bf16"] * 3, (1, 8), "bf16", {}),
    # 32 and 48 rows: each warp sums four rows at once (and then two), one epilogue for them, each lane its row
    "gemv_acc_f32_rows32": ("gemv", [(32, 1024), (1, 1024), (1, 32)], ["bf16", "bf16", "f32"], (1, 32), "f32", {}),
    "gemv_rows48": ("gemv", [(48, 1032), (1, 1032)], ["bf16"] * 2, (1, 48), "bf16", {}),
    "rmsnorm_gemv_rows32": ("rmsnorm_gemv", [(32, 1024), (1, 1024), (1, 1024)], ["bf16"] * 3, (1, 32), "bf16",
                            {"eps": 1e-5}),
    "gemv_silu_mul_rows32": ("gemv_silu_mul", [(32, 1024), (1, 1024), (1, 32)], ["bf16"] * 3, (1, 32), "bf16",
                             {"operand": 0}),
    "gemv_add_rows48": ("gemv_add", [(48, 520), (1, 520), (1, 48)], ["bf16"] * 3, (1, 48), "bf16", {}),
}


@pytest.fixture(params=["tensor", "plain", "checked"])
def copies(request) -> LoweringOptions:
    """Lower with tensor copies (the default), with plain bulk copies and st.global, or with tensor
    copies and every branch declared warp-uniform checked (``uniform_checks``: a broken claim raises)."""
    return LoweringOptions(tensor_copies=request.param != "plain", uniform_checks=request.param == "checked")


@pytest.mark.parametrize("case", sorted(CASES))
def test_family_alone(platform, copies, case):
    """One family on one SM: load inputs, compute, store; vs numpy (both copy paths)."""
    fam, shapes, dtypes, oshape, odt, params = CASES[case]
    rng = np.random.default_rng()
    scale = 1.0 / np.sqrt(shapes[0][1]) if "gemv" in fam else 1.0
    ins = [rand(rng, s, d, scale if i == 0 else 1.0) for i, (s, d) in enumerate(zip(shapes, dtypes, strict=True))]
    prog = family_program(fam, shapes, dtypes, oshape, odt, params)
    poison = np.full(oshape, np.nan, dtype=bfloat16 if odt == "bf16" else np.float32)
    (out,) = run_once(platform, prog, ins + [poison], artifact=platform.load_artifact(prog, copies))
    ref = FAMILIES[fam].run(ins, params, odt)
    check(out, ref, odt)


def test_two_sms_with_a_counter(platform):
    """SM 0: y = gemv(w, x), stored, counter 0 released; SM 1 waits for the
    counter, loads y and computes z = y + r."""
    R, K = 32, 2048
    rng = np.random.default_rng()
    w, x, r = rand(rng, (R, K), scale=K ** -0.5), rand(rng, (1, K)), rand(rng, (1, R))
    y0 = np.zeros((1, R), bfloat16)
    z0 = np.full((1, R), np.nan, bfloat16)
    bufs = [isa.BufferInfo("w", (R, K), "bf16", False), isa.BufferInfo("x", (1, K), "bf16", False),
            isa.BufferInfo("r", (1, R), "bf16", False), isa.BufferInfo("y", (1, R), "bf16", True),
            isa.BufferInfo("z", (1, R), "bf16", True)]
    a = ProgramAssembler(2, bufs, 2 * R * K + 2 * K + 4096, num_counters=1)
    W, X, Y = 0, 2 * R * K, 2 * R * K + 2 * K
    a.load(0, 0, 0, R, 2 * K, 2 * K, W, signal=1, name="load w")
    a.load(0, 1, 0, 1, 2 * K, 2 * K, X, signal=2, name="load x")
    a.compute(0, FAMILIES["gemv"].opcode, Y, [W, X], R, K, wait=3, parity=3, signal=4, name="gemv")
    a.store(0, 3, 0, 1, 2 * R, 2 * R, Y, wait=4, parity=4, release_counter=0, name="store y")
    A, B, C = 0, 1024, 2048
    a.load(1, 3, 0, 1, 2 * R, 2 * R, A, wait_counter=0, wait_count=1, signal=1, name="load y")
    a.load(1, 2, 0, 1, 2 * R, 2 * R, B, signal=2, name="load r")
    a.compute(1, FAMILIES["add"].opcode, C, [A, B], 1, R, wait=3, parity=3, signal=4, name="add")
    a.store(1, 4, 0, 1, 2 * R, 2 * R, C, wait=4, parity=4, name="store z")
    prog = a.finish()
    art = platform.load_artifact(prog)
    arrays = [w, x, r, y0, z0]
    dev = [platform.allocate(arr.nbytes) for arr in arrays]
    sync = platform.allocate(prog.sync_bytes)
    platform.fill_zero(sync)
    try:
        # the sync block persists over launches: launch e waits for e * count, and advances it on the device
        for epoch in (1, 2, 3):
            for d, arr in zip(dev, arrays, strict=True):
                platform.copy_in(d, arr)
            platform.launch(art, LaunchSpec(prog, dev, sync))
            platform.synchronize()
            y, z = np.empty_like(y0), np.empty_like(z0)
            platform.copy_out(dev[3], y)
            platform.copy_out(dev[4], z)
            words = np.zeros(isa.sync_block_words(1), np.uint32)
            platform.copy_out(sync, words)
            assert isa.finish_counts(words, prog.num_sms) == [epoch] * prog.num_sms
            assert isa.launches_done(words) == epoch
            assert int(words[isa.SYNC_HEADER_WORDS]) == epoch
    finally:
        for d in dev + [sync]:
            platform.free(d)
    yref = FAMILIES["gemv"].run([w, x], {}, "bf16")
    check(y, yref, "bf16")
    check(z, FAMILIES["add"].run([y, r], {}, "bf16"), "bf16")


def test_unsatisfiable_wait_reports_watchdog(platform):
    """A wait that can never be satisfied comes back as a watchdog error naming the micro-op."""
    bufs = [isa.BufferInfo("a", (1, 64), "bf16", False), isa.BufferInfo("b", (1, 64), "bf16", True)]
    a = ProgramAssembler(1, bufs, 2048, num_counters=1)
    a.load(0, 0, 0, 1, 128, 128, 0, signal=1, name="load a")
    a.compute(0, FAMILIES["add"].opcode, 1024, [0, 0], 1, 64, wait=1 | (1 << 5), parity=1 | (1 << 5),
              signal=2, name="%s = add (never ready)")
    a.store(0, 1, 0, 1, 128, 128, 1024, name="store b")  # no wait: only the compute engine hangs
    prog = a.finish()
    data = rand(np.random.default_rng(), (1, 64))
    t = time.monotonic()
    with pytest.raises(PlatformError) as ei:
        run_once(platform, prog, [data, np.zeros((1, 64), bfloat16)], options={"watchdog_ms": 200})
    assert time.monotonic() - t < 5.0
    msg = str(ei.value)
    assert "watchdog" in msg and "never ready" in msg and "compute engine" in msg, msg
    assert "0x21" in msg, msg
    # a counter wait that never comes is reported with the counter
    b = ProgramAssembler(1, bufs, 2048, num_counters=1)
    b.load(0, 0, 0, 1, 128, 128, 0, signal=1, wait_counter=0, wait_count=3, name="load a (starved)")
    b.store(0, 1, 0, 1, 128, 128, 0, name="store b")
    with pytest.raises(PlatformError, match=r"load engine.*counter 0 \(value 0, wanted 3\)"):
        run_once(platform, b.finish(), [data, np.zeros((1, 64), bfloat16)], options={"watchdog_ms": 200})
    # the platform still works afterwards
    (out,) = run_once(platform, family_program("add", [(1, 64), (1, 64)], ["bf16", "bf16"], (1, 64)),
                      [data, data, np.zeros((1, 64), bfloat16)])
    check(out, FAMILIES["add"].run([data, data], {}, "bf16"), "bf16")


#: (name, builder, SMs) of programs whose queues reroll into loops
LOOPED = {
    "gemv 1 SM": (lambda: examples.build_gemv(1024, 2048), 1),
    "gemv 2 SMs": (lambda: examples.build_gemv(2048, 2048), 2),
    "mlp stack 1 SM": (lambda: examples.build_mlp_stack(4, 512, 1024), 1),
}


@pytest.mark.parametrize("load_path", ["bulk", "lsu"])
@pytest.mark.parametrize("name", sorted(LOOPED))
def test_looped_program_matches_its_unrolled_form(platform, copies, load_path, name):
    """A program encoded with loop records gives the same bytes on the GPU as its unrolled encoding
    (and the unrolled one matches the simulator): the kernel's loop walk runs the same instructions."""
    build, sms = LOOPED[name]
    rolled = compile_to_encoded(build(), num_sms=sms)
    plain = compile_to_encoded(build(), num_sms=sms, reroll=False)
    assert rolled.has_loops and not plain.has_loops
    rng = np.random.default_rng(0)
    inputs = [rand(rng, b.shape, b.dtype, 0.125) for b in plain.buffers]
    options = LoweringOptions(tensor_copies=copies.tensor_copies, load_path=load_path)
    outs = [run_once(platform, p, [a.copy() for a in inputs], artifact=platform.load_artifact(p, options))
            for p in (plain, rolled)]
    for a, b in zip(*outs, strict=True):
        assert np.array_equal(a.view(np.uint16), b.view(np.uint16))
    simulated = [a.copy() for a in inputs]
    simulate(plain, simulated)
    for a, b in zip(outs[0], [s for s, info in zip(simulated, plain.buffers, strict=True) if info.is_output],
                    strict=True):
        check(a, b, "bf16")
