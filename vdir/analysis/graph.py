"""The micro-op graph: the analysis every scheduling pass works on.

:func:`build_graph` expands a program (unrolling ``vdir.repeat``, evaluating
``affine.apply`` offsets, checking every region against its buffer) into a
flat list of :class:`Node` in program order, and derives the dependencies:

* tile edges (``Node.inputs``): a compute or store reads the tile a producer
  made;
* ordering edges (``Node.deps``): explicit tokens (``after``, ``vdir.join``)
  and the memory dependencies through global buffers that program order
  implies — read-after-write, write-after-read and write-after-write on
  overlapping regions. Each entry of ``deps`` is a *dependency group*, a tuple
  of producer nodes that the consumer waits for as a whole; equal groups are
  the same tuple object so that later passes can give a group one global
  counter.

The scheduling passes annotate nodes (``sm``, queue position, shared-memory
offset, dependency bits, counters). :func:`graph_to_ir` writes the annotated
graph back as a flat program in the typed scheduled form (``vdir.stage``,
``vdir.layout`` and each micro-op's ``vdir.sched``, see
:mod:`vdir.dialects.vdir_sched`), and :func:`build_graph` reads such a
program back, so each pass can run on its own from ``vdir-opt``. These two
are the only conversions between the graph and the IR. Big programs go
through ``vdir-pipeline``, which keeps the graph in memory from start to end.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from xdsl.dialects.affine import ApplyOp
from xdsl.dialects.arith import AddiOp, ConstantOp, MuliOp
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DictionaryAttr,
    FileLineColLoc,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)

from vdir import isa
from vdir.analysis.runtime_values import (
    Condition,
    RuntimeIndex,
    RuntimeSource,
    RuntimeValueError,
    source_values_keeping,
)
from vdir.diagnostics import PassFailure, location_of
from vdir.dialects.vdir import (
    BULK_COPY_ALIGN,
    DYNAMIC,
    BufferType,
    ComputeOp,
    EngineKind,
    JoinOp,
    LoadOp,
    ProgramOp,
    ReadOp,
    ReduceKind,
    RepeatOp,
    StoreOp,
    TileType,
)
from vdir.dialects.vdir_sched import (
    LAYOUT_KEY,
    SCHED_KEY,
    STAGE_KEY,
    LayoutAttr,
    ScheduleAttr,
    Stage,
    StageAttr,
)
from vdir.families import DTYPE_BYTES, TileSig
from vdir.isa import buffer_role
from vdir.limits import OPTIONS, current_limits
from vdir.target import DEFAULT_TARGET, TargetDescription, get_target

#: sort key of the schedule order: program order, hoisted loads moved up
SCHEDULE_ORDER = operator.attrgetter("seq", "hoist")

#: order of the nodes of a placed program: by SM, then schedule order
SCHEDULED_ORDER = operator.attrgetter("sm", "seq", "hoist")

#: order of the scheduling stages, as recorded in the program's ``vdir.stage``
STAGES = tuple(s.value for s in Stage)


@dataclass(eq=False, slots=True)
class Node:
    """One micro-op instance of the expanded program."""

    id: int
    kind: str  # "load" | "compute" | "store"
    engine: str
    seq: int  # position in program order (clones share their original's)
    name: str
    loc: str
    tile: TileSig | None = None  # produced (load/compute) or stored (store)
    buffer: int = -1
    row: int = 0
    col: int = 0
    family: str = ""
    params: dict = field(default_factory=dict)
    inputs: list["Node"] = field(default_factory=list)
    deps: list[tuple["Node", ...]] = field(default_factory=list)
    flow: int | None = None
    hoist: int = 0  # < 0: scheduled that many places before others of equal seq
    # ---- runtime values (see vdir.analysis.runtime_values)
    #: the region's offset along ``dyn_axis`` (0 rows, 1 columns) is this
    #: runtime index (the static ``row``/``col`` on that axis is then 0)
    dyn: RuntimeIndex | None = None
    dyn_axis: int = 0
    #: the source values (inclusive) that keep the region inside its buffer:
    #: what the engine checks before the copy
    dyn_range: tuple[int, int] = (0, 0)
    #: the micro-op runs only when this holds (it still waits and signals)
    guard: Condition | None = None
    #: a store's reduction (``reduce add``): it reads its region as well as writing it
    reduce: ReduceKind | None = None
    #: the trip of the program's layer loop (:func:`layer_loop`) this micro-op belongs to, -1 outside it;
    #: ``template``: its index among the micro-ops of that trip, the same in every trip
    trip: int = -1
    template: int = -1
    # ---- filled by the passes
    #: a load that polls its bytes' flag words instead of waiting for its group of stores into its
    #: buffer, or a store that also writes its bytes as flag words (``vdir.analysis.flag_words``)
    flag_words: bool = False
    sm: int = -1
    pos: int = -1
    smem: int = -1
    wait_bits: dict[int, int] = field(default_factory=dict)  # bit -> parity
    signal_bits: list[int] = field(default_factory=list)
    #: (counter, count); most nodes have none (an empty tuple: one object for all of them)
    wait_counters: Sequence[tuple[int, int]] = ()
    release_counters: Sequence[int] = ()

    @property
    def key(self) -> tuple[int, int]:
        """Order of the schedule: program order, with hoisted loads moved up."""
        return (self.seq, self.hoist)

    def snapshot(self) -> tuple:
        """The facts the scheduling passes fill in (and ``deps``, which they extend).

        Containers are saved as tuples: the empty ones (all of them before
        ``vdir-layout-deps``) then cost nothing, which keeps a snapshot of a
        large graph as cheap as copying its dependency lists.
        """
        return (
            self.seq, self.hoist, self.sm, self.pos, self.smem, tuple(self.deps),
            tuple(self.wait_bits.items()), tuple(self.signal_bits), tuple(self.wait_counters),
            tuple(self.release_counters),
        )

    def restore(self, saved: tuple) -> None:
        """Put back the facts of a :meth:`snapshot`, undoing the passes run since."""
        (self.seq, self.hoist, self.sm, self.pos, self.smem, deps, wait_bits, signal_bits,
         wait_counters, release_counters) = saved
        self.deps, self.wait_bits, self.signal_bits = list(deps), dict(wait_bits), list(signal_bits)
        self.wait_counters, self.release_counters = list(wait_counters), list(release_counters)

    @property
    def produces_tile(self) -> bool:
        return self.kind in ("load", "compute")

    def __repr__(self) -> str:
        return f"<{self.name}#{self.id} sm={self.sm}>"


@dataclass
class BufferArg:
    """A program argument: a global buffer."""

    name: str
    shape: tuple[int, int]
    dtype: str
    is_output: bool = False
    is_input: bool = False  # some load reads bytes no earlier store wrote
    #: declared ``scratch``: never an output, and never read before the program writes it
    scratch: bool = False

    @property
    def role(self) -> str:
        """``in``, ``out``, ``inout`` or ``scratch``, as the encoding records it."""
        return buffer_role(self.is_input, self.is_output)

    @property
    def row_bytes(self) -> int:
        return self.shape[1] * DTYPE_BYTES[self.dtype]

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.row_bytes


@dataclass(frozen=True)
class ScalarArg:
    """A launch-time scalar argument: its name and declared half-open range."""

    name: str
    lo: int
    hi: int


@dataclass
class Graph:
    """A program as a list of nodes in program order, plus its facts."""

    name: str
    target: TargetDescription
    args: list[BufferArg]
    nodes: list[Node]
    scalars: list[ScalarArg] = field(default_factory=list)
    stage: str = "source"
    num_sms: int = 0
    smem_bytes: int = 0
    num_counters: int = 0
    counter_counts: dict[int, int] = field(default_factory=dict)
    program_op: ProgramOp | None = None
    #: trips of the program's layer loop (:func:`layer_loop`), 0 if it has none
    loop_trips: int = 0
    #: whether ``vdir-place`` placed every trip of the layer loop as its first (its ``keep-trips``):
    #: then the later passes keep the trips alike too (each SM's rings, the dependency bits)
    trips_kept: bool = False

    def snapshot(self) -> tuple:
        """The pass-filled facts of the graph and of every node, for :meth:`restore`."""
        facts = (self.num_sms, self.smem_bytes, self.num_counters, dict(self.counter_counts))
        return facts, [n.snapshot() for n in self.nodes]

    def restore(self, saved: tuple) -> None:
        """Undo the passes run since :meth:`snapshot` (the node list itself is unchanged)."""
        facts, nodes = saved
        self.num_sms, self.smem_bytes, self.num_counters, counts = facts
        self.counter_counts = dict(counts)
        for node, node_facts in zip(self.nodes, nodes, strict=True):
            node.restore(node_facts)

    def describe(self, node: Node) -> str:
        where = f" on SM {node.sm}" if node.sm >= 0 else ""
        return f"{node.name}{where} ({node.loc})"


class GroupInterner:
    """Makes equal dependency groups the same tuple object."""

    def __init__(self) -> None:
        #: by the id of a one-node group's node, or the tuple of the ids of a larger group's nodes
        self._groups: dict[int | tuple[int, ...], tuple[Node, ...]] = {}

    def __call__(self, nodes: Iterable[Node]) -> tuple[Node, ...]:
        if not isinstance(nodes, (list, tuple)):  # a list or tuple is read as it is (most callers pass one)
            nodes = list(nodes)
        if len(nodes) != 1:
            unique = {id(n): n for n in nodes}
            if len(unique) != 1:
                members = sorted(unique.values(), key=_GROUP_ORDER)
                ids = tuple(map(id, members))
                group = self._groups.get(ids)
                if group is None:
                    group = self._groups[ids] = tuple(members)
                return group
            nodes = list(unique.values())
        node = nodes[0]  # the usual group: one node
        group = self._groups.get(id(node))
        if group is None:
            group = self._groups[id(node)] = (node,)
        return group


#: the order of a dependency group's members
_GROUP_ORDER = operator.attrgetter("seq", "id")


# ---------------------------------------------------------------------------
# Expansion
# ---------------------------------------------------------------------------


def micro_op_text(node: Node) -> str:
    """A micro-op as a message names it, its kind said once: ``load %wt[i=3]``, ``store to @y[i=0]``.

    A store's name (``store to @y``) and an unnamed op's (``vdir.load``)
    already say the kind; a value's name (``%wt``) gets it as a prefix.
    """
    return f"{node.kind} {node.name}" if node.name.startswith("%") else node.name


def single_program(module: ModuleOp) -> ProgramOp:
    """The module's one ``vdir.program``; a located error otherwise."""
    programs = [op for op in module.ops if isinstance(op, ProgramOp)]
    if len(programs) != 1:
        raise PassFailure(f"expected one vdir.program in the module, found {len(programs)}", None)
    return programs[0]


#: an index value during expansion: a number, or one depending on a runtime value
IndexValue = int | RuntimeIndex


#: the affine operations with a divisor (their right-hand side)
_DIVISIONS = (AffineBinaryOpKind.Mod, AffineBinaryOpKind.FloorDiv, AffineBinaryOpKind.CeilDiv)


def _check_divisor(expr: AffineBinaryOpExpr) -> None:
    """A divisor is a nonzero constant: checked once, so that evaluation never divides by zero."""
    if not isinstance(expr.rhs, AffineConstantExpr):
        raise PassFailure(f"affine expression '{expr}' divides by a non-constant")
    if expr.rhs.value == 0:
        raise PassFailure(f"affine expression '{expr}' divides by zero")


def compile_affine(expr: AffineExpr) -> Callable[[list[IndexValue]], IndexValue]:
    """A Python function evaluating an affine expression over [dims..., symbols...].

    Expansion evaluates each ``affine.apply`` once per iteration; walking the
    expression tree every time would dominate the expansion of large repeats,
    and so would a tree of closures (a call per node of the tree): the
    expression becomes one Python expression, compiled once. Operands may be
    :class:`RuntimeIndex` values, which support the affine operations the ISA
    can evaluate (and raise ``RuntimeValueError`` on the others).
    """
    return eval(f"lambda vals: {_affine_text(expr)}", {})


#: the Python operator of each affine operation but ceildiv
_OPERATOR_TEXT = {
    AffineBinaryOpKind.Add: "+",
    AffineBinaryOpKind.Mul: "*",
    AffineBinaryOpKind.Mod: "%",
    AffineBinaryOpKind.FloorDiv: "//",
}


def _affine_text(expr: AffineExpr) -> str:
    """Python text computing ``expr`` from the operand list ``vals``, operation by operation as the tree has them."""
    if isinstance(expr, AffineConstantExpr):
        return f"({int(expr.value)})"
    if isinstance(expr, AffineDimExpr):
        return f"vals[{int(expr.position)}]"
    if isinstance(expr, AffineSymExpr):
        raise PassFailure("affine.apply with symbols is not supported in a vdir program")
    assert isinstance(expr, AffineBinaryOpExpr)
    kind = expr.kind
    if kind in _DIVISIONS:
        _check_divisor(expr)
    lhs, rhs = _affine_text(expr.lhs), _affine_text(expr.rhs)
    if kind == AffineBinaryOpKind.CeilDiv:
        return f"(-(-{lhs} // {rhs}))"
    return f"({lhs} {_OPERATOR_TEXT[kind]} {rhs})"


@dataclass
class _OpTemplate:
    """What expansion needs of one micro-op, independent of the iteration."""

    kind: str
    engine: str
    loc: str
    flow: int | None
    deps: tuple
    result: SSAValue  # the token of a store, the tile of a load or compute
    name: str = ""
    static: tuple = ()
    dynamic: tuple = ()
    buffer: SSAValue | None = None
    tile: TileSig | None = None
    inputs: tuple = ()
    family: str = ""
    params: dict = field(default_factory=dict)
    #: the ``when`` condition: its value, ``ge`` or ``lt``, the bound (None: unconditional)
    guard: SSAValue | None = None
    guard_kind: str = ""
    guard_bound: int = 0
    #: a store's reduction (None: a plain store)
    reduce: ReduceKind | None = None
    # ---- the same values as keys of the expander's environment (their ids)
    result_key: int = 0
    buffer_key: int = 0
    input_keys: tuple[int, ...] = ()
    dep_keys: tuple[int, ...] = ()
    dynamic_keys: tuple[int, ...] = ()
    #: all offsets are numbers (``static`` is the region's row and column)
    all_static: bool = True
    #: per offset: (its static value, None) or (DYNAMIC, the key of its SSA value)
    offset_sources: tuple[tuple[int, int | None], ...] = ()
    #: of a region with a row and a column offset: the key of each (None: static)
    row_col_keys: tuple[int | None, int | None] | None = None
    #: of a load or store: the last row and column its tile may start at in its buffer, and the
    #: buffer's element bytes (None: every region checked in full, :meth:`_Expander._check_bounds`)
    region_bounds: tuple[int, int, int] | None = None


#: a handler of one op of a block during expansion: (op, iteration indices, their suffix)
_Handler = Callable[[Operation, dict, str], None]


class _Expander:
    """Walks a program body, evaluating offsets and creating nodes."""

    def __init__(self, program: ProgramOp, target: TargetDescription, stage: str, max_micro_ops: int):
        self.program = program
        self.target = target
        self.stage = stage
        self.max_micro_ops = max_micro_ops
        self.nodes: list[Node] = []
        #: the value of each SSA value in scope, keyed by the value's id (values hash by identity)
        self.env: dict[int, object] = {}
        self.args: list[BufferArg] = []
        self.by_id: dict[int, Node] = {}
        self.pending_after: list[tuple[Node, list[list[int]]]] = []
        self.templates: dict[int, _OpTemplate] = {}  # by the op's id
        self.affine_templates: dict[int, tuple[Callable[[list[IndexValue]], IndexValue], tuple[int, ...], int]] = {}
        self.repeat_templates: dict[int, tuple] = {}
        #: each block's ops with their handlers, by the block's id
        self.steps: dict[int, list[tuple[_Handler, Operation]]] = {}
        #: the condition of the runtime-bounded repeats being expanded
        self.loop_guard: Condition | None = None
        #: the layer loop (:func:`layer_loop`), the trip being expanded and the next template index in it
        self.layer_loop = layer_loop(program) if stage == "source" else None
        self.trip = -1
        self.template = 0
        self.scalars: list[ScalarArg] = []
        ranges = iter(program.scalar_range_list())
        scratch = program.scratch_positions()
        for name, arg in zip(program.argument_names(), program.args, strict=True):
            t = arg.type
            if isinstance(t, BufferType):
                self.env[id(arg)] = len(self.args)
                self.args.append(BufferArg(name, t.dims, t.dtype,  # type: ignore[arg-type]
                                           scratch=len(self.args) in scratch))
                continue
            lo, hi = next(ranges)
            source = RuntimeSource(-1, len(self.scalars), f"%{name}", lo, hi)
            self.env[id(arg)] = RuntimeIndex(source)
            self.scalars.append(ScalarArg(name, lo, hi))

    def run(self) -> list[Node]:
        self._check_size(self.program.body.block, self.program)
        try:
            self._block(self.program.body.block, {}, "")
        finally:
            self.steps.clear()  # its bound methods refer back to the expander: no cycle outlives the run
        self._resolve_recorded_deps()
        return self.nodes

    def _check_size(self, block: Block, where: Operation) -> None:
        """Refuse, before expanding anything, a program that expands to more than ``max_micro_ops`` micro-ops.

        Located at the repeat that takes the count over the limit (a repeat
        of 10^12 iterations is an error at once, not hours of expansion).
        """
        total = 0
        for op in block.ops:
            total += expanded_micro_ops(op)
            if total > self.max_micro_ops:
                at = op if isinstance(op, RepeatOp) else where
                raise PassFailure(
                    f"the program expands to more than {self.max_micro_ops:,} micro-ops (the limit; "
                    f"{OPTIONS['max_micro_ops']} raises it): this {'repeat' if at is op else 'program'} "
                    f"alone reaches {expanded_micro_ops(op) if at is op else total:,}",
                    at,
                )

    # -- values ------------------------------------------------------------
    def _index(self, v: SSAValue, op: Operation) -> IndexValue:
        return self._index_of(id(v), op)

    def _index_of(self, key: int, op: Operation) -> IndexValue:
        """The index value of the SSA value whose id is ``key``."""
        x = self.env.get(key)
        if type(x) is int:
            return x
        if not isinstance(x, int | RuntimeIndex):
            raise PassFailure("offset is not a known index value", op)
        return x

    def _tokens(self, keys: Sequence[int]) -> list[Node]:
        out: list[Node] = []
        for k in keys:
            out.extend(self.env[k])  # type: ignore[arg-type]
        return out

    # -- ops ---------------------------------------------------------------
    def _block(self, block: Block, iters: dict, suffix: str) -> None:
        """Expand ``block`` once; ``suffix`` is the name suffix of ``iters`` (``[i=3][j=0]``)."""
        steps = self.steps.get(id(block))
        if steps is None:
            steps = self.steps[id(block)] = [(self._handler(op), op) for op in block.ops]
        for handler, op in steps:
            handler(op, iters, suffix)

    def _handler(self, op: Operation) -> _Handler:
        """What expanding ``op`` does, chosen once per op."""
        if isinstance(op, LoadOp | StoreOp | ComputeOp):
            return self._micro_op  # type: ignore[return-value]
        if isinstance(op, RepeatOp):
            return self._repeat  # type: ignore[return-value]
        if isinstance(op, ApplyOp):
            return self._apply  # type: ignore[return-value]
        if isinstance(op, ReadOp):
            return self._read  # type: ignore[return-value]
        if isinstance(op, ConstantOp):
            return self._constant  # type: ignore[return-value]
        if isinstance(op, AddiOp | MuliOp):
            return self._arith  # type: ignore[return-value]
        if isinstance(op, JoinOp):
            return self._join  # type: ignore[return-value]
        return self._unsupported

    def _apply(self, op: ApplyOp, iters: dict, suffix: str) -> None:
        tmpl = self.affine_templates.get(id(op))
        if tmpl is None:
            try:
                fn = compile_affine(op.map.data.results[0])
            except PassFailure as e:  # located at the affine.apply
                raise PassFailure(str(e), op) from None
            tmpl = self.affine_templates[id(op)] = (fn, tuple(id(v) for v in op.mapOperands), id(op.result))
        fn, operands, result = tmpl
        try:
            self.env[result] = fn([self._index_of(v, op) for v in operands])
        except RuntimeValueError as e:
            raise PassFailure(str(e), op) from None

    def _read(self, op: ReadOp, iters: dict, suffix: str) -> None:
        buf = self.env[id(op.source)]
        arg = self.args[buf]  # type: ignore[index]
        r, c = op.row_col
        self.env[id(op.result)] = RuntimeIndex(RuntimeSource(buf, r * arg.shape[1] + c, f"@{arg.name}[{r}, {c}]"))  # type: ignore[arg-type]

    def _constant(self, op: ConstantOp, iters: dict, suffix: str) -> None:
        v = op.value
        if not isinstance(v, IntegerAttr):
            raise PassFailure("only integer constants may appear in a vdir program", op)
        self.env[id(op.result)] = v.value.data

    def _arith(self, op: AddiOp | MuliOp, iters: dict, suffix: str) -> None:
        a, b = self._index(op.lhs, op), self._index(op.rhs, op)
        try:
            self.env[id(op.result)] = a + b if isinstance(op, AddiOp) else a * b  # type: ignore[operator]
        except RuntimeValueError as e:
            raise PassFailure(str(e), op) from None

    def _join(self, op: JoinOp, iters: dict, suffix: str) -> None:
        self.env[id(op.result)] = self._tokens([id(v) for v in op.tokens])

    def _unsupported(self, op: Operation, iters: dict, suffix: str) -> None:
        raise PassFailure(f"'{op.name}' cannot appear in a vdir program", op)

    def _repeat(self, op: RepeatOp, iters: dict, suffix: str) -> None:
        """Expand a repeat; with a runtime bound, each iteration's micro-ops get ``i < bound``."""
        tmpl = self.repeat_templates.get(id(op))
        if tmpl is None:
            tmpl = self.repeat_templates[id(op)] = (
                op.induction_var.name_hint or "i", op.lower.value.data, op.upper.value.data, op.step.value.data,
                op.dynamic_upper, id(op.induction_var), op.body.block, expanded_micro_ops(op) > 0,
            )
        name, lower, upper, step, dynamic_upper, var, body, live = tmpl
        bound = self._index(dynamic_upper, op) if dynamic_upper is not None else upper
        if isinstance(bound, int):
            upper = min(upper, bound)
        elif self.loop_guard is not None:
            raise PassFailure("a runtime-bounded vdir.repeat cannot be nested in another one", op)
        env = self.env
        shadows = name in iters  # an inner index of the same name replaces the outer one's entry
        layer = op is self.layer_loop
        trips = range(lower, upper, step)
        if not live:  # no micro-op to expand: its first trip is checked, the rest would only spin
            trips = trips[:1]
        for trip, i in enumerate(trips):
            env[var] = i
            if layer:
                self.trip, self.template = trip, 0
            if isinstance(bound, RuntimeIndex):
                self.loop_guard = Condition.of(bound, "ge", i + 1)
            inner = {**iters, name: i}
            self._block(body, inner, "".join(f"[{k}={v}]" for k, v in inner.items()) if shadows
                        else f"{suffix}[{name}={i}]")
        if isinstance(bound, RuntimeIndex):
            self.loop_guard = None
        if layer:
            self.trip = -1

    def _guard(self, op: LoadOp | StoreOp | ComputeOp, t: "_OpTemplate", node: Node) -> Condition | None:
        """The node's runtime condition: its own ``when`` or its repeat's bound (not both)."""
        if t.guard is None:
            return self.loop_guard
        value = self._index_of(id(t.guard), op)
        kind, bound = t.guard_kind, t.guard_bound
        if isinstance(value, int):
            if (value >= bound) == (kind == "ge"):
                return self.loop_guard
            raise PassFailure(
                f"{micro_op_text(node)}: its condition is false at compile time ({value} "
                f"{'>=' if kind == 'ge' else '<'} {bound}); remove the micro-op instead",
                op,
            )
        if self.loop_guard is not None:
            raise PassFailure(
                f"{micro_op_text(node)}: a micro-op inside a runtime-bounded repeat cannot have its own "
                "condition (one condition per micro-op)",
                op,
            )
        return Condition.of(value, kind, bound)

    def _template(self, op: LoadOp | StoreOp | ComputeOp) -> "_OpTemplate":
        """The iteration-independent facts of a micro-op, read from xDSL once."""
        t = self.templates.get(id(op))
        if t is not None:
            return t
        t = _OpTemplate(kind=op.OP_CLASS, engine=op.engine.data.value, loc=location_of(op) or "<unknown>",
                        flow=op.flow.value.data if op.flow is not None else None, deps=tuple(op.deps),
                        result=op.token if isinstance(op, StoreOp) else op.result)
        if op.guard is not None:
            t.guard, t.guard_kind = op.guard, op.guard_op.data  # type: ignore[union-attr]
            t.guard_bound = op.guard_bound.value.data  # type: ignore[union-attr]
        if isinstance(op, LoadOp | StoreOp):
            t.static = tuple(op.static_offsets.get_values())
            t.dynamic = tuple(op.dynamic_offsets)
        if isinstance(op, LoadOp):
            t.buffer = op.source
            t.tile = op.result.type.sig  # type: ignore[attr-defined]
            t.name = f"%{op.result.name_hint}" if op.result.name_hint else "vdir.load"
        elif isinstance(op, StoreOp):
            t.buffer = op.dest
            t.tile = op.value.type.sig  # type: ignore[attr-defined]
            t.inputs = (op.value,)
            t.reduce = op.reduce_kind
            t.name = f"store to @{self.args[self.env[id(op.dest)]].name}"  # type: ignore[index]
        else:
            t.family = op.family.data
            t.params = op.param_values
            t.tile = op.result.type.sig  # type: ignore[attr-defined]
            t.inputs = tuple(op.inputs)
            t.name = f"%{op.result.name_hint}" if op.result.name_hint else "vdir.compute"
        t.result_key, t.buffer_key = id(t.result), id(t.buffer)
        t.input_keys, t.dep_keys, t.dynamic_keys = (tuple(id(v) for v in vs) for vs in (t.inputs, t.deps, t.dynamic))
        t.all_static = DYNAMIC not in t.static
        dyn = iter(t.dynamic_keys)
        t.offset_sources = tuple((s, next(dyn) if s == DYNAMIC else None) for s in t.static)
        if len(t.offset_sources) == 2:
            t.row_col_keys = (t.offset_sources[0][1], t.offset_sources[1][1])
        if isinstance(op, LoadOp | StoreOp):
            t.region_bounds = self._region_bounds(t)
        self.templates[id(op)] = t
        return t

    def _region_bounds(self, t: "_OpTemplate") -> tuple[int, int, int] | None:
        """:attr:`_OpTemplate.region_bounds` of a load's or store's template (None where its buffer
        is not yet known)."""
        buffer = self.env.get(t.buffer_key)
        if type(buffer) is not int:
            return None
        arg = self.args[buffer]
        rows, cols = t.tile.shape  # type: ignore[union-attr]
        return arg.shape[0] - rows, arg.shape[1] - cols, DTYPE_BYTES[arg.dtype]

    def _micro_op(self, op: LoadOp | StoreOp | ComputeOp, iters: dict, suffix: str) -> None:
        t = self.templates.get(id(op)) or self._template(op)
        env = self.env
        number = len(self.nodes)
        # positionally (id, kind, engine, seq, name, loc, tile): a third faster than by keyword
        node = Node(number, t.kind, t.engine, number, t.name + suffix if suffix else t.name, t.loc, t.tile)
        if t.flow is not None:
            node.flow = t.flow
        kind = t.kind
        if kind != "compute":
            node.buffer = env[t.buffer_key]  # type: ignore[assignment]
            if t.all_static:
                row, col = node.row, node.col = t.static
            else:
                keys = t.row_col_keys
                if keys is None:  # not two offsets: refused by _set_offsets
                    row = col = None
                else:
                    row = t.static[0] if keys[0] is None else env.get(keys[0])
                    col = t.static[1] if keys[1] is None else env.get(keys[1])
                if type(row) is int and type(col) is int:
                    node.row, node.col = row, col  # what _set_offsets does with no runtime offset
                else:  # a runtime offset, or a value that is no index (which _index_of refuses)
                    self._set_offsets(node, [s if k is None else self._index_of(k, op) for s, k in t.offset_sources], op)
                    row, col = node.row, node.col
            bounds = t.region_bounds
            if (bounds is None or node.dyn is not None or not 0 <= row <= bounds[0]
                    or not 0 <= col <= bounds[1] or col * bounds[2] % BULK_COPY_ALIGN):
                self._check_bounds(node, op)  # what is left to check, or the error
        node.guard = self._guard(op, t, node) if t.guard is not None else self.loop_guard
        if kind == "load":
            env[t.result_key] = node
        elif kind == "store":
            node.inputs = [env[t.input_keys[0]]]  # type: ignore[list-item]
            if t.reduce is not None:
                node.reduce = t.reduce
            self.args[node.buffer].is_output = not self.args[node.buffer].scratch
            env[t.result_key] = [node]
        else:
            node.family, node.params = t.family, t.params
            node.inputs = [env[v] for v in t.input_keys]  # type: ignore[misc]
            env[t.result_key] = node
        if t.dep_keys:
            node.deps = [tuple(self._tokens(t.dep_keys))]
        if self.stage != "source":
            self._read_annotations(node, op)
        if self.trip >= 0:
            node.trip, node.template = self.trip, self.template
            self.template += 1
        self.nodes.append(node)

    def _set_offsets(self, node: Node, offsets: list, op: Operation) -> None:
        """Static offsets into ``row``/``col``; a runtime one into ``dyn`` (one axis at most)."""
        runtime = [axis for axis, o in enumerate(offsets) if isinstance(o, RuntimeIndex)]
        if len(runtime) > 1:
            raise PassFailure(f"{micro_op_text(node)}: only one of a region's offsets may be a runtime value", op)
        if runtime:
            node.dyn_axis = runtime[0]
            node.dyn = offsets[node.dyn_axis]
            offsets[node.dyn_axis] = 0
        node.row, node.col = offsets

    def _check_runtime_bounds(self, node: Node, op: Operation) -> None:
        """Which source values keep a runtime region inside its buffer (``node.dyn_range``).

        A scalar's whole declared range must; a value read from memory is
        checked on the device against this range.
        """
        arg = self.args[node.buffer]
        dyn = node.dyn
        assert dyn is not None
        axis = node.dyn_axis
        size, bound = node.tile.shape[axis], arg.shape[axis]  # type: ignore[union-attr]
        es = DTYPE_BYTES[arg.dtype]
        if axis == 1 and (dyn.coeff * es % BULK_COPY_ALIGN or dyn.const * es % BULK_COPY_ALIGN):
            raise PassFailure(
                f"{micro_op_text(node)}: a runtime column offset ({dyn}) must move in 16-byte steps", op
            )
        vmin, vmax = source_values_keeping(dyn, 0, bound - size)
        what = "rows" if axis == 0 else "columns"
        if vmin > vmax:
            raise PassFailure(
                f"{micro_op_text(node)}: no value of {dyn.source.name} keeps {what} [{dyn}, {dyn} + {size}) inside "
                f"@{arg.name} ({arg.shape[0]}x{arg.shape[1]})",
                op,
            )
        src = dyn.source
        if src.is_scalar and (vmin > src.lo or vmax < src.hi - 1):
            lo, hi = dyn.value_range()
            raise PassFailure(
                f"{micro_op_text(node)}: {what} [{dyn}, {dyn} + {size}) reach [{lo}, {hi + size}) for "
                f"{src.name} in {src.lo} to {src.hi}, outside @{arg.name}'s [0, {bound})",
                op,
            )
        node.dyn_range = (vmin, vmax)

    def _check_bounds(self, node: Node, op: Operation) -> None:
        if node.dyn is not None:
            self._check_runtime_bounds(node, op)
        arg = self.args[node.buffer]
        r, c = node.tile.shape  # type: ignore[union-attr]
        if node.dyn is not None:  # the static axis only
            r, c = (0, c) if node.dyn_axis == 0 else (r, 0)
        where = ""
        if node.row < 0 or node.col < 0 or node.row + r > arg.shape[0] or node.col + c > arg.shape[1]:
            raise PassFailure(
                f"{micro_op_text(node)}: region [{node.row}:{node.row + r}, {node.col}:{node.col + c}] "
                f"is out of the bounds of @{arg.name} ({arg.shape[0]}x{arg.shape[1]}){where}",
                op,
            )
        if (node.col * DTYPE_BYTES[arg.dtype]) % BULK_COPY_ALIGN:
            raise PassFailure(f"{micro_op_text(node)}: column offset {node.col} is not 16-byte aligned", op)

    # -- the scheduled form written by graph_to_ir --------------------------
    def _read_annotations(self, node: Node, op: Operation) -> None:
        """Fill ``node`` from its ``vdir.sched`` (the program verifier checked it)."""
        sched = op.attributes[SCHED_KEY]
        assert isinstance(sched, ScheduleAttr)
        node.id = sched.uop_id.data
        if node.id >= self.max_micro_ops:  # the encoded program's table of names is indexed by id
            raise PassFailure(
                f"{micro_op_text(node)}: id {node.id:,} is not below the limit of {self.max_micro_ops:,} "
                f"micro-ops ({OPTIONS['max_micro_ops']} raises it): ids number a program's micro-ops", op)
        fact = sched.fact
        node.seq = node.id if (seq := fact("seq")) is None else seq
        node.hoist = fact("hoist") or 0
        node.sm = _or_unset(fact("sm"))
        node.pos = _or_unset(fact("pos"))
        node.smem = _or_unset(fact("smem"))
        if (trip := fact("trip")) is not None:
            node.trip, node.template = trip, fact("template")  # type: ignore[assignment]  # both or neither
        if fact("flag_words") is not None:
            if node.kind not in ("load", "store"):
                raise PassFailure(f"{micro_op_text(node)}: only a load or a store has flag_words", op)
            node.flag_words = True
        if sched.after.data:
            self.pending_after.append((node, sched.after_groups))
        node.wait_bits = sched.wait_bits
        node.signal_bits = sched.signal_bits
        node.wait_counters = sched.counter_waits
        node.release_counters = sched.released_counters
        if (label := sched.label_text) is not None:
            node.name = label
        self.by_id[node.id] = node

    def _resolve_recorded_deps(self) -> None:
        intern = GroupInterner()
        for node, groups in self.pending_after:
            node.deps = [intern(self.by_id[i] for i in g) for g in groups]


#: the fewest trips that make a repeat the program's layer loop (:func:`layer_loop`)
MIN_LAYER_TRIPS = 3


def counterparts(nodes: list[Node], trip: int) -> dict[tuple[int, int], Node]:
    """The layer loop's nodes of trip ``trip`` by (SM, template): where the trips are kept alike
    (``Graph.trips_kept``) each node of another trip finds its counterpart there on its own SM."""
    return {(n.sm, n.template): n for n in nodes if n.trip == trip}


def _constant_bounds(op: RepeatOp) -> tuple[int, int, int]:
    """(lower, upper, step) of a repeat."""
    return op.lower.value.data, op.upper.value.data, op.step.value.data


def layer_loop(program: ProgramOp) -> RepeatOp | None:
    """The repeat of ``program``'s body that runs the most micro-ops, if it is its *layer loop*.

    That is a repeat directly in the program's body, with a constant trip
    count of at least :data:`MIN_LAYER_TRIPS` and no runtime bound, whose
    trips run the same micro-ops in sequence (a model's layers). Passes that
    keep a loop's trips alike (``vdir-place`` gives each trip's micro-ops the
    SMs of the first trip's) read the trip of each node (``Node.trip``,
    ``Node.template``) from it.
    """
    best, most = None, 0
    for op in program.body.block.ops:
        if not isinstance(op, RepeatOp) or op.dynamic_upper is not None:
            continue
        if len(range(*_constant_bounds(op))) < MIN_LAYER_TRIPS:
            continue
        count = expanded_micro_ops(op)
        if count > most:
            best, most = op, count
    return best


def expanded_micro_ops(op: Operation) -> int:
    """How many micro-ops ``op`` expands to, counted on its text (a repeat: its iterations times its body's)."""
    if isinstance(op, LoadOp | StoreOp | ComputeOp):
        return 1
    if isinstance(op, RepeatOp):
        body = sum(expanded_micro_ops(inner) for inner in op.body.block.ops)
        return op.trip_count * body
    return 0


def _or_unset(value: int | None) -> int:
    """A Node field's value: the fact, or -1 when the program does not have it yet."""
    return -1 if value is None else value


def build_graph(module: ModuleOp, target: TargetDescription | None = None, max_micro_ops: int | None = None) -> Graph:
    """Expand the module's program into a :class:`Graph` (see the module docstring).

    A program that expands to more than ``max_micro_ops`` micro-ops (None: the
    limit in effect, see :mod:`vdir.limits`) is refused before anything is expanded.
    """
    program = single_program(module)
    stage = program.stage.value
    if target is None:
        target = get_target(program.target.data if program.target else DEFAULT_TARGET)
    if max_micro_ops is None:
        max_micro_ops = current_limits().max_micro_ops
    expander = _Expander(program, target, stage, max_micro_ops)
    nodes = expander.run()
    graph = Graph(program.sym_name.data, target, expander.args, nodes, scalars=expander.scalars, stage=stage,
                  program_op=program)
    if expander.layer_loop is not None:
        graph.loop_trips = len(range(*_constant_bounds(expander.layer_loop)))
    if (layout := program.layout) is not None:
        _read_layout(graph, layout)
    if stage != "source" and (trips := [n.trip for n in nodes if n.trip >= 0]):
        graph.trips_kept, graph.loop_trips = True, max(trips) + 1  # written only where they were kept
    if stage == "source":
        derive_memory_dependencies(graph)
    if stage != "source":  # a source program's nodes are made in program order
        _check_tiles_stay_on_their_sm(nodes)
        nodes.sort(key=SCHEDULED_ORDER)
    return graph


def _check_tiles_stay_on_their_sm(nodes: list[Node]) -> None:
    """What every pass after ``vdir-place`` takes for granted of a placed program read back from its
    text: a micro-op reads tiles made on its own SM (a tile lives in that SM's shared memory; another
    SM's copy of it is made again there, as ``vdir-place`` recomputes shared activations)."""
    for node in nodes:
        for made in node.inputs:
            if made.sm != node.sm:
                raise PassFailure(
                    f"{micro_op_text(node)} on SM {node.sm} reads {made.name}, made on SM {made.sm} ({made.loc}): "
                    "a tile is read on the SM that made it", loc=node.loc)


def _read_layout(graph: Graph, layout: LayoutAttr) -> None:
    """The program-level facts of ``vdir.layout``."""
    graph.num_sms = layout.num_sms.data
    graph.smem_bytes = layout.smem_bytes.data if isinstance(layout.smem_bytes, IntAttr) else 0
    counts = layout.counts
    graph.num_counters = len(counts)
    graph.counter_counts = dict(enumerate(counts))
    for arg, role in zip(graph.args, layout.roles, strict=True):
        arg.is_input = role in ("in", "inout")
        arg.is_output = role in ("out", "inout")


# ---------------------------------------------------------------------------
# Memory dependencies through global buffers
# ---------------------------------------------------------------------------

class BufferRegion(NamedTuple):
    """Bytes a micro-op may touch in a row-major buffer: a box of rows and row bytes, and its flat hull.

    ``lo``/``hi`` bound the box's bytes in the flattened buffer (what
    :class:`AccessIndex` indexes by); the box itself is rows
    ``[row_lo, row_hi)`` by bytes ``[col_lo, col_hi)`` of each row. Two
    regions meet only where their boxes do: tiles side by side in one row
    range (the heads of a KV-cache row, the columns of a strip) have
    overlapping hulls but never share a byte.
    """

    lo: int
    hi: int
    row_lo: int
    row_hi: int
    col_lo: int
    col_hi: int

    def contains(self, other: BufferRegion) -> bool:
        """Whether every byte of ``other``'s box lies in this one's."""
        return (self.row_lo <= other.row_lo and other.row_hi <= self.row_hi
                and self.col_lo <= other.col_lo and other.col_hi <= self.col_hi)

    @classmethod
    def box(cls, row_bytes: int, rows: tuple[int, int], cols: tuple[int, int]) -> BufferRegion:
        """Rows ``[r0, r1)`` by row bytes ``[c0, c1)`` of a buffer with ``row_bytes`` bytes per row."""
        (r0, r1), (c0, c1) = rows, cols
        return cls(r0 * row_bytes + c0, (r1 - 1) * row_bytes + c1, r0, r1, c0, c1)


#: one access of an :class:`AccessIndex`: (hull start, insertion number, region, node)
_Access = tuple[int, int, "BufferRegion", Node]


class AccessIndex:
    """The active accesses of one buffer, as :class:`BufferRegion` boxes, for overlap queries.

    The regions are indexed by their flat hulls ``[lo, hi)``, kept by length
    class: class ``k`` holds those of length in ``(2**(k-1), 2**k]``, sorted
    by start. One of class ``k`` that overlaps ``[lo, hi)`` starts in
    ``(lo - 2**k, hi)``, a window that one bisection finds; so a query costs
    a bisection per class in use plus the regions that start in its windows,
    however many bytes they span (a region of a 512 MiB buffer is one entry,
    not a million). The hulls found are then tested box against box.
    """

    def __init__(self) -> None:
        #: length class -> accesses, sorted; the insertion number keeps two
        #: entries from ever comparing their regions
        self.classes: dict[int, list[_Access]] = {}
        self.added = 0

    def add(self, region: BufferRegion, node: Node) -> None:
        """Record that ``node`` accesses ``region``."""
        entries = self.classes.setdefault((region.hi - region.lo - 1).bit_length(), [])
        bisect.insort(entries, (region.lo, self.added, region, node))
        self.added += 1

    def meeting(self, region: BufferRegion) -> list[_Access]:
        """The accesses whose boxes meet (share a byte with) ``region``'s, a node once per access it recorded."""
        lo, hi, row_lo, row_hi, col_lo, col_hi = region
        met: list[_Access] = []
        for k, entries in self.classes.items():
            for i in range(bisect.bisect_left(entries, (lo - (1 << k) + 1,)), len(entries)):
                access = entries[i]
                if access[0] >= hi:
                    break
                other = access[2]
                if (other.hi > lo and row_lo < other.row_hi and other.row_lo < row_hi
                        and col_lo < other.col_hi and other.col_lo < col_hi):
                    met.append(access)
        return met

    def overlapping(self, region: BufferRegion) -> list[tuple[BufferRegion, Node]]:
        """The (region, node) of each access whose box meets ``region``'s."""
        return [(access[2], access[3]) for access in self.meeting(region)]

    def remove_covered(self, region: BufferRegion, met: list[_Access] | None = None) -> None:
        """Forget the accesses whose boxes lie entirely inside ``region``'s.

        ``met``: what :meth:`meeting` answered for ``region`` (which holds them all), if known.
        """
        for access in self.meeting(region) if met is None else met:
            if region.contains(access[2]):
                self._remove(access)

    def _remove(self, access: _Access) -> None:
        k = (access[2].hi - access[2].lo - 1).bit_length()
        entries = self.classes[k]
        del entries[bisect.bisect_left(entries, access[:2])]
        if not entries:
            del self.classes[k]


def region_of(arg: BufferArg, node: Node) -> BufferRegion:
    """The box of the micro-op's region in its buffer.

    A runtime offset counts every place the device check lets it reach (all
    the rows, or all the columns, its value may select).
    """
    es = DTYPE_BYTES[arg.dtype]
    r, c = node.tile.shape  # type: ignore[union-attr]
    row, col = node.row, node.col
    row_end, col_end = row + r, col + c
    if node.dyn is not None:
        ends = sorted(node.dyn.coeff * v + node.dyn.const for v in node.dyn_range)
        if node.dyn_axis == 0:
            row, row_end = ends[0], ends[1] + r
        else:
            col, col_end = ends[0], ends[1] + c
    return BufferRegion.box(arg.row_bytes, (row, row_end), (col * es, col_end * es))


def element_region(arg: BufferArg, elem: int, nbytes: int) -> BufferRegion:
    """The box of element ``elem`` (``nbytes`` wide, counted in the flattened buffer)."""
    row, col = divmod(elem * nbytes, arg.row_bytes)
    return BufferRegion.box(arg.row_bytes, (row, row + 1), (col, col + nbytes))


def address_reads(node: Node) -> list[tuple[int, int]]:
    """``(buffer, element index)`` of each ``i32`` value the micro-op reads to address or decide itself."""
    sources = [node.dyn.source if node.dyn is not None else None, node.guard.source if node.guard else None]
    return [(s.buffer, s.index) for s in sources if s is not None and not s.is_scalar]


def covers_exactly(node: Node) -> bool:
    """Whether a store surely writes its whole region: unconditional, at a compile-time offset, and no
    reduction (a reducing store's result depends on what was there)."""
    return node.dyn is None and node.guard is None and node.reduce is None


def derive_memory_dependencies(graph: Graph) -> None:
    """Add RAW / WAR / WAW groups between loads and stores of written buffers.

    The ``i32`` elements a micro-op reads to address or decide itself count
    as reads of that micro-op. A store with a runtime offset or condition
    counts as a write of every byte it may reach, but never as covering
    (hiding) earlier writes: it may not happen, or land elsewhere. A load
    of a buffer no store writes, or of bytes no earlier store surely wrote,
    marks the buffer as an input.

    A reducing store (``reduce add``) reads its region and then writes it:
    it waits for the earlier accesses, counts as a read for the input role,
    and never covers earlier writes. Two f32 reducing stores to one region
    are ordered like any two writes (in program order). Two i64 ones are
    not ordered against each other (:func:`commutes`: their adds are exact,
    so the sum is the same in any order); each still waits for the region's
    earlier plain writes and reads, and a later access waits for all of them.
    """
    args = graph.args
    written = {n.buffer for n in graph.nodes if n.kind == "store"}
    reads = {b: AccessIndex() for b in written}
    writes = {b: AccessIndex() for b in written}
    intern = GroupInterner()
    for node in graph.nodes:
        producers: list[Node] = []
        if node.dyn is not None or node.guard is not None:
            for b, elem in address_reads(node):
                if b in written:
                    producers += _read_region(graph, reads, writes, node, b, element_region(args[b], elem, 4))
                else:
                    _mark_input(graph, b, node)
        kind = node.kind
        if kind == "compute":
            pass
        elif node.buffer not in written:
            if kind == "load":
                _mark_input(graph, node.buffer, node)
        elif kind == "store":
            region = region_of(args[node.buffer], node)
            if commutes(graph, node):
                producers += _add_commuting(graph, reads, writes, node, region)
            else:
                if node.reduce is not None:
                    producers += _read_region(graph, reads, writes, node, node.buffer, region)
                producers += _write_region(reads, writes, node, region)
        else:
            producers += _read_region(graph, reads, writes, node, node.buffer, region_of(args[node.buffer], node))
        if producers:
            producers = [p for p in producers if p is not node]
            if producers:
                node.deps.append(intern(producers))


def commutes(graph: Graph, node: Node) -> bool:
    """Whether ``node`` is a reducing store whose adds commute exactly with those of the others like it
    (``isa.COMMUTING_REDUCTIONS``: i64 adds), so that no order between them is needed."""
    if node.kind != "store" or node.reduce is None:
        return False
    return isa.reduce_code(node.reduce.value, graph.args[node.buffer].dtype) in isa.COMMUTING_REDUCTIONS


def _add_commuting(graph: Graph, reads: dict, writes: dict, node: Node, region: BufferRegion) -> list[Node]:
    """Record commuting reducing store ``node`` on ``region``; the earlier accesses it must wait for: the
    plain writes and the reads it meets, not the other commuting adds."""
    b = node.buffer
    met = writes[b].meeting(region)
    if not _covered(region, [access[2] for access in met if covers_exactly(access[3])]):
        _mark_input(graph, b, node)
    producers = [access[3] for access in met if not commutes(graph, access[3])]
    producers += [access[3] for access in reads[b].meeting(region)]
    writes[b].add(region, node)
    return producers


def _read_region(graph: Graph, reads: dict, writes: dict, node: Node, buffer: int, region: BufferRegion) -> list[Node]:
    """Record that ``node`` reads ``region`` of ``buffer``; the earlier writes it must wait for."""
    met = writes[buffer].meeting(region)  # one access per store
    if not _covered(region, [access[2] for access in met if covers_exactly(access[3])]):
        _mark_input(graph, buffer, node)
    reads[buffer].add(region, node)
    return [access[3] for access in met]


def _mark_input(graph: Graph, buffer: int, node: Node) -> None:
    """``node`` reads bytes of ``buffer`` that no earlier store surely wrote: the buffer is an input; a
    located error where it is declared ``scratch`` (whose bytes hold only what the program wrote)."""
    arg = graph.args[buffer]
    if arg.scratch:
        raise PassFailure(
            f"{micro_op_text(node)} reads bytes of scratch buffer '{arg.name}' that no earlier store surely writes "
            "(a scratch buffer holds only what the program wrote)", loc=node.loc)
    arg.is_input = True


def _covered(region: BufferRegion, writes: list[BufferRegion]) -> bool:
    """Whether ``writes`` (each exactly written) fill ``region``'s box: their overlaps with it add up to its area.

    Writes that overlap each other count twice, as the flat byte count did
    before boxes: a buffer is then taken for fully written where it may not
    be (a later covering store hides the earlier ones it contains).
    """
    area = 0
    for w in writes:
        rows = min(region.row_hi, w.row_hi) - max(region.row_lo, w.row_lo)
        cols = min(region.col_hi, w.col_hi) - max(region.col_lo, w.col_lo)
        area += max(rows, 0) * max(cols, 0)
    return area >= (region.row_hi - region.row_lo) * (region.col_hi - region.col_lo)


def _write_region(reads: dict, writes: dict, node: Node, region: BufferRegion) -> list[Node]:
    """Record that store ``node`` writes ``region``; the earlier accesses it must wait for."""
    b = node.buffer
    met_writes, met_reads = writes[b].meeting(region), reads[b].meeting(region)
    if covers_exactly(node):
        writes[b].remove_covered(region, met_writes)
        reads[b].remove_covered(region, met_reads)
    writes[b].add(region, node)
    return [access[3] for access in met_writes] + [access[3] for access in met_reads]


# ---------------------------------------------------------------------------
# Writing the annotated graph back as IR
# ---------------------------------------------------------------------------


def _params_attr(params: dict) -> DictionaryAttr:
    out: dict[str, Attribute] = {}
    for k, v in params.items():
        out[k] = FloatAttr(v, f32) if isinstance(v, float) else IntegerAttr(v, i64)
    return DictionaryAttr(out)


def graph_to_ir(graph: Graph, stage: str) -> ProgramOp:
    """A flat program holding every node with its annotations (see module doc)."""
    arg_types: list[Attribute] = [BufferType(a.shape, a.dtype) for a in graph.args]
    arg_types += [IndexType()] * len(graph.scalars)
    block = Block(arg_types=arg_types)
    names = [a.name for a in graph.args] + [s.name for s in graph.scalars]
    for a, name in zip(block.args, names, strict=True):
        a.name_hint = name
    values: dict[int, SSAValue] = {}
    runtime = _RuntimeValues(graph, block)
    for node in graph.nodes:
        op = _node_op(node, block, values, runtime)
        op.attributes[SCHED_KEY] = schedule_attr(node, graph.trips_kept)
        if graph.program_op is not None and (loc := _loc(node.loc)) is not None:
            op.location = loc
        block.add_op(op)
    program = ProgramOp(
        graph.name, arg_types, Region(block), target=graph.target.name,
        arg_names=names, scalar_ranges=[(s.lo, s.hi) for s in graph.scalars],
        scratch=[i for i, a in enumerate(graph.args) if a.scratch],
    )
    program.attributes[STAGE_KEY] = StageAttr(Stage(stage))
    program.attributes[LAYOUT_KEY] = layout_attr(graph, Stage(stage))
    return program


def schedule_attr(node: Node, trips_kept: bool = False) -> ScheduleAttr:
    """The ``#vdir.sched`` of a node: the facts the passes filled in, unset ones omitted; its trip and
    template of the layer loop where its trips are kept alike (``Graph.trips_kept``)."""
    in_loop = trips_kept and node.trip >= 0
    return ScheduleAttr(
        node.id,
        seq=node.seq if node.seq != node.id else None,
        hoist=node.hoist or None,
        sm=node.sm if node.sm >= 0 else None,
        pos=node.pos if node.pos >= 0 else None,
        smem=node.smem if node.smem >= 0 else None,
        trip=node.trip if in_loop else None,
        template=node.template if in_loop else None,
        flag_words=1 if node.flag_words else None,
        wait=sorted(node.wait_bits.items()),
        signal=node.signal_bits,
        wait_counters=node.wait_counters,
        release=node.release_counters,
        after=[[p.id for p in g] for g in node.deps if g],
        label=node.name if "[" in node.name else None,  # a repeat's copy: its indices
    )


def layout_attr(graph: Graph, stage: Stage) -> LayoutAttr:
    """The ``#vdir.layout`` of a graph at ``stage`` (a placed stage or later)."""
    return LayoutAttr(
        graph.num_sms,
        [a.role for a in graph.args],
        smem_bytes=graph.smem_bytes if stage.reached(Stage.ALLOCATED) else None,
        counter_counts=[graph.counter_counts[i] for i in range(graph.num_counters)],
    )


def _loc(text: str) -> FileLineColLoc | None:
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return FileLineColLoc(StringAttr(parts[0]), IntAttr(int(parts[1])), IntAttr(int(parts[2])))


class _RuntimeValues:
    """The index values the flat form needs for runtime offsets and conditions.

    A scalar is its block argument, a memory value one ``vdir.read`` (made
    once per element); ``coeff * v + const`` is an ``affine.apply`` added to
    the block just before the micro-op that uses it.
    """

    def __init__(self, graph: Graph, block: Block):
        self.graph, self.block = graph, block
        self.reads: dict[tuple[int, int], SSAValue] = {}
        self.indices: dict[RuntimeIndex, SSAValue] = {}

    def source(self, src: RuntimeSource) -> SSAValue:
        if src.is_scalar:
            return self.block.args[len(self.graph.args) + src.index]
        key = (src.buffer, src.index)
        if key not in self.reads:
            cols = self.graph.args[src.buffer].shape[1]
            read = ReadOp(self.block.args[src.buffer], src.index // cols, src.index % cols)
            self.block.add_op(read)
            self.reads[key] = read.result
        return self.reads[key]

    def index(self, value: RuntimeIndex) -> SSAValue:
        """An SSA value equal to ``value``."""
        v = self.source(value.source)
        if (value.coeff, value.const) == (1, 0):
            return v
        if value not in self.indices:
            expr = AffineDimExpr(0) * value.coeff + value.const
            apply = ApplyOp([v], AffineMapAttr(AffineMap(1, 0, (expr,))))
            self.block.add_op(apply)
            self.indices[value] = apply.result
        return self.indices[value]


def _node_op(node: Node, block: Block, values: dict[int, SSAValue], runtime: _RuntimeValues) -> Operation:
    args = block.args
    engine = EngineKind(node.engine) if node.engine in EngineKind._value2member_map_ else EngineKind.LOAD
    tile = TileType(node.tile.shape, node.tile.dtype) if node.tile else None
    offsets: list[int | SSAValue] = [node.row, node.col]
    if node.dyn is not None:
        offsets[node.dyn_axis] = runtime.index(node.dyn)
    guard = (runtime.index(node.guard.as_index()), "ge", 0) if node.guard is not None else None
    if node.kind == "load":
        op: Operation = LoadOp(args[node.buffer], offsets, tile, engine, node.flow, guard=guard)  # type: ignore[arg-type]
    elif node.kind == "store":
        op = StoreOp(values[node.inputs[0].id], args[node.buffer], offsets, engine, node.flow, guard=guard,
                     reduce=node.reduce)
    elif node.kind == "compute":
        op = ComputeOp(
            node.family, [values[i.id] for i in node.inputs], tile,  # type: ignore[arg-type]
            dict(_params_attr(node.params).data), engine, node.flow, guard=guard,
        )
    else:
        raise ValueError(f"unknown node kind {node.kind}")
    if op.results and isinstance(op.results[0].type, TileType):
        hint = node.name.split("[")[0].lstrip("%")
        if hint and hint[0].isalpha():
            op.results[0].name_hint = f"{hint}_{node.id}"
        values[node.id] = op.results[0]
    return op


def replace_program(module: ModuleOp, graph: Graph, stage: str) -> None:
    """Swap the module's program for the annotated flat form of ``graph``."""
    old = single_program(module)
    new = graph_to_ir(graph, stage)
    new.location = old.location
    module.body.block.insert_op_before(new, old)
    module.body.block.erase_op(old, safe_erase=False)
