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
  the group's stores write, and with no other group of stores into that
  buffer.

Such a load then waits on the words instead of the group (the group gets no
counter, and gives the load no knowledge of its producers' other work);
such a store also writes the words, and releases nothing for the group. The stores still write the buffer itself, which stays the program's
output.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from vdir import isa
from vdir.analysis.graph import Graph, Node
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
        others = [g for g in load.deps if g is not group and any(p.kind == "store" and p.buffer == buffer for p in g)]
        if others:
            return False
    return True


def plan_flag_words(graph: Graph, max_bytes: int) -> FlagPlan:
    """The flag-word hand-offs of a placed ``graph`` whose loads read at most ``max_bytes`` (0: none)."""
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
                if any(p.sm != node.sm for p in g):  # a hand-off between SMs, for this waiter at least
                    groups.setdefault(id(g), g)
    sole: set[int] = set()
    for buffer_stores in stores.values():
        sole |= sole_writers(graph, buffer_stores)
    chosen = [g for key, g in groups.items() if _qualifies(graph, g, waiters[key], sole, max_bytes)]
    return FlagPlan(
        loads=frozenset(n.id for g in chosen for n in waiters[id(g)]),
        stores=frozenset(p.id for g in chosen for p in g),
        buffers=frozenset(g[0].buffer for g in chosen),
    )


def carried_by_flag_words(node: Node, group: Group) -> bool:
    """Whether ``node`` gets ``group``'s bytes through flag words rather than by waiting for it: a
    flag-word load and a group of stores into its buffer (the planned loads have exactly one)."""
    return node.flag_words and node.kind == "load" and all(p.kind == "store" and p.buffer == node.buffer for p in group)


def mark_flag_words(graph: Graph, plan: FlagPlan) -> None:
    """Mark the plan's loads and stores (``Node.flag_words``): the layout then gives the loads no bits or
    counter for their flag-word group and the stores no release for it."""
    if not plan.loads:
        return
    for node in graph.nodes:
        if node.id in plan.loads or node.id in plan.stores:
            node.flag_words = True


def flag_word_layout(graph: Graph) -> tuple[dict[int, int], int]:
    """Where each buffer's flag words lie in the sync block: (byte offset of byte 0's word, by buffer;
    the flag words' total bytes). A buffer has them where a flag-word store writes it: two bytes of
    words per byte of the buffer, each buffer's share aligned, after the counters
    (``isa.flag_words_start`` of the graph's counters, which are assigned first)."""
    flagged = sorted({n.buffer for n in graph.nodes if n.flag_words and n.kind == "store"})
    start = at = isa.flag_words_start(graph.num_counters)
    offsets: dict[int, int] = {}
    for b in flagged:
        offsets[b] = at
        at += -(-2 * graph.args[b].nbytes // isa.FLAG_WORDS_ALIGN) * isa.FLAG_WORDS_ALIGN
    return offsets, at - start
