"""The ``ptx`` dialect: PTX assembly as xDSL IR, and its text printer.

The dialect is deliberately close to the assembly. A :class:`ModuleOp` holds
module-level declarations (:class:`GlobalOp`) and kernels (:class:`KernelOp`);
a kernel body is one flat block of instructions and :class:`LabelOp` labels,
exactly as PTX lists them. Control flow is written with labels and (guarded)
branches, like the assembly it prints to.

Virtual registers are SSA values of type :class:`RegType` (``!ptx.reg<u32>``).
Each value is one PTX register. A value that must change over a loop (an
induction variable) is defined once and then written again by instructions
that name it as their *destination operand*; every instruction op carries an
``args`` template that says which of its values go where, so an instruction
may write a fresh result or an existing register.

Instructions are table-driven: :data:`INSTRUCTIONS` lists the PTX mnemonic
roots we emit (``mov``, ``add``, ``ld``, ``mbarrier``, ``cp``, ...), and one
op class per root is generated from it (``ptx.add``, ``ptx.ld``, ...). Every
instruction op has

* ``mods``: the modifiers after the root (``.shared.v4.b32``),
* ``args``: the operand list as a template over its values, ``{0}`` ...
  (results first, then operands), with immediates written in place,
* ``guard``: ``""``, ``"@"`` or ``"@!"``; when set, the *last* operand is the
  guard predicate.

:func:`print_ptx` turns a module into PTX text; the ``.version``, ``.target``
and ``.address_size`` lines come from the module's properties, which the
lowering fills from the target description.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

# ---------------------------------------------------------------------------
# register types
# ---------------------------------------------------------------------------

#: register kind -> (PTX declaration type, register name prefix)
REG_CLASSES: dict[str, tuple[str, str]] = {
    "pred": (".pred", "%p"),
    "b16": (".b16", "%h"),
    "u16": (".b16", "%h"),
    "b32": (".b32", "%r"),
    "u32": (".b32", "%r"),
    "s32": (".b32", "%r"),
    "b64": (".b64", "%rd"),
    "u64": (".b64", "%rd"),
    "s64": (".b64", "%rd"),
    "f32": (".f32", "%f"),
    "f64": (".f64", "%fd"),
}


@irdl_attr_definition
class RegType(ParametrizedAttribute, TypeAttribute):
    """A PTX virtual register of one kind: ``!ptx.reg<u32>``, ``!ptx.reg<pred>``."""

    name = "ptx.reg"

    kind: StringAttr

    def __init__(self, kind: str | StringAttr):
        if isinstance(kind, str):
            kind = StringAttr(kind)
        super().__init__(kind)

    def verify(self) -> None:
        """Reject unknown register kinds."""
        if self.kind.data not in REG_CLASSES:
            raise VerifyException(
                f"unknown PTX register kind '{self.kind.data}' (known: {', '.join(REG_CLASSES)})"
            )

    def print_parameters(self, printer: Printer) -> None:
        """Print ``<kind>``."""
        printer.print_string(f"<{self.kind.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        """Parse ``<kind>``, with a located error for an unknown kind."""
        parser.parse_punctuation("<")
        pos = parser.pos
        kind = parser.parse_identifier()
        if kind not in REG_CLASSES:
            parser.raise_error(f"unknown PTX register kind '{kind}'", pos, parser.pos)
        parser.parse_punctuation(">")
        return (StringAttr(kind),)


def reg(kind: str) -> RegType:
    """The register type of ``kind`` (``"u32"``, ``"pred"``, ...)."""
    return RegType(kind)


# ---------------------------------------------------------------------------
# structure: module, declarations, kernels, labels
# ---------------------------------------------------------------------------


@irdl_op_definition
class ModuleOp(IRDLOperation):
    """A PTX module: header facts and a block of declarations and kernels."""

    name = "ptx.module"

    version = prop_def(StringAttr)
    target = prop_def(StringAttr)
    address_size = prop_def(IntAttr)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    def __init__(self, version: str, target: str, address_size: int = 64):
        from xdsl.ir import Block, Region

        super().__init__(
            properties={
                "version": StringAttr(version),
                "target": StringAttr(target),
                "address_size": IntAttr(address_size),
            },
            regions=[Region(Block())],
        )


@irdl_op_definition
class GlobalOp(IRDLOperation):
    """A module-level variable: ``.extern .shared .align 1024 .b8 smem[];``.

    ``size`` < 0 declares an unsized (extern) array: the dynamic shared memory.
    """

    name = "ptx.global"

    sym_name = prop_def(StringAttr)
    space = prop_def(StringAttr)  # "shared" | "global" | "const"
    elem = prop_def(StringAttr)  # "b8", "u32", ...
    align = prop_def(IntAttr)
    size = prop_def(IntAttr)

    def __init__(self, sym_name: str, space: str, elem: str, align: int, size: int):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "space": StringAttr(space),
                "elem": StringAttr(elem),
                "align": IntAttr(align),
                "size": IntAttr(size),
            }
        )

    def verify_(self) -> None:
        """Only the shared, global and const state spaces."""
        if self.space.data not in ("shared", "global", "const"):
            raise VerifyException(f"ptx.global: unknown state space '{self.space.data}'")


@irdl_op_definition
class KernelOp(IRDLOperation):
    """An ``.entry``: name, parameters (``"u64 name"`` strings), thread bound, body."""

    name = "ptx.kernel"

    sym_name = prop_def(StringAttr)
    params = prop_def(ArrayAttr[StringAttr])
    maxntid = prop_def(IntAttr)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    def __init__(self, sym_name: str, params: Sequence[tuple[str, str]], maxntid: int):
        from xdsl.ir import Block, Region

        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "params": ArrayAttr([StringAttr(f"{t} {n}") for t, n in params]),
                "maxntid": IntAttr(maxntid),
            },
            regions=[Region(Block())],
        )

    def param_names(self) -> list[str]:
        """The parameter names in order."""
        return [p.data.split()[1] for p in self.params.data]


@irdl_op_definition
class LabelOp(IRDLOperation):
    """A branch target inside a kernel body."""

    name = "ptx.label"

    label = prop_def(StringAttr)

    def __init__(self, label: str):
        super().__init__(properties={"label": StringAttr(label)})


# ---------------------------------------------------------------------------
# instructions (table-driven)
# ---------------------------------------------------------------------------

#: PTX mnemonic roots this dialect has an op for. The op name is ``ptx.<root>``
#: with dots (none in roots) kept; modifiers go in the ``mods`` property.
INSTRUCTIONS: tuple[str, ...] = (
    "mov", "add", "sub", "mul", "mad", "div", "rem", "min", "max", "neg", "abs",
    "and", "or", "xor", "not", "shl", "shr", "selp", "setp", "cvt", "cvta",
    "ld", "st", "atom", "red", "fence", "membar", "bar", "barrier",
    "mbarrier", "cp", "shfl", "vote", "fma", "ex2", "rcp", "sqrt", "rsqrt",
    "bra", "ret", "exit", "nanosleep", "prmt",
)


class InstrBase(IRDLOperation):
    """Common definition of every PTX instruction op (see the module docstring)."""

    outs = var_result_def(RegType)
    ins = var_operand_def(RegType)
    mods = prop_def(StringAttr)
    args = prop_def(StringAttr)
    guard = prop_def(StringAttr)

    def verify_(self) -> None:
        """Check the guard and that ``args`` names only existing values."""
        g = self.guard.data
        if g not in ("", "@", "@!"):
            raise VerifyException(f"{self.name}: guard must be '', '@' or '@!', got '{g}'")
        if g:
            if not self.ins or self.ins[-1].type != RegType("pred"):
                raise VerifyException(f"{self.name}: a guarded instruction needs a pred last operand")
        n = len(self.outs) + len(self.ins) - (1 if g else 0)
        try:
            self.args.data.format(*(["x"] * n))
        except (IndexError, KeyError, ValueError) as e:
            raise VerifyException(f"{self.name}: bad args template '{self.args.data}': {e}") from None

    def mnemonic(self) -> str:
        """The full mnemonic, root plus modifiers (``ld.shared.v4.b32``)."""
        return self.name[len("ptx."):] + self.mods.data


def _make_instr(root: str) -> type[InstrBase]:
    cls_name = "".join(p.capitalize() for p in root.split("_")) + "Op"
    cls = type(
        cls_name,
        (InstrBase,),
        {
            "name": f"ptx.{root}",
            "__doc__": f"The PTX ``{root}`` instruction (any modifiers).",
            "__module__": __name__,
        },
    )
    return irdl_op_definition(cls)


INSTR_OPS: dict[str, type[InstrBase]] = {root: _make_instr(root) for root in INSTRUCTIONS}
globals().update({cls.__name__: cls for cls in INSTR_OPS.values()})


def instr(
    mnemonic: str,
    args: str,
    outs: Sequence[str] = (),
    ins: Sequence[SSAValue] = (),
    guard: str = "",
    guard_pred: SSAValue | None = None,
) -> InstrBase:
    """Build an instruction op from its full mnemonic (``add.u32``).

    ``outs`` are the register kinds of fresh results; ``ins`` the operands;
    ``args`` the operand template over results then operands.
    """
    root, _, rest = mnemonic.partition(".")
    cls = INSTR_OPS.get(root)
    if cls is None:
        raise ValueError(f"no ptx op for mnemonic '{mnemonic}'")
    operands = list(ins)
    if guard:
        assert guard_pred is not None
        operands.append(guard_pred)
    return cls(
        operands=[operands],
        result_types=[[reg(k) for k in outs]],
        properties={
            "mods": StringAttr("." + rest if rest else ""),
            "args": StringAttr(args),
            "guard": StringAttr(guard),
        },
    )


PTX = Dialect(
    "ptx",
    [ModuleOp, GlobalOp, KernelOp, LabelOp, *INSTR_OPS.values()],
    [RegType],
)

# ---------------------------------------------------------------------------
# printer
# ---------------------------------------------------------------------------


def _print_kernel(k: KernelOp, out: IO[str]) -> None:
    names: dict[SSAValue, str] = {}
    counts: dict[str, int] = {}

    def name(v: SSAValue) -> str:
        n = names.get(v)
        if n is None:
            assert isinstance(v.type, RegType)
            prefix = REG_CLASSES[v.type.kind.data][1]
            counts[prefix] = counts.get(prefix, 0) + 1
            n = names[v] = f"{prefix}{counts[prefix]}"
        return n

    # first pass: name every defined register in order
    for op in k.body.block.ops:
        for r in op.results:
            name(r)
    params = ",\n".join(f"\t.param .{p.data.split()[0]} {p.data.split()[1]}" for p in k.params.data)
    out.write(f".visible .entry {k.sym_name.data}(\n{params}\n)\n.maxntid {k.maxntid.data}, 1, 1\n{{\n")
    decl: dict[str, str] = {}
    for kind, (dtype, prefix) in REG_CLASSES.items():
        decl.setdefault(prefix, dtype)
    for prefix, n in counts.items():
        out.write(f"\t.reg {decl[prefix]} {prefix}<{n + 1}>;\n")
    out.write("\n")
    for op in k.body.block.ops:
        if isinstance(op, LabelOp):
            out.write(f"{op.label.data}:\n")
            continue
        assert isinstance(op, InstrBase), op
        g = op.guard.data
        ins = list(op.ins)
        gtxt = ""
        if g:
            gtxt = f"{g}{name(ins.pop())} "
        vals = [name(v) for v in list(op.outs) + ins]
        a = op.args.data.format(*vals)
        out.write(f"\t{gtxt}{op.mnemonic()}{' ' + a if a else ''};\n")
    out.write("}\n")


def print_ptx(module: ModuleOp, out: IO[str] | None = None) -> str:
    """Print a ``ptx.module`` as PTX text (returned, and written to ``out`` if given)."""
    buf = io.StringIO()
    buf.write("//\n// Generated by vdir\n//\n\n")
    buf.write(f".version {module.version.data}\n")
    buf.write(f".target {module.target.data}\n")
    buf.write(f".address_size {module.address_size.data}\n\n")
    for op in module.body.block.ops:
        if isinstance(op, GlobalOp):
            ext = ".extern " if op.size.data < 0 and op.space.data == "shared" else ""
            vis = ".visible " if op.space.data == "global" else ""
            size = "[]" if op.size.data < 0 else (f"[{op.size.data}]" if op.size.data > 1 else "")
            buf.write(
                f"{ext}{vis}.{op.space.data} .align {op.align.data} .{op.elem.data} {op.sym_name.data}{size};\n"
            )
        elif isinstance(op, KernelOp):
            buf.write("\n")
            _print_kernel(op, buf)
        else:
            raise ValueError(f"unexpected op {op.name} at module level")
    text = buf.getvalue()
    if out is not None:
        out.write(text)
    return text
