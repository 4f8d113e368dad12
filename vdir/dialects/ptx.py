"""The ``ptx`` dialect: PTX assembly as typed xDSL IR, and its text printer.

The dialect is deliberately close to the assembly. A :class:`ModuleOp` holds
module-level declarations (:class:`GlobalOp`) and kernels (:class:`KernelOp`);
a kernel body is one flat block of instructions, :class:`LabelOp` labels and
:class:`BranchTargetsOp` lists (an indexed branch's targets), exactly as PTX
lists them. Control flow is written with labels and (guarded)
branches, like the assembly it prints to.

Virtual registers are SSA values of type :class:`RegType` (``!ptx.reg<u32>``).
Each value is one PTX register. A value that must change over a loop (an
induction variable) is defined once and then written again by instructions
that name it as their *destination operand*, so an instruction may write a
fresh result or an existing register.

There is one op class per PTX mnemonic root we emit (``ptx.add``, ``ptx.ld``,
``ptx.mbarrier``, ...), each a subclass of :class:`InstructionOp` that states
its known modifiers and its operand signatures. Every instruction op has

* ``mods``: the modifiers after the root, in order (``["shared", "v4", "b32"]``
  for ``ld.shared.v4.b32``), each checked against the root's known set;
* ``slots``: the PTX operand list, one typed attribute per slot:
  :class:`ResultSlotAttr` (the next result), :class:`OperandSlotAttr` (the
  next SSA operand), an integer or ``f32`` float attribute (an immediate),
  :class:`SpecialRegAttr` (``%tid.x``), a symbol (``@vdir_smem``, a label, a
  kernel parameter), :class:`AddressAttr` (``[base+offset]`` in a state space),
  :class:`TensorAddressAttr` (``[tmap, {x, y, z}]``) or :class:`VectorAttr`
  (``{a, b, c, d}``);
* ``guard``: an optional ``!ptx.reg<pred>`` operand, negated (``@!``) when the
  ``negated`` unit property is set.

The verifier checks the modifiers, the operand kinds against the root's
signature for those modifiers (register kinds against the type modifier, a
predicate where PTX wants one, an address where PTX wants one) and the guard.

:func:`print_ptx` turns a module into PTX text; the ``.version``, ``.target``
and ``.address_size`` lines come from the module's properties, which the
lowering fills from the target description.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_operand_def,
    opt_prop_def,
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

    @staticmethod
    def kind_of(value: SSAValue) -> str:
        """The register kind of a ``!ptx.reg`` value (``"u32"``)."""
        assert isinstance(value.type, RegType), value.type
        return value.type.kind.data

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
# type modifiers and state spaces
# ---------------------------------------------------------------------------

#: bit-size type modifiers: compatible with any register of their size
BIT_TYPES = ("b8", "b16", "b32", "b64")
#: integer type modifiers
INT_TYPES = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")
#: floating-point type modifiers
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
#: every type modifier -> its size in bits (``pred`` counts as one bit)
TYPE_BITS: dict[str, int] = {
    **{t: int(t.lstrip("bfsu")) for t in (*BIT_TYPES, *INT_TYPES, *FLOAT_TYPES)},
    "pred": 1,
}
#: state-space modifiers an address may live in (``generic``: none written)
STATE_SPACES = ("generic", "global", "shared", "shared::cta", "shared::cluster", "param", "const", "local")
#: vector modifiers -> element count
VECTOR_WIDTHS = {"v2": 2, "v4": 4}
#: special registers -> size in bits
SPECIAL_REGS: dict[str, int] = {
    **{f"%{r}.{d}": 32 for r in ("tid", "ntid", "ctaid", "nctaid") for d in "xyz"},
    "%laneid": 32, "%warpid": 32, "%smid": 32, "%clock": 32, "%clock64": 64, "%globaltimer": 64,
}


def kind_fits_type(kind: str, type_name: str) -> bool:
    """Whether a ``kind`` register may hold an operand of instruction type ``type_name``.

    PTX's rule on the register's size (an 8-bit type uses a wider register; a
    predicate only matches ``pred``), and the kind's meaning on top of it: an
    integer register (``u32``, ``s64``) takes no float type, a float register
    takes only float and bit-size types; a bit-size register takes any type.
    """
    if kind == "pred" or type_name == "pred":
        return kind == type_name
    bits, reg_bits = TYPE_BITS[type_name], TYPE_BITS[kind]
    if reg_bits != bits and not (bits == 8 and reg_bits in (16, 32)):
        return False
    if kind[0] in "su":
        return type_name not in FLOAT_TYPES
    if kind[0] == "f":
        return type_name in FLOAT_TYPES or type_name in BIT_TYPES
    return True


# ---------------------------------------------------------------------------
# operand slots
# ---------------------------------------------------------------------------


@irdl_attr_definition
class ResultSlotAttr(ParametrizedAttribute):
    """An operand slot that holds the instruction's next result (a fresh register)."""

    name = "ptx.res"


@irdl_attr_definition
class OperandSlotAttr(ParametrizedAttribute):
    """An operand slot that holds the instruction's next SSA operand (a register read or written)."""

    name = "ptx.reg"


@irdl_attr_definition
class SpecialRegAttr(ParametrizedAttribute):
    """A read-only special register operand: ``#ptx.sreg<"%tid.x">``."""

    name = "ptx.sreg"

    register: StringAttr

    def __init__(self, register: str):
        super().__init__(StringAttr(register))

    def verify(self) -> None:
        """Only the special registers in :data:`SPECIAL_REGS`."""
        if self.register.data not in SPECIAL_REGS:
            raise VerifyException(f"unknown PTX special register '{self.register.data}'")

    def print_parameters(self, printer: Printer) -> None:
        """Print ``<"%tid.x">``."""
        printer.print_string(f'<"{self.register.data}">')

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        """Parse ``<"%tid.x">``, with a located error for an unknown register."""
        parser.parse_punctuation("<")
        pos = parser.pos
        register = parser.parse_str_literal()
        if register not in SPECIAL_REGS:
            parser.raise_error(f"unknown PTX special register '{register}'", pos, parser.pos)
        parser.parse_punctuation(">")
        return (StringAttr(register),)


@irdl_attr_definition
class AddressAttr(ParametrizedAttribute):
    """A memory operand ``[base+offset]`` in a state space.

    ``base`` is the next SSA operand (:class:`OperandSlotAttr`) or a symbol (a
    kernel parameter, a module variable); ``space`` is one of :data:`STATE_SPACES`.
    """

    name = "ptx.addr"

    space: StringAttr
    base: OperandSlotAttr | SymbolRefAttr
    offset: IntAttr

    def __init__(self, space: str, base: OperandSlotAttr | SymbolRefAttr, offset: int = 0):
        super().__init__(StringAttr(space), base, IntAttr(offset))

    def verify(self) -> None:
        """Only the known state spaces."""
        if self.space.data not in STATE_SPACES:
            raise VerifyException(f"unknown PTX state space '{self.space.data}' (known: {', '.join(STATE_SPACES)})")

    def print_parameters(self, printer: Printer) -> None:
        """Print ``<"space", base, offset>``."""
        printer.print_string(f'<"{self.space.data}", ')
        printer.print_attribute(self.base)
        printer.print_string(f", {self.offset.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        """Parse ``<"space", base, offset>``, with located errors for a bad space or base."""
        parser.parse_punctuation("<")
        pos = parser.pos
        space = parser.parse_str_literal()
        if space not in STATE_SPACES:
            parser.raise_error(
                f"unknown PTX state space '{space}' (known: {', '.join(STATE_SPACES)})", pos, parser.pos
            )
        parser.parse_punctuation(",")
        pos = parser.pos
        base = parser.parse_attribute()
        if not isinstance(base, (OperandSlotAttr, SymbolRefAttr)):
            parser.raise_error("an address base is #ptx.reg or a symbol", pos, parser.pos)
        parser.parse_punctuation(",")
        offset = parser.parse_integer()
        parser.parse_punctuation(">")
        return (StringAttr(space), base, IntAttr(offset))


@irdl_attr_definition
class VectorAttr(ParametrizedAttribute):
    """A vector operand ``{a, b, c, d}``: register slots and immediates."""

    name = "ptx.vec"

    elements: ArrayAttr[Attribute]

    def __init__(self, elements: Sequence[Attribute]):
        super().__init__(ArrayAttr(elements))


@irdl_attr_definition
class TensorAddressAttr(ParametrizedAttribute):
    """A tensor-map operand ``[tmap, {x, y, z}]`` of ``cp.async.bulk.tensor``: base and coordinates."""

    name = "ptx.tensor_addr"

    base: OperandSlotAttr
    coords: VectorAttr

    def __init__(self, coords: Sequence[Attribute]):
        super().__init__(OperandSlotAttr(), VectorAttr(coords))


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
    """An ``.entry``: name, parameters (``"u64 name"`` strings), thread bound, body.

    ``minnctapersm`` (optional): the CTAs per SM the kernel must fit, printed
    as ``.minnctapersm``; without it ptxas may cap the registers to fit
    several CTAs of ``maxntid`` threads on an SM. ``cluster`` (optional): the
    CTAs of each cluster the kernel is launched in, printed as
    ``.explicitcluster`` and ``.reqnctapercluster N, 1, 1`` (a plain launch
    then runs it in clusters of N).
    """

    name = "ptx.kernel"

    sym_name = prop_def(StringAttr)
    params = prop_def(ArrayAttr[StringAttr])
    maxntid = prop_def(IntAttr)
    minnctapersm = opt_prop_def(IntAttr)
    cluster = opt_prop_def(IntAttr)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    def __init__(self, sym_name: str, params: Sequence[tuple[str, str]], maxntid: int,
                 minnctapersm: int | None = None, cluster: int | None = None):
        from xdsl.ir import Block, Region

        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(sym_name),
            "params": ArrayAttr([StringAttr(f"{t} {n}") for t, n in params]),
            "maxntid": IntAttr(maxntid),
        }
        if minnctapersm is not None:
            properties["minnctapersm"] = IntAttr(minnctapersm)
        if cluster is not None:
            properties["cluster"] = IntAttr(cluster)
        super().__init__(properties=properties, regions=[Region(Block())])

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


@irdl_op_definition
class BranchTargetsOp(IRDLOperation):
    """A ``.branchtargets`` list under a label of its own: the labels an indexed branch (:class:`BrxOp`)
    naming that label goes to, by index. PTX wants the list before the branch that uses it."""

    name = "ptx.branchtargets"

    label = prop_def(StringAttr)
    targets = prop_def(ArrayAttr[SymbolRefAttr])

    def __init__(self, label: str, targets: Sequence[str]):
        super().__init__(properties={"label": StringAttr(label),
                                     "targets": ArrayAttr([SymbolRefAttr(t) for t in targets])})

    def verify_(self) -> None:
        """A list names at least one label."""
        if not self.targets.data:
            raise VerifyException(f"{self.label.data}: a .branchtargets list needs at least one label")


# ---------------------------------------------------------------------------
# instructions
# ---------------------------------------------------------------------------

# Operand roles in a signature (``InstructionOp.SIGNATURES``): ``T`` a value of
# the instruction's type (its last type modifier; a vector where PTX allows
# one), ``W`` twice that width (``mul.wide``), ``D``/``S`` the destination /
# source type of ``cvt`` (first / last type modifier), ``P`` a predicate, ``U``
# a 32-bit integer, ``V`` like ``T`` or a special register or a symbol
# (``mov``), ``A`` an address, ``L`` a label, ``X`` a 64-bit register (an L2
# cache policy); a trailing ``?`` makes a role optional.

# modifier groups that several roots share
ALL_TYPES = (*BIT_TYPES, *INT_TYPES, *FLOAT_TYPES)
ROUNDING = ("rn", "rz", "rm", "rp")
FLOAT_MODS = (*ROUNDING, "ftz", "sat", "approx", "full")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
               "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
SCOPES = ("cta", "cluster", "gpu", "sys")
SEMANTICS = ("weak", "relaxed", "acquire", "release", "acq_rel", "sc", "volatile")
SPACE_MODS = STATE_SPACES[1:]
CACHE_MODS = ("ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc")
ATOMIC_OPS = ("and", "or", "xor", "cas", "exch", "add", "inc", "dec", "min", "max")


class InstructionOp(IRDLOperation):
    """Common definition of every PTX instruction op (see the module docstring).

    A subclass names its root (``name = "ptx.add"``), its known modifiers
    (``MODIFIERS``) and its operand signatures (``SIGNATURES``: pairs of a
    selecting modifier, ``""`` for any, and a role string, first match wins).
    """

    MODIFIERS: ClassVar[frozenset[str]] = frozenset()
    SIGNATURES: ClassVar[tuple[tuple[str, str], ...]] = (("", ""),)

    outs = var_result_def(RegType)
    ins = var_operand_def(RegType)
    guard = opt_operand_def(RegType)
    mods = prop_def(ArrayAttr[StringAttr])
    slots = prop_def(ArrayAttr[Attribute])
    negated = opt_prop_def(UnitAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def root(self) -> str:
        """The mnemonic root (``ld``)."""
        return self.name[len("ptx."):]

    def modifiers(self) -> list[str]:
        """The modifiers, without dots."""
        return [m.data for m in self.mods.data]

    def mnemonic(self) -> str:
        """The full mnemonic, root plus modifiers (``ld.shared.v4.b32``)."""
        return ".".join([self.root(), *self.modifiers()])

    def roles(self) -> list[str]:
        """The operand roles of this instruction's signature (optional ones end in ``?``)."""
        mods = set(self.modifiers())
        for selector, roles in self.SIGNATURES:
            if not selector or selector in mods:
                return roles.split()
        raise VerifyException(f"{self.mnemonic()}: no operand signature for these modifiers")

    # -- verification -----------------------------------------------------
    def verify_(self) -> None:
        """Check the modifiers, the guard and every operand slot against the signature."""
        self._verify_modifiers()
        self._verify_guard()
        roles = self.roles()
        slots = self.slots.data
        required = sum(1 for r in roles if not r.endswith("?"))
        if not required <= len(slots) <= len(roles):
            want = str(required) if required == len(roles) else f"{required} to {len(roles)}"
            raise VerifyException(f"{self.mnemonic()}: expects {want} operands, got {len(slots)}")
        leaves = [leaf for slot in slots for leaf in slot_leaves(slot)]
        n_results = sum(isinstance(leaf, ResultSlotAttr) for leaf in leaves)
        n_operands = sum(isinstance(leaf, OperandSlotAttr) for leaf in leaves)
        if (n_results, n_operands) != (len(self.outs), len(self.ins)):
            raise VerifyException(
                f"{self.mnemonic()}: the operand slots use {n_results} result(s) and {n_operands} SSA operand(s), "
                f"the op has {len(self.outs)} and {len(self.ins)}"
            )
        values = _SlotValues(self)
        for index, (slot, role) in enumerate(zip(slots, roles, strict=False)):
            self._verify_slot(index + 1, slot, role.rstrip("?"), values)

    def _verify_modifiers(self) -> None:
        for m in self.modifiers():
            if m not in self.MODIFIERS:
                raise VerifyException(
                    f"{self.mnemonic()}: unknown modifier '.{m}' for {self.root()} "
                    f"(known: {', '.join(sorted(self.MODIFIERS))})"
                )

    def _verify_guard(self) -> None:
        if self.guard is None:
            if self.negated is not None:
                raise VerifyException(f"{self.mnemonic()}: 'negated' needs a guard predicate")
            return
        kind = RegType.kind_of(self.guard)
        if kind != "pred":
            raise VerifyException(
                f"{self.mnemonic()}: the guard must be a !ptx.reg<pred>, got !ptx.reg<{kind}>"
            )

    def _type_of_role(self, role: str) -> str:
        if role == "P":
            return "pred"
        if role == "U":
            return "u32"
        if role == "X":
            return "b64"
        types = [m for m in self.modifiers() if m in TYPE_BITS]
        if not types:
            raise VerifyException(f"{self.mnemonic()}: needs a type modifier (.u32, .f32, ...)")
        if role == "D":
            return types[0]
        if role == "W":
            return f"{types[-1][0]}{2 * TYPE_BITS[types[-1]]}"
        return types[-1]

    def _verify_slot(self, index: int, slot: Attribute, role: str, values: _SlotValues) -> None:
        where = f"{self.mnemonic()}: operand {index}"
        if role == "A":
            self._verify_address(where, slot, values)
        elif role == "L":
            if not isinstance(slot, SymbolRefAttr):
                raise VerifyException(f"{where} must be a label, got {describe_slot(slot)}")
        elif isinstance(slot, (AddressAttr, TensorAddressAttr)):
            raise VerifyException(f"{where} must be a register or an immediate, got {describe_slot(slot)}")
        elif isinstance(slot, VectorAttr):
            self._verify_vector(where, slot, self._type_of_role(role), values)
        elif isinstance(slot, (SpecialRegAttr, SymbolRefAttr)):
            if role != "V":
                raise VerifyException(f"{where} must be a register or an immediate, got {describe_slot(slot)}")
            t = self._type_of_role(role)
            if isinstance(slot, SpecialRegAttr) and SPECIAL_REGS[slot.register.data] != TYPE_BITS[t]:
                raise VerifyException(f"{where}: {slot.register.data} does not fit the type .{t}")
        else:
            check_scalar(where, slot, self._type_of_role(role), values)

    def _verify_vector(self, where: str, slot: VectorAttr, t: str, values: _SlotValues) -> None:
        n = len(slot.elements.data)
        widths = [VECTOR_WIDTHS[m] for m in self.modifiers() if m in VECTOR_WIDTHS]
        if widths:
            if widths[0] != n:
                raise VerifyException(f"{where}: a .v{widths[0]} vector needs {widths[0]} elements, got {n}")
            element = t
        elif TYPE_BITS[t] % n == 0 and n > 1:
            element = f"b{TYPE_BITS[t] // n}"
        else:
            raise VerifyException(f"{where}: a {n}-element vector does not split the type .{t}")
        for e in slot.elements.data:
            check_scalar(where, e, element, values)

    def _verify_address(self, where: str, slot: Attribute, values: _SlotValues) -> None:
        if isinstance(slot, TensorAddressAttr):
            check_scalar(f"{where} (tensor map)", slot.base, "b64", values)
            for e in slot.coords.elements.data:
                check_scalar(f"{where} (coordinate)", e, "b32", values)
            return
        if not isinstance(slot, AddressAttr):
            raise VerifyException(f"{where} must be an address [reg+imm], got {describe_slot(slot)}")
        space = slot.space.data
        spaces = [m for m in self.modifiers() if m in SPACE_MODS] or ["generic"]
        if space not in spaces:
            raise VerifyException(f"{where}: an address in '{space}', not in the instruction's ({', '.join(spaces)})")
        if isinstance(slot.base, OperandSlotAttr):
            wide = space in ("generic", "global")
            check_scalar(f"{where} (address base)", slot.base, "b64" if wide else "b32", values,
                         also="b64" if not wide else None)


class _SlotValues:
    """Hands out an instruction's results and SSA operands in slot order."""

    def __init__(self, op: InstructionOp):
        self._results: Iterator[SSAValue] = iter(op.outs)
        self._operands: Iterator[SSAValue] = iter(op.ins)

    def next_for(self, slot: Attribute) -> SSAValue:
        """The value ``slot`` (a result or operand slot) stands for."""
        return next(self._results if isinstance(slot, ResultSlotAttr) else self._operands)


def slot_leaves(slot: Attribute) -> Iterator[Attribute]:
    """The scalar parts of one operand slot, in print order (an address's base, a vector's elements)."""
    if isinstance(slot, AddressAttr):
        yield slot.base
    elif isinstance(slot, TensorAddressAttr):
        yield slot.base
        yield from slot.coords.elements.data
    elif isinstance(slot, VectorAttr):
        yield from slot.elements.data
    else:
        yield slot


def describe_slot(slot: Attribute) -> str:
    """A few words naming the kind of an operand slot, for diagnostics."""
    kinds = {
        ResultSlotAttr: "a register", OperandSlotAttr: "a register", AddressAttr: "an address",
        TensorAddressAttr: "a tensor address", VectorAttr: "a vector", SpecialRegAttr: "a special register",
        SymbolRefAttr: "a symbol", IntegerAttr: "an integer immediate", FloatAttr: "a float immediate",
    }
    return kinds.get(type(slot), f"'{slot}'")


def check_scalar(where: str, slot: Attribute, t: str, values: _SlotValues, also: str | None = None) -> None:
    """Check one scalar slot (a register or an immediate) against type ``t`` (or ``also``)."""
    if isinstance(slot, (ResultSlotAttr, OperandSlotAttr)):
        kind = RegType.kind_of(values.next_for(slot))
        if not kind_fits_type(kind, t) and not (also and kind_fits_type(kind, also)):
            wanted = f".{t}" + (f" or .{also}" if also else "")
            noun = "predicate" if t == "pred" else "register"
            raise VerifyException(f"{where}: a !ptx.reg<{kind}> where a {wanted} {noun} is expected")
    elif isinstance(slot, IntegerAttr):
        if t in FLOAT_TYPES or t == "pred":
            raise VerifyException(f"{where}: an integer immediate where a .{t} operand is expected")
    elif isinstance(slot, FloatAttr):
        if t not in FLOAT_TYPES:
            raise VerifyException(f"{where}: a float immediate where a .{t} operand is expected")
    else:
        raise VerifyException(f"{where} must be a register or an immediate, got {describe_slot(slot)}")


def _mods(*groups: Iterable[str] | str) -> frozenset[str]:
    """A modifier set from single modifiers and groups of them."""
    return frozenset(m for g in groups for m in ((g,) if isinstance(g, str) else g))


@irdl_op_definition
class MovOp(InstructionOp):
    """``mov``: copy a register, an immediate, a special register or a symbol's address."""

    name = "ptx.mov"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, "pred")
    SIGNATURES: ClassVar = (("", "T V"),)


@irdl_op_definition
class AddOp(InstructionOp):
    """``add``: integer or float addition."""

    name = "ptx.add"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, FLOAT_MODS, "cc")
    SIGNATURES: ClassVar = (("", "T T T"),)


@irdl_op_definition
class SubOp(InstructionOp):
    """``sub``: integer or float subtraction."""

    name = "ptx.sub"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, FLOAT_MODS, "cc")
    SIGNATURES: ClassVar = (("", "T T T"),)


@irdl_op_definition
class MulOp(InstructionOp):
    """``mul``: multiplication; ``.wide`` writes a double-width result."""

    name = "ptx.mul"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, FLOAT_MODS, "lo", "hi", "wide")
    SIGNATURES: ClassVar = (("wide", "W T T"), ("", "T T T"))


@irdl_op_definition
class MadOp(InstructionOp):
    """``mad``: multiply-add; ``.wide`` writes (and adds) double width."""

    name = "ptx.mad"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, FLOAT_MODS, "lo", "hi", "wide")
    SIGNATURES: ClassVar = (("wide", "W T T W"), ("", "T T T T"))


@irdl_op_definition
class DivOp(InstructionOp):
    """``div``: integer or float division."""

    name = "ptx.div"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, FLOAT_MODS)
    SIGNATURES: ClassVar = (("", "T T T"),)


@irdl_op_definition
class RemOp(InstructionOp):
    """``rem``: integer remainder."""

    name = "ptx.rem"
    MODIFIERS: ClassVar = _mods(INT_TYPES)
    SIGNATURES: ClassVar = (("", "T T T"),)


@irdl_op_definition
class MinOp(InstructionOp):
    """``min``: the smaller of two values."""

    name = "ptx.min"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, "ftz", "NaN")
    SIGNATURES: ClassVar = (("", "T T T"),)


@irdl_op_definition
class MaxOp(InstructionOp):
    """``max``: the larger of two values."""

    name = "ptx.max"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, "ftz", "NaN")
    SIGNATURES: ClassVar = (("", "T T T"),)


@irdl_op_definition
class NegOp(InstructionOp):
    """``neg``: negation."""

    name = "ptx.neg"
    MODIFIERS: ClassVar = _mods(INT_TYPES, FLOAT_TYPES, "ftz")
    SIGNATURES: ClassVar = (("", "T T"),)


@irdl_op_definition
class AbsOp(InstructionOp):
    """``abs``: absolute value."""

    name = "ptx.abs"
    MODIFIERS: ClassVar = _mods(INT_TYPES, FLOAT_TYPES, "ftz")
    SIGNATURES: ClassVar = (("", "T T"),)


@irdl_op_definition
class AndOp(InstructionOp):
    """``and``: bitwise (or predicate) and."""

    name = "ptx.and"
    MODIFIERS: ClassVar = _mods(BIT_TYPES, "pred")
    SIGNATURES: ClassVar = (("", "T T T"),)


@irdl_op_definition
class OrOp(InstructionOp):
    """``or``: bitwise (or predicate) or."""

    name = "ptx.or"
    MODIFIERS: ClassVar = _mods(BIT_TYPES, "pred")
    SIGNATURES: ClassVar = (("", "T T T"),)


@irdl_op_definition
class XorOp(InstructionOp):
    """``xor``: bitwise (or predicate) exclusive or."""

    name = "ptx.xor"
    MODIFIERS: ClassVar = _mods(BIT_TYPES, "pred")
    SIGNATURES: ClassVar = (("", "T T T"),)


@irdl_op_definition
class NotOp(InstructionOp):
    """``not``: bitwise (or predicate) complement."""

    name = "ptx.not"
    MODIFIERS: ClassVar = _mods(BIT_TYPES, "pred")
    SIGNATURES: ClassVar = (("", "T T"),)


@irdl_op_definition
class ShlOp(InstructionOp):
    """``shl``: shift left by a 32-bit amount."""

    name = "ptx.shl"
    MODIFIERS: ClassVar = _mods(BIT_TYPES)
    SIGNATURES: ClassVar = (("", "T T U"),)


@irdl_op_definition
class ShrOp(InstructionOp):
    """``shr``: logical (``.b``/``.u``) or arithmetic (``.s``) shift right by a 32-bit amount."""

    name = "ptx.shr"
    MODIFIERS: ClassVar = _mods(BIT_TYPES, INT_TYPES)
    SIGNATURES: ClassVar = (("", "T T U"),)


@irdl_op_definition
class SelpOp(InstructionOp):
    """``selp``: select one of two values by a predicate."""

    name = "ptx.selp"
    MODIFIERS: ClassVar = _mods(ALL_TYPES)
    SIGNATURES: ClassVar = (("", "T T T P"),)


@irdl_op_definition
class SetpOp(InstructionOp):
    """``setp``: compare two values into a predicate."""

    name = "ptx.setp"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, COMPARISONS, "ftz")
    SIGNATURES: ClassVar = (("", "P T T"),)


@irdl_op_definition
class CvtOp(InstructionOp):
    """``cvt``: convert from the source type (last modifier) to the destination type (first)."""

    name = "ptx.cvt"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, ROUNDING, "rni", "rzi", "rmi", "rpi", "ftz", "sat", "relu")
    SIGNATURES: ClassVar = (("", "D S"),)


@irdl_op_definition
class CvtaOp(InstructionOp):
    """``cvta``: convert an address between generic and a state space."""

    name = "ptx.cvta"
    MODIFIERS: ClassVar = _mods(SPACE_MODS, "to", "u32", "u64")
    SIGNATURES: ClassVar = (("", "T T"),)


@irdl_op_definition
class LdOp(InstructionOp):
    """``ld``: load a value (or a ``.v2``/``.v4`` vector) from an address."""

    name = "ptx.ld"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, SPACE_MODS, SEMANTICS, SCOPES, CACHE_MODS, VECTOR_WIDTHS)
    SIGNATURES: ClassVar = (("", "T A"),)


@irdl_op_definition
class StOp(InstructionOp):
    """``st``: store a value (or a ``.v2``/``.v4`` vector) to an address."""

    name = "ptx.st"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, SPACE_MODS, SEMANTICS, SCOPES, CACHE_MODS, VECTOR_WIDTHS)
    SIGNATURES: ClassVar = (("", "A T"),)


@irdl_op_definition
class AtomOp(InstructionOp):
    """``atom``: atomic read-modify-write, returning the old value."""

    name = "ptx.atom"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, SPACE_MODS, SEMANTICS, SCOPES, ATOMIC_OPS)
    SIGNATURES: ClassVar = (("cas", "T A T T"), ("", "T A T"))


@irdl_op_definition
class RedOp(InstructionOp):
    """``red``: atomic reduction into memory, no result."""

    name = "ptx.red"
    MODIFIERS: ClassVar = _mods(ALL_TYPES, SPACE_MODS, SEMANTICS, SCOPES, ATOMIC_OPS)
    SIGNATURES: ClassVar = (("", "A T"),)


@irdl_op_definition
class FenceOp(InstructionOp):
    """``fence``: a memory fence (``.acq_rel.gpu``, ``.proxy.async``, ``.mbarrier_init``)."""

    name = "ptx.fence"
    MODIFIERS: ClassVar = _mods(SEMANTICS, SCOPES, SPACE_MODS, "proxy", "async", "alias", "mbarrier_init")


@irdl_op_definition
class MembarOp(InstructionOp):
    """``membar``: the older memory barrier."""

    name = "ptx.membar"
    MODIFIERS: ClassVar = _mods("cta", "gl", "sys")


@irdl_op_definition
class BarOp(InstructionOp):
    """``bar``: a CTA barrier (``bar.sync id{, count}``), ``bar.warp.sync mask``, or a barrier that
    reduces a predicate over its threads (``bar.red.or.pred p, id, count, q``)."""

    name = "ptx.bar"
    MODIFIERS: ClassVar = _mods("sync", "arrive", "red", "warp", "aligned", "or", "and", "pred")
    SIGNATURES: ClassVar = (("red", "P U U P"), ("", "U U?"))


@irdl_op_definition
class BarrierOp(InstructionOp):
    """``barrier``: a named CTA barrier (``barrier.sync id{, count}``)."""

    name = "ptx.barrier"
    MODIFIERS: ClassVar = _mods("sync", "arrive", "red", "aligned", "cluster")
    SIGNATURES: ClassVar = (("", "U U?"),)


@irdl_op_definition
class MbarrierOp(InstructionOp):
    """``mbarrier``: init, arrive (with transaction bytes) and phase waits on a shared-memory barrier."""

    name = "ptx.mbarrier"
    MODIFIERS: ClassVar = _mods(SPACE_MODS, SEMANTICS, SCOPES, "b64", "init", "arrive", "arrive_drop", "expect_tx",
                      "complete_tx", "test_wait", "try_wait", "parity", "noComplete")
    SIGNATURES: ClassVar = (("init", "A U"), ("test_wait", "P A U"), ("try_wait", "P A U"), ("", "T A U?"))


@irdl_op_definition
class CpOp(InstructionOp):
    """``cp``: asynchronous copies (``cp.async``, ``cp.async.bulk[.tensor]``) and their groups."""

    name = "ptx.cp"
    MODIFIERS: ClassVar = _mods(SPACE_MODS, CACHE_MODS, "async", "bulk", "tensor", "1d", "2d", "3d", "4d", "5d", "tile",
                      "im2col", "mbarrier::complete_tx::bytes", "bulk_group", "commit_group", "wait_group",
                      "read", "prefetch", "L2", "mbarrier", "arrive", "noinc", "b64", "L2::cache_hint")
    SIGNATURES: ClassVar = (("commit_group", ""), ("wait_group", "U"), ("prefetch", "A U"), ("arrive", "A"),
                  ("tensor", "A A A? X?"), ("", "A A U A? X?"))


@irdl_op_definition
class CreatepolicyOp(InstructionOp):
    """``createpolicy.fractional``: an L2 cache policy (a ``b64`` register) for copies with ``.L2::cache_hint``."""

    name = "ptx.createpolicy"
    MODIFIERS: ClassVar = _mods("fractional", "L2::evict_first", "L2::evict_last", "L2::evict_normal",
                      "L2::evict_unchanged", "b64")
    SIGNATURES: ClassVar = (("", "T"),)


@irdl_op_definition
class ShflOp(InstructionOp):
    """``shfl.sync``: exchange a register between the lanes of a warp."""

    name = "ptx.shfl"
    MODIFIERS: ClassVar = _mods("sync", "up", "down", "bfly", "idx", "b32")
    SIGNATURES: ClassVar = (("", "T T U U U"),)


@irdl_op_definition
class VoteOp(InstructionOp):
    """``vote.sync``: a warp-wide vote on a predicate."""

    name = "ptx.vote"
    MODIFIERS: ClassVar = _mods("sync", "all", "any", "uni", "ballot", "pred", "b32")
    SIGNATURES: ClassVar = (("", "T P U"),)


@irdl_op_definition
class ActivemaskOp(InstructionOp):
    """``activemask.b32``: the mask of the warp's threads executing it."""

    name = "ptx.activemask"
    MODIFIERS: ClassVar = _mods("b32")
    SIGNATURES: ClassVar = (("", "T"),)


@irdl_op_definition
class FmaOp(InstructionOp):
    """``fma``: fused multiply-add."""

    name = "ptx.fma"
    MODIFIERS: ClassVar = _mods(FLOAT_TYPES, FLOAT_MODS)
    SIGNATURES: ClassVar = (("", "T T T T"),)


@irdl_op_definition
class Ex2Op(InstructionOp):
    """``ex2``: base-2 exponential."""

    name = "ptx.ex2"
    MODIFIERS: ClassVar = _mods(FLOAT_TYPES, FLOAT_MODS)
    SIGNATURES: ClassVar = (("", "T T"),)


@irdl_op_definition
class RcpOp(InstructionOp):
    """``rcp``: reciprocal."""

    name = "ptx.rcp"
    MODIFIERS: ClassVar = _mods(FLOAT_TYPES, FLOAT_MODS)
    SIGNATURES: ClassVar = (("", "T T"),)


@irdl_op_definition
class SqrtOp(InstructionOp):
    """``sqrt``: square root."""

    name = "ptx.sqrt"
    MODIFIERS: ClassVar = _mods(FLOAT_TYPES, FLOAT_MODS)
    SIGNATURES: ClassVar = (("", "T T"),)


@irdl_op_definition
class RsqrtOp(InstructionOp):
    """``rsqrt``: reciprocal square root."""

    name = "ptx.rsqrt"
    MODIFIERS: ClassVar = _mods(FLOAT_TYPES, FLOAT_MODS)
    SIGNATURES: ClassVar = (("", "T T"),)


@irdl_op_definition
class BraOp(InstructionOp):
    """``bra``: a branch to a label (``.uni`` when every thread takes it)."""

    name = "ptx.bra"
    MODIFIERS: ClassVar = _mods("uni")
    SIGNATURES: ClassVar = (("", "L"),)


@irdl_op_definition
class BrxOp(InstructionOp):
    """``brx.idx``: a branch to entry ``index`` of a :class:`BranchTargetsOp` list (``.uni`` when every
    thread takes the same entry); an index past the list's end is undefined behaviour in PTX, so the
    caller bounds it first."""

    name = "ptx.brx"
    MODIFIERS: ClassVar = _mods("idx", "uni")
    SIGNATURES: ClassVar = (("", "U L"),)


@irdl_op_definition
class RetOp(InstructionOp):
    """``ret``: return from the kernel."""

    name = "ptx.ret"
    MODIFIERS: ClassVar = _mods("uni")


@irdl_op_definition
class ExitOp(InstructionOp):
    """``exit``: end the thread."""

    name = "ptx.exit"


@irdl_op_definition
class NanosleepOp(InstructionOp):
    """``nanosleep.u32``: suspend the thread for about a number of nanoseconds."""

    name = "ptx.nanosleep"
    MODIFIERS: ClassVar = _mods("u32")
    SIGNATURES: ClassVar = (("", "U"),)


@irdl_op_definition
class PrmtOp(InstructionOp):
    """``prmt.b32``: permute bytes of two registers by a selector."""

    name = "ptx.prmt"
    MODIFIERS: ClassVar = _mods("b32", "f4e", "b4e", "rc8", "ecl", "ecr", "rc16")
    SIGNATURES: ClassVar = (("", "T T T U"),)


#: every instruction op class, in the order the dialect lists them
INSTRUCTION_OPS: tuple[type[InstructionOp], ...] = (
    MovOp, AddOp, SubOp, MulOp, MadOp, DivOp, RemOp, MinOp, MaxOp, NegOp, AbsOp,
    AndOp, OrOp, XorOp, NotOp, ShlOp, ShrOp, SelpOp, SetpOp, CvtOp, CvtaOp,
    LdOp, StOp, AtomOp, RedOp, FenceOp, MembarOp, BarOp, BarrierOp,
    MbarrierOp, CpOp, CreatepolicyOp, ShflOp, VoteOp, ActivemaskOp, FmaOp, Ex2Op, RcpOp, SqrtOp, RsqrtOp,
    BraOp, BrxOp, RetOp, ExitOp, NanosleepOp, PrmtOp,
)
#: mnemonic root -> op class
OPS_BY_ROOT: dict[str, type[InstructionOp]] = {cls.name[len("ptx."):]: cls for cls in INSTRUCTION_OPS}


def instr(
    mnemonic: str,
    slots: Sequence[Attribute],
    operands: Sequence[SSAValue] = (),
    result_kinds: Sequence[str] = (),
    guard: SSAValue | None = None,
    negated: bool = False,
) -> InstructionOp:
    """Build an instruction op from its full mnemonic (``add.u32``) and typed operand slots.

    ``operands`` are the SSA values of the :class:`OperandSlotAttr` slots in
    order, ``result_kinds`` the register kinds of the :class:`ResultSlotAttr`
    slots; ``guard`` is the predicate (``@p``, ``@!p`` with ``negated``).
    """
    root, *mods = mnemonic.split(".")
    cls = OPS_BY_ROOT.get(root)
    if cls is None:
        raise ValueError(f"no ptx op for mnemonic '{mnemonic}'")
    properties: dict[str, Attribute] = {
        "mods": ArrayAttr([StringAttr(m) for m in mods]),
        "slots": ArrayAttr(slots),
    }
    if negated:
        properties["negated"] = UnitAttr()
    return cls(
        operands=[list(operands), [guard] if guard is not None else []],
        result_types=[[reg(k) for k in result_kinds]],
        properties=properties,
    )


PTX = Dialect(
    "ptx",
    [ModuleOp, GlobalOp, KernelOp, LabelOp, BranchTargetsOp, *INSTRUCTION_OPS],
    [RegType, ResultSlotAttr, OperandSlotAttr, SpecialRegAttr, AddressAttr, VectorAttr, TensorAddressAttr],
)

# ---------------------------------------------------------------------------
# printer
# ---------------------------------------------------------------------------


def immediate_text(value: IntegerAttr | FloatAttr) -> str:
    """PTX text of an immediate (floats as the exact ``f32`` bits, ``0fXXXXXXXX``)."""
    if isinstance(value, FloatAttr):
        return "0f%08X" % struct.unpack("<I", struct.pack("<f", value.value.data))[0]
    return str(value.value.data)


def _slot_text(slot: Attribute, values: _SlotValues, name: dict[SSAValue, str]) -> str:
    """PTX text of one operand slot; register slots take their values from ``values`` in order."""
    if isinstance(slot, (ResultSlotAttr, OperandSlotAttr)):
        return name[values.next_for(slot)]
    if isinstance(slot, (IntegerAttr, FloatAttr)):
        return immediate_text(slot)
    if isinstance(slot, SpecialRegAttr):
        return slot.register.data
    if isinstance(slot, SymbolRefAttr):
        return slot.root_reference.data
    if isinstance(slot, VectorAttr):
        return "{" + ", ".join(_slot_text(e, values, name) for e in slot.elements.data) + "}"
    if isinstance(slot, TensorAddressAttr):
        return f"[{_slot_text(slot.base, values, name)}, {_slot_text(slot.coords, values, name)}]"
    if isinstance(slot, AddressAttr):
        offset = slot.offset.data
        return f"[{_slot_text(slot.base, values, name)}{f'+{offset}' if offset else ''}]"
    raise ValueError(f"not a PTX operand slot: {slot}")


def instruction_text(op: InstructionOp, name: dict[SSAValue, str]) -> str:
    """One instruction line (without indentation): guard, mnemonic, operands, ``;``."""
    guard = f"@{'!' if op.negated is not None else ''}{name[op.guard]} " if op.guard is not None else ""
    values = _SlotValues(op)
    operands = ", ".join(_slot_text(s, values, name) for s in op.slots.data)
    return f"{guard}{op.mnemonic()}{' ' + operands if operands else ''};"


def _register_names(k: KernelOp) -> tuple[dict[SSAValue, str], dict[str, int]]:
    """PTX names of the kernel's registers in definition order, and the count per name prefix."""
    names: dict[SSAValue, str] = {}
    counts: dict[str, int] = {}
    for op in k.body.block.ops:
        for r in op.results:
            prefix = REG_CLASSES[RegType.kind_of(r)][1]
            counts[prefix] = counts.get(prefix, 0) + 1
            names[r] = f"{prefix}{counts[prefix]}"
    return names, counts


def _print_kernel(k: KernelOp, out: IO[str]) -> None:
    names, counts = _register_names(k)
    params = ",\n".join(f"\t.param .{p.data.split()[0]} {p.data.split()[1]}" for p in k.params.data)
    out.write(f".visible .entry {k.sym_name.data}(\n{params}\n)\n.maxntid {k.maxntid.data}, 1, 1\n")
    if k.minnctapersm is not None:
        out.write(f".minnctapersm {k.minnctapersm.data}\n")
    if k.cluster is not None:
        out.write(f".explicitcluster\n.reqnctapercluster {k.cluster.data}, 1, 1\n")
    out.write("{\n")
    decl: dict[str, str] = {}
    for dtype, prefix in REG_CLASSES.values():
        decl.setdefault(prefix, dtype)
    for prefix, n in counts.items():
        out.write(f"\t.reg {decl[prefix]} {prefix}<{n + 1}>;\n")
    out.write("\n")
    for op in k.body.block.ops:
        if isinstance(op, LabelOp):
            out.write(f"{op.label.data}:\n")
            continue
        if isinstance(op, BranchTargetsOp):
            targets = ", ".join(t.root_reference.data for t in op.targets.data)
            out.write(f"{op.label.data}: .branchtargets {targets};\n")
            continue
        assert isinstance(op, InstructionOp), op
        out.write(f"\t{instruction_text(op, names)}\n")
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
