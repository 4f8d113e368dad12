"""One launch of bench_uop_cost's program on one SM (one variant), for a profiler.

    ncu --launch-skip 2 --launch-count 1 --section WarpStateStats --section SourceCounters \\
        python3 bench/profile_uop.py [--triples 512] [--variant loads_free] [--gemv RxK | --vecmat KxN]

Launches the program three times (two warm-ups, then the profiled one) and
nothing else, so the profiler's launch counting is simple. With the source
counters, ``bench/ncu_sources.py`` sums the report's source page (``bash
bench/run_all.sh profile`` does both for the compute engine).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
from ml_dtypes import bfloat16  # noqa: E402

from bench.bench_uop_cost import VARIANTS, Kind, compile_program, inputs, parse_tile  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--triples", type=int, default=512)
    p.add_argument("--variant", default="loads_free", choices=VARIANTS)
    kinds = p.add_mutually_exclusive_group()
    kinds.add_argument("--gemv", metavar="RxK", help="gemv triples of R x K weight tiles (bench_uop_cost's --gemv)")
    kinds.add_argument("--vecmat", metavar="KxN", help="vecmat triples of K x N weight tiles (bench_uop_cost's --vecmat)")
    p.add_argument("--backend", default="cuda", help="where the launches run (sim: check the script without a GPU)")
    opts = p.parse_args(argv)
    import vdir
    from bench.bench_gpu import variant

    kind: Kind = None
    if opts.gemv:
        kind = ("gemv", *parse_tile(opts.gemv, p))
    elif opts.vecmat:
        kind = ("vecmat", *parse_tile(opts.vecmat, p, "--vecmat"))
    program = compile_program(opts.triples, 1, kind)
    program = program if opts.variant == "full" else variant(program, opts.variant)
    inp = {k: np.ones(v.shape, bfloat16) for k, v in inputs(np.random.default_rng(0), opts.triples, 1, kind).items()}
    # the variants that keep some engines only read what shared memory holds: the simulator's race check
    # would refuse them
    launch = {"check_races": False} if opts.backend == "sim" else {}
    with vdir.compile(program, backend=opts.backend, **launch) as exe:
        for _ in range(3):
            exe(**inp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
