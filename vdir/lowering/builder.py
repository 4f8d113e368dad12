"""A small IR builder over the ``ptx`` dialect.

:class:`PtxBuilder` appends instructions to a kernel body and hands back the
SSA register values they define. Sources may be registers, Python numbers
(immediates: ``int``, or ``float`` as an exact ``f32``) or names (a special
register ``"%tid.x"``, or a symbol); ``dst=`` writes an existing register
instead of defining a fresh one, which is how loop variables are updated.
Every method builds typed operand slots (:mod:`vdir.dialects.ptx`); only
:meth:`PtxBuilder.raw` takes the operand list in PTX syntax, which it parses
into slots.
"""

from __future__ import annotations

import re
import string
import struct
from collections.abc import Callable, Sequence
from typing import overload

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, SymbolRefAttr, f32, i64
from xdsl.ir import Attribute, SSAValue

from vdir.dialects import ptx

Src = SSAValue | int | float | str

MOV_TYPE = {
    "pred": "pred", "b16": "b16", "u16": "b16", "b32": "b32", "u32": "u32", "s32": "s32",
    "b64": "b64", "u64": "u64", "s64": "s64", "f32": "f32", "f64": "f64",
}

#: a value placeholder ``{n}`` of a :meth:`PtxBuilder.raw` template, after formatting
_VALUE = re.compile(r"\x00(\d+)\x00")
_INTEGER = re.compile(r"-?\d+")
_FLOAT_BITS = re.compile(r"0f([0-9A-Fa-f]{8})")
_SYMBOL = re.compile(r"[A-Za-z_$][\w$]*")
_ADDRESS = re.compile(r"\[([^\[\],+]+)(?:\+(-?\d+))?\]")


def immediate(v: int | float) -> Attribute:
    """The immediate attribute of a Python number (``bool`` as 0/1, ``float`` as ``f32``)."""
    if isinstance(v, float):
        return FloatAttr(v, f32)
    return IntegerAttr(int(v), i64)


def named_source(name: str) -> Attribute:
    """The slot of a named source: a special register (``%tid.x``) or a symbol."""
    if name.startswith("%"):
        return ptx.SpecialRegAttr(name)
    if not _SYMBOL.fullmatch(name):
        raise ValueError(f"not a PTX special register or symbol: '{name}'")
    return SymbolRefAttr(name)


def address_space(mnemonic: str, index: int) -> str:
    """The state space of the ``index``-th address operand of ``mnemonic``.

    The state-space modifiers name the addresses in order (``cp.async.shared.global
    [dst], [src]``); a further address (an mbarrier) takes the first one.
    """
    spaces = [m for m in mnemonic.split(".")[1:] if m in ptx.SPACE_MODS]
    if not spaces:
        return "generic"
    return spaces[index] if index < len(spaces) else spaces[0]


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and braces, each part stripped."""
    parts, depth, start = [], 0, 0
    for n, ch in enumerate(text):
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:n].strip())
            start = n + 1
    last = text[start:].strip()
    return parts + [last] if last or parts else parts


class _TemplateParser:
    """Parses a :meth:`PtxBuilder.raw` operand template into typed slots.

    ``{n}`` names value ``n`` of results-then-operands; a result becomes a
    :class:`~vdir.dialects.ptx.ResultSlotAttr` (results must appear in order),
    an operand an :class:`~vdir.dialects.ptx.OperandSlotAttr`.
    """

    def __init__(self, mnemonic: str, n_results: int, ins: Sequence[SSAValue]):
        self.mnemonic = mnemonic
        self.n_results = n_results
        self.ins = ins
        self.operands: list[SSAValue] = []
        self.next_result = 0
        self.addresses = 0

    def parse(self, template: str) -> list[Attribute]:
        """The slots of ``template``."""
        text = "".join(
            literal + (f"\x00{field}\x00" if field is not None else "")
            for literal, field, _, _ in string.Formatter().parse(template)
        )
        slots = [self.slot(part) for part in _split_top_level(text)]
        if self.next_result != self.n_results:
            raise ValueError(f"{self.mnemonic}: template '{template}' does not name every result")
        return slots

    def value(self, index: int) -> Attribute:
        """The slot of value ``index``."""
        if index < self.n_results:
            if index != self.next_result:
                raise ValueError(f"{self.mnemonic}: results must appear in order in the template")
            self.next_result += 1
            return ptx.ResultSlotAttr()
        self.operands.append(self.ins[index - self.n_results])
        return ptx.OperandSlotAttr()

    def slot(self, part: str) -> Attribute:
        """The slot of one operand text."""
        if m := _VALUE.fullmatch(part):
            return self.value(int(m.group(1)))
        if part.startswith("{") and part.endswith("}"):
            return ptx.VectorAttr([self.slot(e) for e in _split_top_level(part[1:-1])])
        if part.startswith("[") and "," in part:
            return self.tensor_address(part)
        if m := _ADDRESS.fullmatch(part):
            space = address_space(self.mnemonic, self.addresses)
            self.addresses += 1
            base = self.slot(m.group(1).strip())
            if not isinstance(base, (ptx.OperandSlotAttr, SymbolRefAttr)):
                return self.bad(part)
            return ptx.AddressAttr(space, base, int(m.group(2) or 0))
        if _INTEGER.fullmatch(part):
            return immediate(int(part))
        if m := _FLOAT_BITS.fullmatch(part):
            return immediate(struct.unpack("<f", struct.pack("<I", int(m.group(1), 16)))[0])
        return named_source(part)

    def tensor_address(self, part: str) -> Attribute:
        """The slot of ``[{n}, {x, y, z}]``: a tensor-map register and its coordinates."""
        base, coords = _split_top_level(part[1:-1])
        self.addresses += 1
        if not isinstance(self.slot(base), ptx.OperandSlotAttr):
            return self.bad(part)
        vector = self.slot(coords)
        if not isinstance(vector, ptx.VectorAttr):
            return self.bad(part)
        return ptx.TensorAddressAttr(vector.elements.data)

    def bad(self, part: str) -> Attribute:
        """Reject an operand text the dialect has no slot for."""
        raise ValueError(f"{self.mnemonic}: cannot read operand '{part}'")


class PtxBuilder:
    """Appends ``ptx`` ops to one kernel body."""

    def __init__(self, kernel: ptx.KernelOp):
        self.kernel = kernel
        self.block = kernel.body.block
        self._labels: dict[str, int] = {}
        #: where set, :meth:`bra` hands it each predicate a caller declares warp-uniform (to emit a
        #: check of the claim) and branches with a plain ``bra``; unset, such a branch is a ``bra.uni``
        self.uniform_check: Callable[[SSAValue], None] | None = None

    # -- labels ----------------------------------------------------------
    def new_label(self, hint: str) -> str:
        """A fresh label name starting with ``hint``."""
        n = self._labels.get(hint, 0)
        self._labels[hint] = n + 1
        return f"$L_{hint}_{n}"

    def labels_made(self, hint: str) -> int:
        """How many labels :meth:`new_label` has made from ``hint``: the number the next one gets."""
        return self._labels.get(hint, 0)

    def place(self, label: str) -> None:
        """Put ``label`` at the current position."""
        self.block.add_op(ptx.LabelOp(label))

    # -- generic emission --------------------------------------------------
    def emit(
        self,
        mnemonic: str,
        slots: Sequence[Attribute],
        operands: Sequence[SSAValue] = (),
        result_kinds: Sequence[str] = (),
        guard: SSAValue | None = None,
        neg: bool = False,
    ) -> list[SSAValue]:
        """Append one instruction built from typed operand slots; return its results."""
        op = ptx.instr(mnemonic, slots, operands, result_kinds, guard, neg)
        self.block.add_op(op)
        return list(op.results)

    def raw(
        self,
        mnemonic: str,
        args: str,
        outs: Sequence[str] = (),
        ins: Sequence[SSAValue] = (),
        guard: SSAValue | None = None,
        neg: bool = False,
    ) -> list[SSAValue]:
        """Emit one instruction whose operand list is written in PTX syntax; return its results.

        ``args`` names results then operands as ``{0}``, ``{1}``, ... (``outs``
        are the kinds of fresh results, ``ins`` the operands); it is parsed into
        typed slots: ``[{1}+8]`` an address, ``{{{0}, {1}}}`` a vector, ``16``
        an immediate, ``%tid.x`` a special register, a name a symbol.
        """
        parser = _TemplateParser(mnemonic, len(outs), ins)
        slots = parser.parse(args)
        return self.emit(mnemonic, slots, parser.operands, outs, guard, neg)

    def _sources(self, srcs: Sequence[Src], operands: list[SSAValue]) -> list[Attribute]:
        """The slots of ``srcs``; the registers among them are appended to ``operands``."""
        slots: list[Attribute] = []
        for s in srcs:
            if isinstance(s, SSAValue):
                operands.append(s)
                slots.append(ptx.OperandSlotAttr())
            elif isinstance(s, str):
                slots.append(named_source(s))
            else:
                slots.append(immediate(s))
        return slots

    def _address(self, mnemonic: str, addr: SSAValue | str, off: int, operands: list[SSAValue],
                 index: int = 0) -> ptx.AddressAttr:
        """The slot of ``[addr+off]`` (a register, or a symbol when ``addr`` is a name)."""
        base = self._sources([addr], operands)[0]
        assert isinstance(base, (ptx.OperandSlotAttr, SymbolRefAttr)), base
        return ptx.AddressAttr(address_space(mnemonic, index), base, off)

    @overload
    def i(self, mnemonic: str, kind: str, *srcs: Src, dst: SSAValue | None = None,
          guard: SSAValue | None = None, neg: bool = False) -> SSAValue: ...

    @overload
    def i(self, mnemonic: str, kind: None, *srcs: Src, dst: SSAValue | None = None,
          guard: SSAValue | None = None, neg: bool = False) -> SSAValue | None: ...

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
        operands: list[SSAValue] = []
        if dst is not None:
            slots = self._sources([dst, *srcs], operands)
            self.emit(mnemonic, slots, operands, guard=guard, neg=neg)
            return dst
        slots = self._sources(srcs, operands)
        if kind is None:
            self.emit(mnemonic, slots, operands, guard=guard, neg=neg)
            return None
        return self.emit(mnemonic, [ptx.ResultSlotAttr(), *slots], operands, [kind], guard, neg)[0]

    def ld(
        self, mnemonic: str, kind: str, addr: SSAValue, off: int = 0, *,
        dst: SSAValue | None = None, guard: SSAValue | None = None, neg: bool = False,
    ) -> SSAValue:
        """``ld... d, [addr+off]``."""
        operands: list[SSAValue] = [dst] if dst is not None else []
        data = ptx.OperandSlotAttr() if dst is not None else ptx.ResultSlotAttr()
        slots = [data, self._address(mnemonic, addr, off, operands)]
        results = self.emit(mnemonic, slots, operands, [kind] if dst is None else [], guard, neg)
        return dst if dst is not None else results[0]

    def ld_v4(self, mnemonic: str, kind: str, addr: SSAValue, off: int = 0) -> list[SSAValue]:
        """``ld....v4 {a,b,c,d}, [addr+off]``."""
        operands: list[SSAValue] = []
        vector = ptx.VectorAttr([ptx.ResultSlotAttr()] * 4)
        return self.emit(mnemonic, [vector, self._address(mnemonic, addr, off, operands)], operands, [kind] * 4)

    def st(
        self, mnemonic: str, addr: SSAValue, off: int, val: Src, *,
        guard: SSAValue | None = None, neg: bool = False,
    ) -> None:
        """``st... [addr+off], val``."""
        operands: list[SSAValue] = []
        address = self._address(mnemonic, addr, off, operands)
        self.emit(mnemonic, [address, *self._sources([val], operands)], operands, guard=guard, neg=neg)

    def st_v4(self, mnemonic: str, addr: SSAValue, off: int, vals: Sequence[Src]) -> None:
        """``st....v4 [addr+off], {a,b,c,d}``."""
        operands: list[SSAValue] = []
        address = self._address(mnemonic, addr, off, operands)
        self.emit(mnemonic, [address, ptx.VectorAttr(self._sources(vals, operands))], operands)

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
        self.mov(ptx.RegType.kind_of(dst), src, dst=dst)

    def setp(self, cmp: str, a: Src, b: Src) -> SSAValue:
        """``setp.<cmp>`` (e.g. ``"eq.u32"``) into a fresh predicate."""
        r = self.i(f"setp.{cmp}", "pred", a, b)
        assert r is not None
        return r

    def bra(self, label: str, pred: SSAValue | None = None, neg: bool = False, uniform: bool = False) -> None:
        """Branch to ``label``, guarded by ``pred`` (negated with ``neg``).

        ``uniform``: the caller states that ``pred`` has the same value in
        every active thread of the warp, and the branch is a ``bra.uni``
        (ptxas then sets up no reconvergence point: measured in
        docs/performance.md, round 24). A claim that does not hold is
        undefined behaviour, so where :attr:`uniform_check` is set the
        claim is checked there instead, and the branch is a plain ``bra``.
        """
        if pred is not None and uniform and self.uniform_check is not None:
            self.uniform_check(pred)
            uniform = False
        mnemonic = "bra.uni" if pred is None or uniform else "bra"
        self.emit(mnemonic, [SymbolRefAttr(label)], guard=pred, neg=neg)

    def branch_table(self, index: SSAValue, labels: Sequence[str], hint: str, uniform: bool = False) -> None:
        """Branch to ``labels[index]`` (``brx.idx`` on a ``.branchtargets`` list labelled from ``hint``).

        The caller has bounded ``index`` below ``len(labels)`` (past the end
        is undefined behaviour in PTX). ``uniform``: as :meth:`bra`'s, every
        active thread has the same index, and the branch is a
        ``brx.idx.uni``; where :attr:`uniform_check` is set, a plain
        ``brx.idx`` (the predicates around it are checked instead).
        """
        table = self.new_label(hint)
        self.block.add_op(ptx.BranchTargetsOp(table, labels))
        mnemonic = "brx.idx.uni" if uniform and self.uniform_check is None else "brx.idx"
        self.emit(mnemonic, [ptx.OperandSlotAttr(), SymbolRefAttr(table)], [index])

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
        mnemonic = f"ld.param.{kind}"
        return self.emit(mnemonic, [ptx.ResultSlotAttr(), self._address(mnemonic, name, 0, [])], result_kinds=[kind])[0]

    def pack64(self, lo: SSAValue, hi: SSAValue) -> SSAValue:
        """A b64 register from two 32-bit halves."""
        halves = ptx.VectorAttr([ptx.OperandSlotAttr(), ptx.OperandSlotAttr()])
        return self.emit("mov.b64", [ptx.ResultSlotAttr(), halves], [lo, hi], ["b64"])[0]

    def unpack64(self, v: SSAValue) -> tuple[SSAValue, SSAValue]:
        """The 32-bit halves (lo, hi) of a 64-bit register."""
        halves = ptx.VectorAttr([ptx.ResultSlotAttr(), ptx.ResultSlotAttr()])
        lo, hi = self.emit("mov.b64", [halves, ptx.OperandSlotAttr()], [v], ["b32", "b32"])
        return lo, hi
