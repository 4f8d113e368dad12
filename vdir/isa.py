"""The micro-op ISA: the binary per-engine instruction streams.

``vdir-encode`` writes this format; the CPU simulator and the GPU kernel both
execute exactly it. ``docs/isa.md`` documents every field; this module is the
single definition of the layout (word indices, opcodes, flags) that the
encoder, the simulator and the PTX lowering import.

An instruction is :data:`INSTR_WORDS` little-endian u32 words (128 bytes, so a
warp fetches one with a single coalesced load). Queues are contiguous runs of
instructions, one queue per (SM, engine).
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

MAGIC = 0x52494456  # "VDIR" little-endian
VERSION = 1
INSTR_WORDS = 32
INSTR_BYTES = INSTR_WORDS * 4

# ---- opcodes (word 0, bits 0..7) ------------------------------------------
OP_NOP = 0  # waits/signals only (used when an op needs a second counter wait)
OP_LOAD = 1
OP_COMPUTE = 2
OP_STORE = 3
OPCODE_NAMES = {OP_NOP: "nop", OP_LOAD: "load", OP_COMPUTE: "compute", OP_STORE: "store"}

# ---- common words ----------------------------------------------------------
W_OPCODE = 0  # bits 0..7 opcode, bits 8..15 family opcode, bits 16..31 flags
W_WAIT_MASK = 1  # 2 words: u64 mask of dependency bits to wait on
W_WAIT_PARITY = 3  # 2 words: u64 value those bits must hold
W_SIGNAL_MASK = 5  # 2 words: u64 bits to toggle when the micro-op completes
W_WAIT_COUNTER = 7  # index + 1 of a global counter to wait on; 0 = none
W_WAIT_COUNT = 8  # wait until counter >= epoch * this
W_RELEASE_COUNTER = 9  # index + 1 of a global counter to add 1 to on completion
W_UOP_ID = 10  # id of the micro-op in the scheduled program (diagnostics)
W_RESERVED = 11

# ---- load / store words ---------------------------------------------------
W_BUFFER = 12  # buffer (program argument) index
W_GLOBAL_OFFSET = 13  # 2 words: u64 byte offset of the region's first byte
W_ROWS = 15  # rows in the region
W_ROW_BYTES = 16  # bytes per row (multiple of 16)
W_ROW_STRIDE = 17  # bytes between rows in the buffer
W_SMEM = 18  # shared-memory byte offset of the tile (dense rows)
# tensor-copy form of the same region (see assign_tensor_maps); W_TMAP 0: none
W_TMAP = 19  # index + 1 of the program's tensor map for this region's shape
W_TBOXES = 20  # boxes per tile, stacked along rows (each W_TBOX_ROWS rows)
W_TBOX_ROWS = 21  # rows per box
W_TCHUNK = 22  # column coordinate of the region, in units of the map's segment width
W_TROW = 23  # row coordinate of the region
W_TVIEW = 24  # bytes of one element of the map's view of the buffer

# ---- compute words --------------------------------------------------------
W_OUT_SMEM = 12  # shared-memory offset of the result tile
W_IN_SMEM = 13  # 4 words: shared-memory offsets of the inputs
W_NUM_INPUTS = 17
W_P0 = 18  # rows R of the (weight) tile, or rows of an elementwise tile
W_P1 = 19  # columns K / N
W_P2 = 20  # family flags (see FLAG_*) or the silu_mul operand index
W_P3 = 21
W_F0 = 22  # f32 parameter (eps)
MAX_INPUTS = 4

# gemv flags in W_P2
GEMV_HAS_ACC = 1
GEMV_OUT_F32 = 2

#: bytes at the start of a CTA's dynamic shared memory kept for the kernel's
#: own state (dependency bitmap, mbarriers, reduction scratch). Tile offsets in
#: instructions are relative to the tile arena that follows; a launch needs
#: ``KERNEL_RESERVED_SMEM + smem_bytes`` bytes of dynamic shared memory.
KERNEL_RESERVED_SMEM = 4096

ENGINE_LOAD, ENGINE_COMPUTE, ENGINE_STORE = 0, 1, 2
NUM_ENGINES = 3

# header layout: 16 u32 words
HEADER_WORDS = 16
H_MAGIC, H_VERSION, H_NUM_SMS, H_NUM_ENGINES = 0, 1, 2, 3
H_NUM_INSTRS, H_NUM_COUNTERS, H_SMEM_BYTES, H_NUM_BUFFERS = 4, 5, 6, 7
H_BITMAP_BITS = 8


@dataclass
class Instruction:
    """One decoded instruction (a view over its 32 words)."""

    words: np.ndarray  # shape (32,), uint32

    @classmethod
    def empty(cls, opcode: int) -> "Instruction":
        w = np.zeros(INSTR_WORDS, dtype=np.uint32)
        w[W_OPCODE] = opcode
        return cls(w)

    def _u64(self, i: int) -> int:
        return int(self.words[i]) | (int(self.words[i + 1]) << 32)

    def _set_u64(self, i: int, v: int) -> None:
        self.words[i] = v & 0xFFFFFFFF
        self.words[i + 1] = (v >> 32) & 0xFFFFFFFF

    opcode = property(lambda s: int(s.words[W_OPCODE]) & 0xFF)
    family = property(lambda s: (int(s.words[W_OPCODE]) >> 8) & 0xFF)
    wait_mask = property(lambda s: s._u64(W_WAIT_MASK), lambda s, v: s._set_u64(W_WAIT_MASK, v))
    wait_parity = property(lambda s: s._u64(W_WAIT_PARITY), lambda s, v: s._set_u64(W_WAIT_PARITY, v))
    signal_mask = property(lambda s: s._u64(W_SIGNAL_MASK), lambda s, v: s._set_u64(W_SIGNAL_MASK, v))
    global_offset = property(
        lambda s: s._u64(W_GLOBAL_OFFSET), lambda s, v: s._set_u64(W_GLOBAL_OFFSET, v)
    )

    def set_family(self, opcode: int) -> None:
        self.words[W_OPCODE] = (int(self.words[W_OPCODE]) & ~0xFF00) | (opcode << 8)

    @property
    def wait_counter(self) -> int | None:
        v = int(self.words[W_WAIT_COUNTER])
        return v - 1 if v else None

    @property
    def release_counter(self) -> int | None:
        v = int(self.words[W_RELEASE_COUNTER])
        return v - 1 if v else None

    @property
    def uop_id(self) -> int:
        return int(self.words[W_UOP_ID])

    @property
    def f0(self) -> float:
        return float(self.words[W_F0 : W_F0 + 1].view(np.float32)[0])

    def set_f0(self, v: float) -> None:
        self.words[W_F0 : W_F0 + 1] = np.array([v], dtype=np.float32).view(np.uint32)


#: bytes per element of a buffer dtype
DTYPE_SIZES = {"bf16": 2, "f32": 4}

#: the most elements a tensor-copy box may span in one dimension
TMA_BOX_MAX = 256

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
    b = int(words[W_BUFFER])
    stride = int(words[W_ROW_STRIDE])
    off = int(words[W_GLOBAL_OFFSET]) | (int(words[W_GLOBAL_OFFSET + 1]) << 32)
    key = (b, int(words[W_ROWS]), int(words[W_ROW_BYTES]), stride, off % stride if stride else off, max_box_rows,
           view)
    if key not in memo:
        memo[key] = _region_form(buffers[b], b, *key[1:]) if b < len(buffers) else None
    form = memo[key]
    if form is None:
        return None
    spec, boxes, chunk = form
    return spec, boxes, chunk, off // stride


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
    if stride != ncols * e or stride % 16 or rows == 0:
        return None
    v = view if stride % view == 0 and row_bytes % view == 0 and col_off % view == 0 else e
    if row_bytes % v or col_off % v:
        return None
    c0, cols = col_off // v, row_bytes // v
    width = math.gcd(cols, stride // v, c0, TMA_BOX_MAX)
    if (width * v) % 16 or cols // width > TMA_BOX_MAX:
        return None
    box_rows = next(d for d in range(min(rows, max_box_rows, TMA_BOX_MAX), 0, -1) if rows % d == 0)
    spec = TensorMapSpec(index, v, nrows, stride // v, width, cols // width, box_rows)
    return spec, rows // box_rows, c0 // width


def assign_tensor_maps(instrs: np.ndarray, buffers: list["BufferInfo"],
                       max_box_rows: int = TMA_BOX_MAX, view_bytes: int = TMA_VIEW_BYTES) -> list[TensorMapSpec]:
    """Fill the tensor-copy words of every load and store; return the map table.

    A region gets a map when its buffer is a dense 2-D array whose rows are a
    multiple of 16 bytes and the region fits whole boxes (else ``W_TMAP``
    stays 0 and the kernel copies it with plain bulk copies). Regions of the
    same buffer and box shape share a map; maps are numbered in instruction
    order, so the table can be rebuilt from the words alone
    (:func:`tensor_map_table`). A box spans at most ``max_box_rows`` rows (a
    tile of more rows is several boxes, which the load warp's lanes issue in
    parallel); the maps view buffers as ``view_bytes``-byte elements where the
    region allows.
    """
    table: dict[TensorMapSpec, int] = {}
    memo: dict = {}
    ops = instrs[:, W_OPCODE] & 0xFF if len(instrs) else np.zeros(0, np.uint32)
    for i in np.nonzero((ops == OP_LOAD) | (ops == OP_STORE))[0]:
        w = instrs[i]
        form = _tensor_form(w, buffers, memo, max_box_rows, view_bytes)
        if form is None:
            w[W_TMAP : W_TVIEW + 1] = 0
            continue
        spec, boxes, chunk, row = form
        idx = table.setdefault(spec, len(table))
        w[W_TMAP], w[W_TBOXES], w[W_TBOX_ROWS], w[W_TCHUNK], w[W_TROW] = idx + 1, boxes, spec.box_rows, chunk, row
        w[W_TVIEW] = spec.elem_bytes
    return list(table)


def tensor_map_table(program: "EncodedProgram") -> list[TensorMapSpec]:
    """The tensor maps that ``program``'s instructions name (index i: ``W_TMAP`` i + 1).

    Rebuilt from the words and the buffer table; an inconsistent program
    (two shapes for one index) raises ValueError.
    """
    table: dict[int, TensorMapSpec] = {}
    memo: dict = {}
    instrs = program.instrs
    ops = instrs[:, W_OPCODE] & 0xFF if len(instrs) else np.zeros(0, np.uint32)
    for i in np.nonzero(((ops == OP_LOAD) | (ops == OP_STORE)) & (instrs[:, W_TMAP] > 0))[0]:
        w = instrs[i]
        form = _tensor_form(w, program.buffers, memo, int(w[W_TBOX_ROWS]), max(int(w[W_TVIEW]), 1))
        if form is None or form[0].box_rows != int(w[W_TBOX_ROWS]) or form[0].elem_bytes != int(w[W_TVIEW]):
            raise ValueError(f"instruction names tensor map {int(w[W_TMAP]) - 1}, but its region has no tensor form")
        idx = int(w[W_TMAP]) - 1
        if table.setdefault(idx, form[0]) != form[0]:
            raise ValueError(f"tensor map {idx} is named by regions of different shapes")
    if sorted(table) != list(range(len(table))):
        raise ValueError("tensor map indices are not dense")
    return [table[i] for i in range(len(table))]


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
    dtype: str  # "bf16" | "f32"
    is_output: bool
    is_input: bool = True  # the program reads data it did not write itself

    @property
    def role(self) -> str:
        """``in``, ``out``, ``inout`` or ``scratch`` (see :func:`buffer_role`)."""
        return buffer_role(self.is_input, self.is_output)


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

    def queue(self, sm: int, engine: int) -> np.ndarray:
        start, count = self.queues[sm][engine]
        return self.instrs[start : start + count]

    def instruction(self, sm: int, engine: int, pos: int) -> Instruction:
        start, count = self.queues[sm][engine]
        return Instruction(self.instrs[start + pos])

    # ---- binary form --------------------------------------------------
    def header(self) -> np.ndarray:
        h = np.zeros(HEADER_WORDS, dtype=np.uint32)
        h[H_MAGIC], h[H_VERSION] = MAGIC, VERSION
        h[H_NUM_SMS], h[H_NUM_ENGINES] = self.num_sms, NUM_ENGINES
        h[H_NUM_INSTRS], h[H_NUM_COUNTERS] = len(self.instrs), self.num_counters
        h[H_SMEM_BYTES], h[H_NUM_BUFFERS] = self.smem_bytes, len(self.buffers)
        h[H_BITMAP_BITS] = self.bitmap_bits
        return h

    def queue_table(self) -> np.ndarray:
        """``(num_sms * 3, 2)`` uint32: start and count per (sm, engine), row sm*3+engine."""
        t = np.zeros((self.num_sms * NUM_ENGINES, 2), dtype=np.uint32)
        for sm, qs in enumerate(self.queues):
            for e, (start, count) in enumerate(qs):
                t[sm * NUM_ENGINES + e] = (start, count)
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
                   target: str = "h200") -> "EncodedProgram":
        """Inverse of :meth:`to_bytes` (buffers and names are host metadata)."""
        h = cls.parse_header(data)
        n_sms = h["num_sms"]
        off = HEADER_WORDS * 4
        table = np.frombuffer(data, dtype="<u4", count=n_sms * NUM_ENGINES * 2, offset=off)
        off += table.nbytes
        expected = off + h["num_instrs"] * INSTR_BYTES
        if len(data) != expected:
            raise ValueError(f"encoded program is {len(data)} bytes, the header says {expected}")
        instrs = np.frombuffer(data, dtype="<u4", offset=off).reshape(-1, INSTR_WORDS).copy()
        table = table.reshape(n_sms, NUM_ENGINES, 2)
        queues = [[(int(table[s, e, 0]), int(table[s, e, 1])) for e in range(NUM_ENGINES)] for s in range(n_sms)]
        for s in range(n_sms):
            for e in range(NUM_ENGINES):
                start, count = queues[s][e]
                if start + count > h["num_instrs"]:
                    raise ValueError(f"queue (SM {s}, engine {e}) runs past the instructions")
        return cls(n_sms, h["smem_bytes"], h["num_counters"], h["bitmap_bits"], buffers, instrs,
                   queues, dict(uop_names or {}), target)

    @staticmethod
    def parse_header(data: bytes) -> dict:
        if len(data) < HEADER_WORDS * 4:
            raise ValueError("encoded program is shorter than its header")
        words = struct.unpack_from("<16I", data)
        if words[H_MAGIC] != MAGIC:
            raise ValueError("not an encoded vdir program (bad magic)")
        if words[H_VERSION] != VERSION:
            raise ValueError(f"encoded program version {words[H_VERSION]}, expected {VERSION}")
        return {
            "num_sms": words[H_NUM_SMS],
            "num_instrs": words[H_NUM_INSTRS],
            "num_counters": words[H_NUM_COUNTERS],
            "smem_bytes": words[H_SMEM_BYTES],
            "num_buffers": words[H_NUM_BUFFERS],
            "bitmap_bits": words[H_BITMAP_BITS],
        }

    def describe(self, sm: int, engine: int, pos: int) -> str:
        """A readable name for a queue position, for error messages."""
        ins = self.instruction(sm, engine, pos)
        name = self.uop_names.get(ins.uop_id, f"micro-op #{ins.uop_id}")
        eng = ("load", "compute", "store")[engine]
        return f"{name} (SM {sm}, {eng} engine, queue position {pos})"


def encode_code(program: EncodedProgram) -> str:
    """The program's binary form, zlib-compressed and base64-encoded (for IR text)."""
    return base64.b64encode(zlib.compress(program.to_bytes(), 1)).decode("ascii")


def decode_code(text: str) -> bytes:
    """Inverse of :func:`encode_code`; raises ValueError on damaged data."""
    try:
        data = zlib.decompress(base64.b64decode(text.encode("ascii"), validate=True))
    except (binascii.Error, zlib.error, UnicodeEncodeError) as e:
        raise ValueError(f"cannot decode the program's code ({e})") from None
    EncodedProgram.parse_header(data)
    return data


def encode_text(lines: list[str]) -> str:
    """Newline-joined lines, compressed and base64-encoded (micro-op names)."""
    return base64.b64encode(zlib.compress("\n".join(lines).encode("utf-8"), 1)).decode("ascii")


def decode_text(text: str) -> list[str]:
    """Inverse of :func:`encode_text`."""
    try:
        return zlib.decompress(base64.b64decode(text.encode("ascii"), validate=True)).decode("utf-8").split("\n")
    except (binascii.Error, zlib.error, UnicodeError) as e:
        raise ValueError(f"cannot decode the micro-op names ({e})") from None


def _bits(mask: int) -> list[int]:
    return [b for b in range(64) if mask >> b & 1]


def _sync_text(ins: Instruction) -> str:
    parts = []
    waits = _bits(ins.wait_mask)
    if waits:
        parity = ins.wait_parity
        parts.append("wait(" + ", ".join(f"b{b}={parity >> b & 1}" for b in waits) + ")")
    if ins.wait_counter is not None:
        parts.append(f"wait(c{ins.wait_counter}>={int(ins.words[W_WAIT_COUNT])}*epoch)")
    signals = _bits(ins.signal_mask)
    if signals:
        parts.append("signal(" + ", ".join(f"b{b}" for b in signals) + ")")
    if ins.release_counter is not None:
        parts.append(f"release(c{ins.release_counter})")
    return " ".join(parts)


def _body_text(ins: Instruction, program: EncodedProgram) -> str:
    w = ins.words
    if ins.opcode in (OP_LOAD, OP_STORE):
        buf = program.buffers[int(w[W_BUFFER])].name if int(w[W_BUFFER]) < len(program.buffers) else f"#{int(w[W_BUFFER])}"
        region = f"@{buf}+{ins.global_offset} [{int(w[W_ROWS])} x {int(w[W_ROW_BYTES])}B, stride {int(w[W_ROW_STRIDE])}]"
        smem = f"smem[{int(w[W_SMEM])}]"
        text = f"load  {region} -> {smem}" if ins.opcode == OP_LOAD else f"store {smem} -> {region}"
        if int(w[W_TMAP]):
            boxes = f" x{int(w[W_TBOXES])}" if int(w[W_TBOXES]) > 1 else ""
            text += f" tmap{int(w[W_TMAP]) - 1}({int(w[W_TROW])}, {int(w[W_TCHUNK])}){boxes}"
        return text
    if ins.opcode == OP_COMPUTE:
        from vdir.families import FAMILY_BY_OPCODE

        fam = FAMILY_BY_OPCODE.get(ins.family)
        name = fam.name if fam else f"family#{ins.family}"
        n = int(w[W_NUM_INPUTS])
        ins_text = ", ".join(f"smem[{int(w[W_IN_SMEM + i])}]" for i in range(n))
        params = f" p=({int(w[W_P0])}, {int(w[W_P1])}, {int(w[W_P2])})"
        eps = f" f0={ins.f0:g}" if ins.f0 else ""
        return f"{name}({ins_text}) -> smem[{int(w[W_OUT_SMEM])}]{params}{eps}"
    return "nop"


def disassemble(program: EncodedProgram, name: str = "program") -> str:
    """A readable listing of every queue (``vdir-opt -t isa``)."""
    lines = [
        f"// {name}: {program.num_sms} SMs, {program.smem_bytes} bytes of tiles per SM, "
        f"{program.num_counters} global counter(s), {program.bitmap_bits} dependency bits",
    ]
    for i, b in enumerate(program.buffers):
        lines.append(f"// buffer {i}: {b.name} {b.shape[0]}x{b.shape[1]} {b.dtype} ({b.role})")
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
        for e, engine in enumerate(("load", "compute", "store")):
            start, count = program.queues[sm][e]
            if not count:
                continue
            lines.append(f"sm {sm} {engine}:")
            for pos in range(count):
                ins = Instruction(program.instrs[start + pos])
                sync = _sync_text(ins)
                label = program.uop_names.get(ins.uop_id, f"#{ins.uop_id}")
                lines.append(f"  {pos}: {_body_text(ins, program)}{' ' + sync if sync else ''}  // {label}")
    return "\n".join(lines) + "\n"
