"""The simulator with two load engines per SM (``load`` and ``stream``).

Every engine that runs loads is a pipeline of its own: up to ``load_window``
loads in flight, completed in its own queue order, publishing its own clock
entries; the SM's loads share its bandwidth. The race checker tracks the
global-memory readers of each load engine, and trace events name the engine
that ran the load. Compiled programs put loads on ``stream`` with
``engine="stream"``; hand-assembled ones with ``ProgramAssembler``'s
``engine=``.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir import isa
from vdir.device_runtime.sim import SMALL_LOAD_BYTES, SimProgramError, SimRaceError, costs_for, simulate
from vdir.families import FAMILIES
from vdir.frontend import ProgramBuilder
from vdir.target import TARGETS, EngineKind, get_target
from vdir.testing.assembler import ProgramAssembler

TARGET = get_target()
LOAD, COMPUTE, STORE, STREAM = (
    TARGET.engine_index(k) for k in (EngineKind.LOAD, EngineKind.COMPUTE, EngineKind.STORE, EngineKind.STREAM)
)
#: the SM's share of the device's bandwidth (bytes per µs), as the cost model takes it
COSTS = costs_for(TARGET)
BYTES_PER_US = (COSTS.stream_bytes_per_us or TARGET.hbm_bytes_per_us) / TARGET.num_sms
EPS = 1e-9

R, K, TILE = 64, 256, 16


def buf(name, shape, dtype="bf16", out=False):
    """An ``in`` buffer, or an ``out`` buffer (written, not read for its initial data)."""
    return isa.BufferInfo(name, tuple(shape), dtype, is_output=out, is_input=not out)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((R, K)) / math.sqrt(K)).astype(bfloat16)
    x = (rng.standard_normal((1, K)) * 0.5).astype(bfloat16)
    return w, x


def bits(*numbers: int) -> int:
    return sum(1 << b for b in numbers)


def events_of(trace, sm: int, engine: int):
    """The trace events of one engine, in the order the simulator recorded them (completion order)."""
    return [e for e in trace.events if e.sm == sm and e.engine == engine]


# ---------------------------------------------------------------------------
# Compiled programs: weight tiles on the stream engine, the activation row on the load engine
# ---------------------------------------------------------------------------


@pytest.fixture
def without_stream(monkeypatch: pytest.MonkeyPatch) -> str:
    """The h200 without its stream engine: every load of a program runs on the load engine."""
    h200 = get_target("h200")
    engines = tuple(e for e in h200.engines if e.kind != EngineKind.STREAM)
    monkeypatch.setitem(TARGETS, "h200_load_only", replace(h200, name="h200_load_only", engines=engines))
    return "h200_load_only"


def gemv_module(target: str, weight_engine: str | None):
    """y = W (x + x), W in four row tiles on ``weight_engine``.

    The activation row (x + x) is stored to @h and loaded back, so its load
    waits on that store: it stays on the load engine, whatever the passes do
    with loads that wait on nothing.
    """
    b = ProgramBuilder("gemv", target=target)
    w = b.buffer("w", (R, K))
    x = b.buffer("x", (1, K))
    h = b.buffer("h", (1, K))
    y = b.buffer("y", (1, R))
    xt = b.load(x, (0, 0), (1, K), name="xt")
    b.store(b.compute("add", [xt, xt], name="x2"), h, (0, 0), name="h_stored")
    ht = b.load(h, (0, 0), (1, K), name="ht")
    for i in range(R // TILE):
        wt = b.load(w, (TILE * i, 0), (TILE, K), name=f"w{i}", engine=weight_engine)
        b.store(b.compute("gemv", [wt, ht], name=f"y{i}"), y, (0, TILE * i), name=f"y{i}_stored")
    return b.finish()


def load_buffers(program: isa.EncodedProgram, engine: int) -> list[str]:
    """The buffers the loads of SM 0's queue ``engine`` read, in queue order."""
    queue = program.executed_queue(0, engine)
    loads = queue[isa.OPCODE.column(queue) == isa.OP_LOAD]
    return [program.buffers[b].name for b in isa.BUFFER.column(loads).tolist()]


@pytest.mark.parametrize("seed, load_window", [(0, 8), (1, 1), (2, 2), (3, 3)])
def test_a_gemv_with_streamed_weights_gives_the_bytes_of_the_all_load_version(seed, load_window, without_stream):
    w, x = inputs(seed)
    with vdir.compile(gemv_module("h200", "stream"), num_sms=1, seed=seed, load_window=load_window) as run:
        outputs = run(w=w, x=x)
        program, trace = run.program, run.platform.last_trace()
    with vdir.compile(gemv_module(without_stream, None), num_sms=1, seed=seed, load_window=load_window) as run:
        reference = run(w=w, x=x)["y"]
        assert all(load_buffers(run.program, LOAD).count(n) == c for n, c in (("w", 4), ("x", 1), ("h", 1)))
    # the weights ran on the stream engine, the activation row on the load engine (x, which waits
    # on nothing, may go to either: that is vdir-place's choice)
    assert load_buffers(program, STREAM).count("w") == 4
    assert "h" in load_buffers(program, LOAD) and "w" not in load_buffers(program, LOAD)
    assert [e.pos for e in events_of(trace, 0, STREAM)] == list(range(len(program.executed_queue(0, STREAM))))
    # bit for bit: the all-load version and the families' numpy semantics
    streamed = outputs["y"]
    assert np.array_equal(streamed.view(np.uint16), reference.view(np.uint16))
    h = FAMILIES["add"].run([x, x], {}, "bf16")
    assert np.array_equal(outputs["h"].view(np.uint16), h.view(np.uint16))
    expected = np.concatenate(
        [FAMILIES["gemv"].run([w[TILE * i : TILE * (i + 1)], h], {}, "bf16") for i in range(R // TILE)], axis=1
    )
    assert np.array_equal(streamed.view(np.uint16), expected.view(np.uint16))
    assert np.abs(streamed.astype(np.float32)).max() > 0


# ---------------------------------------------------------------------------
# Each load engine completes in its own queue order, and only publishes its own loads
# ---------------------------------------------------------------------------

X_SLOT, Y_SLOT = R * K * 2, R * K * 2 + 1024


def streamed_tiles_program(wait_for_x: bool) -> isa.EncodedProgram:
    """w streamed in four row tiles (only the last one signals, bit 0), x on the load engine (bit 1),
    one gemv over the whole of w, then the store of y.

    The gemv reads all four tiles after waiting for the last: right only
    because the stream engine completes in its queue order. Without
    ``wait_for_x`` it reads x with no wait for it: the stream engine's
    completions say nothing about the load engine's loads.
    """
    a = ProgramAssembler(1, [buf("w", (R, K)), buf("x", (1, K)), buf("y", (1, R), out=True)], 64 * 1024)
    tile_bytes = TILE * K * 2
    for i in range(R // TILE):
        a.load(0, 0, i * tile_bytes, TILE, K * 2, K * 2, i * tile_bytes, signal=bits(0) if i == 3 else 0,
               name=f"%w{i} = load @w", engine=STREAM)
    a.load(0, 1, 0, 1, K * 2, K * 2, X_SLOT, signal=bits(1), name="%x = load @x")
    wait = bits(0, 1) if wait_for_x else bits(0)
    a.compute(0, FAMILIES["gemv"].opcode, Y_SLOT, [0, X_SLOT], R, K, wait=wait, parity=wait, signal=bits(2),
              name="%y = gemv(%w, %x)")
    a.store(0, 2, 0, 1, R * 2, R * 2, Y_SLOT, wait=bits(2), parity=bits(2), name="store %y -> @y")
    return a.finish()


@pytest.mark.parametrize("seed", range(8))
def test_a_wait_for_the_last_stream_load_covers_the_earlier_ones(seed):
    w, x = inputs(seed)
    y = np.zeros((1, R), bfloat16)
    trace = simulate(streamed_tiles_program(wait_for_x=True), [w, x, y], seed=seed, load_window=1 + seed % 4)
    expected = FAMILIES["gemv"].run([w, x], {}, "bf16")
    assert np.array_equal(y.view(np.uint16), expected.view(np.uint16))
    # the stream loads retired in queue order, and their events name the stream engine
    stream = events_of(trace, 0, STREAM)
    assert [e.pos for e in stream] == [0, 1, 2, 3]
    assert [e.pos for e in events_of(trace, 0, LOAD)] == [0]


@pytest.mark.parametrize("seed", range(8))
def test_a_stream_load_completing_does_not_publish_the_load_engines_loads(seed):
    """In every interleaving, also those where x's load was issued before the last stream load."""
    w, x = inputs(seed)
    with pytest.raises(SimRaceError) as err:
        simulate(streamed_tiles_program(wait_for_x=False), [w, x, np.zeros((1, R), bfloat16)], seed=seed)
    message = str(err.value)
    assert "%y = gemv(%w, %x) (SM 0, compute engine, queue position 0)" in message
    assert "%x = load @x (SM 0, load engine, queue position 0)" in message


# ---------------------------------------------------------------------------
# Windows per load engine, bandwidth per SM
# ---------------------------------------------------------------------------

#: 32 KiB loads: tiles larger than SMALL_LOAD_BYTES, which take the SM's bandwidth one after another
LOADS, ROWS, ROW_BYTES = 3, 64, 512


def two_queues_of_loads() -> isa.EncodedProgram:
    """Three 32 KiB loads on the load engine and three on the stream engine of SM 0, none waiting."""
    assert ROWS * ROW_BYTES > SMALL_LOAD_BYTES, "the loads must be tiles, not rows that land beside them"
    a = ProgramAssembler(1, [buf("a", (LOADS * ROWS, ROW_BYTES // 2)), buf("b", (LOADS * ROWS, ROW_BYTES // 2))],
                         2 * LOADS * ROWS * ROW_BYTES)
    nbytes = ROWS * ROW_BYTES
    for i in range(LOADS):
        a.load(0, 0, i * nbytes, ROWS, ROW_BYTES, ROW_BYTES, i * nbytes, name=f"%a{i} = load @a")
        a.load(0, 1, i * nbytes, ROWS, ROW_BYTES, ROW_BYTES, (LOADS + i) * nbytes, name=f"%b{i} = load @b",
               engine=STREAM)
    return a.finish()


@pytest.mark.parametrize("load_window", [1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_each_load_engine_has_its_own_window_and_the_sm_one_bandwidth(seed, load_window):
    program = two_queues_of_loads()
    arrays = [np.zeros((LOADS * ROWS, ROW_BYTES // 2), bfloat16) for _ in range(2)]
    trace = simulate(program, arrays, seed=seed, load_window=load_window)
    load, stream = events_of(trace, 0, LOAD), events_of(trace, 0, STREAM)
    for events in (load, stream):
        # retired in queue order; a load takes the window slot of the one load_window before it
        assert [e.pos for e in events] == list(range(LOADS))
        for early, late in zip(events, events[load_window:], strict=False):
            assert late.start_us >= early.start_us + early.dur_us - EPS
        # each engine's first load_window loads start at once: the other engine takes no slot of them
        assert [e.start_us for e in events[:load_window]] == pytest.approx([COSTS.load_issue_us * i for i in range(load_window)])
    # so a load and a stream load are in flight together, even with a window of one
    assert max(a.start_us for a in (load[0], stream[0])) < min(a.start_us + a.dur_us for a in (load[0], stream[0]))
    # the SM's bytes land one load after another at its share of the bandwidth, whichever engine loads them
    busy = ROWS * ROW_BYTES / BYTES_PER_US
    ends = sorted(e.start_us + e.dur_us for e in load + stream)
    assert ends[0] >= COSTS.load_latency_us + busy - EPS
    assert all(later - earlier >= busy - EPS for earlier, later in zip(ends, ends[1:], strict=False))


# ---------------------------------------------------------------------------
# Global-memory readers per (SM, load engine)
# ---------------------------------------------------------------------------


def stream_reader_program(store_waits_for_stream: bool) -> isa.EncodedProgram:
    """SM 0 stores @h twice; SM 1 reads the first value on both its load engines.

    SM 1's load engine reads @h at position 0 and its stream engine at
    position 1 (after a load of @a), each after counter 0 (the first store).
    Counter 1 counts SM 1's reads of @h that landed; the second store waits
    for both, or (``store_waits_for_stream`` false) for the load engine's
    only: then nothing orders it after the stream engine's read.
    """
    a = ProgramAssembler(2, [buf("a", (1, R)), buf("b", (1, R)), buf("h", (1, R), out=True),
                             buf("out", (1, R), out=True), buf("out2", (1, R), out=True),
                             buf("out3", (1, R), out=True)], 64 * 1024, num_counters=2)
    row = R * 2
    a.load(0, 0, 0, 1, row, row, 0, signal=bits(0), name="SM 0 load @a")
    a.load(0, 1, 0, 1, row, row, 128, signal=bits(1), name="SM 0 load @b")
    a.store(0, 2, 0, 1, row, row, 0, wait=bits(0), parity=bits(0), release_counter=0, name="first store @h")
    a.store(0, 2, 0, 1, row, row, 128, wait=bits(1), parity=bits(1), wait_counter=1,
            wait_count=2 if store_waits_for_stream else 1, name="second store @h")
    a.load(1, 2, 0, 1, row, row, 0, signal=bits(0), wait_counter=0, wait_count=1, release_counter=1,
           name="SM 1 load @h")
    a.load(1, 0, 0, 1, row, row, 256, signal=bits(2), name="SM 1 stream load @a", engine=STREAM)
    a.load(1, 2, 0, 1, row, row, 128, signal=bits(1), wait_counter=0, wait_count=1,
           release_counter=1 if store_waits_for_stream else None, name="SM 1 stream load @h", engine=STREAM)
    a.store(1, 3, 0, 1, row, row, 0, wait=bits(0), parity=bits(0), name="store -> @out")
    a.store(1, 4, 0, 1, row, row, 128, wait=bits(1), parity=bits(1), name="store -> @out2")
    a.store(1, 5, 0, 1, row, row, 256, wait=bits(2), parity=bits(2), name="store -> @out3")
    return a.finish()


def reader_arrays():
    first, second = np.full((1, R), 1, bfloat16), np.full((1, R), 2, bfloat16)
    return [first, second] + [np.zeros((1, R), bfloat16) for _ in range(4)]


@pytest.mark.parametrize("seed", range(8))
def test_a_store_ordered_after_a_stream_load_of_its_bytes_is_no_race(seed):
    arrays = reader_arrays()
    trace = simulate(stream_reader_program(store_waits_for_stream=True), arrays, seed=seed)
    first, second, h, out, out2, out3 = arrays
    assert np.array_equal(out, first) and np.array_equal(out2, first) and np.array_equal(out3, first)
    assert np.array_equal(h, second)
    assert [e.pos for e in events_of(trace, 1, STREAM)] == [0, 1]


def test_a_store_over_bytes_a_stream_load_still_reads_is_a_race_naming_the_stream_engine():
    """Whichever comes first, the store or the stream engine's read, the race names that read;
    the load engine's read of the same bytes is ordered, so it is never the one named."""
    stream_read = "SM 1 stream load @h (SM 1, stream engine, queue position 1)"
    write_after_read = 0
    for seed in range(16):
        with pytest.raises(SimRaceError) as err:
            simulate(stream_reader_program(store_waits_for_stream=False), reader_arrays(), seed=seed)
        message = str(err.value)
        assert "race on buffer 'h'" in message and stream_read in message
        assert "second store @h (SM 0, store engine, queue position 1)" in message
        assert "SM 1 load @h" not in message
        if "still reads" in message:
            write_after_read += 1
            assert message.startswith(
                f"race on buffer 'h': second store @h (SM 0, store engine, queue position 1) overwrites bytes "
                f"that {stream_read} still reads"
            )
    assert write_after_read > 0  # the reader table caught it, not only the read of the new bytes


def test_a_load_engine_that_also_runs_other_micro_ops_is_refused(monkeypatch: pytest.MonkeyPatch):
    """The simulator runs an engine that loads as a pipeline of loads: a compute there would be lost."""
    h200 = get_target("h200")
    engines = tuple(replace(e, runs=e.runs | {"compute"}) if e.kind == EngineKind.STREAM else e for e in h200.engines)
    monkeypatch.setitem(TARGETS, "stream_computes", replace(h200, name="stream_computes", engines=engines))
    with pytest.raises(SimProgramError, match="the stream engine of target 'stream_computes' runs loads and compute"):
        simulate(two_queues_of_loads(), [np.zeros((LOADS * ROWS, ROW_BYTES // 2), bfloat16)] * 2,
                 target="stream_computes")
