"""The analyses whose cost once grew faster than the program: their answers, on inputs where that showed.

Timing is not asserted here (bench/bench_compile.py measures it); these tests
pin down what the indexed structures must answer.
"""

from __future__ import annotations

import random

from vdir.analysis.graph import AccessIndex, build_graph
from vdir.frontend import ProgramBuilder


class _ScannedAccesses:
    """The plain list the access index must agree with."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, int, object]] = []

    def add(self, lo: int, hi: int, node: object) -> None:
        self.entries.append((lo, hi, node))

    def overlapping(self, lo: int, hi: int) -> set[int]:
        return {id(n) for s, e, n in self.entries if s < hi and lo < e}

    def remove_covered(self, lo: int, hi: int) -> None:
        self.entries = [(s, e, n) for s, e, n in self.entries if not (lo <= s and e <= hi)]


def test_the_access_index_answers_as_a_scan_does() -> None:
    rng = random.Random(7)
    for _ in range(100):
        index, scanned = AccessIndex(), _ScannedAccesses()
        nodes = [object() for _ in range(30)]
        span = rng.choice([600, 100_000, 1 << 40])
        for _ in range(150):
            lo = rng.randrange(-16, span)
            hi = lo + rng.choice([1, 2, 3, 16, 513, rng.randrange(1, span)])
            action = rng.random()
            if action < 0.4:
                node = rng.choice(nodes)
                index.add(lo, hi, node)  # type: ignore[arg-type]
                scanned.add(lo, hi, node)
            elif action < 0.6:
                index.remove_covered(lo, hi)
                scanned.remove_covered(lo, hi)
            else:
                assert {id(e[2]) for e in index.overlapping(lo, hi)} == scanned.overlapping(lo, hi)


def test_regions_spanning_half_a_gibibyte_get_their_dependencies() -> None:
    """64 column strips of a 4096x65536 bf16 buffer (512 MiB): each strip's byte range spans the whole buffer,
    so each store waits for every earlier one (write after write) and each load for the stores before it."""
    b = ProgramBuilder("strips")
    x = b.buffer("x", (4096, 65536))
    for i in range(32):
        tile = b.load(x, (0, 8 * i), (4096, 8), name=f"l{i}")
        b.store(tile, x, (0, 8 * (i + 32)), name=f"s{i}")
    graph = build_graph(b.finish())
    stores = [n for n in graph.nodes if n.kind == "store"]
    loads = [n for n in graph.nodes if n.kind == "load"]
    for i, store in enumerate(stores):
        waited = {p for group in store.deps for p in group}
        assert waited >= {*stores[:i], loads[i]}
    for i, load in enumerate(loads):
        assert {p for group in load.deps for p in group} == set(stores[:i])
