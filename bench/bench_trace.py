"""Tracing overhead: the bench's programs timed with the lowering option ``trace`` off and on.

Run on a machine with an H100/H200:

    python3 bench/bench_trace.py [--quick] [--iters N] [--rounds N] [--json FILE] [--traces DIR]
    python3 bench/bench_trace.py --sim    # no GPU: small programs on the simulator (the flow only)

Each program (gemv 8192 x 8192, the MLP block, the 16-layer MLP stack;
``--quick``: gemv 2048 x 2048 and a 4-layer stack) is compiled once by the
pass pipeline and loaded twice, without and with ``trace=1``, on the same
random inputs. The two are timed in alternating rounds (each round the
median of ``--iters`` launches, CUDA events around each kernel, launches
queued back to back as in ``bench_gpu.py``), so that clock and thermal
drift hit both sides alike; the figure is the median over the rounds. The
outputs of the two are compared bit for bit (the stamps change no
arithmetic), and with ``--traces`` each traced launch is written as
Chrome/Perfetto JSON, checked for partially overlapping slices first.

The overhead is what a traced launch costs: two ``%globaltimer`` reads and
two ``st.global.u64`` per micro-op (stores that the engine's next release
must also make visible); the memset of the stamp buffer sits outside the
timed region.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

import vdir  # noqa: E402
from bench.bench_gpu import compile_gemv, compile_mlp, device_target, uops_per_sm  # noqa: E402
from vdir import isa  # noqa: E402
from vdir.device_runtime.trace import check_tracks  # noqa: E402
from vdir.tools.vdir_run import random_inputs  # noqa: E402

H, I = 2048, 8192  # noqa: E741 -- the MLP's hidden and intermediate sizes


def programs(quick: bool, sim: bool, num_sms: int) -> list[tuple[str, isa.EncodedProgram]]:
    """(name, program) of every case, compiled for ``num_sms`` SMs (on the GPU, for its target)."""
    if sim:
        return [("gemv 512x1024", compile_gemv(512, 1024, 8, 1, num_sms)),
                ("MLP stack x2 256/512", compile_mlp(2, 256, 512, num_sms))]
    on_gpu = {"target": device_target()}
    if quick:
        return [("gemv 2048x2048", compile_gemv(2048, 2048, 16, 1, num_sms, pipeline=on_gpu)),
                ("MLP stack x4", compile_mlp(4, H, I, num_sms, pipeline=on_gpu))]
    return [("gemv 8192x8192", compile_gemv(8192, 8192, 8, 2, num_sms, pipeline=on_gpu)),
            ("MLP block", compile_mlp(None, H, I, num_sms, pipeline=on_gpu)),
            ("MLP stack x16", compile_mlp(16, H, I, num_sms, pipeline=on_gpu))]


def outputs_of(result) -> list[np.ndarray]:
    """An executable's result as a list of arrays."""
    return list(result.values()) if isinstance(result, dict) else [result]


def measure(name: str, program: isa.EncodedProgram, opts) -> dict:
    """Time ``program`` with trace off and on; compare their outputs; write the trace if asked."""
    backend = "sim" if opts.sim else "cuda"
    inputs = random_inputs(program.buffers, seed=1, offset_ranges=isa.index_ranges(program))
    off = vdir.compile(program, backend=backend)
    on = vdir.compile(program, backend=backend, options="trace=1")
    try:
        same = all(np.array_equal(a.view(np.uint8), b.view(np.uint8))
                   for a, b in zip(outputs_of(off(**inputs)), outputs_of(on(**inputs)), strict=True))
        trace = on.trace()
        check_tracks(trace)
        if opts.traces:
            os.makedirs(opts.traces, exist_ok=True)
            with open(os.path.join(opts.traces, name.replace(" ", "_").replace("/", "-") + ".json"), "w") as f:
                json.dump(trace, f)
        t_off, t_on = [], []
        for _ in range(opts.rounds):
            t_off.append(float(np.median(off.time(**inputs, iterations=opts.iters))))
            t_on.append(float(np.median(on.time(**inputs, iterations=opts.iters))))
    finally:
        off.close()
        on.close()
    slices = sum(e["ph"] == "X" for e in trace["traceEvents"])
    us_off, us_on = float(np.median(t_off)), float(np.median(t_on))
    return dict(case=name, uops=len(program.instrs), busiest_sm_uops=uops_per_sm(program)[0], slices=slices,
                off_us=us_off, on_us=us_on, overhead_pct=100.0 * (us_on / us_off - 1.0), identical_outputs=same,
                rounds_off=t_off, rounds_on=t_on)


def main() -> int:
    """Parse arguments; measure every case; print the table (and write the JSON)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller programs")
    ap.add_argument("--sim", action="store_true", help="no GPU: small programs on the simulator (modelled times)")
    ap.add_argument("--iters", type=int, default=100, help="launches per round (default 100)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating off/on rounds (default 5)")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--traces", metavar="DIR", help="write each case's traced launch (Chrome/Perfetto JSON) here")
    opts = ap.parse_args()
    if opts.sim:
        num_sms = 4
    else:
        from bench_gpu import gpu_sm_count

        found = gpu_sm_count()
        if found is None:
            return 1
        num_sms = found
    print(f"{'case':<22} {'uops':>7} {'busiest SM':>10} {'off us':>9} {'on us':>9} {'overhead':>8}  outputs")
    rows = []
    for name, program in programs(opts.quick, opts.sim, num_sms):
        t0 = time.time()
        r = measure(name, program, opts)
        rows.append(r)
        print(f"{name:<22} {r['uops']:>7} {r['busiest_sm_uops']:>10} {r['off_us']:>9.2f} {r['on_us']:>9.2f} "
              f"{r['overhead_pct']:>7.1f}%  {'identical' if r['identical_outputs'] else 'DIFFER'} "
              f"({r['slices']} slices, {time.time() - t0:.0f} s)")
    print(f"{'modelled (sim)' if opts.sim else 'measured'} medians over {opts.rounds} rounds of {opts.iters} launches; "
          f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"rows": rows, "iters": opts.iters, "rounds": opts.rounds, "sim": opts.sim}, f, indent=1)
    return 0 if all(r["identical_outputs"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
