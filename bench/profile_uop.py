"""One launch of bench_uop_cost's loads-only program on one SM, for a profiler.

    ncu --launch-skip 2 --launch-count 1 --section WarpStateStats --section SourceCounters \\
        python3 bench/profile_uop.py [--triples 512] [--variant loads_free]

Launches the program three times (two warm-ups, then the profiled one) and
nothing else, so the profiler's launch counting is simple.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
from ml_dtypes import bfloat16  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--triples", type=int, default=512)
    p.add_argument("--variant", default="loads_free", choices=("full", "load_only", "loads_free"))
    opts = p.parse_args()
    import vdir
    from bench.bench_gpu import variant
    from bench.bench_uop_cost import ROW, compile_program

    program = compile_program(opts.triples, 1)
    program = program if opts.variant == "full" else variant(program, opts.variant)
    x = np.ones((opts.triples, ROW), bfloat16)
    with vdir.compile(program, backend="cuda") as exe:
        for _ in range(3):
            exe(x=x)
    return 0


if __name__ == "__main__":
    sys.exit(main())
