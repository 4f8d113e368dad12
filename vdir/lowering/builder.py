"""A small IR builder over the ``ptx`` dialect.

:class:`PtxBuilder` appends instructions to a kernel body and hands back the
SSA register values they define. Sources may be registers or Python numbers
(immediates, printed in PTX syntax); ``dst=`` writes an existing register
instead of defining a fresh one, which is how loop variables are updated.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Union

from xdsl.ir import SSAValue

from vdir.dialects import ptx

Src = Union[SSAValue, int, float, str]

MOV_TYPE = {
    "pred": "pred", "b16": "b16", "u16": "b16", "b32": "b32", "u32": "u32", "s32": "s32",
    "b64": "b64", "u64": "u64", "s64": "s64", "f32": "f32", "f64": "f64",
}


def imm(v: int | float | str) -> str:
    """PTX text of an immediate (floats as exact ``0fXXXXXXXX``)."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "0f%08X" % struct.unpack("<I", struct.pack("<f", v))[0]
    return v


class PtxBuilder:
    """Appends ``ptx`` ops to one kernel body."""

    def __init__(self, kernel: ptx.KernelOp):
        self.kernel = kernel
        self.block = kernel.body.block
        self._labels: dict[str, int] = {}

    # -- labels ----------------------------------------------------------
    def new_label(self, hint: str) -> str:
        """A fresh label name starting with ``hint``."""
        n = self._labels.get(hint, 0)
        self._labels[hint] = n + 1
        return f"$L_{hint}_{n}"

    def place(self, label: str) -> None:
        """Put ``label`` at the current position."""
        self.block.add_op(ptx.LabelOp(label))

    # -- generic emission --------------------------------------------------
    def raw(
        self,
        mnemonic: str,
        args: str,
        outs: Sequence[str] = (),
        ins: Sequence[SSAValue] = (),
        guard: SSAValue | None = None,
        neg: bool = False,
    ) -> list[SSAValue]:
        """Emit one instruction with an explicit operand template; return its results."""
        op = ptx.instr(
            mnemonic,
            args,
            outs=outs,
            ins=ins,
            guard=("@!" if neg else "@") if guard is not None else "",
            guard_pred=guard,
        )
        self.block.add_op(op)
        return list(op.results)

    def _template(self, first: int, srcs: Sequence[Src]) -> tuple[list[str], list[SSAValue]]:
        parts, vals = [], []
        for s in srcs:
            if isinstance(s, SSAValue):
                parts.append("{%d}" % (first + len(vals)))
                vals.append(s)
            else:
                parts.append(imm(s))
        return parts, vals

    def i(
        self,
        mnemonic: str,
        kind: str | None,
        *srcs: Src,
        dst: SSAValue | None = None,
        guard: SSAValue | None = None,
        neg: bool = False,
    ) -> SSAValue | None:
        """``mnemonic d, s0, s1, ...``: a fresh ``kind`` register, or ``dst``.

        With ``kind`` None and no ``dst`` the instruction has no destination.
        """
        if dst is not None:
            parts, vals = self._template(0, [dst, *srcs])
            self.raw(mnemonic, ", ".join(parts), ins=vals, guard=guard, neg=neg)
            return dst
        if kind is None:
            parts, vals = self._template(0, srcs)
            self.raw(mnemonic, ", ".join(parts), ins=vals, guard=guard, neg=neg)
            return None
        parts, vals = self._template(1, srcs)
        res = self.raw(mnemonic, ", ".join(["{0}", *parts]), outs=[kind], ins=vals, guard=guard, neg=neg)
        return res[0]

    def ld(
        self, mnemonic: str, kind: str, addr: SSAValue, off: int = 0, *,
        dst: SSAValue | None = None, guard: SSAValue | None = None, neg: bool = False,
    ) -> SSAValue:
        """``ld... d, [addr+off]``."""
        o = f"+{off}" if off else ""
        if dst is not None:
            self.raw(mnemonic, "{0}, [{1}%s]" % o, ins=[dst, addr], guard=guard, neg=neg)
            return dst
        return self.raw(mnemonic, "{0}, [{1}%s]" % o, outs=[kind], ins=[addr], guard=guard, neg=neg)[0]

    def ld_v4(self, mnemonic: str, kind: str, addr: SSAValue, off: int = 0) -> list[SSAValue]:
        """``ld....v4 {a,b,c,d}, [addr+off]``."""
        o = f"+{off}" if off else ""
        return self.raw(mnemonic, "{{{0}, {1}, {2}, {3}}}, [{4}%s]" % o, outs=[kind] * 4, ins=[addr])

    def st(
        self, mnemonic: str, addr: SSAValue, off: int, val: Src, *,
        guard: SSAValue | None = None, neg: bool = False,
    ) -> None:
        """``st... [addr+off], val``."""
        o = f"+{off}" if off else ""
        if isinstance(val, SSAValue):
            self.raw(mnemonic, "[{0}%s], {1}" % o, ins=[addr, val], guard=guard, neg=neg)
        else:
            self.raw(mnemonic, "[{0}%s], %s" % (o, imm(val)), ins=[addr], guard=guard, neg=neg)

    def st_v4(self, mnemonic: str, addr: SSAValue, off: int, vals: Sequence[SSAValue]) -> None:
        """``st....v4 [addr+off], {a,b,c,d}``."""
        o = f"+{off}" if off else ""
        self.raw(mnemonic, "[{0}%s], {{{1}, {2}, {3}, {4}}}" % o, ins=[addr, *vals])

    # -- conveniences ------------------------------------------------------
    def mov(self, kind: str, src: Src, dst: SSAValue | None = None) -> SSAValue:
        """A register holding ``src`` (or ``dst`` overwritten with it)."""
        r = self.i(f"mov.{MOV_TYPE[kind]}", kind, src, dst=dst)
        assert r is not None
        return r

    def var(self, kind: str, init: Src) -> SSAValue:
        """A mutable register initialised to ``init``."""
        return self.mov(kind, init)

    def set(self, dst: SSAValue, src: Src) -> None:
        """``dst = src``."""
        assert isinstance(dst.type, ptx.RegType)
        self.mov(dst.type.kind.data, src, dst=dst)

    def setp(self, cmp: str, a: Src, b: Src) -> SSAValue:
        """``setp.<cmp>`` (e.g. ``"eq.u32"``) into a fresh predicate."""
        r = self.i(f"setp.{cmp}", "pred", a, b)
        assert r is not None
        return r

    def bra(self, label: str, pred: SSAValue | None = None, neg: bool = False) -> None:
        """Branch to ``label``, guarded by ``pred`` (negated with ``neg``)."""
        self.raw("bra.uni" if pred is None else "bra", label, guard=pred, neg=neg)

    def for_range(self, start: Src, end: Src, step: int, body: Callable[[SSAValue], None], hint: str) -> None:
        """``for (i = start; i < end; i += step) body(i)`` with a u32 counter.

        The loop's labels are ``hint`` (the test) and ``hint + "_end"``.
        """
        i = self.var("u32", start)
        top, done = self.new_label(hint), self.new_label(hint + "_end")
        self.place(top)
        self.bra(done, self.setp("ge.u32", i, end))
        body(i)
        self.i("add.u32", "u32", i, step, dst=i)
        self.bra(top)
        self.place(done)

    def special(self, kind: str, sreg: str) -> SSAValue:
        """Read a special register (``%tid.x``, ``%globaltimer``)."""
        return self.mov(kind, sreg)

    def param(self, kind: str, name: str) -> SSAValue:
        """Load a kernel parameter."""
        return self.raw(f"ld.param.{kind}", "{0}, [%s]" % name, outs=[kind])[0]

    def pack64(self, lo: SSAValue, hi: SSAValue) -> SSAValue:
        """A b64 register from two 32-bit halves."""
        return self.raw("mov.b64", "{0}, {{{1}, {2}}}", outs=["b64"], ins=[lo, hi])[0]

    def unpack64(self, v: SSAValue) -> tuple[SSAValue, SSAValue]:
        """The 32-bit halves (lo, hi) of a 64-bit register."""
        lo, hi = self.raw("mov.b64", "{{{0}, {1}}}, {2}", outs=["b32", "b32"], ins=[v])
        return lo, hi
