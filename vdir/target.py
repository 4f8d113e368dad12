"""Target descriptions: the device facts the compiler reads.

No pass hard-codes a device. Every number a pass needs (how many SMs, how much
shared memory a CTA may use, which engines an SM has, in which queue order,
and what each can run) comes from a :class:`TargetDescription`, looked up by
name with :func:`get_target`. The engine kinds (:class:`EngineKind`) and each
target's engines (:class:`EngineSpec`) are defined here only; the dialect, the
passes, the encoding, the simulator and the kernel read them from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import StrEnum, auto

from vdir.diagnostics import VdirError


class EngineKind(StrEnum):
    """The names of the engine kinds an SM can have (``on load`` in the IR).

    Which of them a target has, in which queue order, and what each runs,
    comes from its :attr:`TargetDescription.engines`.
    """

    LOAD = auto()
    COMPUTE = auto()
    STORE = auto()
    #: a second load engine, for the loads that wait on nothing (weight tiles,
    #: tables): ``vdir-place`` moves them here, so that they stream while the
    #: load engine waits on other SMs for an activation row
    STREAM = auto()


@dataclass(frozen=True)
class EngineSpec:
    """One virtual engine of an SM: one instruction queue.

    ``runs`` names the micro-op classes (``load``, ``compute``, ``store``) the
    engine can execute; ``reads_tiles`` says whether it can consume on-chip
    tiles (a load engine reads only global memory); ``pipelined`` says
    whether it may start a micro-op before the previous one completed
    (completions stay in queue order).
    """

    kind: EngineKind
    runs: frozenset[str]
    reads_tiles: bool
    pipelined: bool = False

    @property
    def name(self) -> str:
        """The engine's name (its kind)."""
        return self.kind.value


#: loads the stream engine keeps in flight (its weight tiles) on a target that does not say
#: (:attr:`TargetDescription.stream_ring`, :attr:`TargetDescription.handoff_stream_ring`)
DEFAULT_STREAM_RING = 2


@dataclass(frozen=True)
class TargetDescription:
    """Facts about one GPU that the passes, the lowering and the runtime read."""

    name: str
    arch: str
    num_sms: int
    smem_per_block: int
    #: one spec per engine of an SM, in queue order: the position is the
    #: engine index of the encoding, the queue table and the kernel
    engines: tuple[EngineSpec, ...]
    smem_alignment: int = 128
    #: device memory (bytes); a program's buffers must fit in it together
    global_memory_bytes: int = 80 * 10**9
    dependency_bits: int = 64
    ptx_version: str = "8.0"
    compute_threads: int = 256
    hbm_bytes_per_us: float = 4.2e6
    flops_per_us_per_sm: float = 2.0e5
    description: str = ""
    #: weight tiles the stream engine keeps in flight per SM in a program whose SMs hand nothing to
    #: each other, unless the lowering option ``stream_ring`` says otherwise: a gemv streams its
    #: tiles and nothing waits behind them, so two 64 KB tiles per SM pay on both GPUs (one costs the
    #: gemvs 5-8% on the H200, up to 11% on the H100: docs/performance.md, rounds 5 and 45)
    stream_ring: int = DEFAULT_STREAM_RING
    #: the same in a program whose engines hand rows to each other through global memory
    #: (:attr:`vdir.isa.EncodedProgram.has_global_handoffs`): there, every tile in flight on an SM
    #: is a wait for its releasing stores (a release's fence drains the SM's bulk copies), so enough
    #: bytes in flight to keep the HBM streaming and no more. The H200 needs two; on the H100, whose
    #: HBM is slower, one covers it and takes 1.7-3.5% off the Llama and Qwen3 decode steps and 0.7-7%
    #: off the 16-layer MLP stacks (rounds 44 and 45)
    handoff_stream_ring: int = DEFAULT_STREAM_RING
    #: the pass pipeline's stream holds on this GPU, where its options leave them to the target
    #: (``vdir-pipeline{hold-streams}``, ``vdir-hold-streams``' ``phases``; 0: none): the weight tile
    #: that would issue into a hand-off store's slot waits for the store. Only programs whose SMs hand
    #: rows to each other have such stores. With :attr:`release_first`, one phase takes 0.8-4.2% off the
    #: H100's 16-layer MLP stacks and 0.35-1.8% off its Llama and Qwen3-1.7B decode steps (the Qwen3-0.6B
    #: step, whose HBM idles most of the time, +1.2%); on the H200 the pair loses (1B step +2.0%):
    #: docs/performance.md, rounds 37 and 55
    stream_holds: int = 0
    #: a hand-off store that a stream load on its SM waits for releases its counter before its bits,
    #: where the pipeline's options leave it to the target (``vdir-pipeline{release-first}``): what
    #: makes :attr:`stream_holds` pay, docs/performance.md round 36
    release_first: bool = False
    #: what the driver calls this GPU (a part of its name, e.g. ``H100``): how a platform recognises
    #: the device it runs on (:func:`target_for_device`)
    device_names: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def engine(self, name: str) -> EngineSpec | None:
        """The engine called ``name``, or None."""
        for spec in self.engines:
            if spec.name == name:
                return spec
        return None

    @property
    def num_engines(self) -> int:
        """Engines (instruction queues) per SM."""
        return len(self.engines)

    @property
    def engine_names(self) -> tuple[str, ...]:
        """The engines' names in queue order."""
        return tuple(spec.name for spec in self.engines)

    def engine_index(self, name: str) -> int:
        """The queue index of the engine called ``name`` (KeyError if the target has none)."""
        for i, spec in enumerate(self.engines):
            if spec.name == name:
                return i
        raise KeyError(f"target '{self.name}' has no '{name}' engine")

    @property
    def load_engines(self) -> tuple[int, ...]:
        """The queue indices of the engines that run loads (on Hopper: load and stream).

        Each keeps several loads in flight and completes them in its own queue
        order: the simulator runs each so, and the kernel gives each its own
        warp and mbarrier ring.
        """
        return tuple(i for i, spec in enumerate(self.engines) if "load" in spec.runs)

    def with_sms(self, num_sms: int) -> "TargetDescription":
        """The same target restricted to ``num_sms`` SMs."""
        return replace(self, num_sms=num_sms)

    def stream_ring_for(self, global_handoffs: bool) -> int:
        """The weight tiles the stream engine keeps in flight per SM in a program that hands rows
        through global memory (``global_handoffs``) or not."""
        return self.handoff_stream_ring if global_handoffs else self.stream_ring

    def on_device(self, num_sms: int, smem_per_block: int, device_name: str) -> "TargetDescription":
        """This target as a GPU with ``num_sms`` SMs, ``smem_per_block`` bytes of shared memory per CTA
        and the driver's name ``device_name`` runs it: at most the device's SMs and shared memory, and
        the stream rings of the GPU it is (:func:`target_for_device`; a program compiled for the H200 and
        run on an H100 streams as the H100 needs), where the name is a known one."""
        t = self.with_sms(num_sms) if num_sms < self.num_sms else self
        if smem_per_block < t.smem_per_block:
            t = replace(t, smem_per_block=smem_per_block)
        device = target_for_device(device_name)
        if device is None:
            return t
        return replace(t, stream_ring=device.stream_ring, handoff_stream_ring=device.handoff_stream_ring)


_HOPPER_ENGINES = (
    EngineSpec(EngineKind.LOAD, frozenset({"load"}), reads_tiles=False, pipelined=True),
    EngineSpec(EngineKind.COMPUTE, frozenset({"compute"}), reads_tiles=True),
    EngineSpec(EngineKind.STORE, frozenset({"store"}), reads_tiles=True),
    EngineSpec(EngineKind.STREAM, frozenset({"load"}), reads_tiles=False, pipelined=True),
)

TARGETS: dict[str, TargetDescription] = {
    "h200": TargetDescription(
        name="h200",
        arch="sm_90a",
        num_sms=132,
        smem_per_block=227 * 1024,
        engines=_HOPPER_ENGINES,
        global_memory_bytes=141 * 10**9,
        hbm_bytes_per_us=4.2e6,
        description="NVIDIA H200 (Hopper, 141 GB HBM3e)",
        device_names=("H200",),
    ),
    "h100": TargetDescription(
        name="h100",
        arch="sm_90a",
        num_sms=132,
        smem_per_block=227 * 1024,
        engines=_HOPPER_ENGINES,
        global_memory_bytes=80 * 10**9,
        hbm_bytes_per_us=3.0e6,
        description="NVIDIA H100 SXM (Hopper, 80 GB HBM3)",
        handoff_stream_ring=1,
        stream_holds=1,
        release_first=True,
        device_names=("H100",),
    ),
}

DEFAULT_TARGET = "h200"

#: the fewest SMs a program can be placed on (``num-sms``, ``--num-sms``);
#: the most is the target's ``num_sms``
MIN_SMS = 1


def target_for_device(device_name: str) -> TargetDescription | None:
    """The target one of whose :attr:`~TargetDescription.device_names` is a word of the driver's name
    ``device_name`` (``H100`` of ``NVIDIA H100 80GB HBM3``), or None for a GPU no target describes."""
    for target in TARGETS.values():
        if any(re.search(rf"\b{re.escape(part)}\b", device_name) for part in target.device_names):
            return target
    return None


class UnknownTargetError(VdirError, ValueError):
    """Raised for a target name that is not in :data:`TARGETS`."""


def get_target(name: str = DEFAULT_TARGET, num_sms: int | None = None) -> TargetDescription:
    """Look a target up by name, optionally restricting the SM count."""
    try:
        target = TARGETS[name]
    except (KeyError, TypeError):  # TypeError: a name that is not a string (a list cannot even be looked up)
        known = ", ".join(sorted(TARGETS))
        raise UnknownTargetError(f"unknown target {name!r} (known: {known})") from None
    if num_sms is not None:
        if not MIN_SMS <= num_sms <= target.num_sms:
            raise UnknownTargetError(
                f"target '{name}' has {target.num_sms} SMs; cannot use {num_sms}"
            )
        target = target.with_sms(num_sms)
    return target
