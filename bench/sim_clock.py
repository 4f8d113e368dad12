"""The simulator's clock against the H200: modelled launch times of the sweep's programs and the 1B decode step.

Runs on the CPU. Each program is compiled as the GPU benches compile it (132
SMs, the library's tiling) and simulated once at full size with the
target's clock (:class:`vdir.device_runtime.sim.SimCosts`); the table gives
the modelled time beside the latest H200 median of the same program
(``REFERENCE``, with the performance log's section it comes from) and
their ratio. ``--decode`` adds the 1B decode step (context 1024, position
128: the middle of the 256-step runs it is timed over) and the variants of
it that were timed on the GPU, each as modelled / default beside the
GPU's. Nothing here is a measurement: it says how far the model is from
the measurements, so that a change ranked on the model is ranked with that
in mind.

    python bench/sim_clock.py [--decode] [--stack] [--only gemv|mlp]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_decode import DECODE_MAX_MICRO_OPS, decode_configs  # noqa: E402
from bench.bench_gpu import compile_gemv, compile_mlp  # noqa: E402
from bench.bench_sweep import Case, tiling  # noqa: E402
from vdir.device_runtime.sim import simulate  # noqa: E402
from vdir.families import DTYPES  # noqa: E402
from vdir.frontend.llama import build_decode_step, decode_tables  # noqa: E402
from vdir.transforms.pipeline import compile_to_encoded  # noqa: E402

#: the latest H200 medians, µs (docs/performance.md: the gemvs from round 28, the MLPs from the shape
#: sweep of 2026-12-03)
REFERENCE = {
    "gemv 2048x2048": 9.31, "gemv 4096x4096": 14.94, "gemv 8192x8192": 37.63, "gemv 1024x4096": 9.34,
    "gemv 4096x1024": 9.57, "gemv 1024x8192": 11.49, "gemv 8192x1024": 11.74, "gemv 2048x8192": 15.26,
    "gemv 8192x2048": 14.69, "gemv 4096x14336": 33.63, "gemv 14336x4096": 34.40, "gemv 8192x28672": 110.24,
    "gemv 28672x8192": 111.62, "MLP block 2048/8192": 32.83, "MLP block 4096/14336": 93.02,
    "MLP x16 2048/8192": 462.82,
}
#: the 1B step's variants timed on the H200, ms/token: round 29's knob sweep, one run; flag words from
#: round 33's run, whose default took 0.896 (the ratio, 1.022, is what compares): (LlamaConfig
#: changes, pipeline options, measured)
DECODE_VARIANTS = {
    "default": ({}, {}, 0.894),
    "phase-balance=false": ({}, {"phase_balance": False}, 0.951),
    "o_chunks=2": ({"o_chunks": 2}, {}, 0.957),
    "keep-trips=true": ({}, {"keep_trips": True}, 0.928),
    "block=64": ({"block": 64}, {}, 0.901),
    "flag-words=4096": ({}, {"flag_words": 4096}, 0.916),
}
SMS = 132
#: where in the context the decode step is simulated (the 256-step runs' middle)
DECODE_POS = 128


def modelled_us(program, arrays, scalars=()) -> float:
    """One simulated launch's modelled time (:attr:`~vdir.device_runtime.sim.SimTrace.launch_time_us`)."""
    return simulate(program, arrays, check_races=False, scalars=scalars).launch_time_us


def filled(program, rng, tables=None) -> list[np.ndarray]:
    """Arrays for ``program``: small random bf16 (weights and rows), the given tables, zeros elsewhere."""
    pool = (rng.standard_normal(1 << 20, dtype=np.float32) * 0.02).astype(DTYPES["bf16"])
    out = []
    for b in program.buffers:
        if tables and b.name in tables:
            out.append(np.ascontiguousarray(tables[b.name], dtype=np.float32))
        elif b.dtype == "bf16":
            out.append(np.resize(pool, b.shape))
        else:
            out.append(np.zeros(b.shape, dtype=DTYPES[b.dtype]))
    return out


def sweep_rows(only: str | None, stack: bool) -> list[tuple[str, float, float]]:
    """(case, modelled µs, measured µs) of the sweep's shapes that have a reference."""
    cases = [Case("gemv", *map(int, name.split()[1].split("x"))) for name in REFERENCE if name.startswith("gemv")]
    cases += [Case("block", 2048, 8192), Case("block", 4096, 14336)]
    if stack:
        cases.append(Case("stack", 2048, 8192, 16))
    rows = []
    rng = np.random.default_rng(0)
    for case in cases:
        if only and (case.kind == "gemv") != (only == "gemv"):
            continue
        t = tiling(case, SMS)
        if case.kind == "gemv":
            program = compile_gemv(case.a, case.b, t["rows"], t["k_chunks"], SMS)
        else:
            program = compile_mlp(None if case.kind == "block" else case.layers, case.a, case.b, SMS, **t)
        rows.append((case.name, modelled_us(program, filled(program, rng)), REFERENCE[case.name]))
        print(f"  {case.name}: {rows[-1][1]:.2f} µs", file=sys.stderr, flush=True)
    return rows


def decode_rows() -> list[tuple[str, float, float | None]]:
    """(variant, modelled ms/token, measured ms/token or None) of the 1B step's variants."""
    base = decode_configs()["llama-1b"]
    rng = np.random.default_rng(0)
    rows = []
    for name, (config, pipeline, measured) in DECODE_VARIANTS.items():
        cfg = dataclasses.replace(base, **config)
        program = compile_to_encoded(build_decode_step(cfg), max_micro_ops=DECODE_MAX_MICRO_OPS, **pipeline)
        ms = modelled_us(program, filled(program, rng, decode_tables(cfg)), (DECODE_POS,)) / 1000.0
        rows.append((name, ms, measured))
        print(f"  1B step, {name}: {ms:.3f} ms", file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print the tables; returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", choices=("gemv", "mlp"), help="only the gemvs, or only the MLPs")
    p.add_argument("--stack", action="store_true", help="also the 16-layer MLP stack (about 10 s)")
    p.add_argument("--decode", action="store_true", help="also the 1B decode step and its variants (minutes)")
    opts = p.parse_args(argv)
    t0 = time.time()
    rows = sweep_rows(opts.only, opts.stack)
    print("| program | modelled µs | H200 µs | modelled / H200 |\n| --- | ---: | ---: | ---: |")
    for name, modelled, measured in rows:
        print(f"| {name} | {modelled:.2f} | {measured:.2f} | {modelled / measured:.2f} |")
    ratios = np.array([m / x for _, m, x in rows])
    if len(ratios):
        print(f"\nmodelled / H200: {ratios.min():.2f}-{ratios.max():.2f}, geometric mean "
              f"{float(np.exp(np.log(ratios).mean())):.3f}")
    if opts.decode:
        drows = decode_rows()
        base_model, base_gpu = drows[0][1], drows[0][2]
        print("\n| 1B step variant | modelled ms | vs default | H200 ms | vs default |\n| --- | ---: | ---: | ---: | ---: |")
        for name, ms, gpu in drows:
            gpu_text = f"{gpu:.3f} | {gpu / base_gpu:.3f}" if gpu and base_gpu else "not timed | "
            print(f"| {name} | {ms:.3f} | {ms / base_model:.3f} | {gpu_text} |")
    print(f"\n({time.time() - t0:.0f} s on the CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
