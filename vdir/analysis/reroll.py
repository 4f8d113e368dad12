"""Rerolling: a queue's unrolled instructions -> the same stream with loop records.

``vdir-encode`` writes one record per executed instruction; where a block of
``k`` instructions repeats ``n`` times as ``isa.Loop.expand`` can say (every
word affine in the repetition index mod 2^32 or in a shared-memory ring,
words holding packed fields unchanged, the dependency bits in pairs and
flips), :func:`reroll_queue` replaces the ``n * k`` records by one loop
record, the ``k`` bases and the distinct step records (``isa.expand_queue``
is the inverse). The search is greedy from the front: at each position it
takes the body length (up to ``max_body``) that removes the most records, if
any. Candidates come from a hash of each record that is linear in its words
(the dependency-bit words and the tile-slot words compared apart), for all
body lengths at once; every loop is checked word for word before it is
written, so a hash collision costs a missed loop, never a wrong one.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from vdir import isa

#: the longest loop body the encoder searches for
DEFAULT_MAX_BODY = 64

#: (body length, position) pairs examined at once (bounds memory on long queues)
_BLOCK_ELEMENTS = 1 << 22

#: random odd multipliers of the row hash (fixed: the encoder is deterministic)
_MULTIPLIERS = (np.random.default_rng(0x56444952).integers(0, 1 << 32, isa.INSTR_WORDS, dtype=np.uint64) | 1)
#: the words that may step in a ring, by form: the tile slots (``isa.Loop.expand``)
_COMPUTE_SLOT_WORDS = [f.word for f in (isa.OUT_SMEM, *isa.IN_SMEM)]
_TRANSFER_SLOT_WORDS = [isa.SMEM.word]


def _form_multipliers(slot_words: list[int]) -> np.ndarray:
    """The hash's multipliers for one form: zero for the dependency-bit words and the tile-slot words,
    which are compared apart (:func:`_bits_repeat`, :func:`_derive_loop`)."""
    m = _MULTIPLIERS.astype(np.uint32)
    m[[*isa.DEPENDENCY_BIT_WORDS, *slot_words]] = 0
    return m


_HASH_COMPUTE, _HASH_TRANSFER = _form_multipliers(_COMPUTE_SLOT_WORDS), _form_multipliers(_TRANSFER_SLOT_WORDS)


def _row_hashes(records: np.ndarray) -> np.ndarray:
    """A hash of each record that is linear in its words mod 2^32.

    So a word-wise affine run of records is an affine run of hashes; the
    converse can fail (a collision), which :func:`reroll_queue` rules out by
    checking each loop it makes.
    """
    compute = (isa.OPCODE.column(records) == isa.OP_COMPUTE)[:, None]
    # uint32 arithmetic wraps mod 2^32, which is the hash's modulus
    return (records * np.where(compute, _HASH_COMPUTE, _HASH_TRANSFER)).sum(axis=1, dtype=np.uint32)


def _runs(ok: np.ndarray) -> np.ndarray:
    """``runs[k, x]``: how many consecutive True values of row ``ok[k]`` start at ``x``."""
    n = ok.shape[1]
    x = np.arange(n, dtype=np.int32)  # 32-bit: half the memory traffic of the default
    next_false = np.where(ok, np.int32(n), x)[:, ::-1]
    next_false = np.minimum.accumulate(next_false, axis=1)[:, ::-1]
    return next_false - x


class _BitWords(NamedTuple):
    """The dependency-bit fields of a queue's records, each as one 64-bit integer per record."""

    wait_mask: np.ndarray
    signal_mask: np.ndarray
    wait_parity: np.ndarray

    @classmethod
    def of(cls, records: np.ndarray) -> _BitWords:
        """The fields of ``records``."""
        return cls(*(_bit_words(records, f) for f in (isa.WAIT_MASK, isa.SIGNAL_MASK, isa.WAIT_PARITY)))


def _trips(records: np.ndarray, h: np.ndarray, bits: _BitWords, bodies: np.ndarray) -> np.ndarray:
    """``trips[i, s]``: how often the block of ``bodies[i]`` records at ``s`` (likely) repeats affinely
    (0 where it cannot repeat three times).

    Copy m of the block is base + m * step when the difference of each
    record's hash ``h`` to the one a body later (``d1``) is the same as the next
    such difference (``d2``); words holding packed fields may not change.
    ``bodies`` are consecutive lengths. Only the body lengths whose hashes
    repeat three times somewhere (:func:`_rows_with_run`, usually a few) are
    checked further; the others' trips, at most 2, are left 0: a loop pays
    from three trips on (:func:`reroll_queue` reads no fewer).
    """
    n = len(records)
    first, count = int(bodies[0]), len(bodies)
    k = bodies[:, None].astype(np.int32)
    x = np.arange(n, dtype=np.int32)[None, :]
    h_one = _ahead(h, first, count, 1)
    d1 = h_one - h[None]  # uint32: differences mod 2^32
    d2 = _ahead(h, first, count, 2) - h_one
    same = (x < n - 2 * k) & (d1 == d2)
    trips = np.zeros((count, n), dtype=np.int32)
    rows = _rows_with_run(same, k)
    if rows.size == 0:  # no block repeats three times: none pays, the rest is moot
        return trips
    k = k[rows]
    same = same[rows] & _bits_repeat(bits, k)
    packed = _packed_ids(records)
    fixed_ok = _ahead_by(packed, k, 1) == packed[None]
    step_ok = (x < n - k) & fixed_ok & (isa.OPCODE.column(records) != isa.OP_LOOP)[None]
    legal = (_runs(step_ok) >= k) & (x <= n - 2 * k)
    trips[rows] = np.where(legal, 2 + _runs(same) // k, 0)
    return trips


def _rows_with_run(same: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The rows of ``same`` that hold ``k`` (that row's body length, a column) True values in a row.

    In the other rows every trip count :func:`_trips` finds is at most 2, and
    a loop pays for itself from three on. Only the rows with ``k`` True values
    at all are searched for a run (usually few: a queue rarely repeats).
    """
    rows = np.flatnonzero(same.sum(axis=1) >= k[:, 0])
    if rows.size == 0:
        return rows
    return rows[(_runs(same[rows]) >= k[rows]).any(axis=1)]


def _ahead(values: np.ndarray, first: int, count: int, factor: int) -> np.ndarray:
    """``out[i, x] = values[min(x + factor * (first + i), n - 1)]`` for ``i < count``, ``x < n``: a
    read-only strided view of ``values`` padded with its last item (no gather)."""
    n = len(values)
    reach = factor * (first + count - 1)
    padded = np.concatenate([values, np.repeat(values[-1:], reach)])
    step = padded.strides[0]
    return as_strided(padded[factor * first :], shape=(count, n), strides=(factor * step, step), writeable=False)


def _ahead_by(values: np.ndarray, k: np.ndarray, factor: int) -> np.ndarray:
    """``out[i, x] = values[min(x + factor * k[i], n - 1)]``: :func:`_ahead` for any body lengths ``k``
    (a column), gathered."""
    n = len(values)
    return values[np.minimum(np.arange(n, dtype=np.int32)[None, :] + factor * k, n - 1)]


def _bit_words(records: np.ndarray, field: isa.Field) -> np.ndarray:
    """A 64-bit dependency-bit field of each record as one integer."""
    lo, hi = field.word_indices
    return records[:, lo].astype(np.uint64) | (records[:, hi].astype(np.uint64) << np.uint64(32))


def _bits_repeat(bits: _BitWords, k: np.ndarray) -> np.ndarray:
    """``out[i, x]``: whether copies ``x``, ``x + k``, ``x + 2k`` (``k = k[i]``, a column) may follow the
    pairs and flips of ``isa.Loop.expand`` in the dependency-bit words: the masks equal two copies on, and
    so does the parity in the bits awaited in both copies between (a pair's bits may flip every other
    use: :func:`_loop_records` checks exactly). A parity bit outside its wait mask fails (the loop's
    parity is masked)."""
    mask, parity, signal = bits.wait_mask, bits.wait_parity, bits.signal_mask
    out = (_ahead_by(mask, k, 2) == mask[None]) & (_ahead_by(signal, k, 2) == signal[None])
    masked = (parity & ~mask) == 0
    steady = mask[None] & _ahead_by(mask, k, 1)
    same = ((_ahead_by(parity, k, 2) ^ parity[None]) & steady) == 0
    return out & masked[None] & same  # type: ignore[operator]


def _packed_ids(records: np.ndarray) -> np.ndarray:
    """One integer per record, equal for two records exactly when their packed-field words are."""
    if len(isa.PACKED_WORDS) == 1:
        return records[:, isa.PACKED_WORDS[0]]
    return np.unique(records[:, list(isa.PACKED_WORDS)], axis=0, return_inverse=True)[1].reshape(-1)


def _derive_loop(records: np.ndarray, pos: int, k: int, t: int, bit_rule: tuple[int, int]) -> np.ndarray | None:
    """The loop (loop record, bases, step records) that ``t`` copies of the ``k`` records at ``pos``
    would be, or None where no loop can say them (``bit_rule``: its pairs and flips, :func:`_bit_rule`).

    The step of a word is the difference of its first two copies; a word whose
    differences vary (a tile slot in a ring that does not come back every
    trip) steps in the loop's ring, which the differences give: ``s`` and
    ``s - ring_bytes``. The pairs are the bits the first two copies' masks
    exchange, the flips the parities that change between the copies that
    wait on the same bit. Equal steps are written once.
    """
    copies = records[pos : pos + k * t].reshape(t, k, isa.INSTR_WORDS)
    base = copies[0].copy()
    diffs = copies[1:] - copies[:-1]  # uint32: mod 2^32
    step = diffs[0].copy()
    moving = ~(diffs == diffs[:1]).all(axis=0)
    moving[:, [0, *isa.DEPENDENCY_BIT_WORDS]] = False
    ring = _ring_of(copies, moving) if moving.any() else (0, 0)
    if ring is None:
        return None
    ring_base, ring_bytes = ring
    ring_words = np.zeros(k, dtype=np.uint32)
    for j, w in zip(*np.nonzero(moving), strict=True):
        column = copies[:, j, w].astype(np.int64)
        s = int((column[1:] - column[:-1]).max())
        if not (0 <= s < ring_bytes and (int(base[j, w]) - ring_base) % (1 << 32) < ring_bytes):
            return None
        step[j, w] = s
        ring_words[j] |= np.uint32(1 << int(w))
    step[:, isa.DEPENDENCY_BIT_WORDS] = 0
    step[:, isa.STEP_RING_WORDS.word] = ring_words
    pairs, flips = bit_rule
    index, first = _first_uses(step)
    record = isa.make_loop_record(k, t, index, pairs=pairs, flips=flips, ring_base=ring_base,
                                  ring_bytes=ring_bytes)
    return np.concatenate([record[None], base, step[first]])


def _first_uses(rows: np.ndarray) -> tuple[list[int], list[int]]:
    """(for each row, the number of the distinct row it equals, numbered in order of first use; the
    position of each distinct row's first use). A body has at most ``isa.MAX_LOOP_BODY`` rows: a dict
    of their bytes is quicker than a sort."""
    number: dict[bytes, int] = {}
    index, first = [], []
    for j, row in enumerate(rows):
        key = row.tobytes()
        if key not in number:
            number[key] = len(first)
            first.append(j)
        index.append(number[key])
    return index, first


def _ring_of(copies: np.ndarray, moving: np.ndarray) -> tuple[int, int] | None:
    """(first byte, bytes) of the ring the ``moving`` words of ``copies`` step in: its bytes from the first
    such word's differences (``s`` and ``s - bytes``), its first byte the least value they take."""
    js, ws = np.nonzero(moving)
    col = copies[:, js[0], ws[0]].astype(np.int64)
    d = col[1:] - col[:-1]
    ring_bytes = int(d.max() - d.min())
    if not 0 < ring_bytes <= isa.MAX_LOOP_RING_BYTES:
        return None
    return int(copies[:, js, ws].min()), ring_bytes


def _first_copies(bits: _BitWords, pos: int, k: int, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The wait masks, signal masks and wait parities (copies x body, uint64) of the first (up to four)
    of ``t`` copies of the ``k`` records at ``pos``: what a loop's pairs and flips are read from."""
    span = slice(pos, pos + k * min(t, 4))
    mask, signal, parity = (w[span].reshape(-1, k) for w in bits)
    return mask, signal, parity


def _pairs_and_flips(mask: np.ndarray, signal: np.ndarray, parity: np.ndarray) -> tuple[int, int]:
    """The loop record's pairs and flips (``isa.Loop.expand``) for the bit words of a loop's first
    copies (:func:`_first_copies`)."""
    n = len(mask)
    moved = int(np.bitwise_or.reduce(mask[0] ^ mask[1])) | int(np.bitwise_or.reduce(signal[0] ^ signal[1]))
    pairs = int(moved | isa.swap_pairs(moved, _ALL_BITS))  # each moved bit with its partner

    def changed(a: int, b: int) -> int:
        return int(np.bitwise_or.reduce((parity[a] ^ parity[b]) & mask[a] & mask[b]))

    flips = changed(0, 1) & ~pairs
    if n > 2:
        flips |= changed(0, 2) & pairs
    if n > 3:
        flips |= int(isa.swap_pairs(changed(1, 3) & pairs, pairs))
    return pairs, flips & _ALL_BITS


def _bit_rule(bits: _BitWords, pos: int, k: int, t: int) -> tuple[int, int] | None:
    """The pairs and flips of a loop of ``t`` copies of the ``k`` records at ``pos`` (read from its
    first copies), or None where its second copy does not have the dependency bits they would give
    it (``isa.trip_bit_words``).

    A cheap exact test on the bit words alone: where it fails, the loop
    would run one copy, which never pays, so :func:`_loop_records` need
    not derive and expand it (most candidates that the hashes let through
    fail here, on a pair or a flip that the body's records disagree on).
    """
    mask, signal, parity = _first_copies(bits, pos, k, t)
    pairs, flips = _pairs_and_flips(mask, signal, parity)
    want = isa.trip_bit_words(mask[0], signal[0], parity[0], 1, pairs, flips)
    follows = all(bool((w == have[1]).all()) for w, have in zip(want, (mask, signal, parity), strict=True))
    return (pairs, flips) if follows else None


_ALL_BITS = isa.WAIT_MASK.max_value  # every dependency bit


def _loop_records(records: np.ndarray, bits: _BitWords, pos: int, k: int,
                  t: int) -> tuple[np.ndarray, int] | None:
    """The loop for the ``k`` records at ``pos`` (loop record, bases, step records) and its trips: the
    most of the ``t`` copies found that it runs exactly (fewer where a copy breaks the loop's rules,
    or a hash collision made the copies look alike; derived again from the copies it runs), or None
    if that is fewer than pays for a loop. ``bits`` are the queue's bit words."""
    for _attempt in range(2):
        rule = _bit_rule(bits, pos, k, t)
        rolled = _derive_loop(records, pos, k, t, rule) if rule is not None else None
        if rolled is None:
            return None
        loop = isa.Loop(0, k, t, len(rolled) - 1 - k)
        equal = (loop.expand(rolled) == records[pos : pos + k * t]).reshape(t, -1).all(axis=1)
        runs = t if equal.all() else int(np.argmin(equal))
        if runs == t or runs < 3:
            break
        t = runs  # derive again from the copies that repeat: a later one may have set the ring wrong
    if _records_saved(k, runs, loop.step_count) <= 0:
        return None
    isa.LOOP_TRIPS.set(rolled[0], runs)
    return rolled, runs


def _records_saved(body: int, trips: int, steps: int) -> int:
    """What a loop of ``trips`` runs of a ``body``-instruction body saves: its instructions less its
    records (the loop record, the bases, the ``steps`` step records)."""
    return trips * body - 1 - body - steps


def _best_loop(records: np.ndarray, bits: _BitWords, pos: int, bodies: np.ndarray, trips: np.ndarray,
               saved: np.ndarray) -> tuple[np.ndarray, int] | None:
    """The loop at ``pos`` that saves the most records, trying the body lengths by the records they
    would save (``saved``, from ``trips`` copies) until none left could beat the best one found: a body
    whose copies break the loop's rules part-way, or that needs more than one step record, saves less
    than it promised."""
    best, best_saved = None, 0
    for i in np.argsort(-saved, kind="stable").tolist():
        if saved[i] <= best_saved:
            break
        k = int(bodies[i])
        loop = _loop_records(records, bits, pos, k, int(trips[i]))
        if loop is not None and _records_saved(k, loop[1], len(loop[0]) - 1 - k) > best_saved:
            best, best_saved = loop, _records_saved(k, loop[1], len(loop[0]) - 1 - k)
    return best


def reroll_queue(records: np.ndarray, max_body: int = DEFAULT_MAX_BODY) -> np.ndarray:
    """The queue's records with every profitable affine repetition made a loop.

    ``records`` is an ``(N, 32)`` uint32 array without loop records; the
    result executes exactly the same instructions (``isa.expand_queue`` of it
    equals ``records``).
    """
    return with_loops(records, find_loops(records, max_body))


#: a loop :func:`find_loops` found: the first and past-the-last record it replaces, and its records
#: (loop record, bases, step records)
FoundLoop = tuple[int, int, np.ndarray]


def with_loops(records: np.ndarray, loops: list[FoundLoop]) -> np.ndarray:
    """``records`` with each of ``loops`` (in order, disjoint) in place of the records it replaces."""
    if not loops:
        return records
    parts: list[np.ndarray] = []
    pos = 0
    for start, stop, rolled in loops:
        parts += [records[pos:start], rolled]
        pos = stop
    parts.append(records[pos:])
    return np.concatenate(parts)


def find_loops(records: np.ndarray, max_body: int = DEFAULT_MAX_BODY) -> list[FoundLoop]:
    """The loops :func:`reroll_queue` writes for ``records``, in order (see the module)."""
    n = len(records)
    if n < 4:
        return []
    records = np.ascontiguousarray(records)
    # loops of three trips or more are searched for (a loop record, k bases, at least one step record)
    bodies = np.arange(1, min(max_body, isa.MAX_LOOP_BODY, n // 3) + 1)
    per_block = max(1, _BLOCK_ELEMENTS // n)
    h, bits = _row_hashes(records), _BitWords.of(records)
    trips = np.concatenate([_trips(records, h, bits, bodies[i : i + per_block])
                            for i in range(0, len(bodies), per_block)])
    sizes = bodies[:, None]
    # what each would save at best (one step record): the search tries the best first
    saved = np.where(trips >= 3, _records_saved(sizes, trips, 1), 0)  # type: ignore[arg-type]
    best_k = saved.argmax(axis=0)
    best_saved = saved[best_k, np.arange(n)]
    profitable = np.flatnonzero(best_saved > 0)  # the positions where a loop may start
    loops: list[FoundLoop] = []
    pos = 0
    while pos < n:
        if best_saved[pos] <= 0:
            later = int(np.searchsorted(profitable, pos))  # the first profitable position after ``pos``
            pos = int(profitable[later]) if later < len(profitable) else n
            continue
        loop = _best_loop(records, bits, pos, bodies, trips[:, pos], saved[:, pos])
        if loop is None:
            pos += 1
            continue
        rolled, runs = loop
        stop = pos + isa.LOOP_BODY.get(rolled[0]) * runs
        loops.append((pos, stop, rolled))
        pos = stop
    return loops
