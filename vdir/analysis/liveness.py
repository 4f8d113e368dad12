"""Tile lifetimes on one SM: what shared-memory allocation and memory-aware hoisting both read.

A tile lives from its producer to its last consumer, in the SM's schedule
order (``Node.key``: program order, hoisted loads moved up), and takes its
size rounded up to the target's bulk-copy alignment. ``vdir-alloc-smem``
gives each tile bytes for that span; ``vdir-schedule``'s memory-aware
hoisting (:func:`~vdir.transforms.schedule.schedule_within_budget`) asks, with
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


@dataclass(slots=True)
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
    consumers_of = consumers.get
    for n in nodes:
        kind = n.kind
        if kind == "load" or kind == "compute":  # Node.produces_tile
            cs = consumers_of(n.id)
            if not cs:
                cs, last = [], (n.seq, n.hoist)
            elif len(cs) == 1:
                last = (cs[0].seq, cs[0].hoist)
            else:
                last = max([(c.seq, c.hoist) for c in cs])  # the latest Node.key
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
        self.index = index = {id(n): i for i, n in enumerate(order)}
        last_index = {}
        for i, n in enumerate(order):
            last_index[(n.seq, n.hoist)] = i  # Node.key; equal keys: the last node with that key
        self.size = {id(t.node): t.size for t in tiles}
        delta = [0] * (len(order) + 1)  # a list: item updates are cheaper than on an array
        for t in tiles:
            delta[index[id(t.node)]] += t.size
            delta[last_index[t.last_use] + 1] -= t.size
        self.live = np.cumsum(np.array(delta[:-1], dtype=np.int64))
        #: ``live``'s maximum, kept by :meth:`start_earlier` (a hoist only raises its span)
        self.bound = int(self.live.max(initial=0))

    def peak(self) -> int:
        """The most bytes live at any one point."""
        return self.bound

    def fits_earlier(self, load: Node, before: Node, budget: int) -> bool:
        """Whether ``load``'s tile, made live from ``before`` on, keeps every point within ``budget``."""
        size = self.size.get(id(load), 0)
        if self.bound + size <= budget:  # then every point of the span is within it too
            return True
        lo, hi = self.index[id(before)], self.index[id(load)]
        if hi <= lo:
            return True
        if int(self.live[lo]) + size > budget:  # the span's first point already overflows (the usual refusal)
            return False
        return int(self.live[lo:hi].max()) + size <= budget

    def start_earlier(self, load: Node, before: Node) -> None:
        """Record that ``load``'s tile is live from ``before`` on."""
        lo, hi = self.index[id(before)], self.index[id(load)]
        size = self.size.get(id(load), 0)
        self.live[lo:hi] += size
        if hi > lo:
            self.bound = max(self.bound, int(self.live[lo:hi].max()))
