"""``vdir-alloc-smem``: tiles -> byte offsets in each SM's shared memory.

A tile lives from its producer to its last consumer (schedule order on its
SM: program order, with the loads ``vdir-schedule`` hoisted). Tiles are grouped into size classes (sizes rounded up to the target's
bulk-copy alignment); each class gets a ring of slots: as many as its peak
number of live tiles, plus extra slots while the shared-memory budget allows:
a second slot for each small class, then as many as fit (up to
``MAX_EXTRA_SLOTS``) for the classes that loads fill, largest load traffic
first. Extra slots of the streaming class are what lets the load engine run
ahead of the compute engine, so they come before double-buffering a large
class that is loaded a few times (an MLP's activation rows).

Within a class the allocator hands out the slot that was freed longest ago,
so consecutive tiles rotate through the ring. Reusing a slot creates a
write-after-read hazard: the new producer may not write until every consumer
of the previous tile in that slot has finished. The pass adds those edges as
dependency groups, which ``vdir-layout-deps`` then turns into bits.

Rings keep each class as deep as its peak for the whole program, so a
program whose phases use different tile sizes (a model's attention, then its
MLP) can need more than the SM has although its live tiles never do. Such an
SM is allocated *by liveness* instead (:func:`_allocate_by_liveness`): each
tile takes a free byte range among the tiles live at its production, the one
whose previous occupants were released longest ago (the ring's rotation,
generalised), and waits for the consumers of every earlier tile whose bytes
it reuses.

Rings that fit can still leave the class that loads fill most a single
slot (an MLP of hidden size 8192: one 64 KB slot for the weight
tiles beside rings for the vectors of both phases). Each load then waits
for the gemv reading the tile before it, and nothing streams ahead. Such an
SM is allocated by liveness *with run-ahead*: a *streamed* tile (one the
stream engine loads, at least half the largest it loads) is taken as live
from the production of the streamed tile ``run-ahead`` places before it (the
stream engine has no cross-SM waits and runs ahead as far as the bytes
allow), and the streamed tiles are placed from the bottom of the arena,
everything else from the top, so that vectors and partial sums do not split
the room the weight tiles rotate through. Where ``run-ahead`` tiles do not
fit, fewer are tried; where none fits, the rings stay. (SMs the rings do not
fit keep plain liveness: run-ahead there measured slower, see
docs/performance.md.)

On a graph whose layer loop's trips are placed alike (``Graph.trips_kept``,
``vdir-place``'s ``keep-trips``), the rings other than the streaming one get
as many slots as divide their tiles of one trip (:func:`_rings_per_trip`),
so that each layer's tiles take the slots the layer before took.

Option ``weight-ring`` (0: off, the default) gives the streamed tiles a
ring of that many slots at the top of the arena, apart from everything
else, which is allocated by liveness below it: rings that fit can leave
the weight tiles two slots beside rings that each hold their class's peak
(a decode step's vectors, attention tiles and states), although the small
tiles never need those bytes all at once. Kept apart, no small tile waits
for a weight tile's consumer. Where the small tiles do not fit below the
ring, or the streamed tiles are not of one size, the SM is allocated as
without the option.
"""

from __future__ import annotations

import heapq
import operator
from bisect import bisect_left, bisect_right, insort
from collections import defaultdict, deque
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vdir.analysis.graph import Graph, GroupInterner, Node
from vdir.analysis.liveness import TileLife, tiles_of_sm
from vdir.analysis.stages import require_option_in_range, run_stage
from vdir.diagnostics import PassFailure
from vdir.isa import tile_arena_bytes
from vdir.target import EngineKind

#: streamed tiles the liveness allocator keeps room for ahead of the one being read, by default
#: (option ``run-ahead``; fewer where they do not fit): the slots the stream engine's loads land in
#: while the gemvs read the ones before
STREAM_RUN_AHEAD = 2
#: the largest ``run-ahead`` accepted
MAX_RUN_AHEAD = 8
#: the largest ``weight-ring`` accepted
MAX_WEIGHT_RING = 8


@dataclass(frozen=True)
class StreamRoom:
    """How much room an SM's allocation makes for the stream engine's weight tiles: the options
    ``run-ahead`` and ``weight-ring`` of ``vdir-alloc-smem`` (and ``vdir-pipeline``), one value."""

    #: streamed tiles kept room for ahead of the one being read, where the rings would single-buffer them
    run_ahead: int = STREAM_RUN_AHEAD
    #: slots of a ring that holds the streamed tiles apart from the others (0: none)
    weight_ring: int = 0

    def check(self, owner: str) -> None:
        """Refuse either option outside its range, naming ``owner`` (the pass)."""
        require_option_in_range(owner, "run-ahead", self.run_ahead, 0, MAX_RUN_AHEAD)
        require_option_in_range(owner, "weight-ring", self.weight_ring, 0, MAX_WEIGHT_RING)


#: the options' defaults: run-ahead 2, no weight ring
DEFAULT_STREAM_ROOM = StreamRoom()

#: most extra slots a class receives beyond its peak live count
MAX_EXTRA_SLOTS = 6

#: a class of at most budget / CHEAP_CLASS_FRACTION bytes is double-buffered
#: before the streaming classes take their extra slots
CHEAP_CLASS_FRACTION = 64


def _peaks(tiles: list[TileLife], made: list[int], freed: list[int]) -> tuple[dict[int, int], int, Node | None]:
    """Peak live count per size class, the peak live bytes and where it happens.

    The events (a tile made at its node's key, freed after its last use;
    ``made`` and ``freed`` as :func:`_time_keys` gives them) in order of
    time, then made before freed, then tile order: the live bytes and each
    class's live count are running sums over them, the peaks their maxima,
    and "where" the tile whose making first reaches the peak bytes.
    """
    n = len(tiles)
    if n == 0:
        return {}, 0, None
    sizes = np.array([t.size for t in tiles], dtype=np.int64)
    index = np.arange(n)
    kind = np.repeat(np.array([1, 2]), n)
    order = np.lexsort((np.concatenate([index, index]), kind, np.array(made + freed, dtype=np.int64)))
    sign = np.where(kind == 1, 1, -1)[order]
    event_sizes = np.concatenate([sizes, sizes])[order]
    totals = np.cumsum(sign * event_sizes)
    first_max = int(np.argmax(totals))
    peak_total = max(int(totals[first_max]), 0)
    where = tiles[int(order[first_max]) % n].node if peak_total > 0 else None
    peak = {int(s): int(np.cumsum(np.where(event_sizes == s, sign, 0)).max()) for s in np.unique(sizes)}
    return peak, peak_total, where


def _slot_counts(tiles: list[TileLife], peak: dict[int, int], budget: int) -> dict[int, int]:
    """Slots per size class: the peak live count, then extra slots.

    Extra slots go first to the cheap classes (a second slot for each class
    of at most ``budget / CHEAP_CLASS_FRACTION`` bytes, so small results and
    vectors never wait for their slot), then to the classes that loads fill,
    heaviest load traffic first (they are what keeps the load engine ahead of
    the compute engine), and last a second slot for any class still at its
    peak, while the budget allows.
    """
    counts = dict(peak)
    used = sum(s * c for s, c in counts.items())

    def grow(size: int, most: int) -> None:
        nonlocal used
        extra = 0
        while extra < most and used + size <= budget:
            counts[size] += 1
            used += size
            extra += 1

    for size in sorted(counts):
        if size * CHEAP_CLASS_FRACTION <= budget:
            grow(size, 1)
    traffic = _load_traffic(tiles)
    for size in sorted(traffic, key=lambda s: (-traffic[s], -s)):
        grow(size, MAX_EXTRA_SLOTS - (counts[size] - peak[size]))
    for size in sorted(counts):
        if counts[size] == peak[size]:
            grow(size, 1)
    return counts


def _rings_per_trip(tiles: list[TileLife], peak: dict[int, int], counts: dict[int, int]) -> dict[int, int]:
    """The slot counts made to repeat with the layer loop's trips (``Graph.trips_kept``).

    A class whose tiles of one trip number ``c`` gets the most slots that
    divide ``c`` (at least its peak, at most what it had), so that the ring's
    rotation comes back to the same slot each trip and every trip's tiles
    take the slots the trip before took; failing that, the most that are a
    multiple of ``c`` (the rotation then repeats every few trips). Slots are
    only taken away, never added, and never from the class that loads fill
    most: its extra slots are what the stream engine runs ahead in (the
    16-layer MLP stack lost 9% where its SMs with ten weight tiles a layer
    went from three slots to two, docs/performance.md), so its rotation may
    take a few trips to come back.
    """
    per_trip: dict[int, int] = defaultdict(int)
    for t in tiles:
        if t.node.trip == 1:
            per_trip[t.size] += 1
    streaming = _most_loaded_class(tiles)
    out = dict(counts)
    for size, c in per_trip.items():
        if size == streaming:
            continue
        slots = range(peak[size], counts[size] + 1)
        divisors = [k for k in slots if c % k == 0]
        multiples = [k for k in slots if k % c == 0]
        if divisors or multiples:
            out[size] = max(divisors or multiples)
    return out


def _load_traffic(tiles: list[TileLife]) -> dict[int, int]:
    """Bytes loaded into each size class."""
    traffic: dict[int, int] = defaultdict(int)
    for t in tiles:
        if t.node.kind == "load":
            traffic[t.size] += t.size
    return traffic


def _streams_single_buffered(tiles: list[TileLife], counts: dict[int, int]) -> bool:
    """True when the size class that loads fill most (by bytes) has one slot: each of its loads then
    waits for the consumer of the tile before it, and nothing streams ahead."""
    heaviest = _most_loaded_class(tiles)
    return heaviest is not None and counts[heaviest] == 1


def _most_loaded_class(tiles: list[TileLife]) -> int | None:
    """The size class that loads fill most (by bytes; the larger on a tie), None if nothing is loaded."""
    traffic = _load_traffic(tiles)
    return max(traffic, key=lambda s: (traffic[s], s)) if traffic else None


def _classes(counts: dict[int, int]) -> str:
    """The rings' size classes as ``N x S B``, largest first, for diagnostics."""
    return ", ".join(f"{counts[s]} x {s} B" for s in sorted(counts, key=lambda s: -s))


def allocate_sm(graph: Graph, sm: int, nodes: list[Node], intern: GroupInterner, by_liveness: bool = True,
                tiles: list[TileLife] | None = None, room: StreamRoom = DEFAULT_STREAM_ROOM) -> int:
    """Allocate one SM's tiles; return the bytes its arena uses.

    Rings first; where they do not fit, by liveness; where (``room.run_ahead`` >
    0) they leave the class that loads fill most a single slot, by
    liveness with the streamed tiles up to ``room.run_ahead`` ahead
    (:func:`_try_by_liveness`), the rings if that does not fit; a located
    error where liveness is not allowed (``by_liveness`` false).
    ``tiles``: :func:`tiles_of_sm` of ``nodes`` in the schedule given, where
    the caller has them already. ``room.weight_ring`` > 0: first the streamed
    tiles in a ring of that many slots apart from the others, which are
    allocated by liveness whatever ``by_liveness`` says (:func:`_try_weight_ring`).
    """
    target = graph.target
    budget = tile_arena_bytes(target.smem_per_block)
    if tiles is None:
        tiles = tiles_of_sm(nodes, target.smem_alignment)
    times = _time_keys(tiles)
    peak, peak_total, where = _peaks(tiles, *times)
    if peak_total > budget:
        raise PassFailure(
            f"the tiles live at {where.name} on SM {sm} need {peak_total} bytes of shared "  # type: ignore[union-attr]
            f"memory, more than the {budget} bytes available on {target.name}; use smaller tiles",
            loc=where.loc,  # type: ignore[union-attr]
        )
    if room.weight_ring:
        used = _try_weight_ring(sm, tiles, budget, intern, target.name, room.weight_ring)
        if used is not None:
            return used
    counts = _slot_counts(tiles, peak, budget)
    if graph.trips_kept:
        counts = _rings_per_trip(tiles, peak, counts)
    base: dict[int, int] = {}
    offset = 0
    for size in sorted(counts, key=lambda s: -s):
        base[size] = offset
        offset += size * counts[size]
    single = room.run_ahead > 0 and offset <= budget and _streams_single_buffered(tiles, counts)
    if single and by_liveness:
        used = _try_by_liveness(sm, tiles, times, budget, intern, target.name, room.run_ahead)
        if used is not None:
            return used
    elif single:
        raise PassFailure(
            f"the shared-memory rings of SM {sm} ({_classes(counts)}) leave its most-loaded tiles one slot: "
            f"no load could run ahead of its consumer", loc=tiles[0].node.loc)
    if offset > budget:  # the classes peak at different times, but each ring holds its peak
        if by_liveness:
            return _allocate_by_liveness(sm, tiles, times, budget, intern, target.name, 0)
        raise PassFailure(
            f"the shared-memory rings of SM {sm} ({_classes(counts)}) need {offset} bytes, more than the {budget} "
            f"bytes available on {target.name}; use smaller tiles",
            loc=tiles[0].node.loc,
        )
    _place_in_rings(tiles, counts, base, intern)
    return offset


def _place_in_rings(tiles: list[TileLife], counts: dict[int, int], base: dict[int, int],
                    intern: GroupInterner) -> None:
    """Give each tile, in schedule order, the slot of its class's ring (``counts[size]`` slots from
    ``base[size]``) freed longest ago; it waits for the consumers of the slot's previous tile.
    Every class holds at least its peak live count."""
    free = {size: deque(range(counts[size])) for size in counts}
    occupant: dict[tuple[int, int], TileLife] = {}
    releases: list[tuple[tuple[int, int], int, int, int]] = []  # (last_use, tiebreak, size, slot)
    for n_tile, t in enumerate(sorted(tiles, key=lambda t: (t.node.seq, t.node.hoist))):
        node, size = t.node, t.size
        key = (node.seq, node.hoist)  # Node.key
        while releases and releases[0][0] < key:
            _, _, freed, slot = heapq.heappop(releases)
            free[freed].append(slot)
        slot = free[size].popleft()
        prev = occupant.get((size, slot))
        if prev is not None and prev.consumers:
            node.deps.append(intern(prev.consumers))
        occupant[(size, slot)] = t
        node.smem = base[size] + slot * size
        heapq.heappush(releases, (t.last_use, n_tile, size, slot))


def _try_weight_ring(sm: int, tiles: list[TileLife], budget: int, intern: GroupInterner, target: str,
                     slots: int) -> int | None:
    """The streamed tiles (:func:`_streamed`) in a ring of ``slots`` slots at the top of the arena, the
    other tiles by liveness below it; the bytes used, or None (the tiles as they were) where the
    streamed tiles are not all of one size, outnumber the slots at their peak, or the others do not
    fit below the ring."""
    streamed = _streamed(tiles)
    ring = [t for t, s in zip(tiles, streamed, strict=True) if s]
    sizes = {t.size for t in ring}
    if len(sizes) != 1:
        return None
    size = sizes.pop()
    peak, _, _ = _peaks(ring, *_time_keys(ring))
    below = budget - slots * size
    if peak[size] > slots or below < 0:
        return None
    rest = [t for t, s in zip(tiles, streamed, strict=True) if not s]
    saved = [len(t.node.deps) for t in rest]
    try:
        if rest:
            _allocate_by_liveness(sm, rest, _time_keys(rest), below, intern, target, 0)
    except PassFailure:
        for t, n in zip(rest, saved, strict=True):
            del t.node.deps[n:]
        return None
    _place_in_rings(ring, {size: slots}, {size: below}, intern)
    return budget


def _try_by_liveness(sm: int, tiles: list[TileLife], times: tuple[list[int], list[int]], budget: int,
                     intern: GroupInterner, target: str, run_ahead: int) -> int | None:
    """:func:`_allocate_by_liveness` with the streamed tiles ``run_ahead`` ahead, then fewer, down to
    one; the bytes used, or None (the tiles as they were) when none fits."""
    saved = [len(t.node.deps) for t in tiles]
    for ahead in range(run_ahead, 0, -1):
        try:
            return _allocate_by_liveness(sm, tiles, times, budget, intern, target, ahead)
        except PassFailure:
            for t, n in zip(tiles, saved, strict=True):
                del t.node.deps[n:]
    return None


def _allocate_by_liveness(sm: int, tiles: list[TileLife], times: tuple[list[int], list[int]], budget: int,
                          intern: GroupInterner, target: str, ahead: int) -> int:
    """Place each tile in a free byte range of the arena, in schedule order; return the bytes used.

    With ``ahead`` > 0, a streamed tile (:func:`_streamed`) is taken as live
    from the production of the streamed tile ``ahead`` places before it
    (:func:`_run_ahead`) and placed at the lowest candidate, every other
    tile at the highest: the stream engine has no cross-SM waits and runs
    ahead of the gemvs that read its tiles as far as their bytes allow,
    whereas schedule order (each tile read right after it lands) would let
    every streamed tile reuse the bytes of the one before it.

    Candidates are the starts and the ends of the free gaps among the tiles
    live at the tile's production; the chosen one is the candidate whose
    reused bytes were released longest ago (never-used bytes first), then
    the lowest. The tile waits for the consumers of the last occupant of
    each byte it reuses. A tile that finds no gap wide enough (the arena is
    fragmented) is a located error. ``times``: :func:`_time_keys` of ``tiles``.
    """
    made, last_uses = times
    streamed = _streamed(tiles) if ahead else [False] * len(tiles)
    top = [not s for s in streamed] if ahead else streamed  # where the highest candidate is taken
    if ahead:
        made = _run_ahead(streamed, made, ahead)
    live: list[tuple[int, int, int]] = []  # (offset, end, last use), sorted by offset
    earliest = -1  # the earliest last use in ``live`` (-1: none live)
    occupants = _Occupants(budget)
    used = 0
    # schedule order: by Node.key, as its integer (a stable sort: equal keys in tile order)
    for key, t, last_use, up in sorted(zip(made, tiles, last_uses, top, strict=True), key=_MADE):
        node, size = t.node, t.size
        if 0 <= earliest < key:  # some live tile is done: keep the others
            live = [e for e in live if e[2] >= key]
            earliest = min(live, key=_LAST_USE)[2] if live else -1
        gap = occupants.best_gap(live, size, up)
        if gap is None:
            raise PassFailure(
                f"{node.name} on SM {sm} finds no free {size}-byte range in the {budget} bytes of shared "
                f"memory on {target} (the live tiles leave only smaller gaps); use smaller tiles",
                loc=node.loc,
            )
        offset, first, end = gap
        previous = occupants.take(offset, offset + size, t, last_use, first, end)
        consumers = previous[0].consumers if len(previous) == 1 else [c for p in previous for c in p.consumers]
        if consumers:
            node.deps.append(intern(consumers))
        node.smem = offset
        insort(live, (offset, offset + size, last_use), key=_OFFSET)
        if earliest < 0 or last_use < earliest:
            earliest = last_use
        if offset + size > used:
            used = offset + size
    return used


def _time_keys(tiles: list[TileLife]) -> tuple[list[int], list[int]]:
    """Each tile's production and last use (``Node.key`` pairs) as non-negative integers in the same order.

    ``(seq, hoist)`` becomes ``seq * span + hoist - least hoist``, ``span``
    more than the hoists' range: an integer compares faster than a pair.
    Where nothing is hoisted (every hoist 0) the keys are the seqs themselves.
    """
    made_seqs = [t.node.seq for t in tiles]
    made_hoists = [t.node.hoist for t in tiles]
    last_seqs = [t.last_use[0] for t in tiles]
    last_hoists = [t.last_use[1] for t in tiles]
    least = min(min(made_hoists, default=0), min(last_hoists, default=0))
    span = max(max(made_hoists, default=0), max(last_hoists, default=0)) - least + 1
    least_seq = min(min(made_seqs, default=0), min(last_seqs, default=0))
    if span == 1 and least == 0 and least_seq >= 0:
        return made_seqs, last_seqs
    offset = least_seq * span + least  # keeps every key >= 0
    made = [s * span + h - offset for s, h in zip(made_seqs, made_hoists, strict=True)]
    last = [s * span + h - offset for s, h in zip(last_seqs, last_hoists, strict=True)]
    return made, last


def _streamed(tiles: list[TileLife]) -> list[bool]:
    """Which tiles are streamed weight tiles: those the stream engine loads of at least half the largest
    size it loads (the vectors it also loads, a norm's weights, are not)."""
    stream = EngineKind.STREAM.value
    largest = max((t.size for t in tiles if t.node.engine == stream), default=0)
    return [t.node.engine == stream and 2 * t.size > largest for t in tiles]


def _run_ahead(streamed: list[bool], made: list[int], ahead: int) -> list[int]:
    """``made`` with each streamed tile's production moved back to that of the streamed tile ``ahead``
    places before it (:func:`_allocate_by_liveness`)."""
    order = sorted((i for i, s in enumerate(streamed) if s), key=made.__getitem__)
    earlier = list(made)
    for k in range(ahead, len(order)):
        earlier[order[k]] = made[order[k - ahead]]
    return earlier


#: the sort key of the tiles in :func:`_allocate_by_liveness`: their production
_MADE = operator.itemgetter(0)
#: the sort key of the live list: a tile's offset
_OFFSET = operator.itemgetter(0)
#: a live entry's last use
_LAST_USE = operator.itemgetter(2)


class _Occupants:
    """The last tile to occupy each byte of the arena: disjoint segments ``[lo, hi)``, sorted.

    Kept as parallel lists (starts, ends, tiles, the tiles' last uses as
    :func:`_time_keys` gives them), so that the segments meeting a byte
    range, a contiguous run since the segments are disjoint and sorted, are
    found by bisection.
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.los: list[int] = []
        self.his: list[int] = []
        self.tiles: list[TileLife] = []
        self.released: list[int] = []

    def _run(self, lo: int, hi: int) -> tuple[int, int]:
        """The indices ``[i, j)`` of the segments that meet ``[lo, hi)``."""
        i = bisect_right(self.his, lo)
        j = bisect_left(self.los, hi, i)
        return i, j

    def best_gap(self, live: list[tuple[int, int, int]], size: int, top: bool = False) -> tuple[int, int, int] | None:
        """The offset of :func:`_allocate_by_liveness`' choice for a ``size``-byte tile and the indices
        ``[i, j)`` of the segments its bytes meet (:meth:`_run`, for :meth:`take`), or None.

        ``top``: the highest candidate instead (tiles other than the streamed ones packed from the top
        of the arena, away from the streamed tiles' rotation at the bottom)."""
        budget = self.budget
        candidates: list[int] = []
        start = 0
        for lo, hi, _ in live:
            if lo - start >= size:
                candidates.append(start)
                if lo - size != start:
                    candidates.append(lo - size)
            if hi > start:
                start = hi
        if budget - start >= size:
            candidates.append(start)
            if budget - size != start:
                candidates.append(budget - size)
        if top and candidates:
            off = max(candidates)
            return (off, *self._run(off, off + size))
        if len(candidates) < 2:
            return (candidates[0], *self._run(candidates[0], candidates[0] + size)) if candidates else None
        # min(candidates, key=lambda off: (self.released_at(off, off + size), off)), inlined; the pair as
        # one integer (every offset is below budget + 1)
        los, his, released = self.los, self.his, self.released
        scale = budget + 1
        best = best_key = best_i = best_j = -1
        for off in candidates:
            i = bisect_right(his, off)
            j = bisect_left(los, off + size, i)
            if j - i == 1:  # the usual case: one earlier occupant
                key = released[i] * scale + off
            else:
                key = max(released[i:j], default=-1) * scale + off
            if best < 0 or key < best_key:
                best, best_key, best_i, best_j = off, key, i, j
        return best, best_i, best_j

    def take(self, lo: int, hi: int, tile: TileLife, released: int, i: int, j: int) -> list[TileLife]:
        """Make ``tile`` (released at ``released``) the occupant of ``[lo, hi)``, whose bytes meet the
        segments ``[i, j)`` (as :meth:`best_gap` found them); return their previous occupants."""
        los, his, tiles, releases = self.los, self.his, self.tiles, self.released
        if j == i + 1 and los[i] == lo and his[i] == hi:  # the usual case: exactly the bytes of one earlier tile
            previous = [tiles[i]]
            tiles[i], releases[i] = tile, released
            return previous
        previous = tiles[i:j]
        new_los, new_his, new_tiles, new_released = [lo], [hi], [tile], [released]
        if i < j:
            if los[i] < lo:  # the first segment keeps its bytes below the tile
                new_los.insert(0, los[i])
                new_his.insert(0, lo)
                new_tiles.insert(0, tiles[i])
                new_released.insert(0, releases[i])
            if hi < his[j - 1]:  # the last keeps those above
                new_los.append(hi)
                new_his.append(his[j - 1])
                new_tiles.append(tiles[j - 1])
                new_released.append(releases[j - 1])
        los[i:j], his[i:j], tiles[i:j], releases[i:j] = new_los, new_his, new_tiles, new_released
        return previous if len(previous) < 2 else list({id(p): p for p in previous}.values())


def allocate(graph: Graph, by_liveness: bool = True, room: StreamRoom = DEFAULT_STREAM_ROOM) -> None:
    """Allocate every SM; the program's ``smem_bytes`` is the largest arena (``room``: see
    :func:`allocate_sm`).

    ``by_liveness`` false refuses, rather than allocates by liveness, an SM
    whose rings do not fit: ``vdir-pipeline`` first tries rings with less
    load hoisting (:func:`~vdir.transforms.pipeline.schedule_and_allocate`).
    """
    by_sm: dict[int, list[Node]] = defaultdict(list)
    for n in graph.nodes:
        by_sm[n.sm].append(n)
    intern = GroupInterner()
    graph.smem_bytes = max((allocate_sm(graph, sm, ns, intern, by_liveness, room=room)
                            for sm, ns in sorted(by_sm.items())), default=0)


@dataclass(frozen=True)
class AllocSmemPass(ModulePass):
    """Assign shared-memory offsets to tiles (see the module docstring).

    Option ``run-ahead`` (default :data:`STREAM_RUN_AHEAD`, 0 ..
    :data:`MAX_RUN_AHEAD`): how many streamed tiles an SM whose rings would
    single-buffer them keeps room for ahead of the one being read; 0 keeps
    such rings. Option ``weight-ring`` (default 0: off, up to
    :data:`MAX_WEIGHT_RING`): the streamed tiles in a ring of that many slots,
    the other tiles by liveness below it, where they fit.
    """

    name = "vdir-alloc-smem"

    run_ahead: int = STREAM_RUN_AHEAD
    weight_ring: int = 0

    def __post_init__(self) -> None:
        self.room.check(self.name)

    @property
    def room(self) -> StreamRoom:
        """The options as one value."""
        return StreamRoom(self.run_ahead, self.weight_ring)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_stage(op, "scheduled", "allocated", lambda graph: allocate(graph, room=self.room))
