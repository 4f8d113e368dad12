"""Build vdir programs from Python, without writing IR text.

:class:`ProgramBuilder` appends micro-ops to one ``vdir.program`` in program
order. Each call checks what it can check on the spot (shapes, element types,
offsets against the buffer, the op family's signature) and raises a
:class:`ValueError` that names the problem; :meth:`ProgramBuilder.finish` then
runs the dialect's verifiers on the whole program (engines, unused tiles,
repeat bounds, cycles) and returns a builtin ``ModuleOp``.

Result types of ``vdir.compute`` are inferred from the op-family registry
(:mod:`vdir.families`), and every value gets the SSA name hint it is given, so
the printed module reads like hand-written IR::

    b = ProgramBuilder("gemv", target="h200")
    w = b.buffer("w", (64, 64), "bf16")
    x = b.buffer("x", (1, 64), "bf16")
    y = b.buffer("y", (1, 64), "bf16")
    xt = b.load(x, (0, 0), (1, 64), name="xt")
    with b.repeat(0, 8, name="i") as i:
        r = b.affine(i, scale=8, name="r")
        wt = b.load(w, (r, 0), (8, 64), name="wt")
        yt = b.compute("gemv", [wt, xt], name="yt")
        b.store(yt, y, (0, r), name="done")
    module = b.finish()
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from numbers import Integral, Real

from xdsl.dialects.affine import ApplyOp
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from vdir.diagnostics import BuildError
from vdir.dialects.vdir import (
    DYNAMIC,
    GUARD_OPS,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    MAX_REPEAT_NESTING,
    REDUCE_DTYPES,
    BufferType,
    ComputeOp,
    EngineKind,
    JoinOp,
    LoadOp,
    ProgramOp,
    ReadOp,
    ReduceKind,
    RepeatOp,
    StoreOp,
    TileType,
    TokenType,
    _check_region,
    is_argument_name,
)
from vdir.families import DTYPES, FamilyError, TileSig, get_family
from vdir.target import UnknownTargetError, get_target

#: an offset: a constant, or an ``index`` value (an induction variable, a
#: scalar argument, a ``vdir.read`` or an ``affine.apply`` result)
Offset = int | SSAValue

#: a micro-op's runtime condition: ``(value, ">=" or "<", bound)``
Condition = tuple[SSAValue, str, int]

#: the comparisons of a condition: as written in Python (and in the IR text) -> the ``guard_op`` name
_COMPARISONS = {symbol: name for name, symbol in GUARD_OPS.items()}


def _is_identifier(name: object) -> bool:
    """Whether ``name`` is a Python identifier the IR can write as an argument name (ASCII)."""
    return isinstance(name, str) and name.isidentifier() and is_argument_name(name)


def _flow(flow: int | None, what: str) -> int | None:
    """``flow`` checked to be an integer that a flow id (an i64 property) holds."""
    if flow is None:
        return None
    if not isinstance(flow, Integral) or isinstance(flow, bool):
        raise BuildError(f"{what}: flow id must be an integer, got {flow!r}")
    if not INT64_MIN <= flow <= INT64_MAX:
        raise BuildError(f"{what}: flow id {flow} does not fit in a signed 64-bit integer")
    return int(flow)


def _reduce(reduce: str | None) -> ReduceKind | None:
    """A store's ``reduce`` argument as its kind (None: a plain store)."""
    if reduce is None:
        return None
    try:
        return ReduceKind(reduce)
    except ValueError:
        raise BuildError(
            f"store: unknown reduction {reduce!r} (expected {', '.join(repr(k.value) for k in ReduceKind)})"
        ) from None


def _shape(shape: Sequence[int], what: str) -> tuple[int, int]:
    try:
        dims = tuple(shape)
    except TypeError:
        raise BuildError(f"{what} shape must be a (rows, columns) pair, got {shape!r}") from None
    if len(dims) != 2:
        raise BuildError(
            f"{what} shape must be two-dimensional (rows, columns), got {len(dims)} dimensions"
        )
    if not all(isinstance(d, Integral) and not isinstance(d, bool) for d in dims):
        raise BuildError(f"{what} shape must hold integers, got {shape!r}")
    if any(d <= 0 for d in dims):
        raise BuildError(f"{what} dimensions must be positive, got {dims[0]}x{dims[1]}")
    return int(dims[0]), int(dims[1])


def _dtype(dtype: str, what: str) -> str:
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise BuildError(
            f"{what} element type must be one of {', '.join(sorted(DTYPES))}, got {dtype!r}"
        )
    return dtype


def _engine(engine: str | EngineKind | None, default: EngineKind) -> EngineKind:
    if engine is None:
        return default
    try:
        return EngineKind(engine)
    except ValueError:
        raise BuildError(
            f"unknown engine kind {engine!r} (expected {', '.join(k.value for k in EngineKind)})"
        ) from None


def _param_attr(key: str, value: object) -> Attribute:
    if isinstance(value, bool):
        raise BuildError(f"parameter '{key}' must be a number, got {value!r}")
    if isinstance(value, Integral):
        number = int(value)
        if not INT64_MIN <= number <= INT64_MAX:
            raise BuildError(f"parameter '{key}' = {number} does not fit in 64 bits")
        return IntegerAttr(number, i64)
    if isinstance(value, Real):
        try:
            return FloatAttr(float(value), f32)
        except OverflowError:
            raise BuildError(f"parameter '{key}' = {float(value):g} is outside the f32 range") from None
    if isinstance(value, Attribute):
        return value
    raise BuildError(f"parameter '{key}' must be a number, got {value!r}")


def _describe(op: Operation) -> str:
    names = [f"%{r.name_hint}" for r in op.results if r.name_hint]
    return f"{op.name} {names[0]}" if names else op.name


class ProgramBuilder:
    """Builds one ``vdir.program`` and returns it in a verified module.

    ``name`` is the program's symbol; ``target`` names a target description
    (see :mod:`vdir.target`), written on the program as ``target = "..."``.
    Buffers (the program's arguments) are declared with :meth:`buffer`;
    micro-ops are appended in program order by :meth:`load`,
    :meth:`compute`, :meth:`store` and :meth:`join`, inside the innermost
    open :meth:`repeat`.
    """

    def __init__(self, name: str, target: str = "h200"):
        if not name or not isinstance(name, str):
            raise BuildError(f"program name must be a non-empty string, got {name!r}")
        try:
            get_target(target)
        except UnknownTargetError as e:
            raise BuildError(str(e)) from None
        self.name = name
        self.target = target
        self._arg_names: list[str] = []
        self._scratch: list[int] = []
        self._scalar_ranges: list[tuple[int, int]] = []
        self._program = ProgramOp(name, [], target=target)
        self._blocks: list[Block] = [self._program.body.block]
        self._finished = False

    # -- program arguments --------------------------------------------------

    def buffer(self, name: str, shape: Sequence[int], dtype: str = "bf16", *, scratch: bool = False) -> SSAValue:
        """Declare a global buffer argument ``%name: !vdir.buffer<RxCxdtype>``; with ``scratch``, one the
        caller never sees (``... scratch``: not an output, read only where the program wrote it)."""
        self._check_open()
        if not _is_identifier(name):
            raise BuildError(f"buffer name must be an identifier, got {name!r}")
        if name in self._arg_names:
            raise BuildError(f"buffer '{name}' is already declared")
        if self._scalar_ranges:
            raise BuildError(f"buffer '{name}': declare the buffers before the scalars")
        rows, cols = _shape(shape, f"buffer '{name}'")
        t = BufferType((rows, cols), _dtype(dtype, f"buffer '{name}'"))
        block = self._program.body.block
        arg = block.insert_arg(t, len(block.args))
        arg.name_hint = name
        if scratch:
            self._scratch.append(len(self._arg_names))
        self._arg_names.append(name)
        return arg

    def scalar(self, name: str, lower: int, upper: int) -> SSAValue:
        """Declare a launch-time scalar ``%name: index in lower to upper`` (after the buffers).

        Its value is given at each launch (in ``[lower, upper)``); it may
        appear in offsets, conditions (``when=``) and a repeat's ``bound``.
        """
        self._check_open()
        if not _is_identifier(name):
            raise BuildError(f"scalar name must be an identifier, got {name!r}")
        if name in self._arg_names:
            raise BuildError(f"argument '{name}' is already declared")
        for what, v in (("lower", lower), ("upper", upper)):
            if not isinstance(v, Integral) or isinstance(v, bool):
                raise BuildError(f"scalar '{name}': {what} bound must be an integer, got {v!r}")
        if not INT32_MIN <= lower < upper <= INT32_MAX + 1:
            raise BuildError(f"scalar '{name}': range {lower} to {upper} must be non-empty and within 32-bit integers")
        block = self._program.body.block
        arg = block.insert_arg(IndexType(), len(block.args))
        arg.name_hint = name
        self._arg_names.append(name)
        self._scalar_ranges.append((int(lower), int(upper)))
        return arg

    def read(self, buffer: SSAValue, row: int, col: int, *, name: str | None = None) -> SSAValue:
        """``vdir.read``: the ``i32`` element ``buffer[row, col]`` as an index value.

        Each micro-op that uses it reads the element when it starts (a token
        id written by the host or by an earlier store of the launch).
        """
        btype = self._buffer_type(buffer, "read")
        if btype.dtype != "i32":
            raise BuildError(f"read: the buffer must hold i32 elements, got {btype.dtype}")
        for what, v, bound in (("row", row, btype.dims[0]), ("column", col, btype.dims[1])):
            if not isinstance(v, Integral) or isinstance(v, bool) or not 0 <= v < bound:
                raise BuildError(f"read: {what} {v!r} is outside the buffer's [0, {bound})")
        return self._append(ReadOp(buffer, int(row), int(col)), name)

    # -- micro-ops ----------------------------------------------------------

    def load(
        self,
        buffer: SSAValue,
        offsets: Sequence[Offset],
        shape: Sequence[int],
        *,
        name: str | None = None,
        engine: str | None = None,
        flow: int | None = None,
        after: Sequence[SSAValue] = (),
        when: Condition | None = None,
    ) -> SSAValue:
        """``vdir.load``: copy ``buffer[offsets]`` (a ``shape`` region) into a new tile.

        The tile has the buffer's element type. Returns the tile value.
        ``when=(value, ">=", 3)`` makes it run only if the condition holds.
        """
        btype = self._buffer_type(buffer, "load")
        rows, cols = _shape(shape, "load tile")
        tile = TileType((rows, cols), btype.element_type)
        offs = self._offsets(offsets, "load")
        self._region(btype, tile, offs, "load")
        op = LoadOp(
            buffer, offs, tile, _engine(engine, EngineKind.LOAD), _flow(flow, "load"), self._tokens(after),
            _condition(when, "load"),
        )
        return self._append(op, name)

    def compute(
        self,
        family: str,
        inputs: Sequence[SSAValue],
        *,
        params: Mapping[str, object] | None = None,
        out_dtype: str | None = None,
        name: str | None = None,
        engine: str | None = None,
        flow: int | None = None,
        after: Sequence[SSAValue] = (),
        when: Condition | None = None,
    ) -> SSAValue:
        """``vdir.compute``: run op ``family`` on tiles; returns the result tile.

        The result type is inferred from the family's signature; ``out_dtype``
        picks another output dtype the family allows (``"f32"`` for a gemv
        partial sum). ``params`` are the family's parameters (``eps``, ...).
        """
        self._check_open()
        inputs = list(inputs)
        sigs = []
        for i, v in enumerate(inputs):
            if not isinstance(v, SSAValue) or not isinstance(v.type, TileType):
                raise BuildError(f"{family}: operand #{i} must be a tile value, got {v!r}")
            sigs.append(v.type.sig)
        params = dict(params or {})
        attrs = {k: _param_attr(k, v) for k, v in params.items()}
        if not isinstance(family, str):
            raise BuildError(f"compute: the family is named by a string, got {family!r}")
        try:
            fam = get_family(family)
            plain = {
                k: (a.value.data if isinstance(a, (IntegerAttr, FloatAttr)) else a)
                for k, a in attrs.items()
            }
            out = fam.check(sigs, plain, None)
            if out_dtype is not None:
                out = fam.check(sigs, plain, TileSig(out.shape, _dtype(out_dtype, family)))
        except FamilyError as e:
            raise BuildError(str(e)) from None
        result = TileType(out.shape, out.dtype)
        op = ComputeOp(
            family,
            inputs,
            result,
            attrs,
            _engine(engine, EngineKind.COMPUTE),
            _flow(flow, family),
            self._tokens(after),
            _condition(when, family),
        )
        return self._append(op, name)

    def store(
        self,
        tile: SSAValue,
        buffer: SSAValue,
        offsets: Sequence[Offset],
        *,
        name: str | None = None,
        engine: str | None = None,
        flow: int | None = None,
        after: Sequence[SSAValue] = (),
        when: Condition | None = None,
        reduce: str | None = None,
    ) -> SSAValue:
        """``vdir.store``: copy ``tile`` to ``buffer[offsets]``; returns its token.

        ``reduce="add"`` adds the tile into the region instead (``reduce add``): f32 adds
        depend on their order across SMs; i64 (fixed-point) adds do not.
        """
        self._check_open()
        if not isinstance(tile, SSAValue) or not isinstance(tile.type, TileType):
            raise BuildError(f"store: the stored value must be a tile, got {tile!r}")
        btype = self._buffer_type(buffer, "store")
        offs = self._offsets(offsets, "store")
        self._region(btype, tile.type, offs, "store")
        kind = _reduce(reduce)
        if kind is not None and tile.type.dtype not in REDUCE_DTYPES[kind]:
            raise BuildError(f"store: reduce={reduce!r} needs an {' or '.join(REDUCE_DTYPES[kind])} tile, "
                             f"got {tile.type.dtype}")
        op = StoreOp(
            tile, buffer, offs, _engine(engine, EngineKind.STORE), _flow(flow, "store"), self._tokens(after),
            _condition(when, "store"), kind,
        )
        return self._append(op, name)

    def join(self, tokens: Sequence[SSAValue], *, name: str | None = None) -> SSAValue:
        """``vdir.join``: one token that completes when all ``tokens`` have."""
        self._check_open()
        toks = self._tokens(tokens)
        if not toks:
            raise BuildError("join needs at least one token")
        return self._append(JoinOp(toks), name)

    # -- repetition and offsets ---------------------------------------------

    @contextmanager
    def repeat(
        self, lower: int, upper: int, step: int = 1, *, name: str = "i", bound: SSAValue | None = None
    ) -> Iterator[SSAValue]:
        """``vdir.repeat %name = lower to upper step s``: a context manager.

        Yields the induction variable (an ``index`` value); micro-ops built
        inside the ``with`` block form the body. Values made inside do not
        escape it. With ``bound`` (an index value: a scalar, a read) the
        repeat runs while ``%name < bound``, and ``upper`` is its maximum.
        """
        self._check_open()
        for what, v in (("lower", lower), ("upper", upper), ("step", step)):
            if not isinstance(v, Integral) or isinstance(v, bool):
                raise BuildError(f"repeat {what} bound must be an integer, got {v!r}")
            if not INT64_MIN <= v <= INT64_MAX:
                raise BuildError(f"repeat {what} bound {v} does not fit in a signed 64-bit integer")
        if step <= 0:
            raise BuildError(f"repeat step must be positive, got {step}")
        if upper <= lower:
            raise BuildError(f"repeat from {lower} to {upper} runs no iterations")
        if bound is not None and (not isinstance(bound, SSAValue) or not isinstance(bound.type, IndexType)):
            raise BuildError(f"repeat bound must be an index value, got {bound!r}")
        if len(self._blocks) > MAX_REPEAT_NESTING:  # the program's block and one per open repeat
            raise BuildError(f"repeats nest at most {MAX_REPEAT_NESTING} deep")
        body = Block(arg_types=[IndexType()])
        body.args[0].name_hint = name
        op = RepeatOp(int(lower), int(upper), Region(body), int(step), bound)
        self._blocks[-1].add_op(op)
        self._blocks.append(body)
        try:
            yield body.args[0]
        finally:
            self._blocks.pop()

    def affine(
        self, value: SSAValue, scale: int = 1, offset: int = 0, *, name: str | None = None
    ) -> SSAValue:
        """``affine.apply affine_map<(d0) -> (d0 * scale + offset)>``: an index value."""
        return self.linear([(value, scale)], offset, name=name)

    def linear(
        self,
        terms: Sequence[tuple[SSAValue, int]],
        offset: int = 0,
        *,
        name: str | None = None,
    ) -> SSAValue:
        """``affine.apply`` of ``sum(v * scale for v, scale in terms) + offset``.

        A scale of 1 and an offset of 0 are left out of the map, so the text
        reads ``(d0 * 8192 + d1 * 16)``, ``(d0 + 1)``.
        """
        self._check_open()
        if not terms:
            raise BuildError("an affine offset needs at least one index value")
        expr: AffineExpr | None = None
        operands = []
        for i, (v, scale) in enumerate(terms):
            if not isinstance(v, SSAValue) or not isinstance(v.type, IndexType):
                raise BuildError(f"affine operand #{i} must be an index value, got {v!r}")
            if not isinstance(scale, Integral) or isinstance(scale, bool):
                raise BuildError(f"affine scale must be an integer, got {scale!r}")
            d = AffineExpr.dimension(i)
            term = d if scale == 1 else d * int(scale)
            expr = term if expr is None else expr + term
            operands.append(v)
        assert expr is not None  # terms is not empty
        if not isinstance(offset, Integral) or isinstance(offset, bool):
            raise BuildError(f"affine offset must be an integer, got {offset!r}")
        if offset:
            expr = expr + int(offset)
        amap = AffineMap(len(operands), 0, (expr,))
        return self._append(ApplyOp(operands, AffineMapAttr(amap)), name)

    # -- result -------------------------------------------------------------

    def finish(self) -> ModuleOp:
        """Verify the program and return it in a builtin module.

        Raises :class:`ValueError` with the verifier's message (prefixed by the
        op at fault, e.g. ``vdir.load %w0: ...``) if the program is invalid.
        """
        self._check_open()
        if len(self._blocks) != 1:
            raise BuildError("finish() called inside an open repeat")
        self._program.properties["arg_names"] = ArrayAttr([StringAttr(n) for n in self._arg_names])
        if self._scalar_ranges:
            flat = [v for r in self._scalar_ranges for v in r]
            self._program.properties["scalar_ranges"] = DenseArrayBase.from_list(i64, flat)
        if self._scratch:
            self._program.properties["scratch_args"] = DenseArrayBase.from_list(i64, self._scratch)
        module = ModuleOp([self._program])
        self._finished = True
        verify(module)
        return module

    # -- helpers ------------------------------------------------------------

    def _check_open(self) -> None:
        if self._finished:
            raise BuildError(f"program '{self.name}' is already finished")

    def _append(self, op: Operation, name: str | None) -> SSAValue:
        self._check_open()
        self._blocks[-1].add_op(op)
        result = op.results[0]
        if name is not None:
            result.name_hint = name
        return result

    def _buffer_type(self, buffer: SSAValue, what: str) -> BufferType:
        self._check_open()
        if not isinstance(buffer, SSAValue) or not isinstance(buffer.type, BufferType):
            raise BuildError(f"{what}: expected a buffer declared with buffer(), got {buffer!r}")
        if buffer.owner is not self._program.body.block:
            raise BuildError(f"{what}: buffer %{buffer.name_hint} belongs to another program")
        return buffer.type

    def _offsets(self, offsets: Sequence[Offset], what: str) -> list[Offset]:
        offs = list(offsets)
        if len(offs) != 2:
            raise BuildError(f"{what} needs 2 offsets (row, column), got {len(offs)}")
        for o in offs:
            if isinstance(o, SSAValue):
                if not isinstance(o.type, IndexType):
                    raise BuildError(
                        f"{what}: a dynamic offset must be an index value, got {o.type}"
                    )
            elif not isinstance(o, Integral) or isinstance(o, bool) or o < 0:
                raise BuildError(
                    f"{what}: an offset must be a non-negative integer or an index value, got {o!r}"
                )
        return [o if isinstance(o, SSAValue) else int(o) for o in offs]

    @staticmethod
    def _region(buffer: BufferType, tile: TileType, offsets: Sequence[Offset], what: str) -> None:
        static = [DYNAMIC if isinstance(o, SSAValue) else o for o in offsets]
        n_dynamic = sum(1 for o in offsets if isinstance(o, SSAValue))
        try:
            _check_region(buffer, tile, static, n_dynamic, what)
        except VerifyException as e:
            raise BuildError(str(e)) from None

    @staticmethod
    def _tokens(tokens: Sequence[SSAValue]) -> list[SSAValue]:
        toks = list(tokens)
        for t in toks:
            if not isinstance(t, SSAValue) or not isinstance(t.type, TokenType):
                raise BuildError(f"'after' takes token values (store or join results), got {t!r}")
        return toks


def _condition(when: Condition | None, what: str) -> tuple[SSAValue, str, int] | None:
    """A ``when=(value, ">=" | "<", bound)`` argument as the ops take it (``"ge"``/``"lt"``)."""
    if when is None:
        return None
    try:
        value, comparison, bound = when
    except (TypeError, ValueError):
        raise BuildError(f"{what}: when= takes (value, '>=' or '<', bound), got {when!r}") from None
    if not isinstance(value, SSAValue) or not isinstance(value.type, IndexType):
        raise BuildError(f"{what}: a condition compares an index value, got {value!r}")
    if comparison not in _COMPARISONS:
        raise BuildError(f"{what}: a condition compares with '>=' or '<', got {comparison!r}")
    if not isinstance(bound, Integral) or isinstance(bound, bool):
        raise BuildError(f"{what}: a condition's bound must be an integer, got {bound!r}")
    return value, _COMPARISONS[comparison], int(bound)


def verify(module: ModuleOp) -> None:
    """Run every verifier in ``module``; raise :class:`ValueError` at the first failure."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except (VerifyException, DiagnosticException) as e:
            msg = str(e).splitlines()[0] if str(e) else "verification failed"
            raise BuildError(f"{_describe(op)}: {msg}") from None
