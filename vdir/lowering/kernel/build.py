"""The kernel's prologue and its split into warp roles: :func:`build_kernel`."""

from __future__ import annotations

from xdsl.ir import SSAValue

from vdir import isa
from vdir.dialects import ptx
from vdir.lowering import layout as L
from vdir.lowering.builder import PtxBuilder
from vdir.lowering.kernel.compute_engine import compute_control, compute_engine, compute_fetch
from vdir.lowering.kernel.context import Ctx
from vdir.lowering.kernel.copies import mbar_count
from vdir.lowering.kernel.fetch import load_queue
from vdir.lowering.kernel.launch import (
    check_scalars,
    finish,
    finish_count_address,
    launches_done,
    read_finish_count,
)
from vdir.lowering.kernel.load_engine import load_engine
from vdir.lowering.kernel.store_engine import store_engine
from vdir.lowering.kernel.sync import check_uniform
from vdir.lowering.kernel.trace import record_sm
from vdir.lowering.options import LoweringOptions
from vdir.target import EngineKind, TargetDescription


def build_kernel(kernel: ptx.KernelOp, target: TargetDescription, families: list[int],
                 options: LoweringOptions, scalars: list[isa.ScalarInfo] | None = None, loops: bool = False,
                 reduces: bool = False, flag_words: bool = False, release_first: bool = False) -> None:
    """Fill ``kernel``'s body: prologue, then one branch per warp role, then the shared exit.

    The roles: warp ``LOAD_WARP`` the load engine, ``STORE_WARP`` the store
    engine, the compute group from ``COMPUTE_FIRST_WARP``, after it the
    stream engine's warp where the target has one, and last, where the CTA
    has room for it, in a kernel that runs loops the compute fetch warp
    (``layout.compute_fetch_warp``), in one without the compute control warp
    (``layout.compute_control_warp``, lowering option ``control_warp``).

    ``scalars`` are the program's launch-time scalars, whose ranges the
    prologue checks (:func:`vdir.lowering.kernel.launch.check_scalars`).
    ``loops``: the program has loop records, which the engines then run
    (:mod:`vdir.lowering.kernel.fetch`); without, they walk plain queues.
    ``reduces``: some store reduces (``isa.REDUCE``): the store engine then
    carries the bulk-reduction path (:func:`vdir.lowering.kernel.copies.reduce_rows`).
    ``flag_words``: some load or store moves flag words (``isa.TRANSFER_FLAG_WORDS``): the engines then
    carry those paths (:mod:`vdir.lowering.kernel.flag_words`).
    ``release_first``: some store releases its counter before its bits (``isa.TRANSFER_RELEASE_FIRST``):
    the store engine then reads the flag (:func:`vdir.lowering.kernel.sync.signal`).
    """
    L.check_engines(target)
    assert target.num_sms <= isa.SYNC_MAX_SMS, "the sync block holds a finish count per SM"
    b = PtxBuilder(kernel)
    p = {name: b.param(t, name) for t, name in L.kernel_params(options.trace)}
    gl = {k: b.i("cvta.to.global.u64", "u64", p[k])
          for k in ("p_instrs", "p_queues", "p_buffers", "p_sync", "p_error", "p_tmaps", "p_scalars")}
    tid = b.special("u32", "%tid.x")
    warp = b.i("shr.u32", "u32", tid, 5)
    sm = b.special("u32", "%ctaid.x")
    base = b.mov("u32", "vdir_smem")
    sync = gl["p_sync"]
    queue = load_queue(b, gl["p_queues"], sm, target.num_engines, _warp_engine(b, warp, target))
    counters = b.i("add.u64", "u64", sync, isa.WORD_BYTES * isa.SYNC_HEADER_WORDS)
    finish_address = finish_count_address(b, sync, sm)
    finish_count = read_finish_count(b, finish_address)  # used after the first barrier
    c = Ctx(
        b=b, target=target, instrs=gl["p_instrs"], queues=gl["p_queues"], buffers=gl["p_buffers"],
        sync=sync, counters=counters,
        tmaps=gl["p_tmaps"], scalars=gl["p_scalars"], queue=queue,
        err=gl["p_error"], bound=p["p_watchdog_ns"],
        tid=tid, warp=warp, lane=b.i("and.b32", "u32", tid, 31),
        sm=sm, base=base, arena=b.i("add.u32", "u32", base, L.HEADER_BYTES),
        options=options, zero=b.mov("u32", 0), exit_label=b.new_label("kernel_exit"),
        trace=b.i("cvta.to.global.u64", "u64", p[L.TRACE_PARAM]) if options.trace else None, loops=loops,
        reduces=reduces, flag_words=flag_words, release_first=release_first,
    )
    if options.uniform_checks:
        b.uniform_check = lambda pred: check_uniform(c, pred)
    # thread 0 clears the header and initialises the mbarrier ring
    t0 = b.setp("eq.u32", tid, 0)
    b.st("st.shared.u64", base, L.SMEM_BITMAP, 0, guard=t0)
    b.st("st.shared.u32", base, L.SMEM_ABORT, 0, guard=t0)
    b.st("st.shared.u32", base, L.SMEM_SIGNALLED, 0, guard=t0)
    for ring, engine in enumerate(target.load_engines):
        for s in range(c.options.ring_depth(target.engines[engine].kind)):
            b.raw("mbarrier.init.shared::cta.b64", "[{0}+%d], %d" % (L.ring_mbarriers(ring) + 8 * s, mbar_count(c)),
                  ins=[base], guard=t0)
    control_warp = L.compute_control_warp(target, loops, options.control_warp)
    if control_warp is not None:  # the compute group's done mbarrier (kernel.compute_engine)
        b.raw("mbarrier.init.shared::cta.b64", "[{0}+%d], %d" % (L.SMEM_CONTROL_DONE, L.control_done_arrivals(target)),
              ins=[base], guard=t0)
    # make the initialised mbarriers visible to the async proxy and the CTA
    b.raw("fence.mbarrier_init.release.cluster", "", guard=t0)
    b.raw("fence.proxy.async.shared::cta", "", guard=t0)
    record_sm(c, t0)
    b.raw("bar.sync", "0")
    c.launches_done = launches_done(b, finish_count)
    check_scalars(c, list(scalars or ()))
    lab_store, lab_compute = b.new_label("role_store"), b.new_label("role_compute")
    b.bra(lab_store, b.setp("eq.u32", c.warp, L.STORE_WARP))
    lab_stream = b.new_label("role_stream") if L.has_stream_engine(target) else None
    if lab_stream is not None:
        b.bra(lab_stream, b.setp("eq.u32", c.warp, L.stream_warp(target)))
    fetch_warp = L.compute_fetch_warp(target, loops)
    lab_fetch = None
    if fetch_warp is not None:
        lab_fetch = b.new_label("role_compute_fetch")
        b.bra(lab_fetch, b.setp("eq.u32", c.warp, fetch_warp))
    lab_control = None
    if control_warp is not None:
        lab_control = b.new_label("role_compute_control")
        b.bra(lab_control, b.setp("eq.u32", c.warp, control_warp))
    b.bra(lab_compute, b.setp("ge.u32", c.warp, L.COMPUTE_FIRST_WARP))
    load_engine(c)
    b.place(lab_store)
    store_engine(c)
    if lab_stream is not None:
        b.place(lab_stream)
        load_engine(c, EngineKind.STREAM)
    if lab_fetch is not None:
        b.place(lab_fetch)
        compute_fetch(c)
    if lab_control is not None:
        b.place(lab_control)
        compute_control(c)
    b.place(lab_compute)
    compute_engine(c, families)
    b.place(c.exit_label)
    finish(c, finish_address, finish_count)


def _warp_engine(b: PtxBuilder, warp: SSAValue, target: TargetDescription) -> SSAValue:
    """The engine index of ``warp``'s role (the roles of :func:`build_kernel`): the load, store and
    stream warps their engines', every other warp (the compute group, the compute fetch or control
    warp) the compute engine's."""
    engine = b.mov("u32", target.engine_index(EngineKind.COMPUTE))
    roles = [(L.LOAD_WARP, EngineKind.LOAD), (L.STORE_WARP, EngineKind.STORE)]
    if L.has_stream_engine(target):
        roles.append((L.stream_warp(target), EngineKind.STREAM))
    for role_warp, kind in roles:
        engine = b.i("selp.u32", "u32", target.engine_index(kind), engine, b.setp("eq.u32", warp, role_warp))
    return engine
