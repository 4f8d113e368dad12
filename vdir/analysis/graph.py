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

import operator
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.affine import ApplyOp
from xdsl.dialects.arith import AddiOp, ConstantOp, MuliOp
from xdsl.dialects.builtin import (
    DictionaryAttr,
    FileLineColLoc,
    FloatAttr,
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
    AffineSymExpr,
)

from vdir.diagnostics import PassFailure, location_of
from vdir.dialects.vdir import (
    DYNAMIC,
    BufferType,
    ComputeOp,
    EngineKind,
    JoinOp,
    LoadOp,
    ProgramOp,
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
from vdir.target import DEFAULT_TARGET, TargetDescription, get_target

#: sort key of the schedule order: program order, hoisted loads moved up
SCHEDULE_ORDER = operator.attrgetter("seq", "hoist")

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
    # ---- filled by the passes
    sm: int = -1
    pos: int = -1
    smem: int = -1
    wait_bits: dict[int, int] = field(default_factory=dict)  # bit -> parity
    signal_bits: list[int] = field(default_factory=list)
    wait_counters: list[tuple[int, int]] = field(default_factory=list)  # (counter, count)
    release_counters: list[int] = field(default_factory=list)

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


@dataclass
class Graph:
    """A program as a list of nodes in program order, plus its facts."""

    name: str
    target: TargetDescription
    args: list[BufferArg]
    nodes: list[Node]
    stage: str = "source"
    num_sms: int = 0
    smem_bytes: int = 0
    num_counters: int = 0
    counter_counts: dict[int, int] = field(default_factory=dict)
    program_op: ProgramOp | None = None

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
        self._groups: dict[tuple[int, ...], tuple[Node, ...]] = {}

    def __call__(self, nodes: Iterable[Node]) -> tuple[Node, ...]:
        nodes = list(nodes)
        if len(nodes) == 1:
            return self._groups.setdefault((id(nodes[0]),), (nodes[0],))
        uniq = sorted({id(n): n for n in nodes}.values(), key=lambda n: (n.seq, n.id))
        key = tuple(id(n) for n in uniq)
        return self._groups.setdefault(key, tuple(uniq))


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


def compile_affine(expr: AffineExpr) -> Callable[[list[int]], int]:
    """A Python function evaluating an affine expression over [dims..., symbols...].

    Expansion evaluates each ``affine.apply`` once per iteration; walking the
    expression tree every time would dominate the expansion of large repeats.
    """
    if isinstance(expr, AffineConstantExpr):
        value = expr.value
        return lambda vals: value
    if isinstance(expr, AffineDimExpr):
        pos = expr.position
        return lambda vals: vals[pos]
    if isinstance(expr, AffineSymExpr):
        raise PassFailure("affine.apply with symbols is not supported in a vdir program")
    assert isinstance(expr, AffineBinaryOpExpr)
    lhs, rhs = compile_affine(expr.lhs), compile_affine(expr.rhs)
    kind = expr.kind
    if kind == AffineBinaryOpKind.Add:
        return lambda vals: lhs(vals) + rhs(vals)
    if kind == AffineBinaryOpKind.Mul:
        return lambda vals: lhs(vals) * rhs(vals)
    if kind == AffineBinaryOpKind.Mod:
        return lambda vals: lhs(vals) % rhs(vals)
    if kind == AffineBinaryOpKind.FloorDiv:
        return lambda vals: lhs(vals) // rhs(vals)
    return lambda vals: -(-lhs(vals) // rhs(vals))  # CeilDiv


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


class _Expander:
    """Walks a program body, evaluating offsets and creating nodes."""

    def __init__(self, program: ProgramOp, target: TargetDescription, stage: str):
        self.program = program
        self.target = target
        self.stage = stage
        self.nodes: list[Node] = []
        self.env: dict[SSAValue, object] = {}
        self.args: list[BufferArg] = []
        self.by_id: dict[int, Node] = {}
        self.pending_after: list[tuple[Node, list[list[int]]]] = []
        self.templates: dict[Operation, _OpTemplate] = {}
        self.affine_templates: dict[Operation, tuple[Callable[[list[int]], int], tuple[SSAValue, ...]]] = {}
        for name, arg in zip(program.argument_names(), program.args, strict=True):
            t: BufferType = arg.type  # type: ignore[assignment]
            self.env[arg] = len(self.args)
            self.args.append(BufferArg(name, t.dims, t.dtype))  # type: ignore[arg-type]

    def run(self) -> list[Node]:
        self._block(self.program.body.block, {})
        self._resolve_recorded_deps()
        return self.nodes

    # -- values ------------------------------------------------------------
    def _index(self, v: SSAValue, op: Operation) -> int:
        x = self.env.get(v)
        if not isinstance(x, int):
            raise PassFailure("offset is not a known index value", op)
        return x

    def _tokens(self, values: Sequence[SSAValue]) -> list[Node]:
        out: list[Node] = []
        for v in values:
            out.extend(self.env[v])  # type: ignore[arg-type]
        return out

    # -- ops ---------------------------------------------------------------
    def _block(self, block: Block, iters: dict) -> None:
        for op in block.ops:
            self._op(op, iters)

    def _op(self, op: Operation, iters: dict) -> None:
        if isinstance(op, LoadOp | StoreOp | ComputeOp):
            self._micro_op(op, iters)
        elif isinstance(op, RepeatOp):
            name = op.induction_var.name_hint or "i"
            for i in range(op.lower.value.data, op.upper.value.data, op.step.value.data):
                self.env[op.induction_var] = i
                self._block(op.body.block, {**iters, name: i})
        elif isinstance(op, ApplyOp):
            tmpl = self.affine_templates.get(op)
            if tmpl is None:
                tmpl = self.affine_templates[op] = (compile_affine(op.map.data.results[0]), tuple(op.mapOperands))
            fn, operands = tmpl
            self.env[op.result] = fn([self._index(v, op) for v in operands])
        elif isinstance(op, ConstantOp):
            v = op.value
            if not isinstance(v, IntegerAttr):
                raise PassFailure("only integer constants may appear in a vdir program", op)
            self.env[op.result] = v.value.data
        elif isinstance(op, AddiOp | MuliOp):
            a, b = self._index(op.lhs, op), self._index(op.rhs, op)
            self.env[op.result] = a + b if isinstance(op, AddiOp) else a * b
        elif isinstance(op, JoinOp):
            self.env[op.result] = self._tokens(op.tokens)
        else:
            raise PassFailure(f"'{op.name}' cannot appear in a vdir program", op)

    def _template(self, op: LoadOp | StoreOp | ComputeOp) -> "_OpTemplate":
        """The iteration-independent facts of a micro-op, read from xDSL once."""
        t = self.templates.get(op)
        if t is not None:
            return t
        t = _OpTemplate(kind=op.OP_CLASS, engine=op.engine.data.value, loc=location_of(op) or "<unknown>",
                        flow=op.flow.value.data if op.flow is not None else None, deps=tuple(op.deps),
                        result=op.token if isinstance(op, StoreOp) else op.result)
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
            t.name = f"store to @{self.args[self.env[op.dest]].name}"  # type: ignore[index]
        else:
            t.family = op.family.data
            t.params = op.param_values
            t.tile = op.result.type.sig  # type: ignore[attr-defined]
            t.inputs = tuple(op.inputs)
            t.name = f"%{op.result.name_hint}" if op.result.name_hint else "vdir.compute"
        self.templates[op] = t
        return t

    def _micro_op(self, op: LoadOp | StoreOp | ComputeOp, iters: dict) -> None:
        t = self._template(op)
        env = self.env
        name = t.name + "".join(f"[{k}={v}]" for k, v in iters.items()) if iters else t.name
        node = Node(id=len(self.nodes), kind=t.kind, engine=t.engine, seq=len(self.nodes),
                    name=name, loc=t.loc, flow=t.flow, tile=t.tile)
        if t.kind != "compute":
            node.buffer = env[t.buffer]  # type: ignore[assignment]
            dyn = iter(t.dynamic)
            node.row, node.col = (self._index(next(dyn), op) if s == DYNAMIC else s for s in t.static)
            self._check_bounds(node, op)
        if t.kind == "load":
            env[t.result] = node
        elif t.kind == "store":
            node.inputs = [env[t.inputs[0]]]  # type: ignore[list-item]
            self.args[node.buffer].is_output = True
            env[t.result] = [node]
        else:
            node.family, node.params = t.family, t.params
            node.inputs = [env[v] for v in t.inputs]  # type: ignore[misc]
            env[t.result] = node
        if t.deps:
            node.deps = [tuple(self._tokens(t.deps))]
        if self.stage != "source":
            self._read_annotations(node, op)
        self.nodes.append(node)

    def _check_bounds(self, node: Node, op: Operation) -> None:
        arg = self.args[node.buffer]
        r, c = node.tile.shape  # type: ignore[union-attr]
        where = ""
        if node.row < 0 or node.col < 0 or node.row + r > arg.shape[0] or node.col + c > arg.shape[1]:
            raise PassFailure(
                f"{micro_op_text(node)}: region [{node.row}:{node.row + r}, {node.col}:{node.col + c}] "
                f"is out of the bounds of @{arg.name} ({arg.shape[0]}x{arg.shape[1]}){where}",
                op,
            )
        if (node.col * DTYPE_BYTES[arg.dtype]) % 16:
            raise PassFailure(f"{micro_op_text(node)}: column offset {node.col} is not 16-byte aligned", op)

    # -- the scheduled form written by graph_to_ir --------------------------
    def _read_annotations(self, node: Node, op: Operation) -> None:
        """Fill ``node`` from its ``vdir.sched`` (the program verifier checked it)."""
        sched = op.attributes[SCHED_KEY]
        assert isinstance(sched, ScheduleAttr)
        node.id = sched.uop_id.data
        fact = sched.fact
        node.seq = node.id if (seq := fact("seq")) is None else seq
        node.hoist = fact("hoist") or 0
        node.sm = _or_unset(fact("sm"))
        node.pos = _or_unset(fact("pos"))
        node.smem = _or_unset(fact("smem"))
        if sched.after.data:
            self.pending_after.append((node, sched.after_groups))
        node.wait_bits = sched.wait_bits
        node.signal_bits = sched.signal_bits
        node.wait_counters = sched.counter_waits
        node.release_counters = sched.released_counters
        self.by_id[node.id] = node

    def _resolve_recorded_deps(self) -> None:
        intern = GroupInterner()
        for node, groups in self.pending_after:
            node.deps = [intern(self.by_id[i] for i in g) for g in groups]


def _or_unset(value: int | None) -> int:
    """A Node field's value: the fact, or -1 when the program does not have it yet."""
    return -1 if value is None else value


def build_graph(module: ModuleOp, target: TargetDescription | None = None) -> Graph:
    """Expand the module's program into a :class:`Graph` (see the module docstring)."""
    program = single_program(module)
    stage = program.stage.value
    if target is None:
        target = get_target(program.target.data if program.target else DEFAULT_TARGET)
    expander = _Expander(program, target, stage)
    nodes = expander.run()
    graph = Graph(program.sym_name.data, target, expander.args, nodes, stage=stage, program_op=program)
    if (layout := program.layout) is not None:
        _read_layout(graph, layout)
    if stage == "source":
        derive_memory_dependencies(graph)
    nodes.sort(key=lambda n: (n.sm, n.seq, n.hoist) if stage != "source" else (n.seq,))
    return graph


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

_BUCKET = 512  # bytes of buffer per bucket of the overlap index


class _AccessIndex:
    """Active accesses of one buffer, bucketed by byte range for overlap queries."""

    def __init__(self) -> None:
        self.buckets: dict[int, list[tuple[int, int, Node]]] = defaultdict(list)

    def add(self, lo: int, hi: int, node: Node) -> None:
        for b in range(lo // _BUCKET, (hi - 1) // _BUCKET + 1):
            self.buckets[b].append((lo, hi, node))

    def overlapping(self, lo: int, hi: int) -> list[tuple[int, int, Node]]:
        seen: dict[int, tuple[int, int, Node]] = {}
        for b in range(lo // _BUCKET, (hi - 1) // _BUCKET + 1):
            for e in self.buckets.get(b, ()):
                if e[0] < hi and lo < e[1]:
                    seen[id(e[2])] = e
        return list(seen.values())

    def remove_covered(self, lo: int, hi: int) -> None:
        for b in range(lo // _BUCKET, (hi - 1) // _BUCKET + 1):
            lst = self.buckets.get(b)
            if lst:
                self.buckets[b] = [e for e in lst if not (lo <= e[0] and e[1] <= hi)]


def byte_range(arg: BufferArg, node: Node) -> tuple[int, int]:
    """[lo, hi) bytes of the region's bounding range in the row-major buffer."""
    es = DTYPE_BYTES[arg.dtype]
    r, c = node.tile.shape  # type: ignore[union-attr]
    lo = node.row * arg.row_bytes + node.col * es
    hi = (node.row + r - 1) * arg.row_bytes + (node.col + c) * es
    return lo, hi


def derive_memory_dependencies(graph: Graph) -> None:
    """Add RAW / WAR / WAW groups between loads and stores of written buffers."""
    written = {n.buffer for n in graph.nodes if n.kind == "store"}
    for n in graph.nodes:
        if n.kind == "load" and n.buffer not in written:
            graph.args[n.buffer].is_input = True
    reads = {b: _AccessIndex() for b in written}
    writes = {b: _AccessIndex() for b in written}
    intern = GroupInterner()
    for node in graph.nodes:
        if node.buffer not in written or node.kind not in ("load", "store"):
            continue
        lo, hi = byte_range(graph.args[node.buffer], node)
        overlaps = writes[node.buffer].overlapping(lo, hi)
        producers = [e[2] for e in overlaps]
        if node.kind == "load" and sum(min(hi, e[1]) - max(lo, e[0]) for e in overlaps) < hi - lo:
            graph.args[node.buffer].is_input = True
        if node.kind == "store":
            producers += [e[2] for e in reads[node.buffer].overlapping(lo, hi)]
            writes[node.buffer].remove_covered(lo, hi)
            reads[node.buffer].remove_covered(lo, hi)
            writes[node.buffer].add(lo, hi, node)
        else:
            reads[node.buffer].add(lo, hi, node)
        producers = [p for p in producers if p is not node]
        if producers:
            node.deps.append(intern(producers))


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
    arg_types = [BufferType(a.shape, a.dtype) for a in graph.args]
    block = Block(arg_types=arg_types)
    for a, name in zip(block.args, (a.name for a in graph.args), strict=True):
        a.name_hint = name
    values: dict[int, SSAValue] = {}
    for node in graph.nodes:
        op = _node_op(node, block, values)
        op.attributes[SCHED_KEY] = schedule_attr(node)
        if graph.program_op is not None and (loc := _loc(node.loc)) is not None:
            op.location = loc
        block.add_op(op)
    program = ProgramOp(
        graph.name, arg_types, Region(block), target=graph.target.name,
        arg_names=[a.name for a in graph.args],
    )
    program.attributes[STAGE_KEY] = StageAttr(Stage(stage))
    program.attributes[LAYOUT_KEY] = layout_attr(graph, Stage(stage))
    return program


def schedule_attr(node: Node) -> ScheduleAttr:
    """The ``#vdir.sched`` of a node: the facts the passes filled in, unset ones omitted."""
    return ScheduleAttr(
        node.id,
        seq=node.seq if node.seq != node.id else None,
        hoist=node.hoist or None,
        sm=node.sm if node.sm >= 0 else None,
        pos=node.pos if node.pos >= 0 else None,
        smem=node.smem if node.smem >= 0 else None,
        wait=sorted(node.wait_bits.items()),
        signal=node.signal_bits,
        wait_counters=node.wait_counters,
        release=node.release_counters,
        after=[[p.id for p in g] for g in node.deps if g],
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


def _node_op(node: Node, block: Block, values: dict[int, SSAValue]) -> Operation:
    args = block.args
    engine = EngineKind(node.engine) if node.engine in EngineKind._value2member_map_ else EngineKind.LOAD
    tile = TileType(node.tile.shape, node.tile.dtype) if node.tile else None
    if node.kind == "load":
        op: Operation = LoadOp(args[node.buffer], [node.row, node.col], tile, engine, node.flow)  # type: ignore[arg-type]
    elif node.kind == "store":
        op = StoreOp(values[node.inputs[0].id], args[node.buffer], [node.row, node.col], engine, node.flow)
    elif node.kind == "compute":
        op = ComputeOp(
            node.family, [values[i.id] for i in node.inputs], tile,  # type: ignore[arg-type]
            dict(_params_attr(node.params).data), engine, node.flow,
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
