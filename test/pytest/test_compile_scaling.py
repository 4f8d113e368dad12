"""The analyses whose cost once grew faster than the program: their answers, on inputs where that showed.

Timing is not asserted here (bench/bench_compile.py measures it); these tests
pin down what the indexed structures must answer.
"""

from __future__ import annotations

import random

from vdir.analysis.graph import AccessIndex, BufferRegion, build_graph
from vdir.frontend import ProgramBuilder


class _ScannedAccesses:
    """The plain list the access index must agree with: every byte of every box, compared as sets."""

    def __init__(self, row_bytes: int) -> None:
        self.row_bytes = row_bytes
        self.entries: list[tuple[set[int], object]] = []

    def bytes_of(self, r: BufferRegion) -> set[int]:
        return {row * self.row_bytes + c for row in range(r.row_lo, r.row_hi) for c in range(r.col_lo, r.col_hi)}

    def add(self, r: BufferRegion, node: object) -> None:
        self.entries.append((self.bytes_of(r), node))

    def overlapping(self, r: BufferRegion) -> set[int]:
        mine = self.bytes_of(r)
        return {id(n) for b, n in self.entries if b & mine}

    def remove_covered(self, r: BufferRegion) -> None:
        mine = self.bytes_of(r)
        self.entries = [(b, n) for b, n in self.entries if not b <= mine]


def _random_box(rng: random.Random, rows: int, row_bytes: int) -> BufferRegion:
    r0 = rng.randrange(rows)
    c0 = rng.randrange(row_bytes)
    return BufferRegion.box(row_bytes, (r0, rng.randrange(r0 + 1, rows + 1)), (c0, rng.randrange(c0 + 1, row_bytes + 1)))


def test_the_access_index_answers_as_a_byte_scan_does() -> None:
    """Boxes side by side (overlapping hulls, no shared byte) do not meet; covered means every byte inside."""
    rng = random.Random(7)
    for _ in range(60):
        rows, row_bytes = rng.choice([(1, 64), (8, 16), (12, 40)])
        index, scanned = AccessIndex(), _ScannedAccesses(row_bytes)
        nodes = [object() for _ in range(20)]
        for _ in range(80):
            box = _random_box(rng, rows, row_bytes)
            action = rng.random()
            if action < 0.4:
                node = rng.choice(nodes)
                index.add(box, node)  # type: ignore[arg-type]
                scanned.add(box, node)
            elif action < 0.55:
                index.remove_covered(box)
                scanned.remove_covered(box)
            else:
                assert {id(n) for _, n in index.overlapping(box)} == scanned.overlapping(box)


def test_the_access_index_finds_long_hulls_in_huge_buffers() -> None:
    rng = random.Random(8)
    for _ in range(50):
        index, found = AccessIndex(), []
        span = rng.choice([600, 100_000, 1 << 40])
        flat = []
        for i in range(100):
            lo = rng.randrange(0, span)
            hi = lo + rng.choice([1, 2, 3, 16, 513, rng.randrange(1, span)])
            region = BufferRegion.box(1 << 62, (0, 1), (lo, hi))  # one long row: the box is the hull
            index.add(region, i)  # type: ignore[arg-type]
            flat.append((lo, hi))
        lo = rng.randrange(0, span)
        query = BufferRegion.box(1 << 62, (0, 1), (lo, lo + rng.randrange(1, span)))
        found = {n for _, n in index.overlapping(query)}
        assert found == {i for i, (a, b) in enumerate(flat) if a < query.col_hi and query.col_lo < b}


def test_regions_spanning_half_a_gibibyte_get_their_dependencies() -> None:
    """Column strips of a 4096x65536 bf16 buffer (512 MiB): each strip's flat range spans the whole buffer.
    Strip i is loaded and stored as strip i + 32, and then strip i + 16 (which strip i - 16's store wrote)
    is loaded: the strips' boxes are disjoint but for those, so only those are dependencies."""
    b = ProgramBuilder("strips")
    x = b.buffer("x", (4096, 65536))
    for i in range(32):
        tile = b.load(x, (0, 8 * i), (4096, 8), name=f"l{i}")
        b.store(tile, x, (0, 8 * (i + 16)), name=f"s{i}")
    graph = build_graph(b.finish())
    stores = [n for n in graph.nodes if n.kind == "store"]
    loads = [n for n in graph.nodes if n.kind == "load"]
    for store in stores:  # strip i + 16 is loaded by l(i + 16), which comes later: no write after read
        assert {p for group in store.deps for p in group} == set()
    for i, load in enumerate(loads):  # strip i: written by s(i - 16)
        assert {p for group in load.deps for p in group} == ({stores[i - 16]} if i >= 16 else set())
