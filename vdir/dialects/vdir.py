"""The ``vdir`` dialect: global buffers, on-chip tiles, tokens, micro-ops.

A program (``vdir.program``) takes global buffers as arguments. Its body is a
list of micro-ops, each naming the engine kind that runs it:

* ``vdir.load``    buffer region -> tile            (load engine)
* ``vdir.compute`` an op family over tiles -> tile  (compute engine)
* ``vdir.store``   tile -> buffer region, a token   (store engine)

Dependencies are the SSA tile edges, explicit tokens (``after %t``,
``vdir.join``) and the memory dependencies through global buffers that the
dependency analysis derives from program order. ``vdir.repeat`` keeps
repetition compact (a loop over K tiles, 16 identical layers); dynamic offsets
come from its induction variable through ``affine.apply``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from enum import StrEnum
from typing import ClassVar, Generic, TypeVar, cast

from xdsl.dialects.affine import ApplyOp
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    DictionaryAttr,
    Float32Type,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    SymbolNameConstraint,
    i64,
)
from xdsl.dialects.utils import EnumAttribute, print_dynamic_index_list
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    OptionalOperandVariable,
    ParsingState,
    PrintingState,
    VariadicOperandVariable,
    irdl_custom_directive,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from vdir import isa
from vdir.diagnostics import OpVerifyException, location_of
from vdir.dialects.vdir_sched import (
    LAYOUT_FACT_STAGE,
    LAYOUT_KEY,
    SCHED_FACT_STAGE,
    SCHED_KEY,
    STAGE_KEY,
    LayoutAttr,
    ScheduleAttr,
    Stage,
    StageAttr,
)
from vdir.families import DTYPE_BYTES, FamilyError, TileSig, get_family
from vdir.isa import MAX_INPUTS, ROW_STRIDE
from vdir.target import DEFAULT_TARGET, EngineKind, TargetDescription, UnknownTargetError, get_target

_BASE64 = re.compile(r"[A-Za-z0-9+/=]*")

#: what the text form can write after ``%``: a program argument's name must
#: be one of these, so that the custom form spells (and re-reads) it
_ARGUMENT_NAME = re.compile(r"[0-9]+|[A-Za-z$._-][A-Za-z0-9$._-]*")

#: bytes a bulk copy moves in whole units of: a tile row and a column offset are multiples of this
BULK_COPY_ALIGN = 16

#: sentinel for a dynamic offset in ``static_offsets`` (as MLIR's kDynamic)
DYNAMIC = DYNAMIC_INDEX

#: the range of a runtime value (launch-time scalars, values read from
#: device memory are 32-bit signed integers)
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
#: the range of the i64 properties (repeat bounds, flow ids)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_ELEMENT_TYPES = {"bf16": BFloat16Type, "f32": Float32Type, "i32": lambda: IntegerType(32),
                  "i64": lambda: IntegerType(64)}
#: how messages list the supported element types
_ELEMENT_TYPE_LIST = "bf16, f32, i32 or i64"


def is_argument_name(name: str) -> bool:
    """Whether ``name`` can name a program argument (an SSA name as the text form writes it)."""
    return _ARGUMENT_NAME.fullmatch(name) is not None


def is_i32(t: Attribute) -> bool:
    """Whether ``t`` is the signless 32-bit integer type ``i32``."""
    return _is_signless(t, 32)


def is_i64(t: Attribute) -> bool:
    """Whether ``t`` is the signless 64-bit integer type ``i64`` (fixed-point accumulators)."""
    return _is_signless(t, 64)


def _is_signless(t: Attribute, width: int) -> bool:
    return isinstance(t, IntegerType) and t.width.data == width and t.signedness.data == Signedness.SIGNLESS


def dtype_name(t: Attribute) -> str:
    """``"bf16"`` / ``"f32"`` / ``"i32"`` / ``"i64"`` for a supported element type."""
    if isinstance(t, BFloat16Type):
        return "bf16"
    if isinstance(t, Float32Type):
        return "f32"
    if is_i32(t):
        return "i32"
    if is_i64(t):
        return "i64"
    raise VerifyException(f"element type {t} is not supported (use {_ELEMENT_TYPE_LIST})")


def element_type(name: str) -> Attribute:
    """The xDSL element type a dtype name (``bf16``, ``f32``, ``i32``, ``i64``) stands for."""
    return _ELEMENT_TYPES[name]()


# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------

#: a buffer's or tile's ``<RxCxT>`` as a program spells it (no spaces)
_SHAPE_TEXT = re.compile(r"<[0-9]+x[0-9]+x(?:bf16|f32|i32|i64)>")
#: the parameters of each shape text parsed so far, by type class: a flat file
#: repeats a handful of shapes on every micro-op, and parsing one costs a third
#: of parsing the op (docs/performance.md). The parameters are immutable
#: attributes, so equal text gives equal types.
_PARSED_SHAPES: dict[tuple[type, str], tuple[ArrayAttr[IntAttr], Attribute]] = {}
#: the most shape texts :data:`_PARSED_SHAPES` holds (it starts again when full)
_PARSED_SHAPES_MAX = 4096


class _ShapedType(ParametrizedAttribute, TypeAttribute):
    """Shared parsing/printing of ``<RxCxdtype>`` for buffers and tiles."""

    shape: ArrayAttr[IntAttr]
    element_type: Attribute

    def __init__(self, shape: Sequence[int], element: Attribute | str):
        if isinstance(element, str):
            element = element_type(element)
        super().__init__(ArrayAttr([IntAttr(d) for d in shape]), element)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        """``<RxCxT>``; a text parsed before (spelled without spaces) gives the same parameters
        without parsing it again (:data:`_PARSED_SHAPES`)."""
        text = _SHAPE_TEXT.match(parser.lexer.input.content, parser.pos)
        if text is not None and (params := _PARSED_SHAPES.get((cls, text.group()))) is not None:
            parser._resume_from(text.end())  # past the '>', as parsing it would leave the parser
            return params
        params = cls._parse_shape(parser)
        if text is not None:
            if len(_PARSED_SHAPES) >= _PARSED_SHAPES_MAX:
                _PARSED_SHAPES.clear()
            _PARSED_SHAPES[cls, text.group()] = params
        return params

    @classmethod
    def _parse_shape(cls, parser: AttrParser) -> tuple[ArrayAttr[IntAttr], Attribute]:
        """``<RxCxT>``, checked: two positive dimensions and a supported element type."""
        with parser.in_angle_brackets():
            pos = parser.pos
            dims, elem = parser.parse_ranked_shape()
        if len(dims) != 2:
            parser.raise_error(
                f"{cls.name} must be two-dimensional (rows x cols), got {len(dims)} dimensions",
                pos,
                parser.pos,
            )
        if any(d <= 0 for d in dims):
            parser.raise_error(f"{cls.name} dimensions must be positive", pos, parser.pos)
        if not (isinstance(elem, BFloat16Type | Float32Type) or is_i32(elem) or is_i64(elem)):
            parser.raise_error(
                f"{cls.name} element type must be {_ELEMENT_TYPE_LIST}, got {elem}", pos, parser.pos
            )
        return (ArrayAttr([IntAttr(d) for d in dims]), elem)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + "x".join(str(d.data) for d in self.shape.data) + "x")
        printer.print_attribute(self.element_type)
        printer.print_string(">")

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def dtype(self) -> str:
        return dtype_name(self.element_type)

    @property
    def nbytes(self) -> int:
        n = DTYPE_BYTES[self.dtype]
        for d in self.dims:
            n *= d
        return n

    def verify(self) -> None:
        dtype_name(self.element_type)
        if len(self.dims) != 2 or any(d <= 0 for d in self.dims):
            raise VerifyException(f"{self.name} needs two positive dimensions, got {self.dims}")


@irdl_attr_definition
class BufferType(_ShapedType):
    """``!vdir.buffer<RxCxT>``: a tensor in global memory, a program argument."""

    name = "vdir.buffer"

    # Redeclared so that the generated dataclass compares (and hashes) them:
    # dataclass fields are not inherited from the non-dataclass base.
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    # the shared constructor; without this, type checkers take the redeclared
    # fields for a generated ``__init__(shape, element_type)``
    __init__ = _ShapedType.__init__


@irdl_attr_definition
class TileType(_ShapedType):
    """``!vdir.tile<RxCxT>``: a value held on chip, produced by one micro-op."""

    name = "vdir.tile"

    shape: ArrayAttr[IntAttr]  # redeclared: see BufferType
    element_type: Attribute
    __init__ = _ShapedType.__init__  # see BufferType

    @property
    def sig(self) -> TileSig:
        r, c = self.dims
        return TileSig((r, c), self.dtype)


@irdl_attr_definition
class TokenType(ParametrizedAttribute, TypeAttribute):
    """``!vdir.token``: a pure ordering edge (e.g. a store another SM waits on)."""

    name = "vdir.token"


_E = TypeVar("_E", bound=StrEnum)


class _AngleBracketedEnum(Generic[_E]):
    """The syntax of vdir's enum attributes: the value in angle brackets (``#vdir.engine<compute>``).

    Mixed in before ``EnumAttribute[E]`` (which must stay a direct base), whose ``enum_type`` it reads.
    """

    data: _E
    enum_type: ClassVar[type[StrEnum]]

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.value}>")

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> _E:
        with parser.in_angle_brackets():
            # xDSL types parse_str_enum against its own StrEnum class; the standard library's behaves the same
            return cast(_E, parser.parse_str_enum(cls.enum_type))  # pyright: ignore[reportArgumentType]


# xDSL types EnumAttribute against its own StrEnum class; EngineKind is the
# standard library's enum.StrEnum, which behaves the same.
@irdl_attr_definition
class EngineKindAttr(_AngleBracketedEnum[EngineKind], EnumAttribute[EngineKind]):  # pyright: ignore[reportInvalidTypeArguments]
    """``#vdir.engine<compute>``: which engine kind runs a micro-op."""

    name = "vdir.engine"


class ReduceKind(StrEnum):
    """How a reducing ``vdir.store`` combines its tile with the destination."""

    #: add the tile into the destination, element by element (f32, or i64 fixed point)
    ADD = "add"


#: the element types each reduction combines, read from the ISA's tables (``isa.REDUCE_NAMES``,
#: ``isa.REDUCE_DTYPES``: their one owner, which also picks the code for an element type,
#: ``isa.reduce_code``)
REDUCE_DTYPES = {kind: tuple(d for code, name in isa.REDUCE_NAMES.items() if name == kind.value
                             for d in isa.REDUCE_DTYPES[code]) for kind in ReduceKind}


@irdl_attr_definition
class ReduceKindAttr(_AngleBracketedEnum[ReduceKind], EnumAttribute[ReduceKind]):  # pyright: ignore[reportInvalidTypeArguments]
    """``#vdir.reduce<add>``: the reduction of a reducing store (``vdir.store ... reduce add``)."""

    name = "vdir.reduce"


# --------------------------------------------------------------------------
# Shared helpers for micro-ops
# --------------------------------------------------------------------------


def enclosing_program(op: Operation) -> "ProgramOp | None":
    """The ``vdir.program`` that ``op`` is nested in, or None."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ProgramOp):
        parent = parent.parent_op()
    return parent


def target_of(op: Operation) -> TargetDescription:
    """The target description of the program that holds ``op`` (default h200)."""
    program = op if isinstance(op, ProgramOp) else enclosing_program(op)
    name = DEFAULT_TARGET
    if program is not None and program.target is not None:
        name = program.target.data
    try:
        return get_target(name)
    except UnknownTargetError as e:
        raise VerifyException(str(e)) from None


def value_name(v: SSAValue) -> str:
    """A value as a message names it: ``%name``, or ``this value`` when it has no name."""
    return f"%{v.name_hint}" if v.name_hint else "this value"


def tile_text(v: SSAValue) -> str:
    """A tile as a message names it: ``tile %t``, or ``the tile produced by vdir.load`` when unnamed."""
    if v.name_hint:
        return f"tile %{v.name_hint}"
    owner = v.owner.name if isinstance(v.owner, Operation) else "a block argument"
    return f"the tile produced by {owner}"


def _check_engine(op: "LoadOp | StoreOp | ComputeOp", op_class: str) -> None:
    target = target_of(op)
    kind = target.engine(op.engine.data.value)
    if kind is None:
        raise VerifyException(
            f"target '{target.name}' has no '{op.engine.data.value}' engine "
            f"(its engines: {', '.join(target.engine_names)})"
        )
    if op_class not in kind.runs:
        raise VerifyException(
            f"the {kind.name} engine cannot run a {op_class} micro-op "
            f"(it runs: {', '.join(sorted(kind.runs))})"
        )
    for v in op.operands:
        if isinstance(v.type, TileType) and not kind.reads_tiles:
            raise VerifyException(
                f"{tile_text(v)} is consumed on the {kind.name} engine, which cannot read tiles"
            )


def _engine_choices() -> str:
    """The engine kinds, as a parse error lists them (``load, compute or store``)."""
    names = [k.value for k in EngineKind]
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


def _check_region(
    buffer: BufferType, tile: TileType, static: Sequence[int], n_dynamic: int, what: str
) -> None:
    if len(static) != 2:
        raise VerifyException(f"{what} needs 2 offsets (row, column), got {len(static)}")
    if sum(1 for s in static if s == DYNAMIC) != n_dynamic:
        raise VerifyException(f"{what}: offsets and dynamic offset operands disagree")
    if buffer.dtype != tile.dtype:
        raise VerifyException(
            f"{what}: buffer element type {buffer.dtype} differs from tile element type {tile.dtype}"
        )
    esize = DTYPE_BYTES[tile.dtype]
    rows, cols = tile.dims
    brows, bcols = buffer.dims
    if rows > brows or cols > bcols:
        raise VerifyException(f"{what}: a {rows}x{cols} tile does not fit in a {brows}x{bcols} buffer")
    if (cols * esize) % BULK_COPY_ALIGN:
        raise VerifyException(
            f"{what}: tile rows are {cols * esize} bytes; bulk copies need a multiple of {BULK_COPY_ALIGN}"
        )
    r0, c0 = static
    for off, axis in ((r0, "row"), (c0, "column")):
        if off != DYNAMIC and off < 0:
            raise VerifyException(f"{what}: {axis} offset {off} is negative")
    if c0 != DYNAMIC and (c0 * esize) % BULK_COPY_ALIGN:
        raise VerifyException(f"{what}: column offset {c0} is not 16-byte aligned")
    for off, size, bound, axis in ((r0, rows, brows, "row"), (c0, cols, bcols, "column")):
        if off != DYNAMIC and off + size > bound:
            raise VerifyException(
                f"{what}: region {axis}s [{off}, {off + size}) are out of the buffer's bounds [0, {bound})"
            )


def _check_flow(op: "LoadOp | StoreOp | ComputeOp") -> None:
    if op.flow is not None and op.flow.value.data < 0:
        raise VerifyException(f"flow id {op.flow.value.data} is negative")


def _check_tile_used(op: Operation) -> None:
    for r in op.results:
        if isinstance(r.type, TileType) and not r.uses:
            # "the tile produced by vdir.load is never used" for an unnamed one
            unused = f"{tile_text(r)} is produced but" if r.name_hint else tile_text(r) + " is"
            raise VerifyException(f"{unused} never used")


def find_cycle(block: Block) -> list[Operation] | None:
    """A dependency cycle among the ops of ``block`` (through SSA uses), or None."""
    index = {op: i for i, op in enumerate(block.ops)}
    state: dict[Operation, int] = {}

    def producers(op: Operation) -> list[Operation]:
        out = []
        for nested in op.walk():
            for v in nested.operands:
                owner = v.owner
                while isinstance(owner, Operation) and owner not in index:
                    owner = owner.parent_op()
                if isinstance(owner, Operation) and owner is not op:
                    out.append(owner)
        return out

    for root in block.ops:
        if state.get(root):
            continue
        stack: list[tuple[Operation, list[Operation]]] = [(root, producers(root))]
        path = [root]
        state[root] = 1
        while stack:
            op, todo = stack[-1]
            if not todo:
                state[op] = 2
                stack.pop()
                path.pop()
                continue
            nxt = todo.pop()
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, producers(nxt)))
    return None


def _describe(op: Operation) -> str:
    names = [value_name(r) for r in op.results if r.name_hint]
    return f"{names[0]} ({op.name})" if names else op.name


def check_acyclic(block: Block) -> None:
    """Reject a dependency cycle, naming the ops on it (an op that reads its own result first)."""
    for op in block.ops:
        if any(v.owner is op for v in op.operands):
            raise OpVerifyException(f"{_describe(op)} reads its own result", op)
    cycle = find_cycle(block)
    if cycle:
        raise VerifyException(
            "dependency cycle: " + " -> ".join(_describe(op) for op in reversed(cycle))
        )


class MicroOp(IRDLOperation):
    """Base class of the micro-ops.

    Each has an ``engine`` property (the engine kind that runs it), an optional
    ``flow`` id (micro-ops of one flow keep program order on their engine) and
    ``deps``, the tokens it waits for.
    """

    OP_CLASS: ClassVar[str]


# --------------------------------------------------------------------------
# Custom directives of the micro-ops' assembly formats
# --------------------------------------------------------------------------


@irdl_custom_directive
class OnEngine(CustomDirective):
    """``on <kind>``: the engine kind that runs a micro-op (``on load``).

    Always printed. Left out of the input, the kind is the property's default,
    the op's natural engine. A directive because ``EngineKindAttr`` on its own
    prints in its bracketed form (``#vdir.engine<load>``).
    """

    engine: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        if parser.parse_optional_keyword("on") is None:
            if self.engine.default_value is None:
                parser.raise_error("expected 'on' and an engine kind")
            self.engine.set(state, self.engine.default_value)
            return
        pos = parser.pos
        word = parser.parse_identifier(" (an engine kind)")
        try:
            kind = EngineKind(word)
        except ValueError:
            parser.raise_error(
                f"unknown engine kind '{word}' (expected {_engine_choices()})", pos, parser.pos
            )
        self.engine.set(state, EngineKindAttr(kind))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        engine = self.engine.get(op)
        assert isinstance(engine, EngineKindAttr)
        printer.print_string(f"on {engine.data.value}")


def parse_i64(parser: Parser, what: str, *, allow_negative: bool = True) -> int:
    """An integer literal that fits in a signed 64-bit property, as the text writes it.

    xDSL would store a value in [2^63, 2^64) in an ``i64`` as its negative
    two's complement (``18446744073709551615`` as ``-1``), so that a later
    message would show a number the text does not have; such a value, and any
    beyond, is a parse error at the number, naming ``what`` it was meant to be.
    """
    start = parser.pos
    value = parser.parse_integer(allow_boolean=False, allow_negative=allow_negative)
    if not INT64_MIN <= value <= INT64_MAX:
        written = parser.lexer.input.content[start : parser.pos].strip() or str(value)
        parser.raise_error(f"{what} {written} does not fit in a signed 64-bit integer", start, parser.pos)
    return value


@irdl_custom_directive
class Flow(CustomDirective):
    """``flow 3``: the micro-op's flow id, if any (printed only when present)."""

    flow: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        if parser.parse_optional_keyword("flow") is not None:
            self.flow.set(state, IntegerAttr(parse_i64(parser, "flow id"), i64))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        flow = self.flow.get(op)
        if not isinstance(flow, IntegerAttr):
            return
        state.print_whitespace(printer)
        printer.print_string(f"flow {flow.value.data}")


@irdl_custom_directive
class Reduce(CustomDirective):
    """``reduce add``: a store that combines its tile with the destination (printed only when present)."""

    reduce: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        if parser.parse_optional_keyword("reduce") is None:
            return
        pos = parser.pos
        word = parser.parse_identifier(" (a reduction)")
        try:
            kind = ReduceKind(word)
        except ValueError:
            choices = ", ".join(k.value for k in ReduceKind)
            parser.raise_error(f"unknown reduction '{word}' (expected {choices})", pos, parser.pos)
        self.reduce.set(state, ReduceKindAttr(kind))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        reduce = self.reduce.get(op)
        if not isinstance(reduce, ReduceKindAttr):
            return
        state.print_whitespace(printer)
        printer.print_string(f"reduce {reduce.data.value}")


@irdl_custom_directive
class RegionOffsets(CustomDirective):
    """``[%row, 0]``: the offsets of a buffer region, constants or index values.

    The constants go to ``static_offsets`` (``DYNAMIC`` where a value stands),
    the values to ``dynamic_offsets``, as with xDSL's ``DynamicIndexList``;
    unlike it, a constant must be non-negative, and printing does not re-check
    the attribute's type (this prints tens of thousands of times per program).
    """

    dynamic: VariadicOperandVariable
    static: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        static: list[int] = []
        dynamic: list[UnresolvedOperand] = []

        def parse_offset() -> None:
            if (operand := parser.parse_optional_unresolved_operand()) is not None:
                dynamic.append(operand)
                static.append(DYNAMIC)
            else:
                static.append(parse_i64(parser, "offset", allow_negative=False))

        parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_offset)
        self.dynamic.set(state, dynamic)
        self.static.set(state, DenseArrayBase.from_list(i64, static))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        static = self.static.get(op)
        assert isinstance(static, DenseArrayBase)
        print_dynamic_index_list(printer, DYNAMIC, self.dynamic.get(op), static.get_values())


@irdl_custom_directive
class FamilyName(CustomDirective):
    """The op family of a ``vdir.compute`` as a bare identifier (``gemv``)."""

    family: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.family.set(state, StringAttr(parser.parse_identifier(" (an op family name)")))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        family = self.family.get(op)
        assert isinstance(family, StringAttr)
        printer.print_string(family.data)


#: the comparisons a micro-op's runtime condition may use (``when %v >= 3``)
GUARD_OPS = {"ge": ">=", "lt": "<"}

#: The deepest ``vdir.repeat`` nesting a program may have. The verifiers and
#: the passes walk nested repeats by recursion; real programs nest two or three.
MAX_REPEAT_NESTING = 32


@irdl_custom_directive
class Guard(CustomDirective):
    """``when %v >= 3`` / ``when %v < 3``: the micro-op's runtime condition, if any.

    ``%v`` is an ``index`` value (a launch-time scalar, a value read from
    device memory, or affine in those and induction variables); the micro-op
    runs only if the comparison with the constant holds. A micro-op whose
    condition fails still waits and signals like one that ran (the
    dependency protocol does not depend on runtime values), but has no
    effect. Printed only when present.
    """

    guard: OptionalOperandVariable
    guard_op: AttributeVariable
    guard_bound: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        if parser.parse_optional_keyword("when") is None:
            self.guard.set(state, None)
            return
        self.guard.set(state, parser.parse_unresolved_operand())
        pos = parser.pos
        # MLIR's lexer has no '>=' token: it is '>' followed by '='
        if parser.parse_optional_punctuation(">") is not None:
            parser.parse_punctuation("=", " after '>' (conditions are '>=' or '<')")
            op = "ge"
        elif parser.parse_optional_punctuation("<") is not None:
            op = "lt"
        else:
            parser.raise_error("expected '>=' or '<' in a micro-op's condition", pos, parser.pos)
        self.guard_op.set(state, StringAttr(op))
        self.guard_bound.set(state, IntegerAttr(parse_i64(parser, "condition bound"), i64))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        value = self.guard.get(op)
        kind, bound = self.guard_op.get(op), self.guard_bound.get(op)
        if value is None or not isinstance(kind, StringAttr) or not isinstance(bound, IntegerAttr):
            return
        state.print_whitespace(printer)
        printer.print_string("when ")
        printer.print_ssa_value(value)
        printer.print_string(f" {GUARD_OPS.get(kind.data, kind.data)} {bound.value.data}")


def _guard_properties(guard: "tuple[SSAValue, str, int] | None") -> dict[str, Attribute | None]:
    """The ``guard_op`` / ``guard_bound`` properties of a condition ``(value, "ge"|"lt", bound)``."""
    if guard is None:
        return {"guard_op": None, "guard_bound": None}
    return {"guard_op": StringAttr(guard[1]), "guard_bound": IntegerAttr(guard[2], i64)}


def _check_guard(op: "LoadOp | StoreOp | ComputeOp") -> None:
    """A condition has its value, a known comparison and a bound, or none of them."""
    parts = (op.guard is not None, op.guard_op is not None, op.guard_bound is not None)
    if any(parts) and not all(parts):
        raise VerifyException("a micro-op's condition needs its value, guard_op and guard_bound together")
    if op.guard_op is not None and op.guard_op.data not in GUARD_OPS:
        raise VerifyException(
            f"unknown condition '{op.guard_op.data}' (known: {', '.join(GUARD_OPS)})"
        )


# --------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------


#: The part of every micro-op's format after its operands: its runtime
#: condition, the engine kind, the flow id and the tokens it waits for
#: (``when %n >= 3 on load flow 1 after %a, %b``).
_SCHEDULING_FORMAT = "custom<Guard>($guard, $guard_op, $guard_bound) custom<OnEngine>($engine) custom<Flow>($flow) (`after` $deps^)? attr-dict"


@irdl_op_definition
class LoadOp(MicroOp):
    """Copy a region of a global buffer into a new on-chip tile.

    ``%t = vdir.load %buf[%row, 0] on load : !vdir.buffer<..> -> !vdir.tile<..>``
    """

    name = "vdir.load"
    OP_CLASS: ClassVar[str] = "load"

    source = operand_def(BufferType)
    dynamic_offsets = var_operand_def(IndexType)
    deps = var_operand_def(TokenType)
    guard = opt_operand_def(IndexType)
    guard_op = opt_prop_def(StringAttr)
    guard_bound = opt_prop_def(IntegerAttr[I64])
    result = result_def(TileType)
    static_offsets = prop_def(DenseArrayBase[I64])
    engine = prop_def(EngineKindAttr, default_value=EngineKindAttr(EngineKind.LOAD))
    flow = opt_prop_def(IntegerAttr[I64])

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$source `` custom<RegionOffsets>($dynamic_offsets, $static_offsets) "
        + _SCHEDULING_FORMAT
        + " `:` type($source) `->` type($result)"
    )
    custom_directives = (RegionOffsets, Guard, OnEngine, Flow)

    def __init__(
        self,
        source: SSAValue,
        offsets: Sequence[int | SSAValue],
        tile: TileType,
        engine: EngineKind = EngineKind.LOAD,
        flow: int | None = None,
        deps: Sequence[SSAValue] = (),
        guard: "tuple[SSAValue, str, int] | None" = None,
    ):
        static = [DYNAMIC if isinstance(o, SSAValue) else o for o in offsets]
        dynamic = [o for o in offsets if isinstance(o, SSAValue)]
        super().__init__(
            operands=[source, dynamic, deps, [guard[0]] if guard else []],
            result_types=[tile],
            properties={
                "static_offsets": DenseArrayBase.from_list(i64, static),
                "engine": EngineKindAttr(engine),
                "flow": IntegerAttr(flow, i64) if flow is not None else None,
                **_guard_properties(guard),
            },
        )

    def verify_(self) -> None:
        _check_engine(self, "load")
        _check_flow(self)
        _check_guard(self)
        _check_tile_used(self)
        _check_region(
            self.source.type,  # type: ignore[arg-type]
            self.result.type,  # type: ignore[arg-type]
            self.static_offsets.get_values(),
            len(self.dynamic_offsets),
            "load",
        )


@irdl_op_definition
class StoreOp(MicroOp):
    """Copy a tile to a region of a global buffer; yields a token.

    ``%tok = vdir.store %t, %buf[%row, 0] on store : !vdir.tile<..>, !vdir.buffer<..>``

    With ``reduce add`` (f32 or i64 tiles) the store adds the tile into the
    region instead of overwriting it. Reducing f32 stores from several SMs
    add in the order they happen to run, so their result may differ in the
    last bits from run to run; i64 adds (fixed-point sums) are exact and
    wrap, so theirs does not, and the dependency analysis leaves two of them
    into one region unordered.
    """

    name = "vdir.store"
    OP_CLASS: ClassVar[str] = "store"

    value = operand_def(TileType)
    dest = operand_def(BufferType)
    dynamic_offsets = var_operand_def(IndexType)
    deps = var_operand_def(TokenType)
    guard = opt_operand_def(IndexType)
    guard_op = opt_prop_def(StringAttr)
    guard_bound = opt_prop_def(IntegerAttr[I64])
    token = result_def(TokenType)
    static_offsets = prop_def(DenseArrayBase[I64])
    engine = prop_def(EngineKindAttr, default_value=EngineKindAttr(EngineKind.STORE))
    flow = opt_prop_def(IntegerAttr[I64])
    #: ``reduce add``: add the tile into the region (absent: overwrite it)
    reduce = opt_prop_def(ReduceKindAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$value `,` $dest `` custom<RegionOffsets>($dynamic_offsets, $static_offsets) custom<Reduce>($reduce) "
        + _SCHEDULING_FORMAT
        + " `:` type($value) `,` type($dest)"
    )
    custom_directives = (RegionOffsets, Reduce, Guard, OnEngine, Flow)

    def __init__(
        self,
        value: SSAValue,
        dest: SSAValue,
        offsets: Sequence[int | SSAValue],
        engine: EngineKind = EngineKind.STORE,
        flow: int | None = None,
        deps: Sequence[SSAValue] = (),
        guard: "tuple[SSAValue, str, int] | None" = None,
        reduce: ReduceKind | None = None,
    ):
        static = [DYNAMIC if isinstance(o, SSAValue) else o for o in offsets]
        dynamic = [o for o in offsets if isinstance(o, SSAValue)]
        super().__init__(
            operands=[value, dest, dynamic, deps, [guard[0]] if guard else []],
            result_types=[TokenType()],
            properties={
                "static_offsets": DenseArrayBase.from_list(i64, static),
                "engine": EngineKindAttr(engine),
                "flow": IntegerAttr(flow, i64) if flow is not None else None,
                "reduce": ReduceKindAttr(reduce) if reduce is not None else None,
                **_guard_properties(guard),
            },
        )

    @property
    def reduce_kind(self) -> ReduceKind | None:
        """The reduction of a reducing store, None for a plain one."""
        return self.reduce.data if self.reduce is not None else None

    def verify_(self) -> None:
        _check_engine(self, "store")
        _check_flow(self)
        _check_guard(self)
        _check_region(
            self.dest.type,  # type: ignore[arg-type]
            self.value.type,  # type: ignore[arg-type]
            self.static_offsets.get_values(),
            len(self.dynamic_offsets),
            "store",
        )
        kind = self.reduce_kind
        if kind is not None:
            dtype = self.value.type.dtype  # type: ignore[attr-defined]
            allowed = REDUCE_DTYPES[kind]
            if dtype not in allowed:
                raise VerifyException(
                    f"store: 'reduce {kind.value}' needs an {' or '.join(allowed)} tile, got {dtype}"
                )


def family_params(attr: DictionaryAttr) -> dict:
    """Plain Python values of a compute op's ``params`` dictionary."""
    out = {}
    for k, v in attr.data.items():
        if isinstance(v, FloatAttr):
            out[k] = float(v.value.data)
        elif isinstance(v, IntegerAttr) and not (isinstance(v.type, IntegerType) and v.type.width.data == 1):
            out[k] = int(v.value.data)
        else:  # a bool (an i1) is no number: `true` would read as -1
            raise VerifyException(f"parameter '{k}' must be a number, got {v}")
    return out


@irdl_op_definition
class ComputeOp(MicroOp):
    """Run an op family on tiles, producing a tile.

    ``%y = vdir.compute gemv(%w, %x) on compute : (!vdir.tile<..>, !vdir.tile<..>) -> !vdir.tile<..>``
    Family parameters follow the operands: ``rmsnorm(%x, %g) {eps = 1.0e-05 : f32}``.
    """

    name = "vdir.compute"
    OP_CLASS: ClassVar[str] = "compute"

    inputs = var_operand_def(TileType)
    deps = var_operand_def(TokenType)
    guard = opt_operand_def(IndexType)
    guard_op = opt_prop_def(StringAttr)
    guard_bound = opt_prop_def(IntegerAttr[I64])
    result = result_def(TileType)
    family = prop_def(StringAttr)
    params = opt_prop_def(DictionaryAttr, default_value=DictionaryAttr({}))
    engine = prop_def(EngineKindAttr, default_value=EngineKindAttr(EngineKind.COMPUTE))
    flow = opt_prop_def(IntegerAttr[I64])

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "custom<FamilyName>($family) `(` $inputs `)` ($params^)? "
        + _SCHEDULING_FORMAT
        + " `:` functional-type($inputs, $result)"
    )
    custom_directives = (FamilyName, Guard, OnEngine, Flow)

    def __init__(
        self,
        family: str,
        inputs: Sequence[SSAValue],
        result: TileType,
        params: dict[str, Attribute] | None = None,
        engine: EngineKind = EngineKind.COMPUTE,
        flow: int | None = None,
        deps: Sequence[SSAValue] = (),
        guard: "tuple[SSAValue, str, int] | None" = None,
    ):
        super().__init__(
            operands=[inputs, deps, [guard[0]] if guard else []],
            result_types=[result],
            properties={
                "family": StringAttr(family),
                "params": DictionaryAttr(params) if params else None,
                "engine": EngineKindAttr(engine),
                "flow": IntegerAttr(flow, i64) if flow is not None else None,
                **_guard_properties(guard),
            },
        )

    @property
    def param_values(self) -> dict:
        return family_params(self.params)

    def verify_(self) -> None:
        _check_engine(self, "compute")
        _check_flow(self)
        _check_guard(self)
        _check_tile_used(self)
        if len(self.inputs) > MAX_INPUTS:
            raise VerifyException(
                f"a compute takes at most {MAX_INPUTS} input tiles (the slots of one instruction), "
                f"got {len(self.inputs)}"
            )
        try:
            fam = get_family(self.family.data)
            fam.check(
                [v.type.sig for v in self.inputs],  # type: ignore[attr-defined]
                self.param_values,
                self.result.type.sig,  # type: ignore[attr-defined]
            )
        except FamilyError as e:
            raise VerifyException(str(e)) from None


@irdl_op_definition
class JoinOp(IRDLOperation):
    """Join several tokens into one: ``%j = vdir.join %a, %b``."""

    name = "vdir.join"

    tokens = var_operand_def(TokenType)
    result = result_def(TokenType)

    assembly_format = "$tokens attr-dict"

    def __init__(self, tokens: Sequence[SSAValue]):
        super().__init__(operands=[tokens], result_types=[TokenType()])

    def verify_(self) -> None:
        if not self.tokens:
            raise VerifyException("vdir.join needs at least one token")


@irdl_op_definition
class ReadOp(IRDLOperation):
    """An ``index`` value read from an ``i32`` element of a global buffer.

    ``%tok = vdir.read %ids[0, 3] : !vdir.buffer<1x8xi32>``. It is not a
    micro-op: each micro-op that uses the value (in an offset or a condition)
    reads the element itself when it starts, after the stores to that element
    that precede it in program order (the dependency analysis orders them).
    An offset built from it is checked on the device: a value that would put
    the region outside its buffer stops the launch with an error naming the
    micro-op.
    """

    name = "vdir.read"

    source = operand_def(BufferType)
    position = prop_def(DenseArrayBase[I64])
    result = result_def(IndexType)

    def __init__(self, source: SSAValue, row: int, col: int):
        super().__init__(
            operands=[source],
            result_types=[IndexType()],
            properties={"position": DenseArrayBase.from_list(i64, [row, col])},
        )

    @property
    def row_col(self) -> tuple[int, int]:
        """The (row, column) of the element read."""
        r, c = self.position.get_values()
        return int(r), int(c)

    @classmethod
    def parse(cls, parser: Parser) -> "ReadOp":
        unresolved = parser.parse_unresolved_operand()
        pos = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parse_i64(parser, "vdir.read position", allow_negative=False)
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        source = parser.resolve_operand(unresolved, parser.parse_type())
        if len(pos) != 2:
            parser.raise_error(f"vdir.read takes a (row, column) position, got {len(pos)} numbers")
        op = cls(source, pos[0], pos[1])
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        r, c = self.row_col
        printer.print_string(f"[{r}, {c}]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)

    def verify_(self) -> None:
        t = self.source.type
        assert isinstance(t, BufferType)
        if t.dtype != "i32":
            raise VerifyException(f"vdir.read reads an i32 buffer, got {t.dtype}")
        if len(self.position.get_values()) != 2:
            raise VerifyException("vdir.read takes a (row, column) position")
        r, c = self.row_col
        if not (0 <= r < t.dims[0] and 0 <= c < t.dims[1]):
            raise VerifyException(f"vdir.read of element ({r}, {c}) is outside the {t.dims[0]}x{t.dims[1]} buffer")


@irdl_op_definition
class RepeatOp(IRDLOperation):
    """Repeat a body for an induction variable ``%i`` in ``[lower, upper)``.

    With a runtime bound (``vdir.repeat %i = 0 to %n max 64``) the body is
    laid out for every ``%i`` below the maximum, and the micro-ops of an
    iteration run only if ``%i < %n`` (each gets that condition).

    ``vdir.repeat %i = 0 to 16 { ... }`` keeps a loop over K tiles or over 16
    identical layers a few lines long. The body's micro-ops are expanded in
    iteration order; values do not escape an iteration (cross-iteration
    dependencies go through global buffers and are derived by the analysis).
    """

    name = "vdir.repeat"

    lower = prop_def(IntegerAttr[I64])
    upper = prop_def(IntegerAttr[I64])
    step = prop_def(IntegerAttr[I64])
    #: a runtime upper bound (``to %n max 64``); ``upper`` is then its maximum
    dynamic_upper = opt_operand_def(IndexType)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    def __init__(
        self, lower: int, upper: int, body: Region, step: int = 1, dynamic_upper: SSAValue | None = None
    ):
        super().__init__(
            operands=[[dynamic_upper] if dynamic_upper is not None else []],
            properties={
                "lower": IntegerAttr(lower, i64),
                "upper": IntegerAttr(upper, i64),
                "step": IntegerAttr(step, i64),
            },
            regions=[body],
        )

    @property
    def trip_count(self) -> int:
        lo, hi, st = self.lower.value.data, self.upper.value.data, self.step.value.data
        return max(0, (hi - lo + st - 1) // st)

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    @classmethod
    def parse(cls, parser: Parser) -> "RepeatOp":
        arg = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lower = parse_i64(parser, "vdir.repeat lower bound")
        parser.parse_keyword("to")
        bound = parser.parse_optional_unresolved_operand()
        dynamic_upper = parser.resolve_operand(bound, IndexType()) if bound is not None else None
        if dynamic_upper is not None:
            parser.parse_keyword("max", " after a runtime upper bound (it needs a compile-time maximum)")
        upper = parse_i64(parser, "vdir.repeat upper bound")
        step = 1
        if parser.parse_optional_keyword("step") is not None:
            step = parse_i64(parser, "vdir.repeat step")
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region([arg.resolve(IndexType())])
        op = cls(lower, upper, body, step, dynamic_upper)
        if attrs:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.induction_var)
        printer.print_string(f" = {self.lower.value.data} to ")
        if self.dynamic_upper is not None:
            printer.print_operand(self.dynamic_upper)
            printer.print_string(" max ")
        printer.print_string(f"{self.upper.value.data}")
        if self.step.value.data != 1:
            printer.print_string(f" step {self.step.value.data}")
        if self.attributes:
            printer.print_string(" attributes")
            printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != 1 or not isinstance(block.args[0].type, IndexType):
            raise VerifyException("vdir.repeat's body takes exactly one index argument")
        if self.step.value.data <= 0:
            raise VerifyException(f"vdir.repeat step must be positive, got {self.step.value.data}")
        if self.trip_count == 0:
            raise VerifyException(
                f"vdir.repeat from {self.lower.value.data} to {self.upper.value.data} runs no iterations"
            )
        for value in itertools.chain(block.args, (r for op in block.ops for r in op.results)):
            for use in value.uses:
                if not self.is_ancestor(use.operation):  # the parser refuses it; a built module may not
                    raise VerifyException(f"a value defined in a vdir.repeat body is used outside it: "
                                          f"{value_name(value)}, by {_describe(use.operation)}")
        check_acyclic(block)




@irdl_op_definition
class ProgramOp(IRDLOperation):
    """A vdir program: a symbol whose arguments are global buffers.

    ``vdir.program @mlp(%x: !vdir.buffer<1x2048xbf16>, ...) { ... }``. Buffers
    that the program stores to are its outputs, except those declared
    ``scratch`` (``%act: !vdir.buffer<1x8192xbf16> scratch``): the caller
    never reads nor binds them, a load may read only bytes the program wrote
    before it, and the compiler may keep their bytes elsewhere (the
    flag-word hand-offs write only their words). ``target`` names the
    target description (default ``h200``).
    """

    name = "vdir.program"

    sym_name = prop_def(StringAttr)
    target = opt_prop_def(StringAttr)
    arg_names = opt_prop_def(ArrayAttr[StringAttr])
    #: ``[lo0, hi0, lo1, hi1, ...]``: the half-open range of each ``index``
    #: argument (a launch-time scalar), in argument order
    scalar_ranges = opt_prop_def(DenseArrayBase[I64])
    #: the positions of the buffer arguments declared ``scratch``, ascending
    scratch_args = opt_prop_def(DenseArrayBase[I64])
    body = region_def("single_block")

    traits = traits_def(NoTerminator(), SymbolOpInterface(), IsolatedFromAbove())

    def __init__(
        self,
        name: str,
        arg_types: Sequence[Attribute],
        body: Region | None = None,
        target: str | None = None,
        arg_names: Sequence[str] | None = None,
        scalar_ranges: Sequence[tuple[int, int]] = (),
        scratch: Sequence[int] = (),
    ):
        if body is None:
            body = Region(Block(arg_types=arg_types))
        flat = [v for r in scalar_ranges for v in r]
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "target": StringAttr(target) if target else None,
                "arg_names": ArrayAttr([StringAttr(n) for n in arg_names]) if arg_names else None,
                "scalar_ranges": DenseArrayBase.from_list(i64, flat) if flat else None,
                "scratch_args": DenseArrayBase.from_list(i64, sorted(scratch)) if scratch else None,
            },
            regions=[body],
        )

    @property
    def args(self) -> tuple[SSAValue, ...]:
        return tuple(self.body.block.args)

    @property
    def buffer_args(self) -> tuple[SSAValue, ...]:
        """The global-buffer arguments (they come first)."""
        return tuple(a for a in self.args if isinstance(a.type, BufferType))

    @property
    def scalar_args(self) -> tuple[SSAValue, ...]:
        """The launch-time scalar (``index``) arguments, after the buffers."""
        return tuple(a for a in self.args if isinstance(a.type, IndexType))

    def scalar_range_list(self) -> list[tuple[int, int]]:
        """The declared half-open range of each scalar argument, in order."""
        flat = self.scalar_ranges.get_values() if self.scalar_ranges is not None else ()
        return [(flat[k], flat[k + 1]) for k in range(0, len(flat) - 1, 2)]

    def scratch_positions(self) -> frozenset[int]:
        """The positions of the buffer arguments declared ``scratch``."""
        return frozenset(self.scratch_args.get_values()) if self.scratch_args is not None else frozenset()

    def argument_names(self) -> list[str]:
        """Stable argument names (the text's names, else arg0, arg1, ...)."""
        if self.arg_names is not None:
            return [a.data for a in self.arg_names.data]
        return [a.name_hint or f"arg{i}" for i, a in enumerate(self.args)]

    @classmethod
    def parse(cls, parser: Parser) -> "ProgramOp":
        name = parser.parse_symbol_name().data
        ranges: list[tuple[int, int]] = []
        scratch: list[int] = []
        position = itertools.count()

        def parse_arg():
            arg = parser.parse_argument(expect_type=True)
            at = next(position)
            if isinstance(arg.type, BufferType) and parser.parse_optional_keyword("scratch") is not None:
                scratch.append(at)
            if isinstance(arg.type, IndexType):
                parser.parse_keyword("in", " and the range of a scalar argument ('%n: index in 0 to 64')")
                lo = parse_i64(parser, "scalar range bound")
                parser.parse_keyword("to")
                ranges.append((lo, parse_i64(parser, "scalar range bound")))
            return arg

        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_arg)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        target = None
        if attrs and "target" in attrs.data:
            t = attrs.data["target"]
            if not isinstance(t, StringAttr):
                parser.raise_error("program attribute 'target' must be a string")
            target = t.data
        body = parser.parse_region(args)
        op = cls(name, [a.type for a in args], body, target=target, arg_names=None, scalar_ranges=ranges,
                 scratch=scratch)
        names = [a.name.text[1:] for a in args]
        op.properties["arg_names"] = ArrayAttr([StringAttr(n) for n in names])
        if attrs:
            op.attributes |= {k: v for k, v in attrs.data.items() if k != "target"}
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" @{self.sym_name.data}(")
        ranges = iter(self.scalar_range_list())
        scratch = self.scratch_positions()

        def print_arg(a: SSAValue) -> None:
            printer.print_operand(a)
            printer.print_string(": ")
            printer.print_attribute(a.type)
            if isinstance(a, BlockArgument) and a.index in scratch:
                printer.print_string(" scratch")
            if isinstance(a.type, IndexType) and (r := next(ranges, None)) is not None:
                printer.print_string(f" in {r[0]} to {r[1]}")

        printer.print_list(self.args, print_arg)
        printer.print_string(")")
        extra = dict(self.attributes)
        if self.target is not None:
            extra = {"target": self.target, **extra}
        if extra:
            printer.print_string(" attributes")
            printer.print_op_attributes(extra)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    def verify_(self) -> None:
        target_of(self)
        buffers = len(self.buffer_args)
        for i, a in enumerate(self.args):
            if not isinstance(a.type, BufferType | IndexType):
                raise VerifyException(
                    f"program argument #{i} must be a !vdir.buffer or an index scalar, got {a.type}"
                )
            if isinstance(a.type, BufferType) and i > buffers - 1:
                raise VerifyException(f"program argument #{i}: buffers come before the scalar arguments")
        self._check_scalar_ranges()
        self._check_scratch_args()
        if self.arg_names is not None and len(self.arg_names.data) != len(self.args):
            raise VerifyException("arg_names must name every argument")
        self._check_argument_names()
        self._check_buffer_sizes()
        self._check_repeat_nesting()
        check_acyclic(self.body.block)
        verify_scheduled_form(self)

    def _check_buffer_sizes(self) -> None:
        """Each buffer, and all of them together, fit in the target's global memory, and
        a buffer's row fits the row stride of a load or store instruction."""
        target = target_of(self)
        limit = f"the {target.global_memory_bytes:,} bytes of global memory of {target.name}"
        total = 0
        for i, (arg, name) in enumerate(zip(self.buffer_args, self.argument_names(), strict=False)):
            buffer = cast(BufferType, arg.type)
            row_bytes = buffer.dims[1] * DTYPE_BYTES[buffer.dtype]
            if row_bytes > ROW_STRIDE.max_value:
                raise VerifyException(
                    f"program argument #{i} ('{name}') has rows of {row_bytes:,} bytes, more than the "
                    f"{ROW_STRIDE.max_value:,} of an instruction's row stride"
                )
            size = buffer.nbytes
            total += size
            if size > target.global_memory_bytes:
                raise VerifyException(f"program argument #{i} ('{name}') is a buffer of {size:,} bytes, more than {limit}")
        if total > target.global_memory_bytes:
            raise VerifyException(f"the program's buffers take {total:,} bytes together, more than {limit}")

    def _check_repeat_nesting(self) -> None:
        """No ``vdir.repeat`` nests deeper than :data:`MAX_REPEAT_NESTING` (checked level by level, without recursion)."""
        level = [self.body.block]
        for depth in range(1, MAX_REPEAT_NESTING + 2):
            repeats = [op for block in level for op in block.ops if isinstance(op, RepeatOp)]
            if repeats and depth > MAX_REPEAT_NESTING:
                raise OpVerifyException(
                    f"vdir.repeat nested {depth} deep; a program nests at most {MAX_REPEAT_NESTING} repeats", repeats[0]
                )
            level = [r.body.block for r in repeats]

    def _check_argument_names(self) -> None:
        """Each argument has its own name (inputs bind by name), one the text form can write."""
        seen: dict[str, int] = {}
        for i, name in enumerate(self.argument_names()):
            if not is_argument_name(name):
                raise VerifyException(
                    f"program argument #{i}: name {name!r} is not an identifier "
                    "(letters, digits, '_', '$', '.', '-'; not starting with a digit unless all digits)"
                )
            if name in seen:
                raise VerifyException(f"program argument #{i}: name '{name}' is already taken by argument #{seen[name]}")
            seen[name] = i

    def _check_scratch_args(self) -> None:
        """``scratch_args`` names buffer arguments, each once, in ascending order."""
        if self.scratch_args is None:
            return
        positions = list(self.scratch_args.get_values())
        if positions != sorted(set(positions)):
            raise VerifyException(f"scratch_args must list argument positions once each, ascending, got {positions}")
        for i in positions:
            if not 0 <= i < len(self.buffer_args):
                raise VerifyException(f"scratch_args names argument #{i}, which is not a buffer argument")

    def _check_scalar_ranges(self) -> None:
        ranges = self.scalar_range_list()
        flat = self.scalar_ranges.get_values() if self.scalar_ranges is not None else ()
        if len(flat) != 2 * len(self.scalar_args):
            raise VerifyException(
                f"scalar_ranges must give [lo, hi) for each of the {len(self.scalar_args)} scalar arguments"
            )
        for a, (lo, hi) in zip(self.scalar_args, ranges, strict=True):
            name = a.name_hint or "scalar"
            if not INT32_MIN <= lo < hi <= INT32_MAX + 1:
                raise VerifyException(
                    f"scalar %{name}: range {lo} to {hi} must be non-empty and within 32-bit integers"
                )

    @property
    def stage(self) -> Stage:
        """How far the program has been compiled (``vdir.stage``; ``source`` when absent)."""
        attr = self.attributes.get(STAGE_KEY)
        return attr.data if isinstance(attr, StageAttr) else Stage.SOURCE

    @property
    def layout(self) -> LayoutAttr | None:
        """The program-level facts of the scheduling passes (``vdir.layout``), if any."""
        attr = self.attributes.get(LAYOUT_KEY)
        return attr if isinstance(attr, LayoutAttr) else None




# --------------------------------------------------------------------------
# The scheduled form: stage, layout and the facts of every micro-op
# --------------------------------------------------------------------------


def _counted(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _where(op: Operation) -> str:
    loc = location_of(op)
    return f"the micro-op at {loc}" if loc else "another micro-op"


def _typed_attr(op: Operation, key: str, kind: type[Attribute], syntax: str) -> Attribute | None:
    """``op``'s attribute ``key`` if present; an error when it is not a ``kind``."""
    attr = op.attributes.get(key)
    if attr is not None and not isinstance(attr, kind):
        raise OpVerifyException(f"{key} must be a {syntax}<...> attribute, got {attr}", op)
    return attr


def _check_fact_stages(present: Sequence[str], first: dict[str, Stage], stage: Stage, op: Operation) -> None:
    """Reject facts that a later stage than ``stage`` records."""
    for key in present:
        if not stage.reached(first[key]):
            raise OpVerifyException(
                f"{key} is recorded from stage '{first[key].value}' on, but the program is at stage '{stage.value}'",
                op,
            )


def _check_micro_op_attributes(op: Operation) -> None:
    """A micro-op's only ``vdir.`` attribute is ``vdir.sched``."""
    for key in op.attributes:
        if key.startswith("vdir.") and key != SCHED_KEY:
            raise OpVerifyException(f"unknown attribute '{key}' (a micro-op's scheduling facts are in {SCHED_KEY})", op)


def _verified_layout(program: "ProgramOp", stage: Stage) -> LayoutAttr | None:
    """The program's ``vdir.layout``, checked against its stage, arguments and target."""
    layout = _typed_attr(program, LAYOUT_KEY, LayoutAttr, "#vdir.layout")
    if stage is Stage.SOURCE:
        if layout is not None:
            raise OpVerifyException(
                f"{LAYOUT_KEY} is recorded from stage 'placed' on, but the program is at stage 'source'", program
            )
        return None
    if not isinstance(layout, LayoutAttr):
        raise OpVerifyException(f"a program at stage '{stage.value}' needs {LAYOUT_KEY}", program)
    present = layout.present_facts()
    _check_fact_stages(present, LAYOUT_FACT_STAGE, stage, program)
    if stage.reached(Stage.ALLOCATED) and "smem_bytes" not in present:
        raise OpVerifyException(f"a program at stage '{stage.value}' needs smem_bytes in {LAYOUT_KEY}", program)
    target = target_of(program)
    if layout.num_sms.data > target.num_sms:
        raise OpVerifyException(
            f"num_sms = {layout.num_sms.data} exceeds the {target.num_sms} SMs of target '{target.name}'", program
        )
    from vdir.isa import tile_arena_bytes

    arena = tile_arena_bytes(target.smem_per_block)
    if isinstance(layout.smem_bytes, IntAttr) and layout.smem_bytes.data > arena:
        raise OpVerifyException(
            f"smem_bytes = {layout.smem_bytes.data} exceeds the {arena} bytes of shared memory an SM of target "
            f"'{target.name}' gives its tiles", program
        )
    if len(layout.roles) != len(program.buffer_args):
        raise OpVerifyException(
            f"buffer_roles gives {_counted(len(layout.roles), 'role')} for {_counted(len(program.buffer_args), 'buffer argument')}",
            program,
        )
    names = program.argument_names()
    for i in sorted(program.scratch_positions()):
        if layout.roles[i] != "scratch":
            raise OpVerifyException(
                f"buffer_roles gives '{layout.roles[i]}' for argument #{i} ('{names[i]}'), which is declared scratch",
                program,
            )
    return layout


class _ScheduleChecker:
    """Checks the micro-ops of a placed (or later) program one by one, then together."""

    def __init__(self, stage: Stage, layout: LayoutAttr, target: TargetDescription):
        self.stage = stage
        self.target = target
        self.num_sms = layout.num_sms.data
        self.counts = layout.counts
        self.smem_bytes = layout.smem_bytes.data if isinstance(layout.smem_bytes, IntAttr) else 0
        self.by_id: dict[int, Operation] = {}
        self.queue_slots: dict[tuple[int, str, int], Operation] = {}
        self.after: list[tuple[Operation, list[list[int]]]] = []
        self.releases = [0] * len(self.counts)

    def check(self, op: Operation) -> None:
        """Check one op of the program body."""
        stage = self.stage.value
        if isinstance(op, ReadOp | ApplyOp):  # the runtime values of offsets and conditions
            return
        if not isinstance(op, MicroOp):
            raise OpVerifyException(f"a program at stage '{stage}' holds only micro-ops, not {op.name}", op)
        _check_micro_op_attributes(op)
        if op.deps:  # type: ignore[attr-defined]
            raise OpVerifyException(
                f"at stage '{stage}' a micro-op's dependencies are the after groups of its {SCHED_KEY}, "
                "not 'after' tokens",
                op,
            )
        sched = _typed_attr(op, SCHED_KEY, ScheduleAttr, "#vdir.sched")
        if not isinstance(sched, ScheduleAttr):
            raise OpVerifyException(f"a micro-op of a program at stage '{stage}' needs {SCHED_KEY}", op)
        self._check_presence(op, sched)
        self._check_placement(op, sched)
        self._check_smem(op, sched)
        self._check_sync(op, sched)
        self._record(op, sched)

    def _check_presence(self, op: MicroOp, sched: ScheduleAttr) -> None:
        present = sched.present_facts()
        _check_fact_stages(present, SCHED_FACT_STAGE, self.stage, op)
        produces_tile = op.OP_CLASS != "store"
        if "smem" in present and not produces_tile:
            raise OpVerifyException("a store produces no tile, so it has no smem", op)
        required = ["sm"]
        if self.stage.reached(Stage.SCHEDULED):
            required.append("pos")
        if self.stage.reached(Stage.ALLOCATED) and produces_tile:
            required.append("smem")
        for key in required:
            if key not in present:
                raise OpVerifyException(f"a micro-op of a program at stage '{self.stage.value}' needs {key}", op)

    def _check_placement(self, op: MicroOp, sched: ScheduleAttr) -> None:
        sm = sched.fact("sm")
        assert sm is not None
        if sm >= self.num_sms:
            raise OpVerifyException(
                f"sm = {sm} is out of range: the program is placed on {_counted(self.num_sms, 'SM')}", op
            )
        pos = sched.fact("pos")
        if pos is None:
            return
        engine = op.engine.data.value  # type: ignore[attr-defined]
        taken = self.queue_slots.setdefault((sm, engine, pos), op)
        if taken is not op:
            raise OpVerifyException(f"pos = {pos} in the {engine} queue of SM {sm} is taken by {_where(taken)}", op)

    def _check_smem(self, op: MicroOp, sched: ScheduleAttr) -> None:
        smem = sched.fact("smem")
        if smem is None:
            return
        align = self.target.smem_alignment
        if smem % align:
            raise OpVerifyException(
                f"smem = {smem} is not a multiple of the {align}-byte alignment of target '{self.target.name}'", op
            )
        nbytes = op.results[0].type.nbytes  # type: ignore[attr-defined]
        if smem + nbytes > self.smem_bytes:
            raise OpVerifyException(
                f"the {nbytes}-byte tile at smem = {smem} ends past smem_bytes = {self.smem_bytes}", op
            )

    def _check_sync(self, op: MicroOp, sched: ScheduleAttr) -> None:
        width = self.target.dependency_bits
        for what, bits in (("wait", sched.wait_bits), ("signal", sched.signal_bits)):
            for bit in bits:
                if bit >= width:
                    raise OpVerifyException(
                        f"{what} bit {bit} is out of range: target '{self.target.name}' has "
                        f"{_counted(width, 'dependency bit')}",
                        op,
                    )
        for counter, count in sched.counter_waits:
            self._check_counter("wait", counter, op)
            if count != self.counts[counter]:
                raise OpVerifyException(
                    f"wait_counters waits for {count} releases of counter {counter}, but counter_counts "
                    f"gives it {self.counts[counter]}",
                    op,
                )
        for counter in sched.released_counters:
            self._check_counter("release", counter, op)
            self.releases[counter] += 1

    def _check_counter(self, what: str, counter: int, op: Operation) -> None:
        if counter >= len(self.counts):
            raise OpVerifyException(
                f"{what} counter {counter} is out of range: the program has "
                f"{_counted(len(self.counts), 'counter')} (counter_counts)",
                op,
            )

    def _record(self, op: MicroOp, sched: ScheduleAttr) -> None:
        uop_id = sched.uop_id.data
        taken = self.by_id.setdefault(uop_id, op)
        if taken is not op:
            raise OpVerifyException(f"id {uop_id} is already the id of {_where(taken)}", op)
        if sched.after.data:
            self.after.append((op, sched.after_groups))

    def finish(self, program: "ProgramOp") -> None:
        """The checks that need every micro-op: ``after`` ids exist, releases match the counts."""
        for op, groups in self.after:
            for group in groups:
                for uop_id in group:
                    if uop_id not in self.by_id:
                        raise OpVerifyException(f"after names micro-op id {uop_id}, which is not in the program", op)
        for counter, (released, count) in enumerate(zip(self.releases, self.counts, strict=True)):
            if released != count:
                raise OpVerifyException(
                    f"counter {counter} is released by {_counted(released, 'micro-op')}, but counter_counts "
                    f"gives it {count}",
                    program,
                )


def verify_scheduled_form(program: "ProgramOp") -> None:
    """Check the facts of the scheduling passes against the stage, the layout and the target.

    ``docs/ir.md`` lists the rules; each error names the micro-op at fault.
    """
    stage_attr = _typed_attr(program, STAGE_KEY, StageAttr, "#vdir.stage")
    stage = stage_attr.data if isinstance(stage_attr, StageAttr) else Stage.SOURCE
    layout = _verified_layout(program, stage)
    if layout is None:
        for op in program.walk():
            if isinstance(op, MicroOp):
                _check_micro_op_attributes(op)
                if SCHED_KEY in op.attributes:
                    raise OpVerifyException(
                        f"{SCHED_KEY} is recorded from stage 'placed' on, but the program is at stage 'source'", op
                    )
        return
    checker = _ScheduleChecker(stage, layout, target_of(program))
    for op in program.body.block.ops:
        checker.check(op)
    checker.finish(program)


@irdl_op_definition
class EncodedProgramOp(IRDLOperation):
    """The encoded form of a program: its per-engine instruction streams.

    Written by ``vdir-encode``. ``code`` holds the binary program of
    ``docs/isa.md`` (header, queue table, 32-word instructions), zlib-compressed
    and base64-encoded so that a 16-layer model stays a few hundred KiB of text;
    ``vdir-opt -t isa`` prints it as a readable listing. ``buffers`` lists the
    arguments as ``name:RxC:dtype:role`` (role: in, out, inout or scratch); ``names`` (compressed like ``code``)
    gives each micro-op id a readable name for diagnostics.
    """

    name = "vdir.encoded_program"

    sym_name = prop_def(SymbolNameConstraint())
    target = prop_def(StringAttr)
    buffers = prop_def(ArrayAttr[StringAttr])
    code = prop_def(StringAttr)
    names = prop_def(StringAttr)
    #: the launch-time scalars as ``name:lo:hi`` (absent: none)
    scalars = opt_prop_def(ArrayAttr[StringAttr])

    traits = traits_def(SymbolOpInterface())

    _FIELDS: ClassVar[tuple[str, ...]] = ("target", "buffers", "code", "names")
    _OPTIONAL_FIELDS: ClassVar[tuple[str, ...]] = ("scalars",)

    @classmethod
    def parse(cls, parser: Parser) -> "EncodedProgramOp":
        name = parser.parse_symbol_name()
        pos = parser.pos
        attrs = parser.parse_optional_attr_dict()
        missing = [f for f in cls._FIELDS if f not in attrs]
        extra = [k for k in attrs if k not in cls._FIELDS + cls._OPTIONAL_FIELDS]
        if missing or extra:
            parser.raise_error(
                f"vdir.encoded_program needs exactly {', '.join(cls._FIELDS)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unexpected {', '.join(extra)}" if extra else ""),
                pos,
                parser.pos,
            )
        return cls.create(properties={"sym_name": name, **attrs})

    def print(self, printer: Printer) -> None:
        # ``code`` and ``names`` are base64 text (nothing to escape) of up to
        # megabytes: write them directly rather than character by character.
        printer.print_string(f" @{self.sym_name.data} {{target = ")
        printer.print_attribute(self.target)
        printer.print_string(", buffers = ")
        printer.print_attribute(self.buffers)
        printer.print_string(f', code = "{self.code.data}", names = "{self.names.data}"')
        if self.scalars is not None:
            printer.print_string(", scalars = ")
            printer.print_attribute(self.scalars)
        printer.print_string("}")

    def verify_(self) -> None:
        for text in (self.code.data, self.names.data):
            if not _BASE64.fullmatch(text):
                raise VerifyException("code and names must be base64 text")
        from vdir.isa import (
            EncodedProgram,
            ScalarInfo,
            check_stored_buffers,
            decode_code,
            decode_text,
            names_line_limit,
        )

        buffers = self._buffer_infos()
        try:
            code = decode_code(self.code.data)
            scalars = [ScalarInfo.parse(e.data) for e in (self.scalars.data if self.scalars is not None else ())]
            program = EncodedProgram.from_bytes(code, buffers, None, self.target.data, scalars)
            decode_text(self.names.data, max_lines=names_line_limit(program))
            check_stored_buffers(program)
        except (ValueError, KeyError) as e:
            raise VerifyException(f"bad encoded program: {e}") from None

    def _buffer_infos(self) -> list:
        """The buffer entries, each checked: well formed, a name an argument could have, unique, and a
        buffer the target's global memory holds."""
        from vdir.isa import parse_buffer_entry

        seen: dict[str, int] = {}
        infos = []
        memory = _target_memory_bytes(self.target.data)
        for i, entry in enumerate(self.buffers.data):
            try:
                info = parse_buffer_entry(entry.data)
            except ValueError as e:
                raise VerifyException(str(e)) from None
            if not is_argument_name(info.name):
                raise VerifyException(f"buffer #{i}: name {info.name!r} is not an identifier")
            if info.name in seen:
                raise VerifyException(f"buffer #{i}: name '{info.name}' is already taken by buffer #{seen[info.name]}")
            seen[info.name] = i
            nbytes = info.shape[0] * info.shape[1] * DTYPE_BYTES[info.dtype]
            if memory is not None and nbytes > memory:
                raise VerifyException(f"buffer #{i} ('{info.name}') is {nbytes:,} bytes, more than the "
                                      f"{memory:,} bytes of global memory of {self.target.data}")
            infos.append(info)
        return infos


def _target_memory_bytes(name: str) -> int | None:
    """The global memory of target ``name``, or None for a target vdir does not know (checked elsewhere)."""
    try:
        return get_target(name).global_memory_bytes
    except UnknownTargetError:
        return None


VDIR = Dialect(
    "vdir",
    [ProgramOp, LoadOp, ComputeOp, StoreOp, JoinOp, RepeatOp, ReadOp, EncodedProgramOp],
    [BufferType, TileType, TokenType, EngineKindAttr, ReduceKindAttr, StageAttr, LayoutAttr, ScheduleAttr],
)
