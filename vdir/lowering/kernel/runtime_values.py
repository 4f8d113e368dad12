"""Runtime values in the kernel: micro-op conditions and runtime offsets.

An instruction may name a runtime value (``isa.GUARD_*``, ``isa.DYN_*``):
a launch-time scalar in the scalar block (``p_scalars``, written by the host
before the launch) or an ``i32`` element of a buffer (written by the host or
by an earlier micro-op of the launch). Every thread of the engine that runs
the instruction reads the value itself, after the instruction's waits.

Memory-model note: a buffer element written in this launch by another SM's
store is ordered before this read by the counter wait (each lane's
``ld.acquire.gpu`` in ``sync.ready_check``, passed on to the compute group by
its barrier). The store may have been a tensor (async-proxy) copy; the
``fence.proxy.async.global`` before the read orders this thread's generic
read with the async proxy's view of global memory, as the loads do before a
bulk read. The read itself is ``ld.relaxed.gpu``: never a non-coherent
(``.nc``) load, whose cache may hold a line from before the write. The scalar
block does not change during a launch.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from vdir import isa
from vdir.lowering import layout as L
from vdir.lowering.kernel.context import Ctx
from vdir.lowering.kernel.fetch import Fields
from vdir.lowering.kernel.sync import report


def runtime_value(c: Ctx, source: SSAValue, index: SSAValue) -> SSAValue:
    """The s32 value that (``source``, ``index``) names (``source`` is not ``SOURCE_NONE``)."""
    b = c.b
    is_scalar = b.setp("eq.u32", source, isa.SOURCE_SCALAR)
    from_buffer = b.i("not.pred", "pred", is_scalar)
    bufi = b.i("sub.u32", "u32", source, isa.SOURCE_BUFFER0)
    slot = b.i("mad.wide.u32", "u64", bufi, 8, c.buffers)
    base = b.var("u64", 0)
    b.ld("ld.global.nc.u64", "u64", slot, dst=base, guard=from_buffer)
    b.raw("fence.proxy.async.global", "", guard=from_buffer)
    base = b.i("selp.b64", "u64", c.scalars, base, is_scalar)
    addr = b.i("mad.wide.u32", "u64", index, 4, base)
    return b.ld("ld.relaxed.gpu.global.s32", "s32", addr)


def condition_holds(c: Ctx, f: Fields) -> SSAValue:
    """A predicate: the instruction has no condition, or ``coeff * v + const >= 0`` holds.

    The value and the condition's words are read only when there is one (a
    branch: most instructions have none), uncached (``Fields.read_on_branch``).
    """
    b = c.b
    source = f.read(isa.GUARD_SOURCE)
    runs = b.var("u32", 1)
    done = b.new_label("cond_done")
    b.bra(done, b.setp("eq.u32", source, isa.SOURCE_NONE), uniform=True)
    v = runtime_value(c, source, f.read_on_branch(isa.GUARD_INDEX))
    coeff = b.i("cvt.s64.s32", "s64", f.read_on_branch(isa.GUARD_COEFF))
    const = b.i("cvt.s64.s32", "s64", f.read_on_branch(isa.GUARD_CONST))
    test = b.i("mad.lo.s64", "s64", coeff, b.i("cvt.s64.s32", "s64", v), const)
    b.i("selp.u32", "u32", 1, 0, b.setp("ge.s64", test, 0), dst=runs)
    b.place(done)
    return b.setp("ne.u32", runs, 0)


def runtime_offset(
    c: Ctx, f: Fields, off_lo: SSAValue, off_hi: SSAValue, engine: int, pos: SSAValue, on_error: str
) -> tuple[SSAValue, SSAValue]:
    """The region's byte offset with its runtime term added; out of range: report and go to ``on_error``.

    ``global_offset + v * dyn_scale`` (two's complement u64) for
    ``dyn_min <= v <= dyn_max``; an offset without a runtime term is
    returned as it is.
    """
    b = c.b
    source = f.read(isa.DYN_SOURCE)
    offset = b.var("b64", b.pack64(off_lo, off_hi))
    done, ok = b.new_label("offset_done"), b.new_label("offset_ok")
    b.bra(done, b.setp("eq.u32", source, isa.SOURCE_NONE), uniform=True)
    v = runtime_value(c, source, f.read_on_branch(isa.DYN_INDEX))
    low = b.setp("lt.s32", v, f.read_on_branch(isa.DYN_MIN))
    high = b.setp("gt.s32", v, f.read_on_branch(isa.DYN_MAX))
    b.bra(ok, b.i("or.pred", "pred", low, high), neg=True, uniform=True)
    report(c, L.ERR_BOUNDS, engine, pos, f, None, None, None, value=v)
    b.bra(on_error)
    b.place(ok)
    step = b.i("mul.wide.s32", "s64", v, f.read_on_branch(isa.DYN_SCALE))
    b.i("add.s64", "s64", offset, step, dst=offset)
    b.place(done)
    return b.unpack64(offset)
