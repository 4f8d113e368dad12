"""``vdir-pipeline``: every pass, in order, from a source program to its encoding.

The stages run on one in-memory micro-op graph: the program is expanded
once, and the scheduled form is never printed or re-parsed between stages,
which keeps a 16-layer model's pipeline to seconds. ``compile_to_encoded`` is
the same pipeline for embedders: a module in, an
:class:`~vdir.isa.EncodedProgram` out.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vdir import isa
from vdir.analysis.flag_words import mark_flag_words, plan_flag_words
from vdir.analysis.graph import Graph, GroupInterner, Node, build_graph, expanded_micro_ops, single_program
from vdir.analysis.parallel import run_in_children
from vdir.analysis.queues import SmShare, queues_of_shares, sm_shares
from vdir.analysis.stages import resolve_target
from vdir.analysis.stream_holds import HoldFacts, add_stream_holds, hold_facts, plan_stream_holds
from vdir.analysis.trip_stamp import (
    SHORT_TRIPS,
    StampRefused,
    folding_refusal,
    footprint_refusal,
    layer_loop_form,
    stamp_refusal,
    stamped_program,
    with_trips,
)
from vdir.diagnostics import PassFailure
from vdir.isa import tile_arena_bytes
from vdir.limits import current_limits
from vdir.transforms.alloc_smem import DEFAULT_STREAM_ROOM, StreamRoom, allocate_sm
from vdir.transforms.encode import (
    encode_sms,
    encoded_program,
    first_trip_counts,
    join_chunks,
    replace_program,
    uop_names,
)
from vdir.transforms.fuse import FusePass
from vdir.transforms.layout_deps import assign_bits, assign_counters, vector_clocks
from vdir.transforms.pipeline_options import PIPELINE_PASS, PipelineOptions
from vdir.transforms.place import place
from vdir.transforms.schedule import (
    can_hoist,
    schedule,
    schedule_sm,
    schedule_within_budget,
)
from vdir.transforms.verify_deps import verify_dependencies

log = logging.getLogger(__name__)

#: the shares of an SM's tile arena that memory-aware hoisting tries, most first, SM by SM: the
#: liveness allocator may not pack a schedule whose live bytes just fit (fragmentation)
HOIST_BUDGET_FRACTIONS = (0.9, 0.8, 0.7)

#: the options of a pipeline run that is given none
DEFAULT_PIPELINE_OPTIONS = PipelineOptions()


@dataclass(frozen=True)
class _Attempt:
    """One way to schedule and allocate: the hoisting depth, rings or liveness, and whether hoisting is budgeted.

    Unbudgeted, ``prefetch`` loads are hoisted at every wait
    (``vdir-schedule``); budgeted, only where each SM's live tiles stay
    within a share of its arena (:func:`~vdir.transforms.schedule.schedule_within_budget`),
    the largest share of :data:`HOIST_BUDGET_FRACTIONS` whose allocation fits.
    """

    prefetch: int
    by_liveness: bool
    budgeted: bool = False


def _attempts(prefetch: int) -> list[_Attempt]:
    """The attempts of :func:`schedule_and_allocate`, in order."""
    rings = [_Attempt(p, False) for p in range(prefetch, 0, -1)]
    budgeted = [_Attempt(prefetch, True, True)] if prefetch > 0 else []
    return [*rings, *budgeted, _Attempt(0, False), *(_Attempt(p, True) for p in range(prefetch, -1, -1))]


def schedule_and_allocate(graph: Graph, prefetch: int, room: StreamRoom = DEFAULT_STREAM_ROOM) -> list[SmShare]:
    """Schedule with load hoisting; hoist less (down to none) while the tiles do not fit.

    Shared memory in rings is tried first at every hoisting depth, so that a
    program the rings serve keeps them. Where none fits, the loads are
    hoisted within the SM's arena (memory-aware hoisting) and allocated by
    liveness (``vdir-alloc-smem``): a program whose weight tiles fill the
    arena keeps the first tiles of each phase streaming during its cross-SM
    waits instead of idling there. (Where no queue holds both a load that
    waits on other SMs and one that waits on nothing — the stream engine
    holds the latter — hoisting moves nothing, so only the attempts
    without it are made.) Then rings without hoisting, then
    liveness at each depth; the last attempt, by liveness without
    hoisting, raises. Each attempt schedules and allocates one SM at a time
    (the queues and tiles of an SM depend on no other SM's), so one that
    fails stops at the first SM that does not fit and undoes only the SMs
    it reached. ``room``: see vdir-alloc-smem.

    Returns each SM's share of the graph (:func:`~vdir.analysis.queues.sm_shares`),
    its queues now in queue order, for the stages after to reuse.
    """
    per_sm, by_liveness = schedule_for_allocation(graph, prefetch, room)
    if by_liveness:
        graph.smem_bytes = allocate_by_liveness(graph, per_sm, room)
    return per_sm


def schedule_for_allocation(graph: Graph, prefetch: int, room: StreamRoom = DEFAULT_STREAM_ROOM,
                            ) -> tuple[list[SmShare], bool]:
    """:func:`schedule_and_allocate` up to its last attempt: where that is needed, every SM is
    scheduled without hoisting and left to :func:`allocate_by_liveness` (the second value is then
    True), which the pipeline runs SM by SM with the stages after it (:func:`_lay_out_and_encode`)."""
    per_sm = sm_shares(graph)
    if per_sm is None:
        schedule(graph, 0, check=False)  # refuses the first node without an SM
        return [], False
    if not any(can_hoist(graph, queues) for _sm, _nodes, queues in per_sm):
        prefetch = 0  # every depth schedules alike: try rings, then liveness, once each
    for attempt in _attempts(prefetch)[:-1]:
        if _try_schedule_and_allocate(graph, per_sm, attempt, room):
            return per_sm, False
    for _sm, _nodes, queues in per_sm:
        schedule_sm(graph, queues, 0)
    return per_sm, True


def allocate_by_liveness(graph: Graph, shares: list[SmShare], room: StreamRoom) -> int:
    """The last attempt of :func:`schedule_and_allocate` on scheduled ``shares`` (no hoisting): each SM
    by liveness, in SM order; the most bytes an arena uses. An SM that does not fit is a located error."""
    intern = GroupInterner()
    smem = 0
    for sm, nodes, _queues in shares:
        smem = max(smem, allocate_sm(graph, sm, nodes, intern, by_liveness=True, room=room))
    return smem


def _try_schedule_and_allocate(graph: Graph, per_sm: list[SmShare], attempt: _Attempt, room: StreamRoom) -> bool:
    """One attempt of :func:`schedule_and_allocate`, SM by SM; False (the graph as it was) if an SM fails.

    A budgeted attempt tries each SM at the shares of :data:`HOIST_BUDGET_FRACTIONS` in turn
    (undoing only that SM between them) before it gives up.
    """
    arena = tile_arena_bytes(graph.target.smem_per_block)
    budgets = [int(arena * f) for f in HOIST_BUDGET_FRACTIONS] if attempt.budgeted else [0]
    intern = GroupInterner()
    touched: list[tuple[list[Node], list[tuple[int, int, int, int, int]]]] = []
    smem = 0
    for sm, nodes, queues in per_sm:
        # what scheduling (seq, hoist, pos) and allocation (smem, added groups) change
        touched.append((nodes, [(n.seq, n.hoist, n.pos, n.smem, len(n.deps)) for n in nodes]))
        for budget in budgets:
            try:
                tiles = None
                if attempt.budgeted:
                    tiles = schedule_within_budget(graph, nodes, queues, attempt.prefetch, budget)
                else:
                    schedule_sm(graph, queues, attempt.prefetch)
                smem = max(smem, allocate_sm(graph, sm, nodes, intern, attempt.by_liveness, tiles, room))
                break
            except PassFailure:
                _undo(touched[-1:])
        else:
            _undo(touched)
            return False
    graph.smem_bytes = smem
    return True


def _undo(touched: list[tuple[list[Node], list[tuple[int, int, int, int, int]]]]) -> None:
    """Give the nodes back the schedule and allocation facts saved in ``touched``."""
    for nodes, saved in touched:
        for n, (seq, hoist, pos, offset, groups) in zip(nodes, saved, strict=True):
            n.seq, n.hoist, n.pos, n.smem = seq, hoist, pos, offset
            if len(n.deps) != groups:
                n.deps = n.deps[:groups]


@contextmanager
def _no_cyclic_gc():
    """Pause the cyclic garbage collector while the graph is built and rewritten.

    The stages allocate hundreds of thousands of small objects that live until
    the end; collecting them generation by generation costs a large share of
    the run and frees nothing.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run_pipeline(
    module: ModuleOp, options: PipelineOptions = DEFAULT_PIPELINE_OPTIONS, encode_in_ir: bool = True,
    max_micro_ops: int | None = None,
) -> isa.EncodedProgram:
    """Fuse, expand, place, schedule, allocate, lay out and encode ``module``'s program as ``options`` say.

    ``encode_in_ir``: replace the program in ``module`` by its encoded form
    (what ``vdir-pipeline`` does); the encoding is returned either way.
    ``max_micro_ops``: the most micro-ops the program may expand to (None: the
    limit in effect, see :mod:`vdir.limits`); not a positive integer: a
    :class:`~vdir.limits.LimitError`.
    """
    limit = current_limits().replace(max_micro_ops=max_micro_ops).max_micro_ops
    if options.fuse:
        FusePass().apply(Context(), module)
    with _no_cyclic_gc():
        program = _stamped(module, options, limit) if options.keep_trips and options.stamp_trips else None
        if program is None:
            # the graph is dropped here, not at the return: freed by reference counting while the
            # collector is paused, rather than scanned whole by the first collection after it
            program = _run_stages(module, options, limit)[1]
        if encode_in_ir:
            replace_program(module, single_program(module).sym_name.data, program)
        return program


def _run_stages(module: ModuleOp, opts: PipelineOptions, limit: int) -> tuple[Graph, isa.EncodedProgram]:
    """Expand (to at most ``limit`` micro-ops), place, schedule, allocate, lay out and encode the
    (fused) module's program."""
    graph = build_graph(module, max_micro_ops=limit)
    if graph.stage != "source":
        raise PassFailure(f"vdir-pipeline needs a source program (this one is at stage '{graph.stage}')", graph.program_op)
    graph.target = resolve_target(opts.target, opts.num_sms, graph.target)
    opts = opts.for_target(graph.target)  # what the options leave to the target, from the one compiled for
    verify_dependencies(graph)
    place(graph, graph.target.num_sms, opts.stream_loads, opts.phase_balance, opts.keep_trips, opts.side_loads)
    shares, by_liveness = schedule_for_allocation(graph, opts.prefetch, opts.stream_room)
    return graph, _lay_out_and_encode(graph, shares, by_liveness, opts)


def _lay_out_and_encode(graph: Graph, shares: list[SmShare], by_liveness: bool, opts: PipelineOptions,
                        ) -> isa.EncodedProgram:
    """Allocate (where ``by_liveness`` says it is left to do), lay out and encode the scheduled graph.

    The global counters come first (they read only the schedule and the
    groups between SMs); then every SM is allocated, gets its dependency
    bits and is encoded on its own (:func:`_finish_sms`), the SMs split over
    processes where the graph is large (``vdir.analysis.parallel``). The
    result, and any error, is that of one process doing the stages in turn.
    """
    mark_flag_words(graph, plan_flag_words(graph, opts.flag_words))
    holds = hold_facts(graph, opts.hold_streams) if opts.hold_streams else None
    assign_counters(graph)
    first_trips = first_trip_counts(graph)
    queues = queues_of_shares(shares)
    share_of = {share[0]: share for share in shares}

    def job(sms: list[int]) -> tuple[np.ndarray, list[list[tuple[int, int]]], int]:
        return _finish_sms(graph, sms, [share_of[sm] for sm in sms if sm in share_of], by_liveness, opts, queues,
                           first_trips, holds)

    names = uop_names(graph)  # before the children start (see run_in_children)
    parts = run_in_children(range(graph.num_sms), job, lambda sm: len(share_of[sm][1]) if sm in share_of else 0,
                            len(graph.nodes))
    if parts is None:
        parts = [job(list(range(graph.num_sms)))]
    if by_liveness:
        graph.smem_bytes = max(smem for _instrs, _table, smem in parts)
    instrs, table = join_chunks([(instrs, table) for instrs, table, _smem in parts])
    return encoded_program(graph, instrs, table, opts.reroll, names)


def _finish_sms(graph: Graph, sms: list[int], shares: list[SmShare], by_liveness: bool, opts: PipelineOptions,
                queues: dict[tuple[int, str], list[Node]], first_trips: dict[int, int],
                holds: HoldFacts | None = None) -> tuple[np.ndarray, list[list[tuple[int, int]]], int]:
    """Of the SMs ``sms`` (``shares``: theirs that hold micro-ops), in turn: the allocation by
    liveness (where ``by_liveness``), the stream holds (where ``holds`` gives the program's facts
    for them: ``vdir-hold-streams``), the dependency bits, the records; the records, their queue
    table and the most bytes an arena allocated here uses (0 where nothing was)."""
    smem = allocate_by_liveness(graph, shares, opts.stream_room) if by_liveness else 0
    cache: dict[int, int] = {}
    for sm, nodes, _queues in shares:
        if holds is not None:
            add_stream_holds(plan_stream_holds(nodes, holds))
        assign_bits(graph, sm, vector_clocks(nodes, cache, graph.target))
    instrs, table = encode_sms(graph, sms, queues, opts.l2_prefetch, first_trips, bool(opts.release_first))
    return instrs, table, smem


def _stamped(module: ModuleOp, opts: PipelineOptions, limit: int) -> isa.EncodedProgram | None:
    """The program compiled from two short trip counts of its layer loop and stamped to the full count
    (``vdir.analysis.trip_stamp``); None, with the reason logged, where that does not apply."""
    program = single_program(module)
    form = layer_loop_form(program)
    if form is None or form.trips <= sum(SHORT_TRIPS):
        return None  # as fast to compile every trip
    reason = stamp_refusal(program)
    if reason is None and opts.flag_words:  # their place in the sync block follows the counters' count
        reason = "flag-word hand-offs are laid out after the counters, whose count the stamp extrapolates"
    if reason is None and expanded_micro_ops(program) > limit:
        reason = "the program is over the micro-op limit"  # compiling every trip says where
    try:
        if reason is None:
            _, short = _run_stages(with_trips(module, SHORT_TRIPS[0]), opts, limit)
            reason = folding_refusal(short)  # known before the second compile: refused at the cost of one
        if reason is None:
            graph, longer = _run_stages(with_trips(module, SHORT_TRIPS[1]), opts, limit)
            reason = footprint_refusal(graph, form.trips)
        if reason is None:
            stamped = stamped_program(short, longer, graph, form)
            log.debug("layer loop of %d trips stamped from %d and %d", form.trips, *SHORT_TRIPS)
            return stamped
    except StampRefused as e:
        reason = str(e)
    except PassFailure as e:  # compiling every trip reports it, located in the program itself
        reason = f"a short compile failed: {e}"
    log.debug("layer loop of %d trips compiled trip by trip: %s", form.trips, reason)
    return None


def compile_to_encoded(
    module: ModuleOp, options: PipelineOptions | Mapping[str, Any] | str | None = None,
    max_micro_ops: int | None = None, **overrides: Any,
) -> isa.EncodedProgram:
    """The embedding entry point: a verified module -> its encoded program.

    ``options``: the pipeline's options (:class:`PipelineOptions`, a mapping
    or a ``"key=value ..."`` string; None: the defaults), ``overrides`` more of
    them by name (``compile_to_encoded(m, num_sms=4, flag_words=4096)``); an
    unknown or bad one is a
    :class:`~vdir.transforms.pipeline_options.PipelineOptionError` before anything is
    compiled. The module itself is left as it was (the pipeline runs on a
    clone). ``max_micro_ops`` raises (or lowers) the most micro-ops the
    program may expand to (None: the limit in effect, by default
    :data:`vdir.limits.MAX_MICRO_OPS`).
    """
    if not isinstance(module, ModuleOp):
        from vdir.compiler import CompileArgumentError

        raise CompileArgumentError(f"compile_to_encoded takes an xDSL ModuleOp, got {type(module).__name__}")
    resolved = PipelineOptions.coerce(options).with_overrides(overrides)
    return run_pipeline(module.clone(), resolved, encode_in_ir=False, max_micro_ops=max_micro_ops)


@dataclass(frozen=True)
class PipelinePass(PipelineOptions, ModulePass):
    """All vdir passes in order.

    Its options are :class:`PipelineOptions`' fields, spelled with dashes
    (``vdir-pipeline{num-sms=4 flag-words=4096}``; docs/passes.md lists them).
    """

    name = PIPELINE_PASS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_pipeline(op, self.options())

    def options(self) -> PipelineOptions:
        """This pass's options as a plain :class:`PipelineOptions` value."""
        return PipelineOptions(**{name: getattr(self, name) for name in PipelineOptions.names()})
