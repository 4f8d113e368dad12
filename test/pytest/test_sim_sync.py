"""The simulator's synchronisation checks that one run makes whatever the interleaving.

* Tile provenance: every shared-memory read must see the tile that the last
  writer of its slot in program order (micro-op id order) left, so a read of
  an older, properly ordered tile is reported (a producer and its consumer
  swapped on one queue), and so is a read of a tile overwritten too early.
* Counter waits join exactly the releases they wait for, so a wait short by
  one release is a race in every interleaving.
* An i32 element read as a runtime value is a read: a store over it that is
  not ordered after the read is a race.

Programs are written straight in the ISA (``ProgramAssembler``); micro-op
ids follow the order in which they are added, which is the program order.
"""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16

from vdir import isa
from vdir.device_runtime.sim import SimRaceError, simulate
from vdir.families import FAMILIES
from vdir.testing.assembler import ProgramAssembler

N = 64  # elements per row
ROW = N * 2  # bytes of a bf16 row
X, S, R = 0, 1024, 2048  # shared-memory slots


def buffers(*names_out: tuple[str, bool], shape=(1, N), dtype="bf16") -> list[isa.BufferInfo]:
    return [isa.BufferInfo(name, shape, dtype, is_output=out, is_input=not out) for name, out in names_out]


def add(a: ProgramAssembler, out: int, inputs: list[int], name: str, **deps) -> int:
    """A 1 x N bf16 add on SM 0."""
    return a.compute(0, FAMILIES["add"].opcode, out, inputs, 1, N, name=name, **deps)


def swapped(program: isa.EncodedProgram, first: int, second: int) -> isa.EncodedProgram:
    """``program`` with the instructions of micro-ops ``first`` and ``second`` trading places."""
    ids = [isa.UOP_ID.get(w) for w in program.instrs]
    a, b = ids.index(first), ids.index(second)
    program.instrs[[a, b]] = program.instrs[[b, a]]
    return program


def x_value() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((1, N)).astype(bfloat16)


def reuse_program() -> tuple[isa.EncodedProgram, int, int]:
    """Slot S holds 2x, is stored, then becomes 3x; r = S + x must read 3x (4x in all).

    Returns the program and the ids of the rewrite of S and of its reader,
    which follow each other on the compute queue (no wait between them).
    """
    a = ProgramAssembler(1, buffers(("x", False), ("y0", True), ("y1", True)), 4096)
    a.load(0, 0, 0, 1, ROW, ROW, X, signal=1, name="%x = load @x")
    add(a, S, [X, X], "%s0 = add(%x, %x)", wait=1, parity=1, signal=2)
    a.store(0, 1, 0, 1, ROW, ROW, S, wait=2, parity=2, signal=4, name="store %s0 -> @y0")
    rewrite = add(a, S, [S, X], "%s1 = add(%s0, %x)", wait=4, parity=4)
    reader = add(a, R, [S, X], "%r = add(%s1, %x)", signal=8)
    a.store(0, 2, 0, 1, ROW, ROW, R, wait=8, parity=8, name="store %r -> @y1")
    return a.finish(), rewrite, reader


def test_the_reuse_program_is_clean_and_right():
    x = x_value()
    y0, y1 = np.zeros((1, N), bfloat16), np.zeros((1, N), bfloat16)
    program, _, _ = reuse_program()
    for seed in range(4):
        simulate(program, [x, y0, y1], seed=seed)
    two = FAMILIES["add"].run([x, x], {}, "bf16")
    four = FAMILIES["add"].run([FAMILIES["add"].run([two, x], {}, "bf16"), x], {}, "bf16")
    assert np.array_equal(y1.view(np.uint16), four.view(np.uint16))


@pytest.mark.parametrize("seed", range(4))
def test_a_consumer_swapped_before_its_producer_reads_a_stale_tile(seed):
    """The older tile is properly ordered: only provenance says it is the wrong one."""
    program, rewrite, reader = reuse_program()
    program = swapped(program, rewrite, reader)
    arrays = [x_value(), np.zeros((1, N), bfloat16), np.zeros((1, N), bfloat16)]
    simulate(program, [a.copy() for a in arrays], seed=seed, check_races=False)  # runs, with a wrong result
    with pytest.raises(SimRaceError) as err:
        simulate(program, arrays, seed=seed)
    message = str(err.value)
    assert message.startswith(f"stale read of shared memory [{S}, {S + ROW}) of SM 0: ")
    assert "%r = add(%s1, %x) (SM 0, compute engine, queue position 1) reads the older tile of %s0 = add" in message
    assert "in program order it reads the tile of %s1 = add(%s0, %x)" in message
    assert "which no dependency orders before the read" in message


def test_a_read_of_a_slot_not_written_yet_names_the_producer():
    """The first writer of S and its reader swapped: the slot holds no tile yet."""
    a = ProgramAssembler(1, buffers(("x", False), ("y", True)), 4096)
    a.load(0, 0, 0, 1, ROW, ROW, X, signal=1, name="%x = load @x")
    producer = add(a, S, [X, X], "%s = add(%x, %x)", wait=1, parity=1)
    reader = add(a, R, [S, X], "%r = add(%s, %x)", wait=1, parity=1, signal=2)
    a.store(0, 1, 0, 1, ROW, ROW, R, wait=2, parity=2, name="store %r -> @y")
    program = swapped(a.finish(), producer, reader)
    with pytest.raises(SimRaceError, match=r"stale read of shared memory \[1024, 1152\) of SM 0: %r = add\(%s, %x\) "
                       r".* reads no tile yet, but in program order it reads the tile of %s = add\(%x, %x\)"):
        simulate(program, [x_value(), np.zeros((1, N), bfloat16)])


def test_a_slot_overwritten_before_its_reader_is_an_early_overwrite():
    """The next writer of S runs before the reader of S's first tile (swapped on the queue)."""
    a = ProgramAssembler(1, buffers(("x", False), ("y", True)), 4096)
    a.load(0, 0, 0, 1, ROW, ROW, X, signal=1, name="%x = load @x")
    add(a, S, [X, X], "%s0 = add(%x, %x)", wait=1, parity=1)
    reader = add(a, R, [S, X], "%r = add(%s0, %x)", signal=2)
    overwrite = add(a, S, [S, X], "%s1 = add(%s0, %x)")
    a.store(0, 1, 0, 1, ROW, ROW, R, wait=2, parity=2, name="store %r -> @y")
    program = swapped(a.finish(), reader, overwrite)
    with pytest.raises(SimRaceError) as err:
        simulate(program, [x_value(), np.zeros((1, N), bfloat16)])
    message = str(err.value)
    assert message.startswith(f"early overwrite of shared memory [{S}, {S + ROW}) of SM 0: %s1 = add(%s0, %x) ")
    assert "overwrote the tile of %s0 = add(%x, %x)" in message
    assert "before %r = add(%s0, %x) (SM 0, compute engine, queue position 2) read it" in message


def test_a_read_of_a_tile_from_later_in_program_order_is_reported():
    """The store's id says it comes before the load that fills its slot."""
    a = ProgramAssembler(1, buffers(("x", False), ("y", True)), 4096)
    store = a.store(0, 1, 0, 1, ROW, ROW, X, wait=1, parity=1, name="store %x -> @y")
    load = a.load(0, 0, 0, 1, ROW, ROW, X, signal=1, name="%x = load @x")
    assert store < load
    with pytest.raises(SimRaceError, match=r"read of a later tile on shared memory \[0, 128\) of SM 0: "
                       r"store %x -> @y .* reads the tile of %x = load @x .*, which comes after the read in "
                       r"program order \(no micro-op writes the slot before it\)"):
        simulate(a.finish(), [x_value(), np.zeros((1, N), bfloat16)])


# ---------------------------------------------------------------------------
# Counters
# ---------------------------------------------------------------------------


def short_counter_program(count: int) -> isa.EncodedProgram:
    """SMs 0 and 1 each store half of @h and release counter 0; SM 2 waits for ``count`` releases and
    copies @h to @out."""
    bufs = [isa.BufferInfo("x", (1, N), "bf16", False), isa.BufferInfo("h", (1, N), "bf16", True, False),
            isa.BufferInfo("out", (1, N), "bf16", True, False)]
    a = ProgramAssembler(3, bufs, 4096, num_counters=1)
    half = ROW // 2
    for sm in range(2):
        a.load(sm, 0, sm * half, 1, half, half, 0, signal=1, name=f"%x{sm} = load @x")
        a.store(sm, 1, sm * half, 1, half, half, 0, wait=1, parity=1, release_counter=0, name=f"store %x{sm} -> @h")
    a.load(2, 1, 0, 1, ROW, ROW, 0, signal=1, wait_counter=0, wait_count=count, name="%h = load @h")
    a.store(2, 2, 0, 1, ROW, ROW, 0, wait=1, parity=1, name="store %h -> @out")
    return a.finish()


@pytest.mark.parametrize("seed", range(8))
def test_a_counter_wait_short_by_one_release_is_a_race_in_every_interleaving(seed):
    arrays = [x_value(), np.zeros((1, N), bfloat16), np.zeros((1, N), bfloat16)]
    simulate(short_counter_program(2), [a.copy() for a in arrays], seed=seed)
    with pytest.raises(SimRaceError) as err:
        simulate(short_counter_program(1), arrays, seed=seed)
    # the load comes before the release it did not wait for (write after read) or after it (read after write)
    message = str(err.value)
    assert message.startswith("race on buffer 'h': ")
    assert "%h = load @h" in message and ("store %x0 -> @h" in message or "store %x1 -> @h" in message)


# ---------------------------------------------------------------------------
# Runtime values
# ---------------------------------------------------------------------------


def index_overwrite_program() -> isa.EncodedProgram:
    """SM 0's compute engine runs a nop only if ids[0] >= 0; its store engine overwrites ids with no
    dependency on that read."""
    bufs = [isa.BufferInfo("ids", (1, 4), "i32", True), isa.BufferInfo("new", (1, 4), "i32", True)]
    a = ProgramAssembler(1, bufs, 4096)
    a.load(0, 1, 0, 1, 16, 16, 0, signal=1, name="%new = load @new")
    guarded = a.nop(0, a.compute_engine, name="nop when @ids[0] >= 0")
    a.store(0, 0, 0, 1, 16, 16, 0, wait=1, parity=1, name="store %new -> @ids")
    program = a.finish()
    row = [isa.UOP_ID.get(w) for w in program.instrs].index(guarded)
    for f, value in ((isa.GUARD_SOURCE, isa.SOURCE_BUFFER0), (isa.GUARD_INDEX, 0), (isa.GUARD_COEFF, 1)):
        f.set(program.instrs[row], value)
    return program


def test_a_store_over_an_index_read_as_a_runtime_value_is_a_race():
    """Either the read comes first (write after read) or the store does (read after write): one run finds it."""
    war = []
    for seed in range(8):
        arrays = [np.array([[3, 0, 0, 0]], np.int32), np.array([[-1, 0, 0, 0]], np.int32)]
        with pytest.raises(SimRaceError) as err:
            simulate(index_overwrite_program(), arrays, seed=seed)
        if "reads as a runtime value" in str(err.value):
            war.append(str(err.value))
        else:
            assert "nop when @ids[0] >= 0 (SM 0, compute engine, queue position 0) reads element 0 written by " \
                   "store %new -> @ids" in str(err.value)
    assert war, "no interleaving ran the read first"
    assert war[0] == (
        "race on buffer 'ids': store %new -> @ids (SM 0, store engine, queue position 0) overwrites element 0, "
        "which nop when @ids[0] >= 0 (SM 0, compute engine, queue position 0) reads as a runtime value, with no "
        "dependency ordering the store after that read"
    )


# ---------------------------------------------------------------------------
# Dependency bits
# ---------------------------------------------------------------------------


def early_reuse_program() -> isa.EncodedProgram:
    """Two loads toggle bit 0 back to back; the first one's consumer may not have seen it yet."""
    a = ProgramAssembler(1, buffers(("x", False), ("z", False), ("y", True)), 4096)
    a.load(0, 0, 0, 1, ROW, ROW, X, signal=1, name="%x = load @x")
    a.load(0, 1, 0, 1, ROW, ROW, S, signal=1, name="%z = load @z")
    add(a, R, [X, X], "%r = add(%x, %x)", wait=1, parity=1, signal=2)
    a.store(0, 2, 0, 1, ROW, ROW, R, wait=2, parity=2, name="store %r -> @y")
    return a.finish()


def test_a_bit_toggled_again_before_its_waiter_passed_is_a_lost_toggle():
    """Whether the consumer passes between the two toggles depends on the interleaving; when it does not,
    the second toggle is reported (and not a deadlock)."""
    reports = []
    for seed in range(8):
        arrays = [x_value(), x_value(), np.zeros((1, N), bfloat16)]
        try:
            simulate(early_reuse_program(), arrays, seed=seed)
        except SimRaceError as e:
            reports.append(str(e))
    assert reports, "no interleaving toggled the bit twice before the consumer passed"
    assert reports[0] == (
        "lost toggle of bit 0 of SM 0: %z = load @z (SM 0, load engine, queue position 1) toggles it while "
        "%r = add(%x, %x) (SM 0, compute engine, queue position 0), which waits for it to be 1, sees that "
        "value and has not passed yet; no dependency orders the toggle after that wait"
    )
