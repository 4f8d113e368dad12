"""The GPU kernel runs loop records (lowering option ``run_loops``): its queue table and the engines' loop walk.

With ``run_loops`` the CUDA backend uploads a program's records as they are,
loops included, with a queue table (``vdir.lowering.layout.kernel_queue_table``) from which
the engines map an executed position to the base and step records it runs
and its trip (``vdir.lowering.kernel.fetch``). The table is checked here on
the host by walking it as the kernel does, against the unrolled queues on
random rerolled programs; on the H200, looped programs give the bytes of
their unrolled form, their traces have an event per executed instruction,
and a watchdog report names the executed position in a loop. The compute
engine's window has a warp of its own where the CTA has room for one
(``layout.compute_fetch_warp``); both that kernel and the fallback without it
run here, and a watchdog abort in a loop stops both sides of its hand-off.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ml_dtypes import bfloat16
from test_isa_loops import queues  # the random queue strategy

import vdir
from vdir import isa
from vdir.analysis.reroll import reroll_queue
from vdir.device_runtime.platform import PlatformError
from vdir.frontend import examples
from vdir.lowering import layout as L
from vdir.lowering.emit import lower, lower_to_ptx
from vdir.lowering.options import MAX_COMPUTE_WARPS
from vdir.target import EngineKind, get_target
from vdir.testing.gpu import gpu
from vdir.transforms.pipeline import compile_to_encoded

ENGINES = get_target("h200").num_engines


def _program(queue_list: list[np.ndarray]) -> isa.EncodedProgram:
    """An encoded program of one SM per ``ENGINES`` queues (no buffers: its table is all that is read)."""
    qs = queue_list + [np.zeros((0, isa.INSTR_WORDS), np.uint32)] * (-len(queue_list) % ENGINES)
    starts = np.cumsum([0] + [len(q) for q in qs])
    table = [[(int(starts[sm * ENGINES + e]), len(qs[sm * ENGINES + e])) for e in range(ENGINES)]
             for sm in range(len(qs) // ENGINES)]
    return isa.EncodedProgram(num_sms=len(table), smem_bytes=0, num_counters=0, bitmap_bits=64, buffers=[],
                              instrs=np.concatenate(qs), queues=table)


def _entry_loop_instruction(entry: np.ndarray, base: np.ndarray, step: np.ndarray, trip: int) -> np.ndarray:
    """Trip ``trip`` of a one-instruction loop with the entry's pairs, flips and ring (``isa.Loop.expand``)."""
    rec = isa.make_loop_record(1, trip + 1, [0], pairs=isa.join_u64(*entry[L.LE_PAIRS : L.LE_PAIRS + 2]),
                               flips=isa.join_u64(*entry[L.LE_FLIPS : L.LE_FLIPS + 2]),
                               ring_base=int(entry[L.LE_RING_BASE]), ring_bytes=int(entry[L.LE_RING_BYTES]))
    return isa.expand_queue(np.stack([rec, base, step]))[-1]


def _walk(program: isa.EncodedProgram, table: np.ndarray, sm: int, engine: int) -> tuple[np.ndarray, int]:
    """(the instructions, the first executed index) that a queue's row of ``table`` leads the kernel to:
    a cursor over the loop entries, as ``fetch.LoopCursor.locate`` and ``fetch.loop_word`` do."""
    row = table[(sm * ENGINES + engine) * L.QUEUE_ROW_WORDS :][: L.QUEUE_ROW_WORDS]
    count, entry_at = int(row[L.Q_COUNT]), int(row[L.Q_LOOPS]) // isa.WORD_BYTES
    out = []
    for pos in range(count):
        entry = table[entry_at : entry_at + L.LOOP_ENTRY_WORDS]
        while pos >= entry[L.LE_END]:
            entry_at += L.LOOP_ENTRY_WORDS
            entry = table[entry_at : entry_at + L.LOOP_ENTRY_WORDS]
        if pos < entry[L.LE_BEGIN]:
            out.append(program.instrs[(pos + int(entry[L.LE_DELTA])) % (1 << 32)])
            continue
        trip, j = divmod(pos - int(entry[L.LE_BEGIN]), int(entry[L.LE_BODY]))
        record, body = int(entry[L.LE_RECORD]), int(entry[L.LE_BODY])
        index = int(np.ascontiguousarray(entry[L.LE_STEP_INDEX:]).view(np.uint8)[j])
        out.append(_entry_loop_instruction(entry, program.instrs[record + 1 + j],
                                           program.instrs[record + 1 + body + index], trip))
    return np.array(out, dtype=np.uint32).reshape(-1, isa.INSTR_WORDS), int(row[L.Q_EXEC_START])


def _check_table(program: isa.EncodedProgram) -> None:
    table = L.kernel_queue_table(program)
    executed = program.without_loops()
    for sm in range(program.num_sms):
        for e in range(ENGINES):
            walked, exec_start = _walk(program, table, sm, e)
            assert np.array_equal(walked, program.executed_queue(sm, e)), (sm, e)
            assert exec_start == executed.queues[sm][e][0]  # the trace buffer's order


@settings(max_examples=60, deadline=None)
@given(st.lists(queues(), min_size=1, max_size=6), st.integers(1, 16))
def test_walking_the_queue_table_runs_every_queue_as_unrolled(queue_list, max_body):
    """Random queues, rerolled: the table leads every position to its executed instruction."""
    _check_table(_program([reroll_queue(q, max_body) for q in queue_list]))


def test_walking_the_queue_table_of_a_compiled_stack():
    """The same on a compiled stack whose every queue is one loop of its layers (``keep_trips``)."""
    program = compile_to_encoded(examples.build_mlp_stack(8, 256, 1024), num_sms=8, keep_trips=True)
    assert program.has_loops
    _check_table(program)


def test_a_program_without_loops_has_a_sentinel_per_queue():
    """Without loops every row points at one sentinel entry, whose delta is the queue's first record."""
    program = compile_to_encoded(examples.build_gemv(), num_sms=2, reroll=False)
    table = L.kernel_queue_table(program)
    for sm in range(program.num_sms):
        for e in range(ENGINES):
            row = table[(sm * ENGINES + e) * L.QUEUE_ROW_WORDS :][: L.QUEUE_ROW_WORDS]
            entry = table[int(row[L.Q_LOOPS]) // isa.WORD_BYTES :][: L.LOOP_ENTRY_WORDS]
            assert (row[L.Q_RECORDS], row[L.Q_COUNT]) == program.queues[sm][e]
            assert entry[L.LE_BEGIN] == entry[L.LE_END] == 0xFFFFFFFF and entry[L.LE_DELTA] == row[L.Q_RECORDS]


def _ring_remainder(offset: np.ndarray, ring_trip: np.ndarray, step: np.ndarray, ring: np.ndarray) -> np.ndarray:
    """``(offset + ring_trip * step) mod ring`` the way ``fetch._step_in_ring``'s instructions work it
    out: the u64 sum converted to f64 (``cvt.rn.f64.u64``), times the rounded reciprocal
    (``rcp.rn.f64``, ``mul.rn.f64``), truncated (``cvt.rzi.u64.f64``), the remainder in s64, then one
    add or subtract of the ring."""
    x = offset + ring_trip * step
    quotient = np.trunc(x.astype(np.float64) * (1.0 / ring.astype(np.float64))).astype(np.int64)
    rest = x - quotient * ring
    rest = np.where(rest < 0, rest + ring, rest)
    return np.where(rest >= ring, rest - ring, rest)


def test_the_kernels_ring_arithmetic_is_exact_for_every_allowed_ring():
    """For every ring up to isa.MAX_LOOP_RING_BYTES and operands in it (a ring word's offset and step
    are below the ring, the cursor's trip is kept below it), the f64 quotient is exact or one off and
    the fixed remainder is the true one: the largest values, and random ones at every power of two."""
    rng = np.random.default_rng(7)
    for bits in range(isa.MAX_LOOP_RING_BYTES.bit_length()):
        top = 1 << bits
        ring = rng.integers(max(1, top // 2), top + 1, size=20_000, dtype=np.int64)
        ring[:3] = top
        offset, ring_trip, step = ((rng.random(ring.size) * ring).astype(np.int64) for _ in range(3))
        offset[:3], ring_trip[:3], step[:3] = ring[:3] - 1, ring[:3] - 1, [ring[0] - 1, 1, 0]
        assert np.array_equal(_ring_remainder(offset, ring_trip, step, ring), (offset + ring_trip * step) % ring)


def test_the_loop_kernel_walks_entries_and_the_plain_one_does_not():
    """A looped program's kernel prefetches base and step records (half as many slots) and steps them
    (ring words by an f64 quotient, no 64-bit division; the report path's cursor divides); the same
    program unrolled gets the plain fetcher, as it does with the lsu load path or without run_loops
    (the default: the CUDA backend then uploads the executed stream)."""
    looped = compile_to_encoded(examples.build_gemv(), num_sms=1)
    assert looped.has_loops
    loop_ptx = lower_to_ptx(looped, options={"run_loops": True})
    plain_ptx = lower_to_ptx(looped.without_loops(), options={"run_loops": True})
    assert "cvt.rzi.u64.f64" in loop_ptx and "rem.u64" not in loop_ptx
    assert "div.u32" in loop_ptx and "$L_loop_scan" in loop_ptx
    assert "cp.async.wait_group 3" in loop_ptx and "cp.async.wait_group 7" not in loop_ptx
    assert "$L_loop_scan" not in plain_ptx and "cp.async.wait_group 7" in plain_ptx
    for expanding in ({"load_path": "lsu", "run_loops": True}, {}):
        assert "$L_loop_scan" not in lower_to_ptx(looped, options=expanding)


def test_one_engines_queues_unrolled_keep_every_executed_stream():
    """``without_loops`` for one engine (what bench/diag_loops.py times): that engine's queues hold
    their executed stream (no loop record left), the others their records as they were, and every
    queue still executes the same instructions; for every engine, the executed stream itself."""
    looped = compile_to_encoded(examples.build_mlp_stack(4, 256, 512), num_sms=2)
    for e in range(looped.num_engines):
        name = looped.engine_name(e)
        partly = looped.without_loops({name})
        partly.check_loops()
        for sm in range(looped.num_sms):
            for other in range(looped.num_engines):
                assert np.array_equal(partly.executed_queue(sm, other), looped.executed_queue(sm, other))
                kept = partly.queue(sm, other)
                if other == e:
                    assert len(kept) == len(looped.executed_queue(sm, other))
                    assert not isa.queue_loops(kept)
                else:
                    assert np.array_equal(kept, looped.queue(sm, other))
    assert any(isa.queue_loops(looped.queue(sm, e)) for sm in range(looped.num_sms) for e in range(looped.num_engines))
    assert np.array_equal(looped.without_loops().instrs, looped.executed_instrs())


H200 = get_target("h200")


def _group(warps: int):
    """The H200 with a compute group of ``warps`` warps."""
    import dataclasses

    return dataclasses.replace(H200, compute_threads=32 * warps)


def test_a_kernel_that_runs_loops_has_a_compute_fetch_warp_where_there_is_room():
    """The fetch warp follows every engine's role (the stream warp, 10 on the H200: 12 warps); a
    group that leaves no room (29 warps: 32 with the load, store and stream warps) keeps the window;
    without loops nothing changes."""
    assert L.compute_fetch_warp(H200, loops=False) is None
    assert L.compute_fetch_warp(H200, loops=True) == L.stream_warp(H200) + 1 == 11
    assert (L.block_threads(H200), L.block_threads(H200, loops=True)) == (352, 384)
    assert L.compute_fetch_warp(_group(MAX_COMPUTE_WARPS - 1), loops=True) == L.MAX_CTA_WARPS - 1
    assert L.block_threads(_group(MAX_COMPUTE_WARPS - 1), loops=True) == 32 * L.MAX_CTA_WARPS
    assert L.compute_fetch_warp(_group(MAX_COMPUTE_WARPS), loops=True) is None
    assert L.block_threads(_group(MAX_COMPUTE_WARPS), loops=True) == 32 * L.MAX_CTA_WARPS


def test_the_lowered_kernel_launches_the_fetch_warp_only_when_it_runs_loops():
    """``lower``'s block size and the PTX's role follow the kernel's loop mode, not the option alone."""
    looped = compile_to_encoded(examples.build_gemv(), num_sms=1)
    assert lower(looped, options={"run_loops": True}).block_threads == 384
    for program, options in ((looped, {}), (looped.without_loops(), {"run_loops": True}),
                             (looped, {"run_loops": True, "load_path": "lsu"})):
        assert lower(program, options=options).block_threads == 352
        assert "$L_role_compute_fetch" not in lower_to_ptx(program, options=options)
    full = {"run_loops": True, "compute_warps": MAX_COMPUTE_WARPS}
    assert lower(looped, options=full).block_threads == 32 * L.MAX_CTA_WARPS
    full_ptx = lower_to_ptx(looped, options=full)
    assert "$L_role_compute_fetch" not in full_ptx and "bar.red" not in full_ptx
    fed_ptx = lower_to_ptx(looped, options={"run_loops": True})
    assert fed_ptx.count("bar.red.or.pred") == 3  # the fetch warp's wait, the group's hand-back and its abort


# ---------------------------------------------------------------------------
# on the H200
# ---------------------------------------------------------------------------

LOOPED = [
    ("gemv on 1 SM", examples.build_gemv, 1),
    ("4-layer stack on 1 SM", lambda: examples.build_mlp_stack(4, 256, 512), 1),
    ("8-layer stack on 8 SMs, kept", lambda: examples.build_mlp_stack(8, 256, 1024), 8),
]


def _run(program: isa.EncodedProgram, inputs: dict[str, np.ndarray], **options: object) -> list[np.ndarray]:
    """The program's outputs on the cuda backend (``run_loops`` and ``options``), in argument order."""
    with vdir.compile(program, backend="cuda", options={"run_loops": True, **options}) as exe:
        out = exe(**inputs)
        names = [b.name for b in program.buffers if b.is_output]
        return [np.asarray(out[n]) for n in names] if isinstance(out, dict) else [np.asarray(out)]


@gpu
@pytest.mark.parametrize("name,build,sms", LOOPED, ids=[e[0] for e in LOOPED])
def test_looped_programs_give_the_bytes_of_their_unrolled_form(name, build, sms):
    """Each example, rerolled (the stack also with its layers kept alike), run by the engines' loop
    walk, against the same program unrolled on the host (its kernel the plain walk): bit for bit, on
    fresh random inputs."""
    rolled = compile_to_encoded(build(), num_sms=sms, keep_trips="kept" in name)
    assert rolled.has_loops
    rng = np.random.default_rng()
    inputs = {b.name: (rng.standard_normal(b.shape, dtype=np.float32) / 8).astype(
        bfloat16 if b.dtype == "bf16" else np.float32) for b in rolled.buffers if b.is_input}
    looped, plain = _run(rolled, inputs), _run(rolled.without_loops(), inputs)
    assert looped
    for a, b in zip(looped, plain, strict=True):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def _random_inputs(program: isa.EncodedProgram) -> dict[str, np.ndarray]:
    rng = np.random.default_rng()
    return {b.name: (rng.standard_normal(b.shape, dtype=np.float32) / 8).astype(
        bfloat16 if b.dtype == "bf16" else np.float32) for b in program.buffers if b.is_input}


@gpu
@pytest.mark.parametrize("warps", [1, MAX_COMPUTE_WARPS - 1, MAX_COMPUTE_WARPS])
def test_looped_programs_on_any_compute_group_give_the_bytes_of_their_unrolled_form(warps):
    """A one-warp group with the fetch warp, the largest group that leaves room for it (32 warps in
    all) and one that leaves none (the group's second warp owns the window): bit for bit the stack
    unrolled on the host."""
    rolled = compile_to_encoded(examples.build_mlp_stack(4, 256, 512), num_sms=2)
    assert rolled.has_loops
    inputs = _random_inputs(rolled)
    looped = _run(rolled, inputs, compute_warps=warps)
    plain = _run(rolled.without_loops(), inputs, compute_warps=warps)
    for a, b in zip(looped, plain, strict=True):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def _stuck_in_a_loop(program: isa.EncodedProgram) -> tuple[isa.EncodedProgram, int]:
    """``program`` with the first base record of SM 0's first compute loop waiting on a bit that never
    toggles (so every trip would, and the first never starts), and the executed position it hangs at."""
    engine = get_target(program.target).engine_index(EngineKind.COMPUTE)
    first, count = program.queues[0][engine]
    records = program.instrs[first : first + count]
    loop = isa.queue_loops(records)[0]
    toggled = 0
    for e in range(program.num_engines):
        for ins in program.executed_queue(0, e):
            toggled |= isa.SIGNAL_MASK.get(ins)
    bit = 1 << (isa.WAIT_MASK.max_value.bit_length() - 1)  # the bitmap's last bit
    assert not toggled & bit
    instrs = program.instrs.copy()
    base = instrs[first + loop.record + 1]
    isa.WAIT_MASK.set(base, isa.WAIT_MASK.get(base) | bit)
    isa.WAIT_PARITY.set(base, isa.WAIT_PARITY.get(base) | bit)
    import dataclasses

    return dataclasses.replace(program, instrs=instrs), loop.record  # the records before it run once each


@gpu
def test_a_watchdog_abort_in_a_loop_stops_the_kernel_and_the_executable_stays_usable():
    """The compute engine stalls inside a loop (the fetch warp waiting for the slot's hand-back): the
    watchdog reports (the compute engine at the executed position, or an engine waiting on it), the
    group leaves through the hand-back with the abort flag (so the fetch warp leaves too: the launch
    ends), twice in a row on one executable; the program then still computes the bytes of its
    unrolled form."""
    import time

    rolled = compile_to_encoded(examples.build_mlp_stack(4, 256, 512), num_sms=1)
    stuck, position = _stuck_in_a_loop(rolled)
    inputs = _random_inputs(rolled)
    with vdir.compile(stuck, backend="cuda", options={"run_loops": True}, watchdog_ms=200) as exe:
        for _ in range(2):
            t = time.monotonic()
            with pytest.raises(PlatformError, match=r"watchdog: .* engine, queue position \d+\)") as raised:
                exe(**inputs)
            if "compute engine" in str(raised.value):  # else an engine that waits on it timed out first
                assert f"queue position {position})" in str(raised.value)
            assert time.monotonic() - t < 5.0
    assert all(np.array_equal(a.view(np.uint8), b.view(np.uint8))
               for a, b in zip(_run(rolled, inputs), _run(rolled.without_loops(), inputs), strict=True))


@gpu
def test_a_traced_looped_program_has_an_event_per_executed_instruction():
    """Trace stamps land at executed indices: every executed instruction of every queue has its event."""
    rolled = compile_to_encoded(examples.build_gemv(), num_sms=1)
    rng = np.random.default_rng()
    with vdir.compile(rolled, backend="cuda", options={"trace": True, "run_loops": True}) as exe:
        exe(**{b.name: rng.standard_normal(b.shape).astype(bfloat16) for b in rolled.buffers if b.is_input})
        trace = exe.platform.last_trace()
    assert trace is not None
    events = trace.events
    assert len(events) == rolled.executed_count()
    for e in range(ENGINES):
        got = sorted(ev.pos for ev in events if ev.engine == e)
        assert got == list(range(len(rolled.executed_queue(0, e))))
