"""Stamping the layer loop: compile two short trip counts, extend the encoding to the full count.

With the trips of the layer loop kept alike (``keep-trips``), every pass gives
each trip the choices of the trip before, and the encoder folds the trips into
one loop per queue. Compiled at ``k`` and at ``k + 1`` trips, such a program
encodes to the same records but for a few words that count: each growing
loop's trip count, the micro-op ids (numbered SM by SM, so an SM's first id
moves with the trips of the SMs before it) and the counters' numbers and wait
counts. Those words step alike from ``k`` to ``k + 1`` to any later count, so
the full program is the ``k + 1`` encoding plus ``trips - k - 1`` times the
difference: compile time follows the program's text, not its trip count.

That holds only where the trips really are alike, which this module checks
before it trusts the difference; where a check fails, the pipeline compiles
every trip (the result is the same, only slower):

- in the program (:func:`stamp_refusal`): the program's micro-ops all lie in
  its layer loop (what precedes or follows it would read or write bytes that
  the short compiles place elsewhere), and the loop's offsets are affine in its
  induction variable for fixed values of the others (no ``floordiv`` or
  ``mod`` of it, which would make the later trips differ), with no
  condition, runtime bound or value read from memory;
- in the graph of the longer short compile (:func:`footprint_refusal`): each
  micro-op moves by the same rows and columns every trip; all the accesses to
  a written buffer move alike, and two trips touch the same bytes only within
  :data:`MAX_TRIP_SPAN` trips of each other, so that every dependency of the
  full program has its like in the short ones; every region of the last trip
  lies inside its buffer;
- in the two encodings (:func:`stamped_program`): the same queues, records,
  buffers and shared memory; only the words named above differ; the loop
  that grows in a queue is its last record (nothing after it depends on the
  parity of the trip count); and the micro-op names follow one rule per trip
  (:func:`stamped_names`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.affine import ApplyOp
from xdsl.dialects.arith import AddiOp, ConstantOp, MuliOp
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, SSAValue
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineConstantExpr, AffineDimExpr, AffineExpr

from vdir import isa
from vdir.analysis.graph import Graph, Node, layer_loop, single_program
from vdir.diagnostics import VdirError
from vdir.dialects.vdir import ComputeOp, JoinOp, LoadOp, ProgramOp, RepeatOp, StoreOp

#: the trip counts of the two short compiles: from four trips on, each queue of a program whose
#: trips are kept alike is one loop (its first and last trips are made alike as well), and the
#: dependency bits' words repeat every four trips (``isa.trip_bit_words``)
SHORT_TRIPS = (4, 5)

#: the most trips apart that two micro-ops of the loop may touch the same bytes of a buffer the loop
#: writes: every dependency span then appears, with a trip to spare, in the shorter compile
MAX_TRIP_SPAN = SHORT_TRIPS[0] - 2

#: the words of a record (loop records aside) that may step with the trip count: the micro-op id and
#: the counters' numbers and wait counts
STEPPING_WORDS = (isa.UOP_ID.word, isa.WAIT_COUNTER.word, isa.WAIT_COUNT.word, isa.RELEASE_COUNTER.word)


class StampRefused(VdirError):
    """The layer loop cannot be stamped (the message says why): the pipeline compiles every trip."""


@dataclass(frozen=True)
class LayerLoopForm:
    """The facts of the program's layer loop that stamping reads: its trip count, and how the micro-op
    names spell its induction variable (``[name=value]``, ``value = lower + trip * step``)."""

    trips: int
    var: str
    lower: int
    step: int

    def value(self, trip: int) -> int:
        """The induction variable's value on ``trip``."""
        return self.lower + trip * self.step


# ---------------------------------------------------------------------------
# the program
# ---------------------------------------------------------------------------

#: how an index value depends on the layer loop's induction variable: not at all, affinely for fixed
#: values of the other variables, or otherwise
_INDEPENDENT, _AFFINE, _OTHER = 0, 1, 2


def layer_loop_form(program: ProgramOp) -> LayerLoopForm | None:
    """The program's layer loop (:func:`~vdir.analysis.graph.layer_loop`), None where it has none."""
    loop = layer_loop(program)
    if loop is None:
        return None
    return LayerLoopForm(loop.trip_count, loop.induction_var.name_hint or "i", loop.lower.value.data,
                         loop.step.value.data)


def stamp_refusal(program: ProgramOp) -> str | None:
    """Why the program's layer loop cannot be stamped, judged from its text; None if it may be."""
    loop = layer_loop(program)
    if loop is None:
        return "the program has no layer loop"
    for op in program.body.block.ops:
        if op is not loop and _holds_micro_ops(op):
            return f"a micro-op lies outside the layer loop ('{op.name}')"
    dependence: dict[SSAValue, int] = {loop.induction_var: _AFFINE}
    return _block_refusal(loop.body.block, dependence)


def _holds_micro_ops(op) -> bool:
    if isinstance(op, LoadOp | StoreOp | ComputeOp):
        return True
    return any(_holds_micro_ops(inner) for region in op.regions for block in region.blocks for inner in block.ops)


def _block_refusal(block: Block, dependence: dict[SSAValue, int]) -> str | None:
    for op in block.ops:
        if isinstance(op, RepeatOp):
            if op.dynamic_upper is not None:
                return "the layer loop holds a repeat with a runtime bound"
            dependence[op.induction_var] = _INDEPENDENT
            if (reason := _block_refusal(op.body.block, dependence)) is not None:
                return reason
        elif isinstance(op, ConstantOp):
            dependence[op.result] = _INDEPENDENT
        elif isinstance(op, AddiOp | MuliOp):
            a, b = (_dependence(v, dependence) for v in (op.lhs, op.rhs))
            both_move = isinstance(op, MuliOp) and a == b == _AFFINE
            dependence[op.result] = _OTHER if both_move else max(a, b)
        elif isinstance(op, ApplyOp):
            dims = [_dependence(v, dependence) for v in op.mapOperands]
            dependence[op.result] = _expr_dependence(op.map.data.results[0], dims)
        elif isinstance(op, LoadOp | StoreOp | ComputeOp):
            if op.guard is not None:
                return f"a micro-op of the layer loop has a condition ('{op.name}')"
            if not isinstance(op, ComputeOp):
                for v in op.dynamic_offsets:
                    if _dependence(v, dependence) == _OTHER:
                        return (f"an offset of '{op.name}' is not affine in the layer loop's variable "
                                "(a floordiv, a mod or a product of it), or is read from memory")
        elif not isinstance(op, JoinOp):
            return f"the layer loop holds '{op.name}'"
    return None


def _dependence(v: SSAValue, dependence: dict[SSAValue, int]) -> int:
    """A value defined in the loop as recorded; one from outside it (a scalar, a constant) moves with no trip."""
    return dependence.get(v, _INDEPENDENT)


def _expr_dependence(expr: AffineExpr, dims: list[int]) -> int:
    if isinstance(expr, AffineConstantExpr):
        return _INDEPENDENT
    if isinstance(expr, AffineDimExpr):
        return dims[expr.position]
    if not isinstance(expr, AffineBinaryOpExpr):
        return _OTHER  # a symbol: refused by expansion anyway
    lhs, rhs = _expr_dependence(expr.lhs, dims), _expr_dependence(expr.rhs, dims)
    if expr.kind == AffineBinaryOpKind.Add:
        return max(lhs, rhs)
    if expr.kind == AffineBinaryOpKind.Mul:
        return _OTHER if lhs == rhs == _AFFINE else max(lhs, rhs)
    return _OTHER if max(lhs, rhs) != _INDEPENDENT else _INDEPENDENT  # floordiv, ceildiv, mod


def with_trips(module: ModuleOp, trips: int) -> ModuleOp:
    """A copy of ``module`` whose layer loop runs its first ``trips`` trips."""
    short = module.clone()
    loop = layer_loop(single_program(short))
    assert loop is not None, "with_trips: the module has no layer loop"
    loop.properties["upper"] = IntegerAttr(loop.lower.value.data + trips * loop.step.value.data, i64)
    return short


# ---------------------------------------------------------------------------
# the graph of a short compile
# ---------------------------------------------------------------------------


def footprint_refusal(graph: Graph, trips: int) -> str | None:
    """Why the trips of ``graph`` (a short compile, at least two trips, after every pass) do not stand
    for ``trips`` trips; None if they do (see the module docstring)."""
    regions: dict[tuple[int, int], dict[int, Node]] = {}
    for n in graph.nodes:
        if n.trip < 0:
            return f"micro-op '{n.name}' lies outside the layer loop"
        if n.dyn is not None or n.guard is not None:
            return f"micro-op '{n.name}' has a runtime offset or condition"
        if n.kind != "compute" and n.trip <= 1:
            regions.setdefault((n.sm, n.template), {})[n.trip] = n
    moves: dict[int, set[tuple[int, int]]] = {}
    boxes: dict[int, list[int]] = {}
    written = {n.buffer for n in graph.nodes if n.kind == "store"}
    for pair in regions.values():
        if len(pair) != 2:
            return "a micro-op of the first trip has no counterpart in the second"
        first, second = pair[0], pair[1]
        move = (second.row - first.row, second.col - first.col)
        if (reason := _last_trip_outside(graph, first, move, trips)) is not None:
            return reason
        moves.setdefault(first.buffer, set()).add(move)
        rows, cols = first.tile.shape  # type: ignore[union-attr]
        box = boxes.setdefault(first.buffer, [first.row, first.row + rows, first.col, first.col + cols])
        box[:] = [min(box[0], first.row), max(box[1], first.row + rows), min(box[2], first.col),
                  max(box[3], first.col + cols)]
    for b in written:
        name = graph.args[b].name
        if len(moves.get(b, ())) != 1:
            return f"the accesses to written buffer '{name}' do not all move alike from trip to trip"
        (row_move, col_move), = moves[b]
        row_lo, row_hi, col_lo, col_hi = boxes[b]
        span = _overlap_span(row_move, row_hi - row_lo, col_move, col_hi - col_lo)
        if span < 0:
            return f"every trip touches the same bytes of '{name}'"
        if span > MAX_TRIP_SPAN:
            return f"the trips touch the same bytes of '{name}' up to {span} trips apart (at most {MAX_TRIP_SPAN})"
    return None


def _last_trip_outside(graph: Graph, first: Node, move: tuple[int, int], trips: int) -> str | None:
    rows, cols = first.tile.shape  # type: ignore[union-attr]
    buf = graph.args[first.buffer]
    row, col = first.row + (trips - 1) * move[0], first.col + (trips - 1) * move[1]
    if row < 0 or col < 0 or row + rows > buf.shape[0] or col + cols > buf.shape[1]:
        return f"micro-op '{first.name}' of the last trip would reach outside '{buf.name}'"
    return None


def _overlap_span(row_move: int, height: int, col_move: int, width: int) -> int:
    """The most trips apart that a box of ``height`` x ``width`` moving by ``(row_move, col_move)``
    a trip overlaps itself; -1 for a box that does not move (every trip overlaps)."""
    spans = [(extent - 1) // abs(move) for move, extent in ((row_move, height), (col_move, width)) if move]
    return min(spans) if spans else -1


# ---------------------------------------------------------------------------
# the encodings
# ---------------------------------------------------------------------------


def folding_refusal(short: isa.EncodedProgram) -> str | None:
    """Why the shorter compile shows that the trips do not fold: a queue that does not end with a loop
    (its trips unrolled, or a loop of several trips' period: a shared-memory ring whose rotation
    comes back only every few trips); None if every queue with records ends with one."""
    for sm, queues in enumerate(short.queues):
        for engine, (_, count) in enumerate(queues):
            loops = isa.queue_loops(short.queue(sm, engine)) if count else []
            if count and not (loops and loops[-1].end == count):
                return f"SM {sm}'s queue {engine} does not end with a loop of the trips"
    return None


def stamped_program(short: isa.EncodedProgram, longer: isa.EncodedProgram, graph: Graph,
                    form: LayerLoopForm) -> isa.EncodedProgram:
    """The encoding of ``form.trips`` trips, from those of :data:`SHORT_TRIPS` (``short``, ``longer``)
    and ``graph``, the longer one's; StampRefused if the two do not differ as the module docstring says."""
    k = SHORT_TRIPS[1]
    _check_same_frame(short, longer)
    step = longer.instrs - short.instrs  # uint32: wraps as the words do
    _check_steps(short, longer, step)
    extra = np.uint32(form.trips - k)
    instrs = longer.instrs + extra * step
    counters = longer.num_counters + int(extra) * (longer.num_counters - short.num_counters)
    return isa.EncodedProgram(
        num_sms=longer.num_sms, smem_bytes=longer.smem_bytes, num_counters=counters,
        bitmap_bits=longer.bitmap_bits, buffers=longer.buffers, instrs=instrs, queues=longer.queues,
        uop_names=stamped_names(graph, form, k), target=longer.target, scalars=longer.scalars,
    )


def _check_same_frame(short: isa.EncodedProgram, longer: isa.EncodedProgram) -> None:
    for what, a, b in (("SMs", short.num_sms, longer.num_sms), ("shared memory", short.smem_bytes, longer.smem_bytes),
                       ("dependency bits", short.bitmap_bits, longer.bitmap_bits),
                       ("buffers", short.buffers, longer.buffers), ("scalars", short.scalars, longer.scalars),
                       ("queue table", short.queues, longer.queues)):
        if a != b:
            raise StampRefused(f"the short compiles differ in their {what}")


def _check_steps(short: isa.EncodedProgram, longer: isa.EncodedProgram, step: np.ndarray) -> None:
    """Only the counting words differ, and a queue's loop that grows is its last record."""
    loop_rows = np.zeros(len(step), dtype=bool)
    for sm, queues in enumerate(short.queues):
        for engine, (first, count) in enumerate(queues):
            loops = isa.queue_loops(short.queue(sm, engine))
            if not _alike_but_the_last(loops, isa.queue_loops(longer.queue(sm, engine)), count):
                raise StampRefused(f"SM {sm}'s queue {engine} changes its loops with the trip count")
            for loop in loops:
                loop_rows[first + loop.record] = True
                # step records: whole-trip deltas, the same for any trip count
                if step[first + loop.record + 1 + loop.body : first + loop.end].any():
                    raise StampRefused(f"SM {sm}'s queue {engine} has a step record that moves with the trip count")
    moving = set(np.nonzero(step[~loop_rows].any(axis=0))[0].tolist()) - set(STEPPING_WORDS)
    if moving:
        raise StampRefused(f"word {min(moving)} of some record moves with the trip count")
    others = [w for w in range(isa.INSTR_WORDS) if w != isa.LOOP_TRIPS.word]
    if step[loop_rows][:, others].any():
        raise StampRefused("a loop record changes more than its trip count")


def _alike_but_the_last(short: list[isa.Loop], longer: list[isa.Loop], count: int) -> bool:
    """The two compiles' loops of a queue are the same, but the last may run one trip more if it ends
    the queue (then nothing after it depends on the parity of the trip count)."""
    if len(short) != len(longer):
        return False
    if short == longer:
        return True
    *same, last = short
    grown = isa.Loop(last.record, last.body, last.trips + 1, last.step_count)
    return same == longer[:-1] and grown == longer[-1] and last.end == count


def stamped_names(graph: Graph, form: LayerLoopForm, short_trips: int) -> dict[int, str]:
    """The micro-op names of ``form.trips`` trips, from ``graph`` (a short compile of ``short_trips``):
    each SM's micro-ops are numbered trip after trip, and a name spells its trip's value of the
    induction variable where the first trip's spells ``lower``; StampRefused if ``graph``'s own
    names do not follow that rule."""
    per_sm: dict[int, list[Node]] = {}
    for n in sorted(graph.nodes, key=lambda n: n.id):
        per_sm.setdefault(n.sm, []).append(n)
    names: dict[int, str] = {}
    first_id = 0
    for sm in sorted(per_sm):
        nodes = per_sm[sm]
        per_trip, rest = divmod(len(nodes), short_trips)
        templates = [_name_template(n, form) for n in nodes[:per_trip]]
        if rest or any(_name(templates[i % per_trip], form, i // per_trip) != _full_name(n)
                       for i, n in enumerate(nodes)):
            raise StampRefused(f"SM {sm}'s micro-ops are not numbered trip after trip")
        names.update(_names_of_trips(templates, form, first_id))
        first_id += per_trip * form.trips
    return names


def _names_of_trips(templates: list[str], form: LayerLoopForm, first_id: int) -> Iterable[tuple[int, str]]:
    uid = first_id
    for trip in range(form.trips):
        for t in templates:
            yield uid, _name(t, form, trip)
            uid += 1


def _full_name(n: Node) -> str:
    return f"{n.name} ({n.loc})"


def _name_template(n: Node, form: LayerLoopForm) -> str:
    """The name with its first ``[var=lower]`` (the layer's) left as ``{}``."""
    first = f"[{form.var}={form.lower}]"
    text = _full_name(n).replace("{", "{{").replace("}", "}}")
    if first not in text:
        raise StampRefused(f"micro-op '{n.name}' does not name its trip")
    return text.replace(first, f"[{form.var}={{}}]", 1)


def _name(template: str, form: LayerLoopForm, trip: int) -> str:
    return template.format(form.value(trip))
