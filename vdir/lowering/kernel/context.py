"""What every warp role of the persistent kernel shares: :class:`Ctx`.

The prologue (:func:`vdir.lowering.kernel.build.build_kernel`) fills it once;
every emitter of the kernel takes it as its first argument.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from vdir.lowering.builder import PtxBuilder
from vdir.lowering.options import LoweringOptions
from vdir.target import TargetDescription

#: the member mask of a whole warp (``vote.sync``, ``shfl.sync``, ``bar.warp.sync``)
FULL = 0xFFFFFFFF


@dataclass
class Queue:
    """This SM's queue for the calling warp's engine, from the kernel's queue table
    (``layout.kernel_queue_table``)."""

    records: SSAValue  # u32: its first record (an index into p_instrs)
    count: SSAValue  # u32: the instructions it executes
    exec_start: SSAValue  # u32: its first instruction's index in the executed order (trace stamps)
    loops: SSAValue  # u32: byte offset from the queue table of its first loop entry


@dataclass
class Ctx:
    """Registers every role shares (parameters, ids, shared addresses)."""

    b: PtxBuilder
    target: TargetDescription
    instrs: SSAValue
    queues: SSAValue
    buffers: SSAValue
    sync: SSAValue  # u64 global address of the sync block (isa.SYNC_*: launch state, then the counters)
    counters: SSAValue  # u64 global address of the first global counter (in the sync block)
    tmaps: SSAValue  # u64 global address of the tensor maps
    scalars: SSAValue  # u64 global address of the launch-time scalars (s32 each)
    queue: Queue  # the calling warp's engine's queue on this SM (``kernel.fetch.load_queue``, prologue)
    err: SSAValue
    bound: SSAValue
    tid: SSAValue
    warp: SSAValue
    lane: SSAValue
    sm: SSAValue
    base: SSAValue  # u32 shared address of the dynamic smem
    arena: SSAValue  # base + HEADER_BYTES
    options: LoweringOptions
    zero: SSAValue  # u32 register holding 0 (a tensor copy's innermost coordinate)
    exit_label: str  # every role leaves through here: kernel.launch.finish
    trace: SSAValue | None = None  # u64 global address of the trace buffer (lowering option trace only)
    loops: bool = False  # the program has loop records: the engines run them (``kernel.fetch``)
    reduces: bool = False  # some store reduces (``isa.REDUCE``): the store engine has the reduction path
    #: some load or store moves flag words (``isa.TRANSFER_FLAG_WORDS``): the engines have those paths
    flag_words: bool = False
    #: some store releases its counter before its bits (``isa.TRANSFER_RELEASE_FIRST``): the store
    #: engine reads the flag
    release_first: bool = False
    #: u32: the launches done, this launch's epoch less one (``kernel.launch.launches_done``: worked out
    #: after the prologue's barrier)
    launches_done: SSAValue | None = None
