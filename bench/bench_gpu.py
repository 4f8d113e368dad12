"""GPU benchmark: vdir's persistent kernel against the copy ceiling and cuBLAS.

Run on a machine with an H100/H200 and PyTorch:

    python3 bench/bench_gpu.py [--quick]

Prints one table; every figure comes from this one run. Times are medians of
many launches timed with CUDA events. Each case rotates several weight sets
whose total is well over the 60 MiB L2, so the weights stream from HBM.
Bandwidth counts the bytes that must move: weights + x + y for a gemv, read +
written for the copy.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from vdir import isa  # noqa: E402
from vdir.families import FAMILIES  # noqa: E402
from vdir.lowering.handbuilt import ProgramAssembler  # noqa: E402

L2_BYTES = 60 * 2**20


def _pick_rows(M: int, K: int, num_sms: int, tile_kib: int) -> int:
    """Tile rows: a power of two, the tile at most ``tile_kib`` KiB, and at
    least ~2 tiles per SM where the matrix allows it (load balance)."""
    r = max(1, (tile_kib * 1024) // (2 * K))
    r = 1 << int(math.log2(r))
    while r > 1 and M // r < 2 * num_sms:
        r //= 2
    while M % r:
        r //= 2
    return r


def build_gemv_program(M: int, K: int, num_sms: int, tile_kib: int = 32, slots: int = 4) -> isa.EncodedProgram:
    """y[1,M] = w[M,K] . x[1,K] as a hand-built program over ``num_sms`` SMs.

    Buffers: w (MxK bf16), x (1xK bf16), y (1xM bf16, output). The weights are
    cut into tiles of R rows (R chosen by :func:`_pick_rows`), tiles go to the
    SMs round-robin, and each SM streams its tiles through a ring of ``slots``
    shared-memory slots; x is loaded once per SM.

    Dependency bits per SM: 0 = x loaded; 1+s = slot s full (load -> compute);
    16+s = slot s free (compute -> load, the WAR edge); 32+s = result slot s
    full (compute -> store); 48+s = result slot s free (store -> compute). A
    waiter waits for the parity its producer's n-th toggle leaves.
    """
    assert slots <= 15
    R = _pick_rows(M, K, num_sms, tile_kib)
    T = M // R
    tile = R * K * 2
    bufs = [isa.BufferInfo("w", (M, K), "bf16", False), isa.BufferInfo("x", (1, K), "bf16", False),
            isa.BufferInfo("y", (1, M), "bf16", True)]
    align = lambda n: (n + 1023) // 1024 * 1024  # noqa: E731
    slot_off = [s * align(tile) for s in range(slots)]
    x_off = slots * align(tile)
    out_off = [x_off + align(2 * K) + s * 128 for s in range(slots)]
    smem = out_off[-1] + max(128, 2 * R)
    used = min(num_sms, T)
    a = ProgramAssembler(used, bufs, smem)
    gemv = FAMILIES["gemv"].opcode
    for sm in range(used):
        a.load(sm, 1, 0, 1, 2 * K, 2 * K, x_off, signal=1, name=f"x -> SM{sm}")
        for i, t in enumerate(range(sm, T, used)):
            s, u = i % slots, i // slots
            full, free, ofull, ofree = 1 << (1 + s), 1 << (16 + s), 1 << (32 + s), 1 << (48 + s)
            # load tile t into slot s once the compute of its previous use is done
            a.load(sm, 0, t * tile, R, 2 * K, 2 * K, slot_off[s],
                   wait=free if u else 0, parity=free if u % 2 else 0, signal=full, name=f"load w[{t}]")
            wmask = 1 | full | (ofree if u else 0)
            wpar = 1 | (full if (u + 1) % 2 else 0) | (ofree if u % 2 else 0)
            a.compute(sm, gemv, out_off[s], [slot_off[s], x_off], R, K, 0,
                      wait=wmask, parity=wpar, signal=free | ofull, name=f"gemv tile {t}")
            a.store(sm, 2, t * R * 2, 1, 2 * R, 2 * R, out_off[s],
                    wait=ofull, parity=ofull if (u + 1) % 2 else 0, signal=ofree, name=f"store y[{t}]")
    return a.finish()


def main() -> int:
    """Measure the copy ceiling, then each gemv shape with vdir and cuBLAS; print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer shapes and launches")
    ap.add_argument("--iters", type=int, default=200)
    opts = ap.parse_args()

    import torch
    import torch.nn.functional as Fn

    from vdir.device_runtime.cuda import CudaPlatform
    from vdir.device_runtime.platform import DeviceBuffer, LaunchSpec

    ok, why = CudaPlatform.is_available()
    if not ok:
        print(f"no GPU: {why}")
        return 1
    plat = CudaPlatform()
    nsm = plat.target().num_sms
    iters = 50 if opts.quick else opts.iters
    dev = torch.device("cuda")
    rows: list[tuple] = []

    def torch_times(fn, n):
        """Event times (us) of ``fn(i)`` for i < n, queued behind a sleep in batches of 64."""
        st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        out = []
        for b0 in range(0, n, 64):
            evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                   for _ in range(min(64, n - b0))]
            torch.cuda._sleep(20_000_000)  # hold the stream so the batch runs back to back
            for k, (e0, e1) in enumerate(evs):
                e0.record()
                fn(b0 + k)
                e1.record()
            torch.cuda.synchronize()
            out += [1000.0 * e0.elapsed_time(e1) for e0, e1 in evs]
        del st, en
        return out

    # ---- copy ceiling --------------------------------------------------------
    nbytes = 1 << 30
    src = [torch.empty(nbytes // 2, dtype=torch.bfloat16, device=dev).normal_() for _ in range(2)]
    dst = torch.empty_like(src[0])
    for _ in range(3):
        dst.copy_(src[0])
    ct = torch_times(lambda i: dst.copy_(src[i % 2]), 40)
    copy_us = float(np.median(ct))
    copy_tbs = 2 * nbytes / copy_us / 1e6
    del src, dst
    rows.append(("copy 1 GiB (read+write)", 2 * nbytes, copy_us, copy_tbs, None, None, None, ""))

    shapes = [(2048, 2048), (8192, 2048), (2048, 8192), (8192, 8192), (28672, 8192)]
    if opts.quick:
        shapes = [(2048, 2048), (8192, 8192)]
    # (tile KiB, ring slots, lowering options)
    bulk, lsu = {"load_path": "bulk"}, {"load_path": "lsu"}
    variants = {shape: [(64, 3, bulk), (32, 6, bulk), (32, 4, bulk)] for shape in shapes}
    variants[(8192, 8192)].append((64, 3, lsu))
    for M, K in shapes:
        wbytes = M * K * 2
        nsets = max(2, min(32, math.ceil(3 * L2_BYTES / wbytes)))
        ws = [torch.randn(M, K, dtype=torch.bfloat16, device=dev) * (K ** -0.5) for _ in range(nsets)]
        xs = [torch.randn(1, K, dtype=torch.bfloat16, device=dev) for _ in range(nsets)]
        ys = [torch.empty(1, M, dtype=torch.bfloat16, device=dev) for _ in range(nsets)]
        moved = wbytes + 2 * K + 2 * M
        tt = torch_times(lambda i: Fn.linear(xs[i % nsets], ws[i % nsets]), 10)
        tt = torch_times(lambda i: Fn.linear(xs[i % nsets], ws[i % nsets]), iters)
        t_us = float(np.median(tt))
        best = None
        for tile_kib, slots, lopts in variants[(M, K)]:
            plat.lowering_options = dict(lopts)
            prog = build_gemv_program(M, K, nsm, tile_kib, slots)
            counters = plat.allocate(4)
            plat.fill_zero(counters)
            arts, specs = [], []
            for k in range(nsets):
                bufs = [DeviceBuffer(t.data_ptr(), t.numel() * 2, plat) for t in (ws[k], xs[k], ys[k])]
                arts.append(plat.load_artifact(prog))
                specs.append(LaunchSpec(prog, bufs, counters, 1))
            plat.time_launches(arts, specs, 2 * nsets)  # warm-up (JIT, first-touch)
            # correctness on every set against torch (bf16 result of a fp32 dot)
            err = 0.0
            for k in range(nsets):
                ys[k].fill_(float("nan"))
                plat.launch(arts[k], specs[k])
                specs[k].epoch += 1
            plat.synchronize()
            for k in range(nsets):
                ref = (ws[k].float() @ xs[k].float().reshape(-1)).reshape(1, -1)
                scale = ref.abs().max().item()
                e = ((ys[k].float() - ref).abs().max().item()) / scale
                err = max(err, e if math.isfinite(e) else float("inf"))
            vt = plat.time_launches(arts, specs, iters)
            v_us = float(np.median(vt))
            plat.free(counters)
            R = _pick_rows(M, K, nsm, tile_kib)
            cfg = f"R={R} tile={R * K * 2 // 1024}KiB slots={slots} {lopts['load_path']}"
            if best is None or v_us < best[0]:
                best = (v_us, err, cfg)
            if len(variants[(M, K)]) > 1:
                print(f"  variant {M}x{K} {cfg}: {v_us:.2f} us, {moved / v_us / 1e6:.3f} TB/s, err {err:.2e}")
        v_us, err, cfg = best
        rows.append((f"gemv {M}x{K} bf16", moved, v_us, moved / v_us / 1e6, t_us, moved / t_us / 1e6, err, cfg))
        del ws, xs, ys
        torch.cuda.empty_cache()

    print()
    print(f"device: {torch.cuda.get_device_name()}  SMs: {nsm}  launches per figure: {iters} (median)")
    hdr = (f"{'case':<26} {'MiB':>8} {'vdir us':>9} {'vdir TB/s':>9} {'% copy':>7} "
           f"{'cuBLAS us':>9} {'cuBLAS TB/s':>11} {'% copy':>7} {'vdir/cuBLAS':>11} {'max rel err':>11}  config")
    print(hdr)
    print("-" * len(hdr))
    for name, moved, v_us, v_tbs, t_us, t_tbs, err, cfg in rows:
        if t_us is None:
            print(f"{name:<26} {moved / 2**20:>8.1f} {v_us:>9.2f} {v_tbs:>9.3f} {100.0:>6.1f}%  (torch copy: the ceiling)")
            continue
        print(f"{name:<26} {moved / 2**20:>8.1f} {v_us:>9.2f} {v_tbs:>9.3f} {100 * v_tbs / copy_tbs:>6.1f}% "
              f"{t_us:>9.2f} {t_tbs:>11.3f} {100 * t_tbs / copy_tbs:>6.1f}% {t_us / v_us:>10.2f}x {err:>11.2e}  {cfg}")
    plat.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
