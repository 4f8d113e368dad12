"""Where does a gemv launch spend its time? Times variants of one program.

``full``: the program as built; ``no_store``: stores turned into nops (same
waits and signals); ``load_only``: computes and stores turned into nops, so
only the load engine's pipeline and the dependency hand-offs remain.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from bench.bench_gpu import build_gemv_program  # noqa: E402
from vdir import isa  # noqa: E402


def variant(prog: isa.EncodedProgram, kind: str) -> isa.EncodedProgram:
    """A copy of ``prog`` with some engines' instructions made nops."""
    instrs = prog.instrs.copy()
    ops = instrs[:, isa.W_OPCODE] & 0xFF
    kill = {"full": (), "no_store": (isa.OP_STORE,), "load_only": (isa.OP_STORE, isa.OP_COMPUTE),
            "loads_free": ()}[kind]
    queues = prog.queues
    if kind == "loads_free":  # only the load queues, no waits: pure load-engine streaming
        instrs[ops == isa.OP_LOAD, isa.W_WAIT_MASK:isa.W_WAIT_MASK + 2] = 0
        queues = [[q[0], (q[1][0], 0), (q[2][0], 0)] for q in prog.queues]
    for op in kill:
        instrs[ops == op, isa.W_OPCODE] = isa.OP_NOP
    return isa.EncodedProgram(prog.num_sms, prog.smem_bytes, prog.num_counters, prog.bitmap_bits,
                              prog.buffers, instrs, queues, prog.uop_names)


def main() -> int:
    """Print median times of each variant for a few configurations."""
    import torch

    from vdir.device_runtime.cuda import CudaPlatform
    from vdir.device_runtime.platform import DeviceBuffer, LaunchSpec
    from vdir.lowering.options import LoweringOptions

    plat = CudaPlatform()
    M, K, nsets = 8192, 8192, 3
    ws = [torch.randn(M, K, dtype=torch.bfloat16, device="cuda") for _ in range(nsets)]
    xs = [torch.randn(1, K, dtype=torch.bfloat16, device="cuda") for _ in range(nsets)]
    ys = [torch.empty(1, M, dtype=torch.bfloat16, device="cuda") for _ in range(nsets)]
    for path, tile_kib, slots in (("bulk", 64, 3), ("bulk", 32, 6), ("bulk", 16, 8)):
        lowering = LoweringOptions(load_path=path)
        base = build_gemv_program(M, K, plat.target().num_sms, tile_kib, slots)
        for kind in ("full", "load_only", "loads_free"):
            prog = variant(base, kind)
            art = plat.load_artifact(prog, lowering)
            syncs = [plat.allocate(prog.sync_bytes) for _ in range(nsets)]
            arts, specs = [art] * nsets, []
            for k in range(nsets):
                plat.fill_zero(syncs[k])
                bufs = [DeviceBuffer(t.data_ptr(), t.numel() * 2, plat, owned=False) for t in (ws[k], xs[k], ys[k])]
                specs.append(LaunchSpec(prog, bufs, syncs[k]))
            plat.time_launches(arts, specs, 6)
            t = float(np.median(plat.time_launches(arts, specs, 60)))
            print(f"diag {M}x{K} {path:<4} tile={tile_kib}KiB slots={slots} {kind:<10} {t:8.2f} us "
                  f"{(M * K * 2) / t / 1e6:6.3f} TB/s")
            for sync in syncs:
                plat.free(sync)
    plat.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
