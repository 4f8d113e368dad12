"""Compile-time benchmark: the pass pipeline on the 16-layer MLP stack.

Runs on the CPU (no GPU needed). Prints the CPU time of each stage of
``vdir-pipeline`` on ``examples/mlp_stack.mlir`` (about 78k micro-ops before
placement, 84k instructions after), the median over ``--repeat`` runs, and the
end-to-end time of ``compile_to_encoded``. The stages run as
``vdir.transforms.pipeline`` runs them, with the cyclic GC paused, in one
process. ``compile_to_encoded`` is timed twice: with the per-SM stages split
over the processes in effect (``vdir.analysis.parallel``: ``VDIR_JOBS``, by
default the CPUs, at most 4), and in one process (``VDIR_JOBS=1``); each
gives its wall seconds, what a user waits, and its CPU seconds, this
process's and its children's together.

    python bench/bench_compile.py [--repeat 3] [--file examples/mlp_stack.mlir]

``--scaling`` instead reports compile time against program size: programs
of 1k to 100k micro-ops (``--sizes``), each written flat (one load and one
store per row, in one block) and as one ``vdir.repeat`` over the same work,
with the CPU time of ``vdir-fuse``, of the expansion with its memory
dependencies, and of the whole ``compile_to_encoded``. Time that grows
faster than the size shows up as a rising "per 1k" column.

    python bench/bench_compile.py --scaling [--sizes 1000,10000,100000]

``--parsing`` reports the CPU time of printing the flat scaling programs as
text, of parsing that text back (``parse_text``, as the tools do) and of
verifying the parsed module (docs/performance.md, "Parsing and printing
large files").

    python bench/bench_compile.py --parsing [--sizes 20000,100000]

``--trips`` reports compile time against the layer loop's trip count: the
16-layer MLP stack's shape (2048/8192, every SM) at ``--layers`` layers
(default 16,32,64), compiled with ``keep_trips``, once stamped from two short
trip counts (the default, ``vdir.analysis.trip_stamp``) and once trip by trip
(``stamp_trips=False``), the median CPU seconds of ``--repeat`` runs, and the
records each encodes to (the same either way: the bytes are checked equal).

    python bench/bench_compile.py --trips [--layers 16,32,64] [--repeat 3]

``--decode CONFIG`` times the Llama-family decode step instead (``llama-1b``,
``llama-8b`` or a config of ``bench/bench_decode.py``): the stages of one
compilation, then ``compile_to_encoded`` of the built module (targets on a
2-core machine: 1B under 5 s, 8B under 15 s). Each compilation starts from
a collected heap (``gc.collect()``), as a fresh process would.

    python bench/bench_compile.py --decode llama-1b [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import resource
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from xdsl.printer import Printer

from vdir.analysis.graph import build_graph
from vdir.analysis.parallel import JOBS_VARIABLE, jobs_in_effect
from vdir.analysis.queues import queues_of_shares
from vdir.frontend import ProgramBuilder
from vdir.tools.common import default_context, parse_module_file, parse_text, verify_module
from vdir.transforms.encode import encode
from vdir.transforms.fuse import FusePass
from vdir.transforms.layout_deps import layout_dependencies
from vdir.transforms.pipeline import compile_to_encoded, schedule_and_allocate
from vdir.transforms.place import place
from vdir.transforms.verify_deps import verify_dependencies

ROOT = Path(__file__).resolve().parent.parent


def stage_times(make_module, max_micro_ops: int | None = None) -> dict[str, float]:
    """CPU seconds of each stage for one compilation of the module ``make_module()`` returns."""
    times: dict[str, float] = {}

    def timed(name, fn):
        t0 = time.process_time()
        result = fn()
        times[name] = time.process_time() - t0
        return result

    gc.collect()
    module = timed("build or parse + verify", make_module)
    timed("fuse", lambda: FusePass().apply(None, module))  # type: ignore[arg-type]
    gc.disable()
    try:
        graph = timed("expand + memory deps", lambda: build_graph(module, max_micro_ops=max_micro_ops))
        timed("verify deps", lambda: verify_dependencies(graph))
        timed("place", lambda: place(graph, graph.target.num_sms))
        shares = timed("schedule + alloc smem", lambda: schedule_and_allocate(graph, 2))
        timed("layout deps", lambda: layout_dependencies(graph, shares))
        # the queues as the pipeline hands them to the encoder (already grouped and sorted)
        program = timed("encode", lambda: encode(graph, queues=queues_of_shares(shares)))
    finally:
        gc.enable()
    times["instructions"] = float(len(program.instrs))
    return times


#: columns of one row of a scaling program's buffers (128 bytes of bf16)
SCALING_COLUMNS = 64


def scaling_program(micro_ops: int, repeated: bool):
    """A copy of ``micro_ops // 2`` rows, one load and one store each: flat, or as one repeat."""
    rows = micro_ops // 2
    b = ProgramBuilder("repeated" if repeated else "flat")
    x = b.buffer("x", (rows, SCALING_COLUMNS))
    y = b.buffer("y", (rows, SCALING_COLUMNS))
    if repeated:
        with b.repeat(0, rows) as i:
            b.store(b.load(x, (i, 0), (1, SCALING_COLUMNS)), y, (i, 0))
    else:
        for row in range(rows):
            b.store(b.load(x, (row, 0), (1, SCALING_COLUMNS)), y, (row, 0))
    return b.finish()


def scaling_times(micro_ops: int, repeated: bool) -> dict[str, float]:
    """CPU seconds of fuse, of expansion + memory dependencies, and of ``compile_to_encoded``."""
    times: dict[str, float] = {}
    module = scaling_program(micro_ops, repeated)
    t0 = time.process_time()
    FusePass().apply(None, module)  # type: ignore[arg-type]
    times["fuse"] = time.process_time() - t0
    t0 = time.process_time()
    build_graph(module)
    times["expand + deps"] = time.process_time() - t0
    module = scaling_program(micro_ops, repeated)
    t0 = time.process_time()
    compile_to_encoded(module)
    times["compile_to_encoded"] = time.process_time() - t0
    return times


def report_scaling(sizes: list[int]) -> None:
    """Print the scaling table (see the module docstring)."""
    print(f"{'program':<10} {'micro-ops':>9} {'fuse':>7} {'expand+deps':>12} {'compile':>8} {'per 1k':>7}  (CPU s)")
    for repeated in (False, True):
        for n in sizes:
            t = scaling_times(n, repeated)
            total = t["compile_to_encoded"]
            print(f"{'repeated' if repeated else 'flat':<10} {n:>9} {t['fuse']:>7.2f} {t['expand + deps']:>12.2f} "
                  f"{total:>8.2f} {1000 * total / n:>7.3f}")


def report_trips(layer_counts: list[int], repeat: int) -> None:
    """Print the CPU seconds of compiling the stack with ``keep_trips``, stamped and trip by trip."""
    import numpy as np

    from vdir.frontend.examples import build_mlp_stack

    print(f"{'layers':>6} {'executed':>9} {'records':>8} {'stamped':>8} {'every trip':>10}  (CPU s, median of {repeat})")
    for layers in layer_counts:
        module = build_mlp_stack(layers)
        times: dict[bool, list[float]] = {True: [], False: []}
        programs = {}
        for _ in range(repeat):
            for stamp in (True, False):
                gc.collect()
                t0 = time.process_time()
                programs[stamp] = compile_to_encoded(module, keep_trips=True, stamp_trips=stamp)
                times[stamp].append(time.process_time() - t0)
        if not np.array_equal(programs[True].instrs, programs[False].instrs):
            raise SystemExit(f"bench_compile: the stamped {layers}-layer stack differs from its trip-by-trip compile")
        print(f"{layers:>6} {len(programs[True].executed_instrs()):>9} {len(programs[True].instrs):>8} "
              f"{statistics.median(times[True]):>8.2f} {statistics.median(times[False]):>10.2f}")


def report_parsing(sizes: list[int]) -> None:
    """Print the CPU seconds of printing, parsing and verifying each flat scaling program."""
    print(f"{'micro-ops':>9} {'MB':>6} {'print':>7} {'parse':>7} {'verify':>7} {'parse per 1k':>13}  (CPU s)")
    for n in sizes:
        module = scaling_program(n, repeated=False)
        t0 = time.process_time()
        out = io.StringIO()
        Printer(stream=out).print_op(module)
        text = out.getvalue()
        printing = time.process_time() - t0
        t0 = time.process_time()
        parsed = parse_text(default_context(), text, f"flat{n}.mlir")
        parsing = time.process_time() - t0
        t0 = time.process_time()
        verify_module(parsed)
        verifying = time.process_time() - t0
        print(f"{n:>9} {len(text) / 1e6:>6.1f} {printing:>7.2f} {parsing:>7.2f} {verifying:>7.2f} "
              f"{1000 * parsing / n:>13.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(ROOT / "examples" / "mlp_stack.mlir"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scaling", action="store_true", help="report compile time against program size instead")
    ap.add_argument("--parsing", action="store_true", help="report the time of printing and parsing flat programs")
    ap.add_argument("--trips", action="store_true", help="report the stack's compile time against its layer count, "
                                                         "stamped and trip by trip (with keep_trips)")
    ap.add_argument("--layers", default="16,32,64", help="layer counts of --trips, comma-separated")
    ap.add_argument("--decode", metavar="CONFIG", help="time the decode step of a bench_decode config "
                                                       "(llama-1b, llama-3b, llama-8b, ...) instead of --file")
    ap.add_argument("--sizes", help="micro-op counts of --scaling (default 1000,10000,100000) "
                                    "or --parsing (default 20000,100000), comma-separated")
    opts = ap.parse_args()
    if opts.scaling:
        report_scaling([int(n) for n in (opts.sizes or "1000,10000,100000").split(",")])
        return 0
    if opts.trips:
        report_trips([int(n) for n in opts.layers.split(",")], opts.repeat)
        return 0
    if opts.parsing:
        report_parsing([int(n) for n in (opts.sizes or "20000,100000").split(",")])
        return 0
    if opts.decode:
        make_module, name, limit = _decode_module(opts.decode)
    else:
        path = Path(opts.file)
        make_module, name, limit = (lambda: parse_module_file(path)), path.name, None
    report_stages(make_module, name, opts.repeat, limit)
    return 0


def _decode_module(config: str):
    """(module factory, name, micro-op limit) of the decode step of ``config`` (a bench_decode config)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.bench_decode import DECODE_MAX_MICRO_OPS, decode_configs
    from vdir.frontend.llama import build_decode_step

    configs = decode_configs()
    if config not in configs:
        raise SystemExit(f"bench_compile: --decode takes one of {', '.join(sorted(configs))}, got '{config}'")
    return (lambda: build_decode_step(configs[config])), f"{config} decode step", DECODE_MAX_MICRO_OPS


def report_stages(make_module, name: str, repeat: int, max_micro_ops: int | None) -> None:
    """Print the median CPU time of each stage (in one process), then the median wall and CPU time of
    ``compile_to_encoded`` with the processes in effect (``vdir.analysis.parallel``) and in one
    process, over ``repeat`` runs."""
    with _jobs(1):
        runs = [stage_times(make_module, max_micro_ops) for _ in range(repeat)]
    print(f"{name}: {int(runs[0]['instructions'])} instructions; median of {repeat} runs (CPU s, one process)")
    total = 0.0
    for stage in runs[0]:
        if stage == "instructions":
            continue
        median = statistics.median(r[stage] for r in runs)
        total += median
        print(f"  {stage:<24} {median:6.2f}")
    print(f"  {'sum of stages':<24} {total:6.2f}")
    module = make_module()
    jobs = jobs_in_effect()
    for label, count in ((f"{jobs} processes", jobs), ("one process", 1)):
        with _jobs(count):
            times = [_compile_seconds(module, max_micro_ops) for _ in range(repeat)]
        wall = statistics.median(t[0] for t in times)
        cpu = statistics.median(t[1] for t in times)
        print(f"compile_to_encoded, {label}: median {wall:.2f} s wall, {cpu:.2f} CPU s")


def _compile_seconds(module, max_micro_ops: int | None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (this process and its children) of one ``compile_to_encoded``,
    from a collected heap."""
    gc.collect()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, wall = time.process_time(), time.perf_counter()
    compile_to_encoded(module, max_micro_ops=max_micro_ops)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, cpu + (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)


@contextmanager
def _jobs(count: int):
    """``VDIR_JOBS`` set to ``count`` for a stretch of work."""
    before = os.environ.get(JOBS_VARIABLE)
    os.environ[JOBS_VARIABLE] = str(count)
    try:
        yield
    finally:
        if before is None:
            del os.environ[JOBS_VARIABLE]
        else:
            os.environ[JOBS_VARIABLE] = before

if __name__ == "__main__":
    raise SystemExit(main())
