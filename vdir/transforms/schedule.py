"""``vdir-schedule``: a total order for every (SM, engine) queue.

Each queue is ordered by program order. Program order is one topological
order of *all* dependencies (tile edges, tokens, memory dependencies, and
later the shared-memory reuse edges, which also point forward), so ordering
every queue by it makes the whole machine deadlock-free: the earliest
unfinished micro-op in program order is always at the head of its queue with
all of its producers finished. Flows (micro-ops sharing a ``flow`` id on one
engine) stay in program order as a consequence.

Memory latency is hidden by the engines themselves rather than by moving
loads in the queue: the load engine runs ahead of the compute engine as far as
free shared-memory slots allow (``vdir-alloc-smem`` rotates slots so that
this distance is as large as the budget permits).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vdir.diagnostics import PassFailure
from vdir.transforms.graph import Graph, Node
from vdir.transforms.passes_common import run_stage


def queues_of(graph: Graph) -> dict[tuple[int, str], list[Node]]:
    """(sm, engine) -> nodes in queue order (by ``pos`` once scheduled)."""
    queues: dict[tuple[int, str], list[Node]] = defaultdict(list)
    for n in graph.nodes:
        queues[(n.sm, n.engine)].append(n)
    for q in queues.values():
        q.sort(key=lambda n: (n.pos, n.seq) if n.pos >= 0 else (n.seq, n.id))
    return queues


def check_dependencies_point_forward(graph: Graph) -> None:
    """Every producer comes before its consumer in program order (no cycle)."""
    for n in graph.nodes:
        for p in n.inputs:
            if p.seq >= n.seq:
                raise PassFailure(f"{n.name} reads a tile produced later by {graph.describe(p)}", loc=n.loc)
        for g in n.deps:
            for p in g:
                if p.seq >= n.seq and p is not n:
                    raise PassFailure(
                        f"{n.name} waits on {graph.describe(p)}, which comes later: a dependency cycle",
                        loc=n.loc,
                    )


def schedule(graph: Graph) -> None:
    """Give every node its queue position (program order per (SM, engine))."""
    check_dependencies_point_forward(graph)
    for (sm, engine), queue in queues_of(graph).items():
        if sm < 0:
            raise PassFailure(f"{queue[0].name} has no SM; run vdir-place first", loc=queue[0].loc)
        queue.sort(key=lambda n: (n.seq, n.id))
        for pos, n in enumerate(queue):
            n.pos = pos


@dataclass(frozen=True)
class SchedulePass(ModulePass):
    """Order every (SM, engine) queue (see the module docstring)."""

    name = "vdir-schedule"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_stage(op, "placed", "scheduled", schedule)
