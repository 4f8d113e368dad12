"""A small multi-SM gemv through the CUDA backend, checked against numpy.

Small enough to run under compute-sanitizer; exits non-zero on a mismatch.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
from ml_dtypes import bfloat16  # noqa: E402

from bench.bench_gpu import build_gemv_program  # noqa: E402
from vdir.device_runtime.cuda import CudaPlatform  # noqa: E402
from vdir.families import FAMILIES  # noqa: E402
from vdir.lowering.options import LoweringOptions  # noqa: E402
from vdir.testing.assembler import run_once  # noqa: E402


def main() -> int:
    """Run a 4-SM gemv (several tiles per SM, ring reuse) and compare."""
    M, K, sms = 512, 2048, 4
    rng = np.random.default_rng()
    w = (rng.standard_normal((M, K)) * K ** -0.5).astype(bfloat16)
    x = rng.standard_normal((1, K)).astype(bfloat16)
    plat = CudaPlatform()
    prog = build_gemv_program(M, K, sms, tile_kib=8, slots=3)
    ref = FAMILIES["gemv"].run([w, x], {}, "bf16").astype(np.float32)
    worst = 0.0
    for opts in (LoweringOptions(split_copies=1), LoweringOptions(split_copies=32), LoweringOptions(load_path="lsu")):
        art = plat.load_artifact(prog, opts)
        (y,) = run_once(plat, prog, [w, x, np.full((1, M), np.nan, bfloat16)], artifact=art)
        err = np.max(np.abs(y.astype(np.float32) - ref)) / np.max(np.abs(ref))
        print(f"gemv {M}x{K} on {sms} SMs, {opts.changed()}: max rel err {err:.2e}")
        worst = max(worst, float(err))
    plat.close()
    return 0 if worst < 2e-2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
