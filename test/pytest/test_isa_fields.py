"""The ISA field table (``vdir.isa.Field``): every field round-trips, on one
record and vectorised; u64 fields split low word first; packed fields leave
their neighbours alone; the layout has no overlaps; values that do not fit,
too many compute inputs and a wrong engine count are errors."""

from __future__ import annotations

import numpy as np
import pytest

from vdir import isa
from vdir.target import get_target
from vdir.testing.assembler import ProgramAssembler

INSTRUCTION_LAYOUTS = {
    "transfer": isa.COMMON_FIELDS + isa.TRANSFER_FIELDS,
    "compute": isa.COMMON_FIELDS + isa.COMPUTE_FIELDS,
}
ALL_FIELDS = sorted(
    {*isa.COMMON_FIELDS, *isa.TRANSFER_FIELDS, *isa.COMPUTE_FIELDS, *isa.HEADER_FIELDS,
     isa.QUEUE_START, isa.QUEUE_COUNT},
    key=lambda f: (f.word, f.shift, f.name),
)


def _random(f: isa.Field, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` random values that fit ``f`` (signed ones too)."""
    if f.signed:
        return rng.integers(f.min_value, f.max_value, n, dtype=np.int64, endpoint=True)
    return rng.integers(0, f.mask, n, dtype=np.uint64, endpoint=True)


def _values(f: isa.Field, rng: np.random.Generator) -> list[int]:
    """Zero, the extremes, and a few random ones that fit ``f``."""
    return [0, f.min_value, f.max_value, *(int(v) for v in _random(f, rng, 4))]


@pytest.mark.parametrize("field", ALL_FIELDS, ids=lambda f: f.name)
def test_every_field_round_trips_and_leaves_the_other_bits_alone(field: isa.Field) -> None:
    rng = np.random.default_rng(field.word * 32 + field.shift)
    for background in (0, 0xFFFFFFFF):
        for value in _values(field, rng):
            words = np.full(isa.INSTR_WORDS, background, dtype=np.uint32)
            field.set(words, value)
            assert field.get(words) == value
            # every bit outside the field keeps the background
            outside = words.copy()
            for k in field.word_indices:
                keep = ~(field.mask << field.shift) & 0xFFFFFFFF if field.packed else 0
                outside[k] = (int(outside[k]) & keep) | (background & ~keep & 0xFFFFFFFF)
            assert (outside == background).all()


@pytest.mark.parametrize("field", ALL_FIELDS, ids=lambda f: f.name)
def test_set_on_a_python_list_matches_set_on_an_array(field: isa.Field) -> None:
    row = [0] * isa.INSTR_WORDS
    arr = np.zeros(isa.INSTR_WORDS, dtype=np.uint32)
    for value in (field.max_value, field.min_value):
        field.set(row, value)
        field.set(arr, value)
        assert row == arr.tolist()


def test_u64_fields_hold_the_low_word_first() -> None:
    words = np.zeros(isa.INSTR_WORDS, dtype=np.uint32)
    isa.GLOBAL_OFFSET.set(words, 0x1234_5678_9ABC_DEF0)
    assert words[isa.W_GLOBAL_OFFSET] == 0x9ABC_DEF0
    assert words[isa.W_GLOBAL_OFFSET + 1] == 0x1234_5678
    assert isa.split_u64(0x1234_5678_9ABC_DEF0) == (0x9ABC_DEF0, 0x1234_5678)
    assert isa.join_u64(0x9ABC_DEF0, 0x1234_5678) == 0x1234_5678_9ABC_DEF0
    lo = np.array([1, 0xFFFFFFFF], dtype=np.uint32)
    hi = np.array([2, 0xFFFFFFFF], dtype=np.uint32)
    assert isa.join_u64(lo, hi).tolist() == [(2 << 32) | 1, 2**64 - 1]
    for f in (isa.WAIT_MASK, isa.WAIT_PARITY, isa.SIGNAL_MASK, isa.GLOBAL_OFFSET):
        assert f.nwords == 2 and f.mask == 2**64 - 1


def test_opcode_family_and_sources_share_word_zero() -> None:
    words = [0] * isa.INSTR_WORDS
    isa.OPCODE.set(words, isa.OP_COMPUTE)
    isa.FAMILY.set(words, 7)
    isa.GUARD_SOURCE.set(words, 0xEF)
    isa.DYN_SOURCE.set(words, 0xBE)
    assert words[isa.W_OPCODE] == isa.OP_COMPUTE | 7 << 8 | 0xBEEF << 16
    isa.FAMILY.set(words, 9)
    got = (isa.OPCODE.get(words), isa.FAMILY.get(words), isa.GUARD_SOURCE.get(words), isa.DYN_SOURCE.get(words))
    assert got == (isa.OP_COMPUTE, 9, 0xEF, 0xBE)
    ins = isa.Instruction.empty(isa.OP_COMPUTE)
    ins.set_family(9)
    assert (ins.opcode, ins.family) == (isa.OP_COMPUTE, 9)


def test_values_that_do_not_fit_are_rejected() -> None:
    words = [0] * isa.INSTR_WORDS
    with pytest.raises(ValueError, match="does not fit the 8-bit field 'opcode'"):
        isa.OPCODE.set(words, 256)
    with pytest.raises(ValueError, match="64-bit field 'wait_mask'"):
        isa.WAIT_MASK.set(words, 2**64)
    with pytest.raises(ValueError, match="'rows'"):
        isa.ROWS.set(words, -1)
    records = np.zeros((2, isa.INSTR_WORDS), dtype=np.uint32)
    with pytest.raises(ValueError, match="'family'"):
        isa.FAMILY.set_column(records, [1, 300])


@pytest.mark.parametrize("field", ALL_FIELDS, ids=lambda f: f.name)
def test_the_vectorised_path_agrees_with_the_scalar_one(field: isa.Field) -> None:
    rng = np.random.default_rng(field.word + 100 * field.shift)
    records = rng.integers(0, 2**32, (64, isa.INSTR_WORDS), dtype=np.uint64).astype(np.uint32)
    assert field.column(records).tolist() == [field.get(r) for r in records]
    values = _random(field, rng, 64)
    before = records.copy()
    field.set_column(records, values)
    assert field.column(records).tolist() == values.tolist()
    for r, b, v in zip(records, before, values, strict=True):
        field.set(b, int(v))
        assert (r == b).all()


def test_byte_offsets_follow_the_words() -> None:
    for f in ALL_FIELDS:
        assert f.byte_offset == f.word * isa.WORD_BYTES
    assert isa.INSTR_BYTES == isa.INSTR_WORDS * isa.WORD_BYTES
    assert isa.QUEUE_COUNT.byte_offset == isa.WORD_BYTES


@pytest.mark.parametrize("layout", sorted(INSTRUCTION_LAYOUTS))
def test_each_instruction_layout_has_no_overlap_and_fits(layout: str) -> None:
    bits = np.zeros((isa.INSTR_WORDS, 32), dtype=int)
    for f in INSTRUCTION_LAYOUTS[layout]:
        for w in f.word_indices:
            width = 32 if f.nwords == 2 else f.bits
            bits[w, f.shift : f.shift + width] += 1
    assert bits.max() == 1


def test_the_layout_check_catches_an_overlap() -> None:
    clash = (isa.OPCODE, isa.Field("bad", 0, shift=4, bits=8))
    with pytest.raises(AssertionError, match="'opcode' and 'bad' overlap"):
        isa._check_layout(clash, isa.INSTR_WORDS)
    with pytest.raises(AssertionError, match="runs past"):
        isa._check_layout((isa.Field("tail", isa.INSTR_WORDS - 1, 2),), isa.INSTR_WORDS)


def test_malformed_fields_are_rejected() -> None:
    with pytest.raises(ValueError, match="one or two words"):
        isa.Field("x", 0, nwords=3)
    with pytest.raises(ValueError, match="cannot be packed"):
        isa.Field("x", 0, nwords=2, bits=16)
    with pytest.raises(ValueError, match="exceed a word"):
        isa.Field("x", 0, shift=24, bits=16)


def test_the_compute_slots_end_where_the_input_count_starts() -> None:
    assert len(isa.IN_SMEM) == isa.MAX_INPUTS
    assert [f.word for f in isa.IN_SMEM] == list(range(isa.W_IN_SMEM, isa.W_IN_SMEM + isa.MAX_INPUTS))
    assert isa.W_NUM_INPUTS == isa.W_IN_SMEM + isa.MAX_INPUTS


def test_the_assembler_rejects_more_inputs_than_an_instruction_holds() -> None:
    asm = ProgramAssembler(1, [], smem_bytes=1024)
    with pytest.raises(ValueError, match="at most 4 input tiles, not 5"):
        asm.compute(0, 1, 0, [0] * (isa.MAX_INPUTS + 1))


def _program(num_sms: int = 2) -> isa.EncodedProgram:
    buffers = [isa.BufferInfo("x", (1, 64), "bf16", False), isa.BufferInfo("y", (1, 64), "bf16", True)]
    asm = ProgramAssembler(num_sms, buffers, smem_bytes=1024)
    for sm in range(num_sms):
        asm.load(sm, 0, 0, 1, 128, 128, 0, signal=1)
        asm.store(sm, 1, 0, 1, 128, 128, 0, wait=1, parity=1)
    return asm.finish()


def test_header_and_queue_table_round_trip() -> None:
    program = _program()
    data = program.to_bytes()
    h = isa.EncodedProgram.parse_header(data)
    assert h["magic"] == isa.MAGIC and h["version"] == isa.VERSION
    assert h["num_engines"] == get_target(program.target).num_engines
    assert (h["num_sms"], h["num_instrs"], h["num_buffers"]) == (2, 4, 2)
    back = isa.EncodedProgram.from_bytes(data, program.buffers, target=program.target)
    assert back.queues == program.queues
    assert (back.instrs == program.instrs).all()
    table = program.queue_table()
    assert isa.QUEUE_START.column(table).tolist() == [q[0] for qs in program.queues for q in qs]
    assert isa.QUEUE_COUNT.column(table).tolist() == [q[1] for qs in program.queues for q in qs]


def test_a_header_with_another_engine_count_is_rejected() -> None:
    empty = isa.EncodedProgram(1, 0, 0, 64, [], np.zeros((0, isa.INSTR_WORDS), np.uint32), [[(0, 0)] * 3])
    header = empty.header()
    isa.HDR_NUM_ENGINES.set(header, 2)
    data = header.tobytes() + np.zeros((2, isa.QUEUE_ENTRY_WORDS), np.uint32).tobytes()
    with pytest.raises(ValueError, match="has 2 engines per SM, target 'h200' has 4"):
        isa.EncodedProgram.from_bytes(data, [], target="h200")


def test_signed_fields_round_trip_negative_values() -> None:
    words = np.zeros((2, isa.INSTR_WORDS), dtype=np.uint32)
    isa.GUARD_CONST.set(words[0], -5)
    isa.DYN_SCALE.set(words[0], -(2**31))
    assert words[0][isa.GUARD_CONST.word] == 2**32 - 5
    assert (isa.GUARD_CONST.get(words[0]), isa.DYN_SCALE.get(words[0])) == (-5, -(2**31))
    assert isa.GUARD_CONST.column(words).tolist() == [-5, 0]
    with pytest.raises(ValueError, match="does not fit the signed 32-bit field 'guard_const'"):
        isa.GUARD_CONST.set(words[1], 2**31)
