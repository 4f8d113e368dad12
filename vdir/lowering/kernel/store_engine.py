"""The store engine (warp 1): copy result tiles from shared to global memory, in queue order."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from vdir import isa
from vdir.lowering import layout as L
from vdir.lowering.kernel.context import FULL, Ctx
from vdir.lowering.kernel.copies import REDUCTIONS, buffer_address, copy_fields, reduce_rows, store_rows, tensor_store
from vdir.lowering.kernel.fetch import Fields, SmemFetcher, region_fields
from vdir.lowering.kernel.flag_words import is_flag_words, write_flag_words
from vdir.lowering.kernel.runtime_values import condition_holds, runtime_offset
from vdir.lowering.kernel.sync import ready_check, signal, spin_wait
from vdir.lowering.kernel.trace import stamp
from vdir.target import EngineKind


def store_engine(c: Ctx) -> None:
    """Warp 1: copy result tiles from shared to global memory, in queue order.

    Tensor stores where the region has a tensor map, else 16-byte
    ``ld.shared.v4`` / ``st.global.v4`` when the destination rows are
    16-byte aligned, else 2-byte copies; a reducing store (``isa.REDUCE``,
    in a kernel whose program has one: ``Ctx.reduces``) adds its tile into
    the region with bulk reductions instead (:func:`reduce_rows`; f32 or i64
    adds, ``copies.REDUCTIONS``),
    never through a tensor map. Every lane commits the store's bulk copies
    as one group (empty where it issued none), and the store completes and
    signals (:func:`_complete`) before the engine reads the next
    instruction. It must: ``vdir-layout-deps`` allocates the dependency bits
    on that order, and a later instruction whose wait reuses a bit an
    earlier store toggles would see that wait met too early while the
    toggle was held back (``docs/performance.md``, round 20); with the
    lowering option ``batch_releases`` a releasing store may complete with
    the next one, which it then cannot hold (:func:`_complete_batched`). A store that
    nothing waits on (no bits, no counter: a result of the launch) completes
    once its copies have read their source (:func:`_complete`); the next
    store's copies wait for its writes first (:func:`_settle_writes`).
    """
    b = c.b
    engine = c.target.engine_index(EngineKind.STORE)
    q = c.queue
    # every branch on the instruction's fields, the queue position or ``unsettled`` is warp-uniform:
    # the lanes read the same words and keep the same counters
    lane0 = b.setp("eq.u32", c.lane, 0)
    pos = b.var("u32", 0)
    unsettled = b.var("u32", 0)  # 1 while a quiet store's writes may be in flight (_complete)
    fe = SmemFetcher(c, q, engine)
    pending = _Pending(fe, pos, b.var("b64", 0), b.var("u32", 0)) if _batches(c) else None
    fe.prime(pos)
    top, done, nxt = b.new_label("st_top"), b.new_label("st_done"), b.new_label("st_next")
    b.place(top)
    b.bra(done, b.setp("ge.u32", pos, q.count), uniform=True)
    f = fe.fields_at(pos)
    f.prefetch(copy_fields(c))  # ahead of the wait, as the load engines do
    spin_wait(c, f, engine, pos, done, warp_uniform=True)
    stamp(c, q.exec_start, pos, L.TRACE_START, lane0)
    opcode = f.read(isa.OPCODE)
    b.bra(nxt, b.setp("ne.u32", opcode, isa.OP_STORE), uniform=True)
    b.bra(nxt, condition_holds(c, f), neg=True, uniform=True)  # skipped: no bytes, same signals
    completed = _flag_word_store(c, f, lane0, unsettled) if c.flag_words else None
    _settle_writes(c, unsettled)
    _copy_region(c, f, nxt, engine, pos, done)
    b.place(nxt)
    _complete(c, f, lane0, unsettled, pending)
    if completed is not None:
        b.place(completed)
    stamp(c, q.exec_start, pos, L.TRACE_END, lane0)
    b.i("add.u32", "u32", pos, 1, dst=pos)
    fe.advance(pos)
    b.bra(top)
    b.place(done)
    b.bra(c.exit_label)


def _flag_word_store(c: Ctx, f: Fields, lane0: SSAValue, unsettled: SSAValue) -> str:
    """A flag-word store (``isa.TRANSFER_FLAG_WORDS``) writes its words and completes here, branching to
    the label returned (placed after the plain completion); any other store falls through.

    It writes no byte of a buffer and leaves no write in flight: its words
    are plain relaxed stores (``vdir.lowering.kernel.flag_words``), written
    first, whatever came before. It signals and releases what its record
    says: nothing where its plain store record follows, the store's own
    where its buffer is words-only (``vdir.analysis.flag_words``): the bits
    free the tile's slot, which its lanes have read by then, and a counter's
    release orders the words before it.

    Memory-model note: a signal of this engine also stands for every store
    before it (the layout's clocks take the queue's order for completion,
    and a quiet store's readers rely on a later store's signal, see
    :func:`_complete`), so before signalling it performs the writes a quiet
    store left in flight (:func:`_settle_writes`), as a plain store does
    before its copies.
    """
    b = c.b
    plain, completed = b.new_label("st_plain_words"), b.new_label("st_words_done")
    b.bra(plain, is_flag_words(c, f), neg=True, uniform=True)
    write_flag_words(c, f, b.i("add.u32", "u32", c.arena, f.read(isa.SMEM)))
    _settle_writes(c, unsettled)
    b.raw("bar.warp.sync", "%d" % FULL)
    signal(c, f.signal, f.rel, lane0, _releases_first(c, f))
    b.raw("bar.warp.sync", "%d" % FULL)
    b.bra(completed)
    b.place(plain)
    return completed


def _copy_region(c: Ctx, f: Fields, nxt: str, engine: int, pos: SSAValue, on_error: str) -> None:
    """Issue store ``f``'s copies: tensor stores, a reducing store's bulk reductions (both then branch to
    ``nxt``) or ``st.global`` rows.

    A runtime offset out of its range is reported and ends the engine (``on_error``).
    """
    b = c.b
    bufi, off_lo, off_hi, rows, row_bytes, stride, smem = region_fields(f)
    src0 = b.i("add.u32", "u32", c.arena, smem)
    # the checks (isa.check_reductions) let only the REDUCTIONS, each on a region it combines, reach the kernel
    code = f.read(isa.REDUCE) if c.reduces else None
    reduces = b.setp("ne.u32", code, isa.REDUCE_NONE) if code is not None else None
    if c.options.tensor_copies_enabled:
        plain = b.new_label("st_plain")
        b.bra(plain, b.setp("eq.u32", f.read(isa.TMAP), 0), uniform=True)
        if reduces is not None:  # never through a tensor map (its element view may not be f32)
            b.bra(plain, reduces, uniform=True)
        tensor_store(c, f, src0, row_bytes)
        b.bra(nxt)
        b.place(plain)
    off_lo, off_hi = runtime_offset(c, f, off_lo, off_hi, engine, pos, on_error)
    gptr = buffer_address(c, bufi, off_lo, off_hi)
    if code is not None and reduces is not None:
        overwrite = b.new_label("st_overwrite")
        b.bra(overwrite, reduces, neg=True, uniform=True)
        for kind, how in REDUCTIONS.items():
            other = b.new_label("st_other_reduction")
            b.bra(other, b.setp("ne.u32", code, kind), uniform=True)
            reduce_rows(c, gptr, src0, rows, row_bytes, stride, how)
            b.bra(nxt)
            b.place(other)
        b.place(overwrite)
    store_rows(c, gptr, src0, rows, row_bytes, stride)


@dataclass(frozen=True)
class _Pending:
    """A releasing store whose completion waits for the next store's (lowering option
    ``batch_releases``, :func:`_complete_batched`): its bits and counter (0: none pending), with the
    window and position the next store is read from."""

    fetcher: SmemFetcher
    pos: SSAValue
    signal: SSAValue
    rel: SSAValue


def _batches(c: Ctx) -> bool:
    """Whether the store engine batches releases (option ``batch_releases``): only where it walks a
    plain queue (it reads the next instruction ahead, ``SmemFetcher.fields_at``) and moves no flag
    words (whose stores complete on a path of their own)."""
    return c.options.batch_releases and not c.loops and not c.flag_words


def _complete(c: Ctx, f: Fields, lane0: SSAValue, unsettled: SSAValue, pending: _Pending | None = None) -> None:
    """Wait for the store's bulk copies, make every write visible, then lane 0 signals the bits and
    releases the counter; a quiet store (no bits, no counter) only waits until its copies have read
    their source, and leaves ``unsettled`` set.

    Memory-model note: each lane commits and waits for its own bulk group
    (the writes are performed), then fences the async proxy's global writes
    against the generic proxy, which also orders the lanes' ``st.global``
    before a later bulk load on this SM that reads the bytes after waiting
    on the bits. The warp barrier orders every lane's writes before lane 0's
    releases (the bits' ``atom.release.cta``, the counter's
    ``red.release.gpu``: cumulative), which pass them on to the consumers.
    ``cp.async.bulk.wait_group 0`` waits for every earlier group too, so a
    signalling store also completes the quiet stores before it: whatever
    is ordered after a quiet store reaches it through a later store's
    signal (nothing waits on the quiet one), and sees its writes. A quiet
    store's writes become visible when the launch ends, as any kernel's;
    its ``cp.async.bulk.wait_group.read 0`` only frees its source tile
    (measured: docs/performance.md, round 21).
    """
    b = c.b
    b.raw("cp.async.bulk.commit_group", "")
    quiet = b.i("and.pred", "pred", b.setp("eq.b64", f.signal, 0), b.setp("eq.u32", f.rel, 0))
    full, done = b.new_label("st_complete"), b.new_label("st_completed")
    b.bra(full, quiet, neg=True, uniform=True)
    b.raw("cp.async.bulk.wait_group.read", "0")
    b.i("mov.u32", None, 1, dst=unsettled)
    b.bra(done)
    b.place(full)
    _perform_writes(c)
    b.raw("bar.warp.sync", "%d" % FULL)
    if pending is None:
        signal(c, f.signal, f.rel, lane0, _releases_first(c, f))
    else:
        _complete_batched(c, f, lane0, pending)
    b.raw("bar.warp.sync", "%d" % FULL)
    b.i("mov.u32", None, 0, dst=unsettled)
    b.place(done)


def _complete_batched(c: Ctx, f: Fields, lane0: SSAValue, pending: _Pending) -> None:
    """Signal store ``f`` (its writes performed), batching releases (``batch_releases``): with a store
    pending, one fence releases both; else ``f`` is left pending where it releases a counter and the
    next instruction is a store that releases one and is ready now, not waiting on ``f``'s bits; else
    it signals as usual.

    Memory-model note: ``fence.acq_rel.gpu`` followed by ``red.relaxed.gpu``
    is a release pattern, cumulative over the writes ordered before the
    fence: both stores' copies are performed and proxy-fenced by then, and
    the other lanes' writes reach lane 0 through the warp barrier. The pending store's
    bits toggle after the next store's copies, before its own: completion
    stays in queue order, as ``vdir-layout-deps`` assumes. The next store
    was ready without this store's bits, so deferring them cannot hold it
    (the round-20 hazard needs a wait on a held toggle), and a store that
    releases nothing, or that is not ready, flushes at once.
    """
    b = c.b
    flush, usual, done = b.new_label("st_flush"), b.new_label("st_usual"), b.new_label("st_signalled")
    b.bra(flush, b.setp("ne.u32", pending.rel, 0), uniform=True)
    b.bra(usual, b.setp("eq.u32", f.rel, 0), uniform=True)
    nxt = b.i("add.u32", "u32", pending.pos, 1)
    b.bra(usual, b.setp("ge.u32", nxt, c.queue.count), uniform=True)  # past the end: stale words
    g = pending.fetcher.fields_at(nxt, ahead=True)
    b.bra(usual, b.setp("ne.u32", g.read(isa.OPCODE), isa.OP_STORE), uniform=True)
    b.bra(usual, b.setp("eq.u32", g.rel, 0), uniform=True)
    b.bra(usual, b.setp("ne.b64", b.i("and.b64", "b64", g.mask, f.signal), 0), uniform=True)
    b.bra(usual, ready_check(c, g, warp_uniform=True)[0], neg=True, uniform=True)
    b.i("mov.b64", None, f.signal, dst=pending.signal)
    b.i("mov.u32", None, f.rel, dst=pending.rel)
    b.bra(done)
    b.place(flush)
    b.raw("fence.acq_rel.gpu", "", guard=lane0)
    for sig, rel in ((pending.signal, pending.rel), (f.signal, f.rel)):
        signal(c, sig, rel, lane0, relaxed=True)
    b.i("mov.u32", None, 0, dst=pending.rel)
    b.bra(done)
    b.place(usual)
    signal(c, f.signal, f.rel, lane0, _releases_first(c, f))
    b.place(done)


def _releases_first(c: Ctx, f: Fields) -> SSAValue | None:
    """Whether store ``f`` releases its counter before it toggles its bits (``isa.TRANSFER_RELEASE_FIRST``:
    a stream load on the SM waits for those bits, ``vdir.analysis.stream_holds``); None in a kernel
    whose program has no such store (``Ctx.release_first``), which keeps the usual order."""
    if not c.release_first:
        return None
    b = c.b
    flags = b.i("and.b32", "u32", f.read(isa.TRANSFER_FLAGS), isa.TRANSFER_RELEASE_FIRST)
    return b.setp("ne.u32", flags, 0)


def _settle_writes(c: Ctx, unsettled: SSAValue) -> None:
    """Before a store's copies: where a quiet store before it left its writes in flight
    (``unsettled``), wait for them and fence the async proxy against the generic one.

    Memory-model note: the async proxy does not order two bulk groups'
    writes to the same bytes, nor a lane's ``st.global`` before a later bulk
    copy without the proxy fence; so a store that may overwrite a quiet
    store's bytes (its region is not compared) issues its copies only after
    those writes are performed. Stores far enough apart find them done.
    """
    b = c.b
    settled = b.new_label("st_settled")
    b.bra(settled, b.setp("eq.u32", unsettled, 0), uniform=True)
    _perform_writes(c)
    b.i("mov.u32", None, 0, dst=unsettled)
    b.place(settled)


def _perform_writes(c: Ctx) -> None:
    """Wait until every bulk group this lane committed has performed its writes, then fence the async
    proxy's global writes against the generic proxy (the memory-model notes of :func:`_complete` and
    :func:`_settle_writes`)."""
    c.b.raw("cp.async.bulk.wait_group", "0")
    c.b.raw("fence.proxy.async.global", "")
