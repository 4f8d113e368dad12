"""Waiting, signalling and the watchdog: how the engines order their work.

An instruction waits for the dependency bits (``WAIT_MASK`` / ``WAIT_PARITY``)
and a global counter (``WAIT_COUNTER`` reaching ``epoch * WAIT_COUNT``)
(:func:`ready_check`, :func:`spin_wait`); on completion its engine toggles its
signal bits and releases its counter (:func:`signal`). A stalled engine polls
the abort flag and the watchdog timer (:func:`stall_poll`), and the first
role to give up writes the error record (:func:`report`).

Memory-model notes, written where the instructions are emitted:

* dependency bits are toggled with ``atom.release.cta.shared.xor.b64`` and
  read with ``ld.acquire.cta.shared.b64`` (lowering option
  ``bit_signal=xor64``), or per 32-bit half with
  ``red.release.cta.shared.xor.b32`` and read with
  ``ld.acquire.cta.shared.v2.b32``, two 32-bit acquires each pairing with
  the release of its half (``bit_signal=xor32``); a role that waits on them
  therefore sees every shared/global write the signalling role made before
  signalling. Hopper has no 64-bit shared-memory XOR: ptxas assembles the
  64-bit one to a load and compare-and-swap loop, while the 32-bit one is
  native (and preceded by ``MEMBAR.ALL.CTA`` for its release). A waiter
  needs no atomic view of both halves: each bit it waits for is a toggle it
  sees or not, and a half it has not seen yet only makes it poll again;
* global counters are released with ``red.release.gpu`` (a release: the
  writes ordered before it, including other lanes' and threads' through the
  role's barrier, are cumulative) after the releasing role's writes and read
  with ``ld.acquire.gpu``.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from vdir.lowering import layout as L
from vdir.lowering.kernel.context import FULL, Ctx
from vdir.lowering.kernel.fetch import Fields
from vdir.lowering.kernel.launch import counter_target


def ready_check(c: Ctx, f: Fields, warp_uniform: bool) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
    """Non-blocking: (ready, bitmap, counter value, wanted) for ``f``.

    ready = ((bitmap ^ parity) & mask) == 0 and, with a counter,
    counter >= epoch * count (modulo 2**32). With ``warp_uniform`` every lane reads and the
    warp agrees through ``vote.sync.all`` (so each lane did its own acquire).
    """
    b = c.b
    # acquire: pairs with the signalling engines' atom.release.cta
    if c.options.bit_signal == "xor32":
        lo, hi = b.raw("ld.acquire.cta.shared.v2.b32", "{{{0}, {1}}}, [{2}+%d]" % L.SMEM_BITMAP,
                       outs=["b32", "b32"], ins=[c.base])
        bm = b.pack64(lo, hi)
    else:
        bm = b.ld("ld.acquire.cta.shared.b64", "b64", c.base, L.SMEM_BITMAP)
    t = b.i("xor.b64", "b64", bm, f.parity)
    t = b.i("and.b64", "b64", t, f.mask)
    p_bits = b.setp("eq.b64", t, 0)
    p_noctr = b.setp("eq.u32", f.wctr, 0)
    cidx = b.i("add.u32", "u32", f.wctr, -1)
    coff = b.i("mul.wide.u32", "u64", cidx, 4)
    caddr = b.i("add.u64", "u64", c.counters, coff)
    cval = b.var("u32", 0)
    # acquire at gpu scope: pairs with the producer SM's red.release.gpu
    b.ld("ld.acquire.gpu.global.u32", "u32", caddr, dst=cval, guard=p_noctr, neg=True)
    wanted = counter_target(c, f.wcount)
    # wrap-safe (isa.counter_reached): the epoch advances on the device for ever
    p_ctr = b.setp("ge.s32", b.i("sub.u32", "u32", cval, wanted), 0)
    p_ctr = b.i("or.pred", "pred", p_ctr, p_noctr)
    ready = b.i("and.pred", "pred", p_bits, p_ctr)
    if warp_uniform:
        ready = b.i("vote.sync.all.pred", "pred", ready, FULL)
    return ready, bm, cval, wanted


def abort_check(c: Ctx, warp_uniform: bool) -> SSAValue:
    """A predicate: some role (on any SM) has written the error record."""
    b = c.b
    code = b.ld("ld.relaxed.gpu.global.u32", "u32", c.err, 0)
    p = b.setp("ne.u32", code, 0)
    if warp_uniform:
        p = b.i("vote.sync.any.pred", "pred", p, FULL)
    return p


def watchdog_expired(c: Ctx, t0: SSAValue, warp_uniform: bool) -> SSAValue:
    """A predicate: more than the watchdog bound has passed since ``t0``.

    ``t0`` is a register that holds 0 until the first call after progress:
    the timer is read only while an engine is actually stalled.
    """
    b = c.b
    now = b.special("u64", "%globaltimer")
    unset = b.setp("eq.u64", t0, 0)
    b.i("mov.u64", None, now, dst=t0, guard=unset)
    el = b.i("sub.u64", "u64", now, t0)
    p = b.setp("gt.u64", el, c.bound)
    if warp_uniform:
        p = b.i("vote.sync.any.pred", "pred", p, FULL)
    return p


#: SM clock cycles a stalled engine spins on shared memory alone before it
#: also polls the global abort flag and the watchdog timer (keeps the
#: reaction to a toggled bit fast while the memory system is busy)
FAST_SPIN_CYCLES = 1 << 16


def stall_poll(c: Ctx, tclk: SSAValue, tgl: SSAValue, warp_uniform: bool, retry: str, on_abort: str) -> None:
    """The slow part of a spin: branch to ``retry`` unless the engine has
    stalled for a while; then to ``on_abort`` if an abort is flagged; then to
    ``retry`` unless the watchdog expired; else fall through (to a report).

    ``tclk`` / ``tgl`` are 0 until the stall's first poll, and the caller
    resets them to 0 on progress.
    """
    b = c.b
    clk = b.special("u64", "%clock64")
    b.i("mov.u64", None, clk, dst=tclk, guard=b.setp("eq.u64", tclk, 0))
    d = b.i("sub.u64", "u64", clk, tclk)
    slow = b.setp("ge.u64", d, FAST_SPIN_CYCLES)
    if warp_uniform:
        slow = b.i("vote.sync.any.pred", "pred", slow, FULL)
    b.bra(retry, slow, neg=True, uniform=warp_uniform)
    b.bra(on_abort, abort_check(c, warp_uniform), uniform=warp_uniform)
    b.bra(retry, watchdog_expired(c, tgl, warp_uniform), neg=True, uniform=warp_uniform)


def check_uniform(c: Ctx, pred: SSAValue) -> None:
    """Lowering option ``uniform_checks``: check a predicate declared warp-uniform.

    ``vote.sync.uni`` over the threads that reach it (``activemask``); where
    they disagree, the error record ``ERR_DIVERGENT`` names the SM, the warp
    and the check's number, which is also its label's
    (``layout.UNIFORM_CHECK_LABEL``). The branch that follows is a plain
    ``bra``, so the kernel goes on to its end, where the launch raises.
    """
    b = c.b
    threads = b.raw("activemask.b32", "{0}", outs=["b32"])[0]
    agree = b.i("vote.sync.uni.pred", "pred", pred, threads)
    number = b.labels_made(L.UNIFORM_CHECK_LABEL)
    ok = b.new_label(L.UNIFORM_CHECK_LABEL)
    b.bra(ok, agree)
    old = b.raw("atom.relaxed.gpu.global.cas.b32", "{0}, [{1}], 0, %d" % L.ERR_DIVERGENT, outs=["b32"],
                ins=[c.err])[0]
    won = b.setp("eq.u32", old, 0)
    st = "st.relaxed.gpu.global.u32"
    b.st(st, c.err, 4 * L.E_SM, c.sm, guard=won)
    b.st(st, c.err, 4 * L.E_WARP, c.warp, guard=won)
    b.st(st, c.err, 4 * L.E_VALUE, number, guard=won)
    b.place(ok)


def report(
    c: Ctx, code: int, engine: int, pos: SSAValue, f: Fields,
    bm: SSAValue | None, cval: SSAValue | None, wanted: SSAValue | None, value: SSAValue | None = None,
) -> None:
    """Write the error record; one ``atom.cas`` winner fills it in.

    The CAS makes the code word non-zero first, which is also the abort flag
    every spin loop polls.
    """
    b = c.b
    old = b.raw("atom.relaxed.gpu.global.cas.b32", "{0}, [{1}], 0, %d" % code, outs=["b32"], ins=[c.err])[0]
    won = b.setp("eq.u32", old, 0)
    skip = b.new_label("report_done")
    b.bra(skip, won, neg=True)
    st = "st.relaxed.gpu.global.u32"
    b.st(st, c.err, 4 * L.E_SM, c.sm)
    b.st(st, c.err, 4 * L.E_ENGINE, engine)
    b.st(st, c.err, 4 * L.E_POS, pos)
    b.st(st, c.err, 4 * L.E_UOP, f.uop)
    for word, v in ((L.E_WAIT_MASK, f.mask), (L.E_WAIT_PARITY, f.parity), (L.E_BITMAP, bm)):
        if v is None:
            continue
        lo, hi = b.unpack64(v)
        b.st(st, c.err, 4 * word, lo)
        b.st(st, c.err, 4 * word + 4, hi)
    b.st(st, c.err, 4 * L.E_COUNTER, f.wctr)
    if cval is not None and wanted is not None:
        b.st(st, c.err, 4 * L.E_COUNTER_VALUE, cval)
        b.st(st, c.err, 4 * L.E_COUNTER_WANTED, wanted)
    if value is not None:
        b.st(st, c.err, 4 * L.E_VALUE, value)
    b.place(skip)


def spin_wait(c: Ctx, f: Fields, engine: int, pos: SSAValue, on_abort: str, warp_uniform: bool) -> None:
    """Block until ``f`` may start; on watchdog expiry or abort jump to ``on_abort``."""
    b = c.b
    t0 = b.var("u64", 0)
    tclk = b.var("u64", 0)
    top, go = b.new_label("spin"), b.new_label("go")
    b.place(top)
    ready, bm, cval, wanted = ready_check(c, f, warp_uniform)
    b.bra(go, ready, uniform=warp_uniform)
    stall_poll(c, tclk, t0, warp_uniform, top, on_abort)
    report(c, L.ERR_WATCHDOG, engine, pos, f, bm, cval, wanted)
    b.bra(on_abort)
    b.place(go)


def signal(c: Ctx, sig: SSAValue, rel: SSAValue, leader: SSAValue, release_first: SSAValue | None = None,
           relaxed: bool = False) -> None:
    """Completion by ``leader``: toggle the signal bits, release the counter.

    The caller has made the role's writes visible to ``leader`` (a barrier;
    async-proxy writes also fenced with ``fence.proxy.async``).
    ``release_first`` (a store's ``isa.TRANSFER_RELEASE_FIRST``; None: never)
    swaps the two where it holds: the counter's release, then the bits.
    ``relaxed``: ``leader`` has executed ``fence.acq_rel.gpu`` since those
    writes, so the counter's add is ``red.relaxed.gpu`` (a fence and a
    strong write after it are a release pattern; the store engine's batched
    releases, lowering option ``batch_releases``).

    Memory-model note: both are releases of the same writes, so either order
    gives every waiter what it waits for. The swap is for time: the release's
    ``MEMBAR.GPU`` waits for the SM's bulk copies in flight, and a stream
    load that waits on the bits would otherwise issue while it waits and
    lengthen it (``vdir.analysis.stream_holds``).
    """
    b = c.b
    if release_first is None:
        _toggle_bits(c, sig, leader)
        has_rel = b.i("and.pred", "pred", b.setp("ne.u32", rel, 0), leader)
        _counter_release(c, rel, relaxed)(has_rel)
        return
    assert not relaxed, "a batched release follows its fence: nothing to order before the bits"
    has_rel = b.i("and.pred", "pred", b.setp("ne.u32", rel, 0), leader)
    release = _counter_release(c, rel)
    release(b.i("and.pred", "pred", has_rel, release_first))
    _toggle_bits(c, sig, leader)
    release(b.i("and.pred", "pred", has_rel, b.i("not.pred", "pred", release_first)))


def _toggle_bits(c: Ctx, sig: SSAValue, leader: SSAValue) -> None:
    """``leader`` toggles the signal bits ``sig`` (none where ``sig`` is 0)."""
    b = c.b
    # release at cta scope (per half with xor32, see the module): everything
    # this role wrote to shared memory happens-before a waiter's ld.acquire
    # that observes the toggled bits
    if c.options.bit_signal == "xor32":
        for k, half in enumerate(b.unpack64(sig)):
            p = b.i("and.pred", "pred", b.setp("ne.b32", half, 0), leader)
            b.raw("red.release.cta.shared.xor.b32", "[{0}+%d], {1}" % (L.SMEM_BITMAP + 4 * k),
                  ins=[c.base, half], guard=p)
    else:
        p = b.i("and.pred", "pred", b.setp("ne.b64", sig, 0), leader)
        b.raw("atom.release.cta.shared.xor.b64", "{0}, [{1}], {2}", outs=["b64"], ins=[c.base, sig], guard=p)


def _counter_release(c: Ctx, rel: SSAValue, relaxed: bool = False) -> Callable[[SSAValue], None]:
    """A function that emits the release of counter ``rel`` (index + 1) under a predicate (the
    caller's: ``rel`` is not 0 and the thread leads), the counter's address computed once, here;
    ``relaxed``: a relaxed add after the caller's fence (:func:`signal`)."""
    b = c.b
    ridx = b.i("add.u32", "u32", rel, -1)
    roff = b.i("mul.wide.u32", "u64", ridx, 4)
    raddr = b.i("add.u64", "u64", c.counters, roff)

    def release(p: SSAValue) -> None:
        if relaxed:  # after the caller's fence.acq_rel.gpu: a release pattern, pairs as the red.release does
            b.raw("red.relaxed.gpu.global.add.u32", "[{0}], 1", ins=[raddr], guard=p)
            return
        # red.release.gpu is a release: cumulative over the writes of the whole
        # role (ordered before this thread by the caller's barrier), which become
        # visible before the counter moves. Option release_fence=1 adds the
        # equivalent fence.acq_rel.gpu in front of it (measured: 3% slower on the
        # 16-layer MLP stack, no other effect).
        if c.options.release_fence:
            b.raw("fence.acq_rel.gpu", "", guard=p)
        # release at gpu scope: pairs with the waiting SM's ld.acquire.gpu
        b.raw("red.release.gpu.global.add.u32", "[{0}], 1", ins=[raddr], guard=p)

    return release
