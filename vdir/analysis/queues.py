"""Queue order of a scheduled graph, and the program-order invariant queues rely on.

Read by ``vdir-schedule`` (which fixes the order), ``vdir-layout-deps`` (vector
clocks over the queues), ``vdir-encode`` (one instruction stream per queue)
and ``vdir-verify-deps``.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Callable

from vdir.analysis.graph import Graph, Node
from vdir.diagnostics import PassFailure


def queues_of(graph: Graph) -> dict[tuple[int, str], list[Node]]:
    """(sm, engine) -> nodes in queue order (by ``pos`` once scheduled)."""
    queues: dict[tuple[int, str], list[Node]] = defaultdict(list)
    for n in graph.nodes:
        queues[(n.sm, n.engine)].append(n)
    for q in queues.values():
        positions = [n.pos for n in q]
        if min(positions) >= 0:  # every node scheduled (a list and min: faster than all() over a generator)
            # distinct positions (as vdir-schedule numbers them) order the queue by themselves
            q.sort(key=_POS if len(set(positions)) == len(positions) else SCHEDULED_QUEUE_ORDER)
        else:
            q.sort(key=lambda n: (n.pos, n.key) if n.pos >= 0 else (n.key, n.id))
    return queues


#: ``(pos, Node.key)`` flattened: the order of a scheduled queue (positions may repeat in a schedule
#: read from a file), without a Python key function
SCHEDULED_QUEUE_ORDER = operator.attrgetter("pos", "seq", "hoist")
#: the order of a scheduled queue whose positions are distinct
_POS = operator.attrgetter("pos")


#: one SM's share of the graph: its number, its nodes (in graph order) and its (engine, queue) pairs
SmShare = tuple[int, list[Node], list[tuple[str, list[Node]]]]


def sm_shares(graph: Graph) -> list[SmShare] | None:
    """Each SM's nodes and queues (in graph order), by SM; None if a node has no SM yet.

    The queues and tiles of an SM depend on no other SM's, so scheduling and
    allocation work on one share at a time.
    """
    nodes_of: dict[int, list[Node]] = defaultdict(list)
    queues: dict[tuple[int, str], list[Node]] = defaultdict(list)
    for n in graph.nodes:
        if n.sm < 0:
            return None
        nodes_of[n.sm].append(n)
        queues[(n.sm, n.engine)].append(n)
    return _shares(nodes_of, queues)


def scheduled_shares(graph: Graph) -> list[SmShare]:
    """Each SM's nodes (in graph order) and queues (in queue order: :func:`queues_of`), by SM.

    What :func:`~vdir.transforms.pipeline.schedule_and_allocate` hands on, for
    a graph scheduled elsewhere (a program read back from its text).
    """
    nodes_of: dict[int, list[Node]] = defaultdict(list)
    for n in graph.nodes:
        nodes_of[n.sm].append(n)
    return _shares(nodes_of, queues_of(graph))


def _shares(nodes_of: dict[int, list[Node]], queues: dict[tuple[int, str], list[Node]]) -> list[SmShare]:
    engines_of: dict[int, list[tuple[str, list[Node]]]] = defaultdict(list)
    for (sm, engine), queue in queues.items():
        engines_of[sm].append((engine, queue))
    return [(sm, nodes, engines_of[sm]) for sm, nodes in sorted(nodes_of.items())]


def queues_of_shares(shares: list[SmShare]) -> dict[tuple[int, str], list[Node]]:
    """(sm, engine) -> queue, from the SMs' shares (the queues as they are, not regrouped or sorted)."""
    return {(sm, engine): queue for sm, _nodes, sm_queues in shares for engine, queue in sm_queues}


#: a load of less than 1 / SMALL_LOAD_FRACTION of the largest it is weighed against (its queue's, its
#: SM's) is a small one: a vector or a norm's weights beside weight tiles
SMALL_LOAD_FRACTION = 8


def is_small_load(nbytes: int, largest: int, *, at_most: bool = False) -> bool:
    """Whether a load of ``nbytes`` is a small one beside a largest load of ``largest`` bytes: under
    ``1 / SMALL_LOAD_FRACTION`` of it (``vdir-schedule``: such loads are hoisted along, and the large
    ones lead), or with ``at_most`` up to that fraction (``vdir-place``: a gemv's x chunk is exactly
    an eighth of an 8-row tile of the same K chunk, and stays on an idle load engine)."""
    return nbytes * SMALL_LOAD_FRACTION <= largest if at_most else nbytes * SMALL_LOAD_FRACTION < largest


def waits_on_nothing(node: Node) -> bool:
    """Whether load ``node`` may run at any time: no dependency and no flow (a weight tile, a table).

    Such loads are what ``vdir-place`` moves to the stream engine and what
    ``vdir-schedule`` hoists ahead of cross-SM waits.
    """
    return node.kind == "load" and not node.deps and node.flow is None


def free_load_test(nodes: list[Node], trips_kept: bool) -> Callable[[Node], bool]:
    """:func:`waits_on_nothing`, but where the layer loop's trips are kept alike (``Graph.trips_kept``),
    false for a load of the loop whose template waits in some trip of ``nodes``.

    The first layer's loads of the program's input wait on nothing where the
    later layers' wait on the layer before: moved to the stream engine or
    hoisted, they would make the first trip's queues differ from the others,
    which keeps that trip out of the loop the encoder folds.
    """
    if not trips_kept:
        return waits_on_nothing
    waiting = {n.template for n in nodes if n.trip >= 0 and n.kind == "load" and not waits_on_nothing(n)}
    return lambda n: waits_on_nothing(n) and (n.trip < 0 or n.template not in waiting)


def waits_on_other_sms(node: Node) -> bool:
    """Whether ``node`` waits for a micro-op placed on another SM (a global counter)."""
    return any(p.sm != node.sm for group in node.deps for p in group)


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


#: the order vdir-schedule numbers a queue in: program order, hoisted loads moved up, then id
QUEUE_ORDER = operator.attrgetter("seq", "hoist", "id")


def check_scheduled_order(graph: Graph) -> None:
    """What the passes after vdir-schedule take for granted of a program read back from its text: every
    edge points forward in program order (no micro-op waits on itself or on a later one: a hand-edited
    ``after``) and the queue positions follow it (:func:`check_queue_positions_follow_program_order`)."""
    for n in graph.nodes:
        if any(p is n for g in n.deps for p in g):
            raise PassFailure(f"{n.name} waits on itself: a dependency cycle", loc=n.loc)
    check_dependencies_point_forward(graph)
    check_queue_positions_follow_program_order(graph)


def check_queue_positions_follow_program_order(graph: Graph) -> None:
    """Every scheduled queue, in ``pos`` order, follows :data:`QUEUE_ORDER`, as vdir-schedule numbers it.

    The dependency layout walks the micro-ops in that order and takes each
    one's queue predecessor as already walked; a hand-edited ``pos`` that
    moves a micro-op ahead of an earlier one (a consumer ahead of its
    producer, say) is refused here, at the micro-op, rather than failing
    inside the layout or laying out a protocol for another order.
    """
    for (sm, engine), queue in queues_of(graph).items():
        for before, after in zip(queue, queue[1:], strict=False):
            if before.pos >= 0 and QUEUE_ORDER(after) < QUEUE_ORDER(before):
                raise PassFailure(
                    f"{before.name} (pos = {before.pos}) comes before {after.name} (pos = {after.pos}, "
                    f"{after.loc}) in the {engine} queue of SM {sm}, but after it in program order",
                    loc=before.loc,
                )


def releasers(g: tuple[Node, ...]) -> list[Node]:
    """The producers of cross-SM group ``g`` that release its counter: of its stores, one per store queue.

    A store engine runs one store at a time and completes it (its bytes
    written, ``cp.async.bulk.wait_group 0``) before it begins the next, so
    the release of the last of a group's stores in one SM's store queue
    comes after every earlier one's writes, and its gpu-scope fence makes
    them visible with its own. The others need not release: a counter
    then counts one release per store queue, not per store. Producers that
    are not stores (a load that must finish reading before another SM
    overwrites) each release.
    """
    if len(g) == 1:
        return list(g)
    last: dict[tuple[int, str], Node] = {}
    out: list[Node] = []
    for p in g:
        if p.kind != "store":
            out.append(p)
            continue
        queue = (p.sm, p.engine)
        held = last.get(queue)
        if held is None or SCHEDULED_QUEUE_ORDER(held) < SCHEDULED_QUEUE_ORDER(p):
            last[queue] = p
    out.extend(last.values())
    return out
