"""The :class:`Family` object, the words it encodes, and the family registry.

See the package docstring (:mod:`vdir.families`) for what a family owns and
who asks it what.
"""

from __future__ import annotations

import enum
import importlib
import math
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from ml_dtypes import bfloat16

from vdir import isa
from vdir.diagnostics import VdirError

BF16 = np.dtype(bfloat16)
F32 = np.dtype(np.float32)
I32 = np.dtype(np.int32)
I64 = np.dtype(np.int64)

#: dtype names as they appear in types (``!vdir.tile<1x64xbf16>``); ``i32``
#: (token ids, positions, indices) is loaded and stored, but no built-in
#: family computes on it; ``i64`` holds fixed-point sums (``vecmat``'s
#: fixed-point result, added across SMs by reducing stores, read by ``fixed_add``)
DTYPES = {"bf16": BF16, "f32": F32, "i32": I32, "i64": I64}
#: bytes per element: the ISA's table (tile and region sizes are counted in them)
DTYPE_BYTES = isa.DTYPE_SIZES

#: the family opcode is one byte of the instruction's first word (bits 8..15);
#: opcode 0 is not a family
MAX_OPCODE = 0xFF
_U32 = 1 << 32
#: the largest finite f32: a number parameter travels in an f32 word
F32_MAX = float(np.finfo(np.float32).max)


@dataclass(frozen=True)
class TileSig:
    """Shape and dtype of a tile, as the families see it."""

    shape: tuple[int, int]
    dtype: str

    @property
    def nbytes(self) -> int:
        """Bytes of the tile (dense rows)."""
        return self.shape[0] * self.shape[1] * DTYPE_BYTES[self.dtype]

    def __str__(self) -> str:
        return f"{self.shape[0]}x{self.shape[1]}x{self.dtype}"


class FamilyError(VdirError, ValueError):
    """A family's signature rejects its operands; the message says why."""


class UnknownFamilyError(FamilyError):
    """No family of that name is registered."""


#: the fractional bits of an ``i64`` compute result: a fixed-point number, the value times 2^32 rounded
#: to an integer. Its adds are exact, so a sum of them has the same bits in any order (reducing stores
#: from many SMs); it holds magnitudes below 2^31 to 2^-32 (about 2.3e-10).
FIXED_POINT_BITS = 32
#: 2^FIXED_POINT_BITS: a value times it, rounded, is its fixed-point integer
FIXED_SCALE = float(2**FIXED_POINT_BITS)
_I64_MIN, _I64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


def round_to(a: np.ndarray, dtype: str) -> np.ndarray:
    """Round fp32 values once to ``dtype``: ``"bf16"`` or ``"f32"`` (nearest even), ``"i32"`` (toward zero),
    or ``"i64"``, fixed point (:func:`to_fixed`)."""
    if dtype == "i64":
        return to_fixed(a)
    return np.asarray(a, dtype=np.float32).astype(DTYPES[dtype])


def to_fixed(a: np.ndarray) -> np.ndarray:
    """fp32 values as :data:`FIXED_POINT_BITS` fixed point: ``value * 2^32`` rounded to the nearest integer
    (ties to even), saturated to the int64 range, NaN as 0: the GPU's ``cvt.rni.s64.f32`` of the value
    times 2^32 (an exact product in f32 below the overflow, and in float64 here)."""
    scaled = np.rint(np.asarray(a, dtype=np.float32).astype(np.float64) * FIXED_SCALE)
    out = np.zeros(scaled.shape, dtype=np.int64)
    inside = (scaled > -(2.0**63)) & (scaled < 2.0**63)  # False for NaN
    out[inside] = scaled[inside].astype(np.int64)
    out[scaled >= 2.0**63] = _I64_MAX
    out[scaled <= -(2.0**63)] = _I64_MIN
    return out


def from_fixed(a: np.ndarray) -> np.ndarray:
    """:data:`FIXED_POINT_BITS` fixed-point values as fp32: the integer rounded once to f32 (nearest even,
    the GPU's ``cvt.rn.f32.s64``), then scaled by 2^-32 (exact)."""
    return np.asarray(a, dtype=np.int64).astype(np.float32) * np.float32(1.0 / FIXED_SCALE)


# ---------------------------------------------------------------------------
# What a compute instruction carries for its family
# ---------------------------------------------------------------------------


def f32_bits(value: float) -> int:
    """The IEEE single-precision bit pattern of ``value`` (rounded to nearest)."""
    return struct.unpack("<I", struct.pack("<f", value))[0]


def f32_value(bits: int) -> float:
    """Inverse of :func:`f32_bits`."""
    return struct.unpack("<f", struct.pack("<I", bits))[0]


@dataclass(frozen=True)
class ParamWords:
    """The family words of a compute instruction: ``p0``..``p3`` (u32) and ``f0`` (f32).

    ``docs/isa.md`` names the words; what they mean is each family's choice,
    made in its :attr:`Family.encoder` and undone by its :attr:`Family.decoder`.
    The GPU body reads the same words (``ComputeCtx.p0``.. in the lowering).
    """

    p0: int = 0
    p1: int = 0
    p2: int = 0
    p3: int = 0
    f0: float = 0.0

    def __post_init__(self) -> None:
        for name in ("p0", "p1", "p2", "p3"):
            value = getattr(self, name)
            if not 0 <= value < _U32:
                raise FamilyError(f"parameter word {name} = {value} does not fit in 32 bits")

    def write(self, row: Any) -> None:
        """Store the words into an instruction's words (a list or a uint32 array)."""
        row[isa.W_P0], row[isa.W_P1], row[isa.W_P2], row[isa.W_P3] = self.p0, self.p1, self.p2, self.p3
        row[isa.W_F0] = f32_bits(self.f0)

    @classmethod
    def read(cls, row: Any) -> "ParamWords":
        """The words of an instruction (a list or a uint32 array)."""
        return cls(int(row[isa.W_P0]), int(row[isa.W_P1]), int(row[isa.W_P2]), int(row[isa.W_P3]),
                   f32_value(int(row[isa.W_F0])))


@dataclass(frozen=True)
class ComputeSignature:
    """One compute micro-op as its family sees it: input and result tiles, parameters.

    The encoder hands one to :meth:`Family.encode_params`; the simulator gets
    one back from :meth:`Family.decode_operands`.
    """

    inputs: tuple[TileSig, ...]
    result: TileSig
    params: Mapping[str, float | int] = field(default_factory=dict)


@dataclass(frozen=True)
class ParamSpec:
    """The values one family parameter takes.

    A number parameter is a finite value that f32 represents (it travels in
    the ``f0`` word); an ``integer`` one is integral (it travels in a u32
    word, the default range). ``lo``/``hi`` bound it, inclusive.
    """

    integer: bool = False
    lo: float = -F32_MAX
    hi: float = F32_MAX

    @classmethod
    def integral(cls, lo: int = 0, hi: int = _U32 - 1) -> "ParamSpec":
        """An integer parameter in ``[lo, hi]`` (default: what a u32 word holds)."""
        return cls(integer=True, lo=lo, hi=hi)

    def check(self, family: str, name: str, value: float | int) -> None:
        """Raise :class:`FamilyError`, naming the parameter, unless ``value`` fits."""
        what = f"family '{family}': parameter '{name}'"
        if not math.isfinite(value):
            raise FamilyError(f"{what} must be a finite number, got {value}")
        if self.integer and value != int(value):
            raise FamilyError(f"{what} must be an integer, got {value}")
        if not self.integer and (abs(value) > F32_MAX or (value != 0 and np.float32(value) == 0)):
            raise FamilyError(f"{what} = {value:g} is outside the f32 range")
        if not self.lo <= value <= self.hi:
            lo, hi = (int(self.lo), int(self.hi)) if self.integer else (f"{self.lo:g}", f"{self.hi:g}")
            raise FamilyError(f"{what} = {value:g} is outside its range {lo} to {hi}")


#: a parameter no spec names: a finite f32 number
_NUMBER = ParamSpec()


class Role(enum.Enum):
    """What a family costs to repeat, as placement and fusion see it."""

    #: streams a weight tile (a gemv): anchored to one SM, never recomputed
    WEIGHT_STREAMING = "weight-streaming gemv"
    #: works on activation-sized tiles: cheap enough to recompute on every
    #: SM that needs its result
    ACTIVATION = "activation"


@dataclass(frozen=True)
class Prologue:
    """This (fused) family is ``consumer`` with ``producer`` feeding its input ``operand``.

    The fused operands are the consumer's, with that input replaced by the
    producer's operands; the parameters are both ops' (``rmsnorm_gemv``:
    ``gemv(w, rmsnorm(x, g) {eps})`` -> ``rmsnorm_gemv(w, x, g) {eps}``).
    """

    producer: str
    consumer: str
    operand: int


@dataclass(frozen=True)
class Epilogue:
    """This (fused) family is ``consumer`` applied to the result of ``producer``.

    The producer's result may be any input of the consumer; the fused
    operands are the producer's followed by the consumer's other inputs.
    ``operand_param`` names the fused family's parameter that records which
    input the producer's result was; ``None`` when the consumer is
    commutative (``gemv_add``), so the position does not matter.
    """

    producer: str
    consumer: str
    operand_param: str | None = None


#: a PTX body emitter, or a lazy ``"module:function"`` reference to one
PtxBodyRef = str | Callable[[Any], None]
#: a PTX group-state emitter (:attr:`Family.ptx_state`), or a lazy ``"module:function"`` reference to one
PtxStateRef = str | Callable[[Any], Any]


@dataclass(frozen=True, repr=False)
class Family:
    """One compute op family: everything any layer needs to know about it.

    ``operands`` names the inputs in order (the last ``optional_operands`` may
    be left out); ``params`` the attribute names it takes. The callables are
    the family's definition; the methods wrap them with the checks every
    family shares:

    * ``infer(inputs, params) -> TileSig``: check operand shapes and dtypes,
      return the result (:meth:`check` adds arity, parameter names and the
      declared result);
    * ``run_f32(inputs, params) -> ndarray``: numpy semantics in fp32
      (:meth:`run` rounds once to the output dtype);
    * ``flops(inputs) -> int``: arithmetic of one execution (:meth:`cost`);
    * ``encoder(signature) -> ParamWords`` and ``decoder(words) ->
      ComputeSignature``: the family words of its instructions
      (:meth:`encode_params`, :meth:`decode_operands`);
    * ``ptx_body``: the PTX body emitter, or a ``"module:function"``
      reference to it (:meth:`ptx_emitter`);
    * ``ptx_state`` (optional): what the compute group keeps in registers
      from one of the family's micro-ops to the next, made once before the
      group's loop by this emitter (the kernel context in, the state out;
      :meth:`state_emitter`); families naming the same emitter share one
      state, and the body finds it in its context
      (``vdir.lowering.families.ComputeCtx.state``).

    ``param_specs`` says what values a parameter takes (a parameter not
    named there is a number: :class:`ParamSpec`'s default);
    ``param_defaults`` gives the value of a parameter a program may leave out
    (:meth:`param`).

    ``role`` says whether placement may recompute it per SM; ``fusion`` says
    which producer/consumer pair a fused family replaces (``vdir-fuse``
    builds one pattern per fused family).
    """

    name: str
    opcode: int
    operands: tuple[str, ...]
    params: tuple[str, ...]
    infer: Callable[[Sequence[TileSig], dict], TileSig]
    run_f32: Callable[[Sequence[np.ndarray], dict], np.ndarray]
    flops: Callable[[Sequence[TileSig]], int]
    encoder: Callable[[ComputeSignature], ParamWords]
    decoder: Callable[[ParamWords], ComputeSignature]
    role: Role
    ptx_body: PtxBodyRef | None = None
    fusion: Prologue | Epilogue | None = None
    description: str = ""
    optional_operands: int = 0
    #: output dtypes the result may be declared with; the first is the default
    out_dtypes: tuple[str, ...] = ("bf16",)
    #: parameter name -> the values it takes (default: a finite f32 number)
    param_specs: Mapping[str, ParamSpec] = field(default_factory=dict)
    #: parameter name -> its value where a program leaves it out
    param_defaults: Mapping[str, float] = field(default_factory=dict)
    #: the group-state emitter, or None: the body keeps nothing from one micro-op to the next
    ptx_state: PtxStateRef | None = None

    def __repr__(self) -> str:
        return f"Family({self.name!r}, opcode={self.opcode})"

    def check(self, inputs: Sequence[TileSig], params: dict, result: TileSig | None) -> TileSig:
        """Validate operands (and the declared result); return the result signature."""
        lo = len(self.operands) - self.optional_operands
        if not lo <= len(inputs) <= len(self.operands):
            want = str(len(self.operands)) if not self.optional_operands else f"{lo} or {len(self.operands)}"
            raise FamilyError(
                f"family '{self.name}' takes {want} operands ({', '.join(self.operands)}), got {len(inputs)}"
            )
        for p in self.params:
            if p not in params and p not in self.param_defaults:
                raise FamilyError(f"family '{self.name}' needs parameter '{p}'")
        for p in params:
            if p not in self.params:
                raise FamilyError(f"family '{self.name}' has no parameter '{p}'")
            self.param_specs.get(p, _NUMBER).check(self.name, p, params[p])
        out = self.infer(inputs, params)
        if result is not None and result.shape == out.shape and result.dtype in self.out_dtypes:
            out = result
        if result is not None and result != out:
            raise FamilyError(
                f"family '{self.name}' produces a {out} tile here, but the result is declared {result}"
            )
        return out

    def param(self, params: Mapping[str, float], name: str) -> float:
        """Parameter ``name`` of ``params``, or its default where the program leaves it out."""
        return params[name] if name in params else self.param_defaults[name]

    def run(self, inputs: Sequence[np.ndarray], params: dict, out_dtype: str) -> np.ndarray:
        """Numpy semantics: fp32 arithmetic, one rounding to the output dtype."""
        return round_to(self.run_f32(inputs, params), out_dtype)

    def cost(self, inputs: Sequence[TileSig], out: TileSig) -> tuple[int, int]:
        """(bytes read from shared memory, flops) of one execution."""
        return sum(t.nbytes for t in inputs) + out.nbytes, self.flops(inputs)

    def encode_params(self, signature: ComputeSignature) -> ParamWords:
        """The family words of an instruction running this family on ``signature``."""
        return self.encoder(signature)

    def decode_operands(self, words: ParamWords) -> ComputeSignature:
        """The operand and result tiles and parameters that ``words`` describe.

        The inverse of :meth:`encode_params`; the caller checks the result
        with :meth:`check` (words from outside may describe nonsense).
        """
        return self.decoder(words)

    def ptx_emitter(self) -> Callable[[Any], None]:
        """The PTX body emitter (imported on first use when given as ``"module:function"``)."""
        body = self.ptx_body
        if body is None:
            raise FamilyError(f"family '{self.name}' has no PTX body")
        return _resolve(body, self.name, "ptx_body")

    def state_emitter(self) -> Callable[[Any], Any] | None:
        """The PTX group-state emitter (:attr:`ptx_state`, imported on first use), or None."""
        return None if self.ptx_state is None else _resolve(self.ptx_state, self.name, "ptx_state")

    @property
    def rematerialisable(self) -> bool:
        """Whether placement may recompute the op on every SM that reads its result."""
        return self.role is not Role.WEIGHT_STREAMING


def _resolve(ref: PtxBodyRef | PtxStateRef, family: str, what: str) -> Callable[[Any], Any]:
    """A callable itself, or the function a ``"module:function"`` reference names (imported now); a
    :class:`FamilyError` naming family ``family``'s field ``what`` where the reference names none."""
    if callable(ref):
        return ref
    module, _, attr = ref.partition(":")
    try:
        found = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise FamilyError(f"family '{family}': {what} '{ref}' names no function ({e})") from None
    if not callable(found):
        raise FamilyError(f"family '{family}': {what} '{ref}' is not a function")
    return found


def _check_reference(ref: object, family: str, what: str) -> None:
    """``ref`` is None, a callable or a ``"module:function"`` string (resolved only when used)."""
    if ref is None or callable(ref):
        return
    if not isinstance(ref, str) or not all(ref.partition(":")[::2]) or ref.count(":") != 1:
        raise FamilyError(f"family '{family}': {what} must be a function or a 'module:function' string, got {ref!r}")


# ---------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------

_BY_NAME: dict[str, Family] = {}
_BY_OPCODE: dict[int, Family] = {}

#: name -> family, every registered family (a live, read-only view)
FAMILIES: Mapping[str, Family] = MappingProxyType(_BY_NAME)
#: opcode -> family (a live, read-only view)
FAMILY_BY_OPCODE: Mapping[int, Family] = MappingProxyType(_BY_OPCODE)


def get_family(name: str) -> Family:
    """The registered family ``name``; :class:`UnknownFamilyError` naming the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownFamilyError(
            f"unknown op family '{name}' (known: {', '.join(sorted(_BY_NAME))})"
        ) from None


def family_by_opcode(opcode: int) -> Family | None:
    """The registered family with that opcode, or None."""
    return _BY_OPCODE.get(opcode)


def _check_registrable(family: Family) -> None:
    if family.name in _BY_NAME:
        raise FamilyError(f"op family '{family.name}' is already registered")
    if not 0 < family.opcode <= MAX_OPCODE:
        raise FamilyError(f"family '{family.name}': opcode {family.opcode} is not in 1..{MAX_OPCODE}")
    if family.opcode in _BY_OPCODE:
        raise FamilyError(
            f"family '{family.name}': opcode {family.opcode} is taken by '{_BY_OPCODE[family.opcode].name}'"
        )
    if len(family.operands) > isa.MAX_INPUTS:
        raise FamilyError(
            f"family '{family.name}' has {len(family.operands)} operands; an instruction holds {isa.MAX_INPUTS}"
        )
    unknown = [d for d in family.out_dtypes if d not in DTYPES]
    if unknown or not family.out_dtypes:
        raise FamilyError(f"family '{family.name}': result dtypes {family.out_dtypes} must be some of {tuple(DTYPES)}")
    _check_reference(family.ptx_body, family.name, "ptx_body")
    _check_reference(family.ptx_state, family.name, "ptx_state")
    if family.fusion is not None:
        for part in (family.fusion.producer, family.fusion.consumer):
            if part not in _BY_NAME:
                raise FamilyError(f"family '{family.name}' fuses '{part}', which is not registered")


class FamilyRegistration:
    """The handle :func:`register_family` returns; a context manager that unregisters on exit."""

    def __init__(self, family: Family):
        self.family = family

    def unregister(self) -> None:
        """Remove the family again (a no-op when it is already gone).

        A family that a registered fused family is made of stays: remove the
        fused family first.
        """
        fam = self.family
        if _BY_NAME.get(fam.name) is not fam:
            return
        users = [f.name for f in _BY_NAME.values() if f.fusion and fam.name in (f.fusion.producer, f.fusion.consumer)]
        if users:
            raise FamilyError(f"family '{fam.name}' is part of fused family {', '.join(users)}; unregister those first")
        del _BY_NAME[fam.name]
        del _BY_OPCODE[fam.opcode]

    def __enter__(self) -> Family:
        return self.family

    def __exit__(self, *exc: object) -> None:
        self.unregister()


def register_family(family: Family) -> FamilyRegistration:
    """Make ``family`` known to every layer: verifier, passes, encoder, simulator, lowering.

    Its name and opcode must be new, it takes at most ``isa.MAX_INPUTS``
    operands, and a fused family's parts must be registered already.
    Returns a handle whose :meth:`~FamilyRegistration.unregister` (or the
    end of a ``with`` block) removes it again.
    """
    _check_registrable(family)
    _BY_NAME[family.name] = family
    _BY_OPCODE[family.opcode] = family
    return FamilyRegistration(family)
