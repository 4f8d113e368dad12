"""``vdir-layout-deps``: dependency edges -> bits and global counters.

**Between SMs.** A dependency group with a producer on another SM than its
consumer becomes a global counter: every producer of the group adds one when
it completes (release), the consumer waits until the counter reaches the
group's size times the launch epoch (acquire). Counters are never reset; the
epoch (1, 2, ... per launch) makes each launch wait for its own releases.

**Within an SM.** Edges become bits of the SM's dependency bitmap. A producer
toggles its bit when it completes; a waiter waits until the bit holds the
parity that toggle leaves. The pass first drops edges already implied by
queue order and other waits, using vector clocks over the schedule: for every
micro-op it knows, per engine, the last queue position whose completion is
guaranteed before the micro-op starts (compute and store engines run one
micro-op at a time; the load engine issues ahead but completes in order).

A bit is reused by a later producer ``P2`` only when both hold:

1. every waiter of the bit's previous producer ``P1`` has finished before
   ``P2`` starts, so nobody still needs the old state when ``P2`` toggles;
2. every waiter of ``P2`` knows ``P1`` finished before it starts waiting, so
   it cannot mistake the state before ``P1``'s toggle (same parity as after
   ``P2``'s) for ``P2``'s signal.

Both are checked on the vector clocks, so reuse is safe by construction; the
property tests and the simulator's race detector check it again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vdir.diagnostics import PassFailure
from vdir.target import ENGINE_INDEX
from vdir.transforms.graph import Graph, Node
from vdir.transforms.passes_common import run_stage
from vdir.transforms.schedule import queues_of

VClock = list[int]


def assign_counters(graph: Graph) -> dict[int, bool]:
    """Give cross-SM groups a counter; return which groups (by id) stay local."""
    counter_of: dict[int, int] = {}
    local: dict[int, bool] = {}
    counts: dict[int, int] = {}
    for n in graph.nodes:
        for g in n.deps:
            if all(p.sm == n.sm for p in g):
                continue
            if id(g) not in counter_of:
                cid = len(counter_of)
                counter_of[id(g)] = cid
                counts[cid] = len(g)
                for p in g:
                    p.release_counters.append(cid)
            n.wait_counters.append((counter_of[id(g)], len(g)))
    graph.num_counters = len(counter_of)
    graph.counter_counts = counts
    return local


def local_producers(n: Node) -> list[Node]:
    """Producers on ``n``'s SM that ``n`` must wait for."""
    out = list(n.inputs)
    for g in n.deps:
        if all(p.sm == n.sm for p in g):
            out.extend(g)
    return out


@dataclass
class _Clocks:
    pre: dict[int, VClock]
    start: dict[int, VClock]
    end: dict[int, VClock]
    needed: dict[int, list[Node]]


def _join(a: VClock, b: VClock) -> VClock:
    return [x if x >= y else y for x, y in zip(a, b)]


def vector_clocks(nodes: list[Node], queues: dict[str, list[Node]]) -> _Clocks:
    """Per node: knowledge before waiting, at start, at end; and the edges it must wait on."""
    prev: dict[int, Node | None] = {}
    for q in queues.values():
        for i, n in enumerate(q):
            prev[n.id] = q[i - 1] if i else None
    c = _Clocks({}, {}, {}, {})
    empty = [-1, -1, -1]
    for n in sorted(nodes, key=lambda n: n.seq):
        e = ENGINE_INDEX[n.engine]
        p = prev[n.id]
        if p is None:
            pre = list(empty)
        elif n.engine == "load":
            pre = list(c.start[p.id])
        else:
            pre = list(c.end[p.id])
        producers = {d.id: d for d in local_producers(n)}.values()
        needed = [d for d in producers if pre[ENGINE_INDEX[d.engine]] < d.pos]
        needed = [
            d for d in needed
            if not any(o is not d and c.end[o.id][ENGINE_INDEX[d.engine]] >= d.pos for o in needed)
        ]
        start = pre
        for d in needed:
            start = _join(start, c.end[d.id])
        end = list(start)
        end[e] = n.pos
        if n.engine == "load" and p is not None:
            end = _join(end, c.end[p.id])
        c.pre[n.id], c.start[n.id], c.end[n.id], c.needed[n.id] = pre, start, end, needed
    return c


def assign_bits(graph: Graph, sm: int, nodes: list[Node], clocks: _Clocks) -> None:
    """Give each producer with waiters a bit, reusing bits only when provably safe."""
    waiters: dict[int, list[Node]] = defaultdict(list)
    for n in nodes:
        for d in clocks.needed[n.id]:
            waiters[d.id].append(n)
    width = graph.target.dependency_bits
    last_producer: list[Node | None] = [None] * width
    last_waiters: list[list[Node]] = [[] for _ in range(width)]
    toggles = [0] * width
    for p in sorted((n for n in nodes if waiters.get(n.id)), key=lambda n: n.seq):
        ws = waiters[p.id]
        bit = next((b for b in range(width) if _can_reuse(b, p, ws, last_producer, last_waiters, clocks)), None)
        if bit is None:
            raise PassFailure(
                f"SM {sm}: more than {width} dependency bits would be live at {p.name}; "
                "the schedule has too many unresolved edges in flight",
                loc=p.loc,
            )
        toggles[bit] += 1
        last_producer[bit], last_waiters[bit] = p, ws
        p.signal_bits.append(bit)
        for w in ws:
            w.wait_bits[bit] = toggles[bit] % 2


def _can_reuse(
    b: int, p2: Node, ws2: list[Node], last_producer: list[Node | None],
    last_waiters: list[list[Node]], clocks: _Clocks,
) -> bool:
    p1 = last_producer[b]
    if p1 is None:
        return True
    start = clocks.start[p2.id]
    if any(start[ENGINE_INDEX[w.engine]] < w.pos for w in last_waiters[b]):
        return False
    e1 = ENGINE_INDEX[p1.engine]
    return all(clocks.pre[w.id][e1] >= p1.pos for w in ws2)


def layout_dependencies(graph: Graph) -> None:
    """Counters for cross-SM groups, then per SM vector clocks and bits."""
    assign_counters(graph)
    queues = queues_of(graph)
    by_sm: dict[int, list[Node]] = defaultdict(list)
    for n in graph.nodes:
        by_sm[n.sm].append(n)
    for sm, nodes in sorted(by_sm.items()):
        sm_queues = {e: q for (s, e), q in queues.items() if s == sm}
        clocks = vector_clocks(nodes, sm_queues)
        assign_bits(graph, sm, nodes, clocks)


@dataclass(frozen=True)
class LayoutDepsPass(ModulePass):
    """Lay dependency edges out as bitmap bits and global counters (see the module docstring)."""

    name = "vdir-layout-deps"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_stage(op, "allocated", "laid-out", layout_dependencies)
