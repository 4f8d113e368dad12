"""Compile-time benchmark: the pass pipeline on the 16-layer MLP stack.

Runs on the CPU (no GPU needed). Prints the CPU time of each stage of
``vdir-pipeline`` on ``examples/mlp_stack.mlir`` (about 78k micro-ops before
placement, 84k instructions after), the median over ``--repeat`` runs, and the
end-to-end time of ``compile_to_encoded``. The stages run as
``vdir.transforms.pipeline`` runs them, with the cyclic GC paused.

    python bench/bench_compile.py [--repeat 3] [--file examples/mlp_stack.mlir]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from pathlib import Path

from vdir.analysis.graph import build_graph
from vdir.tools.common import parse_module_file
from vdir.transforms.alloc_smem import allocate
from vdir.transforms.encode import encode
from vdir.transforms.fuse import FusePass
from vdir.transforms.layout_deps import layout_dependencies
from vdir.transforms.pipeline import compile_to_encoded
from vdir.transforms.place import place
from vdir.transforms.schedule import schedule
from vdir.transforms.verify_deps import verify_dependencies

ROOT = Path(__file__).resolve().parent.parent


def stage_times(path: Path) -> dict[str, float]:
    """CPU seconds of each stage for one compilation of ``path``."""
    times: dict[str, float] = {}

    def timed(name, fn):
        t0 = time.process_time()
        result = fn()
        times[name] = time.process_time() - t0
        return result

    module = timed("parse + verify", lambda: parse_module_file(path))
    timed("fuse", lambda: FusePass().apply(None, module))  # type: ignore[arg-type]
    gc.disable()
    try:
        graph = timed("expand + memory deps", lambda: build_graph(module))
        timed("verify deps", lambda: verify_dependencies(graph))
        timed("place", lambda: place(graph, graph.target.num_sms))
        timed("schedule", lambda: schedule(graph, 2, check=False))
        timed("alloc smem", lambda: allocate(graph))
        timed("layout deps", lambda: layout_dependencies(graph))
        program = timed("encode", lambda: encode(graph))
    finally:
        gc.enable()
    times["instructions"] = float(len(program.instrs))
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(ROOT / "examples" / "mlp_stack.mlir"))
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()
    path = Path(opts.file)
    runs = [stage_times(path) for _ in range(opts.repeat)]
    print(f"{path.name}: {int(runs[0]['instructions'])} instructions; median of {opts.repeat} runs (CPU s)")
    total = 0.0
    for name in runs[0]:
        if name == "instructions":
            continue
        median = statistics.median(r[name] for r in runs)
        total += median
        print(f"  {name:<22} {median:6.2f}")
    print(f"  {'sum of stages':<22} {total:6.2f}")
    module = parse_module_file(path)
    ends = []
    for _ in range(opts.repeat):
        t0 = time.process_time()
        compile_to_encoded(module)
        ends.append(time.process_time() - t0)
    print(f"compile_to_encoded: median {statistics.median(ends):.2f} CPU s (target: under 5 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
