"""Launch traces: the shared model, its track assignment and checker, and traces of real runs.

The checker (:func:`vdir.device_runtime.trace.check_tracks`) is tested on
crafted JSON first, so that its verdict on real traces means something: the
simulator's traces of several examples, and (``-m gpu``, skipped without a
device) a traced launch on the CUDA backend.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from test_ptx_lowering import assemble

import vdir
from vdir import isa
from vdir.compiler import compile_module
from vdir.device_runtime import backend_status
from vdir.device_runtime.trace import TICKS_PER_US, Trace, TraceError, TraceEvent, check_tracks
from vdir.families import DTYPES
from vdir.isa import index_ranges
from vdir.lowering import layout as L
from vdir.lowering import lower_to_ptx
from vdir.target import EngineKind, get_target
from vdir.testing.compare import compare_outputs
from vdir.testing.reference import evaluate
from vdir.tools.common import parse_module_file
from vdir.tools.vdir_run import parse_scalars, random_inputs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: two gemvs joined by a hand-off through global memory (a counter)
TWO_PHASES = Path(__file__).resolve().parents[1] / "transforms" / "place-phase-balance.mlir"


def slices(*spans: tuple[str, float, float], tid: int = 0) -> dict:
    """Trace JSON with one named track holding ``(name, ts, dur)`` slices."""
    meta = [{"ph": "M", "name": "thread_name", "pid": 0, "tid": tid, "args": {"name": "load"}}]
    events = [{"ph": "X", "pid": 0, "tid": tid, "name": n, "ts": ts, "dur": dur} for n, ts, dur in spans]
    return {"traceEvents": meta + events}


# ---------------------------------------------------------------------------
# The checker
# ---------------------------------------------------------------------------


def test_checker_rejects_a_partial_overlap_naming_both_slices():
    with pytest.raises(TraceError, match=r"SM 0 track 'load': slice 'b' \[2000, 5000\) ns partially overlaps 'a'"):
        check_tracks(slices(("a", 1.0, 3.0), ("b", 2.0, 3.0)))


def test_checker_rejects_a_partial_overlap_behind_a_nested_slice():
    with pytest.raises(TraceError, match="slice 'c' .* partially overlaps 'a'"):
        check_tracks(slices(("a", 0.0, 10.0), ("b", 1.0, 2.0), ("c", 5.0, 6.0)))


def test_checker_rejects_a_negative_duration():
    with pytest.raises(TraceError, match="slice 'a' ends before it starts"):
        check_tracks(slices(("a", 3.0, -1.0)))


def test_checker_accepts_touching_nested_and_zero_length_slices():
    check_tracks(slices(("a", 0.0, 1.0), ("b", 1.0, 2.0), ("c", 1.5, 0.5), ("d", 3.0, 0.0), ("e", 3.0, 1.0)))
    # float noise in ts + dur (0.1 + 0.2 > 0.3) is not an overlap
    check_tracks(slices(("a", 0.1, 0.2), ("b", 0.3, 1.0)))


def test_checker_keeps_tracks_apart():
    data = slices(("a", 1.0, 3.0))
    data["traceEvents"] += slices(("b", 2.0, 3.0), tid=1)["traceEvents"]
    check_tracks(data)


# ---------------------------------------------------------------------------
# Track assignment
# ---------------------------------------------------------------------------


def gemv_program():
    """The gemv example encoded for two SMs."""
    return compile_module(parse_module_file(EXAMPLES / "gemv.mlir"), num_sms=2)


def test_the_wait_chain_follows_the_bit_a_micro_op_waited_for_not_the_last_to_finish():
    """SM 0's first compute waits on one bit: the chain goes to the load that toggled it, not to a later
    load that finished just before the compute began; the next compute was held by its queue."""
    program = gemv_program()  # engines 0 load, 1 compute, 2 store, 3 stream
    queue = program.without_loops().executed_queue
    bit = int(isa.WAIT_MASK.column(queue(0, 1))[0])
    signals = isa.SIGNAL_MASK.column(queue(0, 3))
    toggler = next(i for i, m in enumerate(signals) if int(m) & bit)
    other = next(i for i, m in enumerate(signals) if i > toggler and not int(m) & bit)
    events = [
        TraceEvent(0, 3, 1, toggler, 0.0, 2.0),  # the load whose completion toggles the bit
        TraceEvent(0, 3, 2, other, 0.5, 1.9),  # another load, the last to finish before the compute
        TraceEvent(0, 1, 3, 0, 2.6, 1.0),  # the compute that waits on the bit
        TraceEvent(0, 1, 4, 1, 3.6, 0.4),  # held by its queue
    ]
    chain = Trace(program, events).wait_chain(0.0, 4.0)
    assert [(e.uop, how) for e, how in chain] == [(4, "queue"), (3, "bits"), (1, "start")]
    assert Trace(program, events).wait_chain(3.0, 4.0) == [(events[3], "queue")]  # the window's start ends it
    assert Trace(program, events).wait_chain(0.0, 0.5) == []  # nothing finished by then


def test_the_wait_chain_crosses_sms_through_the_counter_a_load_waited_on():
    """On the simulator (exact times): every step of the chain is the queue, a bit the micro-op waits on
    that the one before toggles on its SM, or the counter it waits on that the one before releases."""
    program = compile_module(parse_module_file(TWO_PHASES), num_sms=2)
    with vdir.compile(program, backend="sim") as exe:
        exe(**random_inputs(exe.signature, seed=1))
        trace = exe.platform.last_trace()
    words, row_of = trace.executed_words
    waits, signals = isa.WAIT_MASK.column(words), isa.SIGNAL_MASK.column(words)
    counter, released = isa.WAIT_COUNTER.column(words), isa.RELEASE_COUNTER.column(words)
    chain = trace.wait_chain(0.0, trace.makespan_us)
    for (a, how), (b, _) in zip(chain, chain[1:], strict=False):
        if how == "queue":
            assert (a.sm, a.engine, a.pos - 1) == (b.sm, b.engine, b.pos)
        elif how == "bits":
            assert a.sm == b.sm and int(waits[row_of(a)]) & int(signals[row_of(b)])
        else:
            assert how == "counter" and counter[row_of(a)] == released[row_of(b)] != 0
    assert {"bits", "counter"} <= {how for _, how in chain}
    assert chain[-1][1] == "start"


def test_the_wait_chain_of_a_simulated_launch_goes_strictly_back_in_time():
    program = gemv_program()
    with vdir.compile(program, backend="sim") as exe:
        exe(**random_inputs(exe.signature, seed=1))
        trace = exe.platform.last_trace()
    chain = trace.wait_chain(0.0, trace.makespan_us)
    assert len(chain) > 2 and chain[0][0].start_us + chain[0][0].dur_us == trace.makespan_us
    assert all(a.start_us > b.start_us for (a, _), (b, _) in zip(chain, chain[1:], strict=False))
    for (a, how), (b, _) in zip(chain, chain[1:], strict=False):
        if how == "queue":
            assert (a.sm, a.engine, a.pos - 1) == (b.sm, b.engine, b.pos)


def test_overlapping_micro_ops_get_one_track_each_first_free_track_first():
    program = gemv_program()
    events = [TraceEvent(0, 0, 0, 0, 0.0, 4.0), TraceEvent(0, 0, 1, 1, 1.0, 1.0), TraceEvent(0, 0, 2, 2, 2.5, 3.0),
              TraceEvent(0, 1, 3, 0, 0.0, 1.0), TraceEvent(0, 1, 4, 1, 1.0, 1.0)]
    data = Trace(program, events).to_json()
    check_tracks(data)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in data["traceEvents"] if e["name"] == "thread_name"}
    assert [names[0, t] for t in range(4)] == ["load #0", "load #1", "compute", "store"]
    assert [names[1, t] for t in range(4)] == ["load", "compute", "store", "stream"]
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    # 0 and 1 overlap; 2 starts after 1 ended: back on track 1; the compute engine's touch
    assert [(s["args"]["queue position"], names[0, s["tid"]]) for s in spans] == [
        (0, "load #0"), (1, "load #1"), (2, "load #1"), (0, "compute"), (1, "compute")]
    assert data["otherData"] == {"clock": "measured"}


def test_rounding_to_the_export_grid_never_creates_an_overlap():
    # each end rounds down to the next start, each start rounds up past the previous end
    events = [TraceEvent(0, 0, k, k, k * 1.00046 + 0.00004, 1.00046) for k in range(200)]
    data = Trace(gemv_program(), events).to_json()
    check_tracks(data)
    assert {e["tid"] for e in data["traceEvents"] if e["ph"] == "X"} == {0}


def test_stamps_decode_relative_to_the_earliest_start_skipping_unrun_instructions():
    program = gemv_program()
    n = len(program.instrs)
    starts, ends = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    first, count = program.queues[1][2]  # SM 1's store queue
    starts[first], ends[first] = 10_000_500, 10_002_000
    starts[first + count - 1], ends[first + count - 1] = 10_003_000, 10_003_000
    starts[0] = 10_000_000  # started, never completed (an abort): left out
    trace = Trace.from_stamps(program, starts, ends, "measured")
    uop = lambda i: isa.UOP_ID.get(program.instrs[i])  # noqa: E731
    assert trace.events == [TraceEvent(1, 2, uop(first), 0, 0.0, 1.5),
                            TraceEvent(1, 2, uop(first + count - 1), count - 1, 2.5, 0.0)]
    assert trace.makespan_us == 2.5
    assert trace.sm_ids is None  # not given: unknown


def test_the_sm_each_cta_ran_on_travels_with_the_trace_and_its_json():
    program = gemv_program()
    n = len(program.instrs)
    starts, ends = np.full(n, 1000, np.uint64), np.full(n, 2000, np.uint64)
    trace = Trace.from_stamps(program, starts, ends, "measured", (17, -1))
    assert trace.sm_ids == (17, -1)
    data = trace.to_json()
    assert data["otherData"] == {"clock": "measured", "sm_ids": [17, -1]}
    assert Trace.from_json(program, data).sm_ids == (17, -1)
    assert Trace.from_json(program, Trace(program, trace.events).to_json()).sm_ids is None
    for bad in ([17], [17, "x"], [17, -2], "17,-1", [True, 0]):
        data["otherData"]["sm_ids"] = bad
        with pytest.raises(TraceError, match="'sm_ids' must list one SM number"):
            Trace.from_json(program, data)


# ---------------------------------------------------------------------------
# The stamps in the kernel (lowering option trace)
# ---------------------------------------------------------------------------

#: what one stamp adds to the kernel, registers numbered away (:func:`instruction_lines`)
STAMP_LINES = ("mov.u64 %rd, %globaltimer;", "add.u32 %r, %r, %r;", "mul.wide.u32 %rd, %r, 16;",
               "add.u64 %rd, %rd, %rd;")
#: the trace buffer's parameter, its load and its conversion to a global address
PARAM_LINES = (".param .u64 p_trace", "ld.param.u64 %rd, [p_trace];", "cvta.to.global.u64 %rd, %rd;")
#: thread 0 records the SM the CTA runs on (+1) in the CTA's word at the head of the buffer
SM_LINES = ("mov.u32 %r, %smid;", "add.u32 %r, %r, 1;", "cvt.u64.u32 %rd, %r;", "mul.wide.u32 %rd, %r, 8;",
            "add.u64 %rd, %rd, %rd;", "@%p st.global.u64 [%rd], %rd;")


def instruction_lines(ptx_text: str) -> list[str]:
    """The kernel's lines without register declarations, register numbers and parameter-list commas."""
    lines = [line.strip().rstrip(",") for line in ptx_text.splitlines() if not line.strip().startswith(".reg")]
    return [re.sub(r"%(rd|r|p|f|rs|h|fd)\d+", r"%\1", line) for line in lines]


def is_subsequence(short: list[str], long: list[str]) -> bool:
    """Whether ``short`` is ``long`` with some lines left out."""
    rest = iter(long)
    return all(line in rest for line in short)


@pytest.mark.parametrize("options", ["", "load_path=lsu", "tensor_copies=0 release_fence=1", "control_warp=1",
                                     "batch_releases=1"])
def test_trace_option_only_adds_the_stamps_and_assembles(options):
    """The traced kernel is the plain one plus the parameter, the CTA's SM and the stamps (eight without
    the compute control warp, ten with it), each after the SM words at the head of the buffer; it
    assembles."""
    program = compile_module(parse_module_file(EXAMPLES / "mlp.mlir"), num_sms=4)
    plain = lower_to_ptx(program, options=options)
    traced = lower_to_ptx(program, options=f"{options} trace=1")
    off, on = instruction_lines(plain), instruction_lines(traced)
    assert is_subsequence(off, on), "the traced kernel changed or dropped a line of the plain one"
    added = Counter(on) - Counter(off)
    # a start and an end on each of the four engines (load, compute, store, stream); the compute
    # control warp hands an instruction over (its start) in three places, the first and the next
    # before or after the signal of the one before, and signals (its end) in two, those two paths
    control = "control_warp=1" in options.split()
    starts, ends = 4 + 2 * control, 4 + control
    stamps = starts + ends
    expected = Counter({line: stamps for line in STAMP_LINES}) + Counter(PARAM_LINES) + Counter(SM_LINES)
    head = L.TRACE_STAMPS_OFFSET
    expected.update({f"@%p st.global.u64 [%rd+{head}], %rd;": starts,
                     f"@%p st.global.u64 [%rd+{head + 8}], %rd;": ends})
    assert added == expected
    assemble(traced)


# ---------------------------------------------------------------------------
# Traces of real runs
# ---------------------------------------------------------------------------


def run_example(name: str, backend: str, **compile_options):
    """Compile and run ``examples/<name>.mlir`` on random inputs; (executable, outputs, reference)."""
    module = parse_module_file(EXAMPLES / f"{name}.mlir")
    exe = vdir.compile(module, backend=backend, **compile_options)
    inputs = random_inputs(exe.signature, seed=5, offset_ranges=index_ranges(exe.program))
    scalars = parse_scalars([], exe.scalars, seed=5)
    result = exe(**inputs, **scalars)
    outputs = result if isinstance(result, dict) else {exe.outputs[0].name: result}
    zeros = {b.name: np.zeros(b.shape, dtype=DTYPES[b.dtype]) for b in exe.outputs}
    expected = evaluate(module, {**zeros, **inputs}, scalars)
    return exe, outputs, {k: expected[k] for k in outputs}


def check_real_trace(data: dict, executed: int) -> list[dict]:
    """The checks every launch's trace passes; returns its slices."""
    check_tracks(data)
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == executed
    assert min(s["ts"] for s in spans) == 0
    return spans


@pytest.mark.parametrize("name, loads_overlap", [("gemv", True), ("split_k_gemv", True), ("mlp", True),
                                                 ("runtime_values", False)])
def test_simulator_traces_of_examples_draw_without_overlaps(name, loads_overlap, tmp_path):
    exe, outputs, expected = run_example(name, "sim", num_sms=8)
    with exe:
        data = exe.trace(tmp_path / "t.json")
        assert json.loads((tmp_path / "t.json").read_text()) == data
        spans = check_real_trace(data, sum(len(exe.program.executed_queue(sm, e))
                                           for sm in range(exe.program.num_sms)
                                           for e in range(exe.program.num_engines)))
    tracks = {e["args"]["name"] for e in data["traceEvents"] if e["name"] == "thread_name"}
    # several loads of one engine in flight: a track for each
    assert ("load #1" in tracks or "stream #1" in tracks) == loads_overlap
    assert all(s["dur"] > 0 for s in spans)
    assert compare_outputs(outputs, expected, "sim") is None


@pytest.mark.gpu
def test_cuda_trace_of_an_example(tmp_path):
    """A traced launch on the GPU: one slice per micro-op, drawable, and the results unchanged."""
    ok, why = backend_status("cuda")
    if not ok:
        pytest.skip(f"backend 'cuda' unavailable: {why}")
    exe, outputs, expected = run_example("mlp", "cuda", options="trace=1")
    with exe:
        data = exe.trace(tmp_path / "t.json")
        executed = len(exe.artifact.program.instrs)  # every instruction runs (the loops expanded)
    spans = check_real_trace(data, executed)
    assert all(s["dur"] >= 0 for s in spans)
    assert data["otherData"]["clock"].startswith("measured")
    mismatch = compare_outputs(outputs, expected, "cuda")
    assert mismatch is None, str(mismatch)


# ---------------------------------------------------------------------------
# Reading a trace back; counter hand-offs
# ---------------------------------------------------------------------------


def test_a_trace_reads_back_from_its_json_on_the_export_grid():
    exe, _outputs, _expected = run_example("mlp", "sim", num_sms=8)
    with exe:
        trace = exe.platform.last_trace()
        back = Trace.from_json(exe.program, trace.to_json())
    assert len(back.events) == len(trace.events) > 0
    key = lambda e: (e.sm, e.engine, e.pos)  # noqa: E731
    for a, b in zip(sorted(trace.events, key=key), sorted(back.events, key=key), strict=True):
        assert (a.sm, a.engine, a.uop, a.pos) == (b.sm, b.engine, b.uop, b.pos)
        assert abs(a.start_us - b.start_us) <= 1 / TICKS_PER_US and abs(a.dur_us - b.dur_us) <= 2 / TICKS_PER_US


def test_reading_a_trace_of_another_target_names_the_engine():
    program = gemv_program()
    data = slices(("x", 0.0, 1.0))
    data["traceEvents"][1].update(cat="tensor", args={"micro-op": 1, "queue position": 0})
    with pytest.raises(TraceError, match=r"slice 'x': engine 'tensor' is not one of load, compute, store"):
        Trace.from_json(program, data)


def test_counter_hand_offs_pair_each_wait_with_the_releases_of_its_counter():
    """On the simulator a consumer starts only after its counter's last release; every pairing is
    checked against the instruction words, and the multi-SM MLP has hand-offs to find."""
    exe, _outputs, _expected = run_example("mlp", "sim", num_sms=8)
    with exe:
        trace = exe.platform.last_trace()
    executed = exe.program.without_loops()  # positions count executed instructions

    def instr(e):
        return executed.executed_queue(e.sm, e.engine)[e.pos]

    handoffs = trace.counter_handoffs()
    waiting = [e for e in trace.events if isa.WAIT_COUNTER.column(instr(e)[None])[0]]
    assert handoffs and len(handoffs) == len(waiting)
    for h in handoffs:
        counter = isa.WAIT_COUNTER.column(instr(h.consumer)[None])[0]
        assert all(isa.RELEASE_COUNTER.column(instr(p)[None])[0] == counter for p in h.producers)
        ends = [p.start_us + p.dur_us for p in h.producers]
        assert ends == sorted(ends) and h.ready_us == ends[-1] and h.spread_us == ends[-1] - ends[0]
        assert h.latency_us >= 0, f"micro-op {h.consumer.uop} began before its counter's last release"
    assert any(p.sm != h.consumer.sm for h in handoffs for p in h.producers)  # hand-offs across SMs


# ---------------------------------------------------------------------------
# Bytes landed along a launch
# ---------------------------------------------------------------------------


def load_bytes(program, sm: int, engine: int, pos: int) -> int:
    """The region bytes of executed position ``pos`` of ``(sm, engine)``, which must be a load."""
    program = program.without_loops()
    words = program.instrs.reshape(-1, isa.INSTR_WORDS)[program.queues[sm][engine][0] + pos]
    assert isa.OPCODE.get(words) == isa.OP_LOAD
    return isa.ROWS.get(words) * isa.ROW_BYTES.get(words)


def test_bytes_landed_bins_each_load_by_its_end():
    program = gemv_program()  # its weight tiles on the stream engine (3), rerolled into loop records
    assert program.has_loops
    size = load_bytes(program, 0, 3, 0)
    events = [TraceEvent(0, 3, 1, 0, 0.0, 2.5),  # a load landing at 2.5 us
              TraceEvent(0, 1, 2, 0, 2.5, 1.0)]  # a compute: no bytes
    trace = Trace(program, events)
    assert trace.bytes_landed(1.0).tolist() == [0, 0, size, 0]
    assert trace.bytes_landed(1.0, engines=[1]).tolist() == [0, 0, 0, 0]
    assert trace.bytes_landed(10.0).tolist() == [size]
    with pytest.raises(TraceError, match="bin_us must be positive, got 0"):
        trace.bytes_landed(0)


def test_bytes_landed_of_a_simulated_launch_add_up_to_its_loads():
    program = gemv_program()
    with vdir.compile(program, backend="sim") as exe:
        exe(**random_inputs(exe.signature, seed=2))
        trace = exe.platform.last_trace()
    words = program.without_loops().instrs.reshape(-1, isa.INSTR_WORDS)  # each executed once
    loads = isa.OPCODE.column(words) == isa.OP_LOAD
    expected = int((isa.ROWS.column(words)[loads].astype(np.int64) * isa.ROW_BYTES.column(words)[loads]).sum())
    assert expected > 0 and int(trace.bytes_landed(0.5).sum()) == expected


def test_hand_offs_of_a_program_with_loop_records_pair_waits_with_releases():
    """Positions in a trace count executed instructions: with loop records in the program, the
    hand-offs still pair each counter wait with the releases of that counter."""
    program = compile_module(parse_module_file(EXAMPLES / "mlp_stack.mlir"), num_sms=8)
    assert program.has_loops and program.num_counters
    with vdir.compile(program, backend="sim") as exe:
        exe(**random_inputs(exe.signature, seed=3))
        trace = exe.platform.last_trace()
    executed = program.without_loops()
    words = executed.instrs.reshape(-1, isa.INSTR_WORDS)

    def word_of(e):
        return words[executed.queues[e.sm][e.engine][0] + e.pos]

    handoffs = trace.counter_handoffs()
    assert handoffs
    for h in handoffs:
        counter = isa.WAIT_COUNTER.get(word_of(h.consumer))
        assert counter and all(isa.RELEASE_COUNTER.get(word_of(p)) == counter for p in h.producers)


def test_release_stores_count_the_stream_loads_around_each_releasing_store():
    """A store that released a counter is listed with its SM's stream loads in flight at its start
    (and when the last of them landed) and those begun while it ran; other stores are not listed."""
    program = compile_module(parse_module_file(EXAMPLES / "mlp_stack.mlir"), num_sms=8)
    executed = program.without_loops()
    words = executed.instrs.reshape(-1, isa.INSTR_WORDS)
    target = get_target(program.target)
    store, stream = target.engine_index(EngineKind.STORE), target.engine_index(EngineKind.STREAM)

    def word(sm, engine, pos):
        return words[executed.queues[sm][engine][0] + pos]

    sm = 0
    count = int(executed.queues[sm][store][1])
    releasing = [p for p in range(count) if isa.RELEASE_COUNTER.get(word(sm, store, p))]
    quiet = [p for p in range(count) if not isa.RELEASE_COUNTER.get(word(sm, store, p))]
    assert releasing and quiet and int(executed.queues[sm][stream][1]) >= 3
    events = [TraceEvent(sm, store, 0, releasing[0], 1.0, 2.0),  # 1.0 .. 3.0
              TraceEvent(sm, store, 0, quiet[0], 5.0, 1.0),  # releases nothing: not listed
              TraceEvent(sm, stream, 0, 0, 0.0, 2.8),  # in flight at 1.0, lands at 2.8
              TraceEvent(sm, stream, 0, 1, 0.5, 0.4),  # landed before the store began
              TraceEvent(sm, stream, 0, 2, 1.5, 2.0),  # begun during the store
              TraceEvent(1, stream, 0, 0, 0.0, 9.0)]  # another SM's
    [r] = Trace(program, events).release_stores(stream)
    assert (r.store.pos, r.in_flight, r.issued, r.last_landed_us) == (releasing[0], 1, 1, 2.8)
    [alone] = Trace(program, events[:2]).release_stores(stream)
    assert (alone.in_flight, alone.issued, alone.last_landed_us) == (0, 0, None)


def test_idle_us_counts_the_time_an_engine_has_nothing_in_flight():
    program = gemv_program()
    stream = get_target(program.target).engine_index(EngineKind.STREAM)
    events = [TraceEvent(0, stream, 1, 0, 1.0, 2.0),  # 1 .. 3
              TraceEvent(0, stream, 1, 1, 2.0, 2.0),  # 2 .. 4, overlapping
              TraceEvent(0, stream, 1, 2, 6.0, 1.0),  # 6 .. 7
              TraceEvent(1, stream, 1, 0, 0.0, 20.0),  # SM 1: busy throughout
              TraceEvent(0, 1, 2, 0, 4.0, 2.0)]  # a compute: another engine
    trace = Trace(program, events)
    assert trace.idle_us(stream, 0.0, 10.0) == {0: 1.0 + 2.0 + 3.0, 1: 0.0}
    assert trace.idle_us(stream, 3.5, 6.5) == {0: 2.0, 1: 0.0}
    with pytest.raises(TraceError, match="window 5.0 .. 5.0 is empty"):
        trace.idle_us(stream, 5.0, 5.0)


def test_flag_word_hand_offs_pair_each_flag_word_load_with_the_stores_of_its_words():
    """On the simulator a flag-word load starts only once every store of its words has ended; each
    pairing is checked against the words' spans in the sync block, and the wait chain follows them."""
    from vdir.frontend.examples import build_mlp_block
    from vdir.transforms.pipeline import compile_to_encoded

    program = compile_to_encoded(build_mlp_block(256, 512), num_sms=4, flag_words=4096)
    with vdir.compile(program, backend="sim") as exe:
        exe(**random_inputs(exe.signature, seed=4))
        trace = exe.platform.last_trace()
    executed = program.without_loops()

    def word_of(e):
        return executed.instrs.reshape(-1, isa.INSTR_WORDS)[executed.queues[e.sm][e.engine][0] + e.pos]

    def spans(row):
        offset, rows = isa.GLOBAL_OFFSET.get(row), isa.ROWS.get(row)
        return [(offset + 2 * r * isa.ROW_STRIDE.get(row), offset + 2 * (r * isa.ROW_STRIDE.get(row) + isa.ROW_BYTES.get(row)))
                for r in range(rows)]

    handoffs = trace.flag_word_handoffs()
    flag_loads = [e for e in trace.events if isa.OPCODE.get(word_of(e)) == isa.OP_LOAD
                  and isa.TRANSFER_FLAGS.get(word_of(e)) & isa.TRANSFER_FLAG_WORDS]
    assert handoffs and len(handoffs) == len(flag_loads) and trace.counter_handoffs() == []
    for h in handoffs:
        mine = spans(word_of(h.consumer))
        for p in h.producers:
            row = word_of(p)
            assert isa.OPCODE.get(row) == isa.OP_STORE and isa.TRANSFER_FLAGS.get(row) & isa.TRANSFER_FLAG_WORDS
            assert any(a < d and c < b for a, b in mine for c, d in spans(row))
        assert sum(min(b, d) - max(a, c) for a, b in mine for p in h.producers for c, d in spans(word_of(p))
                   if a < d and c < b) == sum(b - a for a, b in mine)  # every word of the load has its store
        assert h.latency_us >= 0
    assert any(p.sm != h.consumer.sm for h in handoffs for p in h.producers)
    end = max(e.start_us + e.dur_us for e in trace.events)
    assert "words" in {how for _e, how in trace.wait_chain(0.0, end)}
