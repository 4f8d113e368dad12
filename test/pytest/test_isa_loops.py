"""Loop records in the micro-op ISA: rerolling, expansion, decoding and running them.

``vdir-encode`` rerolls each queue (``vdir.analysis.reroll``); a loop record
stands for ``trips`` copies of the ``body`` records after it, copy ``t``
being base + t * step word by word (a tile slot in the loop's ring), each
body instruction naming one of the loop's shared step records, the
dependency bits following the loop's pairs and flips (``isa.Loop.expand``,
``isa.expand_queue``). These tests pin
down that the rerolled form executes exactly the unrolled instructions
(property-tested on random queues, and on the example programs through the
simulator, bit for bit), that forged loop records are rejected with a
located message, and that the kernel built for a looped program assembles.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ml_dtypes import bfloat16

from vdir import isa
from vdir.analysis import reroll
from vdir.analysis.reroll import reroll_queue
from vdir.device_runtime.sim import SimProgramError, simulate
from vdir.frontend import examples
from vdir.lowering.emit import lower_to_ptx
from vdir.target import get_target
from vdir.transforms.pipeline import compile_to_encoded

#: the queue of the stream engine, where the pipeline puts the loads that wait on nothing (weight tiles)
STREAM = get_target("h200").engine_index("stream")

# ---------------------------------------------------------------------------
# reroll / expand on random queues
# ---------------------------------------------------------------------------


def _instructions(rng: np.random.Generator, n: int, small: bool) -> np.ndarray:
    """``n`` random instruction records (never loop records); ``small`` draws words from 0..3."""
    rows = rng.integers(0, 4 if small else 1 << 32, size=(n, isa.INSTR_WORDS), dtype=np.uint64).astype(np.uint32)
    isa.OPCODE.set_column(rows, rng.integers(0, isa.OP_LOOP, size=n))
    return rows


def _affine_run(rng: np.random.Generator, body: int, trips: int) -> np.ndarray:
    """``trips`` copies of a random ``body``-record block as a random loop says them
    (``isa.Loop.expand``): random step records shared at random, random bit pairs and flips, and some
    tile slots stepping in a random ring."""
    base = _instructions(rng, body, small=False)
    indices = rng.integers(0, rng.integers(1, body + 1), size=body)
    table = rng.integers(0, 1 << 32, size=(int(indices.max()) + 1, isa.INSTR_WORDS), dtype=np.uint64)
    table = table.astype(np.uint32)
    table[:, [*isa.PACKED_WORDS, *isa.DEPENDENCY_BIT_WORDS]] = 0
    lanes = int(rng.integers(0, 1 << 32))
    pairs = sum(3 << 2 * k for k in range(32) if lanes >> k & 1)
    for f in (isa.WAIT_MASK, isa.SIGNAL_MASK):  # a mask holds one bit of a pair at most (a double buffer's)
        one = rng.integers(0, 2, size=body).astype(np.uint64)
        keep = np.uint64(~pairs & (1 << 64) - 1) | np.uint64(pairs & 0x5555_5555_5555_5555) << one
        f.set_column(base, f.column(base) & keep)
    ring_base, ring_bytes = int(rng.integers(0, 1 << 20)), int(rng.integers(1, 1 << 20))
    for k in range(len(table)):
        if rng.random() < 0.5:  # the instructions that step by this record step their slot in the ring
            users = np.nonzero(indices == k)[0]
            table[k, isa.SMEM.word] = rng.integers(0, ring_bytes)
            table[k, 0] = 1 << isa.SMEM.word
            base[users, isa.SMEM.word] = ring_base + rng.integers(0, ring_bytes, size=len(users))
    record = isa.make_loop_record(body, trips, indices, pairs=pairs, flips=int(rng.integers(0, 1 << 63)) * 2 + 1,
                                  ring_base=ring_base, ring_bytes=ring_bytes)
    return isa.expand_queue(np.concatenate([record[None], base, table]))


@st.composite
def queues(draw) -> np.ndarray:
    """A queue of random pieces: noise, exact repeats, affine runs (some wrapping mod 2^32)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pieces = []
    for kind in draw(st.lists(st.sampled_from(["noise", "repeat", "affine"]), max_size=6)):
        if kind == "noise":
            pieces.append(_instructions(rng, draw(st.integers(1, 8)), small=draw(st.booleans())))
        elif kind == "repeat":
            pieces.append(np.repeat(_instructions(rng, 1, small=True), draw(st.integers(2, 12)), axis=0))
        else:
            pieces.append(_affine_run(rng, draw(st.integers(1, 9)), draw(st.integers(2, 9))))
    return np.concatenate(pieces) if pieces else np.zeros((0, isa.INSTR_WORDS), np.uint32)


@settings(max_examples=150, deadline=None)
@given(queues(), st.integers(1, 16))
def test_expanding_a_rerolled_queue_gives_the_queue_back(queue, max_body):
    """expand(reroll(q)) == q for any queue, periodic or not, and rerolling never grows it."""
    rolled = reroll_queue(queue, max_body)
    assert np.array_equal(isa.expand_queue(rolled), queue)
    assert len(rolled) <= len(queue)
    for loop in isa.queue_loops(rolled):
        assert 1 <= loop.body <= max_body and loop.trips * loop.body > 1 + loop.body + loop.step_count


def _copies_run(records: np.ndarray, pos: int, k: int, t: int) -> int:
    """How many leading copies of the ``t`` copies of the ``k`` records at ``pos`` the loop derived
    from them runs exactly (0 where no loop can say them)."""
    rule = reroll._pairs_and_flips(*reroll._first_copies(reroll._BitWords.of(records), pos, k, t))
    rolled = reroll._derive_loop(records, pos, k, t, rule)
    if rolled is None:
        return 0
    equal = (isa.Loop(0, k, t, len(rolled) - 1 - k).expand(rolled) == records[pos : pos + k * t])
    equal = equal.reshape(t, -1).all(axis=1)
    return t if equal.all() else int(np.argmin(equal))


@settings(max_examples=60, deadline=None)
@given(queues(), st.data())
def test_the_reroll_bit_test_rejects_only_loops_of_one_copy(queue, data):
    """The reroll's cheap test on the bit words (``_bit_rule``) turns a candidate away only
    where the loop derived from its copies runs at most one of them: it saves time, never a loop."""
    if len(queue) < 3:
        return
    bits = reroll._BitWords.of(queue)
    for _ in range(20):
        k = data.draw(st.integers(1, len(queue) // 3))
        t = data.draw(st.integers(3, len(queue) // k))
        pos = data.draw(st.integers(0, len(queue) - k * t))
        if reroll._bit_rule(bits, pos, k, t) is None:
            assert _copies_run(queue, pos, k, t) <= 1


def test_the_reroll_bit_test_rejects_a_body_that_disagrees_on_a_pair():
    """Two instructions a trip: the first waits on bits 4 and 5 in turn (a pair), the second on bit 4
    every trip. One loop record's pairs cannot say both: the bit test turns the body away, and no
    two-instruction loop is made."""
    first = _pair_waits(4, 5)
    second = _waits([1, 0, 1, 0, 1, 0, 1, 0])
    isa.WAIT_MASK.set_column(second, 1 << 4)
    isa.WAIT_PARITY.set_column(second, np.array([1, 0] * 4, np.uint64) << np.uint64(4))
    rows = np.stack([first, second], axis=1).reshape(-1, isa.INSTR_WORDS)
    assert reroll._bit_rule(reroll._BitWords.of(rows), 0, 2, 8) is None
    assert _copies_run(rows, 0, 2, 8) == 1
    rolled = reroll_queue(rows)
    assert all(loop.body != 2 for loop in isa.queue_loops(rolled))
    assert np.array_equal(isa.expand_queue(rolled), rows)


def test_an_affine_run_becomes_one_loop():
    """Seven copies of a five-instruction block between noise: one loop of 7 x 5 in 1 + 5 + (at most 5
    step records) records, its bases the first copy."""
    rng = np.random.default_rng(3)
    head, run, tail = _instructions(rng, 3, False), _affine_run(rng, 5, 7), _instructions(rng, 2, False)
    rolled = reroll_queue(np.concatenate([head, run, tail]))
    (loop,) = isa.queue_loops(rolled)
    assert (loop.record, loop.body, loop.trips) == (3, 5, 7)
    assert len(rolled) == 3 + 1 + 5 + loop.step_count + 2
    assert np.array_equal(loop.bases(rolled), run[:5])


def test_equal_steps_are_written_once():
    """A layer's loads of three weight matrices, each stepping by its matrix's layer stride: one step
    record per matrix, not per load."""
    rows = np.zeros((6 * 5, isa.INSTR_WORDS), np.uint32)
    isa.OPCODE.set_column(rows, isa.OP_LOAD)
    trip, j = np.divmod(np.arange(len(rows)), 6)
    isa.BUFFER.set_column(rows, j // 2)
    isa.GLOBAL_OFFSET.set_column(rows, (j % 2) * 256 + trip * (j // 2 + 1) * 4096)
    isa.UOP_ID.set_column(rows, trip * 6 + j)
    rolled = reroll_queue(rows)
    (loop,) = isa.queue_loops(rolled)
    assert (loop.body, loop.trips, loop.step_count) == (6, 5, 3)
    assert loop.step_indices(rolled).tolist() == [0, 0, 1, 1, 2, 2]
    assert np.array_equal(isa.expand_queue(rolled), rows)


def test_a_tile_slot_rotating_in_a_ring_is_one_loop():
    """Ten tiles a trip through a ring of three 64 KiB slots: each tile's slot comes back every third
    trip, which mod 2^32 would take a three-trip body. Stepped in the loop's ring it is one trip."""
    slot, tiles, trips = 65536, 10, 6
    rows = np.zeros((tiles * trips, isa.INSTR_WORDS), np.uint32)
    isa.OPCODE.set_column(rows, isa.OP_LOAD)
    n = np.arange(len(rows))
    isa.SMEM.set_column(rows, 4096 + (n % 3) * slot)
    trip, j = np.divmod(n, tiles)
    isa.GLOBAL_OFFSET.set_column(rows, trip * (1 << 20) + j * j * 8192)  # affine from trip to trip only
    rolled = reroll_queue(rows)
    (loop,) = isa.queue_loops(rolled)
    assert (loop.body, loop.trips) == (tiles, trips)
    record = rolled[loop.record]
    assert (isa.LOOP_RING_BASE.get(record), isa.LOOP_RING_BYTES.get(record)) == (4096, 3 * slot)
    assert np.array_equal(isa.expand_queue(rolled), rows)
    assert "smem+65536%ring" in isa._step_text(loop.bases(rolled)[0], loop.steps(rolled)[0])


def _waits(parities: list[int]) -> np.ndarray:
    """One load per entry, each waiting on bit 5 with that parity and stepping its micro-op id."""
    rows = np.zeros((len(parities), isa.INSTR_WORDS), np.uint32)
    isa.OPCODE.set_column(rows, isa.OP_LOAD)
    isa.WAIT_MASK.set_column(rows, 1 << 5)
    isa.WAIT_PARITY.set_column(rows, np.array(parities, np.uint64) << np.uint64(5))
    isa.UOP_ID.set_column(rows, np.arange(len(parities)))
    return rows


def test_a_wait_parity_that_flips_every_trip_is_one_loop():
    """A bit toggled once a trip is awaited with the other parity each trip: the loop record's flips
    hold the bit, and its one step record moves only the micro-op id."""
    rows = _waits([1, 0, 1, 0, 1, 0])
    rolled = reroll_queue(rows)
    (loop,) = isa.queue_loops(rolled)
    assert (loop.body, loop.trips) == (1, 6)
    assert isa.LOOP_FLIPS.get(rolled[loop.record]) == 1 << 5 and isa.LOOP_PAIRS.get(rolled[loop.record]) == 0
    step = loop.steps(rolled)[0]
    assert isa.WAIT_PARITY.get(step) == 0 and isa.UOP_ID.get(step) == 1
    assert np.array_equal(isa.expand_queue(rolled), rows)
    assert isa._step_text(loop.bases(rolled)[0], step) == "uop_id+1"


def _pair_waits(low: int, high: int) -> np.ndarray:
    """A double buffer's bits: trip t waits on bit ``low`` (even t) or ``high`` (odd t), each toggled every
    other trip, so each is awaited as 1, 0, 1, ... on its own trips."""
    rows = _waits([1, 1, 0, 0, 1, 1, 0, 0])
    mask = np.where(np.arange(8) % 2 == 0, 1 << low, 1 << high).astype(np.uint64)
    isa.WAIT_MASK.set_column(rows, mask)
    isa.WAIT_PARITY.set_column(rows, np.where(np.arange(8) % 4 < 2, mask, 0).astype(np.uint64))
    return rows


def test_a_bit_pair_used_in_turn_is_one_loop():
    """Bits 4 and 5, a pair: they swap on the odd trips and their parity flips on trips 2 and 3 mod 4,
    so one loop of one instruction says them."""
    rows = _pair_waits(4, 5)
    rolled = reroll_queue(rows)
    (loop,) = isa.queue_loops(rolled)
    assert (loop.body, loop.trips) == (1, 8)
    assert isa.LOOP_PAIRS.get(rolled[loop.record]) == 0b11 << 4
    assert np.array_equal(isa.expand_queue(rolled), rows)


def test_bits_that_are_not_partners_do_not_pair():
    """Bits 5 and 6 alternate too, but pairs are bits 2k and 2k + 1: no loop of one instruction."""
    rows = _pair_waits(5, 6)
    rolled = reroll_queue(rows)
    assert all(loop.body != 1 for loop in isa.queue_loops(rolled))
    assert np.array_equal(isa.expand_queue(rolled), rows)


def test_a_wait_parity_of_period_four_is_not_one_loop():
    """Parities 1, 1, 0, 0, ... (a bit toggled every other trip) are not base ^ step on the odd copies:
    no loop of one instruction covers them (two-instruction bodies do)."""
    rows = _waits([1, 1, 0, 0, 1, 1, 0, 0])
    rolled = reroll_queue(rows)
    assert all(loop.body != 1 for loop in isa.queue_loops(rolled))
    assert np.array_equal(isa.expand_queue(rolled), rows)


def test_a_step_in_a_packed_word_is_not_rerolled():
    """Blocks whose word 0 (opcode, family, runtime-value sources) changes stay unrolled: a loop cannot step packed fields."""
    rows = np.zeros((12, isa.INSTR_WORDS), np.uint32)
    isa.OPCODE.set_column(rows, isa.OP_COMPUTE)
    isa.FAMILY.set_column(rows, np.arange(12) % 8)
    assert np.array_equal(reroll_queue(rows), rows)


# ---------------------------------------------------------------------------
# the encoder's option and the examples
# ---------------------------------------------------------------------------

#: (name, builder, SMs): small enough to simulate in a few seconds each
EXAMPLES = [
    ("gemv on 1 SM", examples.build_gemv, 1),
    ("gemv", examples.build_gemv, None),
    ("mlp_block on 2 SMs", examples.build_mlp_block, 2),
    ("4-layer stack on 1 SM", lambda: examples.build_mlp_stack(4, 256, 512), 1),
]


@pytest.fixture(scope="module", params=EXAMPLES, ids=[e[0] for e in EXAMPLES])
def encoded_pair(request) -> tuple[isa.EncodedProgram, isa.EncodedProgram]:
    """(unrolled, rerolled) encodings of one example."""
    _, build, sms = request.param
    return compile_to_encoded(build(), num_sms=sms, reroll=False), compile_to_encoded(build(), num_sms=sms)


def test_rerolled_queues_execute_the_unrolled_ones(encoded_pair):
    """Every queue of the rerolled program expands to the same queue without rerolling; no loops without it."""
    plain, rolled = encoded_pair
    assert not plain.has_loops
    for sm in range(plain.num_sms):
        for e in range(plain.num_engines):
            assert np.array_equal(rolled.executed_queue(sm, e), plain.queue(sm, e))
    assert isa.tensor_map_table(rolled) == isa.tensor_map_table(plain)


def test_simulated_results_are_bit_identical(encoded_pair):
    """The simulator gives the same bytes for the rerolled and the unrolled program."""
    plain, rolled = encoded_pair
    rng = np.random.default_rng(0)
    inputs = [(rng.standard_normal(b.shape, dtype=np.float32) / 8).astype(bfloat16 if b.dtype == "bf16" else np.float32)
              for b in plain.buffers]
    results = []
    for program in (plain, rolled):
        arrays = [a.copy() for a in inputs]
        simulate(program, arrays, seed=1)
        results.append(arrays)
    for a, b in zip(*results, strict=True):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def test_gemv_on_one_sm_has_ten_times_fewer_records():
    """A long periodic queue (a gemv streamed through one SM) rerolls to under a tenth of its records."""
    rolled = compile_to_encoded(examples.build_gemv(), num_sms=1)
    assert rolled.has_loops
    assert len(rolled.executed_instrs()) >= 10 * len(rolled.instrs)


def test_sixteen_layer_stack_has_ten_times_fewer_records():
    """The done criterion of rerolling: the 16-layer MLP stack, its layers kept alike, in a tenth of the
    records of its unrolled encoding (each queue one loop of a layer, whose step records its
    instructions share)."""
    unrolled = compile_to_encoded(examples.build_mlp_stack(), reroll=False)
    rolled = compile_to_encoded(examples.build_mlp_stack(), keep_trips=True)
    assert len(unrolled.instrs) >= 10 * len(rolled.instrs)


# ---------------------------------------------------------------------------
# forged loop records
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def looped() -> isa.EncodedProgram:
    """gemv on one SM: its stream queue (the weight tiles) holds a loop."""
    program = compile_to_encoded(examples.build_gemv(), num_sms=1)
    assert isa.queue_loops(program.queue(0, STREAM))
    return program


def _forged(program: isa.EncodedProgram, forge) -> isa.EncodedProgram:
    """A copy of ``program`` with ``forge(records, loop)`` applied to the first loop of SM 0's stream queue."""
    instrs = program.instrs.copy()
    start, count = program.queues[0][STREAM]
    records = instrs[start : start + count]
    forge(records, isa.queue_loops(records)[0])
    return isa.EncodedProgram(**{**vars(program), "instrs": instrs})


FORGERIES = {
    "body past the queue": (lambda r, lp: isa.LOOP_BODY.set(r[lp.record], len(r) // 2),
                            r"SM 0 stream queue, loop record \d+: (its body of \d+ instructions .* run past the "
                            r"queue's \d+ records|.*step index is set past)"),
    "no trips": (lambda r, lp: isa.LOOP_TRIPS.set(r[lp.record], 0), r"loop record \d+: .*\(body \d+, trips 0\)"),
    "nested loop": (lambda r, lp: r.__setitem__(lp.record + 1, isa.make_loop_record(1, 2)),
                    r"loop record \d+: body instruction 0 is itself a loop \(loops do not nest\)"),
    "ring word without a ring": (lambda r, lp: isa.FAMILY.set(r[lp.end - 1], 1),
                                 r"loop record \d+: body instruction \d+ steps words in a ring, but the loop has none"),
    "bit word stepped": (lambda r, lp: isa.WAIT_PARITY.set(r[lp.end - 1], 1),
                         r"loop record \d+: step record \d+ moves word 3, which only the loop record's pairs and "
                         r"flips change"),
    "step index past the steps": (lambda r, lp: isa.LOOP_STEPS.set(r[lp.record], 0),
                                  r"loop record \d+: a body of \d+ instructions has 1 to \d+ step records, not 0"),
    "lone pair bit": (lambda r, lp: isa.LOOP_PAIRS.set(r[lp.record], 1 << 7),
                      r"loop record \d+: pairs 0x80 hold a bit without its partner"),
    "stray word": (lambda r, lp: r[lp.record].__setitem__(isa.W_UOP_ID, 5),
                   r"loop record \d+: word 10 is not zero"),
    "ring too large": (lambda r, lp: isa.LOOP_RING_BYTES.set(r[lp.record], isa.MAX_LOOP_RING_BYTES + 1),
                       r"loop record \d+: its ring of 16777217 bytes is larger than the 16777216 a loop may "
                       r"step words in"),
}


@pytest.mark.parametrize("case", sorted(FORGERIES))
def test_forged_loop_records_are_rejected_by_name(looped, case):
    """decode_program names the queue and the loop record, never an IndexError."""
    forge, message = FORGERIES[case]
    program = _forged(looped, forge)
    arrays = [np.zeros(b.shape, bfloat16 if b.dtype == "bf16" else np.float32) for b in program.buffers]
    with pytest.raises(SimProgramError, match=message):
        simulate(program, arrays)


def test_listing_shows_a_loop_as_a_block(looped):
    """-t isa prints a loop as ``loop trips x body {`` with each base and its steps, numbered by execution."""
    from vdir.isa import disassemble

    text = disassemble(looped)
    (loop, *_) = isa.queue_loops(looped.queue(0, STREAM))
    assert f"loop {loop.trips} x {loop.body} {{" in text
    assert "      step " in text and "global_offset+" in text


# ---------------------------------------------------------------------------
# the GPU runs the executed stream
# ---------------------------------------------------------------------------


def test_without_loops_is_the_executed_stream(looped):
    """What the CUDA backend uploads unless the engines run the loops (``run_loops`` off, the default,
    or the lsu load path): every queue expanded, the table rebuilt, nothing else changed."""
    flat = looped.without_loops()
    assert looped.has_loops and not flat.has_loops
    for sm in range(looped.num_sms):
        for e in range(looped.num_engines):
            assert np.array_equal(flat.queue(sm, e), looped.executed_queue(sm, e))
    assert (flat.buffers, flat.scalars, flat.num_counters) == (looped.buffers, looped.scalars, looped.num_counters)
    plain = compile_to_encoded(examples.build_gemv(), num_sms=1, reroll=False)
    assert plain.without_loops() is plain


def test_check_loops_names_the_queue_and_the_record(looped):
    """EncodedProgram.check_loops (run by vdir-run and the CUDA backend on reading a program) names both."""
    looped.check_loops()
    forge, _ = FORGERIES["nested loop"]
    with pytest.raises(isa.LoopFormError, match=r"^SM 0 stream queue, loop record \d+: body instruction 0 is itself"):
        _forged(looped, forge).check_loops()


#: a runtime-bounded repeat on one SM: each trip's condition (``when %n - i - 1 >= 0``) steps its signed
#: constant word, so the loops carry runtime values
RUNTIME_BOUNDED = """
vdir.program @rv(%x: !vdir.buffer<64x64xbf16>, %y: !vdir.buffer<64x64xbf16>, %n: index in 0 to 65) {
  vdir.repeat %i = 0 to %n max 64 {
    %t = vdir.load %x[%i, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<1x64xbf16>
    %s = vdir.compute add(%t, %t) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
    %d = vdir.store %s, %y[%i, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<64x64xbf16>
  }
}
"""


@pytest.fixture(scope="module")
def runtime_bounded(tmp_path_factory) -> tuple[isa.EncodedProgram, isa.EncodedProgram]:
    """(unrolled, rerolled) encodings of :data:`RUNTIME_BOUNDED` on one SM."""
    from vdir.tools.common import parse_module_file

    path = tmp_path_factory.mktemp("rv") / "rv.mlir"
    path.write_text(RUNTIME_BOUNDED)
    encode = [compile_to_encoded(parse_module_file(str(path)), num_sms=1, reroll=r) for r in (False, True)]
    return encode[0], encode[1]


@pytest.mark.parametrize("n", [0, 5, 37, 64])
def test_loops_with_stepping_conditions_simulate_bit_identically(runtime_bounded, n):
    """Conditions whose signed constant steps per trip run the same micro-ops as unrolled, for any %n."""
    plain, rolled = runtime_bounded
    queue = rolled.queue(0, STREAM)  # the conditional loads wait on nothing: they stream
    assert any(isa.GUARD_CONST.column(loop.steps(queue)).any() for loop in isa.queue_loops(queue))
    x = (np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 512).astype(bfloat16)
    results = []
    for program in (plain, rolled):
        arrays = [x.copy(), np.zeros((64, 64), bfloat16)]
        simulate(program, arrays, scalars=(n,))
        results.append(arrays[1])
    assert np.array_equal(results[0].view(np.uint16), results[1].view(np.uint16))
    assert np.array_equal(results[1][:n].astype(np.float32), (x[:n].astype(np.float32) * 2))


def test_looped_runtime_values_ptx_assembles(runtime_bounded, tmp_path):
    """The kernel that runs the loops (the bulk load path) and the one of their executed stream (the lsu
    path, which walks plain queues) read conditions on their branch, and assemble."""
    if not shutil.which("ptxas"):
        pytest.skip("ptxas is not on PATH")
    rolled = runtime_bounded[1]
    for load_path, program in (("bulk", rolled), ("lsu", rolled.without_loops())):
        src = tmp_path / f"{load_path}.ptx"
        ptx = lower_to_ptx(program, options={"load_path": load_path, "run_loops": True})
        assert ("$L_loop_scan" in ptx) == (load_path == "bulk")  # the loop walk, where the kernel runs loops
        src.write_text(ptx)
        r = subprocess.run(["ptxas", "-arch=sm_90a", str(src), "-o", str(tmp_path / "k.cubin")],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
