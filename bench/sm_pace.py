"""How fast each SM streams its weight tiles in a gemv, launch after launch, from traces.

Compiles ``build_gemv(M, K)`` with the lowering option ``trace``, launches it
``--launches`` times and, for each launch, takes every SM's *pace*: the
time between its first and its last load landing on the stream engine
(its weight tiles; the chunks of x are the load engine's, ``vdir-place``),
per load after the first (the first load's latency left out). It
prints:

* each engine's milestones over the SMs (first start, last end; least,
  10th percentile, median, 90th, most), its step (a micro-op's duration)
  and the gap between two of its micro-ops (medians over the SMs of each
  SM's median), and the stream's bytes landed per µs, from the first
  launch: where the launch's head and tail go, and whether an engine is
  busy or waiting between them;
* the correlation of the per-CTA paces between the first launch and each
  other one (a program's CTAs land on the same SMs every launch): near 1,
  the pace is a property of where the CTA runs, not noise;
* the CTAs from fastest to slowest (mean pace), and per CTA its stream
  loads and its last landing; the SMs from fastest to slowest;
* which SM (``%smid``, recorded by the traced kernel) each CTA ran on: how
  often a CTA kept its SM from launch to launch.

With several ``--gemv`` shapes, each is compiled and traced in turn, and
the per-SM paces are compared across the programs, keyed both by CTA index
and by the SM the CTA ran on: a pace that belongs to the hardware agrees
across programs by SM, not by CTA (round 25 found the CTA-keyed paces
disagreeing, which sank a placement by measured speeds keyed by CTA).

On the H200 (``docs/performance.md``, rounds 25 and 26) the paces fall
into two classes about 9% apart, by SM, the same from launch to launch,
and agree across programs by SM (0.64–0.72) but not by CTA; yet placing
the tiles by them gives at most 1%, since they are shares of a saturated
HBM rather than speeds an SM keeps. One weight set is launched again and again: the default gemv's
448 MiB is far beyond the L2, so its tiles come from the HBM; a gemv that
fits the L2 would time the L2 instead, unless ``--flush-l2`` writes
:data:`FLUSH_BYTES` before every launch (round 28 traced the small gemvs so).
``--sim`` runs a small gemv on the simulator (its cost model's times, every
SM alike): the flow only.

    python3 bench/sm_pace.py [--gemv 28672x8192 [--gemv 8192x28672 ...]] [--launches 6] [--flush-l2]
    python3 bench/sm_pace.py --sim
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
from ml_dtypes import bfloat16  # noqa: E402

from bench.bench_sweep import gemv_shape  # noqa: E402
from vdir.device_runtime.trace import Trace, TraceEvent  # noqa: E402
from vdir.lowering.options import LoweringOptionError, LoweringOptions  # noqa: E402
from vdir.target import EngineKind, get_target  # noqa: E402
from vdir.transforms.pipeline_options import PipelineOptionError, PipelineOptions  # noqa: E402

#: ``--sim``: the gemv and the SMs it runs on
SIM_GEMV, SIM_SMS = (512, 1024), 4
#: the gemv traced on the GPU unless ``--gemv`` says otherwise: 448 MiB of weights, far beyond the L2
DEFAULT_GEMV = (28672, 8192)
#: percentiles of the milestone table
PERCENTILES = (0, 10, 50, 90, 100)
#: ``--flush-l2``: the bytes written before each launch, over four times the H200's 60 MiB L2
FLUSH_BYTES = 256 << 20


def landing_pace(events: Sequence[TraceEvent], engine: int, sms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per SM: the µs between two of its loads on ``engine`` landing (first to last, per load after
    the first; NaN with fewer than two), its loads, and its last landing (µs from the first stamp)."""
    t0 = min((e.start_us for e in events), default=0.0)
    ends: list[list[float]] = [[] for _ in range(sms)]
    for e in events:
        if e.engine == engine:
            ends[e.sm].append(e.start_us + e.dur_us - t0)
    pace = np.array([(max(x) - min(x)) / (len(x) - 1) if len(x) > 1 else np.nan for x in ends])
    last = np.array([max(x) if x else np.nan for x in ends])
    return pace, np.array([len(x) for x in ends]), last


def milestones(events: Sequence[TraceEvent], engine: int) -> tuple[np.ndarray, np.ndarray]:
    """The percentiles :data:`PERCENTILES` over the SMs of ``engine``'s first start and last end (µs from
    the launch's first stamp)."""
    t0 = min(e.start_us for e in events)
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    for e in events:
        if e.engine == engine:
            first[e.sm] = min(first.get(e.sm, np.inf), e.start_us - t0)
            last[e.sm] = max(last.get(e.sm, -np.inf), e.start_us + e.dur_us - t0)
    return (np.percentile(list(first.values()), PERCENTILES), np.percentile(list(last.values()), PERCENTILES))


def step_and_gap(events: Sequence[TraceEvent], engine: int) -> tuple[float, float]:
    """``engine``'s step and gap: over the SMs, the median of each SM's median micro-op duration, and of
    its median time from one micro-op's end to the next one's start (NaN where no SM ran two; negative
    where they overlap, several loads in flight)."""
    spans: dict[int, list[tuple[float, float]]] = {}
    for e in events:
        if e.engine == engine:
            spans.setdefault(e.sm, []).append((e.start_us, e.start_us + e.dur_us))
    durations, gaps = [], []
    for run in spans.values():
        run.sort()
        durations.append(float(np.median([end - start for start, end in run])))
        if len(run) > 1:
            gaps.append(float(np.median([b[0] - a[1] for a, b in zip(run[:-1], run[1:], strict=True)])))
    return (float(np.median(durations)) if durations else float("nan"),
            float(np.median(gaps)) if gaps else float("nan"))


def traces(backend: str, m: int, k: int, num_sms: int | None, launches: int,
           flush_l2: bool = False, options: LoweringOptions | None = None, pipeline: PipelineOptions | None = None,
           ) -> tuple[list, Trace, int, list[tuple[int, ...] | None]]:
    """The events of ``launches`` traced launches of the gemv, the first launch's trace, the SMs, and
    per launch the SM each CTA ran on (None where the backend does not record it); with ``flush_l2``,
    :data:`FLUSH_BYTES` written before each launch; ``options``: the lowering options (None: the defaults;
    ``trace`` is turned on either way); ``pipeline``: the pass pipeline's (None: the defaults)."""
    import vdir
    from vdir.frontend.examples import build_gemv
    from vdir.transforms.pipeline import compile_to_encoded

    program = compile_to_encoded(build_gemv(m, k), pipeline, num_sms=num_sms)
    rng = np.random.default_rng()
    runs: list[list[TraceEvent]] = []
    placements: list[tuple[int, ...] | None] = []
    first: Trace | None = None
    traced = (options or LoweringOptions()).with_overrides(trace=True)
    with vdir.compile(program, backend=backend, options=traced) as exe:
        exe.upload("w", (rng.standard_normal((m, k), dtype=np.float32) / np.sqrt(k)).astype(bfloat16))
        exe.upload("x", rng.standard_normal((1, k), dtype=np.float32).astype(bfloat16))
        flush = exe.platform.allocate(FLUSH_BYTES) if flush_l2 else None
        for _ in range(launches):
            if flush is not None:
                exe.platform.fill_zero(flush)  # on the launch's stream, before it
            exe.launch()
            exe.synchronize()
            trace = exe.platform.last_trace()
            if trace is None:
                raise SystemExit("no trace recorded: the launch was not traced")
            if first is None:
                first = trace
            runs.append(list(trace.events))
            placements.append(trace.sm_ids)
        if flush is not None:
            exe.platform.free(flush)
    assert first is not None  # launches >= 1
    return runs, first, program.num_sms, placements


def pace_by_sm(paces: Sequence[np.ndarray], placements: Sequence[tuple[int, ...]]) -> dict[int, float]:
    """The mean pace of each SM over the launches: launch i's per-CTA ``paces[i]`` keyed by the SM each
    CTA ran on (``placements[i]``; CTAs that did not start, -1, and NaN paces are left out)."""
    seen: dict[int, list[float]] = {}
    for pace, sms in zip(paces, placements, strict=True):
        for cta, sm in enumerate(sms):
            if sm >= 0 and np.isfinite(pace[cta]):
                seen.setdefault(sm, []).append(float(pace[cta]))
    return {sm: float(np.mean(v)) for sm, v in sorted(seen.items())}


def kept_sm(placements: Sequence[tuple[int, ...]]) -> float:
    """The fraction of CTAs that ran on the same SM in every launch as in the first."""
    first = placements[0]
    return float(np.mean([all(p[cta] == sm for p in placements) for cta, sm in enumerate(first)]))


def correlation(a: dict[int, float], b: dict[int, float]) -> float:
    """The correlation of two per-key paces over their common keys (NaN with fewer than 3 or no spread)."""
    keys = sorted(a.keys() & b.keys())
    x, y = np.array([a[k] for k in keys]), np.array([b[k] for k in keys])
    if len(keys) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def report(runs: list, first: Trace, sms: int, stream: int, engines: Sequence[str]) -> list[np.ndarray]:
    """Print the milestones of the first launch, then the paces over the launches (module docstring);
    return the per-CTA paces, one array per launch."""
    events = first.events
    for i, name in enumerate(engines):
        if any(e.engine == i for e in events):
            starts, ends = milestones(events, i)
            step, gap = step_and_gap(events, i)
            print(f"{name:>8}: first start {' '.join(f'{v:7.2f}' for v in starts)} | "
                  f"last end {' '.join(f'{v:7.2f}' for v in ends)}  (µs; least, p10, median, p90, most); "
                  f"step {step:.2f}, gap {gap:.2f}")
    landed = first.bytes_landed(1.0, [stream])
    print("stream bytes landed per µs (GB/s):", " ".join(f"{v / 1e3:.0f}" for v in landed))
    paces = [landing_pace(r, stream, sms) for r in runs]
    pace = np.array([p for p, _n, _l in paces])
    if len(runs) > 1 and np.all(np.isfinite(pace)) and np.ptp(pace[0]) > 0:
        corr = [np.corrcoef(pace[0], pace[i])[0, 1] for i in range(1, len(runs))]
        print("correlation of the per-CTA paces, the first launch against each other one:",
              " ".join(f"{c:.2f}" for c in corr))
    mean = np.nanmean(pace, axis=0)
    print("CTAs fastest -> slowest (CTA:µs per load):",
          " ".join(f"{s}:{mean[s]:.3f}" for s in np.argsort(mean)))
    print("stream loads per CTA:", " ".join(str(int(n)) for n in paces[0][1]))
    print("last landing per CTA (µs, mean):", " ".join(f"{v:.1f}" for v in np.nanmean([x for _p, _n, x in paces], 0)))
    return list(pace)


def compare_programs(shapes: Sequence[tuple[int, int]], by_cta: Sequence[dict[int, float]],
                     by_sm: Sequence[dict[int, float] | None],
                     placements: Sequence[tuple[int, ...] | None] | None = None) -> None:
    """Print, for the first program against each other, the correlation of their per-SM paces keyed by
    CTA index and keyed by the SM the CTA ran on, and (``placements``: each program's first launch's SM
    per CTA) how many CTAs ran on the same SM in both."""
    (m0, k0), first_sm = shapes[0], by_sm[0]
    first_at = placements[0] if placements else None
    for i, ((m, k), cta, sm) in enumerate(zip(shapes[1:], by_cta[1:], by_sm[1:], strict=True), start=1):
        by_hw = "not recorded" if sm is None or first_sm is None else f"{correlation(first_sm, sm):.2f}"
        line = (f"paces of {m0}x{k0} against {m}x{k}: correlation by CTA index {correlation(by_cta[0], cta):.2f}, "
                f"by SM {by_hw}")
        at = placements[i] if placements else None
        if first_at is not None and at is not None:
            line += f"; CTAs on the same SM in both: {100 * kept_sm([first_at, at]):.0f}%"
        print(line)


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run on the GPU (default) or the simulator (``--sim``)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--gemv", type=gemv_shape, action="append", default=[], metavar="MxK",
                    help="a gemv to trace (repeat to compare programs; default 28672x8192)")
    ap.add_argument("--launches", type=int, default=6)
    ap.add_argument("--sim", action="store_true", help="a small gemv on the simulator (the flow only)")
    ap.add_argument("--flush-l2", action="store_true",
                    help=f"write {FLUSH_BYTES >> 20} MiB before each launch, so that a gemv that fits the L2 "
                         "streams from the HBM")
    ap.add_argument("--lowering", default="", metavar="KEY=VALUE[,KEY=VALUE]",
                    help="lowering options beside trace=1 (e.g. control_warp=1)")
    ap.add_argument("--pipeline", default="", metavar="KEY=VALUE[,KEY=VALUE]",
                    help="vdir-pipeline options of the gemvs (e.g. hold-streams=1)")
    opts = ap.parse_args(argv)
    if opts.launches < 1:
        ap.error(f"--launches must be positive, not {opts.launches}")
    try:
        lowering = LoweringOptions.parse(opts.lowering)
    except LoweringOptionError as e:
        ap.error(f"--lowering: {e}")
    try:
        pipeline = PipelineOptions.parse(opts.pipeline)
    except PipelineOptionError as e:
        ap.error(f"--pipeline: {e}")
    if opts.sim:
        if opts.gemv:
            ap.error("--sim traces its own small gemv: leave out --gemv")
        shapes, num_sms, backend = [SIM_GEMV], SIM_SMS, "sim"
    else:
        from vdir.device_runtime.cuda import CudaPlatform

        ok, why = CudaPlatform.is_available()
        if not ok:
            print(f"no GPU: {why}")
            return 1
        shapes, num_sms, backend = opts.gemv or [DEFAULT_GEMV], None, "cuda"
    target = get_target()
    stream = target.engine_index(EngineKind.STREAM.value)
    by_cta: list[dict[int, float]] = []
    by_sm: list[dict[int, float] | None] = []
    first_placements: list[tuple[int, ...] | None] = []
    for m, k in shapes:
        runs, first, sms, placements = traces(backend, m, k, num_sms, opts.launches, opts.flush_l2,
                                               lowering, pipeline)
        first_placements.append(placements[0])
        print(f"gemv {m}x{k} on {sms} SMs, {opts.launches} launches ({backend})")
        paces = report(runs, first, sms, stream, target.engine_names)
        by_cta.append({cta: float(v) for cta, v in enumerate(np.nanmean(paces, axis=0)) if np.isfinite(v)})
        if all(p is not None for p in placements):
            known = [p for p in placements if p is not None]
            sm_paces = pace_by_sm(paces, known)
            by_sm.append(sm_paces)
            fastest = sorted(sm_paces.items(), key=lambda kv: kv[1])
            print("SMs (%smid) fastest -> slowest (SM:µs per load):", " ".join(f"{sm}:{v:.3f}" for sm, v in fastest))
            print(f"CTAs on the same SM in every launch as in the first: {100 * kept_sm(known):.0f}%")
        else:
            by_sm.append(None)
            print("the SM each CTA ran on: not recorded by this backend")
    if len(shapes) > 1:
        compare_programs(shapes, by_cta, by_sm, first_placements)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
