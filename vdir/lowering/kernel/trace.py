"""Trace stamps (lowering option ``trace``): when each executed instruction began and ended.

A kernel lowered with ``trace`` takes one more parameter, the trace buffer
(``layout.TRACE_PARAM``). Its head holds one u64 per CTA
(``layout.TRACE_SM_WORDS``): the ``%smid`` of the SM the CTA ran on, plus
one, written by thread 0 in the prologue, so that a pace measured per CTA can
be told apart from one that belongs to the SM (which CTA lands on which SM
differs from one program to another). Then come ``layout.TRACE_STAMPS`` u64
words per instruction the program executes, at its index in the executed
order (queue after queue, loops unrolled: ``layout.Q_EXEC_START`` + queue
position), from byte ``layout.TRACE_STAMPS_OFFSET``. The engine that runs
an instruction writes ``%globaltimer`` (ns) into word ``layout.TRACE_START``
once the instruction's waits are satisfied and it begins, and into
``layout.TRACE_END`` once it has signalled its completion (the load engine:
at retirement, when its bytes have landed). One thread writes each stamp, a
plain ``st.global`` that nothing in the launch reads. Without the option
nothing here is emitted.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from vdir.lowering import layout as L
from vdir.lowering.kernel.context import Ctx

#: bytes of one instruction's stamps in the trace buffer
STAMP_BYTES = 8 * L.TRACE_STAMPS


def stamp(c: Ctx, exec_start: SSAValue, pos: SSAValue, which: int, writer: SSAValue) -> None:
    """``writer`` stores ``%globaltimer`` as stamp ``which`` of executed instruction ``exec_start + pos``
    (no trace: nothing)."""
    if c.trace is None:
        return
    b = c.b
    now = b.special("u64", "%globaltimer")
    index = b.i("add.u32", "u32", exec_start, pos)
    offset = b.i("mul.wide.u32", "u64", index, STAMP_BYTES)
    address = b.i("add.u64", "u64", c.trace, offset)
    b.st("st.global.u64", address, L.TRACE_STAMPS_OFFSET + 8 * which, now, guard=writer)


def record_sm(c: Ctx, writer: SSAValue) -> None:
    """``writer`` stores the CTA's ``%smid`` + 1 in its word at the head of the trace buffer (no trace:
    nothing)."""
    if c.trace is None:
        return
    b = c.b
    smid = b.special("u32", "%smid")
    word = b.i("cvt.u64.u32", "u64", b.i("add.u32", "u32", smid, 1))
    offset = b.i("mul.wide.u32", "u64", c.sm, L.TRACE_SM_WORD_BYTES)
    b.st("st.global.u64", b.i("add.u64", "u64", c.trace, offset), 0, word, guard=writer)
