"""The micro-op ISA: the binary per-engine instruction streams.

``vdir-encode`` writes this format; the CPU simulator and the GPU kernel both
execute exactly it. ``docs/isa.md`` documents every field; this module is the
single definition of the layout: the :class:`Field` table (each field's word,
width and bit position, and so its byte offset), the opcodes and flags. The
encoder, the simulator, the PTX kernel, the runtimes and the disassembler read
and write instructions and the header only through these fields.

An instruction is :data:`INSTR_WORDS` little-endian u32 words (128 bytes, so a
warp fetches one with a single coalesced load). Queues are contiguous runs of
instructions, one queue per (SM, engine).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import math
import re
import sys
import zlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import overload

import numpy as np

from vdir.diagnostics import VdirError
from vdir.target import EngineKind, EngineSpec, get_target

MAGIC = 0x52494456  # "VDIR" little-endian
VERSION = 3
#: bytes per word: every field is one or two little-endian u32 words
WORD_BYTES = 4
INSTR_WORDS = 32
INSTR_BYTES = INSTR_WORDS * WORD_BYTES

# ---- opcodes (the OPCODE field) -------------------------------------------
OP_NOP = 0  # waits/signals only (used when an op needs a second counter wait)
OP_LOAD = 1
OP_COMPUTE = 2
OP_STORE = 3
OP_LOOP = 4  # the next ``loop_body`` instructions run ``loop_trips`` times (see LOOP_FIELDS)
#: a hint on the load engine: start bringing a later load's region into L2 (no
#: shared memory, no wait, no signal; the region fields of a load, compile-time offset)
OP_PREFETCH = 5
OPCODE_NAMES = {OP_NOP: "nop", OP_LOAD: "load", OP_COMPUTE: "compute", OP_STORE: "store", OP_LOOP: "loop",
                OP_PREFETCH: "prefetch"}
#: the opcode of each micro-op class (the ``runs`` names of a target's engines)
OPCODE_OF_CLASS = {"load": OP_LOAD, "compute": OP_COMPUTE, "store": OP_STORE}


@functools.cache
def engine_opcodes(spec: EngineSpec) -> frozenset[int]:
    """The opcodes an engine of ``spec`` executes: nops, the micro-op classes it runs, prefetches if it loads.

    (Loop records are not executed: ``expand_queue`` unrolls them.)
    """
    prefetch = {OP_PREFETCH} if "load" in spec.runs else set()
    return frozenset({OP_NOP} | prefetch | {OPCODE_OF_CLASS[c] for c in spec.runs})


@dataclass(frozen=True)
class Field:
    """One named field of the binary format: where it lives and how wide it is.

    A field is ``bits`` bits at bit ``shift`` of word ``word`` (a packed field,
    such as the opcode, shares its word with others), or a whole u32 word, or
    with ``nwords`` 2 a u64 held low word first. Every encoder, decoder and the
    PTX kernel reach instruction and header words only through these objects,
    so the layout has this one definition. :meth:`get` / :meth:`set` work on
    one instruction (a list or array of words); :meth:`column` /
    :meth:`set_column` on an ``(N, words)`` array of them.
    """

    name: str
    word: int
    nwords: int = 1
    shift: int = 0
    bits: int = 32
    #: a two's-complement 32-bit value (``get`` returns it signed, ``set`` takes
    #: ``[-2**31, 2**31)``)
    signed: bool = False
    #: the field's bits in its word, unshifted (all ones for a word or u64);
    #: derived once here, since the encoder sets fields about a million
    #: times for a 16-layer program
    mask: int = field(init=False, repr=False, compare=False)
    #: True when the field shares its word with other fields
    packed: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.nwords not in (1, 2):
            raise ValueError(f"field '{self.name}': a field is one or two words, not {self.nwords}")
        if self.nwords == 2 and (self.shift, self.bits) != (0, 32):
            raise ValueError(f"field '{self.name}': a u64 field cannot be packed")
        if not (0 < self.bits and self.shift + self.bits <= 32):
            raise ValueError(f"field '{self.name}': bits {self.shift}..{self.shift + self.bits - 1} exceed a word")
        if self.signed and (self.nwords, self.bits) != (1, 32):
            raise ValueError(f"field '{self.name}': only a whole u32 word can be signed")
        object.__setattr__(self, "mask", (1 << (32 * self.nwords if self.nwords == 2 else self.bits)) - 1)
        object.__setattr__(self, "packed", self.bits < 32)

    @property
    def min_value(self) -> int:
        """The smallest value the field holds (negative for a signed field)."""
        return -(1 << 31) if self.signed else 0

    @property
    def max_value(self) -> int:
        """The largest value the field holds."""
        return (1 << 31) - 1 if self.signed else self.mask

    @property
    def byte_offset(self) -> int:
        """Byte offset of the field's (first) word from the start of its record."""
        return self.word * WORD_BYTES

    @property
    def end(self) -> int:
        """One past the field's last word."""
        return self.word + self.nwords

    @property
    def word_indices(self) -> range:
        """The words the field occupies (low word first)."""
        return range(self.word, self.end)

    def get(self, words) -> int:
        """The field's value in one instruction (or header) ``words``."""
        v = int(words[self.word])
        if self.nwords == 2:
            return v | int(words[self.word + 1]) << 32
        if self.signed:
            return v - (1 << 32) if v >= 1 << 31 else v
        return (v >> self.shift) & self.mask

    def set(self, words, value: int) -> None:
        """Store ``value`` in ``words``, leaving the other fields of a shared word alone.

        Raises ValueError for a value that does not fit the field.
        """
        value = int(value)
        if self.signed:
            if not -(1 << 31) <= value < 1 << 31:
                raise ValueError(f"{value} does not fit the signed 32-bit field '{self.name}'")
            value &= self.mask
        if not 0 <= value <= self.mask:
            raise ValueError(f"{value} does not fit the {self.bits * self.nwords}-bit field '{self.name}'")
        if self.nwords == 2:
            words[self.word], words[self.word + 1] = split_u64(value)
        elif self.packed:
            keep = int(words[self.word]) & ~(self.mask << self.shift) & 0xFFFFFFFF
            words[self.word] = keep | value << self.shift
        else:
            words[self.word] = value

    def column(self, records: np.ndarray) -> np.ndarray:
        """The field of every row of an ``(N, words)`` uint32 array (uint64 for a u64 field)."""
        if self.nwords == 2:
            return join_u64(records[:, self.word], records[:, self.word + 1])
        col = records[:, self.word]
        if self.signed:
            return col.view(np.int32).copy()
        return (col >> np.uint32(self.shift)) & np.uint32(self.mask) if self.packed else col.copy()

    def set_column(self, records: np.ndarray, values) -> None:
        """Store ``values`` (one per row, or one for all) in every row of ``records``."""
        if self.signed:
            signed = np.asarray(values, dtype=np.int64)
            if np.any((signed < self.min_value) | (signed > self.max_value)):
                raise ValueError(f"a value does not fit the signed 32-bit field '{self.name}'")
            records[:, self.word] = (signed & self.mask).astype(np.uint32)
            return
        v = np.asarray(values, dtype=np.uint64)
        if np.any(v > self.mask):
            raise ValueError(f"a value does not fit the {self.bits * self.nwords}-bit field '{self.name}'")
        if self.nwords == 2:
            records[:, self.word] = (v & 0xFFFFFFFF).astype(np.uint32)
            records[:, self.word + 1] = (v >> np.uint64(32)).astype(np.uint32)
        elif self.packed:
            keep = records[:, self.word] & np.uint32(~(self.mask << self.shift) & 0xFFFFFFFF)
            records[:, self.word] = keep | (v.astype(np.uint32) << np.uint32(self.shift))
        else:
            records[:, self.word] = v.astype(np.uint32)


def split_u64(value: int) -> tuple[int, int]:
    """(low word, high word) of a u64, the order the format stores them in."""
    return value & 0xFFFFFFFF, (value >> 32) & 0xFFFFFFFF


@overload
def join_u64(lo: np.ndarray, hi: np.ndarray) -> np.ndarray: ...


@overload
def join_u64(lo: int | np.integer, hi: int | np.integer) -> int: ...


def join_u64(lo, hi):
    """The u64 of a (low word, high word) pair; elementwise (uint64) on arrays."""
    if isinstance(lo, np.ndarray):
        return lo.astype(np.uint64) | (np.asarray(hi).astype(np.uint64) << np.uint64(32))
    return int(lo) | int(hi) << 32


# ---- instruction fields ---------------------------------------------------
# common to every instruction
OPCODE = Field("opcode", 0, bits=8)  # see OP_*
FAMILY = Field("family", 0, shift=8, bits=8)  # family opcode of a compute
GUARD_SOURCE = Field("guard_source", 0, shift=16, bits=8)  # source of the condition's value (SOURCE_*)
DYN_SOURCE = Field("dyn_source", 0, shift=24, bits=8)  # source of a runtime offset (SOURCE_*; load/store)
WAIT_MASK = Field("wait_mask", 1, 2)  # dependency bits to wait on
WAIT_PARITY = Field("wait_parity", 3, 2)  # value those bits must hold
SIGNAL_MASK = Field("signal_mask", 5, 2)  # bits to toggle when the micro-op completes
WAIT_COUNTER = Field("wait_counter", 7)  # index + 1 of a global counter to wait on; 0 = none
WAIT_COUNT = Field("wait_count", 8)  # wait until counter >= epoch * this
RELEASE_COUNTER = Field("release_counter", 9)  # index + 1 of a global counter to add 1 to on completion
UOP_ID = Field("uop_id", 10)  # id of the micro-op in the scheduled program (diagnostics)
GUARD_INDEX = Field("guard_index", 11)  # scalar slot or element index of the condition's value
# runtime condition: the micro-op runs iff guard_coeff * v + guard_const >= 0
GUARD_COEFF = Field("guard_coeff", 25, signed=True)
GUARD_CONST = Field("guard_const", 26, signed=True)
COMMON_FIELDS = (OPCODE, GUARD_SOURCE, DYN_SOURCE, WAIT_MASK, WAIT_PARITY, SIGNAL_MASK, WAIT_COUNTER,
                 WAIT_COUNT, RELEASE_COUNTER, UOP_ID, GUARD_INDEX, GUARD_COEFF, GUARD_CONST)

# where a runtime value comes from (GUARD_SOURCE, DYN_SOURCE): nothing, the
# launch's scalar block (index: the scalar's slot), or buffer b as
# SOURCE_BUFFER0 + b (index: the i32 element's position in the buffer)
SOURCE_NONE = 0
SOURCE_SCALAR = 1
SOURCE_BUFFER0 = 2
#: the most buffers a runtime value can be read from (the 8-bit source fields)
MAX_SOURCE_BUFFERS = 256 - SOURCE_BUFFER0

# load / store: a region of rows of a buffer <-> a dense tile
#: a load's or store's flags (TRANSFER_*), in the byte a compute holds its family in
TRANSFER_FLAGS = Field("transfer_flags", 0, shift=8, bits=8)
#: a flag-word store or load (``vdir.analysis.flag_words``): its region lies in the sync block's flag
#: words (``GLOBAL_OFFSET`` bytes from the block's start, :func:`flag_words_start` on), where each
#: 8-byte word holds 4 bytes of the row and the epoch of the launch that wrote them: rows of
#: ``2 * ROW_BYTES`` bytes of words, ``2 * ROW_STRIDE`` apart, for a dense tile of ``ROW_BYTES``
#: bytes a row. The store writes the words with this launch's epoch; the load polls them until every
#: one holds it, then keeps their data. ``BUFFER`` names the buffer whose bytes they are.
TRANSFER_FLAG_WORDS = 1
#: a store that releases its counter before it toggles its signal bits (``vdir.analysis.stream_holds``:
#: a stream load on its SM waits for those bits, and would otherwise issue while the release's fence
#: waits for the SM's bulk copies in flight). A store of several counters marks its extra releases'
#: nops as well, the last of them holding its bits. Only a store, or a nop of the store engine,
#: carries it; either order is the same completion (both are releases of the same writes).
TRANSFER_RELEASE_FIRST = 2
#: every flag a load or store may carry (any other bit of TRANSFER_FLAGS is refused: check_transfer_flags)
TRANSFER_KNOWN_FLAGS = TRANSFER_FLAG_WORDS | TRANSFER_RELEASE_FIRST
#: bytes of a flag word: 4 bytes of a buffer, then the epoch of the launch that wrote them
FLAG_WORD_BYTES = 8
#: the bytes of a buffer one flag word holds
FLAG_WORD_DATA = 4
BUFFER = Field("buffer", 12)  # buffer (program argument) index
GLOBAL_OFFSET = Field("global_offset", 13, 2)  # byte offset of the region's first byte
ROWS = Field("rows", 15)  # rows in the region
ROW_BYTES = Field("row_bytes", 16)  # bytes per row (multiple of 16)
ROW_STRIDE = Field("row_stride", 17)  # bytes between rows in the buffer
SMEM = Field("smem", 18)  # shared-memory byte offset of the tile (dense rows)
REGION_FIELDS = (BUFFER, GLOBAL_OFFSET, ROWS, ROW_BYTES, ROW_STRIDE, SMEM)
# tensor-copy form of the same region (see assign_tensor_maps); TMAP 0: none
TMAP = Field("tmap", 19)  # index + 1 of the program's tensor map for this region's shape
TBOXES = Field("tboxes", 20)  # boxes per tile, stacked along rows (each TBOX_ROWS rows)
TBOX_ROWS = Field("tbox_rows", 21)  # rows per box
TCHUNK = Field("tchunk", 22)  # column coordinate of the region, in units of the map's segment width
TROW = Field("trow", 23)  # row coordinate of the region
TVIEW = Field("tview", 24)  # bytes of one element of the map's view of the buffer
TENSOR_FIELDS = (TMAP, TBOXES, TBOX_ROWS, TCHUNK, TROW, TVIEW)
# runtime offset of a load/store: global_offset + v * dyn_scale bytes, for
# dyn_min <= v <= dyn_max (else the engine reports ERR_BOUNDS and stops)
DYN_INDEX = Field("dyn_index", 27)  # scalar slot or element index of v
DYN_SCALE = Field("dyn_scale", 28, signed=True)  # bytes per unit of v
DYN_MIN = Field("dyn_min", 29, signed=True)
DYN_MAX = Field("dyn_max", 30, signed=True)
DYNAMIC_FIELDS = (DYN_INDEX, DYN_SCALE, DYN_MIN, DYN_MAX)
# a store's reduction: REDUCE_NONE overwrites the region, REDUCE_ADD adds the tile into it (f32 regions),
# REDUCE_ADD_I64 too (i64 regions). Word 31 is zero in every other instruction, and in every store without
# one, so programs encoded before it existed read as plain stores.
REDUCE = Field("reduce", 31)
TRANSFER_FIELDS = (TRANSFER_FLAGS,) + REGION_FIELDS + TENSOR_FIELDS + DYNAMIC_FIELDS + (REDUCE,)

# compute: tile offsets, then the family's parameters
MAX_INPUTS = 4  # input tiles one compute instruction can name
OUT_SMEM = Field("out_smem", 12)  # shared-memory offset of the result tile
IN_SMEM = tuple(Field(f"in_smem{i}", 13 + i) for i in range(MAX_INPUTS))  # offsets of the inputs
NUM_INPUTS = Field("num_inputs", IN_SMEM[-1].end)
P0 = Field("p0", 18)  # rows R of the (weight) tile, or rows of an elementwise tile
P1 = Field("p1", 19)  # columns K / N
P2 = Field("p2", 20)  # family flags (see GEMV_*, ADD_*, SUM_ROWS_*) or the silu_mul operand index
P3 = Field("p3", 21)
F0 = Field("f0", 22)  # f32 parameter (eps), as its bits
COMPUTE_FIELDS = (FAMILY, OUT_SMEM, *IN_SMEM, NUM_INPUTS, P0, P1, P2, P3, F0)

# loop record (opcode OP_LOOP): the ``body`` base instructions that follow it,
# then ``steps`` step records, stand for ``trips`` copies of the body; body
# instruction j steps by step record ``step_index[j]``. See Loop.expand; every
# other word of a loop record is zero.
LOOP_PAIRS = Field("loop_pairs", 1, 2)  # bits used in pairs (2k, 2k + 1) that swap on the odd trips
LOOP_FLIPS = Field("loop_flips", 3, 2)  # bits whose awaited parity flips (see Loop.expand)
LOOP_RING_BASE = Field("loop_ring_base", 5)  # first byte of the shared-memory ring the ring words step in
LOOP_RING_BYTES = Field("loop_ring_bytes", 6)  # its bytes (0: the loop has no ring words)
LOOP_BODY = Field("loop_body", 12)  # instructions in the body (1 to MAX_LOOP_BODY)
LOOP_TRIPS = Field("loop_trips", 13)  # times the body runs (>= 1)
LOOP_STEPS = Field("loop_steps", 14)  # step records after the body (1 to body)
LOOP_FIELDS = (LOOP_PAIRS, LOOP_FLIPS, LOOP_RING_BASE, LOOP_RING_BYTES, LOOP_BODY, LOOP_TRIPS, LOOP_STEPS)
#: the loop record's words 16..31 hold one byte per body instruction (little-endian): its step record
LOOP_STEP_INDEX_WORD = 16
#: the longest body a loop record can index
MAX_LOOP_BODY = (INSTR_WORDS - LOOP_STEP_INDEX_WORD) * WORD_BYTES
#: the largest ring a loop may step words in: a ring lies in shared memory, and the kernel works out
#: ``(base - ring_base + (t mod ring_bytes) * step)`` below ``ring_bytes^2``, exact in an f64 below 2^53
MAX_LOOP_RING_BYTES = 1 << 24
#: a step record's word 0 (an instruction's packed word, never stepped): bit w set makes word w step in
#: the loop's ring (``ring_base + (base - ring_base + t * step) mod ring_bytes``) instead of mod 2^32
STEP_RING_WORDS = Field("ring_words", 0)

# reductions of a store (the REDUCE field)
REDUCE_NONE = 0
REDUCE_ADD = 1  # f32 add, element by element, in the order the stores complete
REDUCE_ADD_I64 = 2  # 64-bit integer add, element by element, wrapping: exact, so any order gives the same bits
#: each reduction's name (``reduce add`` in the IR and the listing; the buffer's element type picks the code)
REDUCE_NAMES = {REDUCE_ADD: "add", REDUCE_ADD_I64: "add"}
#: the buffer element types each reduction combines
REDUCE_DTYPES = {REDUCE_ADD: ("f32",), REDUCE_ADD_I64: ("i64",)}
#: the reductions whose adds commute exactly: two of them into one region need no order between them
#: (the dependency analysis and the simulator's race check leave them unordered)
COMMUTING_REDUCTIONS = frozenset({REDUCE_ADD_I64})


def reduce_code(name: str, dtype: str) -> int | None:
    """The REDUCE code of reduction ``name`` (``add``) on a ``dtype`` region, None where none combines it."""
    return next((code for code, n in REDUCE_NAMES.items() if n == name and dtype in REDUCE_DTYPES[code]), None)

# gemv flags in P2
GEMV_HAS_ACC = 1
GEMV_OUT_F32 = 2

# add flags in P2 (0: bf16 operands and result)
ADD_IN_F32 = 1  # the operands are f32
ADD_OUT_F32 = 2  # the result is f32

# sum_rows flags in P2
SUM_ROWS_OUT_F32 = 2  # the result is f32 (else bf16)

# rope flags in P2
ROPE_TABLES_F32 = 1  # the cos / sin tiles are f32 (else bf16)

# argmax_partial flags in P2
ARGMAX_IN_F32 = 1  # the row x is f32 (else bf16)

# vecmat flags in P2
VECMAT_HAS_ACC = 1  # a third input, the f32 partial sums to add the products to (else they start at +0.0)
VECMAT_OUT_FIXED = 2  # the result is i64 fixed point (families.core.FIXED_POINT_BITS), not f32

# word indices of the fields, for code that addresses words directly
W_OPCODE = OPCODE.word
W_WAIT_MASK = WAIT_MASK.word
W_WAIT_PARITY = WAIT_PARITY.word
W_SIGNAL_MASK = SIGNAL_MASK.word
W_WAIT_COUNTER = WAIT_COUNTER.word
W_WAIT_COUNT = WAIT_COUNT.word
W_RELEASE_COUNTER = RELEASE_COUNTER.word
W_UOP_ID = UOP_ID.word
W_GUARD_INDEX = GUARD_INDEX.word
W_BUFFER = BUFFER.word
W_GLOBAL_OFFSET = GLOBAL_OFFSET.word
W_ROWS = ROWS.word
W_ROW_BYTES = ROW_BYTES.word
W_ROW_STRIDE = ROW_STRIDE.word
W_SMEM = SMEM.word
W_TMAP = TMAP.word
W_TBOXES = TBOXES.word
W_TBOX_ROWS = TBOX_ROWS.word
W_TCHUNK = TCHUNK.word
W_TROW = TROW.word
W_TVIEW = TVIEW.word
W_REDUCE = REDUCE.word
W_OUT_SMEM = OUT_SMEM.word
W_IN_SMEM = IN_SMEM[0].word
W_NUM_INPUTS = NUM_INPUTS.word
W_P0, W_P1, W_P2, W_P3, W_F0 = P0.word, P1.word, P2.word, P3.word, F0.word

# ---- header (HEADER_WORDS u32 words) ---------------------------------------
HEADER_WORDS = 16
HDR_MAGIC = Field("magic", 0)
HDR_VERSION = Field("version", 1)
HDR_NUM_SMS = Field("num_sms", 2)
HDR_NUM_ENGINES = Field("num_engines", 3)  # engines per SM (queues per SM)
HDR_NUM_INSTRS = Field("num_instrs", 4)
HDR_NUM_COUNTERS = Field("num_counters", 5)
HDR_SMEM_BYTES = Field("smem_bytes", 6)  # tile arena bytes per CTA
HDR_NUM_BUFFERS = Field("num_buffers", 7)
HDR_BITMAP_BITS = Field("bitmap_bits", 8)
HDR_NUM_SCALARS = Field("num_scalars", 9)  # launch-time scalars (the scalar block's i32 slots)
HDR_FLAG_WORD_BYTES = Field("flag_word_bytes", 10)  # the sync block's flag words (TRANSFER_FLAG_WORDS)
HEADER_FIELDS = (HDR_MAGIC, HDR_VERSION, HDR_NUM_SMS, HDR_NUM_ENGINES, HDR_NUM_INSTRS, HDR_NUM_COUNTERS,
                 HDR_SMEM_BYTES, HDR_NUM_BUFFERS, HDR_BITMAP_BITS, HDR_NUM_SCALARS, HDR_FLAG_WORD_BYTES)
H_MAGIC, H_VERSION, H_NUM_SMS, H_NUM_ENGINES = (f.word for f in HEADER_FIELDS[:4])
H_NUM_INSTRS, H_NUM_COUNTERS, H_SMEM_BYTES, H_NUM_BUFFERS = (f.word for f in HEADER_FIELDS[4:8])
H_BITMAP_BITS = HDR_BITMAP_BITS.word

# ---- sync block: the launch state, then the global counters (u32 words) ----
# One device block per executable holds what launches share: it is zeroed
# once, and every launch advances it on the device, so that a launch replayed
# from a captured CUDA graph sees a fresh epoch without a host write.
#: the most SMs a launch may have: the sync block opens with a finish count for each
SYNC_MAX_SMS = 256
#: u32 words of one CTA's finish count: a u64, low word first
SYNC_FINISH_WORDS = 2
#: the launches' finish counts, one u64 per CTA (CTA ``i`` at word ``SYNC_FINISH_WORDS * i``): the
#: launches that CTA has finished. A CTA reads its own in its prologue (a launch begins after the
#: one before it ended, so every CTA of a launch reads the same launches done) and writes it plus one
#: as it leaves: no CTA writes a word that another reads, so nothing is atomic and nothing contends
#: (``lowering/kernel/launch.py``)
SYNC_FINISH_COUNTS = 0
#: the words in front of the global counters
SYNC_HEADER_WORDS = SYNC_FINISH_WORDS * SYNC_MAX_SMS
#: counter values are compared modulo 2**32: a wait for ``wanted`` is met while
#: ``(value - wanted) mod 2**32`` reads as a non-negative s32, so epochs may wrap
COUNTER_MODULUS = 1 << 32


#: alignment of the sync block's flag words (and of each buffer's share of them)
FLAG_WORDS_ALIGN = 16


def flag_word_share(buffer_bytes: int) -> int:
    """Bytes of the sync block's flag words for a buffer of ``buffer_bytes``: two bytes of words per byte
    of the buffer (:data:`FLAG_WORD_BYTES` per :data:`FLAG_WORD_DATA`), aligned to :data:`FLAG_WORDS_ALIGN`."""
    words = buffer_bytes * FLAG_WORD_BYTES // FLAG_WORD_DATA
    return -(-words // FLAG_WORDS_ALIGN) * FLAG_WORDS_ALIGN


def moves_flag_words(instrs: np.ndarray) -> np.ndarray:
    """Per record of ``instrs`` (rows of words): a load or store with :data:`TRANSFER_FLAG_WORDS` (a
    compute keeps its family in that byte; any other record ignores it)."""
    return (np.isin(OPCODE.column(instrs), (OP_LOAD, OP_STORE))
            & ((TRANSFER_FLAGS.column(instrs) & TRANSFER_FLAG_WORDS) != 0))


def flag_word_spans(row: np.ndarray) -> list[tuple[int, int]]:
    """(first byte, end) in the sync block of each row of flag-word record ``row``'s words
    (:data:`TRANSFER_FLAG_WORDS`)."""
    offset, rows = GLOBAL_OFFSET.get(row), ROWS.get(row)
    row_bytes, stride = ROW_BYTES.get(row), ROW_STRIDE.get(row)
    return [(offset + 2 * r * stride, offset + 2 * (r * stride + row_bytes)) for r in range(rows)]


def flag_words_start(num_counters: int) -> int:
    """The byte offset of the flag words in the sync block of a program of ``num_counters`` counters:
    after the counters, aligned to :data:`FLAG_WORDS_ALIGN`."""
    return -(-WORD_BYTES * sync_block_words(num_counters) // FLAG_WORDS_ALIGN) * FLAG_WORDS_ALIGN


def sync_block_words(num_counters: int) -> int:
    """u32 words of the sync block of a program with ``num_counters`` global counters."""
    return SYNC_HEADER_WORDS + num_counters


def _finish_words(num_sms: int) -> np.ndarray:
    """The first (low) word of each of CTAs ``0 .. num_sms - 1``'s finish counts."""
    return SYNC_FINISH_COUNTS + SYNC_FINISH_WORDS * np.arange(num_sms)


def finish_counts(sync: np.ndarray, num_sms: int) -> list[int]:
    """The finish counts of CTAs ``0 .. num_sms - 1``: the launches each has finished."""
    w = _finish_words(num_sms)
    return [int(lo) | int(hi) << 32 for lo, hi in zip(sync[w], sync[w + 1], strict=True)]


def _write_finish_counts(sync: np.ndarray, counts: list[int]) -> None:
    """Write ``counts`` (modulo 2**64) as the finish counts of CTAs ``0 .. len(counts) - 1``."""
    for w, count in zip(_finish_words(len(counts)), counts, strict=True):
        count %= 1 << 64
        sync[w], sync[w + 1] = count & 0xFFFFFFFF, count >> 32


def launches_done(sync: np.ndarray) -> int:
    """Launches completed since the sync block was zeroed (CTA 0's finish count: after a whole
    launch every CTA's is the same)."""
    return finish_counts(sync, 1)[0]


def set_launches_done(sync: np.ndarray, launches: int) -> None:
    """Write every CTA's finish count as ``launches`` completed launches leave it (modulo 2**64)."""
    _write_finish_counts(sync, [launches] * SYNC_MAX_SMS)


def finish_launch(sync: np.ndarray, num_sms: int) -> None:
    """What a launch on ``num_sms`` SMs leaves in the sync block: each of its CTAs' finish counts plus
    one, modulo 2**64 (the device's ``lowering/kernel/launch.py`` ``finish``; the simulator's end of
    a launch)."""
    _write_finish_counts(sync, [count + 1 for count in finish_counts(sync, num_sms)])


def launch_epoch(sync: np.ndarray) -> int:
    """The epoch of the next launch: launches done + 1, modulo :data:`COUNTER_MODULUS` (the counters'
    arithmetic)."""
    return (launches_done(sync) + 1) % COUNTER_MODULUS


def counter_reached(value: int, wanted: int) -> bool:
    """Whether counter ``value`` has reached ``wanted``, wrap-safe (:data:`COUNTER_MODULUS`)."""
    return (value - wanted) % COUNTER_MODULUS < COUNTER_MODULUS // 2


# ---- queue table: one entry per (SM, engine), row sm * engines + engine ----
QUEUE_START = Field("start", 0)  # first instruction of the queue
QUEUE_COUNT = Field("count", 1)  # instructions in the queue
QUEUE_ENTRY_WORDS = 2
QUEUE_ENTRY_BYTES = QUEUE_ENTRY_WORDS * WORD_BYTES


def _check_layout(fields: tuple[Field, ...], record_words: int) -> None:
    """Fail at import if two fields of one record share bits or one runs past it."""
    taken: dict[tuple[int, int], str] = {}
    for f in fields:
        if f.end > record_words:
            raise AssertionError(f"field '{f.name}' runs past the {record_words}-word record")
        for w in f.word_indices:
            for bit in range(f.shift, f.shift + (32 if f.nwords == 2 else f.bits)):
                if (w, bit) in taken:
                    raise AssertionError(f"fields '{taken[w, bit]}' and '{f.name}' overlap")
                taken[w, bit] = f.name


_check_layout(COMMON_FIELDS + TRANSFER_FIELDS, INSTR_WORDS)
_check_layout(COMMON_FIELDS + COMPUTE_FIELDS, INSTR_WORDS)
_check_layout((OPCODE, *LOOP_FIELDS), LOOP_STEP_INDEX_WORD)
_check_layout(HEADER_FIELDS, HEADER_WORDS)
_check_layout((QUEUE_START, QUEUE_COUNT), QUEUE_ENTRY_WORDS)


# ---- loops: the executed instruction stream of a queue ---------------------
#: every field of every instruction form (words are shared between forms)
INSTRUCTION_FIELDS = COMMON_FIELDS + TRANSFER_FIELDS + COMPUTE_FIELDS + LOOP_FIELDS
#: words that hold packed fields in some form: a loop never steps them (a word-wise step could carry
#: from one packed field into the next; a step record's word 0 is its ring mask, STEP_RING_WORDS)
PACKED_WORDS = tuple(sorted({f.word for f in INSTRUCTION_FIELDS if f.packed}))
#: words a loop record may set (all others are zero)
LOOP_RECORD_WORDS = frozenset([*(w for f in (OPCODE, *LOOP_FIELDS) for w in f.word_indices),
                               *range(LOOP_STEP_INDEX_WORD, INSTR_WORDS)])
#: the dependency-bit words: no step record moves them; the loop record's pairs and flips say how they
#: change from trip to trip (see :meth:`Loop.expand`)
DEPENDENCY_BIT_WORDS = (*WAIT_MASK.word_indices, *WAIT_PARITY.word_indices, *SIGNAL_MASK.word_indices)
#: the low bit of every pair (2k, 2k + 1) of a 64-bit mask, and the high one
_EVEN_BITS, _ODD_BITS = 0x5555_5555_5555_5555, 0xAAAA_AAAA_AAAA_AAAA


def swap_pairs(bits, pairs):
    """``bits`` with bit 2k and bit 2k + 1 exchanged wherever ``pairs`` holds them (ints or uint64 arrays)."""
    if isinstance(bits, np.ndarray):
        pairs, even, odd, one = np.uint64(pairs), np.uint64(_EVEN_BITS), np.uint64(_ODD_BITS), np.uint64(1)
    else:
        even, odd, one = _EVEN_BITS, _ODD_BITS, 1
    moving = bits & pairs
    return (bits & ~pairs) | ((moving & even) << one) | ((moving & odd) >> one)


class LoopFormError(VdirError, ValueError):
    """A malformed loop in a queue; ``record`` is the loop record's position in the queue.

    The message reads ``[queue, ]loop record N: reason``.
    """

    def __init__(self, record: int, reason: str, queue: str = ""):
        super().__init__(f"{queue + ', ' if queue else ''}loop record {record}: {reason}")
        self.record, self.reason = record, reason


@dataclass(frozen=True)
class Loop:
    """One loop of a queue: the loop record at ``record``, ``body`` bases, then ``step_count`` step records."""

    record: int
    body: int
    trips: int
    step_count: int

    @property
    def end(self) -> int:
        """One past the loop's last record (its last step record)."""
        return self.record + 1 + self.body + self.step_count

    def bases(self, records: np.ndarray) -> np.ndarray:
        """The body's base instructions (iteration 0)."""
        return records[self.record + 1 : self.record + 1 + self.body]

    def step_table(self, records: np.ndarray) -> np.ndarray:
        """The loop's step records."""
        return records[self.record + 1 + self.body : self.end]

    def step_indices(self, records: np.ndarray) -> np.ndarray:
        """Which step record each body instruction steps by."""
        return loop_step_indices(records[self.record])[: self.body]

    def steps(self, records: np.ndarray) -> np.ndarray:
        """Each body instruction's step record."""
        return self.step_table(records)[self.step_indices(records)]

    def expand(self, records: np.ndarray) -> np.ndarray:
        """The ``trips * body`` executed instructions of trips ``t = 0, 1, ...``, word by word.

        Word 0 (packed fields) is the base's. A word steps by addition,
        ``base + t * step`` mod 2^32, unless its step record's ring mask
        (word 0, :data:`STEP_RING_WORDS`) names it: then it steps in the
        loop's ring, ``ring_base + (base - ring_base + t * step) mod
        ring_bytes`` (a tile slot of a ring whose rotation does not come back
        every trip). The dependency-bit words follow the loop record's
        ``pairs`` and ``flips``:

        - on the odd trips the wait and signal masks swap each pair's two
          bits (a double buffer's bits, used in turn);
        - the wait parity flips in the ``flips`` bits outside the pairs on
          the odd trips (a bit toggled an odd number of times a trip) and in
          the pairs' ``flips`` bits on trips 2 and 3 mod 4 (toggled an odd
          number of times in two trips); on the odd trips its pairs' bits
          then swap too, and it is ``&`` the trip's wait mask.
        """
        rec = records[self.record]
        bases, steps = self.bases(records), self.steps(records)
        t = np.arange(self.trips, dtype=np.uint32)[:, None, None]
        out = bases[None] + t * steps[None]
        out[:, :, 0] = bases[None, :, 0]
        ring_bytes = LOOP_RING_BYTES.get(rec)
        if ring_bytes:
            _step_in_ring(out, bases, steps, LOOP_RING_BASE.get(rec), ring_bytes)
        _step_bits(out, bases, LOOP_PAIRS.get(rec), LOOP_FLIPS.get(rec))
        return out.reshape(-1, INSTR_WORDS)


def _step_in_ring(out: np.ndarray, bases: np.ndarray, steps: np.ndarray, ring_base: int, ring_bytes: int) -> None:
    """Overwrite the ring words of ``out`` (trips x body x words) as :meth:`Loop.expand` says."""
    t = np.arange(out.shape[0], dtype=np.uint64)
    for j, w in zip(*np.nonzero((steps[:, 0:1] >> np.arange(INSTR_WORDS, dtype=np.uint32)) & 1), strict=True):
        offset = (int(bases[j, w]) - ring_base) % (1 << 32)
        out[:, j, w] = (ring_base + (offset + t * np.uint64(steps[j, w])) % np.uint64(ring_bytes)).astype(np.uint32)


def _step_bits(out: np.ndarray, bases: np.ndarray, pairs: int, flips: int) -> None:
    """Overwrite the dependency-bit words of ``out`` (trips x body x words) as :meth:`Loop.expand` says
    (:func:`trip_bit_words`, whose words repeat every four trips)."""
    mask0, signal0, parity0 = (join_u64(bases[:, f.word], bases[:, f.word + 1])
                               for f in (WAIT_MASK, SIGNAL_MASK, WAIT_PARITY))
    trips = out.shape[0]
    if not trips:
        return
    phases = [trip_bit_words(mask0, signal0, parity0, t, pairs, flips) for t in range(min(trips, 4))]
    phase_of_trip = np.arange(trips) % 4
    for k, f in enumerate((WAIT_MASK, SIGNAL_MASK, WAIT_PARITY)):
        v = np.stack([phase[k] for phase in phases])[phase_of_trip]
        out[:, :, f.word] = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        out[:, :, f.word + 1] = (v >> np.uint64(32)).astype(np.uint32)


def trip_bit_words(mask0: np.ndarray, signal0: np.ndarray, parity0: np.ndarray, trip: int, pairs: int,
                   flips: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(wait mask, signal mask, wait parity) on trip ``trip`` of loop instructions whose bases hold
    ``mask0``, ``signal0`` and ``parity0`` (uint64 arrays, elementwise), as :meth:`Loop.expand` says;
    the one owner of that rule (the encoder's reroll checks candidate loops with it).

    On the odd trips each pair's two bits swap in the masks; the parity flips in the ``flips`` bits
    outside the pairs on the odd trips and in the pairs' ``flips`` bits on trips 2 and 3 mod 4, then
    swaps like the masks on the odd trips, and keeps only the trip's wait-mask bits.
    """
    odd, second = trip & 1, trip & 2
    steady, paired = flips & ~pairs & WAIT_MASK.max_value, flips & pairs
    parity = parity0 ^ np.uint64(steady if odd else 0) ^ np.uint64(paired if second else 0)
    if not odd:
        return mask0, signal0, parity & mask0
    mask = swap_pairs(mask0, pairs)
    return mask, swap_pairs(signal0, pairs), swap_pairs(parity, pairs) & mask


def loop_step_indices(rec: np.ndarray) -> np.ndarray:
    """The step-index bytes of a loop record (:data:`LOOP_STEP_INDEX_WORD` on), one per possible body instruction."""
    return np.ascontiguousarray(rec[LOOP_STEP_INDEX_WORD:], dtype="<u4").view(np.uint8)


def _check_loop(records: np.ndarray, r: int) -> Loop:
    """The loop whose record is at position ``r``; LoopFormError says what is wrong with it."""
    rec = records[r]
    stray = [w for w in np.nonzero(rec)[0].tolist() if w not in LOOP_RECORD_WORDS]
    if stray:
        raise LoopFormError(r, f"word {stray[0]} is not zero (a loop record holds only its opcode, pairs, flips, "
                               "ring, body, trips, steps and step indices)")
    loop = Loop(r, LOOP_BODY.get(rec), LOOP_TRIPS.get(rec), LOOP_STEPS.get(rec))
    if not (1 <= loop.body <= MAX_LOOP_BODY and loop.trips >= 1):
        raise LoopFormError(r, f"a loop runs a body of 1 to {MAX_LOOP_BODY} instructions at least once "
                               f"(body {loop.body}, trips {loop.trips})")
    if not 1 <= loop.step_count <= loop.body:
        raise LoopFormError(r, f"a body of {loop.body} instructions has 1 to {loop.body} step records, "
                               f"not {loop.step_count}")
    if loop.end > len(records):
        raise LoopFormError(r, f"its body of {loop.body} instructions and {loop.step_count} step "
                               f"record{'s' if loop.step_count != 1 else ''} run past the queue's {len(records)} records")
    indices = loop_step_indices(rec)
    bad = np.nonzero(indices[: loop.body] >= loop.step_count)[0]
    if bad.size:
        raise LoopFormError(r, f"body instruction {int(bad[0])} steps by step record {int(indices[bad[0]])} of "
                               f"{loop.step_count}")
    if indices[loop.body :].any():
        raise LoopFormError(r, f"a step index is set past the body's {loop.body} instructions")
    pairs = LOOP_PAIRS.get(rec)
    if swap_pairs(pairs, pairs) != pairs:
        raise LoopFormError(r, f"pairs {pairs:#x} hold a bit without its partner (pairs are bits 2k and 2k + 1)")
    nested = np.nonzero(OPCODE.column(loop.bases(records)) == OP_LOOP)[0]
    if nested.size:
        raise LoopFormError(r, f"body instruction {int(nested[0])} is itself a loop (loops do not nest)")
    _check_steps(loop, records, rec)
    return loop


def _check_steps(loop: Loop, records: np.ndarray, rec: np.ndarray) -> None:
    """The step records' words: the dependency-bit words and the packed words (but word 0, the ring
    mask) unmoved, ring words only where the loop has a ring, each in it."""
    table = loop.step_table(records)
    for w in (*DEPENDENCY_BIT_WORDS, *(w for w in PACKED_WORDS if w != STEP_RING_WORDS.word)):
        moving = np.nonzero(table[:, w])[0]
        if moving.size:
            raise LoopFormError(loop.record, f"step record {int(moving[0])} moves word {w}, which only the loop "
                                             f"record's pairs and flips change" if w in DEPENDENCY_BIT_WORDS else
                                             f"step record {int(moving[0])} moves word {w}, which holds packed fields")
    unmovable = (1 << max(DEPENDENCY_BIT_WORDS) + 1) - 1  # word 0 and the dependency-bit words
    wrong = np.nonzero(STEP_RING_WORDS.column(table) & np.uint32(unmovable))[0]
    if wrong.size:
        raise LoopFormError(loop.record, f"step record {int(wrong[0])} steps word 0 or a dependency-bit word in "
                                         "the ring")
    ring_base, ring_bytes = LOOP_RING_BASE.get(rec), LOOP_RING_BYTES.get(rec)
    if ring_bytes > MAX_LOOP_RING_BYTES:
        raise LoopFormError(loop.record, f"its ring of {ring_bytes} bytes is larger than the "
                                         f"{MAX_LOOP_RING_BYTES} a loop may step words in")
    for j, (base, step) in enumerate(zip(loop.bases(records), loop.steps(records), strict=True)):
        ring_words = int(STEP_RING_WORDS.get(step))
        if not ring_words:
            continue
        if not ring_bytes:
            raise LoopFormError(loop.record, f"body instruction {j} steps words in a ring, but the loop has none")
        for w in range(INSTR_WORDS):
            if ring_words >> w & 1 and not ((int(base[w]) - ring_base) % (1 << 32) < ring_bytes
                                           and int(step[w]) < ring_bytes):
                raise LoopFormError(loop.record, f"body instruction {j}'s word {w} ({int(base[w])}, step "
                                                 f"{int(step[w])}) is not in the ring of {ring_bytes} bytes at "
                                                 f"{ring_base}")


def queue_loops(records: np.ndarray) -> list[Loop]:
    """The loops of a queue's records, in order, each checked (LoopFormError if malformed)."""
    loops: list[Loop] = []
    end = 0
    for r in np.nonzero(OPCODE.column(records) == OP_LOOP)[0].tolist():
        if r >= end:  # not a base or step of the previous loop (those are checked by _check_loop)
            loops.append(_check_loop(records, r))
            end = loops[-1].end
    return loops


def executed_length(records: int, loops: list[Loop]) -> int:
    """How many instructions a queue of ``records`` records whose loops are ``loops`` executes."""
    return records + sum(loop.body * loop.trips - (loop.end - loop.record) for loop in loops)


def expand_queue(records: np.ndarray) -> np.ndarray:
    """The ``(N, 32)`` instruction stream a queue of records executes, loops unrolled.

    A queue without loop records is its own stream (returned as it is);
    LoopFormError names a malformed loop record.
    """
    loops = queue_loops(records)
    if not loops:
        return records
    parts, pos = [], 0
    for loop in loops:
        parts += [records[pos : loop.record], loop.expand(records)]
        pos = loop.end
    parts.append(records[pos:])
    return np.concatenate(parts)


def make_loop_record(body: int, trips: int, step_indices=None, *, pairs: int = 0, flips: int = 0,
                     ring_base: int = 0, ring_bytes: int = 0) -> np.ndarray:
    """The words of a loop record for ``trips`` runs of a ``body``-instruction body whose instruction j
    steps by step record ``step_indices[j]`` (default: its own, ``body`` step records)."""
    if body > MAX_LOOP_BODY:
        raise ValueError(f"a loop body holds at most {MAX_LOOP_BODY} instructions, not {body}")
    indices = np.arange(body) if step_indices is None else np.asarray(step_indices)
    rec = np.zeros(INSTR_WORDS, dtype=np.uint32)
    OPCODE.set(rec, OP_LOOP)
    for f, v in ((LOOP_PAIRS, pairs), (LOOP_FLIPS, flips), (LOOP_RING_BASE, ring_base),
                 (LOOP_RING_BYTES, ring_bytes), (LOOP_BODY, body), (LOOP_TRIPS, trips),
                 (LOOP_STEPS, int(indices.max(initial=-1)) + 1)):
        f.set(rec, v)
    index_bytes = np.zeros(MAX_LOOP_BODY, dtype=np.uint8)
    index_bytes[:body] = indices
    rec[LOOP_STEP_INDEX_WORD:] = index_bytes.view("<u4")
    return rec


#: bytes at the start of a CTA's dynamic shared memory kept for the kernel's
#: own state (dependency bitmap, mbarriers, reduction scratch, an instruction
#: window of 1 KiB per engine; ``vdir.lowering.layout``). Tile offsets in
#: instructions are relative to the tile arena that follows; a launch needs
#: ``KERNEL_RESERVED_SMEM + smem_bytes`` bytes of dynamic shared memory.
KERNEL_RESERVED_SMEM = 5120


def tile_arena_bytes(smem_per_block: int) -> int:
    """The shared memory a program's tiles may use on an SM that gives a block ``smem_per_block`` bytes."""
    return smem_per_block - KERNEL_RESERVED_SMEM

@dataclass
class Instruction:
    """One instruction: a view over its 32 words, read and written by field."""

    words: np.ndarray  # shape (32,), uint32

    @classmethod
    def empty(cls, opcode: int) -> "Instruction":
        """A zeroed instruction with ``opcode``."""
        ins = cls(np.zeros(INSTR_WORDS, dtype=np.uint32))
        OPCODE.set(ins.words, opcode)
        return ins

    def get(self, f: Field) -> int:
        """The value of field ``f``."""
        return f.get(self.words)

    def set(self, f: Field, value: int) -> None:
        """Store ``value`` in field ``f``."""
        f.set(self.words, value)

    opcode = property(lambda s: OPCODE.get(s.words))
    family = property(lambda s: FAMILY.get(s.words))
    wait_mask = property(lambda s: WAIT_MASK.get(s.words), lambda s, v: WAIT_MASK.set(s.words, v))
    wait_parity = property(lambda s: WAIT_PARITY.get(s.words), lambda s, v: WAIT_PARITY.set(s.words, v))
    signal_mask = property(lambda s: SIGNAL_MASK.get(s.words), lambda s, v: SIGNAL_MASK.set(s.words, v))
    global_offset = property(lambda s: GLOBAL_OFFSET.get(s.words), lambda s, v: GLOBAL_OFFSET.set(s.words, v))

    def set_family(self, opcode: int) -> None:
        """Set the family opcode (of a compute instruction)."""
        FAMILY.set(self.words, opcode)

    @property
    def wait_counter(self) -> int | None:
        """The global counter the instruction waits on, or None."""
        v = WAIT_COUNTER.get(self.words)
        return v - 1 if v else None

    @property
    def release_counter(self) -> int | None:
        """The global counter the instruction releases, or None."""
        v = RELEASE_COUNTER.get(self.words)
        return v - 1 if v else None

    @property
    def uop_id(self) -> int:
        """The micro-op id (diagnostics)."""
        return UOP_ID.get(self.words)

    @property
    def f0(self) -> float:
        """The f32 parameter word."""
        return float(np.array([F0.get(self.words)], dtype=np.uint32).view(np.float32)[0])


#: bytes per element of a buffer dtype
DTYPE_SIZES = {"bf16": 2, "f32": 4, "i32": 4, "i64": 8}

#: the most elements a tensor-copy box may span in one dimension
TMA_BOX_MAX = 256
#: a tensor map's largest dimension, and a tensor copy's largest coordinate (signed 32-bit)
TMA_MAX_DIM = 1 << 32
TMA_MAX_COORD = (1 << 31) - 1
#: the alignment of a tensor copy's shared-memory address (a box after the first must keep it)
TMA_SMEM_ALIGN = 128

#: element size of a tensor map's view of a buffer: a copy moves raw bytes, so
#: a bf16 buffer is seen as 8-byte elements where its rows allow (segments of
#: up to 2 KiB instead of 512 bytes)
TMA_VIEW_BYTES = 8


@dataclass(frozen=True)
class TensorMapSpec:
    """One tensor map of a program: a buffer viewed as a 3-D tensor.

    The buffer (``rows`` x ``cols`` elements of ``elem_bytes``, rows dense;
    the elements are the map's view, not necessarily the buffer's dtype) is
    seen as ``[rows][cols / width][width]`` so that one box of
    ``[box_rows][box_chunks][width]`` elements lands in shared memory as a
    dense row-major ``box_rows x (box_chunks * width)`` tile, the layout
    every vdir tile has. Box dimensions are at most :data:`TMA_BOX_MAX`.
    """

    buffer: int
    elem_bytes: int
    rows: int
    cols: int
    width: int
    box_chunks: int
    box_rows: int

    @property
    def global_dims(self) -> tuple[int, int, int]:
        """Innermost first, as the driver takes them."""
        return (self.width, self.cols // self.width, self.rows)

    @property
    def global_strides(self) -> tuple[int, int]:
        """Bytes between consecutive segments and rows."""
        return (self.width * self.elem_bytes, self.cols * self.elem_bytes)

    @property
    def box_dims(self) -> tuple[int, int, int]:
        return (self.width, self.box_chunks, self.box_rows)


def _tensor_form(words: np.ndarray, buffers: list["BufferInfo"], memo: dict, max_box_rows: int, view: int):
    """(spec, boxes, chunk, row) of a load/store region as tensor copies, or None."""
    b, rows, row_bytes, stride, off = (f.get(words) for f in (BUFFER, ROWS, ROW_BYTES, ROW_STRIDE, GLOBAL_OFFSET))
    key = (b, rows, row_bytes, stride, off % stride if stride else off, max_box_rows, view)
    if key not in memo:
        memo[key] = _region_form(buffers[b], b, *key[1:]) if b < len(buffers) else None
    form = memo[key]
    if form is None:
        return None
    spec, boxes, chunk = form
    row = off // stride
    if row + rows > TMA_MAX_COORD:  # beyond a tensor copy's signed 32-bit coordinates: plain copies
        return None
    return spec, boxes, chunk, row


def _region_form(buf: "BufferInfo", index: int, rows: int, row_bytes: int, stride: int, col_off: int,
                 max_box_rows: int, view: int):
    """(spec, boxes, chunk) for a region of ``rows`` x ``row_bytes`` at byte ``col_off`` of a row.

    The map views the buffer as ``view``-byte elements where every extent
    allows it, else as its own dtype.
    """
    e = DTYPE_SIZES.get(buf.dtype)
    if e is None or len(buf.shape) != 2:
        return None
    nrows, ncols = buf.shape
    if stride != ncols * e or stride % 16 or rows == 0 or nrows > TMA_MAX_DIM:
        return None
    v = view if stride % view == 0 and row_bytes % view == 0 and col_off % view == 0 else e
    if row_bytes % v or col_off % v:
        return None
    c0, cols = col_off // v, row_bytes // v
    width = math.gcd(cols, stride // v, c0, TMA_BOX_MAX)
    if (width * v) % 16 or cols // width > TMA_BOX_MAX:
        return None
    # box k lands k * box_rows * row_bytes into the tile: past the first, at an aligned address
    box_rows = next((d for d in range(min(rows, max_box_rows, TMA_BOX_MAX), 0, -1)
                     if rows % d == 0 and (d == rows or d * row_bytes % TMA_SMEM_ALIGN == 0)), None)
    if box_rows is None:
        return None
    spec = TensorMapSpec(index, v, nrows, stride // v, width, cols // width, box_rows)
    return spec, rows // box_rows, c0 // width


def _unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, axis=0, return_inverse=True)`` for a 2-D integer array, through one lexsort.

    The same sorted rows and inverse, several times faster than numpy's
    row-wise unique (which sorts the rows as structured records).
    """
    if len(keys) == 0:
        return keys[:0], np.zeros(0, dtype=np.intp)
    order = np.lexsort(keys.T[::-1])  # by the first column, then the next, ...
    ordered = keys[order]
    starts = np.ones(len(keys), dtype=bool)
    starts[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(len(keys), dtype=np.intp)
    inverse[order] = np.cumsum(starts) - 1
    return ordered[starts], inverse


def assign_tensor_maps(instrs: np.ndarray, buffers: list["BufferInfo"],
                       max_box_rows: int = TMA_BOX_MAX, view_bytes: int = TMA_VIEW_BYTES) -> list[TensorMapSpec]:
    """Fill the tensor-copy words of every load and store; return the map table.

    A region gets a map when its offset is a compile-time one, its buffer is
    a dense 2-D array whose rows are a multiple of 16 bytes and the region
    fits whole boxes (else ``W_TMAP``
    stays 0 and the kernel copies it with plain bulk copies). Regions of the
    same buffer and box shape share a map; maps are numbered in instruction
    order, so the table can be rebuilt from the words alone
    (:func:`tensor_map_table`). A box spans at most ``max_box_rows`` rows (a
    tile of more rows is several boxes, which the load warp's lanes issue in
    parallel); the maps view buffers as ``view_bytes``-byte elements where the
    region allows.
    """
    ops = OPCODE.column(instrs)
    at = np.nonzero(((ops == OP_LOAD) | (ops == OP_STORE)) & ~moves_flag_words(instrs))[0]  # words: no maps
    if at.size == 0:
        return []
    words = instrs[at]
    stride = ROW_STRIDE.column(words).astype(np.uint64)
    offset = GLOBAL_OFFSET.column(words)
    col_off = np.where(stride > 0, offset % np.maximum(stride, np.uint64(1)), offset)
    # the regions that differ only in their row share one form: (buffer, rows, row bytes, stride, column offset)
    keys = np.stack([BUFFER.column(words).astype(np.uint64), ROWS.column(words).astype(np.uint64),
                     ROW_BYTES.column(words).astype(np.uint64), stride, col_off], axis=1)
    unique, inverse = _unique_rows(keys)
    forms = []
    for key in unique.tolist():
        b, rows, row_bytes, stride_b, col = key
        forms.append(_region_form(buffers[b], b, rows, row_bytes, stride_b, col, max_box_rows, view_bytes)
                     if b < len(buffers) else None)
    row = np.where(stride > 0, offset // np.maximum(stride, np.uint64(1)), np.uint64(0))
    # a tensor copy needs a compile-time offset (a runtime one only the engine knows) and a row
    # within its signed 32-bit coordinates; the others are plain copies
    # a reducing store is a plain bulk reduction (a map's element view may not be f32)
    eligible = ((DYN_SOURCE.column(words) == 0) & (row + ROWS.column(words) <= TMA_MAX_COORD)
                & (REDUCE.column(words) == REDUCE_NONE))
    # maps are numbered in instruction order: by the first eligible region that needs each
    rows_in_order = np.nonzero(eligible)[0]
    seen, first = np.unique(inverse[rows_in_order], return_index=True)
    table: dict[TensorMapSpec, int] = {}
    for u in seen[np.argsort(first, kind="stable")].tolist():
        if forms[u] is not None:
            table.setdefault(forms[u][0], len(table))
    per_form = np.zeros((len(forms), len(TENSOR_FIELDS)), dtype=np.uint64)
    for u, form in enumerate(forms):
        if form is not None:
            spec, boxes, chunk = form
            per_form[u] = (table.get(spec, -1) + 1, boxes, spec.box_rows, chunk, 0, spec.elem_bytes)
    values = per_form[inverse]
    values[:, TENSOR_FIELDS.index(TROW)] = row
    values[~eligible | (values[:, 0] == 0)] = 0
    for k, f in enumerate(TENSOR_FIELDS):
        f.set_column(words, values[:, k])
    instrs[at] = words
    return list(table)


def tensor_map_table(program: "EncodedProgram") -> list[TensorMapSpec]:
    """The tensor maps that ``program``'s instructions name (index i: ``W_TMAP`` i + 1).

    Rebuilt from the executed instructions (loops unrolled) and the buffer
    table; an inconsistent program (two shapes for one index) raises
    ValueError.
    """
    table: dict[int, TensorMapSpec] = {}
    memo: dict = {}
    instrs = program.executed_instrs()
    ops = OPCODE.column(instrs)
    for i in np.nonzero(((ops == OP_LOAD) | (ops == OP_STORE)) & (TMAP.column(instrs) > 0))[0]:
        w = instrs[i]
        box_rows, view, tmap = TBOX_ROWS.get(w), TVIEW.get(w), TMAP.get(w)
        form = _tensor_form(w, program.buffers, memo, box_rows, max(view, 1))
        if form is None or form[0].box_rows != box_rows or form[0].elem_bytes != view:
            raise ValueError(f"instruction names tensor map {tmap - 1}, but its region has no tensor form")
        idx = tmap - 1
        if table.setdefault(idx, form[0]) != form[0]:
            raise ValueError(f"tensor map {idx} is named by regions of different shapes")
    if sorted(table) != list(range(len(table))):
        raise ValueError("tensor map indices are not dense")
    return [table[i] for i in range(len(table))]


def index_ranges(program: "EncodedProgram") -> dict[tuple[int, int], tuple[int, int]]:
    """``(buffer, element) -> (lo, hi)`` (inclusive): the values of each ``i32`` element read as a
    runtime offset that every instruction reading it accepts (empty ranges left out).

    Tools use it to draw valid random token ids and positions.
    """
    instrs = program.executed_instrs()
    sources = DYN_SOURCE.column(instrs).astype(np.int64)
    ranges: dict[tuple[int, int], tuple[int, int]] = {}
    for i in np.nonzero(sources >= SOURCE_BUFFER0)[0]:
        w = instrs[i]
        key = (int(sources[i]) - SOURCE_BUFFER0, DYN_INDEX.get(w))
        lo, hi = ranges.get(key, (DYN_MIN.get(w), DYN_MAX.get(w)))
        ranges[key] = (max(lo, DYN_MIN.get(w)), min(hi, DYN_MAX.get(w)))
    return {k: r for k, r in ranges.items() if r[0] <= r[1]}


def fully_stored_buffers(program: "EncodedProgram") -> frozenset[int]:
    """The buffers whose every byte some store writes on every launch.

    Only stores without a condition and without a runtime offset count, so
    the answer holds for every value of the runtime values. The runtime skips
    zeroing such an ``out`` buffer before a launch: none of its initial bytes
    can be seen (an ``out`` buffer is never read before it is written).
    """
    instrs = program.executed_instrs()
    stores = ((OPCODE.column(instrs) == OP_STORE) & (GUARD_SOURCE.column(instrs) == SOURCE_NONE)
              & (DYN_SOURCE.column(instrs) == SOURCE_NONE) & ~moves_flag_words(instrs))  # words: the sync block
    rows_of = instrs[stores]
    buffers, rows = BUFFER.column(rows_of).astype(np.int64), ROWS.column(rows_of).astype(np.int64)
    offsets = GLOBAL_OFFSET.column(rows_of).astype(np.int64)
    row_bytes, strides = ROW_BYTES.column(rows_of).astype(np.int64), ROW_STRIDE.column(rows_of).astype(np.int64)
    covered = set()
    for b, info in enumerate(program.buffers):
        mine = buffers == b
        if not mine.any():
            continue
        n = rows[mine]
        first = np.repeat(np.cumsum(n) - n, n)  # the index of each store's first row
        starts = np.repeat(offsets[mine], n) + (np.arange(int(n.sum())) - first) * np.repeat(strides[mine], n)
        ends = starts + np.repeat(row_bytes[mine], n)
        order = np.argsort(starts, kind="stable")
        starts, reach = starts[order], np.maximum.accumulate(ends[order])
        nbytes = math.prod(info.shape) * DTYPE_SIZES[info.dtype]
        if starts[0] <= 0 and reach[-1] >= nbytes and bool(np.all(starts[1:] <= reach[:-1])):
            covered.add(b)
    return frozenset(covered)


#: each argument role's (is_input, is_output); :func:`buffer_role` is its inverse
ROLE_FLAGS = {"in": (True, False), "out": (False, True), "inout": (True, True), "scratch": (False, False)}


def buffer_role(is_input: bool, is_output: bool) -> str:
    """An argument's role: read before written (``in``), written (``out``),
    both (``inout``), or neither read from outside nor returned (``scratch``)."""
    if is_input:
        return "inout" if is_output else "in"
    return "out" if is_output else "scratch"


@dataclass
class BufferInfo:
    """A program argument as the runtime sees it."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # "bf16" | "f32" | "i32" | "i64"
    is_output: bool
    is_input: bool = True  # the program reads data it did not write itself

    @property
    def role(self) -> str:
        """``in``, ``out``, ``inout`` or ``scratch`` (see :func:`buffer_role`)."""
        return buffer_role(self.is_input, self.is_output)


def buffer_entry(info: BufferInfo) -> str:
    """The ``vdir.encoded_program`` buffer entry of ``info`` (:func:`parse_buffer_entry` reads it)."""
    return f"{info.name}:{info.shape[0]}x{info.shape[1]}:{info.dtype}:{info.role}"


def parse_buffer_entry(text: str) -> BufferInfo:
    """A ``vdir.encoded_program`` buffer entry ``name:RxC:dtype:role`` (:meth:`BufferInfo.role`); a
    ValueError saying what is wrong."""
    parts = text.split(":")
    if len(parts) != 4:
        raise ValueError(f"malformed buffer entry '{text}' (want name:RxC:dtype:in|out|inout|scratch)")
    name, shape, dtype, role = parts
    dims = shape.split("x")
    if len(dims) != 2 or not all(d.isdigit() and int(d) > 0 for d in dims):
        raise ValueError(f"buffer entry '{text}': the shape must be RxC with positive rows and columns")
    if dtype not in DTYPE_SIZES:
        raise ValueError(f"buffer entry '{text}': element type '{dtype}' is not one of {', '.join(DTYPE_SIZES)}")
    if role not in ROLE_FLAGS:
        raise ValueError(f"buffer entry '{text}': role '{role}' is not one of {', '.join(sorted(ROLE_FLAGS))}")
    is_input, is_output = ROLE_FLAGS[role]
    return BufferInfo(name, (int(dims[0]), int(dims[1])), dtype, is_output, is_input)


def check_stored_buffers(program: "EncodedProgram") -> None:
    """Every buffer a store writes has a role that says it is written (``out``, ``inout`` or
    ``scratch``): the runtime neither returns nor keeps what is stored into an ``in`` buffer.

    A program with malformed loop records is left to the readers that name the
    queue and the record (:meth:`EncodedProgram.check_loops`).
    """
    try:
        program.check_loops()
    except LoopFormError:
        return
    instrs = program.executed_instrs()
    stored = np.unique(BUFFER.column(instrs)[OPCODE.column(instrs) == OP_STORE])
    for b in stored.tolist():
        if b < len(program.buffers) and program.buffers[b].role == "in":
            raise ValueError(f"buffer '{program.buffers[b].name}' is stored to, but its role is 'in' "
                             "(a written buffer is out, inout or scratch)")


#: the opcodes whose instruction names a region of a buffer
REGION_OPCODES = (OP_LOAD, OP_STORE, OP_PREFETCH)


def check_regions(program: "EncodedProgram") -> None:
    """Every region a load, store or prefetch names is not empty and lies within its buffer, at both
    ends of a runtime offset's range (so at every value between); ValueError naming the micro-op otherwise.

    The kernel copies what the words say: a forged region would read or write
    another allocation, or fault and take the device context with it. The
    simulator checks the same per instruction as it decodes; this is the
    check for every backend, on whole queues at once. A program with
    malformed loop records is left to the readers that name the queue and
    the record (:meth:`EncodedProgram.check_loops`).
    """
    try:
        program.check_loops()
    except LoopFormError:
        return
    sizes = np.array([math.prod(b.shape) * DTYPE_SIZES[b.dtype] for b in program.buffers] or [0], dtype=np.int64)
    for sm in range(len(program.queues)):
        for engine in range(len(program.queues[sm])):
            words = program.executed_queue(sm, engine)
            plain = ~moves_flag_words(words)  # flag words: check_flag_words
            where = np.nonzero(np.isin(OPCODE.column(words), REGION_OPCODES) & plain)[0]
            if where.size:
                bad = _first_region_outside(words[where], sizes, [b.name for b in program.buffers])
                if bad is not None:
                    k, text = bad
                    raise ValueError(f"{program.describe(sm, engine, int(where[k]))}: {text}")


def check_flag_words(program: "EncodedProgram") -> None:
    """Every flag-word record (:data:`TRANSFER_FLAG_WORDS`) is a load or store of a buffer the program
    has, unconditional, at a static offset, no reduction, no tensor map, in whole words, whose words lie
    within the sync block's flag words; ValueError naming the micro-op otherwise (the kernel writes and polls
    the sync block where the words say)."""
    try:
        program.check_loops()
    except LoopFormError:
        return
    start, end = flag_words_start(program.num_counters), program.sync_bytes
    for sm in range(len(program.queues)):
        for engine in range(len(program.queues[sm])):
            words = program.executed_queue(sm, engine)
            for k in np.nonzero(moves_flag_words(words))[0]:
                why = flag_word_error(words[k], len(program.buffers), start, end)
                if why is not None:
                    raise ValueError(f"{program.describe(sm, engine, int(k))}: {why}")


def flag_word_error(row: np.ndarray, nbuffers: int, start: int, end: int) -> str | None:
    """Why flag-word load or store ``row`` is malformed (its words between bytes ``start`` and ``end`` of
    the sync block), or None."""
    if BUFFER.get(row) >= nbuffers:
        return f"buffer {BUFFER.get(row)} does not exist (the program has {nbuffers})"
    if DYN_SOURCE.get(row) != SOURCE_NONE or REDUCE.get(row) != REDUCE_NONE or TMAP.get(row):
        return "a flag-word load or store has a static offset, no reduction and no tensor map"
    if GUARD_SOURCE.get(row) != SOURCE_NONE:  # a load polls before its condition is read
        return "a flag-word load or store runs unconditionally"
    offset = GLOBAL_OFFSET.get(row)
    if offset % FLAG_WORD_BYTES or ROW_BYTES.get(row) % FLAG_WORD_DATA or ROW_STRIDE.get(row) % FLAG_WORD_DATA:
        return f"flag words lie in whole {FLAG_WORD_BYTES}-byte words"
    spans = flag_word_spans(row)
    reach = spans[-1][1] if spans else offset
    if offset < start or reach > end:
        return f"flag words [{offset}, {reach}) are outside the sync block's flag words [{start}, {end})"
    return None


def check_transfer_flags(program: "EncodedProgram") -> None:
    """Every executed load or store carries only known flags (TRANSFER_FLAGS:
    :data:`TRANSFER_KNOWN_FLAGS`), and :data:`TRANSFER_RELEASE_FIRST` is only on a store or a nop of
    the store engine; ValueError naming the micro-op otherwise (the kernel would ignore the rest, and a
    forged record should not pass for one it runs as written). A nop's other bits are read by no
    engine. A queue table that does not match the target's engines, or malformed loop records, are
    left to the readers that report them."""
    for engine, spec, sm, words in _checked_queues(program):
        opcodes, flags = OPCODE.column(words), TRANSFER_FLAGS.column(words)
        flagged = np.isin(opcodes, (OP_LOAD, OP_STORE, OP_NOP)) & (flags != 0)
        for k in np.nonzero(flagged)[0].tolist():
            why = transfer_flags_error(int(opcodes[k]), int(flags[k]), spec.kind == EngineKind.STORE)
            if why is not None:
                raise ValueError(f"{program.describe(sm, engine, k)}: {why}")


def _checked_queues(program: "EncodedProgram") -> Iterator[tuple[int, EngineSpec, int, np.ndarray]]:
    """(engine index, its spec, SM, executed records) of each queue, engine by engine, of a program
    whose queue table matches its target's engines and whose loop records are well formed; none
    otherwise (left to the readers that report those)."""
    target = get_target(program.target)
    if any(len(row) != target.num_engines for row in program.queues):
        return
    try:
        program.check_loops()
    except LoopFormError:
        return
    for engine, spec in enumerate(target.engines):
        for sm in range(len(program.queues)):
            yield engine, spec, sm, program.executed_queue(sm, engine)


def transfer_flags_error(opcode: int, flags: int, store_engine: bool) -> str | None:
    """Why the ``flags`` (TRANSFER_FLAGS) of a load, store or nop (of the store engine where
    ``store_engine``) are invalid, or None."""
    unknown = flags & ~TRANSFER_KNOWN_FLAGS
    if unknown and opcode != OP_NOP:
        return f"transfer flags {flags:#x} carry unknown bits {unknown:#x}"
    if flags & TRANSFER_RELEASE_FIRST and not (opcode == OP_STORE or (opcode == OP_NOP and store_engine)):
        return "only a store, or a nop of the store engine, releases before its bits (TRANSFER_RELEASE_FIRST)"
    return None


def check_argument_names(program: "EncodedProgram") -> None:
    """Each buffer and launch-time scalar has a name of its own (a launch binds both by name, in one
    namespace); ValueError naming the argument otherwise."""
    taken: dict[str, str] = {}
    for kind, args in (("buffer", program.buffers), ("scalar", program.scalars)):
        for i, arg in enumerate(args):
            if arg.name in taken:
                raise ValueError(f"{kind} #{i}: name '{arg.name}' is already taken by {taken[arg.name]}")
            taken[arg.name] = f"{kind} '{arg.name}'" if kind == "buffer" else f"scalar #{i}"


def check_queue_layout(program: "EncodedProgram") -> None:
    """The queues lie one after another in table order (SM by SM, engine by engine), from the first
    instruction to the last: every instruction is in exactly one queue. ValueError naming the queue
    otherwise.

    The encoder lays them out so, and the runtime relies on it: an instruction
    outside every queue never runs, yet a store in it would count as writing
    its buffer (:func:`fully_stored_buffers`), which is then not zeroed; two
    queues sharing instructions would run them twice.
    """
    expected = 0
    for sm, row in enumerate(program.queues):
        for engine, (start, count) in enumerate(row):
            if start != expected and count:
                raise ValueError(f"queue (SM {sm}, engine {engine}) starts at instruction {start}, not at {expected} "
                                 f"where the queue before it ends: the queues lie one after another in table order")
            expected += count
    if expected != len(program.instrs):
        raise ValueError(f"the queues hold {expected:,} instructions, the program {len(program.instrs):,}: "
                         f"every instruction is in exactly one queue")


def check_opcodes(program: "EncodedProgram") -> None:
    """Every executed instruction's opcode is one its engine runs (:func:`engine_opcodes`); ValueError
    naming the micro-op otherwise.

    The kernel's engines dispatch on the opcode and take anything else for a
    nop (a compute in a load queue would be skipped with its signals kept),
    and the simulator refuses it: this is the check for every backend. A
    queue table that does not match the target's engines, or malformed loop
    records, are left to the readers that report them.
    """
    for engine, spec, sm, words in _checked_queues(program):
        allowed = np.array(sorted(engine_opcodes(spec)), dtype=np.uint32)
        opcodes = OPCODE.column(words)
        bad = np.nonzero(~np.isin(opcodes, allowed))[0]
        if bad.size:
            pos = int(bad[0])
            name = OPCODE_NAMES.get(int(opcodes[pos]), f"opcode {int(opcodes[pos])}")
            raise ValueError(f"{program.describe(sm, engine, pos)}: a {name} instruction cannot run on the "
                             f"{spec.name} engine")


def check_reductions(program: "EncodedProgram") -> None:
    """Every executed instruction with a reduction (the REDUCE field) is a store of a known reduction
    whose buffer holds an element type it combines (``REDUCE_DTYPES``); ValueError naming the
    micro-op otherwise.

    The kernel adds f32 values where a store names ``REDUCE_ADD`` and 64-bit integers where it names
    ``REDUCE_ADD_I64``: a forged flag on another instruction, or on a region of another element type,
    would be read as plain data or add the wrong bits. A
    program with malformed loop records is left to the readers that name the queue and the record
    (:meth:`EncodedProgram.check_loops`).
    """
    try:
        program.check_loops()
    except LoopFormError:
        return
    for sm in range(len(program.queues)):
        for engine in range(len(program.queues[sm])):
            words = program.executed_queue(sm, engine)
            for pos in np.nonzero(REDUCE.column(words))[0].tolist():
                why = reduction_error(words[pos], program.buffers)
                if why is not None:
                    raise ValueError(f"{program.describe(sm, engine, pos)}: {why}")


def reduction_error(words, buffers: list["BufferInfo"]) -> str | None:
    """Why one instruction's reduction field is invalid (None when it is valid or 0)."""
    reduce = REDUCE.get(words)
    if reduce == REDUCE_NONE:
        return None
    opcode = OPCODE.get(words)
    if opcode != OP_STORE:
        name = OPCODE_NAMES.get(opcode, f"opcode {opcode}")
        return f"a {name} instruction has reduction {reduce}; only a store may reduce"
    if reduce not in REDUCE_NAMES:
        known = ", ".join(f"{k} {v} ({'/'.join(REDUCE_DTYPES[k])})" for k, v in REDUCE_NAMES.items())
        return f"unknown reduction {reduce} (known: {known})"
    b = BUFFER.get(words)
    if b < len(buffers) and buffers[b].dtype not in REDUCE_DTYPES[reduce]:
        dtype = buffers[b].dtype
        article = "an" if dtype[0] in "fi" else "a"  # an f32, an i64; a bf16
        return (f"'reduce {REDUCE_NAMES[reduce]}' store to '{buffers[b].name}', {article} {dtype} buffer "
                f"(it combines {' or '.join(REDUCE_DTYPES[reduce])} only)")
    return None


def _first_region_outside(regions: np.ndarray, sizes: np.ndarray, names: list[str]) -> tuple[int, str] | None:
    """(row, why) of the first of ``regions`` (instruction rows) empty or outside its buffer, or None."""
    nbuffers = len(names)
    buf = BUFFER.column(regions).astype(np.int64)
    if (buf >= nbuffers).any():
        k = int(np.argmax(buf >= nbuffers))
        return k, f"buffer {int(buf[k])} does not exist (the program has {nbuffers})"
    size = sizes[buf]
    offset = GLOBAL_OFFSET.column(regions)  # u64
    rows, row_bytes = ROWS.column(regions).astype(np.int64), ROW_BYTES.column(regions).astype(np.int64)
    empty = (rows == 0) | (row_bytes == 0)
    if empty.any():  # the copies would move nothing, and the tile they fill would have no elements
        k = int(np.argmax(empty))
        return k, f"region of {int(rows[k])} rows of {int(row_bytes[k])} bytes is empty"
    extent = (rows - 1) * ROW_STRIDE.column(regions).astype(np.int64)
    extent += row_bytes  # < 2^64: both terms are below 2^32 * 2^32
    outside = (offset >= np.uint64(1 << 63)) | (extent > size)
    start = np.where(outside, 0, offset.astype(np.int64))
    outside |= start > size - extent
    dynamic = DYN_SOURCE.column(regions) != SOURCE_NONE
    if dynamic.any():
        scale = DYN_SCALE.column(regions).astype(np.int64)
        for bound in (DYN_MIN, DYN_MAX):  # |v * scale| < 2^62: the sums stay within int64
            moved = start + bound.column(regions).astype(np.int64) * scale
            outside |= dynamic & ((moved < 0) | (moved > size - extent))
    if not outside.any():
        return None
    k = int(np.argmax(outside))
    lo = int(offset[k]) - (1 << 64) if int(offset[k]) >= 1 << 63 else int(offset[k])
    where = " for some value of its runtime offset" if dynamic[k] else ""
    return k, (f"region [{lo}, {lo + int(extent[k])}){where} is outside buffer '{names[int(buf[k])]}' "
               f"({int(size[k])} bytes)")


#: a scalar entry's text, ``name:lo:hi``
_SCALAR_ENTRY = re.compile(r"([^:]*):(-?[0-9]+):(-?[0-9]+)")


@dataclass(frozen=True)
class ScalarInfo:
    """A launch-time scalar as the runtime sees it: slot order, name, half-open range."""

    name: str
    lo: int
    hi: int

    def text(self) -> str:
        """``name:lo:hi``, the form ``vdir.encoded_program`` lists it in."""
        return f"{self.name}:{self.lo}:{self.hi}"

    @classmethod
    def parse(cls, text: str) -> "ScalarInfo":
        """Inverse of :meth:`text`; ValueError for a malformed entry, or a range beyond the
        32-bit runtime values (``[-2**31, 2**31)``)."""
        entry = _SCALAR_ENTRY.fullmatch(text)  # plain digits: no '_', spaces or other scripts' digits
        name, lo, hi = (entry[1], int(entry[2]), int(entry[3])) if entry else ("", 0, 0)
        if not name.isidentifier() or not -(1 << 31) <= lo < hi <= 1 << 31:
            raise ValueError(f"malformed scalar entry '{text}' (want name:lo:hi with lo < hi, "
                             "a half-open range of 32-bit integers)")
        return cls(name, lo, hi)


@dataclass
class EncodedProgram:
    """The whole encoded program: queues, counters and the argument table.

    ``instrs`` is an ``(N, 32)`` uint32 array; ``queues[sm][engine]`` is the
    (first instruction, count) pair of that queue. ``uop_names`` maps a
    micro-op id to a readable name (``"%w3 = load @wg"``) for diagnostics.
    """

    num_sms: int
    smem_bytes: int
    num_counters: int
    bitmap_bits: int
    buffers: list[BufferInfo]
    instrs: np.ndarray
    queues: list[list[tuple[int, int]]]
    uop_names: dict[int, str] = field(default_factory=dict)
    target: str = "h200"
    #: the launch-time scalars, in slot order (host metadata, counted in the header)
    scalars: list[ScalarInfo] = field(default_factory=list)
    #: bytes of flag words after the counters in the sync block (:data:`TRANSFER_FLAG_WORDS`)
    flag_word_bytes: int = 0

    def queue(self, sm: int, engine: int) -> np.ndarray:
        """The queue's records (loop records, bases and steps included)."""
        start, count = self.queues[sm][engine]
        return self.instrs[start : start + count]

    def executed_queue(self, sm: int, engine: int) -> np.ndarray:
        """The instructions the queue executes, in order (its loops unrolled, :func:`expand_queue`)."""
        return expand_queue(self.queue(sm, engine))

    @property
    def has_global_handoffs(self) -> bool:
        """True when the program hands rows from one engine to another through global memory (a
        counter a store releases, or flag words): mostly between SMs. Such a store's release waits for
        its SM's bulk copies in flight, which is why the stream engine keeps fewer of them on some GPUs
        (:meth:`vdir.target.TargetDescription.stream_ring_for`)."""
        return self.num_counters > 0 or self.flag_word_bytes > 0

    @property
    def has_loops(self) -> bool:
        """True when some queue holds a loop record."""
        return bool(np.any(OPCODE.column(self.instrs.reshape(-1, INSTR_WORDS)) == OP_LOOP))

    def executed_instrs(self) -> np.ndarray:
        """Every queue's executed instructions, queue after queue in table order.

        For a program without loops (whose queues lie in table order) that is
        ``instrs`` itself.
        """
        if not self.has_loops:
            return self.instrs
        rows = [self.executed_queue(sm, e) for sm in range(len(self.queues)) for e in range(len(self.queues[sm]))]
        return np.concatenate(rows) if rows else self.instrs[:0]

    @property
    def sync_bytes(self) -> int:
        """Bytes of the program's sync block: launch state and counters (:func:`sync_block_words`), then
        its flag words, if it has any (:func:`flag_words_start`)."""
        if self.flag_word_bytes:
            return flag_words_start(self.num_counters) + self.flag_word_bytes
        return WORD_BYTES * sync_block_words(self.num_counters)

    def without_loops(self, engines: Collection[str] | None = None) -> "EncodedProgram":
        """The same program with every loop record expanded: the executed stream, queue by queue
        (``engines``: only the queues of the engines so named, the others' records kept as they are).

        What the CUDA backend uploads by default (the kernel then walks plain
        queues); with the lowering option ``run_loops`` the engines run the
        loop records themselves (``bench/diag_loops.py`` expands one engine's
        queues to see what that engine's walk costs).
        """
        if not self.has_loops:
            return self
        parts, table, start = [], [], 0
        for sm in range(len(self.queues)):
            row = []
            for e in range(len(self.queues[sm])):
                expand = engines is None or self.engine_name(e) in engines
                records = self.executed_queue(sm, e) if expand else self.queue(sm, e)
                parts.append(records)
                row.append((start, len(records)))
                start += len(records)
            table.append(row)
        instrs = np.concatenate(parts) if parts else self.instrs[:0]
        return dataclasses.replace(self, instrs=instrs, queues=table)

    def check_loops(self) -> None:
        """Check every queue's loop records; LoopFormError names the queue (``SM 0 load queue``) and record."""
        for sm in range(len(self.queues)):
            for e in range(len(self.queues[sm])):
                try:
                    queue_loops(self.queue(sm, e))
                except LoopFormError as err:
                    raise LoopFormError(err.record, err.reason, f"SM {sm} {self.engine_name(e)} queue") from None

    def executed_count(self) -> int:
        """How many instructions the queues execute, their loops unrolled, counted without unrolling them
        (a queue whose loop records are malformed counts its records as they are: see :meth:`check_loops`)."""
        total = 0
        for sm in range(len(self.queues)):
            for e in range(len(self.queues[sm])):
                records = self.queue(sm, e)
                try:
                    loops = queue_loops(records)
                except LoopFormError:
                    loops = []
                total += executed_length(len(records), loops)
        return total

    def instruction(self, sm: int, engine: int, pos: int) -> Instruction:
        """The instruction the queue executes at position ``pos`` (counted in the executed stream)."""
        return Instruction(self.executed_queue(sm, engine)[pos])

    @property
    def num_engines(self) -> int:
        """Engines (queues) per SM: those of the program's target."""
        return get_target(self.target).num_engines

    def engine_name(self, engine: int) -> str:
        """The name of engine (queue index) ``engine`` on the program's target."""
        return get_target(self.target).engines[engine].name

    def check_counts(self) -> None:
        """The counts the runtime allocates by, checked against the instructions; ValueError otherwise.

        ``instrs`` is ``N x INSTR_WORDS`` words; there are at most twice as
        many global counters as executed instructions (every counter is named
        by one, and each names at most one to wait on and one to release; a
        loop's step records may move the counter each trip, so its trips are
        counted: :meth:`executed_count`) and a dependency bitmap of at most
        the bits of an instruction's masks; the flag words' bytes are whole
        :data:`FLAG_WORDS_ALIGN` blocks, at most every buffer's :func:`flag_word_share`. A forged
        header would otherwise have the runtime allocate its state for billions of counters.
        """
        shape = np.shape(self.instrs)
        if len(shape) != 2 or shape[1] != INSTR_WORDS:
            raise ValueError(f"the instructions are a {'x'.join(map(str, shape)) or 'scalar'} array, "
                             f"not N x {INSTR_WORDS} words")
        if self.num_counters < 0 or self.num_counters > 2 * shape[0] and self.num_counters > 2 * self.executed_count():
            raise ValueError(f"the header's {self.num_counters:,} global counters are more than its "
                             f"{self.executed_count():,} executed instructions can name")
        if not 0 <= self.bitmap_bits <= WAIT_MASK.max_value.bit_length():
            raise ValueError(f"the header's {self.bitmap_bits}-bit dependency bitmap is wider than an instruction's "
                             f"{WAIT_MASK.max_value.bit_length()}-bit masks")
        most = sum(flag_word_share(math.prod(b.shape) * DTYPE_SIZES.get(b.dtype, 0)) for b in self.buffers)
        if self.flag_word_bytes % FLAG_WORDS_ALIGN or not 0 <= self.flag_word_bytes <= most:
            raise ValueError(f"the header's {self.flag_word_bytes:,} bytes of flag words are not whole "
                             f"{FLAG_WORDS_ALIGN}-byte blocks within the {most:,} its buffers' words would take")

    # ---- binary form --------------------------------------------------
    def header(self) -> np.ndarray:
        """The header words (:data:`HEADER_FIELDS`)."""
        h = np.zeros(HEADER_WORDS, dtype=np.uint32)
        values = {
            HDR_MAGIC: MAGIC, HDR_VERSION: VERSION, HDR_NUM_SMS: self.num_sms,
            HDR_NUM_ENGINES: self.num_engines, HDR_NUM_INSTRS: len(self.instrs),
            HDR_NUM_COUNTERS: self.num_counters, HDR_SMEM_BYTES: self.smem_bytes,
            HDR_NUM_BUFFERS: len(self.buffers), HDR_BITMAP_BITS: self.bitmap_bits,
            HDR_NUM_SCALARS: len(self.scalars), HDR_FLAG_WORD_BYTES: self.flag_word_bytes,
        }
        for f, v in values.items():
            f.set(h, v)
        return h

    def queue_table(self) -> np.ndarray:
        """``(num_sms * engines, QUEUE_ENTRY_WORDS)`` uint32: start and count per (sm, engine), row sm*engines+engine."""
        t = np.zeros((self.num_sms * self.num_engines, QUEUE_ENTRY_WORDS), dtype=np.uint32)
        for sm, qs in enumerate(self.queues):
            for e, (start, count) in enumerate(qs):
                row = t[sm * self.num_engines + e]
                QUEUE_START.set(row, start)
                QUEUE_COUNT.set(row, count)
        return t

    def to_bytes(self) -> bytes:
        """Header, queue table, then the instructions (buffers are host metadata)."""
        return (
            self.header().tobytes()
            + self.queue_table().tobytes()
            + np.ascontiguousarray(self.instrs, dtype=np.uint32).tobytes()
        )

    @classmethod
    def from_bytes(cls, data: bytes, buffers: list[BufferInfo], uop_names: dict[int, str] | None = None,
                   target: str = "h200", scalars: list[ScalarInfo] | None = None) -> "EncodedProgram":
        """Inverse of :meth:`to_bytes` (buffers and names are host metadata)."""
        h = cls.parse_header(data)
        n_sms, n_eng = h["num_sms"], h["num_engines"]
        off = HEADER_WORDS * WORD_BYTES
        if len(data) < off + n_sms * n_eng * QUEUE_ENTRY_WORDS * WORD_BYTES:
            raise ValueError(f"the queue table of {n_sms} SMs x {n_eng} engines runs past the encoded program's "
                             f"{len(data)} bytes")
        table = np.frombuffer(data, dtype="<u4", count=n_sms * n_eng * QUEUE_ENTRY_WORDS, offset=off)
        off += table.nbytes
        expected = off + h["num_instrs"] * INSTR_BYTES
        if len(data) != expected:
            raise ValueError(f"encoded program is {len(data)} bytes, the header says {expected}")
        instrs = np.frombuffer(data, dtype="<u4", offset=off).reshape(-1, INSTR_WORDS).copy()
        table = table.reshape(n_sms, n_eng, QUEUE_ENTRY_WORDS)
        queues = [[(QUEUE_START.get(table[s, e]), QUEUE_COUNT.get(table[s, e])) for e in range(n_eng)]
                  for s in range(n_sms)]
        for s in range(n_sms):
            for e in range(n_eng):
                start, count = queues[s][e]
                if start + count > h["num_instrs"]:
                    raise ValueError(f"queue (SM {s}, engine {e}) runs past the instructions")
        scalars = list(scalars or [])
        if h["num_scalars"] != len(scalars):
            raise ValueError(f"encoded program has {h['num_scalars']} scalars, its scalar table {len(scalars)}")
        if h["num_buffers"] != len(buffers):
            raise ValueError(f"encoded program has {h['num_buffers']} buffers, its buffer table {len(buffers)}")
        program = cls(n_sms, h["smem_bytes"], h["num_counters"], h["bitmap_bits"], buffers, instrs,
                      queues, dict(uop_names or {}), target, scalars, h["flag_word_bytes"])
        check_untrusted(program)
        if n_eng != program.num_engines:
            raise ValueError(f"encoded program has {n_eng} engines per SM, target '{target}' has {program.num_engines}")
        return program

    @staticmethod
    def parse_header(data: bytes) -> dict:
        """The header's fields by name (:data:`HEADER_FIELDS`); ValueError for a bad magic or version."""
        if len(data) < HEADER_WORDS * WORD_BYTES:
            raise ValueError("encoded program is shorter than its header")
        words = np.frombuffer(data, dtype="<u4", count=HEADER_WORDS)
        h = {f.name: f.get(words) for f in HEADER_FIELDS}
        if h["magic"] != MAGIC:
            raise ValueError("not an encoded vdir program (bad magic)")
        if h["version"] != VERSION:
            raise ValueError(f"encoded program version {h['version']}, expected {VERSION}")
        return h

    def describe(self, sm: int, engine: int, pos: int) -> str:
        """A readable name for a queue position, for error messages."""
        ins = self.instruction(sm, engine, pos)
        name = self.uop_names.get(ins.uop_id, f"micro-op #{ins.uop_id}")
        eng = self.engine_name(engine)
        return f"{name} (SM {sm}, {eng} engine, queue position {pos})"


def check_unrolled_size(program: EncodedProgram, limit: int | None = None, raised_by: str = "") -> None:
    """A loop record is compression too: the code its loops unroll to is held to ``limit`` bytes (None:
    the ``max_code_bytes`` in effect; a forged trip count of 2^32 - 1 asked the verifier for 7 TiB).

    ``raised_by`` names what raises the limit where the command-line option is not the caller's way.
    """
    from vdir.limits import OPTIONS, current_limits

    limit = current_limits().max_code_bytes if limit is None else limit
    executed = program.executed_count()
    if executed * INSTR_BYTES > limit:
        raise ValueError(f"the program's code, its loops unrolled, is {executed * INSTR_BYTES:,} bytes, more than "
                         f"{limit:,} (the limit; {raised_by or OPTIONS['max_code_bytes']} raises it)")


def check_untrusted(program: EncodedProgram, code_limit: int | None = None, raised_by: str = "") -> None:
    """Everything a backend would trust blindly in a program that comes from outside the compiler (read
    back from text, or handed over as a Python object); ValueError naming what is wrong.

    In order: the code its loops unroll to (:func:`check_unrolled_size`, with ``code_limit`` and
    ``raised_by``; first, since the counters are bounded by the unrolled count), the counts the
    runtime allocates by (:meth:`EncodedProgram.check_counts`), the arguments' names
    (:func:`check_argument_names`), the queues' layout (:func:`check_queue_layout`), each instruction's opcode against its
    engine (:func:`check_opcodes`), each reduction against its instruction and buffer
    (:func:`check_reductions`), the regions against their buffers (:func:`check_regions`), the
    flag-word records (:func:`check_flag_words`) and each load's and store's flags
    (:func:`check_transfer_flags`).
    """
    check_unrolled_size(program, code_limit, raised_by)
    program.check_counts()
    check_argument_names(program)
    check_queue_layout(program)
    check_opcodes(program)
    check_reductions(program)
    check_regions(program)
    check_flag_words(program)
    check_transfer_flags(program)


def encode_code(program: EncodedProgram) -> str:
    """The program's binary form, zlib-compressed and base64-encoded (for IR text)."""
    return base64.b64encode(zlib.compress(program.to_bytes(), 1)).decode("ascii")


def _inflate(text: str, limit: int, what: str, option: str) -> bytes:
    """``text`` base64-decoded and decompressed, refused past ``limit`` bytes (a compression bomb);
    the error names the command-line ``option`` that raises the limit."""
    inflater = zlib.decompressobj()
    data = inflater.decompress(base64.b64decode(text.encode("ascii"), validate=True), min(limit, sys.maxsize))
    if inflater.unconsumed_tail or len(data) > limit:
        raise ValueError(f"the {what} decompressed to more than {limit:,} bytes (the limit; {option} raises it)")
    data += inflater.flush()
    if not inflater.eof:
        raise zlib.error("the compressed stream ends early")
    if inflater.unused_data:
        raise zlib.error(f"{len(inflater.unused_data):,} bytes follow the compressed stream")
    return data


def decode_code(text: str, limit: int | None = None) -> bytes:
    """Inverse of :func:`encode_code`; raises ValueError on damaged data or data past ``limit`` bytes
    (None: the ``max_code_bytes`` in effect, see :mod:`vdir.limits`)."""
    from vdir.limits import OPTIONS, current_limits  # vdir.limits reads this module's INSTR_BYTES

    try:
        limit = current_limits().max_code_bytes if limit is None else limit
        data = _inflate(text, limit, "program's code", OPTIONS["max_code_bytes"])
    except (binascii.Error, zlib.error, UnicodeEncodeError) as e:
        raise ValueError(f"cannot decode the program's code ({e})") from None
    EncodedProgram.parse_header(data)
    return data


def encode_text(lines: list[str]) -> str:
    """Newline-joined lines, compressed and base64-encoded (micro-op names)."""
    return base64.b64encode(zlib.compress("\n".join(lines).encode("utf-8"), 1)).decode("ascii")


def decode_text(text: str, limit: int | None = None, max_lines: int | None = None) -> list[str]:
    """Inverse of :func:`encode_text`; refused past ``limit`` bytes (None: the ``max_names_bytes``
    in effect, see :mod:`vdir.limits`) or past ``max_lines`` lines (None: any number), counted before
    they are split (a few bytes a line would otherwise cost a Python string each: gigabytes)."""
    from vdir.limits import OPTIONS, current_limits

    try:
        limit = current_limits().max_names_bytes if limit is None else limit
        data = _inflate(text, limit, "micro-op names", OPTIONS["max_names_bytes"])
        lines = data.count(b"\n") + 1
        if max_lines is not None and lines > max_lines:
            raise ValueError(f"the micro-op names are {lines:,} lines, more than the program's {max_lines:,} micro-ops")
        return data.decode("utf-8").split("\n")
    except (binascii.Error, zlib.error, UnicodeError) as e:
        raise ValueError(f"cannot decode the micro-op names ({e})") from None


def names_line_limit(program: "EncodedProgram") -> int:
    """The most names a program's micro-ops can have: one per micro-op id, up to the largest id an
    instruction carries or the instructions the queues execute (each micro-op executes at least one),
    and never more than the micro-op limit in effect (:mod:`vdir.limits`) allows ids for."""
    from vdir.limits import current_limits

    ids = int(UOP_ID.column(program.instrs).max()) + 1 if len(program.instrs) else 0
    return max(1, min(max(program.executed_count(), ids), current_limits().max_micro_ops))


def _bits(mask: int) -> list[int]:
    return [b for b in range(64) if mask >> b & 1]


def _sync_text(ins: Instruction) -> str:
    parts = []
    waits = _bits(ins.wait_mask)
    if waits:
        parity = ins.wait_parity
        parts.append("wait(" + ", ".join(f"b{b}={parity >> b & 1}" for b in waits) + ")")
    if ins.wait_counter is not None:
        parts.append(f"wait(c{ins.wait_counter}>={ins.get(WAIT_COUNT)}*epoch)")
    signals = _bits(ins.signal_mask)
    completion = []
    if signals:
        completion.append("signal(" + ", ".join(f"b{b}" for b in signals) + ")")
    if ins.release_counter is not None:
        completion.append(f"release(c{ins.release_counter})")
    if ins.opcode in (OP_STORE, OP_NOP) and ins.get(TRANSFER_FLAGS) & TRANSFER_RELEASE_FIRST:
        completion.reverse()  # in the order the store engine performs them
    return " ".join(parts + completion)


def source_text(program: EncodedProgram, source: int, index: int) -> str:
    """A runtime value's source as the listing and diagnostics write it: ``%pos``, ``@ids[3]``."""
    if source == SOURCE_SCALAR:
        return f"%{program.scalars[index].name}" if index < len(program.scalars) else f"%scalar{index}"
    b = source - SOURCE_BUFFER0
    buf = program.buffers[b].name if 0 <= b < len(program.buffers) else f"#{b}"
    return f"@{buf}[{index}]"


def _guard_text(ins: Instruction, program: EncodedProgram) -> str:
    """``when(%n * -1 + 3 >= 0)``, or nothing for an unconditional instruction."""
    source = ins.get(GUARD_SOURCE)
    if not source:
        return ""
    v = source_text(program, source, ins.get(GUARD_INDEX))
    return f"when({ins.get(GUARD_COEFF)} * {v} + {ins.get(GUARD_CONST)} >= 0)"


def _offset_text(ins: Instruction, program: EncodedProgram) -> str:
    """The region's byte offset: ``+256``, or ``+0 + %pos * 32 (%pos in 0..59)`` when it is a runtime one."""
    g = ins.get
    if not g(DYN_SOURCE):
        return f"+{ins.global_offset}"
    v = source_text(program, g(DYN_SOURCE), g(DYN_INDEX))
    base = ins.global_offset
    base_text = f"+{base}" if base < 2**63 else f"-{2**64 - base}"
    return f"{base_text} + {v} * {g(DYN_SCALE)} ({v} in {g(DYN_MIN)}..{g(DYN_MAX)})"


def _body_text(ins: Instruction, program: EncodedProgram) -> str:
    g = ins.get
    if ins.opcode in (OP_LOAD, OP_STORE):
        b = g(BUFFER)
        buf = program.buffers[b].name if b < len(program.buffers) else f"#{b}"
        region = f"@{buf}{_offset_text(ins, program)} [{g(ROWS)} x {g(ROW_BYTES)}B, stride {g(ROW_STRIDE)}]"
        if g(TRANSFER_FLAGS) & TRANSFER_FLAG_WORDS:  # in the sync block: its words' offset there
            region = f"words(@{buf}) sync+{ins.global_offset} [{g(ROWS)} x {g(ROW_BYTES)}B, stride {g(ROW_STRIDE)}]"
        smem = f"smem[{g(SMEM)}]"
        text = f"load  {region} -> {smem}" if ins.opcode == OP_LOAD else f"store {smem} -> {region}"
        if g(REDUCE):
            text += f" reduce {REDUCE_NAMES.get(g(REDUCE), g(REDUCE))}"
        if g(TMAP):
            boxes = f" x{g(TBOXES)}" if g(TBOXES) > 1 else ""
            text += f" tmap{g(TMAP) - 1}({g(TROW)}, {g(TCHUNK)}){boxes}"
        return text
    if ins.opcode == OP_PREFETCH:
        b = g(BUFFER)
        buf = program.buffers[b].name if b < len(program.buffers) else f"#{b}"
        return f"prefetch.L2 @{buf}+{ins.global_offset} [{g(ROWS)} x {g(ROW_BYTES)}B, stride {g(ROW_STRIDE)}]"
    if ins.opcode == OP_COMPUTE:
        from vdir.families import FAMILY_BY_OPCODE

        fam = FAMILY_BY_OPCODE.get(ins.family)
        name = fam.name if fam else f"family#{ins.family}"
        n = g(NUM_INPUTS)
        ins_text = ", ".join(f"smem[{g(f)}]" for f in IN_SMEM[:n])
        params = f" p=({g(P0)}, {g(P1)}, {g(P2)})"
        p3 = f" p3={g(P3)}" if g(P3) else ""
        eps = f" f0={ins.f0:g}" if ins.f0 else ""
        return f"{name}({ins_text}) -> smem[{g(OUT_SMEM)}]{params}{p3}{eps}"
    return "nop"


def disassemble(program: EncodedProgram, name: str = "program") -> str:
    """A readable listing of every queue (``vdir-opt -t isa``)."""
    lines = [
        f"// {name}: {program.num_sms} SMs, {program.smem_bytes} bytes of tiles per SM, "
        f"{program.num_counters} global counter(s), {program.bitmap_bits} dependency bits",
    ]
    if program.flag_word_bytes:
        lines.append(f"// flag words: {program.flag_word_bytes} bytes at sync+{flag_words_start(program.num_counters)}")
    for i, b in enumerate(program.buffers):
        lines.append(f"// buffer {i}: {b.name} {b.shape[0]}x{b.shape[1]} {b.dtype} ({b.role})")
    for i, sc in enumerate(program.scalars):
        lines.append(f"// scalar {i}: {sc.name} in {sc.lo} to {sc.hi}")
    try:
        maps = tensor_map_table(program)
    except ValueError as e:
        lines.append(f"// tensor maps: none usable ({e})")
        maps = []
    for i, m in enumerate(maps):
        dims = " x ".join(str(d) for d in reversed(m.global_dims))
        box = " x ".join(str(d) for d in reversed(m.box_dims))
        lines.append(f"// tensor map {i}: {program.buffers[m.buffer].name} as {dims} of {m.elem_bytes} B, box {box}")
    for sm in range(program.num_sms):
        for e, engine in enumerate(get_target(program.target).engine_names):
            if program.queues[sm][e][1]:
                lines.append(f"sm {sm} {engine}:")
                lines += _queue_listing(program, program.queue(sm, e))
    return "\n".join(lines) + "\n"


def _instruction_text(words: np.ndarray, program: EncodedProgram) -> str:
    """One instruction's listing text: body, sync, then the micro-op's name."""
    ins = Instruction(words)
    sync = " ".join(t for t in (_guard_text(ins, program), _sync_text(ins)) if t)
    label = program.uop_names.get(ins.uop_id, f"#{ins.uop_id}")
    return f"{_body_text(ins, program)}{' ' + sync if sync else ''}  // {label}"


def _signed(value: int, bits: int) -> int:
    """``value`` (mod 2^bits) as a signed number, so that a step down reads as negative."""
    return value - (1 << bits) if value >> (bits - 1) else value


def _step_text(base: np.ndarray, step: np.ndarray) -> str:
    """The non-zero steps of a body instruction, by the names of its form's fields (a step in the
    loop's ring as ``name+N%ring``, applied as :meth:`Loop.expand` says)."""
    opcode = OPCODE.get(base)
    form = COMMON_FIELDS + (COMPUTE_FIELDS if opcode == OP_COMPUTE else TRANSFER_FIELDS)
    ring_words = STEP_RING_WORDS.get(step)
    parts, named = [], set()
    for f in form:
        named.update(f.word_indices)
        if f.word == STEP_RING_WORDS.word or f.word in DEPENDENCY_BIT_WORDS:
            continue
        value = join_u64(step[f.word], step[f.word + 1]) if f.nwords == 2 else int(step[f.word])
        if value:
            ring = "%ring" if ring_words >> f.word & 1 else ""
            parts.append(f"{f.name}{_signed(value, 32 * f.nwords):+d}{ring}")
    parts += [f"w{w}{_signed(int(step[w]), 32):+d}" for w in range(1, INSTR_WORDS) if w not in named and step[w]]
    return " ".join(parts) if parts else "0"


def _loop_header(loop: Loop, rec: np.ndarray) -> str:
    """A loop block's first line: trips x body, then what its record says of the bits and the ring."""
    notes = [f"{loop.step_count} step{'s' if loop.step_count > 1 else ''}"]
    pairs, flips, ring_bytes = LOOP_PAIRS.get(rec), LOOP_FLIPS.get(rec), LOOP_RING_BYTES.get(rec)
    if pairs:
        notes.append(f"pairs {pairs:#x}")
    if flips:
        notes.append(f"flips {flips:#x}")
    if ring_bytes:
        notes.append(f"ring smem[{LOOP_RING_BASE.get(rec)}, +{ring_bytes})")
    return f"loop {loop.trips} x {loop.body} {{  // {', '.join(notes)}"


def _queue_listing(program: EncodedProgram, records: np.ndarray) -> list[str]:
    """The lines of one queue: straight instructions numbered by executed position, loops as blocks."""
    try:
        loops = queue_loops(records)
    except LoopFormError as e:
        return [f"  // malformed queue: {e}"] + [f"  r{r}: {_instruction_text(w, program)}" for r, w in enumerate(records)]
    lines, pos, r = [], 0, 0
    for loop in [*loops, None]:
        stop = loop.record if loop else len(records)
        for words in records[r:stop]:
            lines.append(f"  {pos}: {_instruction_text(words, program)}")
            pos += 1
        if loop is None:
            break
        lines.append(f"  {pos}: {_loop_header(loop, records[loop.record])}")
        table = loop.step_table(records)
        for base, k in zip(loop.bases(records), loop.step_indices(records).tolist(), strict=True):
            lines.append(f"    {_instruction_text(base, program)}")
            lines.append(f"      step #{k}: {_step_text(base, table[k])}")
        lines.append("  }")
        pos += loop.trips * loop.body
        r = loop.end
    return lines
