"""``vdir-fuse``: merge producer/consumer micro-ops into fused op families.

Patterns (each a small :class:`~xdsl.pattern_rewriter.RewritePattern`), one
per fused family, built from the family's ``fusion`` rule
(:mod:`vdir.families`), plus load merging. With the built-in families:

* :class:`PrologueFusion` for ``rmsnorm_gemv`` -- an rmsnorm whose only user
  is the ``x`` of a plain gemv becomes that gemv's prologue:
  ``rmsnorm_gemv(w, x, g) {eps}``;
* :class:`EpilogueFusion` for ``gemv_silu_mul`` -- a silu_mul becomes the
  epilogue of a plain bf16 gemv that is one of its operands and has no other
  user: ``gemv_silu_mul(w, x, other) {operand = i}``, ``i`` being the
  silu_mul input the gemv was (0: ``silu(gemv) * other``, 1:
  ``silu(other) * gemv``);
* :class:`EpilogueFusion` for ``gemv_add`` -- likewise for a residual add:
  ``gemv_add(w, x, r)`` (``add`` is commutative in fp32, so either operand
  position fuses);
* :class:`MergeDuplicateLoads` -- a ``vdir.load`` that repeats an earlier one
  of the same block (same buffer, offsets, tile type, engine), with no write
  to that buffer in between, reuses the earlier tile.

The fused families are the exact compositions of their parts, including the
bf16 rounding of the intermediate tile, so fusion never changes a result.
No other producer/consumer pair has a fused family today (``add`` into
``silu_mul``, chains of elementwise ops, ...); such pairs are left alone.

A compute pair fuses only when all of these hold:

* the intermediate tile has exactly one use, as the operand the fused family
  expects (a tile used twice, even by the same op, is kept);
* producer and consumer are in the same block: fusing across a
  ``vdir.repeat`` boundary would redo the producer every iteration;
* both run on the same engine kind;
* their flows are equal, or only one has a flow (the fused op carries it);
* the fused family accepts the operands and the consumer's declared result
  type (so an accumulating gemv or an f32 partial-sum gemv does not fuse);
* the cost model's benefit exceeds ``min-benefit``.

The fused op replaces the consumer in place (so it keeps the consumer's
result name, location and program position), waits for the union of both
ops' ``after`` tokens, and the producer is erased. Tokens only come from
stores, so an intermediate tile can never be the subject of an ``after`` edge.

When a gemv could take either an rmsnorm prologue or an epilogue (only one
can fuse: no family has both), the one that saves more wins, the prologue on a
tie; both patterns apply the same rule, so the outcome does not depend on the
order the rewriter visits ops in. When both operands of a silu_mul (or add)
are fusable gemvs, the later one in program order fuses: its weights are
streamed last, so the epilogue runs right behind the final weight tile while
the earlier gemv's result is already waiting in shared memory. A gemv that
prefers its prologue is not a candidate, so the other one can still fuse.

General load merging (two loads of adjacent regions into one larger load) is
not done: the consumers would then need a view of part of the merged tile,
which the dialect cannot express, so the merge would change the tiles that
computes and stores consume. Merging identical loads is the case that is
always legal.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.affine import ApplyOp
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from vdir.analysis.cost_model import compute_fusion_benefit, load_merge_benefit
from vdir.diagnostics import PassFailure
from vdir.dialects.vdir import (
    ComputeOp,
    LoadOp,
    MicroOp,
    ProgramOp,
    StoreOp,
    TileType,
    family_params,
    target_of,
)
from vdir.dialects.vdir_sched import Stage
from vdir.families import FAMILIES, Epilogue, Family, FamilyError, Prologue, get_family

# --------------------------------------------------------------------------
# Legality helpers
# --------------------------------------------------------------------------


def _flow(op: MicroOp) -> int | None:
    return None if op.flow is None else op.flow.value.data  # type: ignore[attr-defined]


def merged_flow(a: MicroOp, b: MicroOp) -> tuple[bool, int | None]:
    """Whether ``a`` and ``b`` may become one micro-op, and the flow it carries."""
    fa, fb = _flow(a), _flow(b)
    if fa is None or fb is None or fa == fb:
        return True, fb if fb is not None else fa
    return False, None


def _single_use_producer(value: SSAValue, family: str) -> ComputeOp | None:
    """The ``family`` compute that defines ``value`` if ``value`` has one use."""
    op = value.owner
    if not isinstance(op, ComputeOp) or op.family.data != family:
        return None
    if not value.has_one_use():
        return None
    return op


def same_condition(a: MicroOp, b: MicroOp) -> bool:
    """``a`` and ``b`` have the same runtime condition (``when``), or neither has one."""
    ga, gb = a.guard, b.guard  # type: ignore[attr-defined]
    if ga is None or gb is None:
        return ga is None and gb is None
    return (
        same_index(ga, gb)
        and a.guard_op == b.guard_op  # type: ignore[attr-defined]
        and a.guard_bound == b.guard_bound  # type: ignore[attr-defined]
    )


def _condition_of(op: MicroOp) -> tuple[SSAValue, str, int] | None:
    """``op``'s runtime condition as the op constructors take it."""
    if op.guard is None:  # type: ignore[attr-defined]
        return None
    return op.guard, op.guard_op.data, op.guard_bound.value.data  # type: ignore[attr-defined]


def can_fuse(producer: ComputeOp, consumer: ComputeOp) -> bool:
    """The structural conditions for fusing ``producer`` into ``consumer``.

    Single use of the intermediate, same block, same engine kind, the same
    runtime condition and compatible flows; the family check and the cost
    check come on top.
    """
    if not same_condition(producer, consumer):
        return False
    use = producer.result.get_unique_use()
    if use is None or use.operation is not consumer:
        return False
    if producer.parent_block() is not consumer.parent_block():
        return False
    if producer.engine != consumer.engine:
        return False
    return merged_flow(producer, consumer)[0]


def _dedup(values: Sequence[SSAValue]) -> list[SSAValue]:
    out: list[SSAValue] = []
    for v in values:
        if not any(v is w for w in out):
            out.append(v)
    return out


def fused_signature_ok(
    family: str, inputs: Sequence[SSAValue], params: dict[str, Attribute], result: TileType
) -> bool:
    """Whether ``family`` accepts ``inputs`` and ``params`` and produces ``result``.

    This is the check the dialect verifier runs on a ``vdir.compute``, done
    before building anything so that a pattern never creates an invalid op.
    """
    try:
        get_family(family).check(
            [v.type.sig for v in inputs],  # type: ignore[attr-defined]
            family_params(DictionaryAttr(params)),
            result.sig,
        )
    except FamilyError:
        return False
    return True


def build_fused(
    producer: ComputeOp,
    consumer: ComputeOp,
    family: str,
    inputs: Sequence[SSAValue],
    params: dict[str, Attribute],
) -> ComputeOp:
    """The fused micro-op that replaces ``consumer`` (not yet inserted).

    It has the consumer's result type, engine, discardable attributes and
    location, the merged flow and the union of both ops' ``after`` tokens.
    """
    _, flow = merged_flow(producer, consumer)
    fused = ComputeOp(
        family,
        inputs,
        consumer.result.type,  # type: ignore[arg-type]
        params=params,
        engine=consumer.engine.data,
        flow=flow,
        deps=_dedup([*producer.deps, *consumer.deps]),
        guard=_condition_of(consumer),
    )
    fused.attributes.update(consumer.attributes)
    fused.location = consumer.location
    return fused


# --------------------------------------------------------------------------
# Compute fusion patterns
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class FusionPlan:
    """A producer -> consumer fusion that passed every check, ready to be built.

    ``inputs`` and ``params`` are the fused op's; ``benefit_us`` is the cost
    model's saving.
    """

    producer: ComputeOp
    consumer: ComputeOp
    family: str
    inputs: tuple[SSAValue, ...]
    params: dict[str, Attribute]
    benefit_us: float

    def apply(self, rewriter: PatternRewriter) -> None:
        """Replace the consumer by the fused op and erase the producer."""
        fused = build_fused(self.producer, self.consumer, self.family, self.inputs, self.params)
        rewriter.replace(self.consumer, fused)
        rewriter.erase(self.producer)


def pattern_name(fused: Family) -> str:
    """The ``only`` name of the pattern that creates ``fused`` (``gemv_add`` -> ``gemv-add``)."""
    return fused.name.replace("_", "-")


def _plan(
    fused: Family, producer: ComputeOp, consumer: ComputeOp, inputs: Sequence[SSAValue],
    params: dict[str, Attribute], min_benefit: float,
) -> FusionPlan | None:
    """The fusion of ``producer`` into ``consumer`` as ``fused``, if legal and worth it."""
    if not can_fuse(producer, consumer):
        return None
    benefit = compute_fusion_benefit(producer.result.type, target_of(consumer)).time_us  # type: ignore[arg-type]
    if benefit <= min_benefit:
        return None
    if not fused_signature_ok(fused.name, inputs, params, consumer.result.type):  # type: ignore[arg-type]
        return None
    return FusionPlan(producer, consumer, fused.name, tuple(inputs), params, benefit)


def prologue_plan(fused: Family, consumer: ComputeOp, min_benefit: float) -> FusionPlan | None:
    """The fusion of ``consumer``'s producer as the prologue of ``fused``, if legal and worth it.

    ``fused.fusion`` is a :class:`~vdir.families.Prologue`: the fused operands
    are the consumer's with the fed input replaced by the producer's
    operands, and the parameters are both ops'. Builds nothing.
    """
    rule = fused.fusion
    assert isinstance(rule, Prologue)
    k = rule.operand
    if consumer.family.data != rule.consumer or len(consumer.inputs) <= k:
        return None
    producer = _single_use_producer(consumer.inputs[k], rule.producer)
    if producer is None:
        return None
    inputs = (*consumer.inputs[:k], *producer.inputs, *consumer.inputs[k + 1 :])
    params = {**consumer.params.data, **producer.params.data}
    return _plan(fused, producer, consumer, inputs, params, min_benefit)


def latest_producer(consumer: ComputeOp, plans: Sequence[FusionPlan]) -> FusionPlan:
    """The plan whose producer comes last before ``consumer`` in its block.

    Walks back from the consumer (producers are in its block, see
    :func:`can_fuse`), so the cost is the distance to the nearest producer,
    not the size of the block.
    """
    by_producer: dict[Operation, FusionPlan] = {p.producer: p for p in plans}
    op = consumer.prev_op
    while op is not None:
        if op in by_producer:
            return by_producer[op]
        op = op.prev_op
    raise AssertionError("a fusion plan's producer is not before its consumer")


@dataclass
class EpilogueFusion(RewritePattern):
    """Fuse a producer into its elementwise consumer as the ``fused`` family's epilogue.

    ``fused.fusion`` is a :class:`~vdir.families.Epilogue`; e.g.
    ``silu_mul(gemv(w, x), b)`` -> ``gemv_silu_mul(w, x, b) {operand = 0}``
    and ``add(r, gemv(w, x))`` -> ``gemv_add(w, x, r)``. The fused operands
    are the producer's followed by the consumer's other inputs; the rule's
    ``operand_param`` records which input the producer's result was.
    """

    fused: Family
    min_benefit: float = 0.0
    #: the prologue families that are enabled too: a producer then takes this
    #: epilogue only if that saves strictly more (a tie goes to the prologue)
    prologues: tuple[Family, ...] = ()

    def plan(self, consumer: ComputeOp) -> FusionPlan | None:
        """The fusion this pattern would do on ``consumer``, or None. Builds nothing.

        Of the fusable producer operands, the later one in program order is
        chosen: a gemv's weights stream last.
        """
        rule = self.fused.fusion
        assert isinstance(rule, Epilogue)
        if consumer.family.data != rule.consumer:
            return None
        plans = [p for i in range(len(consumer.inputs)) if (p := self._plan_operand(consumer, i)) is not None]
        if len(plans) <= 1:
            return plans[0] if plans else None
        return latest_producer(consumer, plans)

    def _plan_operand(self, consumer: ComputeOp, i: int) -> FusionPlan | None:
        """The fusion of the producer defining ``consumer``'s operand ``i``, or None."""
        rule = self.fused.fusion
        assert isinstance(rule, Epilogue)
        producer = _single_use_producer(consumer.inputs[i], rule.producer)
        if producer is None:
            return None
        others = [v for j, v in enumerate(consumer.inputs) if j != i]
        params: dict[str, Attribute] = {rule.operand_param: IntegerAttr(i, i64)} if rule.operand_param else {}
        plan = _plan(self.fused, producer, consumer, (*producer.inputs, *others), params, self.min_benefit)
        if plan is None or self._prologue_saves_as_much(producer, plan.benefit_us):
            return None
        return plan

    def _prologue_saves_as_much(self, producer: ComputeOp, benefit: float) -> bool:
        for fam in self.prologues:
            prologue = prologue_plan(fam, producer, self.min_benefit)
            if prologue is not None and prologue.benefit_us >= benefit:
                return True
        return False

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ComputeOp, rewriter: PatternRewriter) -> None:
        plan = self.plan(op)
        if plan is not None:
            plan.apply(rewriter)


@dataclass
class PrologueFusion(RewritePattern):
    """Fuse a producer into the input of its consumer as the ``fused`` family's prologue.

    E.g. ``gemv(w, rmsnorm(x, g) {eps})`` -> ``rmsnorm_gemv(w, x, g) {eps}``.
    ``epilogues`` are the epilogue patterns that are enabled; if one of them
    would fuse this consumer into its own consumer and save more, the
    prologue fusion is left to it (no family has both).
    """

    fused: Family
    min_benefit: float = 0.0
    epilogues: tuple[EpilogueFusion, ...] = ()

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ComputeOp, rewriter: PatternRewriter) -> None:
        plan = prologue_plan(self.fused, op, self.min_benefit)
        if plan is None or self._epilogue_saves_more(op, plan.benefit_us):
            return
        plan.apply(rewriter)

    def _epilogue_saves_more(self, op: ComputeOp, benefit: float) -> bool:
        use = op.result.get_unique_use()
        if use is None or not isinstance(user := use.operation, ComputeOp):
            return False
        for pattern in self.epilogues:
            plan = pattern.plan(user)
            if plan is not None and plan.producer is op and plan.benefit_us > benefit:
                return True
        return False


# --------------------------------------------------------------------------
# Load merging
# --------------------------------------------------------------------------


def same_index(a: SSAValue, b: SSAValue) -> bool:
    """``a`` and ``b`` are provably the same index: one value, or equal ``affine.apply``s."""
    if a is b:
        return True
    oa, ob = a.owner, b.owner
    if not (isinstance(oa, ApplyOp) and isinstance(ob, ApplyOp)):
        return False
    return (
        oa.map == ob.map
        and len(oa.mapOperands) == len(ob.mapOperands)
        and all(same_index(x, y) for x, y in zip(oa.mapOperands, ob.mapOperands, strict=True))
    )


def same_region(a: LoadOp, b: LoadOp) -> bool:
    """``a`` and ``b`` load the same region of the same buffer into equal tiles."""
    return (
        a.source is b.source
        and a.result.type == b.result.type
        and a.static_offsets == b.static_offsets
        and len(a.dynamic_offsets) == len(b.dynamic_offsets)
        and all(same_index(x, y) for x, y in zip(a.dynamic_offsets, b.dynamic_offsets, strict=True))
    )


def writes_buffer(op: Operation, buffer: SSAValue) -> bool:
    """``op`` (or an op nested in it) stores to ``buffer``."""
    return any(isinstance(o, StoreOp) and o.dest is buffer for o in op.walk())


def index_key(value: SSAValue) -> object:
    """A hashable key that is equal for two values exactly when :func:`same_index` holds."""
    op = value.owner
    if isinstance(op, ApplyOp):
        return (op.map, tuple(index_key(v) for v in op.mapOperands))
    return value


def load_key(load: LoadOp) -> tuple[object, ...]:
    """A hashable key equal for two loads of the same region into equal tiles (:func:`same_region`) on one engine."""
    return (
        load.source,
        load.result.type,
        load.static_offsets,
        tuple(index_key(v) for v in load.dynamic_offsets),
        load.engine,
    )


class BlockLoads:
    """The loads and the buffer writes of one block, indexed for :class:`MergeDuplicateLoads`.

    Finding the earlier duplicate of a load is then a lookup of its key and a
    bisection of the buffer's writes, not a scan of every earlier op, so the
    pass stays linear in the size of the block. Positions are those of the
    block when it was indexed; the pass only erases loads and replaces
    computes, so the order of the loads and stores it indexed holds.
    """

    def __init__(self, block: Block):
        self.position: dict[Operation, int] = {}
        self.loads: dict[tuple[object, ...], list[LoadOp]] = defaultdict(list)
        self.rank: dict[LoadOp, int] = {}  # a load's place in its key's list
        self.writes: dict[SSAValue, list[int]] = defaultdict(list)
        for i, op in enumerate(block.ops):
            self.position[op] = i
            if isinstance(op, LoadOp):
                same = self.loads[load_key(op)]
                self.rank[op] = len(same)
                same.append(op)
            for buffer in {o.dest for o in op.walk() if isinstance(o, StoreOp)}:
                self.writes[buffer].append(i)

    def candidates(self, load: LoadOp) -> Iterator[LoadOp]:
        """The loads before ``load`` with its key and no write to its buffer in between, nearest first."""
        at = self.position[load]
        writes = self.writes.get(load.source, [])
        last_write = writes[bisect.bisect_left(writes, at) - 1] if writes and writes[0] < at else -1
        same = self.loads[load_key(load)]
        for r in range(self.rank[load] - 1, -1, -1):
            earlier = same[r]
            if self.position[earlier] < last_write:
                return
            if earlier.parent is not None:  # not merged away itself
                yield earlier


@dataclass
class MergeDuplicateLoads(RewritePattern):
    """Replace a load by an earlier identical load of the same block.

    The earlier load must read the same region into the same tile type on
    the same engine, with no store to the buffer between the two, a
    compatible flow, at least every token the later load waits for, and no
    condition the later load does not have (a skipped load makes no tile).
    The nearest such load is taken. Each block is indexed once
    (:class:`BlockLoads`), the first time one of its loads is visited.
    """

    min_benefit: float = 0.0
    blocks: dict[Block, BlockLoads] = field(default_factory=dict)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, load: LoadOp, rewriter: PatternRewriter) -> None:
        earlier = self.find_earlier(load)
        if earlier is None:
            return
        benefit = load_merge_benefit(load.result.type, target_of(load))  # type: ignore[arg-type]
        if benefit.time_us <= self.min_benefit:
            return
        rewriter.replace(load, [], [earlier.result])

    def find_earlier(self, load: LoadOp) -> LoadOp | None:
        """The nearest earlier load that ``load`` can reuse, or None."""
        block = load.parent_block()
        if block is None:
            return None
        if block not in self.blocks:
            self.blocks[block] = BlockLoads(block)
        for op in self.blocks[block].candidates(load):
            if (
                (op.guard is None or same_condition(op, load))
                and (load.flow is None or op.flow == load.flow)
                and all(any(d is e for e in op.deps) for d in load.deps)
            ):
                return op
        return None


# --------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------

def check_source_stage(program: ProgramOp) -> None:
    """Fusion runs before placement: a placed program's ops carry an SM each,
    and fusing two ops of different SMs would silently move work."""
    stage = program.stage
    if stage is not Stage.SOURCE:
        raise PassFailure(
            f"fusion needs a source program, but @{program.sym_name.data} is at stage "
            f"'{stage.value}'; run vdir-fuse before vdir-place",
            program,
        )


#: ``only`` name of the load-merging pattern
MERGE_LOADS = "merge-loads"


def fused_families() -> list[Family]:
    """The registered families that ``vdir-fuse`` creates, in registration order."""
    return [f for f in FAMILIES.values() if f.fusion is not None]


def pattern_names() -> tuple[str, ...]:
    """The names accepted by the ``only`` option: one per fused family, then load merging."""
    return (*(pattern_name(f) for f in fused_families()), MERGE_LOADS)


@dataclass(frozen=True)
class FusePass(ModulePass):
    """Fuse producer/consumer compute micro-ops and merge duplicate loads.

    Options: ``min-benefit`` (µs, a float or an integer, default 0): fuse only when the cost model's
    estimated saving exceeds it. ``only`` (a comma-separated list of
    pattern names from :func:`pattern_names`, default all): run just those.
    """

    name = "vdir-fuse"

    min_benefit: float | int = 0.0
    only: tuple[str, ...] = ()

    def selected(self) -> set[str]:
        """The patterns this pass runs, by name (``only``, else all); an unknown name is a failure
        listing the known ones."""
        known = pattern_names()
        names = set(self.only)
        unknown = names - set(known)
        if unknown:
            raise PassFailure(
                f"unknown pattern(s) in 'only': {', '.join(sorted(unknown))} "
                f"(known: {', '.join(known)})"
            )
        return names or set(known)

    def patterns(self) -> list[RewritePattern]:
        """The enabled patterns: merge-loads, the prologue fusions, the epilogue fusions."""
        names = self.selected()
        mb = float(self.min_benefit)
        enabled = [f for f in fused_families() if pattern_name(f) in names]
        prologues = tuple(f for f in enabled if isinstance(f.fusion, Prologue))
        epilogues = tuple(EpilogueFusion(f, mb, prologues) for f in enabled if isinstance(f.fusion, Epilogue))
        patterns: list[RewritePattern] = []
        if MERGE_LOADS in names:
            patterns.append(MergeDuplicateLoads(mb))
        patterns.extend(PrologueFusion(f, mb, epilogues) for f in prologues)
        patterns.extend(epilogues)
        return patterns

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in op.walk():
            if isinstance(program, ProgramOp):
                check_source_stage(program)
        PatternRewriteWalker(
            GreedyRewritePatternApplier(self.patterns()), apply_recursively=True
        ).rewrite_module(op)
