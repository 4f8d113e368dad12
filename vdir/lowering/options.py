"""Lowering options: one frozen, validated value that says how the kernel is built.

:class:`LoweringOptions` owns every option's name, type, default and check.
The kernel builder (the package ``vdir.lowering.kernel``), the entry points
(``vdir.lowering.emit``) and the CUDA backend (which builds tensor maps only
when the kernel will use them) read its fields and derived properties; the
tools and ``vdir.compile`` build one from what the user wrote: a mapping, a
string of ``key=value`` pairs (``vdir-run --lowering``), or the options of
``vdir-opt -t 'ptx{load-path=lsu split-copies=4}'`` (how: :mod:`vdir.options`).
Changing an
option never changes the program's results, only how its copies and
synchronisation are issued, whether the kernel records a trace, or whether
it checks the branches it declares warp-uniform.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from vdir.lowering import layout as L
from vdir.options import OptionError, OptionSet
from vdir.target import EngineKind, TargetDescription

if TYPE_CHECKING:
    from vdir.isa import EncodedProgram

#: the load paths: ``bulk`` (``cp.async.bulk``, completion by transaction
#: bytes) and ``lsu`` (16-byte ``cp.async`` per lane)
LOAD_PATHS = ("bulk", "lsu")

#: how an engine toggles its signal bits in the 64-bit dependency bitmap:
#: ``xor64``, one ``atom.release.cta.shared.xor.b64`` (Hopper has no 64-bit
#: shared-memory XOR: ptxas assembles it to a load and compare-and-swap
#: loop); ``xor32``, one native ``red.release.cta.shared.xor.b32`` per half
#: that has bits to toggle (``vdir.lowering.kernel.sync`` says why a waiter
#: needs no atomic view of both halves)
BIT_SIGNALS = ("xor64", "xor32")

#: the most bulk copies a dense load is cut into (one per lane of the load warp)
MAX_SPLIT_COPIES = 32

#: the most instructions the lsu-path load engine prefetches into registers (one register each per lane)
MAX_FETCH_DEPTH = 32

#: the most compute warps: a CTA has at most 32 warps, three are the load, store and stream engines
MAX_COMPUTE_WARPS = L.MAX_CTA_WARPS - L.COMPUTE_FIRST_WARP - 1


#: the cluster sizes a kernel may be launched in: powers of two up to the portable limit
CLUSTER_SIZES = (1, 2, 4, 8)


class LoweringOptionError(OptionError):
    """A lowering option is unknown or has a bad value; the message says which and why."""


@dataclass(frozen=True)
class LoweringOptions(OptionSet):
    """How :func:`vdir.lowering.lower` builds the persistent kernel (defaults: the tuned choice)."""

    KIND: ClassVar[str] = "lowering"
    ERROR: ClassVar[type[OptionError]] = LoweringOptionError

    split_copies: int = 1
    """How many bulk copies (one per lane, 1..32) a dense load is cut into."""

    load_path: str = "bulk"
    """``"bulk"``: ``cp.async.bulk``, completion by transaction bytes; ``"lsu"``: 16-byte ``cp.async`` per lane."""

    fetch_depth: int = 8
    """How many instructions the ``lsu``-path load engines prefetch into registers (1 .. ``MAX_FETCH_DEPTH``).

    The other engines prefetch through the shared-memory window of ``layout.FETCH_DEPTH``."""

    load_ring: int = L.DEFAULT_LOAD_RING
    """Loads the load engine keeps in flight at once (a power of two up to ``layout.MAX_LOAD_RING``)."""

    stream_ring: int = 0
    """Loads the stream engine keeps in flight at once (a power of two up to ``layout.MAX_LOAD_RING``);
    0: the target's for the program (:meth:`vdir.target.TargetDescription.stream_ring_for`: 2 on the
    H200; on the H100 2 in a program without hand-offs through global memory, 1 in one with them).

    Fewer than the load engine: its loads are the weight tiles, and every
    tile in flight is memory-system queueing that the latency-bound hand-offs
    between SMs (their loads, stores and counter releases) wait behind."""

    stream_evict_first: bool = True
    """The stream engine's loads (weight tiles, read once per launch) carry an L2 ``evict_first`` policy
    (``createpolicy``), so that streaming them does not push the activation rows, caches and states
    that the hand-offs between SMs read out of L2 (measured 2% faster on the 1B decode step, 1-5% on
    the gemvs and MLPs: docs/performance.md). False: the default policy."""

    compute_warps: int = 0
    """Warps in the compute group, 0..30; 0: the target's ``compute_threads``."""

    tensor_copies: bool = True
    """Loads and stores with a tensor map (``isa.W_TMAP``) use ``cp.async.bulk.tensor``.

    False: plain bulk copies and ``st.global``. Has no effect on the ``lsu`` path."""

    bit_signal: str = "xor64"
    """How the signal bits are toggled: ``"xor64"`` or ``"xor32"`` (see :data:`BIT_SIGNALS`)."""

    release_fence: bool = False
    """Put a (redundant) ``fence.acq_rel.gpu`` before each ``red.release.gpu`` counter release."""

    run_loops: bool = False
    """The engines run the program's loop records: each fetches a body instruction's base and step
    records and works out its trip's words (``vdir.lowering.kernel.fetch``), from a window of half as
    many instructions. False: the CUDA backend uploads the executed stream, loops unrolled on the
    host: more instruction memory, no loop walk per instruction; measured faster on every program
    so far (docs/performance.md), hence the default. The ``lsu`` load path always runs the executed
    stream."""

    control_warp: bool = False
    """In a kernel without loops, a warp of its own waits for each compute instruction's dependencies
    and signals its completion while the compute group runs the bodies
    (``layout.compute_control_warp``): it polls the next instruction's dependencies during the
    current body and hands it over as soon as the group is done, before signalling the current one
    (``vdir.lowering.kernel.compute_engine``). Measured: a fifth off the compute engine's cost per
    micro-op and the large gemvs 1-2% faster, but the 16-layer MLP stack 1% slower
    (docs/performance.md, round 27), hence off by default. False: the first compute warp waits and
    signals between the bodies."""

    signal_warp: bool = True
    """In a kernel without loops or a control warp, the compute group's last warp signals each compute
    instruction's completion (``layout.compute_signal_warp``) while the first warp moves on to the
    next instruction's wait, which it tests at once unless that wait shares a bit with what the
    instruction before signals (then it first waits for that signal: ``layout.SMEM_SIGNALLED``).
    So the signal's compare-and-swap loop and counter release are off the path between two bodies
    (``vdir.lowering.kernel.compute_engine``). False: the first compute warp signals, then waits
    for the next instruction."""

    cluster_size: int = 1
    """The CTAs of each cluster the kernel is launched in (1, 2, 4 or 8; the program's SM count must be a
    multiple of it). 1: no clusters. The kernel does nothing with its cluster yet; the option is there
    so that what launching in clusters costs, and whether every SM's CTA stays resident, are measured
    before hand-offs inside a cluster use it (docs/performance.md, round 29)."""

    batch_releases: bool = False
    """In a kernel that walks plain queues and moves no flag words, a store that releases a counter
    defers its completion where the next store also releases one and is ready as it ends (its wait
    met, not on this store's bits): that store then copies, and one ``fence.acq_rel.gpu`` releases
    both (``vdir.lowering.kernel.store_engine``). Two hand-off stores in a row then pay one fence
    instead of two, each of which waits for the SM's copies in flight (docs/performance.md, round 8);
    the first one's consumers wait for the second's copies. Measured 0.8% slower on the 1B step (an
    H100, docs/performance.md round 36), hence off."""

    trace: bool = False
    """Stamp each executed instruction's start and end (``%globaltimer``) into a trace buffer.

    The buffer is the extra last kernel parameter ``layout.TRACE_PARAM``
    (the SM each CTA ran on, then ``layout.TRACE_STAMPS`` u64 per
    instruction); the CUDA backend decodes it into a trace of the launch. False: neither the parameter nor the
    stamps are emitted."""

    uniform_checks: bool = False
    """Check every branch the kernel declares warp-uniform (``PtxBuilder.bra``'s ``uniform``).

    Each such branch becomes a plain ``bra`` after a ``vote.sync.uni`` over
    the threads that reach it; where they disagree on the predicate, the
    kernel writes the error record ``layout.ERR_DIVERGENT`` (the SM, the
    warp and the check's number), which the launch raises. For tests and
    for whoever adds a uniform branch: False, the default, emits
    ``bra.uni`` and no check."""

    def __post_init__(self) -> None:
        self.check_types()
        self.check_range("split_copies", 1, MAX_SPLIT_COPIES)
        if self.load_path not in LOAD_PATHS:
            raise LoweringOptionError(
                f"lowering option load_path must be {' or '.join(map(repr, LOAD_PATHS))}, got {self.load_path!r}"
            )
        if self.bit_signal not in BIT_SIGNALS:
            raise LoweringOptionError(
                f"lowering option bit_signal must be {' or '.join(map(repr, BIT_SIGNALS))}, got {self.bit_signal!r}"
            )
        self.check_range("fetch_depth", 1, MAX_FETCH_DEPTH)
        self.check_range("compute_warps", 0, MAX_COMPUTE_WARPS, " (0: the target's)")
        if self.cluster_size not in CLUSTER_SIZES:
            raise LoweringOptionError(
                f"lowering option cluster_size must be one of {', '.join(map(str, CLUSTER_SIZES))}, "
                f"got {self.cluster_size}"
            )
        self.check_range("load_ring", 1, L.MAX_LOAD_RING)
        self.check_range("stream_ring", 0, L.MAX_LOAD_RING, " (0: the target's)")
        for name in ("load_ring", "stream_ring"):
            depth = getattr(self, name)
            if depth & (depth - 1):
                raise LoweringOptionError(f"lowering option {name} must be a power of two, got {depth}")

    # -- derived --------------------------------------------------------------
    @property
    def lsu_loads(self) -> bool:
        """Whether the load engines copy with per-lane ``cp.async`` (the ``lsu`` path)."""
        return self.load_path == "lsu"

    @property
    def expands_loops(self) -> bool:
        """Whether a program's loops are unrolled on the host before the kernel sees them (``run_loops``
        off, or the ``lsu`` path, whose register fetcher walks plain queues)."""
        return not self.run_loops or self.lsu_loads

    def for_program(self, program: EncodedProgram, target: TargetDescription) -> LoweringOptions:
        """These options with what they leave to the target filled in for ``program`` on ``target``:
        ``stream_ring`` 0 becomes the target's ring for a program with or without hand-offs through
        global memory (:attr:`vdir.isa.EncodedProgram.has_global_handoffs`). The kernel builder reads
        only such options."""
        if self.stream_ring:
            return self
        return replace(self, stream_ring=target.stream_ring_for(program.has_global_handoffs))

    def ring_depth(self, kind: EngineKind) -> int:
        """The loads a load engine of ``kind`` keeps in flight (``load_ring`` or ``stream_ring``; options
        :meth:`for_program` filled in)."""
        assert self.stream_ring, "the stream ring is the target's until for_program fills it in"
        return self.stream_ring if kind == EngineKind.STREAM else self.load_ring

    @property
    def tensor_copies_enabled(self) -> bool:
        """Whether loads and stores that have a tensor map use it (``tensor_copies`` on the bulk path)."""
        return self.tensor_copies and not self.lsu_loads


#: what the lowering entry points accept as options: the options themselves,
#: a mapping or a ``"key=value ..."`` string (see :meth:`LoweringOptions.coerce`),
#: or None for the defaults
OptionsLike = LoweringOptions | Mapping[str, Any] | str | None
