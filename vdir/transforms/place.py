"""``vdir-place``: assign every micro-op to an SM.

Placement works on *clusters*: micro-ops joined by tile edges from a producer
that is expensive to repeat (a compute whose family streams weights, by its
``Family.role``: the gemv families; anything fed through one) must share an
SM, since a tile lives in one SM's shared memory. Cheap producers — loads
and the computes of other families fed only by such — are
*rematerialised*: each SM that consumes their tile gets its own copy (an
activation vector is loaded once per SM instead of travelling through global
memory). Clusters are assigned in program order to the least-loaded SM by the
cost model's time estimate (bytes moved and flops). Dependency groups naming a
rematerialised node are rewritten to name all of its copies.

"Least loaded" is counted per *phase* (option ``phase-balance``, on by
default), the program's total breaking ties. Counted over the whole program
instead (``phase-balance=false``), it balances the total but not each phase:
an SM that happens to be behind takes several tiles of the next phase (in
the 1B decode step, four SMs took four projection tiles each, and the K
path waited for them: 0.999 against 0.956 ms/token). A node's phase is the
number of hand-offs through global memory on the longest chain of
dependencies that reaches it (:func:`vdir.analysis.phases.phase_of_nodes`: a load that waits on a
store starts a new phase); the micro-ops of one phase can run together, and a
phase ends when its slowest SM does, so a second tile of a phase on one SM
puts that tile's whole time on the program's path.

Option ``keep-trips`` (off by default) places every trip of the program's
*layer loop* (``vdir.analysis.graph.layer_loop``: the top-level
``vdir.repeat`` of constant bounds that runs the most micro-ops, a model's
layers) as its first: a cluster of a later trip takes the SM its first-trip
counterpart took, so that each SM runs the same micro-ops in every trip, as
a loop kept through the passes needs (``docs/passes.md``, "Keeping the layer
loop"). It applies where the first trip has a cluster for every SM; a loop
whose trips are a gemv's tiles is left to the balance above. Off, trips
differ: the ties above go to the SM least loaded over the whole program, so
the SMs that took a phase's extra tile in one layer are spared it in the
next. That rotation is worth about 3% on the 1B decode step, whose 1024
weight tiles per layer give 132 SMs 7 or 8 each (``docs/performance.md``).

Placement also picks the load engine. A load that waits on nothing (no
dependency, no flow: a weight tile, a norm's weights, a table) goes to the
target's stream engine where it has one, and the loads that wait (an
activation row another SM stores, a tile behind a token) stay on the load
engine. Each engine runs its queue in order, so in one queue a weight tile
would wait behind an activation row that waits on other SMs, and the HBM
would idle at every cross-SM barrier; in two, the weight tiles stream up to
the shared memory their slots allow while the activation row is awaited.
On an SM none of whose loads wait (a gemv's), the load engine would sit
idle, so the small loads that wait on nothing stay there (a tile of at most
``1 / SMALL_LOAD_FRACTION`` of the SM's largest free load,
``vdir.analysis.queues``: the x vector, or its chunk beside an 8-row tile
of the same K chunk), issued beside the weight tiles rather than behind
them (measured: 1-6% faster on 12 of the 13 swept gemvs,
docs/performance.md).
Option ``stream-loads=false`` keeps every load where the program put it.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vdir.analysis.cost_model import node_time_us
from vdir.analysis.graph import Graph, GroupInterner, Node
from vdir.analysis.phases import phase_of_nodes
from vdir.analysis.queues import free_load_test, is_small_load, waits_on_nothing
from vdir.analysis.stages import require_option_choice, require_option_in_range, resolve_target, run_stage
from vdir.families import get_family
from vdir.target import MIN_SMS, EngineKind, TargetDescription

#: option ``side-loads``: which small loads that wait on nothing stay on the load engine. ``none``: none
#: (every one streams); ``idle``: those of an SM none of whose loads wait (its load engine has nothing
#: else to issue). (Also keeping those that come before every waiting load of their SM, an MLP's input
#: and norm rows, was measured and dropped: docs/performance.md, round 29.)
SIDE_LOADS = ("none", "idle")
#: measured: docs/performance.md, round 28
DEFAULT_SIDE_LOADS = "idle"


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


def rematerialisable_by_id(nodes: list[Node]) -> dict[int, bool]:
    """:func:`is_rematerialisable` of every node, by id, in one pass over ``nodes`` in program order
    (where a tile's producer comes before its consumers)."""
    cheap_family: dict[str, bool] = {}
    remat: dict[int, bool] = {}
    for n in nodes:
        kind = n.kind
        if kind == "load":
            ok = True
        elif kind == "compute":
            cheap = cheap_family.get(n.family)
            if cheap is None:
                cheap = cheap_family[n.family] = get_family(n.family).rematerialisable
            ok = cheap and all(remat[i.id] for i in n.inputs)
        else:
            ok = False
        remat[n.id] = ok
    return remat


def clusters_of(graph: Graph, remat: dict[int, bool]) -> list[list[Node]]:
    """Groups of non-rematerialisable nodes that must share an SM, in program order."""
    cluster_of: dict[int, list[Node]] = {}  # by node id: the cluster of a non-rematerialisable node
    clusters: list[list[Node]] = []
    for n in graph.nodes:
        if remat[n.id]:
            continue
        mine: list[Node] | None = None
        for i in n.inputs:
            theirs = cluster_of.get(i.id)  # None for a rematerialisable input
            if theirs is None or theirs is mine:
                continue
            mine = theirs if mine is None else _merged(cluster_of, mine, theirs)
        if mine is None:
            mine = []
            clusters.append(mine)
        mine.append(n)
        cluster_of[n.id] = mine
    return sorted([c for c in clusters if c], key=lambda c: c[0].seq)


def _merged(cluster_of: dict[int, list[Node]], a: list[Node], b: list[Node]) -> list[Node]:
    """The smaller cluster's nodes moved into the larger one, in program order; the smaller left empty."""
    if len(a) < len(b):
        a, b = b, a
    for n in b:
        cluster_of[n.id] = a
    a += b
    a.sort(key=_SEQ)
    b.clear()
    return a


def place(graph: Graph, num_sms: int, stream_loads: bool = True, phase_balance: bool = True,
          keep_trips: bool = False, side_loads: str = DEFAULT_SIDE_LOADS) -> None:
    """Assign clusters to SMs (balancing each phase with ``phase_balance``; every trip of the layer loop
    as its first with ``keep_trips``), rematerialise shared cheap producers per SM and, with
    ``stream_loads``, move the loads that wait on nothing to the stream engine, but the small ones
    ``side_loads`` keeps (see the module docstring)."""
    remat = rematerialisable_by_id(graph.nodes)
    clusters = clusters_of(graph, remat)
    phases = _cluster_phases(graph.nodes, clusters) if phase_balance else [0] * len(clusters)
    graph.trips_kept = keep_trips and graph.loop_trips > 0 and _fills_the_sms(clusters, num_sms)
    _assign_clusters(graph, clusters, phases, num_sms, graph.trips_kept)
    by_sm: list[list[Node]] = [[] for _ in range(num_sms)]
    copier = _Copier(_shared_producers(clusters, remat), max((n.id for n in graph.nodes), default=-1) + 1, by_sm)
    copy_on = copier.copy_on
    for cluster in clusters:
        for n in cluster:
            sm = n.sm  # an input already on it: one of the cluster or a copy made before
            n.inputs = [i if i.sm == sm else copy_on(i, sm) for i in n.inputs]
            by_sm[sm].append(n)
    unsorted = [*graph.nodes, *copier.copies.values()]  # every placed node (some unplaced), in memory order
    _rewrite_groups(unsorted, copier.clones_of)
    if stream_loads:
        move_to_stream_engine(unsorted, graph.target, free_load_test(unsorted, graph.trips_kept), side_loads)
    graph.nodes = _numbered(by_sm)
    graph.num_sms = num_sms


def _numbered(by_sm: list[list[Node]]) -> list[Node]:
    """The nodes of every SM, by SM then program order, with their ids renumbered in that order."""
    placed: list[Node] = []
    for queue in by_sm:
        queue.sort(key=_SEQ)
        for i, n in enumerate(queue, len(placed)):
            n.id = i
        placed += queue
    return placed


_SEQ = operator.attrgetter("seq")


def _cluster_phases(nodes: list[Node], clusters: list[list[Node]]) -> list[int]:
    """The phase of each cluster: its earliest node's (:func:`phase_of_nodes`)."""
    phase = phase_of_nodes(nodes)
    return [min(phase[n.id] for n in c) for c in clusters]


def _fills_the_sms(clusters: list[list[Node]], num_sms: int) -> bool:
    """Whether the first trip of the layer loop has a cluster for every SM (a model's layer, not the one
    tile of a gemv's row loop): only then are trips placed alike (``keep_trips``)."""
    return sum(1 for c in clusters if c[0].trip == 0) >= num_sms


def _assign_clusters(graph: Graph, clusters: list[list[Node]], phases: list[int], num_sms: int,
                     keep_trips: bool = False) -> None:
    """Give each cluster, in program order, the SM with the least cost-model time in the cluster's phase
    so far; ties go to the least over the whole program, as it stood when the SM last took a cluster
    of that phase (every phase 0, as with ``phase-balance=false``: the whole program alone).

    With ``keep_trips``, a cluster of a later trip of the layer loop
    (``Node.trip``) takes the SM of the first trip's cluster that starts with
    the same template: every trip is placed alike, so that each SM runs the
    same micro-ops in every trip (what a loop kept through the passes needs;
    each trip's phases are as balanced as the first trip's).
    """
    first_trip: dict[int, int] = {}  # template of a first-trip cluster's first node -> its SM
    totals = [0.0] * num_sms
    by_phase: dict[int, list[tuple[float, float, int]]] = {}  # per phase: a heap of (its time, total then, sm)
    costs: dict = {}
    times: dict[tuple, float] = {}  # node_time_us by the ids of the tile signatures (shared by a template's nodes)
    for cluster, phase in zip(clusters, phases, strict=True):
        head = cluster[0]
        if keep_trips and head.trip > 0 and head.template in first_trip:
            sm = first_trip[head.template]
            for n in cluster:
                n.sm = sm
            # counted in the SM's total, which clusters after the loop balance against
            totals[sm] += _cluster_time(cluster, graph, costs, times)
            continue
        heap = by_phase.get(phase)
        if heap is None:
            heap = by_phase[phase] = [(0.0, totals[sm], sm) for sm in range(num_sms)]
            heapq.heapify(heap)
        busy, _, sm = heapq.heappop(heap)
        if keep_trips and head.trip == 0:
            first_trip[head.template] = sm
        for n in cluster:
            n.sm = sm
        total = _cluster_time(cluster, graph, costs, times)
        totals[sm] += total
        heapq.heappush(heap, (busy + total, totals[sm], sm))


def _cluster_time(cluster: list[Node], graph: Graph, costs: dict, times: dict[tuple, float]) -> float:
    """The cost model's time of a cluster's nodes (``times``: :func:`node_time_us` by :func:`_time_key`,
    filled as it goes; ``costs``: the cost model's own cache)."""
    total = 0.0
    for n in cluster:
        key = _time_key(n)
        t = times.get(key)
        if t is None:
            t = times[key] = node_time_us(n, graph, costs)
        total += t
    return total


def _time_key(n: Node) -> tuple:
    """What :func:`node_time_us` of ``n`` depends on, by the ids of the tile signatures (which a
    template's nodes share): a load's or store's tile; a compute's family and tiles."""
    if n.kind == "compute":
        return (n.family, id(n.tile), *[id(i.tile) for i in n.inputs])
    return (n.kind, id(n.tile))


def move_to_stream_engine(nodes: list[Node], target: TargetDescription,
                          is_free: Callable[[Node], bool] = waits_on_nothing,
                          side_loads: str = DEFAULT_SIDE_LOADS) -> None:
    """Put the loads of the load engine that wait on nothing (``is_free``: :func:`free_load_test`) on the
    target's stream engine, if it has one, except the small ones (at most ``1 / SMALL_LOAD_FRACTION``
    of the SM's largest: a gemv's x chunk is exactly that beside an 8-row tile) that ``side_loads``
    keeps (:data:`SIDE_LOADS`)."""
    if target.engine(EngineKind.STREAM) is None:
        return
    load, stream = EngineKind.LOAD.value, EngineKind.STREAM.value  # the enum's attribute lookups, once
    free: list[Node] = []
    waits: set[int] = set()  # the SMs with a load that waits
    largest: dict[int, int] = {}  # per SM: the bytes of its largest free load
    for n in nodes:
        if n.engine != load:
            continue
        if is_free(n):
            free.append(n)
            largest[n.sm] = max(largest.get(n.sm, 0), _tile_bytes(n))
        else:
            waits.add(n.sm)

    def stays(n: Node) -> bool:
        return (side_loads == "idle" and n.sm >= 0 and n.sm not in waits
                and is_small_load(_tile_bytes(n), largest[n.sm], at_most=True))

    for n in free:
        if not stays(n):
            n.engine = stream


def _tile_bytes(n: Node) -> int:
    """The bytes of the tile load ``n`` produces."""
    assert n.tile is not None, n
    return n.tile.nbytes


class _Copier:
    """The copies of rematerialised nodes, one per SM that reads them (a class, not a
    recursive closure: a closure that calls itself is a reference cycle, which would
    keep every node alive until the cyclic collector runs).

    A node that one SM reads is placed itself, on that SM (the rematerialisable
    nodes are unplaced, ``sm`` -1, before); one that several read is copied to
    each. Each node placed or made is added to its SM's list in ``by_sm``.
    """

    def __init__(self, shared: set[int], next_id: int, by_sm: list[list[Node]]) -> None:
        self.shared = shared
        self.next_id = next_id
        self.by_sm = by_sm
        self.copies: dict[tuple[int, int], Node] = {}
        #: the copies of each node that several SMs read
        self.clones_of: dict[int, list[Node]] = {}

    def copy_on(self, node: Node, sm: int) -> Node:
        """The copy of ``node`` on ``sm`` (made, with copies of its inputs, on first use)."""
        if node.sm == sm:  # placed there already, as its only user SM's copy
            return node
        if node.id not in self.shared:
            node.sm = sm
            self.by_sm[sm].append(node)
            if node.inputs:
                node.inputs = [self.copy_on(i, sm) for i in node.inputs]
            return node
        key = (node.id, sm)
        c = self.copies.get(key)
        if c is None:
            c = Node(
                id=self.next_id, kind=node.kind, engine=node.engine, seq=node.seq, name=node.name,
                loc=node.loc, tile=node.tile, buffer=node.buffer, row=node.row, col=node.col,
                family=node.family, params=node.params, deps=list(node.deps), flow=node.flow, sm=sm,
                dyn=node.dyn, dyn_axis=node.dyn_axis, dyn_range=node.dyn_range, guard=node.guard,
                trip=node.trip, template=node.template,
            )
            self.next_id += 1
            c.inputs = [self.copy_on(i, sm) for i in node.inputs]
            self.copies[key] = c
            self.by_sm[sm].append(c)
            self.clones_of.setdefault(node.id, []).append(c)
        return c


def _shared_producers(clusters: list[list[Node]], remat: dict[int, bool]) -> set[int]:
    """The ids of the rematerialisable nodes whose tile the clusters of more than one SM read."""
    first_reader: dict[int, int] = {}
    shared: set[int] = set()
    for cluster in clusters:
        for n in cluster:
            for i in n.inputs:
                if remat[i.id]:
                    _mark(first_reader, shared, i, n.sm)
    return shared


def _mark(first_reader: dict[int, int], shared: set[int], node: Node, sm: int) -> None:
    """Record that ``sm`` reads ``node``'s tile, and so its inputs'.

    Each input of a node has the node's first reader SM too, or is shared
    already; so the inputs of a shared node are shared.
    """
    first = first_reader.get(node.id)
    if first is None:
        first_reader[node.id] = sm
    elif first == sm or node.id in shared:
        return
    else:
        shared.add(node.id)
    for i in node.inputs:
        _mark(first_reader, shared, i, sm)


def _rewrite_groups(nodes: list[Node], clones_of: dict[int, list[Node]]) -> None:
    """Dependency groups name every copy of a rematerialised producer (each node's own ``deps`` list).

    A producer placed itself (``sm`` set) stays; one never placed (no SM
    reads it) is dropped.
    """
    intern = GroupInterner()
    rewritten: dict[int, tuple[Node, ...]] = {}
    for n in nodes:
        if not n.deps:
            continue
        new = []
        for g in n.deps:
            if id(g) not in rewritten:
                members: list[Node] = []
                for p in g:
                    copies = clones_of.get(p.id)
                    if copies is not None:
                        members += copies
                    elif p.sm >= 0:
                        members.append(p)
                rewritten[id(g)] = intern(members)
            if rewritten[id(g)]:
                new.append(rewritten[id(g)])
        n.deps = new


@dataclass(frozen=True)
class PlacePass(ModulePass):
    """Assign micro-ops to SMs (see the module docstring).

    Options: ``num-sms`` (default: all SMs of the target), ``target`` (default:
    the program's), ``stream-loads`` (default true: loads that wait on nothing
    go to the stream engine), ``phase-balance`` (default true: balance each
    phase's time over the SMs; false: the program's total only),
    ``keep-trips`` (default false: every trip of the layer loop placed as its
    first), ``side-loads`` (default ``idle``: :data:`SIDE_LOADS`, which small
    loads that wait on nothing stay on the load engine).
    """

    name = "vdir-place"

    num_sms: int | None = None
    target: str = ""
    stream_loads: bool = True
    phase_balance: bool = True
    keep_trips: bool = False
    side_loads: str = DEFAULT_SIDE_LOADS

    def __post_init__(self) -> None:
        if self.num_sms is not None:
            require_option_in_range(self.name, "num-sms", self.num_sms, MIN_SMS)
        require_option_choice(self.name, "side-loads", self.side_loads, SIDE_LOADS)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        def stage(graph: Graph) -> None:
            target = resolve_target(self.target, self.num_sms, graph.target)
            graph.target = target
            place(graph, target.num_sms, self.stream_loads, self.phase_balance, self.keep_trips, self.side_loads)

        run_stage(op, "source", "placed", stage)
