"""Which hand-offs between SMs can carry a flag in every word instead of a counter.

A hand-off today: the producing SMs' stores write a row to global memory,
wait for the writes, and release a global counter (``red.release.gpu``,
whose fence also waits for every bulk copy the SM has in flight); the
consuming SM polls the counter, then loads the row. A *flag-word* hand-off
also writes the row as 8-byte words into the sync block (``isa.TRANSFER_FLAG_WORDS``),
each holding 4 bytes of the row and the launch's epoch, with single 64-bit
stores; the consumer polls those words themselves until every one holds
this launch's epoch. No counter, no release, no load after the poll. Measured
without vdir (``bench/handoff_protocol_probe.cu``, ``docs/performance.md``
round 30), that takes a sixth off a 4 KiB row's hand-off on an idle GPU and
a quarter to two fifths while the weight streams run, and loses on 16 KiB
rows.

The words are written and read relaxed: a consumer that sees this
launch's epoch in a word holds that word's bytes and knows nothing else
about the producer. The epoch names the write only where each byte is
written once per launch, and the consumer must need nothing from the
producers but those bytes. So a dependency group qualifies where:

* its producers are stores into one buffer, unconditional, at static
  offsets, not reductions, and no other store of the program writes any
  byte they write (one writer per byte per launch);
* every micro-op that waits on it is a load of that buffer, unconditional
  and at a static offset, reading at most ``max_bytes``, whose every byte
  the group's stores write, and no other of its groups writes into those
  bytes but one made of the same stores (a wait for its shared-memory
  slot: kept only where the stores write their words alone, see
  :func:`plan_flag_words`).

Such a load then waits on the words instead of the group (the group gets no
counter, and gives the load no knowledge of its producers' other work);
such a store also writes the words, and releases nothing for the group. The stores still write the
buffer itself, which stays the program's output, unless the buffer is declared ``scratch`` and nothing
reads it but flag-word loads (:func:`words_only_buffers`): then a store writes only its words, in one
record that also signals and releases what the store does, and no bulk copy of it waits for its writes
to land before the next store may run.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from vdir import isa
from vdir.analysis.graph import Graph, Node, address_reads
from vdir.families import DTYPE_BYTES

Group = tuple[Node, ...]
#: the largest load (bytes) ``vdir-flag-words`` makes poll flag words by default: a 2048-wide bf16 row
#: (the probe measured the gain there; a 16 KiB row lost)
DEFAULT_MAX_BYTES = 4096
#: (first row, rows, first byte in the row, bytes per row) of an access in its buffer
Rect = tuple[int, int, int, int]


@dataclass(frozen=True)
class FlagPlan:
    """The flag-word hand-offs of a program: the loads and stores that carry them (after
    :func:`mark_flag_words`, :func:`carried_by_flag_words` says which of a load's groups they are)."""

    #: the loads that poll flag words (by ``Node.id``), and the stores that write them
    loads: frozenset[int]
    stores: frozenset[int]
    #: the buffers some of whose bytes are handed over as flag words
    buffers: frozenset[int]


NO_PLAN = FlagPlan(frozenset(), frozenset(), frozenset())


def _rect(graph: Graph, node: Node) -> Rect:
    """Where ``node``'s tile lies in its buffer."""
    assert node.tile is not None
    rows, cols = node.tile.shape
    es = DTYPE_BYTES[graph.args[node.buffer].dtype]
    return node.row, rows, node.col * es, cols * es


def _covered(want: Rect, have: list[Rect]) -> bool:
    """Whether the rectangles ``have`` (which do not overlap each other) cover ``want``."""
    area = sum(
        max(0, min(want[0] + want[1], h[0] + h[1]) - max(want[0], h[0]))
        * max(0, min(want[2] + want[3], h[2] + h[3]) - max(want[2], h[2]))
        for h in have
    )
    return area == want[1] * want[3]


def _plain_access(node: Node) -> bool:
    """An unconditional access at a static offset that only writes or only reads its region."""
    return node.guard is None and node.dyn is None and node.reduce is None


def sole_writers(graph: Graph, stores: list[Node]) -> set[int]:
    """The stores (by ``id()``) no other store of their buffer overlaps: each byte's one writer per launch.

    Row by row, the stores' byte ranges sorted by start fall into runs that overlap one another (each
    range starting before the run's furthest end joins it); every range in a run of two or more
    overlaps another, and no other range does.
    """
    spans: dict[int, list[tuple[int, int, int]]] = defaultdict(list)  # row -> (first byte, end, store index)
    for k, s in enumerate(stores):
        row, rows, first, nbytes = _rect(graph, s)
        for r in range(row, row + rows):
            spans[r].append((first, first + nbytes, k))
    clash: set[int] = set()
    for row_spans in spans.values():
        row_spans.sort()
        run, reach = [row_spans[0][2]], row_spans[0][1]
        for first, end, k in row_spans[1:]:
            if first < reach:
                run.append(k)
                reach = max(reach, end)
                continue
            if len(run) > 1:
                clash.update(run)
            run, reach = [k], end
        if len(run) > 1:
            clash.update(run)
    return {id(s) for k, s in enumerate(stores) if k not in clash}


def _overlaps(a: Node, b: Node) -> bool:
    """Whether two accesses of one buffer share an element (their tiles' rectangles, in elements)."""
    assert a.tile is not None and b.tile is not None
    (ar, ac), (br, bc) = a.tile.shape, b.tile.shape
    return a.row < b.row + br and b.row < a.row + ar and a.col < b.col + bc and b.col < a.col + ac


def _writes_into(group: Group, load: Node) -> bool:
    """Whether every member of ``group`` is a store that writes some element ``load`` reads."""
    return all(p.kind == "store" and p.buffer == load.buffer and _overlaps(p, load) for p in group)


def _qualifies(graph: Graph, group: Group, waiters: list[Node], sole: set[int], max_bytes: int) -> bool:
    """Whether ``group`` (stores into one buffer) and its ``waiters`` make a flag-word hand-off."""
    buffer = group[0].buffer
    if not all(p.kind == "store" and p.buffer == buffer and id(p) in sole and _plain_access(p) for p in group):
        return False
    made = [_rect(graph, p) for p in group]
    covered: dict[Rect, bool] = {}  # the waiters on many SMs read the same region
    for load in waiters:
        if load.kind != "load" or load.buffer != buffer or not _plain_access(load):
            return False
        assert load.tile is not None
        if load.tile.nbytes > max_bytes:
            return False
        rect = _rect(graph, load)
        if rect not in covered:
            covered[rect] = _covered(rect, made)
        if not covered[rect]:
            return False
        # another group that writes into the load's bytes is taken for the words' too (carried_by_flag_words):
        # only a wait on some of the same stores may be (:func:`_needs_words_only`)
        members = set(map(id, group))
        if any(g is not group and _writes_into(g, load) and not members.issuperset(map(id, g)) for g in load.deps):
            return False
    return True


def _needs_words_only(group: Group, waiters: list[Node]) -> bool:
    """Whether polling ``group``'s words may also stand for a waiter's wait for the shared-memory slot it
    loads into (the slot's last readers, which only its own SM's stores can be): where some waiter runs on
    the SM of every producer, or waits on some of the group's stores in another group too. A store whose
    words come before its plain copy may still read the slot after its words land; one that writes only
    its words has read the tile by then."""
    sms = {p.sm for p in group}
    if len(sms) == 1 and any(w.sm in sms for w in waiters):
        return True
    return any(g is not group and _writes_into(g, w) for w in waiters for g in w.deps)


def plan_flag_words(graph: Graph, max_bytes: int) -> FlagPlan:
    """The flag-word hand-offs of a placed and allocated ``graph`` whose loads read at most ``max_bytes``
    (0: none).

    The groups that qualify; but a group whose words may also stand for a waiter's slot wait
    (:func:`_needs_words_only`: on one SM with it, say) only where its buffer is ``scratch`` and the plan
    leaves every reader of it to the words (:func:`words_only_buffers`), so that its stores write their
    words alone. Groups on one SM thus join the plan for the sake of their buffer.
    """
    if max_bytes <= 0:
        return NO_PLAN
    stores: dict[int, list[Node]] = defaultdict(list)
    waiters: dict[int, list[Node]] = defaultdict(list)
    groups: dict[int, Group] = {}
    for node in graph.nodes:
        if node.kind == "store":
            stores[node.buffer].append(node)
        for g in node.deps:
            if g:
                waiters[id(g)].append(node)
                groups.setdefault(id(g), g)
    sole: set[int] = set()
    for buffer_stores in stores.values():
        sole |= sole_writers(graph, buffer_stores)
    needs: dict[int, bool] = {}
    chosen = []
    for key, g in groups.items():
        if not _qualifies(graph, g, waiters[key], sole, max_bytes):
            continue
        needs[key] = _needs_words_only(g, waiters[key])
        if graph.args[g[0].buffer].scratch or not needs[key]:
            chosen.append(g)
    words_only = _words_only(graph, {n.id for g in chosen for n in waiters[id(g)]}, {p.id for g in chosen for p in g})
    chosen = [g for g in chosen if g[0].buffer in words_only or not needs[id(g)]]
    return FlagPlan(
        loads=frozenset(n.id for g in chosen for n in waiters[id(g)]),
        stores=frozenset(p.id for g in chosen for p in g),
        buffers=frozenset(g[0].buffer for g in chosen),
    )


#: :func:`carried_by_flag_words`'s answers by group (``id()``) and load region
CarriedMemo = dict[tuple[int, int, int, int, int, int], bool]


def carried_by_flag_words(node: Node, group: Group, memo: CarriedMemo | None = None) -> bool:
    """Whether ``node`` gets ``group``'s bytes through flag words rather than by waiting for it: a
    flag-word load and a group of stores each of which writes some byte the load reads (the plan gives
    such a load exactly one: its words' stores; a group of stores that write other bytes of the buffer,
    such as a wait for the load's shared-memory slot, is waited on as usual).

    ``memo``, where given, keeps the answers for the loads of one region on every SM (a group's loads
    read one row, and the group has as many stores as SMs wrote it), while the groups live."""
    if not (node.flag_words and node.kind == "load"):
        return False
    if memo is None:
        return _writes_into(group, node)
    assert node.tile is not None
    key = (id(group), node.buffer, node.row, node.col, *node.tile.shape)
    known = memo.get(key)
    if known is None:
        known = memo[key] = _writes_into(group, node)
    return known


def mark_flag_words(graph: Graph, plan: FlagPlan) -> None:
    """Mark the plan's loads and stores (``Node.flag_words``): the layout then gives the loads no bits or
    counter for their flag-word group and the stores no release for it."""
    if not plan.loads:
        return
    for node in graph.nodes:
        if node.id in plan.loads or node.id in plan.stores:
            node.flag_words = True


@dataclass(frozen=True)
class FlagWordLayout:
    """Where a program's flag words lie in the sync block, and which buffers only they carry."""

    #: by buffer, the byte offset in the sync block of the word that holds the buffer's byte 0
    offsets: dict[int, int]
    #: the flag words' total bytes (``EncodedProgram.flag_word_bytes``)
    nbytes: int
    #: the buffers whose flag-word stores write their words alone (:func:`words_only_buffers`)
    words_only: frozenset[int]


def words_only_buffers(graph: Graph) -> frozenset[int]:
    """The buffers nothing reads but flag-word loads, after :func:`mark_flag_words`: declared ``scratch``
    (the caller never sees them), written by flag-word stores, and no other load of them, nor any
    micro-op that reads an element of them to address or decide itself. Their flag-word stores need not
    write the buffer: every reader takes the bytes from the words."""
    marked = {n.id for n in graph.nodes if n.flag_words}
    return _words_only(graph, marked, marked)


def _words_only(graph: Graph, loads: set[int], stores: set[int]) -> frozenset[int]:
    """:func:`words_only_buffers` were the loads ``loads`` and the stores ``stores`` (by id) flagged."""
    candidates = {n.buffer for n in graph.nodes if n.kind == "store" and n.id in stores and graph.args[n.buffer].scratch}
    for node in graph.nodes:
        if not candidates:
            break
        if node.kind == "load" and node.id not in loads:
            candidates.discard(node.buffer)
        for b, _ in address_reads(node):
            candidates.discard(b)
    return frozenset(candidates)


def flag_word_layout(graph: Graph) -> FlagWordLayout:
    """Where each buffer's flag words lie in the sync block: two bytes of words per byte of the buffer,
    for each buffer a flag-word store writes, each buffer's share aligned, after the counters
    (``isa.flag_words_start`` of the graph's counters, which are assigned first)."""
    flagged = sorted({n.buffer for n in graph.nodes if n.flag_words and n.kind == "store"})
    start = at = isa.flag_words_start(graph.num_counters)
    offsets: dict[int, int] = {}
    for b in flagged:
        offsets[b] = at
        at += isa.flag_word_share(graph.args[b].nbytes)
    return FlagWordLayout(offsets, at - start, words_only_buffers(graph) if flagged else frozenset())
