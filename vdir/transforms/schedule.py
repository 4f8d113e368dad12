"""``vdir-schedule``: a total order for every (SM, engine) queue.

Each queue follows program order, with two exceptions. A queue of one or
two weight tiles that opens with small loads issues its first tile ahead
of them (:func:`lead_with_large_load`). And a load that waits on other SMs
(a global counter) is moved behind the next ``prefetch`` independent loads
of its queue — loads with no dependency at all, typically
the weight tiles of the next phase; other waiting loads between them are
passed over. Without this, an in-order load engine that holds both would
sit idle at every cross-SM barrier instead of streaming weights. Where
``vdir-place`` has put the independent loads on a stream engine of their
own, no queue holds both, and nothing is hoisted: the stream engine runs
ahead of the waits by itself, as far as shared memory allows, and the
tiles' lifetimes stay those of program order (measured: the same speed as
hoisting them, and the shared-memory rings fit where hoisted lifetimes
did not, docs/performance.md).

Deadlock freedom: program order is one topological order of every edge
(tile edges, tokens, memory dependencies, and the shared-memory reuse edges
that ``vdir-alloc-smem`` adds later in the order it is given). A hoisted load
has no incoming edge, so moving it earlier keeps a topological order; every
queue is ordered by that one global order, so the earliest unfinished
micro-op always heads its queue with all of its producers finished. Flows
keep program order (only loads with no flow are hoisted).

Hoisting lengthens the hoisted tiles' lifetimes; if the working set then no
longer fits, ``vdir-pipeline`` schedules again with ``prefetch=0``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vdir.analysis.graph import Graph, Node
from vdir.analysis.liveness import LiveBytes, TileLife, tiles_of_sm
from vdir.analysis.queues import (
    QUEUE_ORDER,
    check_dependencies_point_forward,
    free_load_test,
    is_small_load,
    sm_shares,
    waits_on_nothing,
    waits_on_other_sms,
)
from vdir.analysis.stages import require_option_in_range, run_stage
from vdir.diagnostics import PassFailure

#: how far past a cross-SM waiting load the scheduler looks for loads to hoist
HOIST_WINDOW = 64

#: the most large loads a queue may hold for :func:`lead_with_large_load` to reorder it. Measured on
#: the H200 (gemv sweep, two rounds each way): SMs with one or two tiles gain (2048 x 2048: 10.7 ->
#: 10.4 µs; 4096 x 1024: 11.0 -> 10.75), SMs with four lose (8192 x 2048: 16.5 -> 17.3; 8192 x 1024:
#: 13.2 -> 13.6), those with more are within 0.5%. The stream engine retires its loads in order with
#: two in flight: ``x`` behind the first tile holds one of the two places until that tile lands, which
#: delays every tile after it; with one or two tiles the earlier start outweighs that. (A gemv's ``x``
#: is on the load engine now, ``vdir-place``: the rule orders the stream queues of SMs whose loads wait.)
MAX_LEAD_TILES = 2


def hoist_past_barriers(queue: list[Node], prefetch: int, live: LiveBytes | None = None, budget: int = 0,
                        is_free: Callable[[Node], bool] = waits_on_nothing) -> None:
    """Move ``prefetch`` independent loads ahead of each group of cross-SM waiting loads.

    A group is a run of waiting loads with nothing else between them (an
    activation row loaded in two chunks); its first load gets the group's
    share. The candidates are the nearest independent loads within
    :data:`HOIST_WINDOW` queue entries that no earlier group took; small
    ones (a norm's weight row) come along without counting. With ``live``
    (the SM's live bytes, :class:`~vdir.analysis.liveness.LiveBytes`) a
    candidate is taken only if its tile, live from the group on, keeps the
    SM within ``budget`` bytes (see :func:`schedule_within_budget`); the
    first candidate that does not fit ends the group's share. Scanning on
    past it would carry the small loads of later layers (norm weights,
    RoPE tables) far ahead: measured on the decode step's trace, such a
    load waits for its bytes to be freed at the head of the in-order queue,
    and every load behind it waits too. ``is_free`` (:func:`free_load_test`)
    says which loads wait on nothing.
    """
    largest = _largest_load(queue)
    for i, blocked in enumerate(queue):
        if blocked.kind != "load" or not waits_on_other_sms(blocked):
            continue
        if i > 0 and queue[i - 1].kind == "load" and waits_on_other_sms(queue[i - 1]):
            continue  # not the first of its group
        chosen: list[Node] = []
        counted = 0
        for later in queue[i + 1 : i + 1 + HOIST_WINDOW]:
            if counted == prefetch:
                break
            if is_free(later) and not later.hoist:
                if live is not None:
                    if not live.fits_earlier(later, blocked, budget):
                        break  # the loads after it stay behind it (see the docstring)
                    live.start_earlier(later, blocked)
                chosen.append(later)
                if later.tile is None or not is_small_load(later.tile.nbytes, largest):
                    counted += 1
        for k, load in enumerate(chosen):
            load.seq, load.hoist = blocked.seq, k - len(chosen)


def schedule_within_budget(graph: Graph, nodes: list[Node], queues: list[tuple[str, list[Node]]], prefetch: int,
                           budget: int) -> list[TileLife]:
    """Order one SM's queues, hoisting a load only where the SM's live tiles stay within ``budget`` bytes.

    :func:`schedule_sm` hoists ``prefetch`` loads ahead of every cross-SM
    wait whatever that costs in shared memory, so a program whose weight
    tiles fill the arena fits only without hoisting, and its load engine
    then idles at every wait. Here each candidate is checked against the
    bytes live from the wait to its own place (the liveness of
    ``vdir-alloc-smem``, :mod:`vdir.analysis.liveness`): the first tiles of
    the next phase are fetched during the wait where they fit, and the
    others keep their place. ``nodes`` and ``queues`` are the SM's (as
    :func:`~vdir.transforms.pipeline.schedule_and_allocate` groups them).

    Returns the SM's tiles (:func:`~vdir.analysis.liveness.tiles_of_sm` of
    ``nodes``) as the new order has them, for ``vdir-alloc-smem`` to reuse:
    hoisting moves loads, which read no tile, so only a tile that nobody
    reads changes its last use (its own place).
    """
    schedule_sm(graph, queues, 0)
    tiles = tiles_of_sm(nodes, graph.target.smem_alignment)
    if prefetch == 0:
        return tiles
    live = LiveBytes(sorted(nodes, key=QUEUE_ORDER), tiles)
    is_free = free_load_test(nodes, graph.trips_kept)
    for engine, queue in queues:
        if _is_pipelined(graph, engine):
            hoist_past_barriers(queue, prefetch, live, budget, is_free)
    _number(queues)
    for t in tiles:
        if not t.consumers:
            t.last_use = (t.node.seq, t.node.hoist)
    return tiles


def _is_pipelined(graph: Graph, engine: str) -> bool:
    """Whether ``engine`` keeps several micro-ops in flight (the target says; on Hopper the load engine)."""
    spec = graph.target.engine(engine)
    return spec is not None and spec.pipelined


#: the least ``prefetch`` (0: no load is moved ahead)
MIN_PREFETCH = 0
#: loads hoisted per group of waiting loads unless told otherwise (measured: docs/performance.md)
DEFAULT_PREFETCH = 2
#: the most: a waiting load's candidates lie within :data:`HOIST_WINDOW` entries of it
MAX_PREFETCH = HOIST_WINDOW


def schedule(graph: Graph, prefetch: int = DEFAULT_PREFETCH, check: bool = True, hoist_budget: int = 0) -> None:
    """Give every node its queue position (see the module docstring).

    ``check=False`` skips re-checking that every edge points forward, for
    callers that already ran ``vdir-verify-deps`` on this graph.
    ``hoist_budget`` > 0: hoist only within that many bytes of live tiles
    per SM (:func:`schedule_within_budget`).
    """
    if check:
        check_dependencies_point_forward(graph)
    per_sm = sm_shares(graph)
    if per_sm is None:
        unplaced = next(n for n in graph.nodes if n.sm < 0)
        raise PassFailure(f"{unplaced.name} has no SM; run vdir-place first", loc=unplaced.loc)
    for _sm, nodes, sm_queues in per_sm:
        if hoist_budget > 0:
            schedule_within_budget(graph, nodes, sm_queues, prefetch, hoist_budget)
        else:
            schedule_sm(graph, sm_queues, prefetch)


def schedule_sm(graph: Graph, queues: list[tuple[str, list[Node]]], prefetch: int) -> None:
    """Order one SM's (engine, queue) pairs and number their positions (see :func:`schedule`).

    A queue is sorted before hoisting only where loads are hoisted in it; :func:`_number` sorts them all.
    """
    is_free = free_load_test([n for _engine, queue in queues for n in queue], graph.trips_kept)
    for engine, queue in queues:
        if _is_pipelined(graph, engine):
            queue.sort(key=QUEUE_ORDER)
            lead_with_large_load(queue, queues)
            if prefetch > 0:
                hoist_past_barriers(queue, prefetch, is_free=is_free)
    _number(queues)


def lead_with_large_load(queue: list[Node], queues: list[tuple[str, list[Node]]]) -> None:
    """Issue a pipelined queue's first large load ahead of the small loads that open the queue.

    An SM with one or two weight tiles of a small gemv, and a load that
    waits (else ``x`` is on the load engine, ``vdir-place``), loads its ``x``
    (a few KB) and then a tile (32 or 64 KB): the engine spends a micro-op's
    fixed cost (about 0.4 µs on the H200) issuing ``x`` before the load that
    takes longest to land starts. The first large load (at least 1 /
    :data:`~vdir.analysis.queues.SMALL_LOAD_FRACTION` of the queue's largest) moves to the front
    when it and the small loads before it wait on nothing and no small one
    is needed before it: each small load's first consumer comes no earlier
    than the large one's. Completions stay in queue order, so a small load
    needed earlier (an RMSNorm's weight row ahead of the gate tiles) would
    otherwise land only with the large one.

    Only in a queue of at most :data:`MAX_LEAD_TILES` large loads. ``queue``
    is sorted (:data:`QUEUE_ORDER`); ``queues`` are the SM's, where the
    consumers are.
    """
    largest = _largest_load(queue)
    large = sum(1 for q in queue if q.kind == "load" and q.tile is not None
                and not is_small_load(q.tile.nbytes, largest))
    if large > MAX_LEAD_TILES:
        return
    head: list[Node] = []
    for n in queue:
        if not waits_on_nothing(n) or n.tile is None:
            return
        if not is_small_load(n.tile.nbytes, largest):
            break
        head.append(n)
    else:
        return
    if not head:
        return
    first_use = _first_consumers([*head, n], queues)
    if any(first_use.get(h.id, _NEVER) < first_use.get(n.id, _NEVER) for h in head):
        return
    n.seq, n.hoist = head[0].seq, head[0].hoist - 1


def _largest_load(queue: list[Node]) -> int:
    """The bytes of the largest tile a load of ``queue`` brings in (0: none); a load of less than
    1 / :data:`~vdir.analysis.queues.SMALL_LOAD_FRACTION` of it is a small one."""
    return max((n.tile.nbytes for n in queue if n.kind == "load" and n.tile is not None), default=0)


#: the first-consumer key of a tile that no micro-op reads
_NEVER = (1 << 62, 0)


def _first_consumers(loads: list[Node], queues: list[tuple[str, list[Node]]]) -> dict[int, tuple[int, int]]:
    """The schedule key (:attr:`Node.key`) of the earliest consumer of each of ``loads``, by node id."""
    ids = {n.id for n in loads}
    first: dict[int, tuple[int, int]] = {}
    for _engine, queue in queues:
        for c in queue:
            for i in c.inputs:
                if i.id in ids and c.key < first.get(i.id, _NEVER):
                    first[i.id] = c.key
    return first


def can_hoist(graph: Graph, queues: list[tuple[str, list[Node]]]) -> bool:
    """Whether hoisting could move a load of one SM's ``queues``: a pipelined queue holds both a load
    that waits on other SMs and one that waits on nothing (with a stream engine, none does)."""
    for engine, queue in queues:
        # ``n.deps`` first: a load without dependencies (all of a stream engine's) waits on nothing
        if _is_pipelined(graph, engine) and any(n.kind == "load" and n.deps and waits_on_other_sms(n) for n in queue):
            if any(waits_on_nothing(n) for n in queue):
                return True
    return False


def _number(queues: list[tuple[str, list[Node]]]) -> None:
    """Sort each queue by :data:`QUEUE_ORDER` (hoisting moved some loads up) and number its positions."""
    for _engine, queue in queues:
        queue.sort(key=QUEUE_ORDER)
        for pos, n in enumerate(queue):
            n.pos = pos


@dataclass(frozen=True)
class SchedulePass(ModulePass):
    """Order every (SM, engine) queue (see the module docstring).

    Option ``prefetch`` (default 2, at most :data:`MAX_PREFETCH`): independent
    loads moved ahead of each load that waits on other SMs. Option
    ``hoist-budget`` (bytes, default 0: no limit): move a load ahead only
    where the tiles live on its SM, counted as ``vdir-alloc-smem`` counts
    them, stay within that many bytes (:func:`schedule_within_budget`;
    ``vdir-pipeline`` uses it with a share of the SM's arena when hoisting
    without a limit does not fit).
    """

    name = "vdir-schedule"

    prefetch: int = DEFAULT_PREFETCH
    hoist_budget: int = 0

    def __post_init__(self) -> None:
        require_option_in_range(self.name, "prefetch", self.prefetch, MIN_PREFETCH, MAX_PREFETCH)
        require_option_in_range(self.name, "hoist-budget", self.hoist_budget, 0)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_stage(op, "placed", "scheduled", lambda graph: schedule(graph, self.prefetch, hoist_budget=self.hoist_budget))
