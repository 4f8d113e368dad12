"""Tile lifetimes on one SM: what shared-memory allocation and memory-aware hoisting both read.

A tile lives from its producer to its last consumer, in the SM's schedule
order (``Node.key``: program order, hoisted loads moved up), and takes its
size rounded up to the target's bulk-copy alignment. ``vdir-alloc-smem``
gives each tile bytes for that span; ``vdir-schedule``'s memory-aware
hoisting (:func:`~vdir.transforms.schedule.hoist_within_budget`) asks, with
:class:`LiveBytes`, whether moving a load earlier keeps the bytes live at
every point within the SM's arena.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from vdir.analysis.graph import Node


def round_up(n: int, a: int) -> int:
    """``n`` rounded up to a multiple of ``a``."""
    return (n + a - 1) // a * a


@dataclass
class TileLife:
    """One tile of an SM: its producer, its aligned size, its last use and its consumers."""

    node: Node
    size: int
    last_use: tuple[int, int]
    consumers: list[Node]


def tiles_of_sm(nodes: list[Node], align: int) -> list[TileLife]:
    """The tiles ``nodes`` (one SM's) produce, each with the span it lives (see the module)."""
    consumers: dict[int, list[Node]] = defaultdict(list)
    for n in nodes:
        for i in n.inputs:
            consumers[i.id].append(n)
    tiles = []
    sizes: dict[int, int] = {}  # by the tile signature's id (nodes of one template share it)
    for n in nodes:
        if n.kind == "load" or n.kind == "compute":  # Node.produces_tile
            cs = consumers.get(n.id, [])
            last = max([(c.seq, c.hoist) for c in cs]) if cs else (n.seq, n.hoist)  # the latest Node.key
            size = sizes.get(id(n.tile))
            if size is None:
                size = sizes[id(n.tile)] = round_up(n.tile.nbytes, align)  # type: ignore[union-attr]
            tiles.append(TileLife(n, size, last, cs))
    return tiles


class LiveBytes:
    """Bytes of tiles live at each node of one SM, in schedule order, updated as loads are hoisted.

    Built from the order before hoisting; a node's index in that order is its
    place on the time line. Hoisting a load to just before an earlier node
    makes its tile live from that node on: :meth:`fits_earlier` asks whether
    that stays within a budget, :meth:`start_earlier` records it.
    """

    def __init__(self, order: list[Node], tiles: list[TileLife]):
        self.index = {id(n): i for i, n in enumerate(order)}
        last_index = {}
        for i, n in enumerate(order):
            last_index[n.key] = i  # equal keys: the last node with that key
        self.size = {id(t.node): t.size for t in tiles}
        delta = np.zeros(len(order) + 1, dtype=np.int64)
        for t in tiles:
            delta[self.index[id(t.node)]] += t.size
            delta[last_index[t.last_use] + 1] -= t.size
        self.live = np.cumsum(delta[:-1])

    def peak(self) -> int:
        """The most bytes live at any one point."""
        return int(self.live.max(initial=0))

    def fits_earlier(self, load: Node, before: Node, budget: int) -> bool:
        """Whether ``load``'s tile, made live from ``before`` on, keeps every point within ``budget``."""
        lo, hi = self.index[id(before)], self.index[id(load)]
        span = self.live[lo:hi]
        return span.size == 0 or int(span.max()) + self.size.get(id(load), 0) <= budget

    def start_earlier(self, load: Node, before: Node) -> None:
        """Record that ``load``'s tile is live from ``before`` on."""
        lo, hi = self.index[id(before)], self.index[id(load)]
        self.live[lo:hi] += self.size.get(id(load), 0)
