"""Where a decode step's time goes on the GPU: its stages along the launch, from a trace.

Compiles the step with the lowering option ``trace``, runs ``--steps`` steps
and reads the last launch's ``%globaltimer`` stamps. Micro-ops are grouped
into *stages* by their name without indices (``%qpw[l=3][qph=1][qpt=0]`` is
stage ``qpw`` of layer 3); for each stage of the layers asked for it prints
when its first micro-op began and its last ended (µs from the launch's first
stamp), how many ran and their summed duration; then each engine's busy
fraction over all SMs. A stage that begins long after the previous one ended
is a wait on the chain; one whose span is much longer than its busy time per
SM is spread thin.

    python3 bench/trace_decode.py --config llama-1b --steps 8 --layers 0,1,15

``--hbm LO,HI[,BIN]`` adds the bytes the loads brought in per BIN µs
(default 2) between LO and HI µs, as TB/s, all loads and the stream
engine's: where the HBM idles while the chain of hand-offs runs
(docs/performance.md, round 7).

``--stores`` adds the stores that release a counter, grouped by whether
their SM's stream engine had loads in flight when they began or began one
while they ran: a release waits for the SM's weight tiles in flight to land
(docs/performance.md, round 8).

``--idle LO,HI`` adds how long the stream engines had no load in flight in
that window (least, median and most over the SMs): the time a weight-tile
slot was not free while the HBM could stream (docs/performance.md, round 8;
the allocation option ``weight-ring``).

``--handoffs`` adds the cross-SM hand-offs of those layers, by consuming
stage and by what carried them (a counter, or flag words with
``--pipeline flag-words=N``): for each micro-op that waited on a global
counter, or polled flag words, the time from the last release it waited
for (the last store to write its words) to its start (the hand-off's own latency, or
more where its in-order queue still held it: a residual row's load behind
the weight tiles of its engine), its
duration, the last producer's duration, and the spread between the first and
the last producer (the wait for the slowest SM). ``--json FILE`` keeps the
trace; ``--from-json FILE`` reads such a trace back instead of running (on
the CPU: the step is compiled again, so the code must be the one that ran,
and the target the one it ran on, ``--target``).

On the GPU the step is compiled for the GPU's target (as
``bench_decode.py``'s), so that what the pass pipeline leaves to the target,
such as the H100's stream holds, is the traced GPU's; on the clock and for a
trace read back, for the default target unless ``--target`` names another.

``--sim POS`` models the launch at position ``POS`` on the simulator's
clock instead (:class:`vdir.device_runtime.sim.SimCosts`, the target's; on
the CPU, no GPU), and lists the same tables from that trace: where the
clock puts a layer's critical path, to compare with a GPU trace of the same
step or to rank a change before any GPU run. The times are the model's, not
measurements (docs/runtime.md); a launch at position ``POS`` is what the
GPU traces as the last of ``POS + 1`` steps.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import defaultdict
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_decode import (  # noqa: E402
    DECODE_MAX_MICRO_OPS,
    DEFAULT_L2_PREFETCH,
    decode_configs,
    pipeline_options,
    tiling_variant,
)
from vdir.device_runtime.profile import path_totals, stage_of  # noqa: E402
from vdir.device_runtime.trace import Trace  # noqa: E402
from vdir.diagnostics import VdirError  # noqa: E402
from vdir.frontend.llama import AUTO_CHUNKS  # noqa: E402
from vdir.target import DEFAULT_TARGET, TARGETS, EngineKind, get_target  # noqa: E402


def summarize(trace, layers: set[int]) -> list[str]:
    """The stage table and the engine busy fractions of ``trace`` (a :class:`~vdir.device_runtime.trace.Trace`)."""
    names = trace.program.uop_names
    spans: dict[tuple[int | None, str], list[float]] = {}
    busy_by_engine: dict[int, float] = defaultdict(float)
    for e in trace.events:
        stage, layer = stage_of(names.get(e.uop, "?"))
        busy_by_engine[e.engine] += e.dur_us
        if layer is not None and layer not in layers:
            continue
        s = spans.setdefault((layer, stage), [e.start_us, e.start_us + e.dur_us, 0, 0.0])
        s[0], s[1] = min(s[0], e.start_us), max(s[1], e.start_us + e.dur_us)
        s[2] += 1
        s[3] += e.dur_us
    lines = [f"makespan {trace.makespan_us:.1f} us, {len(trace.events)} micro-ops ran",
             f"{'layer':>5} {'stage':<14}{'first':>9}{'last end':>10}{'count':>7}{'busy us':>10}"]
    for (layer, stage), (first, last, count, busy) in sorted(spans.items(), key=lambda kv: kv[1][0]):
        lines.append(f"{'' if layer is None else layer:>5} {stage:<14}{first:9.1f}{last:10.1f}{count:7d}{busy:10.1f}")
    sms = trace.program.num_sms
    for engine, busy in sorted(busy_by_engine.items()):
        lines.append(f"engine {engine}: busy {100 * busy / (sms * trace.makespan_us):.1f}% of {sms} SMs x makespan")
    return lines


def handoff_table(trace, layers: set[int]) -> list[str]:
    """The hand-offs of ``layers`` (through counters and flag words) by consuming stage: medians (and the
    worst latency), µs."""
    names = trace.program.uop_names
    by_stage: dict[tuple[int, str, str], list] = defaultdict(list)
    for via, handoffs in (("counter", trace.counter_handoffs()), ("words", trace.flag_word_handoffs())):
        for h in handoffs:
            stage, layer = stage_of(names.get(h.consumer.uop, "?"))
            if layer in layers:
                by_stage[layer, stage, via].append(h)
    lines = ["cross-SM hand-offs by consuming stage, through a counter or flag words (µs; medians, latency "
             "also its worst):",
             f"{'layer':>5} {'stage':<12}{'via':<8}{'count':>6}{'latency':>9}{'worst':>8}{'duration':>10}"
             f"{'producer':>10}{'spread':>8}  producers"]
    for (layer, stage, via), hs in sorted(by_stage.items(), key=lambda kv: min(h.consumer.start_us for h in kv[1])):
        producer_stages = sorted({stage_of(names.get(p.uop, "?"))[0] for h in hs for p in h.producers})
        lines.append(
            f"{layer:>5} {stage:<12}{via:<8}{len(hs):6d}{median([h.latency_us for h in hs]):9.2f}"
            f"{max(h.latency_us for h in hs):8.2f}{median([h.consumer.dur_us for h in hs]):10.2f}"
            f"{median([h.producers[-1].dur_us for h in hs]):10.2f}{median([h.spread_us for h in hs]):8.2f}"
            f"  {', '.join(producer_stages)[:40]}")
    return lines


def layer_window(trace, layer: int) -> tuple[float, float]:
    """(first start, last end) in µs of the micro-ops of ``layer`` that ran."""
    names = trace.program.uop_names
    spans = [(e.start_us, e.start_us + e.dur_us) for e in trace.events if stage_of(names.get(e.uop, "?"))[1] == layer]
    if not spans:
        raise SystemExit(f"trace_decode: no micro-op of layer {layer} ran")
    return min(s for s, _ in spans), max(e for _, e in spans)


def critical_path(trace, lo_us: float, hi_us: float) -> list[str]:
    """:meth:`~vdir.device_runtime.trace.Trace.wait_chain` of the window, one line per micro-op, then
    the path's totals (:func:`vdir.device_runtime.profile.path_totals`)."""
    names = trace.program.uop_names
    chain = trace.wait_chain(lo_us, hi_us)
    lines = [f"critical path {lo_us:.1f} .. {hi_us:.1f} us (latest first): start end sm engine how name"]
    for ev, how in chain:
        lines.append(f"  {ev.start_us:8.1f} {ev.start_us + ev.dur_us:8.1f} {ev.sm:4d} {ev.engine:2d} {how:7s} "
                     f"{names.get(ev.uop, '?')[:70]}")
    return lines + path_totals(chain, names).lines()


def stream_engine(trace) -> int:
    """The stream engine's index on the trace's target."""
    return get_target(trace.program.target).engine_index(EngineKind.STREAM)


#: the default bin of ``--hbm``, µs
HBM_BIN_US = 2.0


def hbm_timeline(trace, lo_us: float, hi_us: float, bin_us: float = HBM_BIN_US) -> list[str]:
    """The loads' bytes landed per ``bin_us`` between ``lo_us`` and ``hi_us``, as TB/s: all loads, and the
    stream engine's (:meth:`~vdir.device_runtime.trace.Trace.bytes_landed`)."""
    stream = stream_engine(trace)
    every, streamed = trace.bytes_landed(bin_us), trace.bytes_landed(bin_us, [stream])
    lines = [f"loads landed per {bin_us:g} us (TB/s): from   all  stream"]
    for k in range(int(lo_us // bin_us), min(int(hi_us // bin_us) + 1, len(every))):
        lines.append(f"  {k * bin_us:9.1f} {every[k] / bin_us / 1e6:6.2f} {streamed[k] / bin_us / 1e6:6.2f}")
    return lines


def store_table(trace) -> list[str]:
    """The stores that released a counter, by the stream engine's loads on their SM around them: how many,
    their median duration, and, where loads were in flight at the start and none began during the store,
    the median of the store's end minus the last of those loads' ends
    (:meth:`~vdir.device_runtime.trace.Trace.release_stores`)."""
    stream = stream_engine(trace)
    stores = trace.release_stores(stream)
    classes = [  # (label, which stores, whether the end after the last landed load is shown)
        ("no stream load in flight or begun", lambda r: r.in_flight == 0 and r.issued == 0, False),
        ("loads in flight, none begun", lambda r: r.in_flight > 0 and r.issued == 0, True),
        ("none in flight, loads begun", lambda r: r.in_flight == 0 and r.issued > 0, False),
        ("loads in flight and begun", lambda r: r.in_flight > 0 and r.issued > 0, False),
    ]
    lines = ["stores that release a counter, by the stream engine's loads on their SM (µs, medians):",
             f"  {'':36s}{'count':>7s}{'duration':>10s}{'end - last landed':>19s}"]
    for label, test, show_after in classes:
        rs = [r for r in stores if test(r)]
        if not rs:
            continue
        line = f"  {label:36s}{len(rs):7d}{median([r.store.dur_us for r in rs]):10.2f}"
        if show_after:
            line += f"{median([r.store.start_us + r.store.dur_us - r.last_landed_us for r in rs]):19.2f}"
        lines.append(line)
    return lines


def idle_table(trace, lo_us: float, hi_us: float) -> list[str]:
    """How long each SM's stream engine had no load in flight between ``lo_us`` and ``hi_us``
    (:meth:`~vdir.device_runtime.trace.Trace.idle_us`): over the SMs, the least, the median and the most,
    and the share of the window's SM-time."""
    stream = stream_engine(trace)
    idle = sorted(trace.idle_us(stream, lo_us, hi_us).values())
    if not idle:
        return ["no stream engine ran"]
    share = sum(idle) / (len(idle) * (hi_us - lo_us))
    return [f"stream engines with nothing in flight between {lo_us:g} and {hi_us:g} us, over {len(idle)} SMs: "
            f"least {idle[0]:.1f}, median {median(idle):.1f}, most {idle[-1]:.1f} us ({share:.0%} of the SM-time)"]


def numbers(count: str):
    """An argparse type: a window ``LO,HI`` (``LO < HI``) of comma-separated numbers, then, where ``count``
    allows (``"2"`` or ``"2-3"``), a positive bin."""
    least, most = (int(x) for x in (count.split("-") if "-" in count else (count, count)))

    def parse(text: str) -> list[float]:
        try:
            values = [float(x) for x in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not comma-separated numbers") from None
        if not least <= len(values) <= most:
            raise argparse.ArgumentTypeError(f"'{text}': want {count.replace('-', ' to ')} numbers")
        if values[1] <= values[0]:
            raise argparse.ArgumentTypeError(f"'{text}': the window's end must follow its start")
        if len(values) > 2 and values[2] <= 0:
            raise argparse.ArgumentTypeError(f"'{text}': the bin must be positive")
        return values

    return parse


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description="a decode step's stages along one launch (a GPU trace, or the simulator's clock with --sim)")
    p.add_argument("--config", default="tiny", choices=sorted(decode_configs()))
    p.add_argument("--context", type=int, default=None, help="the compiled context (default: the config's)")
    p.add_argument("--steps", type=int, default=8, help="steps run; the last one is traced")
    p.add_argument("--layers", default="0,1", help="the layers whose stages are listed (comma-separated)")
    p.add_argument("--json", help="write the Perfetto trace here")
    p.add_argument("--path", type=numbers("2"), metavar="LO,HI",
                   help="the critical path of the micro-ops that ran in this window (µs)")
    p.add_argument("--path-layer", type=int, default=None,
                   help="the critical path through the window of this layer's micro-ops")
    p.add_argument("--l2-prefetch", type=int, default=DEFAULT_L2_PREFETCH, help="vdir-encode's l2-prefetch bytes")
    p.add_argument("--stores", action="store_true",
                   help="also list the stores that release a counter by the stream engine's loads around them")
    p.add_argument("--idle", type=numbers("2"), metavar="LO,HI",
                   help="how long the stream engines had no load in flight between LO and HI µs")
    p.add_argument("--handoffs", action="store_true", help="also list the layers' cross-SM hand-offs by stage")
    p.add_argument("--hbm", type=numbers("2-3"), metavar="LO,HI[,BIN]",
                   help="the loads' bytes landed per BIN µs (default 2) between LO and HI µs, as TB/s")
    p.add_argument("--from-json", metavar="FILE", help="read a trace written with --json instead of running")
    p.add_argument("--variant", default="", metavar="FIELD=VALUE[,FIELD=VALUE]",
                   help="trace the step with these LlamaConfig tiling fields changed (as bench_decode's)")
    p.add_argument("--pipeline", default="", metavar="OPTION=VALUE[,OPTION=VALUE]",
                   help="trace the step compiled with these vdir-pipeline options (as bench_decode's)")
    p.add_argument("--sim", type=int, metavar="POS",
                   help="model the launch at position POS on the simulator's clock (CPU) instead of the GPU")
    p.add_argument("--target", choices=sorted(TARGETS),
                   help="compile the step for this target (default: the GPU's when run on it, else "
                   f"{DEFAULT_TARGET}; with --from-json, name the GPU's target the trace was taken on)")
    opts = p.parse_args(argv)
    from bench.bench_gpu import device_target
    from vdir.frontend.llama import build_decode_step
    from vdir.models.llama import LlamaDecoder
    from vdir.testing.llama import random_weights
    from vdir.transforms.pipeline import compile_to_encoded

    cfg = decode_configs()[opts.config]
    if opts.context:
        cfg = dataclasses.replace(cfg, max_context=opts.context, block=AUTO_CHUNKS)
    if opts.variant:
        cfg = tiling_variant(cfg, opts.variant)
    # on the GPU, compiled for its target (as bench_decode's steps); on the clock, for the default target
    target = opts.target or (DEFAULT_TARGET if opts.sim is not None or opts.from_json else device_target())
    program = compile_to_encoded(build_decode_step(cfg), l2_prefetch=opts.l2_prefetch,
                                 max_micro_ops=DECODE_MAX_MICRO_OPS, target=target,
                                 **pipeline_options(opts.pipeline))
    if opts.from_json:
        report(opts, Trace.from_json(program, json.loads(Path(opts.from_json).read_text())))
        return 0
    if opts.sim is not None:
        if not 0 <= opts.sim < cfg.attended:
            p.error(f"--sim {opts.sim}: the step of {opts.config} covers positions 0 to {cfg.attended - 1}")
        try:
            trace = modelled_trace(cfg, program, opts.sim)
        except MemoryError:  # the 8B step's simulation needs more than a small machine has
            raise SystemExit(f"trace_decode: this machine's memory ran out modelling the {opts.config} step "
                             "on the simulator") from None
        if opts.json:
            trace.write(opts.json)
        report(opts, trace)
        return 0
    try:
        # the program as compiled at every position: no context buckets beside it
        with LlamaDecoder(cfg, random_weights(cfg, seed=0), backend="cuda", options="trace=1",
                          program=program, context_buckets=(), max_micro_ops=DECODE_MAX_MICRO_OPS) as decoder:
            decoder.generate([1], opts.steps)
            if opts.json:
                decoder.exe.trace(opts.json)
            trace = decoder.exe.platform.last_trace()
    except VdirError as e:  # no GPU, or the launch failed: said in one line
        raise SystemExit(f"trace_decode: {e}") from None
    report(opts, trace)
    return 0


def modelled_trace(cfg, program, pos: int):
    """The simulator's trace of ``program`` (the decode step of ``cfg``) at position ``pos``, on its target's
    clock: small random weights, the step's tables, zeros elsewhere (the clock does not depend on values)."""
    import numpy as np

    from bench.sim_clock import filled
    from vdir.device_runtime.sim import simulate
    from vdir.frontend.llama import decode_tables

    arrays = filled(program, np.random.default_rng(0), decode_tables(cfg))
    return simulate(program, arrays, check_races=False, scalars=(pos,))


def report(opts, trace) -> None:
    """Print what the options ask for about ``trace``."""
    layers = {int(x) for x in opts.layers.split(",") if x}
    print("\n".join(summarize(trace, layers)))
    if opts.handoffs:
        print("\n".join(handoff_table(trace, layers)))
    if opts.stores:
        print("\n".join(store_table(trace)))
    if opts.idle:
        print("\n".join(idle_table(trace, *opts.idle)))
    if opts.hbm:
        print("\n".join(hbm_timeline(trace, *opts.hbm)))
    if opts.path:
        lo, hi = opts.path
        print("\n".join(critical_path(trace, lo, hi)))
    if opts.path_layer is not None:
        print("\n".join(critical_path(trace, *layer_window(trace, opts.path_layer))))


if __name__ == "__main__":
    sys.exit(main())
