"""Rerolling: a queue's unrolled instructions -> the same stream with loop records.

``vdir-encode`` writes one record per executed instruction; where a block of
``k`` instructions repeats ``n`` times with every word affine in the
repetition index (``word = base + t * step`` mod 2^32, words holding packed
fields unchanged, the dependency-bit words stepping by XOR as
``isa.Loop.expand`` says), :func:`reroll_queue` replaces the ``n * k``
records by one loop record, the ``k`` bases and the ``k`` steps
(``isa.expand_queue`` is the inverse). The search is greedy from the front:
at each position it takes the body length (up to ``max_body``) that removes
the most records, if any. Candidates come from a hash of each record that is
linear in its words (the dependency-bit words compared apart), for all body
lengths at once; every loop is checked word for word before it is written,
so a hash collision costs a missed loop, never a wrong one.
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

#: random odd multipliers of the row hash (fixed: the encoder is deterministic); zero for the words that
#: step by XOR, which are compared apart (:func:`_bit_words`)
_HASH_MULTIPLIERS = (np.random.default_rng(0x56444952).integers(0, 1 << 32, isa.INSTR_WORDS, dtype=np.uint64) | 1)
_HASH_MULTIPLIERS[list(isa.XOR_STEP_WORDS)] = 0
#: the same, as the uint32 words the hash is computed in
_HASH_MULTIPLIERS_32 = _HASH_MULTIPLIERS.astype(np.uint32)


def _row_hashes(records: np.ndarray) -> np.ndarray:
    """A hash of each record that is linear in its words mod 2^32.

    So a word-wise affine run of records is an affine run of hashes; the
    converse can fail (a collision), which :func:`reroll_queue` rules out by
    checking each loop it makes.
    """
    # uint32 arithmetic wraps mod 2^32, which is the hash's modulus
    return (records.astype(np.uint32) * _HASH_MULTIPLIERS_32).sum(axis=1, dtype=np.uint32)


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
    """``trips[i, s]``: how often the block of ``bodies[i]`` records at ``s`` (likely) repeats affinely (0 if < 2).

    Copy m of the block is base + m * step when the difference of each
    record's hash ``h`` to the one a body later (``d1``) is the same as the next
    such difference (``d2``); words holding packed fields may not change.
    ``bodies`` are consecutive lengths.
    """
    n = len(records)
    first, count = int(bodies[0]), len(bodies)
    k = bodies[:, None].astype(np.int32)
    x = np.arange(n, dtype=np.int32)[None, :]
    h_one = _ahead(h, first, count, 1)
    d1 = h_one - h[None]  # uint32: differences mod 2^32
    d2 = _ahead(h, first, count, 2) - h_one
    same = (x < n - 2 * k) & (d1 == d2)
    if not _has_run(same, k):  # no block repeats three times: none pays (see reroll_queue), the rest is moot
        return np.zeros((count, n), dtype=np.int32)
    same &= _bits_repeat(bits, first, count)
    packed = _packed_ids(records)
    fixed_ok = _ahead(packed, first, count, 1) == packed[None]
    step_ok = (x < n - k) & fixed_ok & (isa.OPCODE.column(records) != isa.OP_LOOP)[None]
    legal = (_runs(step_ok) >= k) & (x <= n - 2 * k)
    return np.where(legal, 2 + _runs(same) // k, 0)


def _has_run(same: np.ndarray, k: np.ndarray) -> bool:
    """Whether some row of ``same`` holds ``k`` (that row's body length, a column) True values in a row.

    Without one, every trip count :func:`_trips` finds is at most 2, and a
    loop pays for itself from three on. Only the rows with ``k`` True values
    at all are searched for a run (usually few: a queue rarely repeats).
    """
    rows = np.flatnonzero(same.sum(axis=1) >= k[:, 0])
    return rows.size > 0 and bool((_runs(same[rows]) >= k[rows]).any())


def _ahead(values: np.ndarray, first: int, count: int, factor: int) -> np.ndarray:
    """``out[i, x] = values[min(x + factor * (first + i), n - 1)]`` for ``i < count``, ``x < n``: a
    read-only strided view of ``values`` padded with its last item (no gather)."""
    n = len(values)
    reach = factor * (first + count - 1)
    padded = np.concatenate([values, np.repeat(values[-1:], reach)])
    step = padded.strides[0]
    return as_strided(padded[factor * first :], shape=(count, n), strides=(factor * step, step), writeable=False)


def _bit_words(records: np.ndarray, field: isa.Field) -> np.ndarray:
    """A 64-bit dependency-bit field of each record as one integer."""
    lo, hi = field.word_indices
    return records[:, lo].astype(np.uint64) | (records[:, hi].astype(np.uint64) << np.uint64(32))


def _bits_repeat(bits: _BitWords, first: int, count: int) -> np.ndarray:
    """``out[i, x]``: whether copies ``x``, ``x + k``, ``x + 2k`` (``k = first + i``) may follow the XOR
    steps of ``isa.Loop.expand`` in the dependency-bit words: the masks equal two copies on, and so does
    the parity in the bits the wait mask does not step (a pair's bits, which may flip every other use,
    :func:`_loop_records` checks exactly). A parity bit outside its wait mask fails (the loop's parity
    is masked)."""
    mask, parity, signal = bits.wait_mask, bits.wait_parity, bits.signal_mask
    out = (_ahead(mask, first, count, 2) == mask[None]) & (_ahead(signal, first, count, 2) == signal[None])
    masked = (parity & ~mask) == 0
    steady = mask[None] & _ahead(mask, first, count, 1)
    same = ((_ahead(parity, first, count, 2) ^ parity[None]) & steady) == 0
    return out & masked[None] & same  # type: ignore[operator]


def _packed_ids(records: np.ndarray) -> np.ndarray:
    """One integer per record, equal for two records exactly when their packed-field words are."""
    if len(isa.PACKED_WORDS) == 1:
        return records[:, isa.PACKED_WORDS[0]]
    return np.unique(records[:, list(isa.PACKED_WORDS)], axis=0, return_inverse=True)[1].reshape(-1)


def _base_and_steps(records: np.ndarray, pos: int, k: int, t: int) -> tuple[np.ndarray, np.ndarray]:
    """The base and step records of a loop of ``t`` copies of the ``k`` records at ``pos``
    (``isa.Loop.expand``): the first copy and the difference of the first two, their XOR in the
    dependency-bit words. A pair's parity bits (those the wait mask steps) first awaited in the second
    copy take its parity into the base (outside the first copy's mask, so the first copy is unchanged),
    and their step is the XOR of the two copies that wait on each, two apart."""
    base, second = records[pos : pos + k].copy(), records[pos + k : pos + 2 * k]
    step = second - base
    xor = list(isa.XOR_STEP_WORDS)
    step[:, xor] = second[:, xor] ^ base[:, xor]
    mask0, mask1 = _bit_words(base, isa.WAIT_MASK), _bit_words(second, isa.WAIT_MASK)
    pair = mask0 ^ mask1
    par = [_bit_words(records[pos + m * k : pos + (m + 1) * k], isa.WAIT_PARITY) for m in range(min(t, 4))]
    flips = (par[0] ^ par[1]) & ~pair
    if t > 2:
        flips |= (par[2] ^ par[0]) & mask0 & pair
    if t > 3:
        flips |= (par[3] ^ par[1]) & mask1 & pair
    _set_bit_words(step, isa.WAIT_PARITY, flips)
    _set_bit_words(base, isa.WAIT_PARITY, par[0] | (par[1] & mask1 & pair))
    return base, step


def _set_bit_words(records: np.ndarray, field: isa.Field, values: np.ndarray) -> None:
    """Write a 64-bit dependency-bit field of each record (the inverse of :func:`_bit_words`)."""
    lo, hi = field.word_indices
    records[:, lo] = (values & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    records[:, hi] = (values >> np.uint64(32)).astype(np.uint32)


def _loop_records(records: np.ndarray, pos: int, k: int, t: int) -> tuple[np.ndarray, int] | None:
    """The loop for the ``k`` records at ``pos`` (loop record, bases, steps) and its trips: the most of
    the ``t`` copies found that it runs exactly (fewer where a copy breaks the XOR steps, or a hash
    collision made the copies look affine), or None if that is fewer than pays for a loop."""
    base, step = _base_and_steps(records, pos, k, t)
    expanded = isa.expand_queue(np.concatenate([isa.make_loop_record(k, t)[None], base, step]))
    equal = (expanded == records[pos : pos + k * t]).reshape(t, -1).all(axis=1)
    trips = t if equal.all() else int(np.argmin(equal))
    if _records_saved(k, trips) <= 0:
        return None
    return np.concatenate([isa.make_loop_record(k, trips)[None], base, step]), trips


def _records_saved(body: int, trips: int) -> int:
    """What a loop of ``trips`` runs of a ``body``-instruction body saves: its instructions less its
    records (the loop record, the bases, the steps)."""
    return trips * body - 1 - 2 * body


def _best_loop(records: np.ndarray, pos: int, bodies: np.ndarray, trips: np.ndarray,
               saved: np.ndarray) -> tuple[np.ndarray, int] | None:
    """The loop at ``pos`` that saves the most records, trying the body lengths by the records they
    would save (``saved``, from ``trips`` copies) until none left could beat the best one found: a body
    whose copies break the XOR steps of the dependency-bit words part-way saves less than it promised."""
    best, best_saved = None, 0
    for i in np.argsort(-saved, kind="stable").tolist():
        if saved[i] <= best_saved:
            break
        k = int(bodies[i])
        loop = _loop_records(records, pos, k, int(trips[i]))
        if loop is not None and _records_saved(k, loop[1]) > best_saved:
            best, best_saved = loop, _records_saved(k, loop[1])
    return best


def reroll_queue(records: np.ndarray, max_body: int = DEFAULT_MAX_BODY) -> np.ndarray:
    """The queue's records with every profitable affine repetition made a loop.

    ``records`` is an ``(N, 32)`` uint32 array without loop records; the
    result executes exactly the same instructions (``isa.expand_queue`` of it
    equals ``records``).
    """
    n = len(records)
    if n < 4:
        return records
    records = np.ascontiguousarray(records)
    # a loop pays for itself from three trips on (k bases, k steps, one loop record)
    bodies = np.arange(1, min(max_body, n // 3) + 1)
    per_block = max(1, _BLOCK_ELEMENTS // n)
    h, bits = _row_hashes(records), _BitWords.of(records)
    trips = np.concatenate([_trips(records, h, bits, bodies[i : i + per_block])
                            for i in range(0, len(bodies), per_block)])
    sizes = bodies[:, None]
    saved = np.where(trips >= 2, _records_saved(sizes, trips), 0)  # type: ignore[arg-type]
    best_k = saved.argmax(axis=0)
    best_saved = saved[best_k, np.arange(n)]
    profitable = np.flatnonzero(best_saved > 0)  # the positions where a loop may start
    out: list[np.ndarray] = []
    pos = 0
    while pos < n:
        if best_saved[pos] <= 0:
            later = int(np.searchsorted(profitable, pos))  # the first profitable position after ``pos``
            nxt = int(profitable[later]) if later < len(profitable) else n
            out.append(records[pos:nxt])
            pos = nxt
            continue
        loop = _best_loop(records, pos, bodies, trips[:, pos], saved[:, pos])
        if loop is None:
            out.append(records[pos : pos + 1])
            pos += 1
            continue
        rolled, runs = loop
        out.append(rolled)
        pos += isa.LOOP_BODY.get(rolled[0]) * runs
    return np.concatenate(out)
