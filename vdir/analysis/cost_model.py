"""The analytic cost model shared by the vdir passes.

``vdir-fuse`` asks it whether a fusion saves anything, ``vdir-place`` balances
SMs with :func:`op_cost`, and ``vdir-schedule`` uses its per-micro-op times as
critical-path weights. Every device number comes from the
:class:`~vdir.target.TargetDescription`; the model adds only the few constants
below, which a target may override through its ``extra`` dictionary under the
key in brackets.

Per micro-op the model counts

* **global bytes**: the bytes a ``vdir.load`` reads from or a ``vdir.store``
  writes to global memory (the tile's size; a compute touches none);
* **shared-memory bytes**: the on-chip bytes the micro-op touches: a load
  writes its tile, a store reads its tile, a compute reads its inputs and
  writes its result (:meth:`vdir.families.Family.cost`);
* **flops**: from the op family (:meth:`vdir.families.Family.cost`);
* **time** in microseconds, on one SM::

      time = MICRO_OP_OVERHEAD_US
           + global_bytes / (hbm_bytes_per_us / num_sms)
           + smem_bytes   / SMEM_BYTES_PER_US_PER_SM
           + flops        / flops_per_us_per_sm

  Global traffic is charged at the SM's fair share of HBM bandwidth, because
  a program that is worth running on the whole device keeps every SM
  streaming at once. The terms are added, not overlapped: the model ranks
  alternatives, it does not predict wall-clock time.

Constants (µs and bytes/µs):

``MICRO_OP_OVERHEAD_US`` [``micro_op_overhead_us``]
    Fixed cost of dispatching one micro-op: its engine fetches and decodes the
    128-byte instruction, polls the dependency bitmap, and (compute) the
    engine's threads meet at a barrier before and after the body. A few
    hundred cycles at ~1.7 GHz; 0.3 µs.
``DEPENDENCY_EDGE_US`` [``dependency_edge_us``]
    One producer-to-consumer edge: the producer's shared-memory fence and
    bitmap toggle, and the consumer observing it. 0.05 µs.
``SMEM_BYTES_PER_US_PER_SM`` [``smem_bytes_per_us_per_sm``]
    Shared-memory bandwidth of one SM: 128 bytes per cycle at ~1.7 GHz,
    about 2.2e5 bytes/µs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.ir import Block, Operation, SSAValue

from vdir.dialects.vdir import ComputeOp, LoadOp, RepeatOp, StoreOp, TileType
from vdir.families import TileSig, get_family
from vdir.target import TargetDescription

if TYPE_CHECKING:
    from vdir.analysis.graph import Graph, Node

MICRO_OP_OVERHEAD_US = 0.3
DEPENDENCY_EDGE_US = 0.05
SMEM_BYTES_PER_US_PER_SM = 2.2e5


def _constant(target: TargetDescription, key: str, default: float) -> float:
    return float(target.extra.get(key, default))


def micro_op_overhead_us(target: TargetDescription) -> float:
    """The fixed per-micro-op dispatch cost on ``target``."""
    return _constant(target, "micro_op_overhead_us", MICRO_OP_OVERHEAD_US)


def dependency_edge_us(target: TargetDescription) -> float:
    """The cost of one dependency edge (signal + wait) on ``target``."""
    return _constant(target, "dependency_edge_us", DEPENDENCY_EDGE_US)


def smem_bytes_per_us(target: TargetDescription) -> float:
    """Shared-memory bandwidth of one SM of ``target``, in bytes/µs."""
    return _constant(target, "smem_bytes_per_us_per_sm", SMEM_BYTES_PER_US_PER_SM)


def hbm_bytes_per_us_per_sm(target: TargetDescription) -> float:
    """One SM's fair share of the device's HBM bandwidth, in bytes/µs."""
    return target.hbm_bytes_per_us / target.num_sms


@dataclass(frozen=True)
class Cost:
    """What one micro-op (or a sum of them) costs.

    ``time_us`` includes one :data:`MICRO_OP_OVERHEAD_US` per micro-op.
    Costs add with ``+`` and scale with ``*`` by an int (a repeat's trip count).
    """

    global_bytes: int = 0
    smem_bytes: int = 0
    flops: int = 0
    time_us: float = 0.0

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(
            self.global_bytes + other.global_bytes,
            self.smem_bytes + other.smem_bytes,
            self.flops + other.flops,
            self.time_us + other.time_us,
        )

    def __mul__(self, n: int) -> "Cost":
        return Cost(self.global_bytes * n, self.smem_bytes * n, self.flops * n, self.time_us * n)

    __rmul__ = __mul__


ZERO_COST = Cost()


def micro_op_cost(
    target: TargetDescription, global_bytes: int = 0, smem_bytes: int = 0, flops: int = 0
) -> Cost:
    """The :class:`Cost` of one micro-op with the given traffic and work."""
    time = (
        micro_op_overhead_us(target)
        + global_bytes / hbm_bytes_per_us_per_sm(target)
        + smem_bytes / smem_bytes_per_us(target)
        + flops / target.flops_per_us_per_sm
    )
    return Cost(global_bytes, smem_bytes, flops, time)


def signature_cost(
    kind: str,
    result: TileSig,
    target: TargetDescription,
    inputs: Sequence[TileSig] = (),
    family: str | None = None,
) -> Cost:
    """The cost of a micro-op given only its class and tile signatures.

    ``kind`` is ``"load"``, ``"compute"`` or ``"store"``; ``result`` is the
    loaded, computed or stored tile; a compute also needs its ``inputs`` and
    ``family``. This is the form for passes that work on an expanded graph
    rather than on operations.
    """
    if kind in ("load", "store"):
        return micro_op_cost(target, global_bytes=result.nbytes, smem_bytes=result.nbytes)
    if kind == "compute":
        if family is None:
            raise ValueError("the cost of a compute micro-op needs its family")
        smem, flops = get_family(family).cost(list(inputs), result)
        return micro_op_cost(target, smem_bytes=smem, flops=flops)
    raise ValueError(f"unknown micro-op class '{kind}' (expected load, compute or store)")


def op_cost(op: Operation, target: TargetDescription) -> Cost:
    """The cost of one ``vdir.load``, ``vdir.compute`` or ``vdir.store``.

    Any other operation (``vdir.join``, ``affine.apply``, ...) is free: it is
    bookkeeping that the encoder folds away. A ``vdir.repeat`` is not a
    micro-op; use :func:`block_cost` for its body.
    """
    if isinstance(op, LoadOp):
        return signature_cost("load", _sig(op.result), target)
    if isinstance(op, StoreOp):
        return signature_cost("store", _sig(op.value), target)
    if isinstance(op, ComputeOp):
        return signature_cost(
            "compute", _sig(op.result), target, [_sig(v) for v in op.inputs], op.family.data
        )
    return ZERO_COST


def _sig(value: SSAValue) -> TileSig:
    assert isinstance(value.type, TileType)
    return value.type.sig


def block_cost(block: Block, target: TargetDescription) -> Cost:
    """The summed cost of every micro-op in ``block``, repeats expanded.

    A ``vdir.repeat`` counts its body ``trip_count`` times. This is the total
    work, not a critical path: it is what placement balances across SMs.
    """
    total = ZERO_COST
    for op in block.ops:
        if isinstance(op, RepeatOp):
            total = total + block_cost(op.body.block, target) * op.trip_count
        else:
            total = total + op_cost(op, target)
    return total


@dataclass(frozen=True)
class FusionBenefit:
    """What merging two micro-ops into one saves.

    ``global_bytes``: global-memory traffic no longer done (a merged load);
    ``smem_bytes``: shared-memory traffic no longer done (the intermediate
    tile's write by the producer and read by the consumer); ``edges`` and
    ``dispatches``: dependency edges and micro-op dispatches removed;
    ``time_us``: all of it priced with the model's constants.
    """

    global_bytes: int
    smem_bytes: int
    edges: int
    dispatches: int
    time_us: float


def compute_fusion_benefit(intermediate: TileType, target: TargetDescription) -> FusionBenefit:
    """The benefit of fusing a compute producer into its only compute consumer.

    The intermediate tile is neither written to nor read back from shared
    memory, the producer-to-consumer edge disappears, and one micro-op fewer
    is dispatched. The fused body still does the producer's arithmetic, so no
    flops are saved.
    """
    smem = 2 * intermediate.nbytes
    time = smem / smem_bytes_per_us(target) + dependency_edge_us(target) + micro_op_overhead_us(target)
    return FusionBenefit(global_bytes=0, smem_bytes=smem, edges=1, dispatches=1, time_us=time)


def load_merge_benefit(tile: TileType, target: TargetDescription) -> FusionBenefit:
    """The benefit of serving a duplicate ``vdir.load`` of ``tile`` from an earlier one.

    The duplicate's global read, its shared-memory write and its dispatch go
    away. Its consumers keep one edge each, now from the surviving load, so
    no edge is saved.
    """
    n = tile.nbytes
    time = n / hbm_bytes_per_us_per_sm(target) + n / smem_bytes_per_us(target) + micro_op_overhead_us(target)
    return FusionBenefit(global_bytes=n, smem_bytes=n, edges=0, dispatches=1, time_us=time)


def node_time_us(node: Node, graph: Graph, cache: dict | None = None) -> float:
    """Cost-model time of one micro-op on one SM (µs), read by vdir-place and vdir-verify-deps."""
    inputs = tuple(i.tile for i in node.inputs) if node.kind == "compute" else ()
    family = node.family if node.kind == "compute" else None
    key = (node.kind, node.tile, family, inputs)
    if cache is not None and key in cache:
        return cache[key]
    t = signature_cost(node.kind, node.tile, graph.target, inputs, family).time_us  # type: ignore[arg-type]
    if cache is not None:
        cache[key] = t
    return t
