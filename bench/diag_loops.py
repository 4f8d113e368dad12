"""Where the engines' loop walk (lowering option ``run_loops``) costs time, engine by engine.

The 16-layer MLP stack compiled with ``keep_trips`` (every layer placed as
the first, so its queues reroll into loops) is timed three ways on the GPU,
all from the same encoded program and the same inputs:

* ``unrolled``: the CUDA backend uploads the executed stream (the default);
* ``run_loops``: the engines run the loop records;
* ``run_loops, <engine> unrolled``: the same kernel, with that engine's
  queues expanded on the host (their records are the executed stream, so
  that engine walks straight positions only): how much of the gap that
  engine's walk costs.

Every variant's output is checked against torch's bf16 math (max relative
error over all output rows, as ``bench_gpu.py`` reports it). The variants
run in turn, ``--rounds`` times, each a median of ``--iters`` launches::

    python3 bench/diag_loops.py [--layers 16] [--rounds 2] [--iters 100]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import numpy as np  # noqa: E402

#: the stack's shape (bench_gpu.py's): hidden, intermediate
HIDDEN, INTER = 2048, 8192


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=16, help="the stack's layers (default 16)")
    ap.add_argument("--rounds", type=int, default=2, help="times each variant is timed, in turn (default 2)")
    ap.add_argument("--iters", type=int, default=100, help="launches per timing, their median reported")
    opts = ap.parse_args(argv)
    for name in ("layers", "rounds", "iters"):
        if getattr(opts, name) < 1:
            ap.error(f"--{name} must be at least 1, got {getattr(opts, name)}")

    from vdir.device_runtime.cuda import CudaPlatform

    ok, why = CudaPlatform.is_available()
    if not ok:
        print(f"no GPU: {why}")
        return 1
    import bench_gpu as bg
    import torch

    from vdir.lowering.options import LoweringOptions

    plat = CudaPlatform()
    n = opts.layers
    program = bg.compile_mlp(n, HIDDEN, INTER, plat.target().num_sms, keep_trips=True,
                             pipeline={"target": bg.device_target()})
    print(f"MLP stack x{n}, keep_trips: {len(program.instrs)} records, {program.executed_count()} executed")
    torch.manual_seed(0)
    (data,) = bg.mlp_torch_sets(n, HIDDEN, INTER, 1)
    ref = torch.cat(bg.torch_mlp_stack(data, n))
    plain, looped = LoweringOptions(), LoweringOptions().with_overrides({"run_loops": True})
    variants = [("unrolled", program, plain), ("run_loops", program, looped)]
    variants += [(f"run_loops, {e} unrolled", program.without_loops({e}), looped)
                 for e in map(program.engine_name, range(program.num_engines))]
    cases = []
    for label, prog, lowering in variants:
        data["hs"][1:].fill_(float("nan"))  # poisoned: every output row must be written
        torch.cuda.synchronize()
        case = bg.VdirCase(plat, prog, [data], lowering)
        case.run_all()
        err = bg.relerr(data["hs"][1:], ref)
        case.time(4)
        cases.append((label, case, err))
    times: dict[str, list[float]] = {label: [] for label, _, _ in cases}
    for _ in range(opts.rounds):
        for label, case, _err in cases:
            times[label].append(case.time(opts.iters))
    base = float(np.median(times["unrolled"]))
    for label, _case, err in cases:
        t = times[label]
        print(f"{label:<28} {' '.join(f'{x:7.1f}' for x in t)} us  {100 * (np.median(t) / base - 1):+5.1f}%  "
              f"max rel err {err:.2e}")
    plat.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
