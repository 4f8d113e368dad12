"""The CPU simulator backend: executes an encoded program as the GPU kernel does.

The simulator runs the micro-op ISA of :mod:`vdir.isa` with the semantics of
``docs/isa.md``: per SM a shared-memory byte array and a 64-bit dependency
bitmap, u32 global counters with epoch semantics, and the in-order engines
of the program's target (``TargetDescription.engines``: load, compute,
store, stream). Each load engine (every engine that runs loads: load and
stream on Hopper) keeps several loads in flight and completes them in its
queue order, independently of the others; the loads of an SM share its
bandwidth. Compute micro-ops run the numpy semantics of
their family (:meth:`vdir.families.Family.run`) on whole tiles decoded from
the shared-memory bytes.

Each step picks one possible action (start an engine's next micro-op, or
complete the oldest in-flight load of a load engine) with a seeded RNG, so tests can
explore different interleavings (or, on a clock whose SMs share the bandwidth,
the one that can happen earliest: :class:`BandwidthLedger`). Instead of computing garbage the simulator
reports:

* races (:class:`SimRaceError`): it keeps a vector clock per engine; toggling
  a dependency bit or releasing a counter publishes the clock of the
  completing micro-op, and passing a wait joins it (a counter wait joins
  exactly the releases it waits for; a bit must not toggle while a waiter
  that could start sees the value it wants). A read of a shared-memory tile or of a
  global region (an i32 runtime value included) whose last writer is not in
  the reader's clock, or a write over a region whose earlier readers or
  writer are not in the writer's clock, names both micro-ops;
* stale reads (:class:`SimRaceError` too): each shared-memory read must see
  the tile of the slot's last writer in program order (micro-op id order,
  :func:`derive_slot_sources`), even when an older tile there is properly
  ordered;
* deadlocks (:class:`SimDeadlockError`): when no action is possible and some
  queue is unfinished, it names every stuck micro-op and what it waits on;
* malformed programs (:class:`SimProgramError`): bad opcodes, out-of-bounds
  regions, operands that do not fit a family.

It also records a trace with a logical clock (:class:`SimCosts`: each
engine's cost per micro-op, a load's latency and bytes over the SM's share
of bandwidth, a hand-off's latency between SMs, as measured on an H200) in
the trace model of :mod:`vdir.device_runtime.trace`, exported in
Chrome/Perfetto JSON by :meth:`SimTrace.to_json`.
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.lib.stride_tricks import as_strided

from vdir import isa
from vdir.device_runtime.platform import (
    DeviceBuffer,
    LaunchOption,
    LaunchSpec,
    Platform,
    PlatformError,
)
from vdir.device_runtime.tensors import TensorView
from vdir.device_runtime.trace import Trace, TraceEvent
from vdir.families import DTYPE_BYTES, DTYPES, Family, ParamWords, TileSig, family_by_opcode
from vdir.target import EngineKind, TargetDescription, get_target

if TYPE_CHECKING:
    from vdir.lowering.options import LoweringOptions

#: Element sizes of tile dtypes; "u8" is the raw byte tile of a load or store.
_ELEMENT_BYTES = {**DTYPE_BYTES, "u8": 1}
#: the element view each reduction adds in (``isa.REDUCE_*``)
_REDUCE_VIEWS = {isa.REDUCE_ADD: np.dtype(np.float32), isa.REDUCE_ADD_I64: np.dtype(np.int64)}

#: Loads each load engine may have issued but not yet completed.
DEFAULT_LOAD_WINDOW = 8
#: Shared-memory tiles start on multiples of this; it is the race-tracking granule.
SMEM_BLOCK = 128



@dataclass(frozen=True)
class SimCosts:
    """The simulator's clock: what a launch, each micro-op and each hand-off between SMs cost (µs; rates
    in bytes/µs), taken from measurements of vdir's kernel on an H200 (``docs/performance.md``).

    A micro-op occupies its engine for the engine's fixed cost (fetching and
    decoding the instruction, its waits and signals) and, on the compute
    engine, its body; a load's bytes land after ``load_latency_us``, a weight
    tile's one after another at the SM's share of ``stream_bytes_per_us``
    (a small load's beside them, :data:`SMALL_LOAD_BYTES`; with
    ``sm_stream_bytes_per_us``, the SMs draw on it together,
    :class:`BandwidthLedger`); a counter's
    release reaches a waiter on another SM ``handoff_us`` after the store
    that releases it wrote its bytes, and the store's engine is held for
    the first ``release_fence_us`` of that. The trace's times start at the launch;
    :meth:`SimPlatform.time_launches` adds ``launch_us``. The clock models
    time, it does not measure it: over the sweep's gemvs and MLPs, the MLP
    stack and the 1B decode step it lands within about 0.8-1.03x of the H200's
    medians, and it ranks placement and tiling variants of the 1B and 3B decode steps
    as the GPU did, but not every lever (rounds 32 and 33 of the performance log), nor the tilings
    of a shape it was not fitted to: on the Qwen3-0.6B step it gets the sign of four of seven
    wrong (round 44: a release there waits for its SM's weight tiles in flight, not a fixed time).
    """

    launch_us: float = 3.5
    """A launch's fixed cost, any kernel's (round 21)."""
    load_issue_us: float = 0.47
    """The load engines' cost per micro-op, alone and without waits (rounds 19, 20)."""
    load_latency_us: float = 0.3
    """From a load's issue to its first bytes (fitted: the large gemvs stream at the full rate with two
    weight slots)."""
    compute_fixed_us: float = 0.475
    """The compute engine's cost per micro-op outside the body (a tiny add, the compute engine alone:
    474 ns with the signal warp, 520 without; rounds 20 and 34)."""
    smem_bytes_per_us: float = 1.4e5
    """A compute body's shared-memory bytes per µs (fitted to round 20's gemv tiles: 16 x 1024 1.02 µs,
    16 x 2048 1.26, 8 x 1024 0.95)."""
    store_fixed_us: float = 0.47
    """The store engine's cost per micro-op (round 20)."""
    store_latency_us: float = 0.5
    """From a store's start to its bytes being written."""
    handoff_us: float = 2.0
    """From a releasing store's bytes to a waiter on another SM seeing its release, while the SMs stream
    (the first ``release_fence_us`` of it in the store's span; fitted: the
    1B step; rounds 29-30's probes: a round trip through global memory 0.9 µs idle, 1.9-3.3 µs under load,
    and a releasing store that waits behind its SM's loads in flight, round 33)."""
    release_fence_us: float = 1.6
    """How long a store that releases a counter holds its store engine past its bytes (at most
    ``handoff_us``): the release's fence waits for the SM's memory operations in flight (round 8: 0.64
    µs idle, 2.2 µs with a weight tile in flight). Part of ``handoff_us``, not added to it: a waiter sees
    the release ``handoff_us`` after the bytes whatever this is; what the fence costs is the next
    store's wait behind it on that engine, the cost of each extra tile of a finer tiling (fitted: the 3B
    step in 8-row tiles, 4.5% slower than its default on the H100, modelled 1.0% faster without it and
    2.8% slower with it; round 41). 0: the engine is free when the bytes are written."""
    flag_word_handoff_us: float = 2.4
    """From a flag-word store's end to a waiter on another SM having polled its words (fitted: the 1B
    step with ``flag-words=4096`` ran 2.2% slower than with counters on the H200, modelled 3.0%; round
    33). The words are
    relaxed stores that still reach L2 behind the SM's loads, and a poll that finds them missing costs
    a round trip: the GPU's trace has these hand-offs at 1.2-5.2 µs from the store's end."""
    stream_bytes_per_us: float | None = None
    """The bandwidth the SMs' loads share; None: the target's ``hbm_bytes_per_us``."""
    sm_stream_bytes_per_us: float | None = None
    """The most one SM's weight tiles stream at while the others leave bandwidth spare (the bytes its ring
    keeps in flight over a round trip); the SMs then draw on ``stream_bytes_per_us`` together, time
    bucket by time bucket (:class:`BandwidthLedger`). None: each SM streams at its fixed share of
    ``stream_bytes_per_us`` whatever the others do."""

    def stream_rate(self, target: TargetDescription) -> float:
        """The bytes per µs the SMs' loads share on ``target``: ``stream_bytes_per_us``, else the target's HBM."""
        return self.stream_bytes_per_us or target.hbm_bytes_per_us

    def engine_fixed_us(self, kind: EngineKind) -> float:
        """What any record costs an engine of ``kind`` besides its own work: the compute's and the
        store's fixed costs; 0 for a load engine, whose cost is charged where it issues (``load_issue_us``)."""
        return {EngineKind.COMPUTE: self.compute_fixed_us, EngineKind.STORE: self.store_fixed_us}.get(kind, 0.0)


#: a load of at most this many bytes (a row handed between SMs, a residual slice) lands its latency
#: after its issue, its requests interleaved with the SM's weight tiles in flight, where a larger one
#: (a weight tile) queues behind them for the SM's share of the bandwidth. The simulator runs its
#: engines in an order of its own choosing, not in time order, so without this a small load queued
#: behind tiles that the run had already landed, often tiles issued later than itself: on the 1B step,
#: a median 1.5 µs and a tenth of them over 8 µs late, which the fitted costs had made up for
#: (round 33).
SMALL_LOAD_BYTES = 16384
#: the clock of each target: the H200's figures with its measured streaming rate (round 25: 4.49 TB/s between
#: the two largest gemvs); the H100's own figures where it has them (round 61 of the performance log):
#: the compute and store engines' cost per micro-op (a tiny add, each engine alone, round 58), the
#: streaming rate measured as the H200's was (3.18 TB/s between 8192 x 8192 and 28672 x 8192, round 58),
#: and a launch's fixed cost as the H200's scaled by the two GPUs' empty launches between events (4.13
#: µs against 3.9, rounds 58 and 29)
SIM_COSTS: dict[str, SimCosts] = {
    "h200": SimCosts(stream_bytes_per_us=4.49e6),
    "h100": SimCosts(launch_us=3.7, compute_fixed_us=0.458, store_fixed_us=0.49, stream_bytes_per_us=3.18e6),
}
#: the clock of a target with no figures of its own (the same SM, the kernel's per-micro-op costs)
DEFAULT_COSTS = SimCosts()


class BandwidthLedger:
    """The bandwidth the SMs' weight tiles have taken, per :data:`LEDGER_BUCKET_US` of launch time.

    A tile streams from when its bytes may start, each bucket at the SM's
    peak rate or what the bucket has left, whichever is less: an SM whose
    phase has more tiles than the others' streams faster once they idle,
    and all SMs streaming together share the HBM's rate. A bucket serves
    the tiles in the order they are simulated, so with a ledger the
    simulator takes its actions in time order (:meth:`Simulation.run`):
    taken at random, a tile simulated late found the buckets of its own time
    taken by tiles of later times, and the holes it left stayed empty (the
    largest gemvs 8-9% slower than with a fixed share, round 40 of
    ``docs/performance.md``).
    """

    def __init__(self, bytes_per_us: float, sm_bytes_per_us: float, bucket_us: float):
        self.bucket_us = bucket_us
        self.capacity = bytes_per_us * bucket_us
        self.sm_bytes_per_us = sm_bytes_per_us
        self.used: list[float] = []

    def stream(self, start: float, nbytes: float) -> float:
        """Take ``nbytes`` for one SM from ``start`` on; returns when the last byte lands."""
        w, t, left, peak_bytes_per_us = self.bucket_us, start, float(nbytes), self.sm_bytes_per_us
        b = int(t / w)
        while True:
            if b >= len(self.used):
                self.used.extend([0.0] * (b + 1 - len(self.used)))
            span = (b + 1) * w - t
            rate = min(peak_bytes_per_us, (self.capacity - self.used[b]) / span) if span > 0 else 0.0
            if rate > 0 and left <= rate * span:
                self.used[b] += left
                return t + left / rate
            if rate > 0:
                self.used[b] += rate * span
                left -= rate * span
            b += 1
            t = b * w


#: the time bucket of :class:`BandwidthLedger` (µs): a fraction of a 64 KiB tile's time at an SM's share
LEDGER_BUCKET_US = 0.25


def costs_for(target: TargetDescription) -> SimCosts:
    """The clock the simulator keeps for ``target`` (:data:`SIM_COSTS`, else :data:`DEFAULT_COSTS`)."""
    return SIM_COSTS.get(target.name, DEFAULT_COSTS)

#: Shared readers of a global buffer are tracked per load engine (per SM and
#: engine that runs loads) only while the tracking table stays below this many
#: entries (beyond it, write-after-read on that buffer is not checked;
#: read-after-write and write-after-write are).
MAX_READER_TABLE = 64 * 1024 * 1024


class SimProgramError(PlatformError):
    """The encoded program is malformed (bad opcode, region out of bounds, bad operands)."""


class SimRaceError(PlatformError):
    """Two micro-ops touch the same bytes without a dependency ordering them."""


class SimBoundsError(PlatformError):
    """A runtime offset (a scalar or a value read from memory) left its checked range.

    The GPU kernel stops the launch with the same report (``ERR_BOUNDS``).
    """


class SimDeadlockError(PlatformError):
    """No engine can make progress while some queues are unfinished."""


# ---------------------------------------------------------------------------
# Decoding: the instruction array becomes plain Python objects once, up front.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Region:
    """Rows of a row-major buffer: ``rows`` rows of ``row_bytes`` bytes, ``stride`` apart."""

    offset: int
    rows: int
    row_bytes: int
    stride: int

    @property
    def nbytes(self) -> int:
        return self.rows * self.row_bytes

    @property
    def end(self) -> int:
        """One past the last byte touched."""
        return self.offset + (self.rows - 1) * self.stride + self.row_bytes if self.rows else self.offset


@dataclass(frozen=True)
class TileRef:
    """A dense tile in shared memory: where it starts, its shape and dtype.

    ``nbytes`` and ``blocks`` (the range of :data:`SMEM_BLOCK` granules the
    tile covers) are computed once: every step reads them.
    """

    smem: int
    shape: tuple[int, int]
    dtype: str
    nbytes: int = field(init=False)
    blocks: tuple[int, int] = field(init=False)

    def __post_init__(self) -> None:
        nbytes = self.shape[0] * self.shape[1] * _ELEMENT_BYTES[self.dtype]
        object.__setattr__(self, "nbytes", nbytes)
        object.__setattr__(self, "blocks", (self.smem // SMEM_BLOCK, -(-(self.smem + nbytes) // SMEM_BLOCK)))


class Op:
    """One decoded micro-op with everything a step needs, precomputed."""

    __slots__ = (
        "pos", "opcode", "uop_id", "wait_mask", "wait_parity", "signal_mask",
        "wait_counter", "wait_count", "release_counter",
        "buffer", "region", "tile",  # load / store
        "family", "inputs", "out", "params",  # compute
        "latency_us", "busy_us", "hold_us",
        "guard", "dyn",  # runtime values: (source, index, coeff, const), (source, index, scale, min, max)
        "sources",  # per shared-memory tile read: the writers it reads in program order (see SlotSources)
        "reduce",  # a store's reduction (isa.REDUCE_*)
        "flag_words",  # a load or store of the buffer's flag words (isa.TRANSFER_FLAG_WORDS)
    )
    # set by the decoder only for the kinds that have them: region and tile
    # for loads and stores, family and out for computes
    region: Region
    tile: TileRef
    family: Family
    out: TileRef
    #: the runtime condition (source, index, coeff, const) and runtime offset
    #: (source, index, scale, min, max), when the instruction has them
    guard: tuple[int, ...] | None
    dyn: tuple[int, ...] | None
    #: for each tile the micro-op reads (a compute's inputs, a store's source),
    #: which micro-op's bytes it must see; None where program order is unknown
    sources: tuple[SlotSources | None, ...] | None

    def __init__(self, pos: int, words: list[int]):
        self.pos = pos
        self.opcode = isa.OPCODE.get(words)
        self.uop_id = isa.UOP_ID.get(words)
        self.wait_mask = isa.WAIT_MASK.get(words)
        self.wait_parity = isa.WAIT_PARITY.get(words) & self.wait_mask
        self.signal_mask = isa.SIGNAL_MASK.get(words)
        self.wait_counter = isa.WAIT_COUNTER.get(words) - 1  # -1: none
        self.wait_count = isa.WAIT_COUNT.get(words)
        self.release_counter = isa.RELEASE_COUNTER.get(words) - 1
        self.guard = None
        if isa.GUARD_SOURCE.get(words):
            self.guard = tuple(f.get(words) for f in (isa.GUARD_SOURCE, isa.GUARD_INDEX, isa.GUARD_COEFF,
                                                      isa.GUARD_CONST))
        self.dyn = None
        self.sources = None
        self.reduce = isa.REDUCE.get(words)
        self.flag_words = False
        self.buffer = -1
        self.inputs: tuple[TileRef, ...] = ()
        self.params: dict = {}
        # cost model (SimCosts): the result is ready latency_us after the start, and the
        # engine (or, for loads, the SM's share of bandwidth) is busy busy_us, then held hold_us more
        # past the result (a releasing store's fence)
        self.latency_us = 0.0
        self.busy_us = 0.0
        self.hold_us = 0.0


def _compute_operands(words: list[int]) -> tuple[Family, tuple[TileRef, ...], TileRef, dict]:
    """Family, input tiles, output tile and parameters of a compute instruction.

    The ISA gives only offsets and the family's parameter words; the family
    decodes the operand shapes and parameters from those
    (:meth:`~vdir.families.Family.decode_operands`). A ``FamilyError``
    (a ``ValueError``) says when they do not fit the family.
    """
    fam_code = isa.FAMILY.get(words)
    family = family_by_opcode(fam_code)
    if family is None:
        raise ValueError(f"unknown family opcode {fam_code}")
    sig = family.decode_operands(ParamWords.read(words))
    for what, t in [*((f"input {i}", t) for i, t in enumerate(sig.inputs)), ("result", sig.result)]:
        if 0 in t.shape:
            raise ValueError(f"family '{family.name}': its {what} is an empty {'x'.join(map(str, t.shape))} tile")
    count = isa.NUM_INPUTS.get(words)
    if count != len(sig.inputs):
        raise ValueError(f"family '{family.name}' here takes {len(sig.inputs)} inputs, the instruction has {count}")
    inputs = tuple(TileRef(field.get(words), t.shape, t.dtype) for field, t in zip(isa.IN_SMEM, sig.inputs, strict=False))
    params = dict(sig.params)
    family.check(list(sig.inputs), params, sig.result)
    return family, inputs, TileRef(isa.OUT_SMEM.get(words), sig.result.shape, sig.result.dtype), params


@dataclass
class DecodedProgram:
    """An :class:`~vdir.isa.EncodedProgram` decoded and validated for the simulator.

    ``ops[sm][engine]`` is the queue as a list of :class:`Op`. ``tracked``
    maps each buffer that some store writes, and each ``scratch`` one, to the
    byte granule its accesses share (race tracking on global memory is exact
    at that granularity).
    """

    program: isa.EncodedProgram
    ops: list[list[list[Op]]]
    buffer_bytes: list[int]
    tracked: dict[int, int]
    target: TargetDescription
    #: the clock the launch keeps (:func:`costs_for` the target)
    costs: SimCosts
    #: per SM: micro-op id -> (engine, queue position) of every shared-memory
    #: writer, for naming the writers a stale read expected or saw
    writers: list[dict[int, tuple[int, int]]] = field(default_factory=list)
    #: the load engines (queue indices) that hold a load on some SM: the race
    #: checker tracks the global-memory readers of these only, so that a load
    #: engine a program leaves empty costs no reader table
    reading_engines: tuple[int, ...] = ()
    #: the buffers some commuting reducing store adds into (``isa.COMMUTING_REDUCTIONS``): the race checker
    #: keeps their adders apart (:class:`GlobalTracker`)
    summed: frozenset[int] = frozenset()

    def describe(self, sm: int, engine: int, pos: int) -> str:
        """The program's readable name of a queue position."""
        return self.program.describe(sm, engine, pos)


def decode_program(program: isa.EncodedProgram, target: TargetDescription, costs: SimCosts | None = None,
                   ) -> DecodedProgram:
    """Decode every queue once and check what the kernel would trust blindly; its clock is ``costs``
    (None: :func:`costs_for` the target).

    Raises :class:`SimProgramError` naming the micro-op for a bad opcode, an
    opcode on the wrong engine, a region outside its buffer or shared memory,
    or operands that do not fit the family.
    """
    try:
        program.check_counts()  # a program built in Python skips from_bytes's checks
    except ValueError as e:
        raise SimProgramError(str(e)) from None
    if len(program.queues) != program.num_sms:
        raise SimProgramError(
            f"the queue table has {len(program.queues)} SMs, the header says {program.num_sms}"
        )
    if program.num_sms > target.num_sms:
        raise SimProgramError(f"the program uses {program.num_sms} SMs, target '{target.name}' has {target.num_sms}")
    if isa.KERNEL_RESERVED_SMEM + program.smem_bytes > target.smem_per_block:
        raise SimProgramError(
            f"the program's tiles need {program.smem_bytes} bytes of shared memory per SM "
            f"(plus {isa.KERNEL_RESERVED_SMEM} the kernel keeps), target '{target.name}' "
            f"allows {target.smem_per_block}"
        )
    for engine in target.load_engines:
        others = target.engines[engine].runs - {"load"}
        if others:  # its other micro-ops would be dropped: the load pipeline runs only loads and nops
            raise SimProgramError(
                f"the {target.engines[engine].name} engine of target '{target.name}' runs loads and "
                f"{', '.join(sorted(others))}; the simulator runs an engine that loads as a pipeline of loads only"
            )
    buffer_bytes = [math.prod(b.shape) * DTYPE_BYTES[b.dtype] for b in program.buffers]
    records = np.ascontiguousarray(program.instrs, dtype=np.uint32).reshape(-1, isa.INSTR_WORDS)
    costs = costs_for(target) if costs is None else costs
    bw_per_sm = costs.stream_rate(target) / max(target.num_sms, 1)
    load_bytes_per_us = costs.sm_stream_bytes_per_us or bw_per_sm
    ops: list[list[list[Op]]] = []
    for sm in range(program.num_sms):
        sm_ops = []
        if len(program.queues[sm]) != target.num_engines:
            raise SimProgramError(
                f"SM {sm} has {len(program.queues[sm])} queues, target '{target.name}' has "
                f"{target.num_engines} engines"
            )
        for engine in range(target.num_engines):
            words = _executed_words(program, records, sm, engine, target)
            queue = []
            for pos in range(len(words)):
                try:
                    op = _decode_op(pos, words[pos], engine, program, buffer_bytes, target, costs, bw_per_sm,
                                    load_bytes_per_us)
                except ValueError as e:
                    raise SimProgramError(f"{program.describe(sm, engine, pos)}: {e}") from None
                queue.append(op)
            sm_ops.append(queue)
        ops.append(sm_ops)
    writers = [derive_slot_sources(sm_ops, program.smem_bytes) for sm_ops in ops]
    reading = tuple(
        e for e in target.load_engines if any(op.opcode == isa.OP_LOAD for sm_ops in ops for op in sm_ops[e])
    )
    scratch = {b for b, info in enumerate(program.buffers) if info.role == "scratch"}
    summed = frozenset(op.buffer for sm_ops in ops for queue in sm_ops for op in queue
                       if op.opcode == isa.OP_STORE and op.reduce in isa.COMMUTING_REDUCTIONS)
    return DecodedProgram(program, ops, buffer_bytes, _tracked_buffers(ops, buffer_bytes, scratch), target, costs,
                          writers, reading, summed)


def _executed_words(
    program: isa.EncodedProgram, records: np.ndarray, sm: int, engine: int, target: TargetDescription
) -> list[list[int]]:
    """The words of every instruction the queue executes, its loops unrolled (``isa.expand_queue``).

    Raises :class:`SimProgramError` naming the queue for a table entry past
    the instructions or a malformed loop record.
    """
    start, count = program.queues[sm][engine]
    name = target.engines[engine].name
    if start + count > len(records):
        raise SimProgramError(f"SM {sm} {name} queue runs past the instruction array")
    try:
        return isa.expand_queue(records[start : start + count]).tolist()
    except isa.LoopFormError as e:
        raise SimProgramError(str(isa.LoopFormError(e.record, e.reason, f"SM {sm} {name} queue"))) from None


def _decode_op(
    pos: int,
    words: list[int],
    engine: int,
    program: isa.EncodedProgram,
    buffer_bytes: list[int],
    target: TargetDescription,
    costs: SimCosts,
    bw_per_sm: float,
    load_bytes_per_us: float,
) -> Op:
    """Decode and validate one instruction (ValueError with the reason on failure), with its costs: a
    store's bytes at ``bw_per_sm``, a load's at ``load_bytes_per_us``."""
    op = Op(pos, words)
    op.busy_us = costs.engine_fixed_us(target.engines[engine].kind)
    if op.opcode not in isa.engine_opcodes(target.engines[engine]):
        name = isa.OPCODE_NAMES.get(op.opcode, f"opcode {op.opcode}")
        raise ValueError(f"a {name} instruction cannot run on the {target.engines[engine].name} engine")
    if (op.wait_mask | op.signal_mask) >> program.bitmap_bits:
        raise ValueError(f"uses dependency bits beyond the {program.bitmap_bits}-bit bitmap")
    for counter in (op.wait_counter, op.release_counter):
        if counter >= program.num_counters:
            raise ValueError(f"counter {counter} is out of range ({program.num_counters} counters)")
    if op.guard is not None:
        _check_source(op.guard[0], op.guard[1], program, buffer_bytes, "its condition")
    if (why := isa.reduction_error(words, program.buffers)) is not None:
        raise ValueError(why)
    if op.opcode == isa.OP_PREFETCH:
        return _decode_prefetch(op, words, program, buffer_bytes)
    if op.opcode in (isa.OP_LOAD, isa.OP_STORE):
        _decode_transfer(op, words, program, buffer_bytes)
        op.latency_us = costs.load_latency_us if op.opcode == isa.OP_LOAD else costs.store_latency_us
        op.busy_us += op.region.nbytes / (load_bytes_per_us if op.opcode == isa.OP_LOAD else bw_per_sm)
        if op.opcode == isa.OP_STORE and op.release_counter >= 0:  # its fence: part of the hand-off, never more
            op.hold_us = min(costs.release_fence_us, costs.handoff_us)
    elif op.opcode == isa.OP_COMPUTE:
        op.family, op.inputs, op.out, op.params = _compute_operands(words)
        for tile in (*op.inputs, op.out):
            _check_tile(tile, program.smem_bytes)
        smem_bytes, flops = op.family.cost(
            [TileSig(t.shape, t.dtype) for t in op.inputs], TileSig(op.out.shape, op.out.dtype)
        )
        op.busy_us += flops / target.flops_per_us_per_sm + smem_bytes / costs.smem_bytes_per_us
    return op


def _decode_prefetch(op: Op, words: list[int], program: isa.EncodedProgram, buffer_bytes: list[int]) -> Op:
    """Check a prefetch record (a compile-time region in bounds, nothing else) and run it as a ``nop``.

    It changes no value and no order: the simulator has no cache to warm.
    """
    if op.wait_mask or op.signal_mask or op.wait_counter >= 0 or op.release_counter >= 0 or op.guard is not None:
        raise ValueError("a prefetch record waits, signals or has a condition; it may only name a region")
    if isa.DYN_SOURCE.get(words):
        raise ValueError("a prefetch record has a runtime offset; its region must be a compile-time one")
    op.buffer = isa.BUFFER.get(words)
    if op.buffer >= len(program.buffers):
        raise ValueError(f"buffer index {op.buffer} is out of range ({len(program.buffers)} buffers)")
    region = Region(isa.GLOBAL_OFFSET.get(words), isa.ROWS.get(words), isa.ROW_BYTES.get(words),
                    isa.ROW_STRIDE.get(words))
    _check_region_bounds(region, region, buffer_bytes[op.buffer], program.buffers[op.buffer].name)
    nop = Op(op.pos, [0] * isa.INSTR_WORDS)
    nop.uop_id = op.uop_id
    return nop


def _decode_transfer(op: Op, words: list[int], program: isa.EncodedProgram, buffer_bytes: list[int]) -> None:
    """Fill the buffer, global region and shared-memory tile of a load or store."""
    op.buffer = isa.BUFFER.get(words)
    if op.buffer >= len(program.buffers):
        raise ValueError(f"buffer index {op.buffer} is out of range ({len(program.buffers)} buffers)")
    offset = isa.GLOBAL_OFFSET.get(words)
    op.region = Region(offset, isa.ROWS.get(words), isa.ROW_BYTES.get(words), isa.ROW_STRIDE.get(words))
    name = program.buffers[op.buffer].name
    if op.region.rows > 1 and op.region.stride < op.region.row_bytes:
        raise ValueError(f"rows of {op.region.row_bytes} bytes overlap with a stride of {op.region.stride}")
    if isa.TRANSFER_FLAGS.get(words) & isa.TRANSFER_FLAG_WORDS:
        _decode_flag_words(op, words, program)
        return
    if isa.DYN_SOURCE.get(words):
        op.dyn = tuple(f.get(words) for f in (isa.DYN_SOURCE, *isa.DYNAMIC_FIELDS))
        _check_source(op.dyn[0], op.dyn[1], program, buffer_bytes, "its offset")
        _, _, scale, vmin, vmax = op.dyn
        if vmin > vmax:
            raise ValueError(f"runtime offset range {vmin}..{vmax} is empty")
        for v in (vmin, vmax):  # a region is in bounds at both ends of the range, so at every value
            _check_region_bounds(runtime_region(op.region, scale, v), op.region, buffer_bytes[op.buffer], name)
        _decode_tile(op, words, program)
        return
    _check_region_bounds(op.region, op.region, buffer_bytes[op.buffer], name)
    _decode_tile(op, words, program)


def _decode_flag_words(op: Op, words: list[int], program: isa.EncodedProgram) -> None:
    """A flag-word load or store (``isa.TRANSFER_FLAG_WORDS``): its region is its words in the sync
    block (``isa.check_flag_words``'s rules), its tile as any load's or store's."""
    why = isa.flag_word_error(np.asarray(words, dtype=np.uint32), len(program.buffers),
                              isa.flag_words_start(program.num_counters), program.sync_bytes)
    if why is not None:
        raise ValueError(why)
    op.flag_words = True
    _decode_tile(op, words, program)


def flag_word_views(sync: np.ndarray, region: Region) -> tuple[np.ndarray, np.ndarray]:
    """(data, epochs): the u32 views, ``rows`` x ``row_bytes / 4``, of the flag words of ``region`` in the
    sync block's words ``sync`` (``isa.TRANSFER_FLAG_WORDS``)."""
    item = sync.strides[-1]
    per_row = region.row_bytes // isa.FLAG_WORD_DATA
    base = sync[region.offset // isa.WORD_BYTES:]
    shape, strides = (region.rows, per_row), (2 * region.stride // isa.WORD_BYTES * item, 2 * item)
    return as_strided(base, shape, strides), as_strided(base[1:], shape, strides)


def runtime_region(base: Region, scale: int, value: int) -> Region:
    """The region a runtime offset of ``value`` units of ``scale`` bytes selects (offsets wrap like the u64 field)."""
    return Region((base.offset + value * scale) % 2**64, base.rows, base.row_bytes, base.stride)


def _check_region_bounds(region: Region, encoded: Region, nbytes: int, name: str) -> None:
    if region.offset >= 2**63 or region.end > nbytes:
        lo = region.offset - 2**64 if region.offset >= 2**63 else region.offset
        raise ValueError(f"region [{lo}, {lo + region.end - region.offset}) is outside buffer '{name}' ({nbytes} bytes)")


def _check_source(source: int, index: int, program: isa.EncodedProgram, buffer_bytes: list[int], what: str) -> None:
    """A runtime value's source names a scalar slot or an i32 element that exists."""
    if source == isa.SOURCE_SCALAR:
        if index >= len(program.scalars):
            raise ValueError(f"{what} reads scalar {index}; the program has {len(program.scalars)}")
        return
    b = source - isa.SOURCE_BUFFER0
    if b >= len(program.buffers):
        raise ValueError(f"{what} reads buffer #{b}; the program has {len(program.buffers)}")
    if program.buffers[b].dtype != "i32" or 4 * index + 4 > buffer_bytes[b]:
        raise ValueError(f"{what} reads element {index} of '{program.buffers[b].name}', not an i32 element of it")


def _decode_tile(op: Op, words: list[int], program: isa.EncodedProgram) -> None:
    op.tile = TileRef(isa.SMEM.get(words), (op.region.rows, op.region.row_bytes), "u8")
    _check_tile(op.tile, program.smem_bytes)


def _check_tile(tile: TileRef, smem_bytes: int) -> None:
    if tile.smem % SMEM_BLOCK:
        raise ValueError(f"shared-memory offset {tile.smem} is not a multiple of {SMEM_BLOCK}")
    if tile.smem + tile.nbytes > smem_bytes:
        raise ValueError(
            f"tile [{tile.smem}, {tile.smem + tile.nbytes}) is outside shared memory ({smem_bytes} bytes)"
        )


def _tracked_buffers(ops, buffer_bytes: list[int], scratch: set[int]) -> dict[int, int]:
    """Buffers some store writes, and the ``scratch`` ones (whose every read needs a writer in the launch)
    → the largest granule dividing every access to them."""
    written = {op.buffer for sm in ops for queue in sm for op in queue if op.opcode == isa.OP_STORE} | scratch
    granule = {b: buffer_bytes[b] for b in written}
    for sm in ops:
        for queue in sm:
            for op in queue:
                for source in (op.guard, op.dyn):  # an address read is a 4-byte access
                    b = source[0] - isa.SOURCE_BUFFER0 if source is not None else -1
                    if b in granule:
                        granule[b] = math.gcd(granule[b], 4 * source[1], 4)  # type: ignore[index]
                if op.opcode in (isa.OP_LOAD, isa.OP_STORE) and op.buffer in granule and op.region.rows \
                        and not op.flag_words:
                    r = op.region
                    g = math.gcd(granule[op.buffer], r.offset, r.row_bytes, op.dyn[2] if op.dyn else 0)
                    granule[op.buffer] = math.gcd(g, r.stride) if r.rows > 1 else g
    return {b: max(g, 1) for b, g in granule.items()}


# ---------------------------------------------------------------------------
# Tile provenance: which micro-op's bytes each shared-memory read must see.
# ---------------------------------------------------------------------------

#: A candidate writer meaning "no micro-op": the read sees bytes nothing wrote.
NO_WRITER = -1
#: A candidate meaning "a writer the check does not follow" (a chain of more
#: than MAX_CANDIDATES conditional writers); a read that resolves to it is not checked.
UNKNOWN_WRITER = -2
#: Conditional writers kept per shared-memory block before the chain is cut short.
MAX_CANDIDATES = 64


@dataclass(frozen=True)
class SlotSources:
    """The writers whose bytes one shared-memory tile read must see.

    ``segments`` are ``(first block, end block, candidates)`` over the tile's
    :data:`SMEM_BLOCK` granules (usually one segment: one producer wrote the
    whole tile). ``candidates`` are micro-op ids, latest in program order
    first: the conditional writers since the last unconditional one, then
    that one (or :data:`NO_WRITER`). At run time the read must see the first
    candidate whose condition did not fail.
    """

    segments: tuple[tuple[int, int, tuple[int, ...]], ...]


def derive_slot_sources(sm_ops: list[list[Op]], smem_bytes: int) -> dict[int, tuple[int, int]]:
    """Set ``Op.sources`` for one SM's reads from program order; return its writers' positions.

    Program order is the order of the micro-op ids: the compiler numbers the
    micro-ops of an SM in program order (``vdir-place``), each instruction
    carries its id (``isa.UOP_ID``), and neither a queue reordering nor a
    wrong wait or signal changes it. So the tile a read must see is the last
    write of its slot in id order, whatever the synchronisation says — which
    is what finds a read of an older, properly ordered tile (a producer and
    its consumer swapped on one queue, a dependency bit reused early). When
    two micro-ops that touch shared memory share an id, the SM has no such
    order and its reads get no sources (only the happens-before checks apply).

    Returns micro-op id -> (engine, queue position) of every writer.
    """
    touching = sorted(
        ((op, engine) for engine, queue in enumerate(sm_ops) for op in queue if op.opcode != isa.OP_NOP),
        key=lambda pair: pair[0].uop_id,
    )
    if any(a[0].uop_id == b[0].uop_id for a, b in zip(touching, touching[1:], strict=False)):
        return {}
    # per block, an index into ``chains``: the candidates a read of it sees now
    state = np.zeros(-(-smem_bytes // SMEM_BLOCK), dtype=np.int64)
    chains: list[tuple[int, ...]] = [(NO_WRITER,)]
    writers: dict[int, tuple[int, int]] = {}
    for op, engine in touching:
        if op.opcode == isa.OP_COMPUTE:
            op.sources = tuple(_sources_of(state, chains, tile) for tile in op.inputs)
            written: TileRef | None = op.out
        elif op.opcode == isa.OP_STORE:
            op.sources = (_sources_of(state, chains, op.tile),)
            written = None
        else:
            written = op.tile
        if written is not None:
            writers[op.uop_id] = (engine, op.pos)
            _record_writer(state, chains, written, op)
    return writers


def _sources_of(state: np.ndarray, chains: list[tuple[int, ...]], tile: TileRef) -> SlotSources | None:
    """The candidates of each run of equal blocks under ``tile``."""
    b0, b1 = tile.blocks
    view = state[b0:b1]
    if not view.size:
        return None
    if view.min() == view.max():
        return SlotSources(((b0, b1, chains[int(view[0])]),))
    edges = [0, *(np.flatnonzero(np.diff(view)) + 1).tolist(), len(view)]
    return SlotSources(tuple((b0 + s, b0 + e, chains[int(view[s])]) for s, e in zip(edges, edges[1:], strict=False)))


def _record_writer(state: np.ndarray, chains: list[tuple[int, ...]], tile: TileRef, op: Op) -> None:
    """``op`` writes ``tile``: it heads the candidates of its blocks (alone when it has no condition)."""
    b0, b1 = tile.blocks
    view = state[b0:b1]
    if op.guard is None:
        chains.append((op.uop_id,))
        view[...] = len(chains) - 1
        return
    for old in np.unique(view).tolist():
        chain = (op.uop_id, *chains[old])
        if len(chain) > MAX_CANDIDATES:
            chain = (*chain[: MAX_CANDIDATES - 1], UNKNOWN_WRITER)
        chains.append(chain)
        view[view == old] = len(chains) - 1


# ---------------------------------------------------------------------------
# Strided views: a region of rows as an array view, bounds already checked.
# ---------------------------------------------------------------------------


def region_view(arr: np.ndarray, start: int, rows: int, cols: int, stride: int) -> np.ndarray:
    """View of ``rows`` x ``cols`` elements of the last axis of ``arr``, rows ``stride`` apart."""
    if rows <= 1 or stride == cols:  # dense: a plain slice (much cheaper than as_strided)
        return arr[..., start : start + rows * cols].reshape(arr.shape[:-1] + (rows, cols))
    item = arr.strides[-1]
    base = arr[..., start:]
    return as_strided(base, shape=arr.shape[:-1] + (rows, cols), strides=arr.strides[:-1] + (stride * item, item))


def _region_holds(region: Region, byte: int) -> bool:
    """Whether ``region`` covers the byte at offset ``byte`` of its buffer."""
    if not region.offset <= byte < region.end:
        return False
    return region.rows <= 1 or (byte - region.offset) % region.stride < region.row_bytes


def _global_view(buf: np.ndarray, region: Region) -> np.ndarray:
    return region_view(buf, region.offset, region.rows, region.row_bytes, region.stride)


# ---------------------------------------------------------------------------
# The trace.
# ---------------------------------------------------------------------------


@dataclass
class SimTrace(Trace):
    """A simulated launch's trace (:class:`~vdir.device_runtime.trace.Trace`), in the logical time of
    the cost model (µs)."""

    clock: str = "modelled: the simulator's cost model"
    #: the launch's fixed cost in this clock (:attr:`SimCosts.launch_us`), outside the events' times
    launch_us: float = 0.0

    @property
    def launch_time_us(self) -> float:
        """The modelled time of the whole launch: its fixed cost and the events' span."""
        return self.launch_us + self.makespan_us


# ---------------------------------------------------------------------------
# Race tracking.
# ---------------------------------------------------------------------------


class SmemTracker:
    """Per SM and per engine: the last queue position that wrote / read each smem block.

    Only the last position per engine matters: an engine completes in queue
    order, so a clock that covers position ``p`` covers every earlier one;
    and each write is checked to be ordered after the previous write and
    reads, so older accesses are covered transitively.
    """

    def __init__(self, smem_bytes: int, num_engines: int):
        blocks = -(-smem_bytes // SMEM_BLOCK)
        self.written = np.full((num_engines, blocks), -1, dtype=np.int64)
        self.read = np.full((num_engines, blocks), -1, dtype=np.int64)

    def unordered_writer(self, tile: TileRef, own: np.ndarray) -> tuple[int, int] | None:
        """(engine, pos) of a write to ``tile`` that ``own`` (the SM's local clock entries) misses.

        ``(-1, -1)`` when every write is ordered but some block was never written.
        """
        b0, b1 = tile.blocks
        last = self.written[:, b0:b1]
        latest = last.max(axis=1)
        for engine in range(len(latest)):
            if latest[engine] >= 0 and own[engine] <= latest[engine]:
                return engine, int(latest[engine])
        return (-1, -1) if last.max(axis=0).min() < 0 else None

    def unordered_access(self, tile: TileRef, own: np.ndarray) -> tuple[str, int, int] | None:
        """("read"/"write", engine, pos) of an earlier access a write to ``tile`` is not ordered after."""
        b0, b1 = tile.blocks
        for kind, table in (("read", self.read), ("write", self.written)):
            latest = table[:, b0:b1].max(axis=1)
            for engine in range(len(latest)):
                if latest[engine] >= 0 and own[engine] <= latest[engine]:
                    return kind, engine, int(latest[engine])
        return None

    def record(self, table: np.ndarray, tile: TileRef, engine: int, pos: int) -> None:
        """Note that queue position ``pos`` of ``engine`` read or wrote (``table``) ``tile``."""
        b0, b1 = tile.blocks
        table[engine, b0:b1] = pos


class GlobalTracker:
    """Last writer and, per load engine, last reader of each granule of one stored-to buffer.

    ``readers`` has one row per load engine of the launch (``reader_rows``;
    :attr:`Simulation.reader_engines` says which engine a row is): the last
    queue position of that engine that loaded each granule. As for shared
    memory, the last position suffices: a load engine completes in its queue
    order. None when the program has no loads (nothing to track) or when the
    table would pass :data:`MAX_READER_TABLE` entries.

    ``adders`` has one row per engine of the launch, for a buffer that
    commuting reducing stores (``isa.COMMUTING_REDUCTIONS``) add into: the
    last queue position of that engine that added into each granule since
    the granule's last plain write. Those adds need no order among
    themselves, so they are kept apart from the last writer: a later read or
    plain write must know every one of them; a later add only the plain
    writer and the readers. None where no such store exists or the table
    would pass :data:`MAX_READER_TABLE` entries (the adds are then not
    checked).
    """

    def __init__(self, nbytes: int, granule: int, reader_rows: int, adder_rows: int = 0):
        self.granule = granule
        n = max(nbytes // granule, 1)
        self.writer_engine = np.full(n, -1, dtype=np.int64)  # global engine id
        self.writer_pos = np.full(n, -1, dtype=np.int64)
        tracked = 0 < n * reader_rows <= MAX_READER_TABLE
        self.readers = np.full((reader_rows, n), -1, dtype=np.int64) if tracked else None
        added = 0 < n * adder_rows <= MAX_READER_TABLE
        self.adders = np.full((adder_rows, n), -1, dtype=np.int64) if added else None
        #: i32 element read as a runtime value -> per global engine, the last queue position that read it
        self.value_readers: dict[int, np.ndarray] = {}

    def view(self, table: np.ndarray, region: Region) -> np.ndarray:
        """The entries of ``table`` (last axis: granules) that ``region`` covers, as rows x granules."""
        g = self.granule
        return region_view(table, region.offset // g, region.rows, region.row_bytes // g, region.stride // g)


# ---------------------------------------------------------------------------
# The simulation of one launch.
# ---------------------------------------------------------------------------


class Simulation:
    """One launch of a decoded program over host byte arrays.

    ``buffers`` are the program's arguments as uint8 arrays (modified in
    place), ``sync`` the program's sync block (u32, modified in place): the
    launch state (``isa.SYNC_*``: each CTA's finish count, the launches
    done; the epoch is that + 1, and a launch that completes adds one to the
    count of each of its SMs, ``isa.finish_launch``) and the global counters.
    """

    def __init__(
        self,
        decoded: DecodedProgram,
        buffers: list[np.ndarray],
        sync: np.ndarray,
        seed: int = 0,
        load_window: int = DEFAULT_LOAD_WINDOW,
        check_races: bool = True,
        scalars: tuple[int, ...] = (),
    ):
        prog = decoded.program
        self.decoded = decoded
        if len(scalars) != len(prog.scalars):
            raise PlatformError(f"the program takes {len(prog.scalars)} scalars, the launch gives {len(scalars)}")
        self.scalars = [int(v) for v in scalars]
        for sc, v in zip(prog.scalars, self.scalars, strict=True):
            if not sc.lo <= v < sc.hi:  # the kernel's prologue check (a device-written block)
                raise PlatformError(f"launch-time scalar '{sc.name}' = {v} is outside its range {sc.lo} to {sc.hi}")
        self.buffers = buffers
        if len(sync) != prog.sync_bytes // isa.WORD_BYTES:
            raise PlatformError(f"the sync block has {len(sync)} words; the program's has "
                                f"{prog.sync_bytes // isa.WORD_BYTES}")
        self.sync = sync
        self.counters = sync[isa.SYNC_HEADER_WORDS : isa.SYNC_HEADER_WORDS + prog.num_counters]
        self.epoch = isa.launch_epoch(sync)
        self.rng = random.Random(seed)
        self.load_window = max(int(load_window), 1)
        self.check_races = check_races
        n = prog.num_sms
        #: engines per SM (E); global engine g is engine g % E of SM g // E
        self.per_sm = E = decoded.target.num_engines
        #: per engine of an SM, whether it is a load engine (``TargetDescription.load_engines``): a pipeline
        #: that keeps up to load_window loads in flight and completes them in its queue order
        self.is_load_engine = [e in decoded.target.load_engines for e in range(E)]
        #: per engine of an SM, what a compute or store whose condition fails costs it: the engine's
        #: fixed cost (the kernel still fetches it, waits and signals, but runs no body); a skipped load
        #: takes its issue instead (:meth:`_complete_load`)
        self.skipped_us = [decoded.costs.engine_fixed_us(decoded.target.engines[e].kind) for e in range(E)]
        self.num_engines = n * E
        loading = [g for g in range(self.num_engines) if self.is_load_engine[g % E]]
        #: the load engines that hold loads (global ids, SM by SM): the rows of GlobalTracker.readers
        self.reader_engines = np.array(
            [E * sm + e for sm in range(n) for e in decoded.reading_engines], dtype=np.int64
        )
        self.reader_row = {int(g): row for row, g in enumerate(self.reader_engines)}
        self.smem = [np.zeros(prog.smem_bytes, dtype=np.uint8) for _ in range(n)]
        self.bitmap = [0] * n
        self.head = [0] * self.num_engines
        # per load engine (global id), its issued loads not yet completed, oldest first
        self.in_flight: dict[int, deque] = {g: deque() for g in loading}
        self.queues = [decoded.ops[g // E][g % E] for g in range(self.num_engines)]
        # vector clocks: row g is what engine g's next micro-op knows
        self.clock = np.zeros((self.num_engines, self.num_engines), dtype=np.int64)
        # per load engine, what its completed loads publish: they complete in its queue order,
        # so the latest completion also publishes the earlier ones
        self.load_done_clock = {g: np.zeros(self.num_engines, dtype=np.int64) for g in loading}
        self.bit_clock: dict[tuple[int, int], np.ndarray] = {}
        # per counter, the join of the clocks of its first k releases of this launch, at index k - 1:
        # a wait for k releases knows exactly those, however many more have come when it passes
        self.release_clocks: list[list[np.ndarray]] = [[] for _ in range(prog.num_counters)]
        self.smem_track = [SmemTracker(prog.smem_bytes, E) for _ in range(n)] if check_races else []
        # tile provenance: per SM and block, the id of the micro-op whose bytes the block holds,
        # and the ids of the conditional writers whose condition failed
        self.slot_writer = [np.full(len(t.written[0]), NO_WRITER, dtype=np.int64) for t in self.smem_track]
        self.skipped: list[set[int]] = [set() for _ in range(n)]
        self.unwritten_reads: list[tuple[int, int, int, TileRef]] = []
        self.global_track = {
            b: GlobalTracker(decoded.buffer_bytes[b], g, len(self.reader_engines),
                             self.num_engines if b in decoded.summed else 0)
            for b, g in decoded.tracked.items()
        } if check_races else {}
        # logical time
        self.engine_free = [0.0] * self.num_engines
        # per load engine, when each of its loads landed, in queue order (a window slot frees then)
        self.load_ends: dict[int, list[float]] = {g: [] for g in loading}
        # per SM, when the last load to land on it finished landing: its load engines share its bandwidth
        self.landed = [0.0] * n
        costs = decoded.costs
        # with the ledger, the ready actions by when each can happen (time, sequence, action)
        self.timeline: list[tuple[float, int, int]] = []
        self.timeline_seq = 0
        self.ledger = (BandwidthLedger(costs.stream_rate(decoded.target), costs.sm_stream_bytes_per_us,
                                       LEDGER_BUCKET_US)
                       if costs.sm_stream_bytes_per_us else None)
        self.bit_time: dict[tuple[int, int], float] = {}
        self.counter_base = [int(c) for c in self.counters]
        self.release_times: list[list[float]] = [[] for _ in range(prog.num_counters)]
        self.events: list[TraceEvent] = []
        # scheduling: action 2g = start engine g's head, 2g+1 = complete load engine g's oldest load
        self.ready: list[int] = []
        self.ready_index: dict[int, int] = {}
        # per counter, a heap of (value the waiter needs, engine): a release wakes only
        # the engines whose threshold it reaches (entries of moved heads are harmless)
        self.counter_waiters: list[list[tuple[int, int]]] = [[] for _ in range(prog.num_counters)]
        # flag words (in the sync block, after the counters): when a store of this launch wrote each
        # sync word, and the engines whose next micro-op is a flag-word load (woken by every such store)
        self.flag_time = np.zeros(len(sync)) if prog.flag_word_bytes else np.zeros(0)
        # and, for the race checks, which store wrote it: its engine (global id) and queue position (-1: none)
        self.flag_engine = np.full(len(self.flag_time), -1, dtype=np.int64)
        self.flag_pos = np.full(len(self.flag_time), -1, dtype=np.int64)
        # by (engine, position) of a flag-word store: what it knew of its SM's engines when it read its tile
        self.flag_store_clock: dict[tuple[int, int], np.ndarray] = {}
        self.flag_waiters: set[int] = set()

    # ---- driving ---------------------------------------------------------
    def run(self) -> SimTrace:
        """Run to completion; raise on a race, a deadlock or a malformed micro-op."""
        for g in range(self.num_engines):
            self._head_changed(g)
        while (action := self._next_action()) is not None:
            g = action >> 1
            if action & 1:
                self._complete_load(g)
            else:
                self._start(g)
            if self.ledger is not None and action in self.ready_index:  # ready again: its next load or micro-op
                self._queue_action(action, self._action_time(action))
        if any(self.head[g] < len(self.queues[g]) for g in range(self.num_engines)):
            raise SimDeadlockError(self._deadlock_report())
        if self.unwritten_reads:
            g, pos, sm, tile = self.unwritten_reads[0]
            raise SimRaceError(
                f"{self._name(g, pos)} reads shared memory [{tile.smem}, {tile.smem + tile.nbytes}) "
                f"of SM {sm}, which no micro-op wrote before it"
            )
        isa.finish_launch(self.sync, self.decoded.program.num_sms)
        return SimTrace(self.decoded.program, self.events, launch_us=self.decoded.costs.launch_us)

    def _next_action(self) -> int | None:
        """The action to take next: any ready one, at random; with a bandwidth ledger, the one that can
        happen earliest (the ledger serves a bucket's bytes to the tiles taken first)."""
        if not self.ready:
            return None
        if self.ledger is None:
            return self.ready[self.rng.randrange(len(self.ready))]
        while True:
            at, _, action = heapq.heappop(self.timeline)
            if action not in self.ready_index:
                continue  # taken, or no longer ready, since it was queued
            now = self._action_time(action)
            if now > at:  # later than when it was queued (a load window's next oldest): queue it again
                self._queue_action(action, now)
                continue
            return action

    def _queue_action(self, action: int, at: float) -> None:
        self.timeline_seq += 1
        heapq.heappush(self.timeline, (at, self.timeline_seq, action))

    def _action_time(self, action: int) -> float:
        """When ready ``action`` can happen: a load's landing begins its latency after its issue; a start,
        when its engine is free and its waits have passed."""
        g = action >> 1
        if action & 1:
            op, _, start, _ = self.in_flight[g][0]
            return start + op.latency_us
        sm = g // self.per_sm
        op = self.queues[g][self.head[g]]
        at = max(self.engine_free[g], self._wait_time(sm, op))
        return self._window_free(g, op, at) if self.is_load_engine[g % self.per_sm] else at

    def _window_free(self, g: int, op: Op, start: float) -> float:
        """When load ``op`` of load engine ``g`` can issue, at ``start`` or later: when the slot of its
        window that it takes freed, as the load ``load_window`` positions earlier in ``g``'s queue landed."""
        if op.pos < self.load_window:
            return start
        return max(start, self.load_ends[g][op.pos - self.load_window])

    def _set_ready(self, action: int, ready: bool) -> None:
        idx = self.ready_index.get(action)
        if ready and idx is None:
            self.ready_index[action] = len(self.ready)
            self.ready.append(action)
            if self.ledger is not None:
                self._queue_action(action, self._action_time(action))
        elif not ready and idx is not None:
            last = self.ready.pop()
            if last != action:
                self.ready[idx] = last
                self.ready_index[last] = idx
            del self.ready_index[action]

    def _head_changed(self, g: int) -> None:
        """Re-register engine ``g``'s counter interest and readiness after its head moved."""
        queue, pos = self.queues[g], self.head[g]
        if pos < len(queue) and queue[pos].wait_counter >= 0:
            op = queue[pos]
            heapq.heappush(self.counter_waiters[op.wait_counter], (self._needed(op), g))
        if pos < len(queue) and queue[pos].flag_words and queue[pos].opcode == isa.OP_LOAD:
            self.flag_waiters.add(g)
        self._update_start(g)

    def _update_start(self, g: int) -> None:
        self._set_ready(2 * g, self._can_start(g))

    def _can_start(self, g: int) -> bool:
        pos = self.head[g]
        queue = self.queues[g]
        if pos >= len(queue):
            return False
        op = queue[pos]
        sm, engine = divmod(g, self.per_sm)
        if self.is_load_engine[engine] and len(self.in_flight[g]) >= self.load_window:
            return False
        if (self.bitmap[sm] & op.wait_mask) != op.wait_parity:
            return False
        if op.flag_words and op.opcode == isa.OP_LOAD and not self._flag_words_written(op):
            return False
        return op.wait_counter < 0 or self._released(op.wait_counter) >= self._needed(op)

    def _flag_words_written(self, op: Op) -> bool:
        """Whether every word flag-word load ``op`` reads holds this launch's epoch (a flag-word store
        of this launch wrote it: a word of an earlier launch holds an older one)."""
        return bool((flag_word_views(self.sync, op.region)[1] == self.epoch % isa.COUNTER_MODULUS).all())

    def _released(self, counter: int) -> int:
        """Releases of ``counter`` in this launch so far."""
        return (int(self.counters[counter]) - self.counter_base[counter]) % isa.COUNTER_MODULUS

    def _needed(self, op: Op) -> int:
        """Releases of ``op``'s counter in this launch that its wait needs (wrap-safe, may be <= 0)."""
        short = (self.epoch * op.wait_count - self.counter_base[op.wait_counter]) % isa.COUNTER_MODULUS
        return short - isa.COUNTER_MODULUS if short >= isa.COUNTER_MODULUS // 2 else short

    # ---- micro-op execution -------------------------------------------
    def _start(self, g: int) -> None:
        sm, engine = divmod(g, self.per_sm)
        op = self.queues[g][self.head[g]]
        start = max(self.engine_free[g], self._pass_waits(g, sm, op))
        runs = self._runs(g, sm, op)
        if not runs and self.check_races:
            self.skipped[sm].add(op.uop_id)
        if self.is_load_engine[engine]:  # a nop here is a load of nothing: it completes in order
            self._issue_load(g, sm, op, start, runs)
        else:
            if runs and op.opcode == isa.OP_COMPUTE:
                self._compute(g, sm, op)
            elif runs and op.opcode == isa.OP_STORE and op.flag_words:
                self._check_store_source(g, sm, op)
            elif runs and op.opcode == isa.OP_STORE:
                self._store(g, sm, op, self._region(g, sm, op))
            # a skipped compute or store costs its engine's fixed cost only: no body, no bytes
            end = start + (op.latency_us + op.busy_us if runs else self.skipped_us[engine])
            if runs and op.flag_words and op.opcode == isa.OP_STORE:
                self._write_flag_words(g, sm, op, end)
            self.engine_free[g] = end + op.hold_us
            self.events.append(TraceEvent(sm, engine, op.uop_id, op.pos, start, end + op.hold_us - start))
            self.clock[g, g] = op.pos + 1
            self._complete(g, sm, op, self.clock[g], end)
        self.head[g] += 1
        self._head_changed(g)

    def _pass_waits(self, g: int, sm: int, op: Op) -> float:
        """Join the clocks the waited bits and counter carry; return when they were satisfied."""
        mask = op.wait_mask
        while mask:
            low = mask & -mask
            mask ^= low
            bit_clock = self.bit_clock.get((sm, low.bit_length() - 1))
            if bit_clock is not None:
                np.maximum(self.clock[g], bit_clock, out=self.clock[g])
        if op.wait_counter >= 0:
            self._join_releases(g, op.wait_counter, self._needed(op))
        return self._wait_time(sm, op)

    def _wait_time(self, sm: int, op: Op) -> float:
        """When the waited bits, counter and flag words of ``op`` on SM ``sm`` were satisfied."""
        ready_at = 0.0
        mask = op.wait_mask
        while mask:
            low = mask & -mask
            mask ^= low
            ready_at = max(ready_at, self.bit_time.get((sm, low.bit_length() - 1), 0.0))
        if op.wait_counter >= 0:
            c = op.wait_counter
            needed = self._needed(op)
            if needed > 0 and self.release_times[c]:
                ready_at = max(ready_at, self.release_times[c][min(needed, len(self.release_times[c])) - 1])
        if op.flag_words and op.opcode == isa.OP_LOAD:  # relaxed words: the bytes, no clock
            ready_at = max(ready_at, float(flag_word_views(self.flag_time, op.region)[1].max()))
        return ready_at

    def _join_releases(self, g: int, counter: int, needed: int) -> None:
        """Join into engine ``g``'s clock what a wait for ``needed`` releases of ``counter`` knows.

        The wait may see the counter at exactly its threshold, so it knows the
        first ``needed`` releases of the launch and no more: a release that
        happened to come earlier in this interleaving is not joined, which
        makes a wait short by one a race in every run, not only in the runs
        where the last release comes late.
        """
        joined = self.release_clocks[counter]
        if needed > 0 and joined:
            np.maximum(self.clock[g], joined[min(needed, len(joined)) - 1], out=self.clock[g])

    def _complete(self, g: int, sm: int, op: Op, clock: np.ndarray, end: float) -> None:
        """Toggle the signal bits and release the counter, publishing ``clock``."""
        if op.signal_mask:
            if self.check_races:
                self._check_lost_toggle(g, sm, op)
            self.bitmap[sm] ^= op.signal_mask
            mask = op.signal_mask
            while mask:
                low = mask & -mask
                key = (sm, low.bit_length() - 1)
                mask ^= low
                self.bit_time[key] = max(self.bit_time.get(key, 0.0), end)
                if key in self.bit_clock:
                    np.maximum(self.bit_clock[key], clock, out=self.bit_clock[key])
                else:
                    self.bit_clock[key] = clock.copy()
            for other in range(self.per_sm * sm, self.per_sm * (sm + 1)):  # engines whose next wait involves these bits
                queue, pos = self.queues[other], self.head[other]
                if other == g or (pos < len(queue) and queue[pos].wait_mask & op.signal_mask):
                    self._update_start(other)
        if op.release_counter >= 0:
            c = op.release_counter
            self.counters[c] = (int(self.counters[c]) + 1) & 0xFFFFFFFF
            joined = self.release_clocks[c]
            joined.append(np.maximum(joined[-1], clock) if joined else clock.copy())
            bisect.insort(self.release_times[c], end + self.decoded.costs.handoff_us)
            waiters, value = self.counter_waiters[c], self._released(c)
            while waiters and waiters[0][0] <= value:
                self._update_start(heapq.heappop(waiters)[1])

    def _write_flag_words(self, g: int, sm: int, op: Op, end: float) -> None:
        """Flag-word store ``op`` writes its tile's bytes with this launch's epoch into its flag words, by
        ``end``; the engines whose next micro-op is a flag-word load look again."""
        data, epochs = flag_word_views(self.sync, op.region)
        tile = self.smem[sm][op.tile.smem : op.tile.smem + op.tile.nbytes]
        data[...] = tile.view(np.uint32).reshape(data.shape)
        epochs[...] = self.epoch % isa.COUNTER_MODULUS
        flag_word_views(self.flag_time, op.region)[1][...] = end + self.decoded.costs.flag_word_handoff_us
        if self.check_races:  # who wrote each word, and what it knew (its own read of the tile included)
            flag_word_views(self.flag_engine, op.region)[1][...] = g
            flag_word_views(self.flag_pos, op.region)[1][...] = op.pos
            known = self.flag_store_clock[g, op.pos] = self._sm_clock(g, sm).copy()
            known[g % self.per_sm] = op.pos + 1
        for other in list(self.flag_waiters):
            queue, pos = self.queues[other], self.head[other]
            if pos < len(queue) and queue[pos].flag_words and queue[pos].opcode == isa.OP_LOAD:
                self._update_start(other)
            else:
                self.flag_waiters.discard(other)

    def _issue_load(self, g: int, sm: int, op: Op, start: float, runs: bool) -> None:
        """Load engine ``g`` issues ``op``: checked and recorded now, its bytes land when it completes.

        It takes a slot of ``g``'s window: the one that the load ``load_window``
        positions earlier in ``g``'s queue freed when it landed.
        """
        region = None  # a nop, or a load whose condition failed: nothing lands
        if runs and op.opcode == isa.OP_LOAD:
            region = self._region(g, sm, op)
            if self.check_races:
                if not op.flag_words:  # flag words: in the sync block, ordered by their epochs
                    self._check_global_read(g, sm, op, region)
                self._check_smem_write(g, sm, op, op.tile, self._tile_reads_seen(g, sm, op) if op.flag_words else None)
                self.smem_track[sm].record(self.smem_track[sm].written, op.tile, g % self.per_sm, op.pos)
        start = self._window_free(g, op, start)
        self.engine_free[g] = start + self.decoded.costs.load_issue_us
        self.in_flight[g].append((op, self.clock[g].copy(), start, region))
        self._set_ready(2 * g + 1, True)

    def _complete_load(self, g: int) -> None:
        """Load engine ``g``'s oldest in-flight load lands: its bytes, its signals, its clock."""
        sm, engine = divmod(g, self.per_sm)
        in_flight = self.in_flight[g]
        op, start_clock, start, region = in_flight.popleft()
        if not in_flight:
            self._set_ready(2 * g + 1, False)
        if region is not None:
            dst = self.smem[sm][op.tile.smem : op.tile.smem + region.nbytes]
            if op.flag_words:  # the data of its flag words, which all hold this launch's epoch
                dst.view(np.uint32).reshape(region.rows, -1)[...] = flag_word_views(self.sync, region)[0]
            else:
                dst.reshape(region.rows, region.row_bytes)[...] = _global_view(self.buffers[op.buffer], region)
            if self.check_races:
                self._record_slot_writer(sm, op, op.tile)
        # completions are in g's queue order: this one also publishes g's previous ones
        done = self.load_done_clock[g]
        np.maximum(done, start_clock, out=done)
        done[g] = op.pos + 1
        # bytes land after the latency, one load after the other at the SM's bandwidth share
        # (after the previous load to land on the SM, from whichever of its load engines); a small load
        # interleaves with them instead (SMALL_LOAD_BYTES)
        ends = self.load_ends[g]
        if region is None and op.opcode == isa.OP_LOAD:  # its condition failed: its issue, no bytes
            end = start + self.decoded.costs.load_issue_us
        elif region is not None and region.nbytes <= SMALL_LOAD_BYTES:
            end = start + op.latency_us + op.busy_us
        elif region is not None and self.ledger is not None:  # the SMs draw on the HBM together
            begin = max(start + op.latency_us, self.landed[sm])
            end = self.landed[sm] = self.ledger.stream(begin, region.nbytes)
        else:
            end = self.landed[sm] = max(start + op.latency_us, self.landed[sm]) + op.busy_us
        if ends:  # the engine retires in queue order
            end = max(end, ends[-1])
        self.events.append(TraceEvent(sm, engine, op.uop_id, op.pos, start, end - start))
        ends.append(end)
        self._complete(g, sm, op, done, end)
        self._update_start(g)  # a window slot is free again

    def _compute(self, g: int, sm: int, op: Op) -> None:
        if self.check_races:
            for i, tile in enumerate(op.inputs):
                self._check_smem_read(g, sm, op, tile)
                self._check_smem_source(g, sm, op, tile, op.sources[i] if op.sources else None)
            self._check_smem_write(g, sm, op, op.out)
            track = self.smem_track[sm]
            for tile in op.inputs:
                track.record(track.read, tile, g % self.per_sm, op.pos)
            track.record(track.written, op.out, g % self.per_sm, op.pos)
            self._record_slot_writer(sm, op, op.out)
        smem = self.smem[sm]
        args = [self._tile(smem, t) for t in op.inputs]
        result = op.family.run(args, op.params, op.out.dtype)
        self._tile(smem, op.out)[...] = result

    @staticmethod
    def _tile(smem: np.ndarray, tile: TileRef) -> np.ndarray:
        raw = smem[tile.smem : tile.smem + tile.nbytes]
        return raw.view(DTYPES[tile.dtype]).reshape(tile.shape)

    def _check_store_source(self, g: int, sm: int, op: Op) -> None:
        """A store's read of its tile: ordered after the tile's writer, and the bytes it should see."""
        if self.check_races:
            self._check_smem_read(g, sm, op, op.tile)
            self._check_smem_source(g, sm, op, op.tile, op.sources[0] if op.sources else None)
            self.smem_track[sm].record(self.smem_track[sm].read, op.tile, g % self.per_sm, op.pos)

    def _store(self, g: int, sm: int, op: Op, region: Region) -> None:
        self._check_store_source(g, sm, op)
        if self.check_races:
            self._check_global_write(g, op, region)
        src = self.smem[sm][op.tile.smem : op.tile.smem + region.nbytes]
        dst = _global_view(self.buffers[op.buffer], region)
        if op.reduce in _REDUCE_VIEWS:
            # f32 adds, element by element, in the order this run completes the stores (the GPU's
            # order across SMs is not fixed: see docs/runtime.md); the race check above holds the
            # stores to the order the dependencies give them. i64 adds wrap, and any order gives them
            # the same bits (the race check leaves them unordered among themselves).
            view = _REDUCE_VIEWS[op.reduce]
            dst.view(view)[...] += src.view(view).reshape(region.rows, region.row_bytes // view.itemsize)
        else:
            dst[...] = src.reshape(region.rows, region.row_bytes)

    # ---- runtime values -----------------------------------------------
    def _value(self, g: int, sm: int, op: Op, source: int, index: int) -> int:
        """A runtime value: a launch scalar, or an i32 element read now (a checked global read)."""
        if source == isa.SOURCE_SCALAR:
            return self.scalars[index]
        b = source - isa.SOURCE_BUFFER0
        if self.check_races and b in self.global_track:
            track = self.global_track[b]
            cell = Region(4 * index, 1, 4, 4)
            hit = self._unordered(g, track.view(track.writer_engine, cell), track.view(track.writer_pos, cell))
            if hit is not None:
                raise SimRaceError(
                    f"race on buffer '{self.decoded.program.buffers[b].name}': {self._name(g, op.pos)} reads "
                    f"element {index} written by {self._name(*hit)}, but no dependency orders the read after that store"
                )
            readers = track.value_readers.get(index)
            if readers is None:
                readers = track.value_readers[index] = np.full(self.num_engines, -1, dtype=np.int64)
            readers[g] = op.pos
        return int(self.buffers[b][4 * index : 4 * index + 4].view(np.int32)[0])

    def _runs(self, g: int, sm: int, op: Op) -> bool:
        """Whether the micro-op's condition holds (no condition: it runs)."""
        if op.guard is None:
            return True
        source, index, coeff, const = op.guard
        return coeff * self._value(g, sm, op, source, index) + const >= 0

    def _region(self, g: int, sm: int, op: Op) -> Region:
        """The global region this execution of a load or store touches (its runtime offset resolved, checked)."""
        if op.dyn is None:
            return op.region
        source, index, scale, vmin, vmax = op.dyn
        v = self._value(g, sm, op, source, index)
        if not vmin <= v <= vmax:
            what = isa.source_text(self.decoded.program, source, index)
            raise SimBoundsError(
                f"{self._name(g, op.pos)}: runtime offset {what} = {v} is outside its checked range "
                f"{vmin}..{vmax} (the region would leave buffer '{self.decoded.program.buffers[op.buffer].name}')"
            )
        return runtime_region(op.region, scale, v)

    # ---- race checks ----------------------------------------------------
    def _name(self, g: int, pos: int) -> str:
        return self.decoded.describe(*divmod(g, self.per_sm), pos)

    def _sm_clock(self, g: int, sm: int) -> np.ndarray:
        """The entries of engine ``g``'s clock for the engines of SM ``sm``."""
        return self.clock[g, self.per_sm * sm : self.per_sm * (sm + 1)]

    def _check_smem_read(self, g: int, sm: int, op: Op, tile: TileRef) -> None:
        own = self._sm_clock(g, sm)
        hit = self.smem_track[sm].unordered_writer(tile, own)
        if hit is None:
            return
        if hit[0] < 0:
            # a later unordered write reports this read by name; if none comes, run() does
            self.unwritten_reads.append((g, op.pos, sm, tile))
            return
        where = f"shared memory [{tile.smem}, {tile.smem + tile.nbytes}) of SM {sm}"
        reader = self._name(g, op.pos)
        writer = self._name(self.per_sm * sm + hit[0], hit[1])
        raise SimRaceError(
            f"race on {where}: {reader} reads the tile written by {writer}, "
            "but no dependency orders the read after that write completes"
        )

    def _tile_reads_seen(self, g: int, sm: int, op: Op) -> np.ndarray:
        """Engine ``g``'s clock entries for SM ``sm`` (:meth:`_sm_clock`), joined with what each store of
        that SM whose words flag-word load ``op`` read knew of the SM's engines when it read its tile.

        Each word's bytes came from that read, so the load's write of its own slot comes after it, and
        after every access of the SM's shared memory the store was ordered after: the tile's producer,
        the earlier stores' reads of their tiles (a store does not end before its copies have read their
        source). The words carry nothing else: the stores may still be writing their buffers, and the
        load learns nothing of other SMs (:meth:`_pass_waits` joins no clock for words).
        """
        own = self._sm_clock(g, sm).copy()
        engines = flag_word_views(self.flag_engine, op.region)[1]
        positions = flag_word_views(self.flag_pos, op.region)[1]
        mine = engines // self.per_sm == sm
        for writer, pos in set(zip(engines[mine].tolist(), positions[mine].tolist(), strict=True)):
            np.maximum(own, self.flag_store_clock[writer, pos], out=own)
        return own

    def _check_smem_write(self, g: int, sm: int, op: Op, tile: TileRef, own: np.ndarray | None = None) -> None:
        """A write of ``tile`` by ``op`` comes after every earlier access of it that engine ``g``'s clock
        (or ``own``, its entries for the SM) covers; a located race otherwise."""
        own = self._sm_clock(g, sm) if own is None else own
        hit = self.smem_track[sm].unordered_access(tile, own)
        if hit is None:
            return
        kind, engine, pos = hit
        where = f"shared memory [{tile.smem}, {tile.smem + tile.nbytes}) of SM {sm}"
        writer, other = self._name(g, op.pos), self._name(self.per_sm * sm + engine, pos)
        if kind == "read":
            raise SimRaceError(
                f"race on {where}: {writer} writes the slot that {other} reads, but no dependency "
                "orders the two (the read may see the old or the new bytes)"
            )
        raise SimRaceError(
            f"race on {where}: {writer} and {other} both write it with no dependency ordering them"
        )

    def _check_lost_toggle(self, g: int, sm: int, op: Op) -> None:
        """No bit ``op`` toggles is waited on by a queue head that could start now.

        Such a waiter may pass at any moment: a toggle not ordered after its
        pass takes the value away again, so on the GPU it may miss it (and
        hang) or pass with a history the wait does not describe. In a correct
        program the next toggle of a bit waits for the waiters of the last.
        """
        for other in range(self.per_sm * sm, self.per_sm * (sm + 1)):
            queue, pos = self.queues[other], self.head[other]
            if pos >= len(queue) or queue[pos] is op:
                continue
            waiter = queue[pos]
            shared = waiter.wait_mask & op.signal_mask
            if not shared or not self._can_start(other):
                continue
            bit = (shared & -shared).bit_length() - 1
            raise SimRaceError(
                f"lost toggle of bit {bit} of SM {sm}: {self._name(g, op.pos)} toggles it while "
                f"{self._name(other, pos)}, which waits for it to be {(waiter.wait_parity >> bit) & 1}, "
                "sees that value and has not passed yet; no dependency orders the toggle after that wait"
            )

    def _record_slot_writer(self, sm: int, op: Op, tile: TileRef) -> None:
        """The blocks of ``tile`` now hold the bytes of micro-op ``op``."""
        b0, b1 = tile.blocks
        self.slot_writer[sm][b0:b1] = op.uop_id

    def _check_smem_source(self, g: int, sm: int, op: Op, tile: TileRef, sources: SlotSources | None) -> None:
        """The read of ``tile`` sees the bytes of the writer program order gives it (:class:`SlotSources`)."""
        if sources is None:
            return
        held_by, skipped = self.slot_writer[sm], self.skipped[sm]
        for b0, b1, candidates in sources.segments:
            expected = candidates[0]
            if expected in skipped:
                expected = next(c for c in candidates if c not in skipped)
            held = held_by[b0:b1]
            if expected == UNKNOWN_WRITER or (held == expected).all():
                continue
            actual = int(held[np.flatnonzero(held != expected)[0]])
            raise SimRaceError(self._provenance_message(g, sm, op, tile, expected, actual))

    def _provenance_message(self, g: int, sm: int, op: Op, tile: TileRef, expected: int, actual: int) -> str:
        """Why a read saw the bytes of ``actual`` where program order gives it those of ``expected``."""
        where = f"shared memory [{tile.smem}, {tile.smem + tile.nbytes}) of SM {sm}"
        reader = self._name(g, op.pos)
        if expected == NO_WRITER:
            return (
                f"read of a later tile on {where}: {reader} reads the tile of {self._writer_name(sm, actual)}, "
                "which comes after the read in program order (no micro-op writes the slot before it)"
            )
        if actual == NO_WRITER or actual < expected:
            held = "no tile yet" if actual == NO_WRITER else f"the older tile of {self._writer_name(sm, actual)}"
            return (
                f"stale read of {where}: {reader} reads {held}, but in program order it reads the tile of "
                f"{self._writer_name(sm, expected)}, which no dependency orders before the read"
            )
        return (
            f"early overwrite of {where}: {self._writer_name(sm, actual)} overwrote the tile of "
            f"{self._writer_name(sm, expected)} before {reader} read it, with no dependency ordering "
            "the overwrite after the read"
        )

    def _writer_name(self, sm: int, uop_id: int) -> str:
        """The readable name of the shared-memory writer with id ``uop_id`` on SM ``sm``."""
        engine, pos = self.decoded.writers[sm][uop_id]
        return self._name(self.per_sm * sm + engine, pos)

    def _check_global_read(self, g: int, sm: int, op: Op, region: Region) -> None:
        track = self.global_track.get(op.buffer)
        if track is None:
            return
        writers = track.view(track.writer_engine, region)
        info = self.decoded.program.buffers[op.buffer]
        if info.role == "scratch" and (writers < 0).any():  # its bytes from before the launch: none the program owns
            raise SimRaceError(
                f"{self._name(g, op.pos)} reads bytes of scratch buffer '{info.name}' that no store of the launch "
                "wrote before it (a scratch buffer holds only what the launch writes; flag-word stores write "
                "only their words)"
            )
        hit = self._unordered(g, writers, track.view(track.writer_pos, region))
        if hit is None:
            hit = self._unordered_adder(g, track, region)
        if hit is not None:
            name = self.decoded.program.buffers[op.buffer].name
            raise SimRaceError(
                f"race on buffer '{name}': {self._name(g, op.pos)} reads bytes written by "
                f"{self._name(*hit)}, but no dependency (counter wait) orders the read after that store"
            )
        if track.readers is not None:
            track.view(track.readers[self.reader_row[g]], region)[...] = op.pos

    def _check_global_write(self, g: int, op: Op, region: Region) -> None:
        """A store's write of ``region``: ordered after the region's earlier writers and readers. A
        commuting add (``isa.COMMUTING_REDUCTIONS``) need not be ordered after the other adds, and is
        recorded as an adder (:class:`GlobalTracker`), not as the region's writer."""
        track = self.global_track[op.buffer]
        name = self.decoded.program.buffers[op.buffer].name
        engines = track.view(track.writer_engine, region)
        positions = track.view(track.writer_pos, region)
        adding = op.reduce in isa.COMMUTING_REDUCTIONS
        hit = self._unordered(g, engines, positions)
        if hit is None and not adding:
            hit = self._unordered_adder(g, track, region)
        if hit is not None:
            raise SimRaceError(
                f"race on buffer '{name}': {self._name(g, op.pos)} overwrites bytes that {self._name(*hit)} "
                "also writes, with no dependency ordering the two stores"
            )
        if track.readers is not None:
            latest = track.view(track.readers, region).reshape(track.readers.shape[0], -1).max(axis=1)
            known = self.clock[g, self.reader_engines]
            late = np.nonzero((latest >= 0) & (known <= latest))[0]
            if late.size:
                row = int(late[0])
                raise SimRaceError(
                    f"race on buffer '{name}': {self._name(g, op.pos)} overwrites bytes that "
                    f"{self._name(int(self.reader_engines[row]), int(latest[row]))} still reads, "
                    "with no dependency ordering the store after that load"
                )
        if track.value_readers:
            self._check_value_readers(g, op, region, track, name)
        if adding:
            if track.adders is not None:
                track.view(track.adders[g], region)[...] = op.pos
            return
        if track.adders is not None:  # ordered after them all: a later access ordered after this write is too
            track.view(track.adders, region)[...] = -1
        engines[...] = g
        positions[...] = op.pos

    def _unordered_adder(self, g: int, track: GlobalTracker, region: Region) -> tuple[int, int] | None:
        """(engine, pos) of a commuting add into ``region`` not in engine ``g``'s clock, if any."""
        if track.adders is None:
            return None
        latest = track.view(track.adders, region).reshape(track.adders.shape[0], -1).max(axis=1)
        late = np.nonzero((latest >= 0) & (self.clock[g] <= latest))[0]
        if not late.size:
            return None
        engine = int(late[0])
        return engine, int(latest[engine])

    def _check_value_readers(self, g: int, op: Op, region: Region, track: GlobalTracker, name: str) -> None:
        """A store over an i32 element is ordered after every earlier read of it as a runtime value."""
        for element, positions in track.value_readers.items():
            if not _region_holds(region, 4 * element):
                continue
            late = (positions >= 0) & (self.clock[g] <= positions)
            late[g] &= positions[g] != op.pos  # the store's own runtime value, read as it starts
            if late.any():
                reader = int(np.flatnonzero(late)[0])
                raise SimRaceError(
                    f"race on buffer '{name}': {self._name(g, op.pos)} overwrites element {element}, which "
                    f"{self._name(reader, int(positions[reader]))} reads as a runtime value, with no dependency "
                    "ordering the store after that read"
                )

    def _unordered(self, g: int, engines: np.ndarray, positions: np.ndarray) -> tuple[int, int] | None:
        """(engine, pos) of a recorded access not in engine ``g``'s clock, if any."""
        if engines.size == 0 or engines.max() < 0:
            return None
        engines, positions = engines.reshape(-1), positions.reshape(-1)
        has = engines >= 0
        bad = np.nonzero(has & (self.clock[g][np.where(has, engines, 0)] <= positions))[0]
        if not bad.size:
            return None
        i = int(bad[0])
        return int(engines[i]), int(positions[i])

    # ---- deadlock report ------------------------------------------------
    def _deadlock_report(self) -> str:
        stuck = []
        for g in range(self.num_engines):
            pos = self.head[g]
            if pos < len(self.queues[g]):
                stuck.append(f"{self._name(g, pos)} waits for {self._waiting_on(g, self.queues[g][pos])}")
        shown = stuck[:16]
        more = f"; and {len(stuck) - 16} more" if len(stuck) > 16 else ""
        return "deadlock: no engine can make progress: " + "; ".join(shown) + more

    def _waiting_on(self, g: int, op: Op) -> str:
        sm = g // self.per_sm
        reasons = []
        if (self.bitmap[sm] & op.wait_mask) != op.wait_parity:
            wrong = (self.bitmap[sm] ^ op.wait_parity) & op.wait_mask
            bits = ", ".join(
                f"bit {b} = {(op.wait_parity >> b) & 1} (is {(self.bitmap[sm] >> b) & 1})"
                for b in range(64) if (wrong >> b) & 1
            )
            reasons.append(f"dependency bits {bits} (wait mask {op.wait_mask:#x}, bitmap {self.bitmap[sm]:#x})")
        if op.wait_counter >= 0:
            value = int(self.counters[op.wait_counter])
            wanted = self.epoch * op.wait_count % isa.COUNTER_MODULUS
            if not isa.counter_reached(value, wanted):
                reasons.append(f"counter {op.wait_counter} >= {wanted} (is {value})")
        if op.flag_words and op.opcode == isa.OP_LOAD and not self._flag_words_written(op):
            epochs = flag_word_views(self.sync, op.region)[1]
            missing = int((epochs != self.epoch % isa.COUNTER_MODULUS).sum())
            name = self.decoded.program.buffers[op.buffer].name
            reasons.append(f"{missing} flag word(s) of buffer '{name}' with this launch's epoch {self.epoch}")
        return " and ".join(reasons) or "nothing (internal error)"


# ---------------------------------------------------------------------------
# The platform.
# ---------------------------------------------------------------------------


class SimPlatform(Platform):
    """The CPU simulator as a :class:`Platform`: host byte arrays and :class:`Simulation` runs.

    Launch options (``LaunchSpec.options``): ``seed`` (interleaving, default
    0), ``load_window`` (loads in flight per load engine, default 8), ``check_races``
    (default True). The last launch's trace is :meth:`last_trace`.
    """

    name = "sim"
    LAUNCH_OPTIONS: ClassVar[Mapping[str, LaunchOption]] = {
        "seed": LaunchOption(int),
        "load_window": LaunchOption(int, minimum=1),
        "check_races": LaunchOption(bool),
    }

    def __init__(self, target: TargetDescription | str | None = None):
        if isinstance(target, TargetDescription):
            self._target = target
        else:
            self._target = get_target(target or "h200")
        self._trace: SimTrace | None = None

    @classmethod
    def is_available(cls) -> tuple[bool, str]:
        """The simulator needs only numpy: always available."""
        return True, ""

    def target(self) -> TargetDescription:
        return self._target

    def close(self) -> None:
        self._trace = None

    def allocate(self, nbytes: int) -> DeviceBuffer:
        """A host byte array (uninitialised, like device memory)."""
        return DeviceBuffer(np.empty(max(int(nbytes), 0), dtype=np.uint8), int(nbytes), self)

    def free(self, buf: DeviceBuffer) -> None:
        """Drop the buffer's array (numpy frees it when nothing else holds it)."""
        buf.handle = None
        buf.keepalive = None

    def wrap(self, view: TensorView) -> DeviceBuffer:
        """A caller's host array as a buffer (the simulator's memory is the host's); nothing is copied."""
        if view.host is None:
            raise PlatformError(f"it is on {view.device}; the simulator runs on host (numpy) memory")
        data = view.host.reshape(-1).view(np.uint8)
        return DeviceBuffer(data, data.nbytes, self, owned=False, keepalive=view.keepalive)

    def copy_in(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        data = _host_bytes(host, buf.nbytes)
        buf.handle[...] = data

    def copy_out(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        _host_bytes(host, buf.nbytes)[...] = buf.handle

    def fill_zero(self, buf: DeviceBuffer, stream: Any = None) -> None:
        """Zero now (the simulator has no streams: ``stream`` must be None)."""
        self.stream_handle(stream)
        buf.handle[...] = 0

    def write_words(self, buf: DeviceBuffer, values: Sequence[int], stream: Any = None) -> None:
        """Write s32 ``values`` now."""
        self.stream_handle(stream)
        buf.handle.view(np.int32)[: len(values)] = values

    def copy_device(self, dst: DeviceBuffer, src: DeviceBuffer, stream: Any = None) -> None:
        """Copy now."""
        self.stream_handle(stream)
        if dst.nbytes != src.nbytes:
            raise PlatformError(f"copy_device: {src.nbytes} bytes into a buffer of {dst.nbytes}")
        dst.handle[...] = src.handle

    def load_artifact(self, program: isa.EncodedProgram, options: LoweringOptions | None = None) -> DecodedProgram:
        """Decode and validate the queues once; the result is reused by every launch.

        ``options`` (how a GPU kernel would issue the work) change nothing here."""
        return decode_program(program, self._target)

    def launch(self, artifact: DecodedProgram, spec: LaunchSpec, stream: Any = None) -> None:
        """Run the whole launch now (the simulator is synchronous and has no streams)."""
        self.stream_handle(stream)
        self._trace = self._run(artifact, spec)

    @staticmethod
    def _run(artifact: DecodedProgram, spec: LaunchSpec) -> SimTrace:
        """Simulate one launch to completion and return its trace."""
        opts = spec.options
        sim = Simulation(
            artifact,
            [b.handle for b in spec.buffers],
            spec.sync.handle.view(np.uint32),
            seed=int(opts.get("seed", 0)),
            load_window=int(opts.get("load_window", DEFAULT_LOAD_WINDOW)),
            check_races=bool(opts.get("check_races", True)),
            scalars=tuple(int(v) for v in spec.scalars.handle.view(np.int32)[: len(spec.program.scalars)])
            if spec.scalars is not None else (),
        )
        return sim.run()

    def synchronize(self) -> None:
        """Nothing is ever outstanding: :meth:`launch` runs to completion."""

    def time_launches(self, artifact: DecodedProgram, spec: LaunchSpec, iterations: int) -> list[float]:
        """Modelled (not measured) time per launch in µs: the launch's fixed cost and the trace's span
        (:class:`SimCosts`)."""
        times = []
        for _ in range(iterations):
            self._trace = self._run(artifact, spec)
            times.append(self._trace.launch_time_us)
        return times

    def trace_unavailable(self, artifact: DecodedProgram) -> str:
        """Every simulated launch records a trace."""
        return ""

    def last_trace(self) -> SimTrace | None:
        """The trace of the most recent successful launch, or None."""
        return self._trace


def _host_bytes(host: np.ndarray, nbytes: int) -> np.ndarray:
    if not host.flags.c_contiguous:
        raise PlatformError("host arrays must be C-contiguous")
    if host.nbytes != nbytes:
        raise PlatformError(f"host array has {host.nbytes} bytes, the buffer {nbytes}")
    return host.reshape(-1).view(np.uint8)


def simulate(
    program: isa.EncodedProgram,
    arrays: list[np.ndarray],
    *,
    target: TargetDescription | str | None = None,
    seed: int = 0,
    load_window: int = DEFAULT_LOAD_WINDOW,
    check_races: bool = True,
    scalars: tuple[int, ...] = (),
    costs: SimCosts | None = None,
) -> SimTrace:
    """Run one launch of ``program`` over host arrays in argument order (modified in place); its trace's
    clock is ``costs`` (None: the target's, :func:`costs_for`).

    A convenience for tests and tools; :class:`vdir.device_runtime.executable.Executable`
    is the full path with argument checking.
    """
    tgt = target if isinstance(target, TargetDescription) else get_target(target or program.target)
    decoded = decode_program(program, tgt, costs)
    if len(arrays) != len(program.buffers):
        raise PlatformError(f"the program takes {len(program.buffers)} buffers, got {len(arrays)}")
    raw = [_host_bytes(a, n) for a, n in zip(arrays, decoded.buffer_bytes, strict=True)]
    sync = np.zeros(program.sync_bytes // isa.WORD_BYTES, dtype=np.uint32)
    return Simulation(decoded, raw, sync, seed=seed, load_window=load_window, check_races=check_races,
                      scalars=scalars).run()
