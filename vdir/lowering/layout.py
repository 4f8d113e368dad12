"""Fixed facts of the generated kernel that the lowering and the runtime share.

Kernel parameters, the shared-memory header in front of the tile arena, the
warp roles and the watchdog's error record. ``docs/lowering.md`` explains them.
"""

from __future__ import annotations

import numpy as np

from vdir import isa
from vdir.target import EngineKind, TargetDescription

KERNEL_NAME = "vdir_persistent"

#: kernel parameters in order: (PTX type, name)
PARAMS: tuple[tuple[str, str], ...] = (
    ("u64", "p_instrs"),  # u32[num_instrs * 32]
    ("u64", "p_queues"),  # the queue table: (first, count) per (SM, engine), row sm*engines+engine
    ("u64", "p_buffers"),  # u64[num_buffers]: device pointers in argument order
    ("u64", "p_sync"),  # the sync block: u32[isa.SYNC_HEADER_WORDS] finish counts, then u32[num_counters]
    ("u64", "p_error"),  # u32[ERROR_WORDS]
    ("u64", "p_watchdog_ns"),
    ("u64", "p_tmaps"),  # TMAP_BYTES-byte tensor maps (64-byte aligned), isa.tensor_map_table order
    ("u64", "p_scalars"),  # s32[num_scalars]: the launch-time scalars, written before the launch
    ("u64", "p_trace"),  # u64[TRACE_SM_WORDS + executed * TRACE_STAMPS]; declared only with the lowering option trace
)

#: the parameter only a kernel lowered with the ``trace`` option declares: the last one
TRACE_PARAM = PARAMS[-1][1]
#: u64 ``%globaltimer`` stamps (ns) per instruction in the trace buffer, at instruction index * TRACE_STAMPS:
#: when its waits were satisfied and it began, and when it had signalled its completion
TRACE_STAMPS = 2
TRACE_START, TRACE_END = 0, 1
#: u64 words at the head of the trace buffer, one per CTA (room for ``isa.SYNC_MAX_SMS``): the SM the CTA
#: ran on (``%smid``) plus one, so that 0 says the CTA did not start; the stamps follow them
TRACE_SM_WORDS = isa.SYNC_MAX_SMS
#: bytes of one of those words
TRACE_SM_WORD_BYTES = 8
#: byte offset of the first instruction's stamps in the trace buffer
TRACE_STAMPS_OFFSET = TRACE_SM_WORD_BYTES * TRACE_SM_WORDS


def kernel_params(trace: bool) -> tuple[tuple[str, str], ...]:
    """The kernel's parameters: :data:`PARAMS`, less :data:`TRACE_PARAM` unless lowered with ``trace``.

    (A launch may pass the trace pointer either way: the driver reads as many
    arguments as the kernel declares.)
    """
    return PARAMS if trace else tuple(p for p in PARAMS if p[1] != TRACE_PARAM)


#: bytes of one tensor map (CUtensorMap) in the p_tmaps array
TMAP_BYTES = 128

# ---- shared-memory header (byte offsets from the dynamic smem base) --------
SMEM_BITMAP = 0  # u64 dependency bitmap
SMEM_ABORT = 8  # u32: the compute leader saw an abort (broadcast to the group)
#: u32: how many compute instructions the compute group's signal warp has signalled
#: (:func:`compute_signal_warp`); the first compute warp reads it before testing a wait that
#: shares a bit with the instruction before
SMEM_SIGNALLED = 12
SMEM_MBARRIERS = 16  # one ring of load_ring u64 mbarriers per load engine (lowering option), MAX_LOAD_RING apart
#: u64 mbarrier: each compute warp arrives once it is done with an instruction, and the compute control
#: warp polls it (:func:`compute_control_warp`); after the rings
SMEM_CONTROL_DONE = 144
SMEM_SCRATCH = 256  # f32 reduction scratch, one word per compute warp (<= 32 warps)
SMEM_GEMV_PARTIALS = 512  # f32 gemv split-K partials: 2 buffers x one word per warp
SMEM_GEMV_ROW_PARTIALS = 768  # f32 partials of a gemv row block: BLOCK_ROWS words per compute warp
GEMV_ROW_PARTIALS_BYTES = 256  # its size: up to 8 compute warps run row blocks (gemv.blocked_rows_fit)
SMEM_IWINDOW = 1024  # per engine, in queue order: FETCH_DEPTH prefetched 128-byte instructions
FETCH_DEPTH = 8
assert SMEM_GEMV_ROW_PARTIALS + GEMV_ROW_PARTIALS_BYTES <= SMEM_IWINDOW
#: the tile arena starts here (1024-aligned): the header is what the ISA reserves in front of the tiles
HEADER_BYTES = isa.KERNEL_RESERVED_SMEM

#: mbarriers in a load engine's ring = loads it may keep in flight at once (lowering option
#: ``load_ring``; the default)
DEFAULT_LOAD_RING = 8
#: load engines an SM may have (each has its own ring: the load and the stream engine)
MAX_LOAD_RINGS = 2
#: the most one ring may hold: a power of two whose u64 mbarriers, one per slot of every ring, fit
#: the header in front of the scratch (and at most a warp's lanes: lane s holds slot s's signal)
MAX_LOAD_RING = 8
assert MAX_LOAD_RINGS * MAX_LOAD_RING * 8 <= SMEM_CONTROL_DONE - SMEM_MBARRIERS
assert SMEM_CONTROL_DONE + 8 <= SMEM_SCRATCH

# ---- warp roles ----------------------------------------------------------
LOAD_WARP = 0
STORE_WARP = 1
COMPUTE_FIRST_WARP = 2
#: the most warps a CTA has (1024 threads)
MAX_CTA_WARPS = 32

# ---- named barriers (id 0: the whole CTA, once, after the header's init) -----
COMPUTE_BARRIER = 1  # the compute group: ``target.compute_threads`` threads
#: the compute engine's hand-over of an instruction in a kernel that runs loops: the warp that
#: owns its window arrives (``bar.arrive``), the first compute warp waits (``bar.sync``). The owner
#: is the compute fetch warp (:func:`compute_fetch_warp`), else the compute group's second warp
FETCH_BARRIER = 2
#: the compute fetch warp's slot handed back by the first compute warp, with an abort flag
#: (``bar.red.or.pred``): the instruction is done, or the group is leaving
RETURN_BARRIER = 3
#: threads on ``FETCH_BARRIER`` and ``RETURN_BARRIER``: the window's owner and the first compute warp
HANDOFF_THREADS = 64
#: in a kernel with a compute control warp (:func:`compute_control_warp`): the control warp hands an
#: instruction to the compute group (it arrives, the group waits), counting :func:`control_threads`.
#: The group says an instruction is done through the mbarrier ``SMEM_CONTROL_DONE`` instead, which
#: the control warp can poll while it tests the next instruction's wait
CONTROL_GO_BARRIER = 4
#: the engine kinds the kernel has a warp role for: the load, store and compute
#: engines always; the stream engine where the target has one (its warp
#: follows the compute group, :func:`stream_warp`)
KERNEL_ROLES = (EngineKind.LOAD, EngineKind.STORE, EngineKind.COMPUTE, EngineKind.STREAM)
REQUIRED_ROLES = (EngineKind.LOAD, EngineKind.STORE, EngineKind.COMPUTE)


def has_stream_engine(target: TargetDescription) -> bool:
    """Whether ``target``'s SMs have a stream engine (a second load engine, with a warp of its own)."""
    return target.engine(EngineKind.STREAM) is not None


def stream_warp(target: TargetDescription) -> int:
    """The warp that runs the stream engine: the one after the compute group."""
    return COMPUTE_FIRST_WARP + target.compute_threads // 32


def _engine_warps(target: TargetDescription) -> int:
    """Warps of the engines' roles: the load and store warps, the compute group, the stream warp."""
    return stream_warp(target) + (1 if has_stream_engine(target) else 0)


def compute_fetch_warp(target: TargetDescription, loops: bool) -> int | None:
    """The warp that owns the compute engine's instruction window in a kernel that runs loops: the
    one after every engine's role, where the CTA has room for it (``kernel.compute_engine``).

    It walks the loop positions ahead of the compute group and hands each over on
    ``FETCH_BARRIER``; the first compute warp hands its slot back on ``RETURN_BARRIER``. None
    without loops, or with a compute group too large for one more warp: the group's second warp
    owns the window then (or, in a one-warp group, the first).
    """
    warp = _engine_warps(target)
    return warp if loops and warp < MAX_CTA_WARPS else None


def compute_control_warp(target: TargetDescription, loops: bool, control: bool) -> int | None:
    """The warp that waits for and signals the compute engine's instructions while the compute group
    runs their bodies, in a kernel without loops (lowering option ``control_warp``): the one after
    every engine's role, where the CTA has room for it (``kernel.compute_engine``). None otherwise:
    the first compute warp waits and signals between the bodies."""
    warp = _engine_warps(target)
    return warp if control and not loops and warp < MAX_CTA_WARPS else None


def compute_signal_warp(target: TargetDescription, loops: bool, signal_warp: bool) -> int | None:
    """The compute group's warp (its index in the group) whose lane 0 signals each compute
    instruction's completion, in a kernel without loops whose first compute warp waits (no control
    warp; lowering option ``signal_warp``): the group's last, where the group has a warp besides the
    first. None otherwise: the first compute warp's lane 0 signals, between the bodies
    (``kernel.compute_engine``)."""
    warps = target.compute_threads // 32
    return warps - 1 if signal_warp and not loops and warps > 1 else None


def control_done_arrivals(target: TargetDescription) -> int:
    """Arrivals that complete a phase of ``SMEM_CONTROL_DONE``: one per compute thread, per instruction."""
    return target.compute_threads


def control_threads(target: TargetDescription) -> int:
    """Threads on ``CONTROL_GO_BARRIER``: the compute group and the control warp."""
    return target.compute_threads + 32


def load_ring_index(target: TargetDescription, engine: int) -> int:
    """Which of the header's load rings engine ``engine`` (a load engine) uses: its rank among them."""
    return target.load_engines.index(engine)


def ring_mbarriers(ring: int) -> int:
    """Header offset of load ring ``ring``'s mbarriers: the rings follow each other from ``SMEM_MBARRIERS``."""
    return SMEM_MBARRIERS + ring * MAX_LOAD_RING * 8


def fetch_window(engine: int) -> int:
    """Header offset of engine ``engine``'s instruction window: the windows follow each other from
    ``SMEM_IWINDOW`` in queue order, ``FETCH_DEPTH`` instructions each."""
    return SMEM_IWINDOW + engine * FETCH_DEPTH * isa.INSTR_BYTES


def check_engines(target: TargetDescription) -> None:
    """Raise ValueError unless the kernel's warp roles cover ``target``'s engines, one role each.

    Each engine also needs its instruction window below the tile arena.
    """
    names = target.engine_names
    if len(set(names)) != len(names) or not set(REQUIRED_ROLES) <= set(names) <= set(KERNEL_ROLES):
        raise ValueError(
            f"the kernel has warp roles for the engines {', '.join(REQUIRED_ROLES)} (and optionally "
            f"{EngineKind.STREAM}), one each; target '{target.name}' has {', '.join(names)}"
        )
    if fetch_window(target.num_engines) > HEADER_BYTES:
        raise ValueError(f"the instruction windows of {target.num_engines} engines do not fit the kernel's header")

# ---- error record (u32 words) --------------------------------------------
ERROR_WORDS = 16
E_CODE, E_SM, E_ENGINE, E_POS, E_UOP = 0, 1, 2, 3, 4
E_WAIT_MASK, E_WAIT_PARITY, E_BITMAP = 5, 7, 9  # 2 words each (lo, hi)
E_COUNTER, E_COUNTER_VALUE, E_COUNTER_WANTED = 11, 12, 13
E_VALUE = 14  # ERR_BOUNDS, ERR_SCALAR_RANGE: the runtime value that was out of range (E_POS: the scalar's slot);
#              ERR_DIVERGENT: the number of the failed check
E_WARP = 15  # ERR_DIVERGENT: the warp whose threads disagreed
ERR_NONE, ERR_WATCHDOG, ERR_BAD_FAMILY, ERR_BAD_OPCODE, ERR_BOUNDS, ERR_SCALAR_RANGE = 0, 1, 2, 3, 4, 5
ERR_DIVERGENT = 6  # lowering option uniform_checks: a branch declared warp-uniform was not
#: the label hint after each uniform-branch check (lowering option uniform_checks): check ``n`` is
#: followed by ``$L_uniform_ok_<n>``, the ``n`` its ERR_DIVERGENT record names
UNIFORM_CHECK_LABEL = "uniform_ok"
ERROR_NAMES = {ERR_WATCHDOG: "watchdog", ERR_BAD_FAMILY: "unknown op family", ERR_BAD_OPCODE: "bad opcode",
               ERR_BOUNDS: "runtime offset out of range", ERR_SCALAR_RANGE: "launch-time scalar out of range",
               ERR_DIVERGENT: "a branch declared warp-uniform diverged"}


def block_threads(target: TargetDescription, loops: bool = False, control: bool = False) -> int:
    """Threads per CTA: one load warp, one store warp, the compute group, a stream warp if the target
    has one, and where there is room for it, in a kernel that runs loops the compute fetch warp, in
    one without (and ``control``) the compute control warp."""
    extra = compute_fetch_warp(target, loops) is not None or compute_control_warp(target, loops, control) is not None
    return 32 * (_engine_warps(target) + extra)


def dynamic_smem_bytes(tile_bytes: int) -> int:
    """Dynamic shared memory of a launch: the header plus the program's tile arena."""
    return HEADER_BYTES + ((tile_bytes + 127) // 128) * 128

# ---- the kernel's queue table (p_queues) -----------------------------------
# One row per (SM, engine), row sm * engines + engine, then the loop entries:
# each queue's loops in order and a closing sentinel entry. The kernel maps an
# executed position p of a queue to its records with them (``kernel.fetch``):
# before an entry's loop, p is record p + delta; inside it, p - begin = t * body
# + j runs base record ``record + 1 + j`` of trip t, stepped by step record
# ``record + 1 + body + index[j]``. Built from the loop records by
# :func:`kernel_queue_table`; the loop records stay the program's truth.
QUEUE_ROW_WORDS = 4
Q_RECORDS = 0  # the queue's first record (an index into p_instrs)
Q_COUNT = 1  # instructions the queue executes (its loops' trips counted)
Q_EXEC_START = 2  # its first instruction's index in the executed order (the trace buffer's)
Q_LOOPS = 3  # byte offset from p_queues of its first loop entry
LOOP_ENTRY_WORDS = isa.INSTR_WORDS
LOOP_ENTRY_BYTES = LOOP_ENTRY_WORDS * isa.WORD_BYTES
LE_BEGIN = 0  # executed position of the body's first run (the sentinel: all ones)
LE_END = 1  # one past its last run (the sentinel: all ones)
LE_DELTA = 2  # record - position, mod 2**32, of the instructions before the loop
LE_RECORD = 3  # the loop record (an index into p_instrs)
LE_BODY = 4  # instructions in the body
LE_PAIRS = 8  # lo, hi: the loop record's pairs (16-byte aligned: read with the flips as one vector)
LE_FLIPS = 10  # lo, hi: its flips
LE_RING_BASE = 12
LE_RING_BYTES = 13
LE_STEP_INDEX = isa.LOOP_STEP_INDEX_WORD  # its step-index words, as in the loop record
#: bytes of a window slot in a kernel that runs loops: a base record and its step record
LOOP_SLOT_BYTES = 2 * isa.INSTR_BYTES
#: instructions such a window holds: as many as fill the same bytes as a plain window
LOOP_FETCH_DEPTH = FETCH_DEPTH * isa.INSTR_BYTES // LOOP_SLOT_BYTES
_ALL_ONES = 0xFFFFFFFF


def window_shape(loops: bool) -> tuple[int, int]:
    """(slots, bytes per slot) of an engine's instruction window: :data:`LOOP_FETCH_DEPTH` slots of
    :data:`LOOP_SLOT_BYTES` in a kernel that runs loops, else :data:`FETCH_DEPTH` of one instruction."""
    return (LOOP_FETCH_DEPTH, LOOP_SLOT_BYTES) if loops else (FETCH_DEPTH, isa.INSTR_BYTES)


def kernel_queue_table(program: isa.EncodedProgram) -> np.ndarray:
    """The flat uint32 table the kernel reads through ``p_queues`` (layout above).

    Raises LoopFormError on a malformed loop record (check the program first).
    """
    engines = program.num_engines
    rows = np.zeros((program.num_sms * engines, QUEUE_ROW_WORDS), dtype=np.uint32)
    entries: list[np.ndarray] = []
    executed = 0
    for sm, qs in enumerate(program.queues):
        for e, (first, records) in enumerate(qs):
            loops = isa.queue_loops(program.instrs[first : first + records])
            count = isa.executed_length(records, loops)
            rows[sm * engines + e] = (first, count, executed, rows.nbytes + len(entries) * LOOP_ENTRY_BYTES)
            entries += _loop_entries(program.instrs, first, loops)
            executed += count
    return np.concatenate([rows.reshape(-1), *entries]) if entries else rows.reshape(-1)


def _loop_entries(instrs: np.ndarray, first: int, loops: list[isa.Loop]) -> list[np.ndarray]:
    """One queue's loop entries and its sentinel."""
    out, position, record = [], 0, 0  # executed position and record just after the previous loop
    for loop in loops:
        entry = np.zeros(LOOP_ENTRY_WORDS, dtype=np.uint32)
        rec = instrs[first + loop.record]
        begin = position + loop.record - record
        entry[[LE_BEGIN, LE_END, LE_DELTA, LE_RECORD, LE_BODY]] = (
            begin, begin + loop.body * loop.trips, (first + record - position) % (1 << 32), first + loop.record,
            loop.body)
        entry[LE_PAIRS : LE_PAIRS + 2] = rec[isa.LOOP_PAIRS.word_indices]
        entry[LE_FLIPS : LE_FLIPS + 2] = rec[isa.LOOP_FLIPS.word_indices]
        entry[LE_RING_BASE], entry[LE_RING_BYTES] = isa.LOOP_RING_BASE.get(rec), isa.LOOP_RING_BYTES.get(rec)
        entry[LE_STEP_INDEX:] = rec[isa.LOOP_STEP_INDEX_WORD:]
        out.append(entry)
        position, record = begin + loop.body * loop.trips, loop.end
    sentinel = np.zeros(LOOP_ENTRY_WORDS, dtype=np.uint32)
    sentinel[[LE_BEGIN, LE_END, LE_DELTA]] = (_ALL_ONES, _ALL_ONES, (first + record - position) % (1 << 32))
    out.append(sentinel)
    return out
