"""Which weight tiles land in pieces: a gemv that starts on the first half of its tile.

A small gemv's SM holds one or two weight tiles, and its compute engine
starts on a tile only when the whole of it has landed: the tile's last bytes
arrive about a microsecond after its first, and the gemv's step follows
them (``docs/performance.md``, round 47's probe: a 64 KiB tile's first
quarter lands at 1.76 µs, the whole at 3.26). A tile that lands in pieces
(``isa.TRANSFER_PIECES``) signals its readers once its first half has
landed, and each reader, a gemv that waits for the second half before the
rows in it (``isa.GEMV_WEIGHT_PIECES``), runs its first rows meanwhile.

A load qualifies where it is a plain stream-engine load (no flag words, no
condition: a reader never waits for a tile that did not land) of
an even number of rows, of at least ``isa.TILE_PIECE_MIN_BYTES``, and every
reader of its tile is a ``gemv`` reading it as its weights
(:func:`piece_candidates`). The encoder marks those and their readers,
then checks each SM's records as a backend does
(``isa.tile_piece_problems``: by shared offset, not by tile) and lands
every tile of an SM whole where the check finds anything
(:func:`mark_tile_pieces`), so that what it writes always passes.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from vdir import isa
from vdir.analysis.graph import Graph
from vdir.families import DTYPE_BYTES
from vdir.target import EngineKind, TargetDescription

#: the family whose readers wait for pieces
PIECE_READER = "gemv"


def piece_candidates(graph: Graph) -> tuple[set[int], set[int]]:
    """(load ids, gemv ids): the loads that may land in pieces and the gemvs that read them."""
    readers: dict[int, list[tuple[int, int, str, str]]] = {}
    for node in graph.nodes:
        for i, src in enumerate(node.inputs):
            readers.setdefault(src.id, []).append((node.id, i, node.kind, node.family))
    loads: set[int] = set()
    gemvs: set[int] = set()
    for node in graph.nodes:
        if (node.kind != "load" or node.engine != EngineKind.STREAM.value or node.flag_words or node.tile is None
                or node.guard is not None):
            continue
        rows, cols = node.tile.shape
        nbytes = rows * cols * DTYPE_BYTES[node.tile.dtype]
        if rows % isa.TILE_PIECES or nbytes < isa.TILE_PIECE_MIN_BYTES:
            continue
        mine = readers.get(node.id, [])
        if mine and all(kind == "compute" and family == PIECE_READER and i == 0 for _id, i, kind, family in mine):
            loads.add(node.id)
            gemvs.update(uid for uid, _i, _kind, _family in mine)
    return loads, gemvs


def mark_tile_pieces(instrs: np.ndarray, table: list[list[tuple[int, int]]], target: TargetDescription,
                     loads: Collection[int], gemvs: Collection[int]) -> None:
    """Flag, in place, the records of ``loads`` (``isa.TRANSFER_PIECES``) and ``gemvs``
    (``isa.GEMV_WEIGHT_PIECES``) among unrolled ``instrs`` with queue ``table`` (per SM, each
    engine's first record and count); an SM whose records then break a rule of
    ``isa.tile_piece_problems`` gets its flags taken back."""
    if not loads:
        return
    uids = isa.UOP_ID.column(instrs)
    ops = isa.OPCODE.column(instrs)
    load_rows = np.isin(uids, np.fromiter(loads, np.int64)) & (ops == isa.OP_LOAD)
    gemv_rows = np.isin(uids, np.fromiter(gemvs, np.int64)) & (ops == isa.OP_COMPUTE)
    word0 = instrs[:, isa.TRANSFER_FLAGS.word]
    p2 = instrs[:, isa.P2.word]
    for row in table:
        first = min(start for start, _n in row)
        end = max(start + n for start, n in row)
        span = slice(first, end)
        if not load_rows[span].any():
            continue
        saved = word0[span].copy(), p2[span].copy()
        word0[span] |= np.where(load_rows[span], isa.TRANSFER_PIECES << isa.TRANSFER_FLAGS.shift, 0).astype(word0.dtype)
        p2[span] |= np.where(gemv_rows[span], isa.GEMV_WEIGHT_PIECES, 0).astype(p2.dtype)
        queues = [instrs[start : start + n] for start, n in row]
        if isa.tile_piece_problems(target.engines, queues):
            word0[span], p2[span] = saved
