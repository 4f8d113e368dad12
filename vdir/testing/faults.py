"""Synchronisation faults planted in an encoded program, to test the simulator as an oracle.

Each fault class is one way a compiler (or a hand-written queue) gets the
synchronisation of a correct program wrong:

* ``drop-signal``: a micro-op no longer toggles one of its dependency bits;
* ``drop-wait-bit``: a micro-op no longer waits on one of its bits;
* ``flip-parity``: a micro-op waits for the other value of one of its bits;
* ``swap-neighbours``: two neighbours of one queue that share a shared-memory
  slot (a producer and its consumer, a reader and the next writer) trade
  places, each keeping its own waits and signals;
* ``reuse-bit-early``: an edge is moved onto another bit while that bit's
  previous edge is still pending in program order (the waiters behind it
  are renumbered consistently, the pending waiter is not: the mistake of a
  bit allocator that frees a bit when its producer signals);
* ``drop-release``: a micro-op no longer releases its global counter;
* ``shorten-counter-wait``: a counter wait asks for one release less.

:func:`enumerate_faults` lists every fault of each class that a loop-free
program (:meth:`~vdir.isa.EncodedProgram.without_loops`) admits;
:func:`sample_faults` picks a few deterministically; :meth:`Fault.apply`
returns the faulted copy. Program order, where a class needs it, is the
order of the micro-op ids on each SM (as the simulator's provenance check
reads it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vdir import isa

#: The fault classes, in the order reports list them.
FAULT_CLASSES = (
    "drop-signal",
    "drop-wait-bit",
    "flip-parity",
    "swap-neighbours",
    "reuse-bit-early",
    "drop-release",
    "shorten-counter-wait",
)


@dataclass(frozen=True)
class Fault:
    """One planted fault: field edits on instruction rows, or two rows swapped."""

    kind: str
    description: str
    #: (row, field, new value) edits
    edits: tuple[tuple[int, isa.Field, int], ...] = ()
    #: rows that trade places (neighbours of one queue)
    swap: tuple[int, int] | None = None

    def apply(self, program: isa.EncodedProgram) -> isa.EncodedProgram:
        """A copy of the loop-free ``program`` with the fault in it."""
        instrs = np.array(program.instrs, dtype=np.uint32, copy=True)
        for row, f, value in self.edits:
            f.set(instrs[row], value)
        if self.swap is not None:
            a, b = self.swap
            instrs[[a, b]] = instrs[[b, a]]
        return dataclasses.replace(program, instrs=instrs)


@dataclass(frozen=True)
class _Row:
    """What fault enumeration needs of one instruction row."""

    row: int
    sm: int
    engine: int
    uop_id: int
    opcode: int
    wait_mask: int
    wait_parity: int
    signal_mask: int
    reads: frozenset[int]  # shared-memory blocks read
    writes: frozenset[int]  # shared-memory blocks written


def _blocks(smem: int, nbytes: int) -> frozenset[int]:
    block = 128
    return frozenset(range(smem // block, -(-(smem + nbytes) // block)))


def _transfer_bytes(words: np.ndarray) -> int:
    return isa.ROWS.get(words) * isa.ROW_BYTES.get(words)


def _compute_blocks(words: np.ndarray) -> tuple[frozenset[int], frozenset[int]]:
    """Blocks a compute reads and writes, from the family's decoding of its words."""
    from vdir.families import ParamWords, family_by_opcode

    family = family_by_opcode(isa.FAMILY.get(words))
    if family is None:
        return frozenset(), frozenset()
    sig = family.decode_operands(ParamWords.read(words))
    reads: frozenset[int] = frozenset()
    for f, tile in zip(isa.IN_SMEM, sig.inputs, strict=False):
        reads |= _blocks(f.get(words), tile.nbytes)
    return reads, _blocks(isa.OUT_SMEM.get(words), sig.result.nbytes)


def _rows(program: isa.EncodedProgram) -> list[_Row]:
    """Every instruction row of a loop-free program with its queue and accesses."""
    out = []
    for sm, queues in enumerate(program.queues):
        for engine, (start, count) in enumerate(queues):
            for row in range(start, start + count):
                w = program.instrs[row]
                opcode = isa.OPCODE.get(w)
                reads: frozenset[int] = frozenset()
                writes: frozenset[int] = frozenset()
                if opcode == isa.OP_LOAD:
                    writes = _blocks(isa.SMEM.get(w), _transfer_bytes(w))
                elif opcode == isa.OP_STORE:
                    reads = _blocks(isa.SMEM.get(w), _transfer_bytes(w))
                elif opcode == isa.OP_COMPUTE:
                    reads, writes = _compute_blocks(w)
                out.append(_Row(row, sm, engine, isa.UOP_ID.get(w), opcode, isa.WAIT_MASK.get(w),
                                isa.WAIT_PARITY.get(w), isa.SIGNAL_MASK.get(w), reads, writes))
    return out


def _label(program: isa.EncodedProgram, r: _Row) -> str:
    name = program.uop_names.get(r.uop_id, f"micro-op #{r.uop_id}")
    return f"{name} (SM {r.sm}, {program.engine_name(r.engine)} engine)"


def _bits(mask: int) -> list[int]:
    return [b for b in range(64) if mask >> b & 1]


def enumerate_faults(program: isa.EncodedProgram) -> dict[str, list[Fault]]:
    """Every fault of each class (:data:`FAULT_CLASSES`) the loop-free ``program`` admits."""
    if program.has_loops:
        raise ValueError("plant faults in program.without_loops(): rows must be executed instructions")
    rows = _rows(program)
    faults: dict[str, list[Fault]] = {kind: [] for kind in FAULT_CLASSES}
    for r in rows:
        label = _label(program, r)
        for bit in _bits(r.signal_mask):
            faults["drop-signal"].append(Fault("drop-signal", f"{label} does not toggle bit {bit}",
                                               ((r.row, isa.SIGNAL_MASK, r.signal_mask & ~(1 << bit)),)))
        for bit in _bits(r.wait_mask):
            faults["drop-wait-bit"].append(Fault(
                "drop-wait-bit", f"{label} does not wait on bit {bit}",
                ((r.row, isa.WAIT_MASK, r.wait_mask & ~(1 << bit)), (r.row, isa.WAIT_PARITY, r.wait_parity & ~(1 << bit))),
            ))
            faults["flip-parity"].append(Fault("flip-parity", f"{label} waits for the other parity of bit {bit}",
                                               ((r.row, isa.WAIT_PARITY, r.wait_parity ^ (1 << bit)),)))
        words = program.instrs[r.row]
        if isa.RELEASE_COUNTER.get(words):
            faults["drop-release"].append(Fault("drop-release", f"{label} does not release its counter",
                                                ((r.row, isa.RELEASE_COUNTER, 0),)))
        if isa.WAIT_COUNTER.get(words) and isa.WAIT_COUNT.get(words):
            count = isa.WAIT_COUNT.get(words)
            faults["shorten-counter-wait"].append(Fault(
                "shorten-counter-wait", f"{label} waits for {count - 1} releases instead of {count}",
                ((r.row, isa.WAIT_COUNT, count - 1),),
            ))
    faults["swap-neighbours"] = _swaps(program, rows)
    faults["reuse-bit-early"] = _early_reuses(program, rows)
    return faults


def _swaps(program: isa.EncodedProgram, rows: list[_Row]) -> list[Fault]:
    """Neighbours of one queue that share a shared-memory block, one of them writing it."""
    out = []
    for a, b in zip(rows, rows[1:], strict=False):
        if (a.sm, a.engine) != (b.sm, b.engine):
            continue
        if a.writes & (b.reads | b.writes) or b.writes & a.reads:
            out.append(Fault("swap-neighbours", f"{_label(program, b)} runs before {_label(program, a)}",
                             swap=(a.row, b.row)))
    return out


def _early_reuses(program: isa.EncodedProgram, rows: list[_Row]) -> list[Fault]:
    """For each producer, its first bit's edge moved onto the bit whose pending edge is latest."""
    out = []
    for sm in range(program.num_sms):
        order = sorted((r for r in rows if r.sm == sm), key=lambda r: (r.uop_id, r.row))
        for i, producer in enumerate(order):
            fault = _early_reuse(program, order, i, producer)
            if fault is not None:
                out.append(fault)
    return out


def _waiters(order: Sequence[_Row], toggle: int, bit: int) -> list[int]:
    """Indices (in ``order``) of the waiters on ``bit`` after the toggle at index ``toggle``, up to the next."""
    found = []
    for j in range(toggle + 1, len(order)):
        if order[j].wait_mask >> bit & 1:
            found.append(j)
        if order[j].signal_mask >> bit & 1:
            break
    return found


def _early_reuse(program: isa.EncodedProgram, order: Sequence[_Row], i: int, producer: _Row) -> Fault | None:
    """Move ``producer``'s edge on its first bit onto the bit whose last edge before it is still pending."""
    if not producer.signal_mask:
        return None
    old_bit = _bits(producer.signal_mask)[0]
    moved = _waiters(order, i, old_bit)
    if not moved:
        return None
    best = None  # (index of the bit's last toggle before the producer, bit, pending waiters)
    for bit in range(64):
        if bit == old_bit or producer.signal_mask >> bit & 1 or any(order[j].wait_mask >> bit & 1 for j in moved):
            continue
        last = next((k for k in range(i - 1, -1, -1) if order[k].signal_mask >> bit & 1), None)
        if last is None:
            continue
        pending = [j for j in _waiters(order, last, bit) if j > i]
        if pending and (best is None or last > best[0]):
            best = (last, bit, pending)
    if best is None:
        return None
    _, new_bit, pending = best
    masks = {r.row: [r.wait_mask, r.wait_parity, r.signal_mask] for r in order}
    masks[producer.row][2] = producer.signal_mask & ~(1 << old_bit) | 1 << new_bit
    pending_parity = order[pending[0]].wait_parity >> new_bit & 1
    for j in moved:  # they wait for the producer's toggle on the new bit
        m = masks[order[j].row]
        m[0] = m[0] & ~(1 << old_bit) | 1 << new_bit
        m[1] = m[1] & ~(1 << old_bit) & ~(1 << new_bit) | (pending_parity ^ 1) << new_bit
    for j in range(i + 1, len(order)):  # later waiters see one toggle more on the new bit, one less on the old
        if j in moved or j in pending:
            continue
        for bit in (new_bit, old_bit):
            if order[j].wait_mask >> bit & 1:
                masks[order[j].row][1] ^= 1 << bit
    edits = []
    for r in order:
        wait, parity, signal = masks[r.row]
        for f, old, new in ((isa.WAIT_MASK, r.wait_mask, wait), (isa.WAIT_PARITY, r.wait_parity, parity),
                            (isa.SIGNAL_MASK, r.signal_mask, signal)):
            if old != new:
                edits.append((r.row, f, new))
    pending_label = _label(program, order[pending[0]])
    return Fault("reuse-bit-early", f"{_label(program, producer)} signals bit {new_bit} instead of {old_bit} "
                 f"before {pending_label} has waited on it", tuple(edits))


def sample_faults(faults: Sequence[Fault], count: int) -> list[Fault]:
    """At most ``count`` faults spread evenly over ``faults`` (deterministic)."""
    if len(faults) <= count:
        return list(faults)
    return [faults[k * len(faults) // count] for k in range(count)]
