"""``vdir-place``: assign every micro-op to an SM.

Placement works on *clusters*: micro-ops joined by tile edges from a producer
that is expensive to repeat (a compute whose family streams weights, by its
``Family.role``: the gemv families; anything fed through one) must share an
SM, since a tile lives in one SM's shared memory. Cheap producers — loads
and the computes of other families fed only by such — are
*rematerialised*: each SM that consumes their tile gets its own copy (an
activation vector is loaded once per SM instead of travelling through global
memory). Clusters are assigned in program order to the least-loaded SM by the
cost model's time estimate (bytes moved and flops), which balances each phase
of the program across SMs. Dependency groups naming a rematerialised node are
rewritten to name all of its copies.

Placement also picks the load engine. A load that waits on nothing (no
dependency, no flow: a weight tile, a norm's weights, a table) goes to the
target's stream engine where it has one, and the loads that wait (an
activation row another SM stores, a tile behind a token) stay on the load
engine. Each engine runs its queue in order, so in one queue a weight tile
would wait behind an activation row that waits on other SMs, and the HBM
would idle at every cross-SM barrier; in two, the weight tiles stream up to
the shared memory their slots allow while the activation row is awaited.
Option ``stream-loads=false`` keeps every load where the program put it.
"""

from __future__ import annotations

import heapq
import operator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vdir.analysis.cost_model import node_time_us
from vdir.analysis.graph import Graph, GroupInterner, Node
from vdir.analysis.queues import waits_on_nothing
from vdir.analysis.stages import require_option_in_range, resolve_target, run_stage
from vdir.families import get_family
from vdir.target import MIN_SMS, EngineKind


def is_rematerialisable(node: Node, memo: dict[int, bool]) -> bool:
    """Loads, and cheap computes whose inputs are all rematerialisable.

    A compute is cheap unless its family streams weights (``Family.role``).
    """
    if node.id in memo:
        return memo[node.id]
    if node.kind == "load":
        ok = True
    elif node.kind == "compute" and get_family(node.family).rematerialisable:  # type: ignore[arg-type]
        ok = all(is_rematerialisable(i, memo) for i in node.inputs)
    else:
        ok = False
    memo[node.id] = ok
    return ok


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, x: int) -> int:
        p = self.parent.setdefault(x, x)
        while p != self.parent[p]:
            self.parent[p] = self.parent[self.parent[p]]
            p = self.parent[p]
        self.parent[x] = p
        return p

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


def clusters_of(graph: Graph, remat: dict[int, bool]) -> list[list[Node]]:
    """Groups of non-rematerialisable nodes that must share an SM, in program order."""
    uf = _UnionFind()
    anchored = [n for n in graph.nodes if not is_rematerialisable(n, remat)]
    for n in anchored:
        uf.find(n.id)
        for i in n.inputs:
            if not remat[i.id]:
                uf.union(i.id, n.id)
    groups: dict[int, list[Node]] = {}
    for n in anchored:
        groups.setdefault(uf.find(n.id), []).append(n)
    return sorted(groups.values(), key=lambda c: c[0].seq)


def place(graph: Graph, num_sms: int, stream_loads: bool = True) -> None:
    """Assign clusters to SMs, rematerialise shared cheap producers per SM and, with ``stream_loads``,
    move the loads that wait on nothing to the stream engine (see the module docstring)."""
    remat: dict[int, bool] = {}
    clusters = clusters_of(graph, remat)
    load = [(0.0, sm) for sm in range(num_sms)]
    heapq.heapify(load)
    costs: dict = {}
    times: dict[tuple, float] = {}  # node_time_us by the ids of the tile signatures (shared by a template's nodes)
    for cluster in clusters:
        busy, sm = heapq.heappop(load)
        total = 0
        for n in cluster:
            n.sm = sm
            key = (n.kind, n.family, id(n.tile), *[id(i.tile) for i in n.inputs])
            t = times.get(key)
            if t is None:
                t = times[key] = node_time_us(n, graph, costs)
            total += t
        heapq.heappush(load, (busy + total, sm))

    copier = _Copier(_sms_using(clusters, remat), max((n.id for n in graph.nodes), default=-1) + 1)
    copy_on, copies, clones_of = copier.copy_on, copier.copies, copier.clones_of

    placed: list[Node] = []
    for cluster in clusters:
        for n in cluster:
            n.inputs = [copy_on(i, n.sm) if remat[i.id] else i for i in n.inputs]
            placed.append(n)
    placed.extend(copies.values())
    _rewrite_groups(placed, remat, clones_of)
    placed.sort(key=_PLACED_ORDER)
    for i, n in enumerate(placed):
        n.id = i
    graph.nodes = placed
    graph.num_sms = num_sms
    if stream_loads:
        move_to_stream_engine(graph)


#: the order of the placed nodes: by SM, then program order
_PLACED_ORDER = operator.attrgetter("sm", "seq")


def move_to_stream_engine(graph: Graph) -> None:
    """Put the loads of the load engine that wait on nothing on the target's stream engine, if it has one."""
    if graph.target.engine(EngineKind.STREAM) is None:
        return
    load, stream = EngineKind.LOAD.value, EngineKind.STREAM.value  # the enum's attribute lookups, once
    for n in graph.nodes:
        if n.engine == load and waits_on_nothing(n):
            n.engine = stream


class _Copier:
    """The copies of rematerialised nodes, one per SM that reads them (a class, not a
    recursive closure: a closure that calls itself is a reference cycle, which would
    keep every node alive until the cyclic collector runs)."""

    def __init__(self, users: dict[int, set[int]], next_id: int) -> None:
        self.users = users
        self.next_id = next_id
        self.copies: dict[tuple[int, int], Node] = {}
        self.clones_of: dict[int, list[Node]] = {}

    def copy_on(self, node: Node, sm: int) -> Node:
        """The copy of ``node`` on ``sm`` (made, with copies of its inputs, on first use)."""
        copies = self.copies
        key = (node.id, sm)
        if key in copies:
            return copies[key]
        if len(self.users[node.id]) == 1:  # one SM needs it: place the node itself
            node.sm = sm
            copies[key] = node
            self.clones_of[node.id] = [node]
            node.inputs = [self.copy_on(i, sm) for i in node.inputs]
            return node
        if key not in copies:
            c = Node(
                id=self.next_id, kind=node.kind, engine=node.engine, seq=node.seq, name=node.name,
                loc=node.loc, tile=node.tile, buffer=node.buffer, row=node.row, col=node.col,
                family=node.family, params=node.params, deps=node.deps, flow=node.flow, sm=sm,
                dyn=node.dyn, dyn_axis=node.dyn_axis, dyn_range=node.dyn_range, guard=node.guard,
            )
            self.next_id += 1
            c.inputs = [self.copy_on(i, sm) for i in node.inputs]
            copies[key] = c
            self.clones_of.setdefault(node.id, []).append(c)
        return copies[key]


def _sms_using(clusters: list[list[Node]], remat: dict[int, bool]) -> dict[int, set[int]]:
    """For each rematerialisable node, the SMs whose clusters read its tile."""
    users: dict[int, set[int]] = {}
    for cluster in clusters:
        for n in cluster:
            for i in n.inputs:
                if remat[i.id]:
                    _mark(users, i, n.sm)
    return users


def _mark(users: dict[int, set[int]], node: Node, sm: int) -> None:
    """Record that ``sm`` reads ``node``'s tile, and so its inputs'."""
    sms = users.setdefault(node.id, set())
    if sm not in sms:
        sms.add(sm)
        for i in node.inputs:
            _mark(users, i, sm)


def _rewrite_groups(nodes: list[Node], remat: dict[int, bool], clones_of: dict[int, list[Node]]) -> None:
    """Dependency groups name every copy of a rematerialised producer."""
    intern = GroupInterner()
    rewritten: dict[int, tuple[Node, ...]] = {}
    for n in nodes:
        new = []
        for g in n.deps:
            if id(g) not in rewritten:
                members: list[Node] = []
                for p in g:
                    members.extend(clones_of.get(p.id, []) if remat.get(p.id) else [p])
                rewritten[id(g)] = intern(members)
            if rewritten[id(g)]:
                new.append(rewritten[id(g)])
        n.deps = new


@dataclass(frozen=True)
class PlacePass(ModulePass):
    """Assign micro-ops to SMs (see the module docstring).

    Options: ``num-sms`` (default: all SMs of the target), ``target`` (default:
    the program's), ``stream-loads`` (default true: loads that wait on nothing
    go to the stream engine).
    """

    name = "vdir-place"

    num_sms: int | None = None
    target: str = ""
    stream_loads: bool = True

    def __post_init__(self) -> None:
        if self.num_sms is not None:
            require_option_in_range(self.name, "num-sms", self.num_sms, MIN_SMS)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        def stage(graph: Graph) -> None:
            target = resolve_target(self.target, self.num_sms, graph.target)
            graph.target = target
            place(graph, target.num_sms, self.stream_loads)

        run_stage(op, "source", "placed", stage)
