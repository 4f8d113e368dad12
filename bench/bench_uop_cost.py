"""What one micro-op costs on each engine: the fixed cost that small tiles and short stages pay.

A program of ``n`` independent triples per SM — load a 16-byte row, ``add``
it to itself, store it — keeps each engine's queue full of tiny micro-ops,
so the kernel time is set by the slowest engine's cost per micro-op. The
slope between two sizes, ``(T(n2) - T(n1)) / (n2 - n1)``, is that cost
without the launch's fixed part. Variants make some engines' instructions
nops (same waits and signals) to see each engine's share:

* ``full``: load, compute, store;
* ``load_only``: computes and stores are nops (the load engine issues, lands
  and retires its tiny copies, and the hand-offs remain);
* ``loads_free``: only the load queues run, with no waits at all (the load
  engine's issue and retire cost alone).

Run on the GPU (compiles in a few seconds)::

    python3 bench/bench_uop_cost.py [--sms 1,132] [--sizes 128,512] [--json FILE]
    python3 bench/bench_uop_cost.py --sim      # the programs on the simulator, checked, no timing
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
from ml_dtypes import bfloat16  # noqa: E402

#: elements of one row (16 bytes of bf16: one bulk-copy unit)
ROW = 8
#: the variants timed (see the module docstring)
VARIANTS = ("full", "load_only", "loads_free")


def build(n: int, sms: int):
    """``n * sms`` independent (load, add, store) triples over a ``n*sms x ROW`` bf16 buffer."""
    from vdir.frontend.builder import ProgramBuilder

    b = ProgramBuilder(f"uops_{n}x{sms}")
    x = b.buffer("x", (n * sms, ROW))
    y = b.buffer("y", (n * sms, ROW))
    with b.repeat(0, n * sms, name="i") as i:
        t = b.load(x, (i, 0), (1, ROW), name="t")
        b.store(b.compute("add", [t, t], name="u"), y, (i, 0), name="u_saved")
    return b.finish()


def compile_program(n: int, sms: int):
    from vdir.transforms.pipeline import compile_to_encoded

    return compile_to_encoded(build(n, sms), num_sms=sms, fuse=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="the fixed cost of one micro-op on each engine")
    p.add_argument("--sms", default="1,132", help="SM counts (comma-separated)")
    p.add_argument("--sizes", default="128,512", help="two triple counts per SM: the slope is between them")
    p.add_argument("--lowering", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                   help="also time the programs lowered with these options (e.g. load_ring=16); repeatable")
    p.add_argument("--variants", default=",".join(VARIANTS), help="the variants timed (comma-separated)")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--sim", action="store_true", help="run small programs on the simulator and check them")
    opts = p.parse_args(argv)
    sms_list = [int(s) for s in opts.sms.split(",")]
    sizes = [int(s) for s in opts.sizes.split(",")]
    if len(sizes) != 2 or sizes[0] >= sizes[1] or min(sizes) <= 0:
        p.error("--sizes takes two increasing positive counts")
    if opts.sim:
        return _check_on_the_simulator()
    import vdir
    from bench.bench_gpu import variant

    variants = [v for v in opts.variants.split(",") if v]
    if not set(variants) <= set(VARIANTS):
        p.error(f"--variants takes some of {', '.join(VARIANTS)}")
    rows = []
    rng = np.random.default_rng(0)
    for sms in sms_list:
        for lowering in ["", *opts.lowering]:
            options = " ".join(x for x in lowering.split(",") if x) or None
            times: dict[str, list[float]] = {v: [] for v in variants}
            for n in sizes:
                program = compile_program(n, sms)
                x = rng.standard_normal((n * sms, ROW), dtype=np.float32).astype(bfloat16)
                for v in variants:
                    prog = program if v == "full" else variant(program, v)
                    with vdir.compile(prog, backend="cuda", options=options) as exe:
                        if v == "full":  # the result first: y = x + x, exactly
                            assert np.array_equal(exe(x=x).astype(np.float32), 2 * x.astype(np.float32))
                        times[v].append(float(np.median(exe.time(x=x, iterations=30))))
            for v in variants:
                t1, t2 = times[v]
                per_uop_ns = 1000 * (t2 - t1) / (sizes[1] - sizes[0])
                rows.append({"sms": sms, "variant": v, "lowering": lowering,
                             "us": dict(zip(map(str, sizes), (t1, t2), strict=True)), "ns_per_triple": per_uop_ns})
                print(f"{sms:4d} SMs  {v:<11} {lowering or 'defaults':<14} {t1:9.1f} us ({sizes[0]}/SM)  "
                      f"{t2:9.1f} us ({sizes[1]}/SM)  -> {per_uop_ns:7.1f} ns per micro-op on the slowest engine",
                      flush=True)
    if opts.json:
        Path(opts.json).write_text(json.dumps(rows, indent=1))
    return 0


def _check_on_the_simulator() -> int:
    """The programs (small) on the simulator: y = x + x exactly."""
    import vdir

    rng = np.random.default_rng(0)
    for n, sms in ((16, 1), (8, 4)):
        x = rng.standard_normal((n * sms, ROW), dtype=np.float32).astype(bfloat16)
        with vdir.compile(compile_program(n, sms)) as exe:
            assert np.array_equal(exe(x=x).astype(np.float32), 2 * x.astype(np.float32))
        print(f"{n} triples on each of {sms} SMs: y = x + x on the simulator")
    return 0


if __name__ == "__main__":
    sys.exit(main())
