"""``vdir-schedule``: a total order for every (SM, engine) queue.

Each queue follows program order, with one exception: a load that waits on
other SMs (a global counter) is moved behind the next ``prefetch``
independent loads of its queue — loads with no dependency at all, typically
the weight tiles of the next phase; other waiting loads between them are
passed over. Without this, the in-order load engine
would sit idle at every cross-SM barrier instead of streaming weights.

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

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vdir.analysis.graph import Graph, Node
from vdir.analysis.queues import QUEUE_ORDER, check_dependencies_point_forward, queues_of, waits_on_other_sms
from vdir.analysis.stages import require_option_in_range, run_stage
from vdir.diagnostics import PassFailure


def _is_independent_load(n: Node) -> bool:
    return n.kind == "load" and not n.deps and n.flow is None


#: how far past a cross-SM waiting load the scheduler looks for loads to hoist
HOIST_WINDOW = 64


#: a load of less than 1 / SMALL_LOAD_FRACTION of its queue's largest load
#: is hoisted along without counting towards ``prefetch``
SMALL_LOAD_FRACTION = 8


def hoist_past_barriers(queue: list[Node], prefetch: int) -> None:
    """Move ``prefetch`` independent loads ahead of each group of cross-SM waiting loads.

    A group is a run of waiting loads with nothing else between them (an
    activation row loaded in two chunks); its first load gets the group's
    share. The candidates are the nearest independent loads within
    :data:`HOIST_WINDOW` queue entries that no earlier group took; small
    ones (a norm's weight row) come along without counting.
    """
    largest = max((n.tile.nbytes for n in queue if n.kind == "load" and n.tile is not None), default=0)
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
            if _is_independent_load(later) and not later.hoist:
                chosen.append(later)
                if later.tile is None or later.tile.nbytes * SMALL_LOAD_FRACTION >= largest:
                    counted += 1
        for k, load in enumerate(chosen):
            load.seq, load.hoist = blocked.seq, k - len(chosen)


def _is_pipelined(graph: Graph, engine: str) -> bool:
    """Whether ``engine`` keeps several micro-ops in flight (the target says; on Hopper the load engine)."""
    spec = graph.target.engine(engine)
    return spec is not None and spec.pipelined


#: the least ``prefetch`` (0: no load is moved ahead)
MIN_PREFETCH = 0
#: the most: a waiting load's candidates lie within :data:`HOIST_WINDOW` entries of it
MAX_PREFETCH = HOIST_WINDOW


def schedule(graph: Graph, prefetch: int = 2, check: bool = True) -> None:
    """Give every node its queue position (see the module docstring).

    ``check=False`` skips re-checking that every edge points forward, for
    callers that already ran ``vdir-verify-deps`` on this graph.
    """
    if check:
        check_dependencies_point_forward(graph)
    for (sm, engine), queue in queues_of(graph).items():
        if sm < 0:
            raise PassFailure(f"{queue[0].name} has no SM; run vdir-place first", loc=queue[0].loc)
        schedule_queue(graph, engine, queue, prefetch)


def schedule_queue(graph: Graph, engine: str, queue: list[Node], prefetch: int) -> None:
    """Order one (SM, ``engine``) queue and number its positions (see :func:`schedule`)."""
    queue.sort(key=QUEUE_ORDER)
    if prefetch > 0 and _is_pipelined(graph, engine):
        hoist_past_barriers(queue, prefetch)
        queue.sort(key=QUEUE_ORDER)
    for pos, n in enumerate(queue):
        n.pos = pos


@dataclass(frozen=True)
class SchedulePass(ModulePass):
    """Order every (SM, engine) queue (see the module docstring).

    Option ``prefetch`` (default 2, at most :data:`MAX_PREFETCH`): independent
    loads moved ahead of each load that waits on other SMs.
    """

    name = "vdir-schedule"

    prefetch: int = 2

    def __post_init__(self) -> None:
        require_option_in_range(self.name, "prefetch", self.prefetch, MIN_PREFETCH, MAX_PREFETCH)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_stage(op, "placed", "scheduled", lambda graph: schedule(graph, self.prefetch))
