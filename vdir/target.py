"""Target descriptions: the device facts the compiler reads.

No pass hard-codes a device. Every number a pass needs (how many SMs, how much
shared memory a CTA may use, which engines an SM has and what each can run)
comes from a :class:`TargetDescription`, looked up by name with
:func:`get_target`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from vdir.diagnostics import VdirError


@dataclass(frozen=True)
class EngineKind:
    """A kind of virtual engine on one SM.

    ``runs`` names the micro-op classes (``load``, ``compute``, ``store``) the
    engine can execute; ``reads_tiles`` says whether it can consume on-chip
    tiles (a load engine reads only global memory).
    """

    name: str
    count: int
    runs: frozenset[str]
    reads_tiles: bool


@dataclass(frozen=True)
class TargetDescription:
    """Facts about one GPU that the passes, the lowering and the runtime read."""

    name: str
    arch: str
    num_sms: int
    smem_per_block: int
    engines: tuple[EngineKind, ...]
    smem_alignment: int = 128
    dependency_bits: int = 64
    ptx_version: str = "8.0"
    compute_threads: int = 256
    hbm_bytes_per_us: float = 4.2e6
    flops_per_us_per_sm: float = 2.0e5
    description: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def engine(self, name: str) -> EngineKind | None:
        """The engine kind called ``name``, or None."""
        for kind in self.engines:
            if kind.name == name:
                return kind
        return None

    def with_sms(self, num_sms: int) -> "TargetDescription":
        """The same target restricted to ``num_sms`` SMs."""
        return replace(self, num_sms=num_sms)


_HOPPER_ENGINES = (
    EngineKind("load", 1, frozenset({"load"}), reads_tiles=False),
    EngineKind("compute", 1, frozenset({"compute"}), reads_tiles=True),
    EngineKind("store", 1, frozenset({"store"}), reads_tiles=True),
)

#: Engine order is the engine index used by the encoding and the kernel.
ENGINE_INDEX = {"load": 0, "compute": 1, "store": 2}

TARGETS: dict[str, TargetDescription] = {
    "h200": TargetDescription(
        name="h200",
        arch="sm_90a",
        num_sms=132,
        smem_per_block=227 * 1024,
        engines=_HOPPER_ENGINES,
        hbm_bytes_per_us=4.2e6,
        description="NVIDIA H200 (Hopper, 141 GB HBM3e)",
    ),
    "h100": TargetDescription(
        name="h100",
        arch="sm_90a",
        num_sms=132,
        smem_per_block=227 * 1024,
        engines=_HOPPER_ENGINES,
        hbm_bytes_per_us=3.0e6,
        description="NVIDIA H100 SXM (Hopper, 80 GB HBM3)",
    ),
}

DEFAULT_TARGET = "h200"


class UnknownTargetError(VdirError, ValueError):
    """Raised for a target name that is not in :data:`TARGETS`."""


def get_target(name: str = DEFAULT_TARGET, num_sms: int | None = None) -> TargetDescription:
    """Look a target up by name, optionally restricting the SM count."""
    try:
        target = TARGETS[name]
    except KeyError:
        known = ", ".join(sorted(TARGETS))
        raise UnknownTargetError(f"unknown target '{name}' (known: {known})") from None
    if num_sms is not None:
        if not 1 <= num_sms <= target.num_sms:
            raise UnknownTargetError(
                f"target '{name}' has {target.num_sms} SMs; cannot use {num_sms}"
            )
        target = target.with_sms(num_sms)
    return target
