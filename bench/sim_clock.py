"""The simulator's clock against the GPU: modelled launch times of the sweep's programs and the 1B decode step.

Runs on the CPU. Each program is compiled as the GPU benches compile it (132
SMs, the library's tiling) and simulated once at full size with the
target's clock (:class:`vdir.device_runtime.sim.SimCosts`); the table gives
the modelled time beside the latest H200 median of the same program
(``REFERENCE``, with the performance log's section it comes from) and
their ratio; ``--target h100`` compiles the sweep's programs for the H100,
models them on its clock and sets them beside its medians. ``--decode`` adds the 1B decode step (context 1024, position
128: the middle of the 256-step runs it is timed over) and the variants of
it that were timed on the GPU, each as modelled / default beside the
GPU's. Nothing here is a measurement: it says how far the model is from
the measurements, so that a change ranked on the model is ranked with that
in mind.

``--sensitivity F`` adds what each of the clock's costs is worth to each
program: the modelled time again with that one cost scaled by ``F`` (a rate
divided by it), as a change against the default clock. It ranks the levers
by the model before any is built: a cost that moves a program by little
is not where its time goes.

``--step CONFIG`` models the decode step of a bench config beside its
tilings given as ``--variant`` (``bench_decode.py``'s form), each as
modelled / the config's own.

``--sm-stream F`` models every program with the SMs sharing the HBM
(``SimCosts.sm_stream_bytes_per_us``): an SM streams at up to F times its
even share while others leave bandwidth spare, and the simulator takes its
actions in time order.

``--buckets`` models the 1B step compiled for 4096 positions, whole and
as the shorter steps of ``LlamaDecoder``'s ``context_buckets``, at one
position that each covers.

``--split-k`` models two MLP stacks plain and with their down projections
split along K (``build_split_k_mlp_stack``), in several forms, each against
the plain stack.

``--load-window W`` (repeatable) models every program again with the
simulator's load window (loads in flight per load engine) at W, against
its default: how far the clock's figures lean on the window, which stands
for the kernel's rings (the stream engine's is the target's,
``TargetDescription.stream_ring_for``) without modelling what fewer tiles
in flight save the hand-offs.

    python bench/sim_clock.py [--target h200|h100] [--decode] [--stack] [--buckets] [--only gemv|mlp] [--sensitivity F]
                              [--step CONFIG [--variant FIELD=VALUE ...]] [--sm-stream F] [--split-k]
                              [--load-window W ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_decode import DECODE_MAX_MICRO_OPS, decode_configs, tiling_variant  # noqa: E402
from bench.bench_gpu import compile_gemv, compile_mlp  # noqa: E402
from bench.bench_sweep import Case, tiling  # noqa: E402
from vdir import isa  # noqa: E402
from vdir.device_runtime.sim import DEFAULT_LOAD_WINDOW, SimCosts, costs_for, simulate  # noqa: E402
from vdir.diagnostics import PassFailure  # noqa: E402
from vdir.families import DTYPES  # noqa: E402
from vdir.frontend.examples import build_split_k_mlp_stack  # noqa: E402
from vdir.frontend.llama import LlamaConfig, build_decode_step, decode_tables  # noqa: E402
from vdir.target import TargetDescription, get_target  # noqa: E402
from vdir.transforms.pipeline import compile_to_encoded  # noqa: E402

#: the latest medians by target, µs (docs/performance.md): the H200's gemvs from round 28, its MLPs
#: from the shape sweep of 2026-12-03; the H100's gemvs from round 58 (the code after, the mean of its two
#: runs), its MLPs from round 55 (the stream holds with release first, its default)
REFERENCE = {"h200": {
    "gemv 2048x2048": 9.31, "gemv 4096x4096": 14.94, "gemv 8192x8192": 37.63, "gemv 1024x4096": 9.34,
    "gemv 4096x1024": 9.57, "gemv 1024x8192": 11.49, "gemv 8192x1024": 11.74, "gemv 2048x8192": 15.26,
    "gemv 8192x2048": 14.69, "gemv 4096x14336": 33.63, "gemv 14336x4096": 34.40, "gemv 8192x28672": 110.24,
    "gemv 28672x8192": 111.62, "MLP block 2048/8192": 32.83, "MLP block 4096/14336": 93.02,
    "MLP x16 2048/8192": 462.82,
}, "h100": {
    "gemv 2048x2048": 9.90, "gemv 4096x4096": 17.50, "gemv 8192x8192": 49.04, "gemv 1024x4096": 9.78,
    "gemv 4096x1024": 9.99, "gemv 1024x8192": 12.81, "gemv 8192x1024": 12.42, "gemv 2048x8192": 17.67,
    "gemv 8192x2048": 17.56, "gemv 4096x14336": 44.68, "gemv 14336x4096": 44.17, "gemv 8192x28672": 154.48,
    "gemv 28672x8192": 154.83, "MLP block 2048/8192": 42.10, "MLP block 4096/14336": 122.53,
    "MLP x16 2048/8192": 526.59,
}}
#: the target the tables model unless ``--target`` says otherwise: the one every table has figures of
DEFAULT_TARGET = "h200"
#: the 1B step's variants timed on the H200, ms/token: round 29's knob sweep, one run; flag words from
#: round 33's run, whose default took 0.896 (the ratio, 1.022, is what compares): (LlamaConfig
#: changes, pipeline options, measured; None: not timed yet)
DECODE_VARIANTS = {
    "default": ({}, {}, 0.894),
    "phase-balance=false": ({}, {"phase_balance": False}, 0.951),
    "o_chunks=2": ({"o_chunks": 2}, {}, 0.957),
    "keep-trips=true": ({}, {"keep_trips": True}, 0.928),
    "block=64": ({"block": 64}, {}, 0.901),
    "flag-words=4096": ({}, {"flag_words": 4096}, 0.916),
    # round 35's stream holds: alone, not timed on the H200 (with release-first, which the clock does not
    # model, round 37 timed 0.912 against the default's 0.894)
    "hold-streams=1": ({}, {"hold_streams": 1}, None),
    "hold-streams=2": ({}, {"hold_streams": 2}, None),
}
SMS = 132
#: where in the context the decode step is simulated (the 256-step runs' middle)
DECODE_POS = 128


#: the clock's costs ``--sensitivity`` scales, one at a time (a rate, ``..._per_us``, is divided)
SENSITIVITY_COSTS = ("launch_us", "load_issue_us", "load_latency_us", "compute_fixed_us", "smem_bytes_per_us",
                     "store_fixed_us", "store_latency_us", "handoff_us", "release_fence_us", "stream_bytes_per_us")


@dataclasses.dataclass
class Simulated:
    """A program compiled as the GPU benches compile it, with its inputs and its median on the GPU of its
    target."""

    name: str
    program: isa.EncodedProgram
    arrays: list[np.ndarray]
    measured: float | None
    scalars: tuple[int, ...] = ()
    #: the modelled times already simulated, by clock and load window (the sweep's table and the
    #: sensitivity's base are the same launch)
    _times: dict[tuple[SimCosts, int], float] = dataclasses.field(default_factory=dict, repr=False)

    def modelled_us(self, costs: SimCosts | None = None, load_window: int = DEFAULT_LOAD_WINDOW) -> float:
        """One simulated launch's modelled time (:attr:`~vdir.device_runtime.sim.SimTrace.launch_time_us`)
        on clock ``costs`` (None: the target's) with ``load_window`` loads in flight per load engine,
        simulated once per clock and window. The times do not depend on the arrays' values."""
        key = (costs or self.default_costs(), load_window)
        if key not in self._times:
            self._times[key] = simulate(self.program, self.arrays, check_races=False, scalars=self.scalars,
                                        costs=key[0], load_window=load_window).launch_time_us
        return self._times[key]

    def default_costs(self) -> SimCosts:
        """The clock the simulator keeps for this program's target, with the SMs sharing the HBM where
        ``--sm-stream`` says so (:data:`SM_STREAM_FACTOR`)."""
        target = get_target(self.program.target)
        return shared_bandwidth(costs_for(target), target, SM_STREAM_FACTOR)


#: ``--sm-stream F``: model the SMs' weight tiles sharing the HBM, one SM at most F times its even share
#: (``SimCosts.sm_stream_bytes_per_us``); None: the clock's fixed share per SM
SM_STREAM_FACTOR: float | None = None


def shared_bandwidth(costs: SimCosts, target: TargetDescription, factor: float | None) -> SimCosts:
    """``costs`` on ``target`` with one SM streaming at up to ``factor`` times its even share of the HBM while
    the others leave it spare (None: unchanged)."""
    if factor is None:
        return costs
    return dataclasses.replace(costs, sm_stream_bytes_per_us=factor * costs.stream_rate(target) / target.num_sms)


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


def sweep_programs(only: str | None, stack: bool, target: str = DEFAULT_TARGET) -> list[Simulated]:
    """The sweep's shapes that have a reference on ``target``, compiled for it."""
    reference = REFERENCE[target]
    cases = [Case("gemv", *map(int, name.split()[1].split("x"))) for name in reference if name.startswith("gemv")]
    cases += [Case("block", 2048, 8192), Case("block", 4096, 14336)]
    if stack:
        cases.append(Case("stack", 2048, 8192, 16))
    out = []
    rng = np.random.default_rng(0)
    for case in cases:
        if only and (case.kind == "gemv") != (only == "gemv"):
            continue
        t = tiling(case, SMS)
        pipeline = {"target": target}
        if case.kind == "gemv":
            program = compile_gemv(case.a, case.b, t["rows"], t["k_chunks"], SMS, pipeline)
        else:
            program = compile_mlp(None if case.kind == "block" else case.layers, case.a, case.b, SMS,
                                  pipeline=pipeline, **t)
        out.append(Simulated(case.name, program, filled(program, rng), reference[case.name]))
    return out


def decode_program(name: str = "default") -> Simulated:
    """The 1B step's variant ``name`` of :data:`DECODE_VARIANTS`, compiled (its time in ms/token)."""
    config, pipeline, measured = DECODE_VARIANTS[name]
    return simulated_step(f"1B step, {name}", config, pipeline, measured)


def simulated_step(name: str, config: dict, pipeline: dict | None = None, measured: float | None = None) -> Simulated:
    """The 1B step with the LlamaConfig fields ``config`` changed, compiled with the pipeline options
    ``pipeline``, to be simulated at :data:`DECODE_POS`."""
    return simulated_config(name, dataclasses.replace(decode_configs()["llama-1b"], **config), pipeline, measured)


def simulated_config(name: str, cfg: LlamaConfig, pipeline: dict | None = None,
                     measured: float | None = None) -> Simulated:
    """The decode step of ``cfg``, compiled with the pipeline options ``pipeline``, to be simulated at
    :data:`DECODE_POS`."""
    program = compile_to_encoded(build_decode_step(cfg), max_micro_ops=DECODE_MAX_MICRO_OPS, **(pipeline or {}))
    arrays = filled(program, np.random.default_rng(0), decode_tables(cfg))
    return Simulated(name, program, arrays, measured, (DECODE_POS,))


def scaled(costs: SimCosts, name: str, factor: float) -> SimCosts | None:
    """``costs`` with cost ``name`` scaled by ``factor`` (a rate divided by it); None where it has no value."""
    value = getattr(costs, name)
    if value is None:
        return None
    return dataclasses.replace(costs, **{name: value / factor if name.endswith("_per_us") else value * factor})


def print_sweep(programs: list[Simulated], target: str = DEFAULT_TARGET) -> None:
    """The modelled times beside the medians of ``target``'s GPU, and their ratios."""
    gpu = target.upper()
    print(f"| program | modelled µs | {gpu} µs | modelled / {gpu} |\n| --- | ---: | ---: | ---: |")
    ratios = []
    for s in programs:
        modelled = s.modelled_us()
        print(f"  {s.name}: {modelled:.2f} µs", file=sys.stderr, flush=True)
        ratios.append(modelled / s.measured)
        print(f"| {s.name} | {modelled:.2f} | {s.measured:.2f} | {ratios[-1]:.2f} |")
    if ratios:
        r = np.array(ratios)
        print(f"\nmodelled / {gpu}: {r.min():.2f}-{r.max():.2f}, geometric mean "
              f"{float(np.exp(np.log(r).mean())):.3f}")


def print_decode() -> Simulated:
    """The 1B step's variants, modelled and measured, each against its default; returns the default."""
    print("\n| 1B step variant | modelled ms | vs default | H200 ms | vs default |\n| --- | ---: | ---: | ---: | ---: |")
    base = decode_program()
    base_model, base_gpu = base.modelled_us() / 1000.0, base.measured
    for name in DECODE_VARIANTS:
        ms = base_model if name == "default" else decode_program(name).modelled_us() / 1000.0
        gpu = DECODE_VARIANTS[name][2]
        print(f"  1B step, {name}: {ms:.3f} ms", file=sys.stderr, flush=True)
        gpu_text = f"{gpu:.3f} | {gpu / base_gpu:.3f}" if gpu and base_gpu else "not timed | "
        print(f"| {name} | {ms:.3f} | {ms / base_model:.3f} | {gpu_text} |")
    return base


#: ``--buckets``: the compiled context, and the attended contexts (LlamaConfig.attend) of its shorter steps
BUCKET_CONTEXT, BUCKETS = 4096, (1024, 2048)


def print_buckets() -> None:
    """The 1B step compiled for :data:`BUCKET_CONTEXT` positions, whole and attending each of :data:`BUCKETS`
    (``LlamaDecoder``'s ``context_buckets``), modelled at :data:`DECODE_POS`: what a bucket saves a position
    it covers."""
    print(f"\n| 1B step over {BUCKET_CONTEXT} positions, at position {DECODE_POS} | modelled ms | vs the whole step |"
          "\n| --- | ---: | ---: |")
    whole = None
    for attend in (0, *BUCKETS):
        label = f"attending {attend}" if attend else "whole"
        ms = simulated_step(label, {"max_context": BUCKET_CONTEXT, "attend": attend}).modelled_us() / 1000.0
        whole = whole or ms
        print(f"  1B step, {label}: {ms:.3f} ms", file=sys.stderr, flush=True)
        print(f"| {label} | {ms:.3f} | {ms / whole:.3f} |")


def print_step_variants(config: str, variants: list[str]) -> None:
    """The decode step of the bench config ``config`` and its tiling ``variants`` (``bench_decode.py
    --variant``'s form), modelled at :data:`DECODE_POS`, each against the config's own tiling."""
    base_cfg = decode_configs()[config]
    print(f"\n| {config} step, tiling | modelled ms | vs the config's |\n| --- | ---: | ---: |")
    base = None
    for text in ("", *variants):
        cfg = tiling_variant(base_cfg, text) if text else base_cfg
        ms = simulated_config(text or "config's", cfg).modelled_us() / 1000.0
        base = base or ms
        print(f"  {config} step, {text or 'config'}: {ms:.3f} ms", file=sys.stderr, flush=True)
        print(f"| {text or 'the config’s'} | {ms:.3f} | {ms / base:.3f} |")


#: ``--split-k``: the stacks (layers, hidden, intermediate) modelled plain and with their down projections split
#: along K (rounds 51 and 52 of the performance log)
SPLIT_K_STACKS = ((4, 2048, 8192), (2, 4096, 14336))
#: the split-K forms modelled: (label, ``build_split_k_mlp_stack`` arguments, pipeline options)
SPLIT_K_FORMS = (
    ("split-K", {}, {}),
    ("split-K, weight-ring=3", {}, {"weight_ring": 3}),
    ("split-K, weight-ring=4", {}, {"weight_ring": 4}),
    ("split-K, 8-row tiles", {"up_rows": 8}, {}),
)


def print_split_k() -> None:
    """Each of :data:`SPLIT_K_STACKS` plain (compiled as the GPU benches compile it) and in each of
    :data:`SPLIT_K_FORMS`, modelled, each against the plain stack; a form that does not compile says why."""
    print("\n| stack | form | modelled µs | vs plain |\n| --- | --- | ---: | ---: |")
    rng = np.random.default_rng(0)
    for layers, hidden, inter in SPLIT_K_STACKS:
        case = Case("stack", hidden, inter, layers)
        label = f"{layers} x {hidden}/{inter}"
        plain = compile_mlp(layers, hidden, inter, SMS, **tiling(case, SMS))
        base = Simulated(case.name, plain, filled(plain, rng), None).modelled_us()
        print(f"| {label} | plain | {base:.1f} | 1.000 |")
        for form, builder, pipeline in SPLIT_K_FORMS:
            try:
                program = compile_to_encoded(build_split_k_mlp_stack(layers, hidden, inter, **builder),
                                             num_sms=SMS, prefetch=2, **pipeline)
            except PassFailure as e:
                print(f"| {label} | {form} | does not compile: {str(e).splitlines()[0]} | |")
                continue
            us = Simulated(f"{case.name}, {form}", program, filled(program, rng), None).modelled_us()
            print(f"  {label}, {form}: {us:.1f} µs", file=sys.stderr, flush=True)
            print(f"| {label} | {form} | {us:.1f} | {us / base:.3f} |")


def print_load_windows(programs: list[Simulated], windows: list[int]) -> None:
    """Each program modelled with the simulator's load window at each of ``windows``, as its time and the
    change against the default window (:data:`~vdir.device_runtime.sim.DEFAULT_LOAD_WINDOW`)."""
    print(f"\n| program | modelled µs (window {DEFAULT_LOAD_WINDOW}) | "
          + " | ".join(f"window {w}" for w in windows) + " |\n| --- | ---: |" + " ---: |" * len(windows))
    for s in programs:
        base = s.modelled_us()
        cells = [f"{us:.2f} ({100.0 * (us / base - 1.0):+.1f}%)" for us in (s.modelled_us(load_window=w)
                                                                          for w in windows)]
        print(f"  {s.name}: load windows done", file=sys.stderr, flush=True)
        print(f"| {s.name} | {base:.2f} | " + " | ".join(cells) + " |")


def print_sensitivity(programs: list[Simulated], factor: float) -> None:
    """Each program's modelled time with each of :data:`SENSITIVITY_COSTS` scaled by ``factor`` in turn,
    as a change against its default clock."""
    print(f"\n| program (change with one cost x {factor:g}) | modelled µs | "
          + " | ".join(SENSITIVITY_COSTS) + " |\n| --- | ---: |" + " ---: |" * len(SENSITIVITY_COSTS))
    for s in programs:
        costs = s.default_costs()
        base = s.modelled_us(costs)
        cells = []
        for name in SENSITIVITY_COSTS:
            other = scaled(costs, name, factor)
            cells.append("–" if other is None else f"{100.0 * (s.modelled_us(other) / base - 1.0):+.1f}%")
        print(f"  {s.name}: sensitivity done", file=sys.stderr, flush=True)
        print(f"| {s.name} | {base:.2f} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    """Print the tables; returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", choices=sorted(REFERENCE), default=DEFAULT_TARGET,
                   help="the GPU whose medians the sweep's programs are set beside, compiled for it and modelled "
                        f"on its clock (default {DEFAULT_TARGET}; the other tables model the H200 only)")
    p.add_argument("--only", choices=("gemv", "mlp"), help="only the gemvs, or only the MLPs")
    p.add_argument("--stack", action="store_true", help="also the 16-layer MLP stack (about 10 s)")
    p.add_argument("--decode", action="store_true", help="also the 1B decode step and its variants (minutes)")
    p.add_argument("--buckets", action="store_true",
                   help=f"also the 1B step over {BUCKET_CONTEXT} positions whole and with its context buckets "
                        f"{', '.join(map(str, BUCKETS))} (minutes)")
    p.add_argument("--step", choices=sorted(decode_configs()), metavar="CONFIG",
                   help="also the decode step of a bench_decode config beside its --variant tilings (a minute "
                        "each for the 3B shape)")
    p.add_argument("--variant", action="append", default=[], metavar="FIELD=VALUE[,FIELD=VALUE]",
                   help="a tiling of --step's config, as bench_decode.py --variant takes it; repeatable")
    p.add_argument("--sm-stream", type=float, metavar="F",
                   help="model the SMs sharing the HBM, one SM streaming at up to F times its even share while "
                        "others leave bandwidth spare (the simulator then runs in time order)")
    p.add_argument("--split-k", action="store_true",
                   help="also the MLP stacks with their down projections split along K, beside the plain stacks "
                        "(a minute)")
    p.add_argument("--sensitivity", type=float, metavar="F",
                   help="also each program's time with each cost of the clock scaled by F in turn")
    p.add_argument("--load-window", type=int, action="append", default=[], metavar="W",
                   help=f"also each program's time with the simulator keeping W loads in flight per load engine "
                        f"(default {DEFAULT_LOAD_WINDOW}); repeatable")
    opts = p.parse_args(argv)
    if any(w < 1 for w in opts.load_window):
        p.error(f"--load-window: at least 1 load in flight, not {min(opts.load_window)}")
    if opts.sensitivity is not None and not opts.sensitivity > 0:
        p.error(f"--sensitivity: a factor above 0, not {opts.sensitivity:g}")
    if opts.variant and not opts.step:
        p.error("--variant: a tiling of --step's config; name the config with --step")
    h200_only = [flag for flag, asked in (("--decode", opts.decode), ("--buckets", opts.buckets),
                                          ("--step", opts.step), ("--split-k", opts.split_k)) if asked]
    if opts.target != DEFAULT_TARGET and h200_only:
        p.error(f"{', '.join(h200_only)}: modelled on the {DEFAULT_TARGET} only, not with --target {opts.target}")
    if opts.sm_stream is not None and not opts.sm_stream >= 1:
        p.error(f"--sm-stream: a factor of at least 1 (an SM's even share), not {opts.sm_stream:g}")
    global SM_STREAM_FACTOR
    saved, SM_STREAM_FACTOR = SM_STREAM_FACTOR, opts.sm_stream
    try:
        return _report(opts)
    finally:
        SM_STREAM_FACTOR = saved


def _report(opts: argparse.Namespace) -> int:
    """Print the tables ``opts`` asks for; returns the exit status."""
    t0 = time.time()
    programs = sweep_programs(opts.only, opts.stack, opts.target)
    print_sweep(programs, opts.target)
    if opts.decode:
        programs.append(print_decode())
    if opts.buckets:
        print_buckets()
    if opts.step:
        print_step_variants(opts.step, opts.variant)
    if opts.split_k:
        print_split_k()
    if opts.load_window:
        print_load_windows(programs, opts.load_window)
    if opts.sensitivity is not None:
        print_sensitivity(programs, opts.sensitivity)
    print(f"\n({time.time() - t0:.0f} s on the CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
