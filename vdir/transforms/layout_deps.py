"""``vdir-layout-deps``: dependency edges -> bits and global counters.

**Between SMs.** A dependency group with a producer on another SM than its
consumer becomes a global counter: every producer of the group adds one when
it completes (release), the consumer waits until the counter reaches the
group's size times the launch epoch (acquire). Counters are never reset; the
epoch (1, 2, ... per launch) makes each launch wait for its own releases.

**Flag words.** A load marked ``flag_words`` (``vdir-flag-words``) gets its
groups of stores into the bytes it reads through the flag words those stores
also write (``vdir.analysis.flag_words.carried_by_flag_words``): such a group
becomes neither a counter nor bits, and gives the load no knowledge of its
producers (the words are relaxed: they carry the bytes and nothing else;
every other group of the load is laid out as usual).

**Within an SM.** Edges become bits of the SM's dependency bitmap. A producer
toggles its bit when it completes; a waiter waits until the bit holds the
parity that toggle leaves. The pass first drops edges already implied by
queue order and other waits, using vector clocks over the schedule: for every
micro-op it knows, per engine of the target, the last queue position whose
completion is guaranteed before the micro-op starts (an engine runs one
micro-op at a time, except that a pipelined one, the load engine, issues
ahead but completes in order).

A bit is reused by a later producer ``P2`` only when both hold:

1. every waiter of the bit's previous producer ``P1`` has finished before
   ``P2`` starts, so nobody still needs the old state when ``P2`` toggles;
2. every waiter of ``P2`` knows ``P1`` finished before it starts waiting, so
   it cannot mistake the state before ``P1``'s toggle (same parity as after
   ``P2``'s) for ``P2``'s signal.

Both are checked on the vector clocks, so reuse is safe by construction; the
property tests and the simulator's race detector check it again. The first
bit that satisfies both is taken, except on a graph whose layer loop's
trips are placed alike (``Graph.trips_kept``, ``vdir-place``'s
``keep-trips``): there a producer first tries the bits its template took in
the trips before (:class:`_TripBits`), so that the bits repeat from layer to
layer and the encoder can write the layers as one loop; the first trip
waits, and the last trip signals and releases, as the others do.

Memory-model note on those added synchronisations: a first-trip wait on a
bit that nothing has toggled yet, with parity 0, is met at once; it is only
added where every toggle of the bit starts after the waiter finished (the
toggler's start clock covers the waiter), so no toggle can race it and it
orders nothing. A last-trip toggle that nothing awaits is recorded in the
bit's state like any other, so a later producer reuses the bit only under
the two conditions above; a counter released that nothing waits on is
never read.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vdir.analysis.flag_words import CarriedMemo, carried_by_flag_words
from vdir.analysis.graph import SCHEDULE_ORDER, Graph, Node, counterparts
from vdir.analysis.queues import SmShare, releasers, scheduled_shares
from vdir.analysis.stages import run_stage
from vdir.diagnostics import PassFailure
from vdir.target import TargetDescription

VClock = list[int]


def assign_counters(graph: Graph, waiting: dict[int, Node] | None = None) -> None:
    """Give every group with a producer on another SM than a consumer a counter, in graph order.

    ``waiting``: the nodes that wait on another SM's producers, by ``id()``,
    where the caller knows them (:func:`vector_clocks` collects them): the
    other nodes are then not read.
    """
    counter_of: dict[int, int] = {}
    counts: dict[int, int] = {}
    cache: dict[int, int] = {}
    carried: CarriedMemo = {}
    nodes = graph.nodes if waiting is None else _in_graph_order(graph.nodes, waiting)
    for n in nodes:
        sm = n.sm
        flagged = n.flag_words
        for g in n.deps:
            if g[0].sm == sm if len(g) == 1 else group_is_local(g, sm, cache):  # the usual group, inlined
                continue
            if flagged and carried_by_flag_words(n, g, carried):
                continue
            if id(g) not in counter_of:
                cid = len(counter_of)
                counter_of[id(g)] = cid
                releasing = releasers(g)
                counts[cid] = len(releasing)
                for p in releasing:
                    p.release_counters = [*p.release_counters, cid]
            cid = counter_of[id(g)]
            n.wait_counters = [*n.wait_counters, (cid, counts[cid])]
    if graph.trips_kept:
        _release_alike(graph, counts)
    graph.num_counters = len(counts)
    graph.counter_counts = counts


def _in_graph_order(nodes: list[Node], some: dict[int, Node]) -> list[Node]:
    """The nodes of ``some`` (by ``id()``) in the order of ``nodes``.

    A placed graph numbers its nodes in graph order (``Node.id`` is the
    index), so they are sorted by id where every one is at its index;
    otherwise ``nodes`` is filtered.
    """
    picked = sorted(some.values(), key=_NODE_ID)
    count = len(nodes)
    if all(0 <= n.id < count and nodes[n.id] is n for n in picked):
        return picked
    return [n for n in nodes if id(n) in some]


_NODE_ID = operator.attrgetter("id")


def _release_alike(graph: Graph, counts: dict[int, int]) -> None:
    """The last trip of the layer loop releases counters as the trips before it do, though nothing
    waits on them (nothing follows the loop): a micro-op whose counterpart of the trip before
    releases counter ``c`` releases a new counter made for ``c``, numbered after all others in the
    order of ``c``, so that its counters step from trip to trip as the loop's do."""
    last = graph.loop_trips - 1
    before = counterparts(graph.nodes, last - 1)
    made: dict[int, list[Node]] = {}
    for n in graph.nodes:
        m = before.get((n.sm, n.template)) if n.trip == last and not n.release_counters else None
        if m is not None and m.release_counters:
            made.setdefault(m.release_counters[0], []).append(n)
    for c in sorted(made):
        cid = len(counts)
        counts[cid] = len(made[c])
        for n in made[c]:
            n.release_counters = [cid]


def group_is_local(g: tuple[Node, ...], sm: int, cache: dict[int, int]) -> bool:
    """Whether every producer of group ``g`` runs on ``sm``.

    ``cache`` maps a group to the one SM all its producers share, or -1.
    """
    if len(g) == 1:
        return g[0].sm == sm
    only = cache.get(id(g))
    if only is None:
        first = g[0].sm
        only = cache[id(g)] = first if all(p.sm == first for p in g) else -1
    return only == sm


@dataclass
class _Clocks:
    """What the bit assignment reads of the vector clocks of one SM (see :func:`vector_clocks`).

    ``pre`` and ``start`` by node id; ``waiters`` by producer id: the nodes
    that must wait on it (its edges that queue order and other waits do not
    already imply); ``order``: the SM's nodes in schedule order.
    """

    pre: dict[int, VClock]
    start: dict[int, VClock]
    waiters: dict[int, list[Node]]
    order: list[Node]


def _join(a: VClock, b: VClock) -> VClock:
    """The entry-wise maximum of two clocks of equal length."""
    return [x if x >= y else y for x, y in zip(a, b, strict=False)]


def _join4(a: VClock, b: VClock) -> VClock:
    """:func:`_join` for four engines (Hopper's), unrolled: four times faster than the comprehension."""
    a0, a1, a2, a3 = a
    b0, b1, b2, b3 = b
    return [a0 if a0 >= b0 else b0, a1 if a1 >= b1 else b1, a2 if a2 >= b2 else b2, a3 if a3 >= b3 else b3]


def _meet(clocks: list[VClock]) -> VClock:
    """The entry-wise minimum of clocks of equal length (what all of them know)."""
    return [min(column) for column in zip(*clocks, strict=True)]


def _meet4(clocks: list[VClock]) -> VClock:
    """:func:`_meet` for four engines (Hopper's), unrolled (as :func:`_join4`): four times faster."""
    m0, m1, m2, m3 = clocks[0]
    for c0, c1, c2, c3 in clocks[1:]:
        if c0 < m0:
            m0 = c0
        if c1 < m1:
            m1 = c1
        if c2 < m2:
            m2 = c2
        if c3 < m3:
            m3 = c3
    return [m0, m1, m2, m3]


def vector_clocks(
    nodes: list[Node], cache: dict[int, int], target: TargetDescription,
    waiting: dict[int, Node] | None = None,
) -> _Clocks:
    """Per node: knowledge before waiting and at start; and, per producer, the nodes that must wait on it.

    A clock has one entry per engine of ``target`` (its queue index); a
    pipelined engine's micro-op may start before its predecessor completed.
    Clocks are never changed once made, so a node's clock may be its queue
    predecessor's own list. The schedule order lists each queue in queue
    order (a node's queue predecessor is the last node of its engine before
    it), so the clocks of the queues' last nodes are kept per engine.
    ``waiting``, where given, receives the nodes
    that wait on another SM's producers, by ``id()`` (for :func:`assign_counters`).
    """
    if waiting is None:
        waiting = {}
    order = sorted(nodes, key=SCHEDULE_ORDER)
    pre_of: dict[int, VClock] = {}
    start_of: dict[int, VClock] = {}
    end_of: dict[int, VClock] = {}
    waiters: dict[int, list[Node]] = {}
    join = _join4 if target.num_engines == 4 else _join
    empty = [-1] * target.num_engines
    index = {name: i for i, name in enumerate(target.engine_names)}
    pipelined_at = [engine.pipelined for engine in target.engines]  # by engine index
    # by engine index: the start and end clocks of its queue's last node so far (None before the first)
    last_start: list[VClock] = [empty] * target.num_engines
    last_end: list[VClock | None] = [None] * target.num_engines
    for n in order:
        nid = n.id
        e = index[n.engine]
        pipelined = pipelined_at[e]
        before = last_end[e]
        pre = empty if before is None else last_start[e] if pipelined else before
        needed = _unknown_producers(n, pre, index, cache, waiting)
        start = pre
        if needed:
            if len(needed) > 1:
                needed = _drop_implied(needed, end_of, index)
            for d in needed:
                did = d.id
                start = join(start, end_of[did])
                ws = waiters.get(did)
                if ws is None:
                    waiters[did] = [n]
                else:
                    ws.append(n)
        if pipelined and before is not None:  # completes after its predecessor too
            # with nothing joined, the start is the predecessor's start, which its end covers
            end = join(start, before) if needed else before[:]
            pos = n.pos
            end[e] = pos if pos >= before[e] else before[e]
        else:
            end = start[:]
            end[e] = n.pos
        pre_of[nid], start_of[nid], end_of[nid] = pre, start, end
        last_start[e], last_end[e] = start, end
    return _Clocks(pre_of, start_of, waiters, order)


def _unknown_producers(n: Node, pre: VClock, index: dict[str, int], cache: dict[int, int],
                       waiting: dict[int, Node]) -> list[Node]:
    """``n``'s producers on its own SM (its inputs, and its groups on its SM that flag words do not carry)
    that ``pre`` does not know finished, maybe repeated; ``n`` goes into ``waiting`` if it waits on
    another SM's."""
    sm = n.sm
    inputs = n.inputs
    needed = [d for d in inputs if pre[index[d.engine]] < d.pos] if inputs else []
    flagged = n.flag_words
    for g in n.deps:
        if flagged and carried_by_flag_words(n, g):
            continue  # the load polls the group's flag words: no bit, no counter
        if len(g) == 1:  # group_is_local, inlined for the usual one-producer group
            d = g[0]
            if d.sm != sm:
                waiting[id(n)] = n
            elif pre[index[d.engine]] < d.pos:
                needed.append(d)
        elif group_is_local(g, sm, cache):
            needed += [d for d in g if pre[index[d.engine]] < d.pos]
        else:
            waiting[id(n)] = n
    return needed


def _drop_implied(needed: list[Node], end_of: dict[int, VClock], index: dict[str, int]) -> list[Node]:
    """``needed`` without repeats and without those another one's completion implies (in order)."""
    needed = list({d.id: d for d in needed}.values())
    if len(needed) == 1:
        return needed
    ends = [end_of[o.id] for o in needed]
    kept = []
    for d in needed:
        e, pos = index[d.engine], d.pos
        for o, end in zip(needed, ends, strict=True):
            if end[e] >= pos and o is not d:
                break
        else:
            kept.append(d)
    return kept


def assign_bits(graph: Graph, sm: int, clocks: _Clocks) -> None:
    """Give each producer with waiters a bit, reusing bits only when provably safe.

    For each bit the pass keeps what a reuse must know: per engine, the last
    queue position among the previous toggle's waiters (condition 1), and the
    engine and position of the previous producer (condition 2), as one flat
    tuple (:data:`_BitState`). The first bit satisfying both is taken, so
    small programs use the low bits.

    Where the layer loop's trips are kept alike (``Graph.trips_kept``), the SM
    is first laid out so that each producer of the loop keeps its template's
    bits (:class:`_TripBits`); should that run out of bits (an SM with many
    producers a trip), it is laid out again without.
    """
    if graph.trips_kept:
        if _lay_out_bits(graph, clocks, _TripBits(graph.target.dependency_bits)) is None:
            return
        for n in clocks.order:
            n.wait_bits.clear()
            n.signal_bits.clear()
    stuck = _lay_out_bits(graph, clocks, None)
    if stuck is not None:
        raise PassFailure(
            f"SM {sm}: more than {graph.target.dependency_bits} dependency bits would be live at {stuck.name}; "
            "the schedule has too many unresolved edges in flight",
            loc=stuck.loc,
        )


class _TripBits:
    """Which bits the layer loop's producers keep from trip to trip (:func:`assign_bits`).

    A producer first tries the bit its template took in the trip before, then
    the one of the trip before that (a bit still awaited from the trip before,
    its waiters running alongside, makes the two alternate: a bit pair, which
    the loop record's pairs fold, ``isa.Loop.expand``, where the two are bits
    2k and 2k + 1: so the second trip first tries the first trip's bit's
    partner). Failing those, it takes the
    lowest bit that no other template holds in reserve, a never-used one
    included: so one template's bits are not taken by another in between and
    the pattern repeats from the first trips on.
    """

    def __init__(self, width: int):
        self.last: dict[int, tuple[int, ...]] = {}  # template -> its bits in its last two trips, the last first
        self.reserved: list[int | None] = [None] * width  # bit -> the template holding it
        self.producer_of: dict[tuple[int, int], Node] = {}  # (waiter id, bit) -> the producer it awaits

    def choose(self, p: Node, state: list[_BitState | None], start: VClock, known_by_all: VClock) -> int | None:
        """``p``'s bit by the rules of the class, or None (then the lowest reusable one)."""
        kept = self.last.get(p.template, ())
        for bit in kept:
            if _may_reuse(state[bit], start, known_by_all):
                return bit
        # then the pair's other bit (pairs are bits 2k and 2k + 1, ``isa.Loop.expand``), then the lowest
        candidates = [kept[0] ^ 1] if len(kept) == 1 else []
        for bit in [*candidates, *range(len(state))]:
            if self.reserved[bit] in (None, p.template) and _may_reuse(state[bit], start, known_by_all):
                return bit
        return None

    def took(self, p: Node, bit: int, waiters: list[Node]) -> None:
        """``p`` took ``bit`` for ``waiters``: its template holds it, and gives up its bit of three trips ago."""
        kept = self.last.get(p.template, ())
        if len(kept) == 2 and kept[1] != bit and self.reserved[kept[1]] == p.template:
            self.reserved[kept[1]] = None
        self.last[p.template] = (bit, *kept[:1])
        self.reserved[bit] = p.template
        for w in waiters:
            self.producer_of[w.id, bit] = p

    def signal_alike(self, p: Node, state: list[_BitState | None], toggles: list[int], start: VClock,
                     index: dict[str, int], unseen: list[int], togglers: list[list[Node]]) -> None:
        """``p``, which nothing waits on (the last trip's producers: nothing follows them), toggles the bit
        its template took in the trip before, as the other trips do, where that bit may be reused: a toggle
        no one awaits, recorded like any other (the reuse conditions of a later producer see it)."""
        for bit in self.last.get(p.template, ())[:1]:
            if _may_reuse(state[bit], start, [_KNOWN_BY_NONE] * len(start)):
                toggles[bit] += 1
                state[bit] = (*unseen, index[p.engine], p.pos)
                p.signal_bits.append(bit)
                togglers[bit].append(p)

    def wait_alike(self, clocks: _Clocks, index: dict[str, int], togglers: list[list[Node]]) -> None:
        """A first-trip micro-op waits, as its second-trip counterpart does, on the bits that the trip
        before toggled, with parity 0: where every toggle of the bit (``togglers``: every producer of the
        SM that toggles it, in the loop or not) comes after the micro-op (its start clock says so), the
        bit still holds 0 then, so the wait is met at once and orders nothing. The bits a pair uses in
        turn are left out (the first trip's would be the pair's other bit)."""
        second = counterparts(clocks.order, 1)
        for n in clocks.order:
            n1 = second.get((n.sm, n.template)) if n.trip == 0 else None
            if n1 is None:
                continue
            e = index[n.engine]
            for bit in n1.wait_bits:
                p = self.producer_of.get((n1.id, bit))
                if (p is not None and p.trip == 0 and bit not in n.wait_bits and set(self.last[p.template]) == {bit}
                        and all(clocks.start[q.id][e] >= n.pos for q in togglers[bit])):
                    n.wait_bits[bit] = 0


def _lay_out_bits(graph: Graph, clocks: _Clocks, trips: _TripBits | None) -> Node | None:
    """:func:`assign_bits` for one SM (``trips``: the layer loop's rules, or None): the producer
    left without a bit, or None when every producer has one."""
    waiters, pre_of, start_of = clocks.waiters, clocks.pre, clocks.start
    width = graph.target.dependency_bits
    num_engines = graph.target.num_engines
    index = {name: i for i, name in enumerate(graph.target.engine_names)}
    state: list[_BitState | None] = [None] * width
    toggles = [0] * width
    togglers: list[list[Node]] = [[] for _ in range(width)]  # bit -> the producers that toggle it, in order
    first_reusable_bit = _first_reusable_bit4 if num_engines == 4 else _first_reusable_bit
    meet = _meet4 if num_engines == 4 else _meet
    unseen = [-1] * num_engines
    for p in clocks.order:
        ws = waiters.get(p.id)
        if ws is None:
            if trips is not None and p.trip >= 0:
                trips.signal_alike(p, state, toggles, start_of[p.id], index, unseen, togglers)
            continue
        known_by_all = pre_of[ws[0].id] if len(ws) == 1 else meet([pre_of[w.id] for w in ws])
        loop_trips = trips if trips is not None and p.trip >= 0 else None
        bit = loop_trips.choose(p, state, start_of[p.id], known_by_all) if loop_trips else None
        if bit is None:
            bit = first_reusable_bit(state, start_of[p.id], known_by_all)
        if bit is None:
            return p
        toggles[bit] += 1
        parity = toggles[bit] % 2
        last = unseen[:]
        for w in ws:
            e = index[w.engine]
            if w.pos > last[e]:
                last[e] = w.pos
            w.wait_bits[bit] = parity
        state[bit] = (*last, index[p.engine], p.pos)
        p.signal_bits.append(bit)
        togglers[bit].append(p)
        if loop_trips:
            loop_trips.took(p, bit, ws)
    if trips is not None:
        trips.wait_alike(clocks, index, togglers)
    return None


#: an entry of the ``known_by_all`` of a producer that nothing waits on: condition 2 of
#: :func:`_may_reuse` holds whatever the previous producer's position
_KNOWN_BY_NONE = 1 << 62

#: what a bit's reuse must know (:func:`assign_bits`): the last queue position among the waiters
#: of its previous toggle, one per engine, then the previous producer's engine and position
_BitState = tuple[int, ...]


def _may_reuse(st: _BitState | None, start: VClock, known_by_all: VClock) -> bool:
    """Whether a bit in state ``st`` (None: never used) satisfies both reuse conditions of the module docstring.

    1. every waiter of the bit's previous toggle finished before this
       producer starts: ``start`` covers their positions;
    2. every new waiter knows the previous producer finished before it waits.
    """
    # condition 2, then 1: ``start`` has reached every engine's last waiter (one entry per engine)
    return st is None or (known_by_all[st[-2]] >= st[-1] and all(map(operator.ge, start, st[:-2])))


def _first_reusable_bit(state: list[_BitState | None], start: VClock, known_by_all: VClock) -> int | None:
    """The lowest bit that :func:`_may_reuse`."""
    for bit, st in enumerate(state):
        if _may_reuse(st, start, known_by_all):
            return bit
    return None


def _first_reusable_bit4(state: list[_BitState | None], start: VClock, known_by_all: VClock) -> int | None:
    """:func:`_first_reusable_bit` for four engines (Hopper's), condition 1 unrolled (as :func:`_join4`)."""
    s0, s1, s2, s3 = start
    for bit, st in enumerate(state):
        if st is None:
            return bit
        w0, w1, w2, w3, e1, pos1 = st
        # the compute engine's entry (index 1) refuses most often: it is checked first
        if s1 >= w1 and s0 >= w0 and s2 >= w2 and s3 >= w3 and known_by_all[e1] >= pos1:
            return bit
    return None


def layout_dependencies(graph: Graph, shares: list[SmShare] | None = None) -> None:
    """Per SM vector clocks and bits, then counters for cross-SM groups.

    ``shares``: each SM's nodes (in graph order) and queues (in queue order),
    where the caller has them already (as
    :func:`~vdir.transforms.pipeline.schedule_and_allocate` returns them).
    The vector clocks read every dependency group: they collect the nodes
    that wait on other SMs, the only ones the counters then read.
    """
    if shares is None:
        shares = scheduled_shares(graph)
    cache: dict[int, int] = {}
    waiting: dict[int, Node] = {}
    for sm, nodes, _queues in shares:
        assign_bits(graph, sm, vector_clocks(nodes, cache, graph.target, waiting))
    assign_counters(graph, waiting)


@dataclass(frozen=True)
class LayoutDepsPass(ModulePass):
    """Lay dependency edges out as bitmap bits and global counters (see the module docstring)."""

    name = "vdir-layout-deps"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_stage(op, "allocated", "laid-out", layout_dependencies)
