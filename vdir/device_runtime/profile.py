"""Where a launch's time goes, from its trace: each engine's busy share and the critical path by stage.

:func:`launch_profile` reads a :class:`~vdir.device_runtime.trace.Trace` (the
simulator's, in its cost model's time, or the CUDA backend's stamps) into a
:class:`LaunchProfile`: how long the micro-ops ran from the first start to
the last end, what share of that each engine kind had a micro-op in flight
(averaged over the SMs that ran one), and the critical path
(:meth:`Trace.wait_chain` over the whole launch) split into the time its
micro-ops ran, by *stage*, and the gaps in which a micro-op waited for the
one before it on the path, by how it waited (its queue, a dependency bit on
its SM, a global counter from other SMs, flag words). A stage is a micro-op's
name without its indices (:func:`stage_of`): ``%wd1[l=5][k=71]`` is stage
``wd``, ``store to @hs[l=5]`` is ``->hs``.

Beside them, a timeline by the order each engine ran its micro-ops on an
SM (:class:`EngineStep`): when an SM's first, second, ... and last micro-op
on each engine began and ended, the medians over the SMs and the range of
the end. On a program whose SMs do alike work (a gemv's row tiles) it shows
which engine an SM waits for: a second weight tile landed before the first
compute ended means the compute engine sets the pace.

``vdir-run --profile`` prints it; ``bench/trace_decode.py --path`` prints the
path itself micro-op by micro-op with the same totals. On the simulator the
times are the model's, not measurements (``docs/runtime.md``).
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vdir.device_runtime.trace import Trace, TraceEvent
from vdir.target import get_target

#: ``%name[l=3][r=2]`` or ``store to @buf[l=3]``: the stage name and the indices
_NAME = re.compile(r"^(?:%(?P<tile>\w+)|store to @(?P<buf>\w+))(?P<idx>(?:\[[^\]]*\])*)")
_LAYER = re.compile(r"\[l=(\d+)\]")
#: the stages :meth:`PathTotals.lines` lists by default, most time first
STAGES_LISTED = 12
#: a micro-op's name where the program keeps none for it
UNNAMED = "?"
#: the micro-ops per engine and SM the timeline lists from the first (and then each SM's last)
STEPS_LISTED = 4


def stage_of(name: str) -> tuple[str, int | None]:
    """(stage, layer or None) of a micro-op's readable name: the name without its indices and without
    the digits of unrolled indices (``kt1_3``, kv head 1's block 3, is ``kt``); the layer is the
    ``l=`` index where there is one."""
    m = _NAME.match(name)
    if m is None:
        return name.split(" ")[0], None
    tile = m.group("tile")
    stage = re.sub(r"_+", "_", re.sub(r"\d+", "", tile)).strip("_") if tile else f"->{m.group('buf')}"
    layer = _LAYER.search(m.group("idx") or "")
    return stage, int(layer.group(1)) if layer else None


@dataclass(frozen=True)
class PathTotals:
    """A wait chain's time: its micro-ops' running time by stage, and the gaps between a micro-op and
    the one it waited for, by how it waited (``queue``, ``bits``, ``counter``, ``words``); together
    they are the chain's span (:func:`path_totals`)."""

    running_us: Mapping[str, float]
    waiting_us: Mapping[str, float]
    micro_ops: int

    def lines(self, stages: int = STAGES_LISTED) -> list[str]:
        """The totals as text: one line of sums, then the ``stages`` stages with the most running time."""
        head = (f"on the path: {sum(self.running_us.values()):.1f} us running, "
                + ", ".join(f"{t:.1f} us between a micro-op and its {how} wait"
                            for how, t in sorted(self.waiting_us.items())))
        ranked = sorted(self.running_us.items(), key=lambda kv: -kv[1])[:stages]
        return [head] + [f"  {stage:<14}{t:8.1f} us" for stage, t in ranked]


def path_totals(chain: Sequence[tuple[TraceEvent, str]], names: Mapping[int, str]) -> PathTotals:
    """The totals of ``chain`` (:meth:`Trace.wait_chain`: latest first, each micro-op with how it waited
    for the next one in the list), staged by the micro-op names ``names`` (by micro-op id).

    A micro-op's running time counts until it ended or the micro-op after it on the path began,
    whichever came first (a pipelined engine's loads overlap; on the GPU a compute's end stamp may
    follow the next one's start), so the running and waiting times add up to the path's span.
    """
    running: dict[str, float] = defaultdict(float)
    waiting: dict[str, float] = defaultdict(float)
    for i, (ev, _) in enumerate(chain):
        end = ev.start_us + ev.dur_us
        if i:  # only until the micro-op after it on the path began (a pipelined engine's overlap)
            end = min(end, chain[i - 1][0].start_us)
        running[stage_of(names.get(ev.uop, UNNAMED))[0]] += max(0.0, end - ev.start_us)
    for (ev, how), (before, _) in zip(chain, chain[1:], strict=False):
        waiting[how] += max(0.0, ev.start_us - (before.start_us + before.dur_us))
    return PathTotals(dict(running), dict(waiting), len(chain))


@dataclass(frozen=True)
class EngineStep:
    """When the ``step``-th micro-op that an engine ran on an SM began and ended, over the SMs that ran
    one (``step`` -1: each SM's last on that engine): the medians, and the earliest and latest end."""

    engine: str
    step: int
    sms: int
    start_us: float
    end_us: float
    earliest_end_us: float
    latest_end_us: float

    def line(self) -> str:
        """The step as one line of the timeline."""
        which = "last" if self.step < 0 else f"#{self.step}"
        return (f"  {self.engine:<8}{which:>5}{self.sms:5d} SMs {self.start_us:8.2f} -> {self.end_us:6.2f} us"
                f"  (ends {self.earliest_end_us:.2f} to {self.latest_end_us:.2f})")


def engine_steps(events: Sequence[TraceEvent], engine_names: Sequence[str],
                 listed: int = STEPS_LISTED) -> list[EngineStep]:
    """The timeline of ``events``: per engine (in engine order, named by ``engine_names``), its first
    ``listed`` micro-ops on each SM in the order it ran them, then each SM's last where some SM ran more
    than ``listed`` (:class:`EngineStep`)."""
    runs: dict[tuple[int, int], list[TraceEvent]] = defaultdict(list)
    for ev in events:
        runs[(ev.engine, ev.sm)].append(ev)
    steps = []
    for engine, name in enumerate(engine_names):
        per_sm = [sorted(evs, key=lambda e: e.start_us) for (eng, _), evs in sorted(runs.items()) if eng == engine]
        longest = max((len(evs) for evs in per_sm), default=0)
        picks = [(k, [evs[k] for evs in per_sm if len(evs) > k]) for k in range(min(listed, longest))]
        if longest > listed:
            picks.append((-1, [evs[-1] for evs in per_sm]))
        for k, evs in picks:
            ends = [e.start_us + e.dur_us for e in evs]
            steps.append(EngineStep(name, k, len(evs), statistics.median(e.start_us for e in evs),
                                    statistics.median(ends), min(ends), max(ends)))
    return steps


@dataclass(frozen=True)
class LaunchProfile:
    """Where one launch's time went (:func:`launch_profile`)."""

    clock: str
    """What the times are: the simulator's model or the GPU's stamps (:attr:`Trace.clock`)."""
    span_us: float
    """From the first micro-op's start to the last one's end."""
    launch_us: float | None
    """The launch's fixed cost outside the micro-ops, where the clock models one (the simulator)."""
    busy: Mapping[str, float]
    """Per engine kind, the share of ``span_us`` in which it had a micro-op in flight, averaged over the
    SMs that ran one on it."""
    sms: int
    """SMs that ran a micro-op."""
    micro_ops: int
    path: PathTotals
    timeline: Sequence[EngineStep] = ()
    """Each engine's first micro-ops and last one on an SM, over the SMs (:func:`engine_steps`)."""

    def lines(self, stages: int = STAGES_LISTED) -> list[str]:
        """The profile as text (what ``vdir-run --profile`` prints)."""
        total = "" if self.launch_us is None else (
            f", {self.launch_us + self.span_us:.2f} us with the launch's fixed {self.launch_us:.2f}")
        busy = ", ".join(f"{kind} {100.0 * share:.1f}%" for kind, share in self.busy.items())
        return [f"profile ({self.clock}): {self.micro_ops} micro-ops on {self.sms} SMs in {self.span_us:.2f} us"
                + total,
                f"engines busy (share of the span, mean over SMs): {busy}",
                f"critical path: {self.path.micro_ops} micro-ops", *self.path.lines(stages),
                *(["timeline (an engine's n-th micro-op on an SM, and its last: median start and end over the SMs)"]
                  if self.timeline else []),
                *(step.line() for step in self.timeline)]


def launch_profile(trace: Trace) -> LaunchProfile:
    """The :class:`LaunchProfile` of ``trace``; a trace with no micro-ops gives zero times."""
    span = trace.makespan_us
    target = get_target(trace.program.target)
    busy = {}
    for engine, spec in enumerate(target.engines):
        idle = trace.idle_us(engine, 0.0, span) if span > 0 else {}
        if idle:
            busy[str(spec.kind)] = 1.0 - sum(idle.values()) / (len(idle) * span)
    chain = trace.wait_chain(0.0, span) if trace.events else []
    return LaunchProfile(trace.clock, span, trace.launch_us, busy, len({e.sm for e in trace.events}),
                         len(trace.events), path_totals(chain, trace.program.uop_names),
                         engine_steps(trace.events, [str(spec.kind) for spec in target.engines]))
