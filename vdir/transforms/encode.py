"""``vdir-encode``: the laid-out program -> the binary micro-op ISA.

Each node becomes one 32-word instruction in its (SM, engine) queue, in queue
order (``docs/isa.md`` documents every field); loads and stores also get
their tensor-copy form (``isa.assign_tensor_maps``). A node that waits on more than
one global counter gets a ``nop`` before it for each extra wait, and one that
releases more than one counter gets a ``nop`` after it per extra release; the
in-order engines make both equivalent to the node doing it itself. Then each
queue is rerolled: a block of instructions that repeats with every word
affine in the repetition becomes one loop record, its bases and its steps
(``vdir.analysis.reroll``; option ``reroll=false`` keeps every instruction
a record). With ``l2-prefetch`` bytes, each load queue asks L2 ahead for
the weight tiles behind its cross-SM waits (``vdir.analysis.l2_prefetch``):
a ``prefetch`` record per tile, before the waiting load. The program is
replaced by a ``vdir.encoded_program`` op; the GPU kernel and the CPU
simulator execute exactly these words.
"""

from __future__ import annotations

import array
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.passes import ModulePass

from vdir import isa
from vdir.analysis.flag_words import FlagWordLayout, flag_word_layout
from vdir.analysis.graph import Graph, Node, build_graph, counterparts, single_program
from vdir.analysis.l2_prefetch import DEFAULT_BUDGET, plan_prefetches
from vdir.analysis.parallel import run_in_children
from vdir.analysis.queues import QUEUE_ORDER, check_queue_positions_follow_program_order, queues_of
from vdir.analysis.reroll import FoundLoop, find_loops, with_loops
from vdir.analysis.runtime_values import RuntimeSource
from vdir.analysis.stages import require_option_in_range
from vdir.analysis.stream_holds import stores_releasing_first
from vdir.diagnostics import PassFailure, VdirError
from vdir.dialects.vdir import EncodedProgramOp
from vdir.families import DTYPE_BYTES, ComputeSignature, get_family
from vdir.target import EngineKind


def _mask(bits) -> int:
    m = 0
    for b in bits:
        m |= 1 << b
    return m


def _row(opcode: int, uop_id: int) -> list[int]:
    row = [0] * isa.INSTR_WORDS
    isa.OPCODE.set(row, opcode)
    isa.UOP_ID.set(row, uop_id)
    return row


def _sync_fields(row: list[int], node: Node, counter: tuple[int, int] | None, release: int | None) -> None:
    mask = parity = 0
    for bit, value in node.wait_bits.items():
        mask |= 1 << bit
        parity |= value << bit
    isa.WAIT_MASK.set(row, mask)
    isa.WAIT_PARITY.set(row, parity)
    isa.SIGNAL_MASK.set(row, _mask(node.signal_bits))
    if counter is not None:
        isa.WAIT_COUNTER.set(row, counter[0] + 1)
        isa.WAIT_COUNT.set(row, counter[1])
    if release is not None:
        isa.RELEASE_COUNTER.set(row, release + 1)


def _source_code(source: RuntimeSource, node: Node) -> int:
    """The ``isa.SOURCE_*`` code of a runtime value's source."""
    if source.is_scalar:
        return isa.SOURCE_SCALAR
    if source.buffer >= isa.MAX_SOURCE_BUFFERS:
        raise PassFailure(
            f"{node.name} reads a runtime value from buffer #{source.buffer}; the ISA addresses the "
            f"first {isa.MAX_SOURCE_BUFFERS} buffers",
            loc=node.loc,
        )
    return isa.SOURCE_BUFFER0 + source.buffer




def _memory_fields(row: list[int], node: Node, graph: Graph, smem: int) -> None:
    arg = graph.args[node.buffer]
    es = DTYPE_BYTES[arg.dtype]
    rows, cols = node.tile.shape  # type: ignore[union-attr]
    offset = node.row * arg.row_bytes + node.col * es
    isa.BUFFER.set(row, node.buffer)
    isa.ROWS.set(row, rows)
    isa.ROW_BYTES.set(row, cols * es)
    isa.ROW_STRIDE.set(row, arg.row_bytes)
    isa.SMEM.set(row, smem)
    if node.dyn is not None:
        # offset + (coeff * v + const) * unit; the constant folds into the
        # u64 offset (two's complement: only the sum with v's term is in bounds)
        unit = arg.row_bytes if node.dyn_axis == 0 else es
        offset += node.dyn.const * unit
        isa.DYN_SOURCE.set(row, _source_code(node.dyn.source, node))
        isa.DYN_INDEX.set(row, node.dyn.source.index)
        isa.DYN_SCALE.set(row, node.dyn.coeff * unit)
        isa.DYN_MIN.set(row, node.dyn_range[0])
        isa.DYN_MAX.set(row, node.dyn_range[1])
    isa.GLOBAL_OFFSET.set(row, offset % 2**64)


def _flag_word_record(row: list[int], node: Node, layout: FlagWordLayout, out: list[list[int]]) -> list[int]:
    """The records of flag-word load or store ``row`` (``isa.TRANSFER_FLAG_WORDS``): its region moved to
    its buffer's flag words (``layout``). A load is that record (returned), and so is a store into a
    buffer only flag words carry (``layout.words_only``: it keeps the store's waits, signals and
    releases). Any other store writes the words first, with its waits (appended to ``out``: the words
    leave as soon as the tile is ready), then its plain record (returned: the buffer stays the program's
    output), which signals and releases what the store does."""
    words = row[:]
    offset = isa.GLOBAL_OFFSET.get(words)
    isa.GLOBAL_OFFSET.set(words, layout.offsets[node.buffer] + 2 * offset)
    isa.TRANSFER_FLAGS.set(words, isa.TRANSFER_FLAG_WORDS)
    if node.kind == "load" or node.buffer in layout.words_only:
        return words
    for field in (isa.SIGNAL_MASK, isa.RELEASE_COUNTER):
        field.set(words, 0)
    out.append(words)
    for field in (isa.WAIT_MASK, isa.WAIT_PARITY, isa.WAIT_COUNTER, isa.WAIT_COUNT):
        field.set(row, 0)
    return row


def _guard_fields(row: list[int], node: Node) -> None:
    """The runtime condition's source and ``coeff * v + const >= 0``."""
    guard = node.guard
    if guard is None:
        return
    isa.GUARD_SOURCE.set(row, _source_code(guard.source, node))
    isa.GUARD_INDEX.set(row, guard.source.index)
    isa.GUARD_COEFF.set(row, guard.coeff)
    isa.GUARD_CONST.set(row, guard.const)


def _compute_fields(row: list[int], node: Node) -> None:
    family = get_family(node.family)
    isa.FAMILY.set(row, family.opcode)
    isa.OUT_SMEM.set(row, node.smem)
    for field, src in zip(isa.IN_SMEM, node.inputs, strict=False):
        field.set(row, src.smem)
    isa.NUM_INPUTS.set(row, len(node.inputs))
    signature = ComputeSignature(tuple(i.tile for i in node.inputs), node.tile, node.params)  # type: ignore[arg-type]
    family.encode_params(signature).write(row)


def _check_input_count(node: Node) -> None:
    """A compute names at most ``isa.MAX_INPUTS`` input tiles (the verifier rejects more)."""
    if len(node.inputs) > isa.MAX_INPUTS:
        raise PassFailure(
            f"{node.name} has {len(node.inputs)} input tiles; an instruction holds at most {isa.MAX_INPUTS}",
            loc=node.loc,
        )


def encode_node(node: Node, graph: Graph, flag_words: FlagWordLayout | None = None,
                release_first: bool = False) -> list[list[int]]:
    """The instruction words for one node: extra counter waits, itself, extra releases.

    ``flag_words``: where each buffer's flag words lie (:func:`flag_word_layout`; None: worked out here).
    ``release_first``: a store that releases its counter before its bits
    (``isa.TRANSFER_RELEASE_FIRST``, :func:`~vdir.analysis.stream_holds.stores_releasing_first`).
    A value that does not fit its instruction field (a row stride, a
    condition's coefficient, ...) is a located error naming the micro-op.
    """
    try:
        if node.flag_words and flag_words is None:
            flag_words = flag_word_layout(graph)
        return _encode_node(node, graph, flag_words, release_first)
    except ValueError as e:
        raise PassFailure(f"{node.name} cannot be encoded: {e}", loc=node.loc) from None


def _reduce_code(node: Node, graph: Graph) -> int:
    """The REDUCE code of reducing store ``node``: its kind on its buffer's element type."""
    assert node.reduce is not None
    dtype = graph.args[node.buffer].dtype
    code = isa.reduce_code(node.reduce.value, dtype)
    if code is None:
        raise ValueError(f"no 'reduce {node.reduce.value}' combines {dtype} elements")
    return code


def _encode_node(node: Node, graph: Graph, flag_words: FlagWordLayout | None,
                 release_first: bool) -> list[list[int]]:
    waits = node.wait_counters
    releases = node.release_counters
    out: list[list[int]] = []
    for counter, count in waits[1:]:
        nop = _row(isa.OP_NOP, node.id)
        isa.WAIT_COUNTER.set(nop, counter + 1)
        isa.WAIT_COUNT.set(nop, count)
        out.append(nop)
    row = _row(isa.OPCODE_OF_CLASS[node.kind], node.id)
    _sync_fields(row, node, waits[0] if waits else None, releases[0] if releases else None)
    _guard_fields(row, node)
    if node.kind == "load":
        _memory_fields(row, node, graph, node.smem)
    elif node.kind == "store":
        _memory_fields(row, node, graph, node.inputs[0].smem)
        if node.reduce is not None:
            isa.REDUCE.set(row, _reduce_code(node, graph))
    else:
        _check_input_count(node)
        _compute_fields(row, node)
    if node.flag_words:
        assert flag_words is not None, "encode_node works the layout out for a flag-word node"
        row = _flag_word_record(row, node, flag_words, out)
    out.append(row)
    for extra in releases[1:]:
        nop = _row(isa.OP_NOP, node.id)
        isa.RELEASE_COUNTER.set(nop, extra + 1)
        out.append(nop)
    if release_first and node.kind == "store" and releases:
        _release_before_bits(out[-len(releases):])
    return out


def _release_before_bits(records: list[list[int]]) -> None:
    """Mark a store's ``records`` (its own, then a ``nop`` per extra counter) to release before they
    toggle (``isa.TRANSFER_RELEASE_FIRST``), the store's bits moved to the last of them: every release
    then comes before the bits (``vdir.analysis.stream_holds``)."""
    bits = isa.SIGNAL_MASK.get(records[0])
    isa.SIGNAL_MASK.set(records[0], 0)
    isa.SIGNAL_MASK.set(records[-1], bits)
    for record in records:
        isa.TRANSFER_FLAGS.set(record, isa.TRANSFER_FLAGS.get(record) | isa.TRANSFER_RELEASE_FIRST)


class _Unhandled(VdirError):
    """A node the fast path does not handle: it is encoded field by field instead (never leaves this module)."""


_U32_MAX = 0xFFFFFFFF
#: the typecode of a 32-bit unsigned ``array``: a record of the fast path, whose item assignment refuses a value
#: that does not fit a word (OverflowError) as the fields' own range checks do
_U32_TYPE = next(t for t in "IL" if array.array(t).itemsize == 4)
#: a record of zeros (copied for each nop)
_ZERO_RECORD = array.array(_U32_TYPE, bytes(isa.INSTR_BYTES))
#: the words the fast path writes, as module constants (read for every node)
_W_UOP_ID = isa.W_UOP_ID
_W_WAIT_COUNTER = isa.W_WAIT_COUNTER
_W_WAIT_COUNT = isa.W_WAIT_COUNT
_W_OUT_SMEM = isa.W_OUT_SMEM
_W_IN_SMEM = isa.W_IN_SMEM
_W_SMEM = isa.W_SMEM
_W_GLOBAL_OFFSET = isa.W_GLOBAL_OFFSET
_W_WAIT_MASK = isa.W_WAIT_MASK
_W_WAIT_PARITY = isa.W_WAIT_PARITY
_W_SIGNAL_MASK = isa.W_SIGNAL_MASK
_W_RELEASE_COUNTER = isa.W_RELEASE_COUNTER
_OPCODE_OF_CLASS, _MAX_INPUTS = isa.OPCODE_OF_CLASS, isa.MAX_INPUTS


def _check_fast_layout() -> None:
    """The words :class:`_NodeEncoder` writes directly are whole u32 (or u64) fields, as it assumes."""
    for f in (isa.WAIT_COUNTER, isa.WAIT_COUNT, isa.RELEASE_COUNTER, isa.UOP_ID, isa.SMEM, isa.OUT_SMEM, *isa.IN_SMEM):
        assert (f.nwords, f.bits, f.signed) == (1, 32, False), f.name
    for f in (isa.WAIT_MASK, isa.WAIT_PARITY, isa.SIGNAL_MASK, isa.GLOBAL_OFFSET):
        assert f.nwords == 2, f.name
    assert (isa.OPCODE.shift, isa.OP_NOP) == (0, 0)


_check_fast_layout()


def first_trip_counts(graph: Graph) -> dict[int, int]:
    """Node id -> the wait count to encode for a first-trip micro-op of the layer loop that waits on no
    counter where its second-trip counterpart does (the first layer reads the program's input, the
    others the layer before): the count of its counterpart. A count without a counter
    (``wait_counter`` 0) is never read, so the first trip's record steps into the second's as the
    loop's do, and the encoder can fold it in (``docs/isa.md``, Loops)."""
    if not graph.trips_kept:
        return {}
    second = counterparts(graph.nodes, 1)
    out: dict[int, int] = {}
    for n in graph.nodes:
        m = second.get((n.sm, n.template)) if n.trip == 0 and not n.wait_counters else None
        if m is not None and m.wait_counters:
            out[n.id] = m.wait_counters[0][1]
    return out


class _NodeEncoder:
    """:func:`encode_node`'s words, appended to one 32-bit array, with the words fixed by a micro-op's
    template computed once.

    A 16-layer program repeats each micro-op of a layer in every layer and on
    every SM: the opcode and region words of a load or store (buffer, rows,
    row bytes, stride) depend only on its kind, buffer and tile, and a
    compute's family and parameter words only on its family, parameters and
    tiles. Those words come
    from a template record, made by the field-by-field encoder, per distinct
    key; the instance's own words (id, synchronisation, shared-memory
    offsets, global offset) are written directly into a copy of it, a 32-bit
    ``array`` whose item assignment refuses a value that does not fit its
    word, then appended to :attr:`words` (every record of the program, in
    the order encoded: no record is kept as an object of its own). A node
    with a runtime offset, or with a value out of range, is encoded field by
    field (:func:`encode_node`), which also reports errors.
    """

    def __init__(self, graph: Graph, first_trips: dict[int, int] | None = None) -> None:
        self.graph = graph
        self.regions: dict[tuple, array.array] = {}
        self.computes: dict[tuple, array.array] = {}
        self.args = [(a.row_bytes, DTYPE_BYTES[a.dtype]) for a in graph.args]
        #: the records encoded so far, word after word
        self.words = array.array(_U32_TYPE)
        self.first_trip_counts = first_trip_counts(graph) if first_trips is None else first_trips
        #: where each buffer's flag words lie in the sync block (the counters are assigned by now)
        self.flag_words = flag_word_layout(graph)
        #: the ids of the stores that release their counter before their bits (set per SM by
        #: :func:`encode_sms`: :func:`~vdir.analysis.stream_holds.stores_releasing_first`)
        self.release_first: set[int] = set()

    def __call__(self, node: Node) -> None:
        """Append ``node``'s records (:func:`encode_node`) to :attr:`words`."""
        self.encode_all((node,))

    def encode_all(self, nodes: Iterable[Node]) -> None:
        """Append the records of each of ``nodes``, in order (one call for a whole queue)."""
        words, fast = self.words, self._encode
        for node in nodes:
            start = len(words)
            try:
                fast(node)
            except Exception:
                del words[start:]  # the records of the fast path's attempt
                self.append(encode_node(node, self.graph, self.flag_words, node.id in self.release_first))

    def append(self, records: list[list[int]]) -> None:
        """Append records made field by field (their words already range-checked) to :attr:`words`."""
        for record in records:
            self.words.extend(record)

    @property
    def count(self) -> int:
        """The number of records in :attr:`words`."""
        return len(self.words) // isa.INSTR_WORDS

    def instrs(self) -> np.ndarray:
        """:attr:`words` as an ``(N, INSTR_WORDS)`` uint32 array (sharing their memory)."""
        return np.frombuffer(self.words, dtype=np.uint32).reshape(-1, isa.INSTR_WORDS)

    def _region_template(self, node: Node) -> array.array:
        # ids: tile signatures hash in Python, and the nodes keep them alive
        key = (node.buffer, id(node.tile), node.kind)
        record = self.regions.get(key)
        if record is None:
            row = _row(_OPCODE_OF_CLASS[node.kind], 0)
            arg = self.graph.args[node.buffer]
            rows, cols = node.tile.shape  # type: ignore[union-attr]
            isa.BUFFER.set(row, node.buffer)
            isa.ROWS.set(row, rows)
            isa.ROW_BYTES.set(row, cols * DTYPE_BYTES[arg.dtype])
            isa.ROW_STRIDE.set(row, arg.row_bytes)
            record = self.regions[key] = array.array(_U32_TYPE, row)
        return record

    def _compute_template(self, node: Node) -> array.array:
        key = (id(node.params), node.family, id(node.tile), *[id(i.tile) for i in node.inputs])
        record = self.computes.get(key)
        if record is None:
            inputs = tuple(i.tile for i in node.inputs)
            row = _row(isa.OP_COMPUTE, 0)
            family = get_family(node.family)
            isa.FAMILY.set(row, family.opcode)
            isa.NUM_INPUTS.set(row, len(inputs))
            family.encode_params(ComputeSignature(inputs, node.tile, node.params)).write(row)  # type: ignore[arg-type]
            record = self.computes[key] = array.array(_U32_TYPE, row)
        return record

    def _encode(self, node: Node) -> None:
        uid = node.id
        waits = node.wait_counters
        releases = node.release_counters
        words = self.words
        for counter, count in waits[1:] if len(waits) > 1 else ():
            nop = _ZERO_RECORD[:]
            nop[_W_UOP_ID], nop[_W_WAIT_COUNTER], nop[_W_WAIT_COUNT] = uid, counter + 1, count
            words += nop
        kind = node.kind
        if kind == "compute":
            inputs = node.inputs
            if len(inputs) > _MAX_INPUTS:
                raise _Unhandled
            key = (id(node.params), node.family, id(node.tile), *[id(i.tile) for i in inputs])
            row = (self.computes.get(key) or self._compute_template(node))[:]
            row[_W_OUT_SMEM] = node.smem
            w = _W_IN_SMEM
            for i in inputs:
                row[w] = i.smem
                w += 1
        else:
            if node.dyn is not None or node.reduce is not None or node.flag_words or uid in self.release_first:
                raise _Unhandled  # (a store that releases first: its records are _release_before_bits's)
            row = (self.regions.get((node.buffer, id(node.tile), kind)) or self._region_template(node))[:]
            row[_W_SMEM] = node.smem if kind == "load" else node.inputs[0].smem
            row_bytes, es = self.args[node.buffer]
            offset = (node.row * row_bytes + node.col * es) % 2**64
            row[_W_GLOBAL_OFFSET], row[_W_GLOBAL_OFFSET + 1] = offset & _U32_MAX, offset >> 32
        row[_W_UOP_ID] = uid
        wait_bits = node.wait_bits
        if wait_bits:
            mask = parity = 0
            for bit, value in wait_bits.items():
                mask |= 1 << bit
                parity |= value << bit
            # a mask beyond 64 bits leaves a high word beyond 32: refused
            row[_W_WAIT_MASK], row[_W_WAIT_MASK + 1] = mask & _U32_MAX, mask >> 32
            row[_W_WAIT_PARITY], row[_W_WAIT_PARITY + 1] = parity & _U32_MAX, parity >> 32
        signal_bits = node.signal_bits
        if signal_bits:
            mask = 1 << signal_bits[0] if len(signal_bits) == 1 else _mask(signal_bits)
            row[_W_SIGNAL_MASK], row[_W_SIGNAL_MASK + 1] = mask & _U32_MAX, mask >> 32
        if waits:
            counter, count = waits[0]
            row[_W_WAIT_COUNTER], row[_W_WAIT_COUNT] = counter + 1, count
        elif self.first_trip_counts and uid in self.first_trip_counts:  # no counter: the count is the loop's (see first_trip_counts)
            row[_W_WAIT_COUNT] = self.first_trip_counts[uid]
        if releases:
            row[_W_RELEASE_COUNTER] = releases[0] + 1
        if node.guard is not None:
            _guard_fields(row, node)  # type: ignore[arg-type]
        words += row
        for extra in releases[1:] if len(releases) > 1 else ():
            nop = _ZERO_RECORD[:]
            nop[_W_UOP_ID], nop[_W_RELEASE_COUNTER] = uid, extra + 1
            words += nop


def prefetch_record(node: Node, graph: Graph) -> list[int]:
    """A ``prefetch`` record of load ``node``'s region (named by the load's id; no tile, no sync)."""
    row = _row(isa.OP_PREFETCH, node.id)
    _memory_fields(row, node, graph, 0)
    return row


def encode_queue(queue: list[Node], graph: Graph, encoder: _NodeEncoder,
                 prefetches: dict[int, list[Node]] | None = None) -> None:
    """Append the records of one queue to ``encoder``'s, with ``prefetches[node.id]``'s prefetch
    records before a node.

    ``encoder``: one shared by the queues of a program (its templates are kept).
    """
    if not prefetches:
        encoder.encode_all(queue)
        return
    for node in queue:
        encoder.append([prefetch_record(p, graph) for p in prefetches.get(node.id, ())])
        encoder(node)


def prefetches_of_sm(graph: Graph, queues: dict[tuple[int, str], list[Node]], sm: int,
                     l2_prefetch: int) -> dict[int, list[Node]]:
    """The loads whose prefetch records go before each cross-SM waiting load of ``sm`` (by its id).

    The plan (``vdir.analysis.l2_prefetch``) reads the SM's load engines as
    one stream in queue order: with a stream engine the weight tiles it asks
    for sit in the stream queue, and the records go to the waiting load's.
    """
    if l2_prefetch <= 0:
        return {}
    engines = [graph.target.engine_names[i] for i in graph.target.load_engines]
    loads = sorted((n for e in engines for n in queues.get((sm, e), [])), key=QUEUE_ORDER)
    return {loads[i].id: chosen for i, chosen in plan_prefetches(loads, l2_prefetch).items()}


def reroll_queues(instrs: np.ndarray, table: list[list[tuple[int, int]]]) -> tuple[np.ndarray, list[list[tuple[int, int]]]]:
    """Each queue of ``instrs`` rerolled into loops (``vdir.analysis.reroll``), and the new queue table.

    Checks that every queue still executes exactly its instructions. Where
    the program is large the search is split over processes by SM
    (``vdir.analysis.parallel``), which send back only the loops they found.
    """
    def job(sms: list[int]) -> list[list[list[FoundLoop]]]:
        return _loops_of_sms(instrs, [table[sm] for sm in sms])

    parts = run_in_children(range(len(table)), job, lambda sm: sum(c for _f, c in table[sm]), len(instrs))
    loops = _loops_of_sms(instrs, table) if parts is None else [sm for part in parts for sm in part]
    pieces: list[np.ndarray] = []
    new_table: list[list[tuple[int, int]]] = []
    start = 0
    for sm_queues, sm_loops in zip(table, loops, strict=True):
        new_table.append([])
        for (first, count), queue_loops in zip(sm_queues, sm_loops, strict=True):
            records = with_loops(instrs[first : first + count], queue_loops)
            pieces.append(records)
            new_table[-1].append((start, len(records)))
            start += len(records)
    rows = np.concatenate(pieces) if pieces else instrs
    return rows.reshape(-1, isa.INSTR_WORDS), new_table


def _loops_of_sms(instrs: np.ndarray, table: list[list[tuple[int, int]]]) -> list[list[list[FoundLoop]]]:
    """The loops of each queue of the SMs of ``table`` (some of the program's), each queue checked to
    execute exactly its instructions once rerolled."""
    loops = []
    for sm_queues in table:
        loops.append([])
        for first, count in sm_queues:
            queue = instrs[first : first + count]
            found = find_loops(queue)
            if not np.array_equal(isa.expand_queue(with_loops(queue, found)), queue):
                raise AssertionError("rerolled queue does not execute its instructions")
            loops[-1].append(found)
    return loops


def join_chunks(parts: list[tuple[np.ndarray, list[list[tuple[int, int]]]]]) -> tuple[np.ndarray, list[list[tuple[int, int]]]]:
    """The records and queue table of consecutive chunks of SMs, each counted from its own first record."""
    if len(parts) == 1:  # one chunk: its records as they are, not copied
        return parts[0][0].reshape(-1, isa.INSTR_WORDS), parts[0][1]
    rows: list[np.ndarray] = []
    table: list[list[tuple[int, int]]] = []
    base = 0
    for records, chunk_table in parts:
        rows.append(records.reshape(-1, isa.INSTR_WORDS))
        table += [[(first + base, count) for first, count in sm] for sm in chunk_table]
        base += len(rows[-1])
    return np.concatenate(rows), table


def encode_sms(graph: Graph, sms: Iterable[int], queues: dict[tuple[int, str], list[Node]],
               l2_prefetch: int = DEFAULT_BUDGET, first_trips: dict[int, int] | None = None,
               release_first: bool = False) -> tuple[np.ndarray, list[list[tuple[int, int]]]]:
    """The records of the queues of ``sms`` (SM after SM, in the target's engine order) and their
    table (per SM, each engine's first record and count), counted from the first record.

    ``first_trips``: :func:`first_trip_counts` of the graph, where the caller has it already.
    ``release_first``: the stores a stream load on their SM waits for release before their bits
    (:func:`~vdir.analysis.stream_holds.stores_releasing_first`, ``isa.TRANSFER_RELEASE_FIRST``).
    """
    engines = graph.target.engine_names
    encoder = _NodeEncoder(graph, first_trips)
    table = []
    for sm in sms:
        if release_first:
            encoder.release_first = stores_releasing_first(queues.get((sm, EngineKind.STREAM.value), []))
        prefetches = prefetches_of_sm(graph, queues, sm, l2_prefetch)
        row = []
        for engine in engines:
            start = encoder.count
            encode_queue(queues.get((sm, engine), []), graph, encoder, prefetches)
            row.append((start, encoder.count - start))
        table.append(row)
    return encoder.instrs(), table


def encode(graph: Graph, reroll: bool = True, l2_prefetch: int = DEFAULT_BUDGET,
           queues: dict[tuple[int, str], list[Node]] | None = None, release_first: bool = False) -> isa.EncodedProgram:
    """The :class:`~vdir.isa.EncodedProgram` of a laid-out graph.

    With ``reroll``, repeated instruction blocks become loops
    (:func:`reroll_queues`); without, every executed instruction is a record.
    ``l2_prefetch``: the bytes each load queue keeps asked of L2 ahead of a
    cross-SM wait (0: no prefetch records; see ``vdir.analysis.l2_prefetch``).
    ``queues``: :func:`~vdir.analysis.queues.queues_of` the graph, where the caller has it already.
    ``release_first``: as :func:`encode_sms` takes it.
    """
    if queues is None:
        queues = queues_of(graph)
    instrs, table = encode_sms(graph, range(graph.num_sms), queues, l2_prefetch, release_first=release_first)
    return encoded_program(graph, instrs, table, reroll, uop_names(graph))


def uop_names(graph: Graph) -> dict[int, str]:
    """Each micro-op's name and location, by id: what diagnostics name an instruction by."""
    return {n.id: f"{n.name} ({n.loc})" for n in graph.nodes}


def encoded_program(graph: Graph, instrs: np.ndarray, table: list[list[tuple[int, int]]], reroll: bool,
                    names: dict[int, str]) -> isa.EncodedProgram:
    """The program of the graph's records ``instrs`` (every SM's, as :func:`encode_sms` gives them)
    and their ``table``: the tensor-copy words filled in, rerolled where ``reroll`` says."""
    buffers = [isa.BufferInfo(a.name, a.shape, a.dtype, a.is_output, a.is_input) for a in graph.args]
    isa.assign_tensor_maps(instrs, buffers)
    if reroll:
        instrs, table = reroll_queues(instrs, table)
    return isa.EncodedProgram(
        num_sms=graph.num_sms,
        smem_bytes=graph.smem_bytes,
        num_counters=graph.num_counters,
        bitmap_bits=graph.target.dependency_bits,
        buffers=buffers,
        instrs=instrs,
        queues=table,
        uop_names=names,
        target=graph.target.name,
        scalars=[isa.ScalarInfo(s.name, s.lo, s.hi) for s in graph.scalars],
        flag_word_bytes=flag_word_layout(graph).nbytes,
    )


# ---------------------------------------------------------------------------
# IR form
# ---------------------------------------------------------------------------


def encoded_op(name: str, program: isa.EncodedProgram) -> EncodedProgramOp:
    """``vdir.encoded_program`` holding ``program``."""
    names = [program.uop_names.get(i, "") for i in range(max(program.uop_names, default=-1) + 1)]
    return EncodedProgramOp.create(
        properties={
            "sym_name": StringAttr(name),
            "target": StringAttr(program.target),
            "buffers": ArrayAttr(
                [
                    StringAttr(isa.buffer_entry(b))
                    for b in program.buffers
                ]
            ),
            "code": StringAttr(isa.encode_code(program)),
            "names": StringAttr(isa.encode_text(names)),
            **({"scalars": ArrayAttr([StringAttr(s.text()) for s in program.scalars])} if program.scalars else {}),
        }
    )


def program_of(op: EncodedProgramOp) -> isa.EncodedProgram:
    """Read a ``vdir.encoded_program`` back into an :class:`~vdir.isa.EncodedProgram`."""
    buffers = [isa.parse_buffer_entry(b.data) for b in op.buffers.data]
    scalars = [isa.ScalarInfo.parse(s.data) for s in op.scalars.data] if op.scalars is not None else []
    program = isa.EncodedProgram.from_bytes(isa.decode_code(op.code.data), buffers, {}, op.target.data, scalars)
    lines = isa.decode_text(op.names.data, max_lines=isa.names_line_limit(program))
    program.uop_names = {i: s for i, s in enumerate(lines) if s}
    return program


def encoded_programs(module: ModuleOp) -> list[isa.EncodedProgram]:
    """Every encoded program in the module."""
    return [program_of(op) for op in module.walk() if isinstance(op, EncodedProgramOp)]


def replace_with_encoded(module: ModuleOp, graph: Graph, reroll: bool = True, l2_prefetch: int = DEFAULT_BUDGET,
                         queues: dict[tuple[int, str], list[Node]] | None = None,
                         release_first: bool = False) -> isa.EncodedProgram:
    """Encode ``graph`` (see :func:`encode`) and swap the module's program for the encoded op."""
    program = encode(graph, reroll, l2_prefetch, queues, release_first)
    replace_program(module, graph.name, program)
    return program


def replace_program(module: ModuleOp, name: str, program: isa.EncodedProgram) -> None:
    """Swap the module's program for ``vdir.encoded_program`` ``name`` holding ``program``."""
    old = single_program(module)
    new = encoded_op(name, program)
    new.location = old.location
    module.body.block.insert_op_before(new, old)
    module.body.block.erase_op(old, safe_erase=False)


@dataclass(frozen=True)
class EncodePass(ModulePass):
    """Encode the laid-out program into per-engine instruction streams.

    Option ``reroll`` (default true): write repeated instruction blocks as
    loops; false writes every executed instruction as its own record.
    Option ``l2-prefetch`` (bytes, default 0): each load queue keeps this many
    bytes of later weight tiles asked of L2 at every cross-SM wait.
    Option ``release-first`` (default false): a store that releases a counter
    and whose bits a stream load on its SM waits for releases before it
    toggles them (``vdir.analysis.stream_holds``), so that the load issues
    after the release's fence.
    """

    name = "vdir-encode"

    reroll: bool = True
    l2_prefetch: int = DEFAULT_BUDGET
    release_first: bool = False

    def __post_init__(self) -> None:
        require_option_in_range(self.name, "l2-prefetch", self.l2_prefetch, 0)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = build_graph(op)
        if graph.stage != "laid-out":
            raise PassFailure(
                f"vdir-encode needs a program at stage 'laid-out' (it is '{graph.stage}'); "
                "run vdir-place, vdir-schedule, vdir-alloc-smem and vdir-layout-deps first",
                graph.program_op,
            )
        check_queue_positions_follow_program_order(graph)  # the bits were laid out for that order
        replace_with_encoded(op, graph, self.reroll, self.l2_prefetch, release_first=self.release_first)
