"""``vdir.device_runtime.profile``: where a launch's time went, from its trace (``vdir-run --profile``).

The stage names, the critical path's totals (running time by stage, gaps by
how the next micro-op waited, adding up to the path's span) and each engine's
busy share are checked on hand-made traces with known answers, and on a
simulated two-SM launch whose hand-off latency the simulator's clock fixes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_trace import gemv_program

import vdir
from vdir.compiler import compile_module
from vdir.device_runtime.platform import PlatformError
from vdir.device_runtime.profile import EngineStep, engine_steps, launch_profile, path_totals, stage_of
from vdir.device_runtime.sim import SIM_COSTS
from vdir.device_runtime.trace import Trace, TraceEvent
from vdir.isa import index_ranges
from vdir.target import EngineKind, get_target
from vdir.tools.common import parse_module_file
from vdir.tools.vdir_run import random_inputs

ROOT = Path(__file__).resolve().parents[2]
#: two gemv blocks on two SMs hand their rows through a buffer to a sum on one SM
TWO_SMS = ROOT / "test" / "tools" / "run_profile.mlir"


def simulated(path: Path, sms: int, seed: int = 0) -> Trace:
    program = compile_module(parse_module_file(path), num_sms=sms)
    with vdir.compile(program, backend="sim") as exe:
        exe(**random_inputs(program.buffers, seed, index_ranges(program)))
        trace = exe.platform.last_trace()
    assert trace is not None
    return trace


@pytest.mark.parametrize(("name", "stage"), [
    ("%wd1[l=5][k=71] (mlp.mlir:3:5)", ("wd", 5)),
    ("%kt1_3[l=0]", ("kt", 0)),
    ("store to @hs[l=5][k=71]", ("->hs", 5)),
    ("%yt", ("yt", None)),
    ("prefetch of @w", ("prefetch", None)),
])
def test_a_stage_is_the_name_without_its_indices(name, stage):
    assert stage_of(name) == stage


def test_the_path_totals_split_running_time_by_stage_and_gaps_by_how_the_micro_op_waited():
    from vdir import isa

    program = gemv_program()
    queue = program.without_loops().executed_queue
    bit = int(isa.WAIT_MASK.column(queue(0, 1))[0])
    toggler = next(i for i, m in enumerate(isa.SIGNAL_MASK.column(queue(0, 3))) if int(m) & bit)
    events = [TraceEvent(0, 3, 1, toggler, 0.0, 2.0), TraceEvent(0, 1, 3, 0, 2.6, 1.0),
              TraceEvent(0, 1, 4, 1, 3.6, 0.4)]
    chain = Trace(program, events).wait_chain(0.0, 4.0)
    names = {1: "%w[i=0]", 3: "%y[i=0]", 4: "%y[i=1]"}
    lines = path_totals(chain, names).lines()
    # running: 2.0 (w) + 1.4 (two y); the bit hand-off's gap 2.0 -> 2.6, none in the queue
    assert lines[0] == ("on the path: 3.4 us running, 0.6 us between a micro-op and its bits wait, "
                        "0.0 us between a micro-op and its queue wait")
    assert [line.split() for line in lines[1:]] == [["w", "2.0", "us"], ["y", "1.4", "us"]]  # most time first


def test_overlapping_micro_ops_on_the_path_count_once():
    """Pipelined loads overlap: each counts only until the next on the path began, so the running and
    waiting times add up to the span (without the cut, 3 x 2.0 us of loads in 3.0 us)."""
    program = gemv_program()
    stream = get_target(program.target).engine_index(EngineKind.STREAM)
    events = [TraceEvent(0, stream, 1, p, 0.5 * p, 2.0) for p in range(3)]
    chain = [(events[2], "queue"), (events[1], "queue"), (events[0], "start")]
    totals = path_totals(chain, {1: "%w[i=0]"})
    assert totals.running_us == {"w": pytest.approx(3.0)} and totals.waiting_us == {"queue": 0.0}
    assert totals.micro_ops == 3


def test_engine_busy_shares_are_the_time_something_was_in_flight_over_the_span():
    program = gemv_program()
    target = get_target(program.target)
    load, compute = target.engine_index(EngineKind.LOAD), target.engine_index(EngineKind.COMPUTE)
    events = [TraceEvent(0, load, 0, 0, 0.0, 2.0), TraceEvent(0, load, 1, 1, 1.0, 2.0),  # 0 .. 3 in flight
              TraceEvent(1, load, 2, 0, 0.0, 1.0),  # SM 1: 0 .. 1
              TraceEvent(0, compute, 3, 0, 3.0, 1.0)]  # the span: 0 .. 4
    p = launch_profile(Trace(program, events))
    assert p.span_us == 4.0 and p.sms == 2 and p.micro_ops == 4 and p.launch_us is None
    assert p.busy == {"load": pytest.approx((3.0 + 1.0) / 8.0), "compute": pytest.approx(0.25)}
    assert p.lines()[0] == "profile (measured): 4 micro-ops on 2 SMs in 4.00 us"


def test_a_hand_off_latency_on_the_path_is_a_counter_wait_not_the_queue():
    """On the simulator a counter's release reaches the waiter the clock's hand-off latency after the
    store that released it wrote its bytes, the first part of it in the store's own span (its release
    fence). The sum's load began long after its queue (the load before it) had cleared: the walk puts
    the rest on the counter, and the path runs back through the other SM."""
    trace = simulated(TWO_SMS, 2)
    p = launch_profile(trace)
    costs = SIM_COSTS["h200"]
    assert 0.0 < costs.release_fence_us < costs.handoff_us
    assert p.path.waiting_us.get("counter") == pytest.approx(costs.handoff_us - costs.release_fence_us)
    assert sum(p.path.running_us.values()) + sum(p.path.waiting_us.values()) == pytest.approx(p.span_us)
    chain = trace.wait_chain(0.0, p.span_us)
    assert len({e.sm for e, _ in chain}) == 2 and p.launch_us == SIM_COSTS["h200"].launch_us
    assert 0.0 < min(p.busy.values()) and max(p.busy.values()) <= 1.0


def test_an_executable_profiles_its_last_launch_and_says_when_there_is_none():
    program = compile_module(parse_module_file(TWO_SMS), num_sms=2)
    with vdir.compile(program, backend="sim") as exe:
        with pytest.raises(PlatformError, match="no trace yet: call the executable first"):
            exe.profile()
        exe(**random_inputs(program.buffers, 0, index_ranges(program)))
        p = exe.profile()
    assert p.micro_ops == 12 and p.clock.startswith("modelled")



@pytest.mark.parametrize(("delay", "how"), [(0.2, "queue"), (1.5, "counter")])
def test_a_gap_after_the_queue_cleared_goes_to_the_counter_only_when_no_issue_explains_it(delay, how):
    """The load of the sum's second row waits on its queue (the load before it, on a pipelined engine:
    it clears at that load's start) and on the counter, whose releasing stores are moved to end before
    the queue cleared. Begun ``delay`` after the queue cleared: shortly after, the queue held it (the
    engine's own issue); long after, only the hand-off's latency explains the gap (the walk used to
    say "queue" whatever the gap)."""
    trace = simulated(TWO_SMS, 2)
    names = trace.program.uop_names
    second = next(e for e in trace.events if names.get(e.uop, "").startswith("%m1"))
    first = next(e for e in trace.events if (e.sm, e.engine, e.pos) == (second.sm, second.engine, second.pos - 1))
    stores = [e for e in trace.events if e.sm != second.sm and names.get(e.uop, "").startswith("store to @mid")]
    shift = max(e.start_us + e.dur_us for e in stores) - first.start_us + 0.1  # they end before the queue clears
    earlier = [e for e in trace.events if e.start_us < second.start_us and e is not second]
    events = [e._replace(start_us=e.start_us - shift) if e in stores else e for e in earlier]
    held = second._replace(start_us=first.start_us + delay)
    chain = Trace(trace.program, [*events, held]).wait_chain(0.0, held.start_us + held.dur_us)
    assert chain[0] == (held, how)
    assert chain[1][0] == first if how == "queue" else chain[1][0].sm != held.sm  # to a releasing store


def test_the_timeline_lists_each_engines_first_micro_ops_and_last_over_the_sms():
    """SM 0 ran three loads and SM 1 one, out of queue order on SM 0 (the timeline follows the start
    times); two listed: the first (both SMs), the second (SM 0 only), then each SM's last (SM 1's
    only load is its last too). The compute engine, one micro-op per SM, gets no "last" row."""
    events = [TraceEvent(0, 3, 0, 0, 0.0, 2.0), TraceEvent(0, 3, 2, 2, 3.0, 2.0), TraceEvent(0, 3, 1, 1, 1.0, 1.0),
              TraceEvent(1, 3, 3, 0, 0.5, 1.0), TraceEvent(0, 1, 4, 0, 2.0, 1.0), TraceEvent(1, 1, 5, 0, 2.0, 3.0)]
    steps = engine_steps(events, ["load", "compute", "store", "stream"], listed=2)
    assert steps == [
        EngineStep("compute", 0, 2, 2.0, 4.0, 3.0, 5.0),
        EngineStep("stream", 0, 2, 0.25, 1.75, 1.5, 2.0),
        EngineStep("stream", 1, 1, 1.0, 2.0, 2.0, 2.0),
        EngineStep("stream", -1, 2, 1.75, 3.25, 1.5, 5.0),
    ]
    assert steps[3].line().split() == ["stream", "last", "2", "SMs", "1.75", "->", "3.25", "us", "(ends", "1.50",
                                       "to", "5.00)"]


def test_a_simulated_profile_has_a_timeline_row_per_step():
    p = launch_profile(simulated(TWO_SMS, 2))
    assert p.timeline and all(step.sms >= 1 and step.start_us <= step.end_us for step in p.timeline)
    assert {step.engine for step in p.timeline} == {"load", "compute", "store", "stream"}
    assert p.lines()[-len(p.timeline) - 1].startswith("timeline (")
