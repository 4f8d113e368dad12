"""The compute engine (warps 2..): run each compute instruction's family body over the group.

The first compute warp waits for the instruction, a named barrier releases
the group, the family body (``vdir/lowering/families``) runs on every thread,
a second barrier, and the leader thread signals. Before its loop, each
variant of the group makes the group states its families name
(``Family.ptx_state``: registers a body keeps from one micro-op to the next,
such as the gemv's row split) and hands them to every body it runs.

In a kernel that runs loops, one warp owns the instruction window and hands
each instruction over to the first compute warp with a two-warp named
barrier (``layout.FETCH_BARRIER``: its writes to the window are ordered
before the first warp's reads by the barrier, ``bar.arrive`` to
``bar.sync``), then works out the next one's trip words at once, while the
first warp waits for the handed one's dependencies. That warp is the
compute fetch warp (:func:`compute_fetch`, ``layout.compute_fetch_warp``),
which the first compute warp hands each slot back to on
``layout.RETURN_BARRIER`` (:func:`_fed_group`); where the CTA has no room
for it, the group's second warp (:func:`compute_engine`).

With the lowering option ``control_warp``, in a kernel without loops, one
more warp takes the waits and signals off the group's path: the compute
control warp (:func:`compute_control`, ``layout.compute_control_warp``)
owns the window, polls the next instruction's wait while the group runs the
current body, and hands it over as soon as the group is done; the group
(:func:`_controlled_group`) only runs bodies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from xdsl.ir import SSAValue

from vdir import isa
from vdir.lowering import layout as L
from vdir.lowering.families import ComputeCtx, GroupStates, body_of, group_states
from vdir.lowering.kernel.context import FULL, Ctx
from vdir.lowering.kernel.fetch import Fields, SmemFetcher, smem_fields, window_slot
from vdir.lowering.kernel.runtime_values import condition_holds
from vdir.lowering.kernel.sync import ready_check, report, signal, spin_wait
from vdir.lowering.kernel.trace import stamp
from vdir.target import EngineKind

#: from this many families on, a compute instruction's family dispatch is one indexed branch through
#: a table by opcode (``brx.idx``) rather than a compare-and-branch per family: ptxas keeps the chain a
#: chain, and on the decode step's eleven families the last compares ten times before its body
DISPATCH_TABLE_FAMILIES = 5


def compute_engine(c: Ctx, families: list[int]) -> None:
    """Warps 2..: the first compute warp waits, a named barrier releases the
    group, the family body runs, a barrier, and the leader thread signals (or,
    with a compute fetch or control warp, the group of :func:`_fed_group` or
    :func:`_controlled_group`)."""
    if L.compute_fetch_warp(c.target, c.loops) is not None:
        _fed_group(c, families)
        return
    if L.compute_control_warp(c.target, c.loops, c.options.control_warp) is not None:
        _controlled_group(c, families)
        return
    b = c.b
    nthreads = c.target.compute_threads
    engine = c.target.engine_index(EngineKind.COMPUTE)
    q = c.queue
    ct, cw, leader, first_warp = _group_lanes(c)
    pos = b.var("u32", 0)
    warp = L.compute_signal_warp(c.target, c.loops, c.options.signal_warp)
    # the signal warp, and the bits of the instruction before pos (every thread keeps them)
    signaller = (warp, b.var("b64", 0)) if warp is not None else None
    # the waiting (first) warp prefetches instructions into the window (in a
    # kernel that runs loops, the second warp: see the module); the group
    # reads the current one from there after the barrier
    fe = SmemFetcher(c, q, engine)
    handed = c.loops and nthreads >= 64
    fetch_warp = b.setp("eq.u32", cw, 1) if handed else first_warp
    prime_skip = b.new_label("cp_prime_skip")
    b.bra(prime_skip, fetch_warp, neg=True, uniform=True)
    fe.prime(pos)
    b.place(prime_skip)
    top, done, sync = b.new_label("cp_top"), b.new_label("cp_done"), b.new_label("cp_sync")
    body_done, abort_w = b.new_label("cp_body_done"), b.new_label("cp_abort")
    handoff_txt = "%d, %d" % (L.FETCH_BARRIER, L.HANDOFF_THREADS)
    states = group_states(c, families)
    b.place(top)
    b.bra(done, b.setp("ge.u32", pos, q.count), uniform=True)
    if handed:
        waiter = b.new_label("cp_waiter")
        b.bra(waiter, fetch_warp, neg=True, uniform=True)
        fe.step(pos)
        b.raw("bar.arrive", handoff_txt)
        fe.step(b.i("add.u32", "u32", pos, 1), ahead=True)  # while the first warp waits for pos's dependencies
        b.bra(sync)
        b.place(waiter)
    b.bra(sync, first_warp, neg=True, uniform=True)
    if handed:
        b.raw("bar.sync", handoff_txt)
        fw = smem_fields(c, fe.slot_address(pos))
    else:
        fw = fe.fields_at(pos)
    if signaller is not None:
        _await_shared_bits(c, signaller[1], fw, pos)
    _first_warp_wait(c, fw, engine, q.exec_start, pos, leader, abort_w, sync)
    f = _group_step(c, lambda: fe.slot_address(pos), families, states, ct, cw, engine, pos, done, body_done)
    if signaller is None:
        signal(c, f.signal, f.rel, leader)
        stamp(c, q.exec_start, pos, L.TRACE_END, leader)
    else:
        b.set(signaller[1], f.signal)
        _signal_from_warp(c, f, cw, ct, signaller[0], pos)
    b.i("add.u32", "u32", pos, 1, dst=pos)
    b.bra(top, fetch_warp, neg=True, uniform=True)
    fe.advance(pos)
    b.bra(top)
    b.place(done)
    b.bra(c.exit_label)


def _signal_from_warp(c: Ctx, f: Fields, cw: SSAValue, ct: SSAValue, warp: int, pos: SSAValue) -> None:
    """Lane 0 of compute warp ``warp`` signals instruction ``pos`` (fields ``f``), then counts it in
    ``SMEM_SIGNALLED`` and stamps its end; the other warps go on at once.

    Memory-model note: the group's writes reach this lane through the group's second barrier, as
    they reach the first warp's leader where that signals (``sync.signal``); the signal's words
    were read from the window slot before that barrier, so the first warp may refill the slot
    while this lane signals. The ``st.release.cta`` of the count follows the toggles in this
    thread's program order: a first-warp lane whose ``ld.acquire.cta`` reads the count then reads
    the bitmap with every toggle of ``pos`` in it (:func:`_await_shared_bits`).
    """
    b = c.b
    skip = b.new_label("cp_signalled")
    b.bra(skip, b.setp("eq.u32", cw, warp), neg=True, uniform=True)
    signaller = b.setp("eq.u32", ct, 32 * warp)
    signal(c, f.signal, f.rel, signaller)
    count = b.i("add.u32", "u32", pos, 1)
    b.st("st.release.cta.shared.u32", c.base, L.SMEM_SIGNALLED, count, guard=signaller)
    stamp(c, c.queue.exec_start, pos, L.TRACE_END, signaller)
    b.place(skip)


def _await_shared_bits(c: Ctx, signalled: SSAValue, fw: Fields, pos: SSAValue) -> None:
    """The first compute warp, before it tests instruction ``pos``'s wait (fields ``fw``): if that wait
    names a bit the instruction before toggles (``signalled``), wait until the signal warp has
    signalled it (``SMEM_SIGNALLED`` reaches ``pos``).

    Why: a bit's expected parity counts every toggle the schedule orders before the waiter, the
    instruction before's among them. Tested before that toggle, the bit may read as met (another
    engine toggled it meanwhile). A wait on other bits, or on a counter (which only grows), may be
    tested at once: the bits are allocated on a schedule in which each compute completes before the
    next starts, so what ``pos`` may count on besides the instruction before's signals was
    acquired when that instruction started (``vdir-layout-deps``).
    """
    b = c.b
    ready, spin = b.new_label("cp_bits_apart"), b.new_label("cp_signal_seen")
    shared = b.setp("ne.b64", b.i("and.b64", "b64", signalled, fw.mask), 0)
    b.bra(ready, shared, neg=True, uniform=True)
    b.place(spin)
    # acquire: pairs with the signal warp's st.release.cta of the count
    count = b.ld("ld.acquire.cta.shared.u32", "u32", c.base, L.SMEM_SIGNALLED)
    seen = b.i("vote.sync.all.pred", "pred", b.setp("ge.u32", count, pos), FULL)
    b.bra(spin, seen, neg=True, uniform=True)
    b.place(ready)


def _fed_group(c: Ctx, families: list[int]) -> None:
    """The compute group of a kernel with a compute fetch warp (``layout.compute_fetch_warp``).

    As :func:`compute_engine`, but the group never touches the window's
    copies or the loop walk: the first warp takes position ``pos`` from the
    fetch warp (``bar.sync`` on ``FETCH_BARRIER``, pairing with its
    ``bar.arrive``), and once the group is done with it (after the group's
    second barrier, before the leader signals, so that the fetch warp hands
    the next position over while the leader releases) hands the slot back
    with ``bar.red.or.pred`` on ``RETURN_BARRIER``, the predicate false. On
    an abort the group leaves through one hand-back with the predicate
    true, which takes the fetch warp out of its loop too.
    """
    b = c.b
    engine = c.target.engine_index(EngineKind.COMPUTE)
    q = c.queue
    ct, cw, leader, first_warp = _group_lanes(c)
    win = b.i("add.u32", "u32", c.base, L.fetch_window(engine))
    pos = b.var("u32", 0)
    top, done, sync = b.new_label("cp_top"), b.new_label("cp_done"), b.new_label("cp_sync")
    body_done, abort_w, leave = b.new_label("cp_body_done"), b.new_label("cp_abort"), b.new_label("cp_leave")
    states = group_states(c, families)
    b.place(top)
    b.bra(done, b.setp("ge.u32", pos, q.count), uniform=True)
    addr = window_slot(c, win, pos)
    b.bra(sync, first_warp, neg=True, uniform=True)
    # acquire: pairs with the fetch warp's bar.arrive after its words of pos are in the slot
    b.raw("bar.sync", "%d, %d" % (L.FETCH_BARRIER, L.HANDOFF_THREADS))
    fw = smem_fields(c, addr)
    _first_warp_wait(c, fw, engine, q.exec_start, pos, leader, abort_w, sync)
    # the group's reads of the slot precede its second barrier, and so the hand-back
    f = _group_step(c, lambda: addr, families, states, ct, cw, engine, pos, leave, body_done)
    _hand_back(c, first_warp, aborting=False)
    signal(c, f.signal, f.rel, leader)
    stamp(c, q.exec_start, pos, L.TRACE_END, leader)
    b.i("add.u32", "u32", pos, 1, dst=pos)
    b.bra(top)
    b.place(leave)
    _hand_back(c, first_warp, aborting=True)
    b.place(done)
    b.bra(c.exit_label)


def _controlled_group(c: Ctx, families: list[int]) -> None:
    """The compute group of a kernel with a compute control warp (``layout.compute_control_warp``).

    The group only runs bodies: it takes position ``pos`` from the control
    warp (``bar.sync`` on ``CONTROL_GO_BARRIER``, pairing with its
    ``bar.arrive``), reads the instruction from the window slot, runs it, and
    says it is done without waiting for the signal: each thread arrives on
    the mbarrier ``SMEM_CONTROL_DONE``, which the control warp
    polls. The abort flag, read after each hand-over, takes the group out
    (the control warp raised it on a watchdog report or an abort); an
    unknown family raises it for the control warp, which reads it once the
    group has arrived, and leaves too.

    Memory-model note: the control warp's acquires (the dependency bits, the
    window's words, the abort flag) reach the group through the go barrier.
    The group's reads and writes reach the control warp through the done
    mbarrier: each thread's arrive is a release at CTA scope and the control
    warp's ``test_wait`` or ``try_wait`` an acquire, before its lane 0's
    release of the signal bits.
    No warp starts the next body before every warp has arrived (the control
    warp hands the next over only after the phase completes, and the go
    barrier counts the whole group), so a body's scratch is free when the
    next writes it.
    """
    b = c.b
    engine = c.target.engine_index(EngineKind.COMPUTE)
    q = c.queue
    ct, cw, leader, _ = _group_lanes(c)
    win = b.i("add.u32", "u32", c.base, L.fetch_window(engine))
    go = _control_go(c)
    pos = b.var("u32", 0)
    top, done, failed = b.new_label("cp_top"), b.new_label("cp_done"), b.new_label("cp_failed")
    body_done = b.new_label("cp_body_done")
    states = group_states(c, families)
    b.place(top)
    b.bra(done, b.setp("ge.u32", pos, q.count), uniform=True)
    # acquire: pairs with the control warp's bar.arrive once pos may start
    b.raw("bar.sync", go)
    f, aborted = _take_instruction(c, window_slot(c, win, pos))
    _run_step(c, f, families, states, ct, cw, engine, pos, failed, body_done, aborted, done)
    _arrive_done(c)
    b.i("add.u32", "u32", pos, 1, dst=pos)
    b.bra(top)
    b.place(failed)
    b.st("st.shared.u32", c.base, L.SMEM_ABORT, 1, guard=leader)
    _arrive_done(c)
    b.place(done)
    b.bra(c.exit_label)


def _arrive_done(c: Ctx) -> None:
    """This compute thread is done with the current instruction: it arrives on ``SMEM_CONTROL_DONE``
    (a release at CTA scope of its own reads and writes), one of ``layout.control_done_arrivals``.

    Every lane arrives, not one lane per warp after a warp barrier: the memory model would accept
    either, but compute-sanitizer's racecheck orders a thread's accesses before another's only
    through that thread's own arrival (``bench/racecheck_probe.py``, pattern ``mbar_thread``)."""
    b = c.b
    b.raw("mbarrier.arrive.shared::cta.b64", "{0}, [{1}+%d]" % L.SMEM_CONTROL_DONE, outs=["b64"], ins=[c.base])


def compute_control(c: Ctx) -> None:
    """The compute control warp (``layout.compute_control_warp``): the compute engine's waits and
    signals, while the group runs the bodies (:func:`_controlled_group`).

    It owns the compute engine's window. While the group runs position
    ``n``, it decodes ``n + 1`` and polls, in turn, whether ``n + 1``'s
    dependencies are met and whether the group is done with ``n`` (the
    mbarrier ``SMEM_CONTROL_DONE``). If ``n + 1`` became ready first and
    waits on none of the bits ``n`` signals, it hands ``n + 1`` over as soon
    as the group is done and signals ``n`` while the group runs it;
    otherwise it signals ``n`` and then waits for ``n + 1`` as the first
    compute warp would. So the signal, the window's refill and a wait met
    during the body are off the group's path: the next body starts one
    barrier after the last.

    Why the early test is sound (the dependency bits are allocated on the
    vector clocks of a schedule in which every compute instruction completes
    before the next starts, ``vdir-layout-deps``): ``n + 1`` may count on
    what ``n``'s completion implies, which is what ``n``'s start implied (and
    this warp acquired before handing ``n`` over) plus ``n``'s own signals.
    A counter only grows, so a counter that reads reached stays reached. A
    bit that ``n`` toggles could read as met before ``n`` toggles it (another
    engine toggling it again after ``n``): a shared bit sends ``n + 1``
    through the wait after the signal, as before. Signalling ``n`` after
    ``n + 1`` started only delays what waits on ``n``.

    Memory-model note: the bit test is an ``ld.acquire`` by every lane (as
    in every wait), and reaches the group through the go barrier
    (``bar.arrive`` here, ``bar.sync`` there); the group's writes reach this
    warp through the mbarrier (each thread's release arrive, every lane's
    acquiring ``test_wait``/``try_wait``), before lane 0's release of the
    signal bits (``sync.signal``). The window's copies are this warp's own
    (``cp.async.wait_group`` and a warp barrier, ``fetch.SmemFetcher``); a
    slot is refilled only after the group is done with the instruction it
    held.
    """
    b = c.b
    engine = c.target.engine_index(EngineKind.COMPUTE)
    q = c.queue
    fe = SmemFetcher(c, q, engine)
    lane0 = b.setp("eq.u32", c.lane, 0)
    go = _control_go(c)
    done_bar = b.i("add.u32", "u32", c.base, L.SMEM_CONTROL_DONE)
    pos, phase = b.var("u32", 0), b.var("u32", 0)
    top, done, abort_w = b.new_label("cc_top"), b.new_label("cc_done"), b.new_label("cc_abort")
    poll, early, late = b.new_label("cc_poll"), b.new_label("cc_early"), b.new_label("cc_late")
    fe.prime(pos)
    b.bra(done, b.setp("ge.u32", pos, q.count), uniform=True)
    first = fe.fields_at(pos)
    spin_wait(c, first, engine, pos, abort_w, warp_uniform=True)
    _hand_over(c, go, pos, lane0)
    sig, rel = b.var("b64", first.signal), b.var("u32", first.rel)
    b.place(top)
    nxt = b.i("add.u32", "u32", pos, 1)
    has_next = b.setp("lt.u32", nxt, q.count)
    f = fe.fields_at(nxt, ahead=True)
    # past the queue's end the slot holds stale words: no counter to read
    f = dataclasses.replace(f, wctr=b.i("selp.b32", "u32", f.wctr, 0, has_next))
    apart = b.setp("eq.b64", b.i("and.b64", "b64", sig, f.mask), 0)
    candidate = b.i("and.pred", "pred", apart, has_next)  # a next instruction that may be tested early
    b.place(poll)
    b.bra(late, candidate, neg=True, uniform=True)  # (no candidate: only the done wait, below)
    ready = ready_check(c, f, warp_uniform=True)[0]
    b.bra(early, ready, uniform=True)
    b.bra(poll, _group_done(c, done_bar, phase, "test_wait"), neg=True, uniform=True)
    b.bra(late)
    # n + 1 is ready: wait for the group, hand it over, then signal n
    b.place(early)
    _await_group(c, done_bar, phase, done)
    _hand_over(c, go, nxt, lane0)
    _signal_and_refill(c, fe, sig, rel, pos, nxt, f, lane0)
    b.bra(top)  # (an early candidate has a next)
    # the group is done (or is waited for here) before n + 1 is ready: signal n, then wait for n + 1
    b.place(late)
    _await_group(c, done_bar, phase, done)
    _signal_and_refill(c, fe, sig, rel, pos, nxt, f, lane0)
    b.bra(done, has_next, neg=True, uniform=True)
    spin_wait(c, f, engine, pos, abort_w, warp_uniform=True)
    _hand_over(c, go, pos, lane0)
    b.bra(top)
    b.place(abort_w)
    # the group, waiting for a hand-over, reads the flag after it and leaves
    b.st("st.shared.u32", c.base, L.SMEM_ABORT, 1, guard=lane0)
    b.raw("bar.arrive", go)
    b.place(done)
    b.bra(c.exit_label)


def _group_done(c: Ctx, bar: SSAValue, phase: SSAValue, wait: str) -> SSAValue:
    """Whether every compute warp has arrived on the done mbarrier at ``bar`` in phase ``phase``
    (``wait``: ``test_wait``, a poll, or ``try_wait``, which may suspend a while); each lane acquires,
    the warp agrees."""
    b = c.b
    arrived = b.raw(f"mbarrier.{wait}.parity.shared::cta.b64", "{0}, [{1}], {2}", outs=["pred"],
                    ins=[bar, phase])[0]
    return b.i("vote.sync.all.pred", "pred", arrived, FULL)


def _await_group(c: Ctx, bar: SSAValue, phase: SSAValue, leave: str) -> None:
    """Wait until the group is done with the current instruction (the done mbarrier at ``bar``
    completes phase ``phase``; the next phase is waited for next), then leave to ``leave`` if it raised the abort
    flag (an unknown family)."""
    b = c.b
    again = b.new_label("cc_await")
    b.place(again)
    b.bra(again, _group_done(c, bar, phase, "try_wait"), neg=True, uniform=True)
    b.i("xor.b32", "u32", phase, 1, dst=phase)
    failed = b.ld("ld.shared.u32", "u32", c.base, L.SMEM_ABORT)
    b.bra(leave, b.setp("ne.u32", failed, 0), uniform=True)


def _signal_and_refill(c: Ctx, fe: SmemFetcher, sig: SSAValue, rel: SSAValue, pos: SSAValue, nxt: SSAValue,
                       following: Fields, lane0: SSAValue) -> None:
    """Signal instruction ``pos`` (its bits ``sig``, its counter ``rel``), stamp its end, move to
    ``nxt`` and refill the slot ``pos`` held; ``sig`` and ``rel`` become those of ``nxt`` (whose
    fields are ``following``)."""
    b = c.b
    signal(c, sig, rel, lane0)
    stamp(c, c.queue.exec_start, pos, L.TRACE_END, lane0)
    b.set(pos, nxt)
    fe.advance(pos)
    b.set(sig, following.signal)
    b.set(rel, following.rel)


def _control_go(c: Ctx) -> str:
    """The operands of the control warp's go barrier (``layout.CONTROL_GO_BARRIER``)."""
    return "%d, %d" % (L.CONTROL_GO_BARRIER, L.control_threads(c.target))


def _hand_over(c: Ctx, go: str, pos: SSAValue, lane0: SSAValue) -> None:
    """The control warp hands position ``pos`` to the group (its waits are met) and stamps its start.

    Memory-model note: release: this warp's acquires and its writes (the abort flag) reach the
    group's ``bar.sync`` on the same barrier."""
    c.b.raw("bar.arrive", go)
    stamp(c, c.queue.exec_start, pos, L.TRACE_START, lane0)


def _group_lanes(c: Ctx) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
    """The compute group's thread index, warp index, leader thread and first warp (predicates)."""
    b = c.b
    ct = b.i("sub.u32", "u32", c.tid, 32 * L.COMPUTE_FIRST_WARP)
    cw = b.i("shr.u32", "u32", ct, 5)
    return ct, cw, b.setp("eq.u32", ct, 0), b.setp("eq.u32", cw, 0)


def _first_warp_wait(c: Ctx, fw: Fields, engine: int, exec_start: SSAValue, pos: SSAValue, leader: SSAValue,
                     abort_w: str, sync: str) -> None:
    """The first compute warp waits for instruction ``fw``'s dependencies and stamps its start; on a
    watchdog report (``abort_w``) the leader raises the group's abort flag. Both end at ``sync``,
    where the other warps wait."""
    b = c.b
    spin_wait(c, fw, engine, pos, abort_w, warp_uniform=True)
    stamp(c, exec_start, pos, L.TRACE_START, leader)
    b.bra(sync)
    b.place(abort_w)
    b.st("st.shared.u32", c.base, L.SMEM_ABORT, 1, guard=leader)
    b.place(sync)


def _group_step(c: Ctx, slot: Callable[[], SSAValue], families: list[int], states: GroupStates, ct: SSAValue,
                cw: SSAValue, engine: int, pos: SSAValue, out: str, body_done: str) -> Fields:
    """One position's work for the whole compute group, from its first barrier to its second.

    The group reads the abort flag and the instruction from the window slot
    at ``slot()`` (worked out after the first barrier) together
    (:func:`_take_instruction`); it leaves to ``out`` when the first warp has
    raised the flag, and otherwise runs the instruction (:func:`_run_step`)
    and meets at the second barrier. Returns the instruction's fields, for
    the leader's signal.

    Memory-model note: the first warp's acquires (the dependency bits, and
    in a fed group the fetch warp's words) reach the group through the first
    barrier; every thread's shared-memory writes precede the leader's
    release through the second.
    """
    b = c.b
    bar_txt = "%d, %d" % (L.COMPUTE_BARRIER, c.target.compute_threads)
    b.raw("barrier.sync", bar_txt)
    f, aborted = _take_instruction(c, slot())
    _run_step(c, f, families, states, ct, cw, engine, pos, out, body_done, aborted, out)
    b.raw("barrier.sync", bar_txt)
    return f


def _take_instruction(c: Ctx, addr: SSAValue) -> tuple[Fields, SSAValue]:
    """The group's read of the instruction at ``addr`` once it holds the go: the abort flag, the sync
    words and every word a compute decodes, loaded together; returns the fields and a predicate, the
    flag raised (:func:`_run_step` tests it with the opcode, in one branch).

    Loaded one after another (the flag, tested; the sync words, the opcode tested; then the operands),
    these reads cost every step three shared-memory latencies in a row before its body, since ptxas
    keeps each load below the branch before its use. With the flag tested beside the opcode they cost
    two: the flag and the sync words, then the operands, whose loads ptxas now issues before the runtime
    condition's test. Reading the slot before the flag is tested is harmless: on an abort the words are
    not used, and the slot lies in the window whatever it holds.
    """
    b = c.b
    ab = b.ld("ld.shared.u32", "u32", c.base, L.SMEM_ABORT)
    f = smem_fields(c, addr)
    f.prefetch(isa.COMPUTE_FIELDS)
    return f, b.setp("ne.u32", ab, 0)


def _run_step(c: Ctx, f: Fields, families: list[int], states: GroupStates, ct: SSAValue, cw: SSAValue,
              engine: int, pos: SSAValue, out: str, body_done: str, aborted: SSAValue, leave: str) -> None:
    """Run instruction ``f`` on the whole group, ending at ``body_done`` (placed here): its family body,
    unless it is not a compute or its condition does not hold (skipped: no result, the same signals).
    With ``aborted`` true the group leaves to ``leave`` instead, running nothing. An unknown family
    reports and leaves to ``out``.

    The common case (no abort, a compute) takes one branch: the abort flag and the opcode are tested
    together, and only when either says so does the group find out which."""
    b = c.b
    not_run = b.new_label("cp_not_run")
    other_op = b.setp("ne.u32", f.read(isa.OPCODE), isa.OP_COMPUTE)
    b.bra(not_run, b.i("or.pred", "pred", other_op, aborted), uniform=True)
    b.bra(body_done, condition_holds(c, f), neg=True, uniform=True)
    _run_family_body(c, f, families, states, ct, cw, engine, pos, out, body_done)
    b.place(not_run)
    b.bra(leave, aborted, uniform=True)
    b.place(body_done)


def _hand_back(c: Ctx, first_warp: SSAValue, aborting: bool) -> None:
    """The first compute warp hands the current slot back to the fetch warp (``RETURN_BARRIER``),
    with the abort flag ``aborting``; the other compute warps go on.

    Memory-model note: the group's reads of the slot precede its second
    barrier (or, leaving, the first), which the first warp passed before this
    ``bar.red``; it synchronizes with the fetch warp's ``bar.red`` on the
    same barrier, so the refill copies the fetch warp issues after it cannot
    overwrite words still to be read.
    """
    b = c.b
    skip = b.new_label("cp_handed_back")
    b.bra(skip, first_warp, neg=True, uniform=True)
    flag = b.setp("eq.u32" if aborting else "ne.u32", c.zero, 0)
    b.raw("bar.red.or.pred", "{0}, %d, %d, {1}" % (L.RETURN_BARRIER, L.HANDOFF_THREADS), outs=["pred"], ins=[flag])
    b.place(skip)


def compute_fetch(c: Ctx) -> None:
    """The compute fetch warp (``layout.compute_fetch_warp``): it owns the compute engine's window.

    It walks the queue's positions ahead of the compute group: it hands
    position ``p`` over (``bar.arrive`` on ``FETCH_BARRIER``), refills the
    slot that ``p - 1`` held (handed back at the end of the previous trip),
    works out ``p + 1``'s trip words while the group runs ``p``, and waits on
    ``RETURN_BARRIER`` for ``p``'s slot, which the first compute warp hands
    back with the group's abort flag: on an abort it leaves.

    Memory-model note: each lane waits for its own copies
    (``cp.async.wait_group``), the lanes' copies and words reach each other
    through ``bar.warp.sync`` (``fetch.SmemFetcher``), and the words of ``p``
    are written before this warp's ``bar.arrive``, which synchronizes with
    the first compute warp's ``bar.sync`` on the same barrier: its reads of
    the slot see them, and the group's through its barrier after. The next
    arrive comes only after ``p``'s hand-back, so the barrier never counts
    two of this warp's arrivals as one hand-over.
    """
    b = c.b
    engine = c.target.engine_index(EngineKind.COMPUTE)
    q = c.queue
    fe = SmemFetcher(c, q, engine)
    pos = b.var("u32", 0)
    no_abort = b.setp("ne.u32", c.zero, 0)  # this warp never aborts: its flag is false
    top, done, refilled = b.new_label("cf_top"), b.new_label("cf_done"), b.new_label("cf_refilled")
    fe.prime(pos)
    b.bra(done, b.setp("ge.u32", pos, q.count), uniform=True)
    fe.step(pos)
    b.place(top)
    # release: pos's words are in its slot
    b.raw("bar.arrive", "%d, %d" % (L.FETCH_BARRIER, L.HANDOFF_THREADS))
    b.bra(refilled, b.setp("eq.u32", pos, 0), uniform=True)
    fe.advance(pos)  # pos - 1's slot, handed back
    b.place(refilled)
    nxt = b.i("add.u32", "u32", pos, 1)
    fe.step(nxt, ahead=True)
    aborted = b.raw("bar.red.or.pred", "{0}, %d, %d, {1}" % (L.RETURN_BARRIER, L.HANDOFF_THREADS),
                    outs=["pred"], ins=[no_abort])[0]
    b.bra(done, aborted, uniform=True)
    b.set(pos, nxt)
    b.bra(top, b.setp("lt.u32", pos, q.count), uniform=True)
    b.place(done)
    b.bra(c.exit_label)


def _run_family_body(c: Ctx, f: Fields, families: list[int], states: GroupStates, ct: SSAValue, cw: SSAValue,
                     engine: int, pos: SSAValue, done: str, body_done: str) -> None:
    """Decode compute instruction ``f``'s operands (their words loaded with the instruction, by
    :func:`_take_instruction`) and dispatch on its family to the body.

    One body per family in ``families`` (with the group ``states`` made before the loop), each ending
    in a branch to ``body_done``, reached by a compare-and-branch per family or, from
    ``DISPATCH_TABLE_FAMILIES`` families on, through a table indexed by the
    opcode (after a bound check); an unknown family writes the error record
    and branches to ``done``.
    """
    b = c.b
    fam = f.read(isa.FAMILY)
    cc = ComputeCtx(
        c=c, ct=ct, cw=cw, nthreads=c.target.compute_threads,
        out=b.i("add.u32", "u32", c.arena, f.read(isa.OUT_SMEM)),
        ins=[b.i("add.u32", "u32", c.arena, f.read(x)) for x in isa.IN_SMEM],
        p0=f.read(isa.P0), p1=f.read(isa.P1), p2=f.read(isa.P2), p3=f.read(isa.P3),
        f0=b.raw("mov.b32", "{0}, {1}", outs=["f32"], ins=[f.read(isa.F0)])[0], states=states,
    )
    labels = {fo: b.new_label(f"fam{fo}") for fo in families}
    if len(labels) < DISPATCH_TABLE_FAMILIES:
        for fo, lab in labels.items():
            b.bra(lab, b.setp("eq.u32", fam, fo), uniform=True)
    else:
        unknown = b.new_label("fam_unknown")
        top = max(labels)
        b.bra(unknown, b.setp("gt.u32", fam, top), uniform=True)
        b.branch_table(fam, [labels.get(fo, unknown) for fo in range(top + 1)], "fam_table", uniform=True)
        b.place(unknown)
    report(c, L.ERR_BAD_FAMILY, engine, pos, f, None, None, None)
    b.bra(done)
    for fo, lab in labels.items():
        b.place(lab)
        body_of(fo)(cc)
        b.bra(body_done)
