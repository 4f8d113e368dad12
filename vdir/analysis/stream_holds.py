"""Stream holds: a weight tile that waits for a hand-off's store on its SM, so that the store's release
finds no tile in flight.

A store whose row other SMs wait on ends with a counter release,
``red.release.gpu``: in SASS a ``MEMBAR.GPU`` that does not complete before
the SM's bulk copies in flight land, though the store warp issued none of
them (docs/performance.md, round 8: such a store took 0.64 µs on an SM whose
stream engine had nothing in flight, 2.2 µs where a load began during it).
The common case is the stream engine's own doing: the compute before the
store frees its weight tile's slot, the stream engine issues the next tile
into it at once, and the release then waits for that tile's 64 KiB. On the
1B decode step's chain the q rows' and the residual row's stores took 2.5 µs
each (round 33).

A *hold* makes that next tile (the stream load that reuses the slot of the
compute's weight tile, and so already waits for the compute) wait for the
store as well (an ordering edge, which ``vdir-layout-deps`` turns into a
dependency bit on the SM): the store then releases with nothing of its own
slot in flight, and the tile issues as the store ends, a store's time after
it would have. The stream engine issues in order, so every tile after the
held one waits as well. It is placed only where the tile's readers come
``phases`` phases or more after the store (:mod:`vdir.analysis.phases`):
they wait for a hand-off after it anyway. Within a phase, as between the
MLP's activation stores and the next gate tiles, the stream is what the SM
waits for, and holding it would cost its time: round 8 measured a stream
engine that paused during every releasing store 1% slower on the step.
One phase later can cost as well: the down projection's first tile, held
by an SM's last activation store, starts the down phase's stream late on
that SM (the simulator's clock: the 1B step 5.6% slower with ``phases`` 1,
where it charges the holds' cost but not the releases they shorten). The
stream loads before the held one (into the SM's other slots) are not
held: they keep running ahead of the chain, as far as shared memory
allows.

Which pairs (:func:`plan_stream_holds`, on an allocated program: the slot
reuse edges are ``vdir-alloc-smem``'s): on each SM, a store that releases a
counter (one per store queue and group, :func:`~vdir.analysis.queues.releasers`:
the stores before it in its queue release nothing); the first stream load
after the store in program order that waits for a compute its row is made
from and that read a stream tile (the gemv of an output projection, not
only the residual add after it); that load's readers all at least
``phases`` phases after the store. The edge keeps program order (the store
comes first), the order every queue follows, so no wait can deadlock.

**Release first.** A store toggles its bits, then releases its counter
(``vdir.lowering.kernel.sync.signal``): a held tile sees the bits and
issues while the release's fence still waits, and the fence may wait for it
too. With ``vdir-encode{release-first=true}`` (``vdir-pipeline{release-first=true}``;
by default the target's: with the holds it pays on an H100, rounds 36 and 55, and loses on
the H200, round 37) a store that releases a counter and whose bits a stream
load on its SM waits on, other than a load of the bytes it wrote, releases first and toggles its bits after
(:func:`stores_releasing_first`; the encoder marks it
``isa.TRANSFER_RELEASE_FIRST``, and where the store releases several
counters, the extra releases' ``nop`` records after it as well, the last of
them toggling the bits): the tile then issues once the fences are done.
Both are releases of the same writes, and the store still completes before
the engine reads its next instruction, so the order is only a matter of
time. Besides the holds, a small stream tile (a residual slice, an
attention mask or bias) that reuses the slot a releasing store read waits
so: 8 stores of the whole-GPU MLP block, 49 of the 1B decode step's 18,641
releasing stores. A hold whose wait ``vdir-layout-deps`` finds implied (the
stream engine waits for something later before it anyway) marks nothing:
with ``phases`` 2, most of the 1B step's.

Whether the holds pay is for the GPU to say; ``vdir-pipeline{hold-streams=N}``
(``phases`` N; 0: none; by default the target's, ``TargetDescription.stream_holds``: one phase on the
H100, none on the H200) and the pass ``vdir-hold-streams{phases=N}`` place them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from vdir.analysis.graph import Graph, GroupInterner, Node
from vdir.analysis.phases import phase_of_nodes
from vdir.analysis.queues import releasers
from vdir.target import EngineKind


@dataclass(frozen=True)
class HoldFacts:
    """What the plan needs from the whole program (:func:`hold_facts`): which stores release a counter,
    and each node's phase."""

    releasing: frozenset[int]
    phase: list[int]
    #: how many phases after the store a held tile's readers come, at least
    phases: int = 1


def hold_facts(graph: Graph, phases: int = 1) -> HoldFacts:
    """The :class:`HoldFacts` of ``graph`` (scheduled: each node has its SM and queue position) for holds
    of tiles read at least ``phases`` phases after their store. A store releases a counter where it is
    the last of a group's stores in its SM's store queue that another SM waits for
    (:func:`~vdir.analysis.queues.releasers`); the stores before it release nothing, and have no fence
    to hold the stream for."""
    releasing: set[int] = set()
    seen: set[int] = set()
    for n in graph.nodes:
        for group in n.deps:
            if id(group) in seen or all(p.sm == n.sm for p in group):
                continue
            seen.add(id(group))
            releasing.update(p.id for p in releasers(group) if p.kind == "store")
    return HoldFacts(frozenset(releasing), phase_of_nodes(graph.nodes), phases)


def plan_stream_holds(nodes: list[Node], facts: HoldFacts) -> list[tuple[Node, Node]]:
    """The (store, stream load) pairs to hold among one SM's ``nodes`` (allocated; see the module), in
    program order of the stores: those whose load's readers are all at least ``facts.phases`` phases
    after the store."""
    stream = EngineKind.STREAM.value
    readers: dict[int, list[Node]] = defaultdict(list)
    reusing: dict[int, list[Node]] = defaultdict(list)  # by compute id: the stream loads that wait for it
    for n in nodes:
        for i in n.inputs:
            readers[i.id].append(n)
        if n.kind == "load" and n.engine == stream:
            for group in n.deps:
                for p in group:
                    if p.kind == "compute" and p.sm == n.sm:
                        reusing[p.id].append(n)
    holds = []
    for n in sorted(nodes, key=lambda n: n.key):
        if n.kind != "store" or n.id not in facts.releasing or n.flag_words or not n.inputs:
            continue
        later = [y for c in _weight_readers_before(n) for y in reusing.get(c.id, ()) if y.key > n.key]
        if not later:
            continue
        load = min(later, key=lambda y: y.key)
        least = facts.phase[n.id] + facts.phases
        if readers.get(load.id) and all(facts.phase[r.id] >= least for r in readers[load.id]):
            holds.append((n, load))
    return holds


def _weight_readers_before(store: Node) -> list[Node]:
    """The computes on the store's SM that read a stream-engine tile and whose results its row is made
    from (through tile edges): the gemv of an output projection, not only the residual add after it."""
    stream = EngineKind.STREAM.value
    out, todo, seen = [], [store], {store.id}
    while todo:
        for i in todo.pop().inputs:
            if i.kind == "compute" and i.sm == store.sm and i.id not in seen:
                seen.add(i.id)
                todo.append(i)
                if any(t.kind == "load" and t.engine == stream for t in i.inputs):
                    out.append(i)
    return out


def add_stream_holds(holds: list[tuple[Node, Node]], intern: GroupInterner | None = None) -> None:
    """Make each held load wait for its store (one more dependency group)."""
    intern = intern or GroupInterner()
    for store, load in holds:
        if not any(store in group for group in load.deps):
            load.deps.append(intern([store]))


def stores_releasing_first(stream_queue: list[Node]) -> set[int]:
    """The ids of the stores that release their counters before their bits (see the module), among one
    SM's laid-out nodes: each store that releases a counter and whose toggle a load of
    ``stream_queue`` (the SM's stream engine) waits for, its bits among the load's, other than a load
    of the bytes the store wrote (which waits for them, and would wait for the fence as well). A
    dependency that ``vdir-layout-deps`` found implied by other waits (a hold of a tile whose stream
    had to wait for something later anyway) has no bit, and marks nothing."""
    out: set[int] = set()
    for load in stream_queue:
        waits = load.wait_bits
        for group in load.deps:
            out.update(p.id for p in group if p.kind == "store" and p.sm == load.sm and p.release_counters
                       and p.buffer != load.buffer and any(bit in waits for bit in p.signal_bits))
    return out
