"""Compute op families: signatures, numpy semantics and costs.

A family is what a ``vdir.compute`` micro-op computes. The registry here is
shared by every layer so that they cannot drift apart:

* the dialect's verifier checks operand shapes and dtypes with
  :meth:`Family.infer` and :meth:`Family.check`;
* the cost model (fusion, placement) reads :meth:`Family.cost`;
* the reference evaluator and the CPU simulator run :meth:`Family.run`;
* the encoder writes :attr:`Family.opcode` and :meth:`Family.encode_params`,
  which the GPU kernel decodes.

All tiles are two-dimensional. Inputs and outputs are bf16 unless a family
says otherwise; arithmetic is fp32 and the result is rounded to the output
dtype once, as the GPU bodies do. Fused families are defined as the exact
composition of their parts, including the bf16 rounding of the intermediate
tile, so fusion never changes a result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from ml_dtypes import bfloat16

from vdir.diagnostics import VdirError

BF16 = np.dtype(bfloat16)
F32 = np.dtype(np.float32)

#: dtype names as they appear in types (``!vdir.tile<1x64xbf16>``).
DTYPES = {"bf16": BF16, "f32": F32}
DTYPE_BYTES = {"bf16": 2, "f32": 4}


@dataclass(frozen=True)
class TileSig:
    """Shape and dtype of a tile, as the families see it."""

    shape: tuple[int, int]
    dtype: str

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * DTYPE_BYTES[self.dtype]

    def __str__(self) -> str:
        return f"{self.shape[0]}x{self.shape[1]}x{self.dtype}"


class FamilyError(VdirError, ValueError):
    """A family's signature rejects its operands; the message says why."""


def _f32(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float32)


def _round(a: np.ndarray, dtype: str) -> np.ndarray:
    return np.asarray(a, dtype=np.float32).astype(DTYPES[dtype])


def silu(a: np.ndarray) -> np.ndarray:
    """x * sigmoid(x) in fp32.

    For x below about -88, exp(-x) overflows to inf and the quotient is the
    correct limit (-0); the overflow is expected, so it is not warned about.
    """
    with np.errstate(over="ignore"):
        return a / (np.float32(1.0) + np.exp(-a))


def gemv_f32(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """w[R,K] @ x[1,K] -> [1,R] in fp32 (bf16 inputs widened exactly)."""
    return (_f32(w) @ _f32(x).reshape(-1)).reshape(1, -1)


def rmsnorm_f32(x: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    xf = _f32(x)
    inv = np.float32(1.0) / np.sqrt(np.mean(xf * xf, dtype=np.float32) + np.float32(eps))
    return xf * inv * _f32(g)


@dataclass(frozen=True)
class Family:
    """One compute op family.

    ``operands`` names the inputs in order; ``params`` the attribute names it
    takes (``eps``: float, ``operand``: which silu_mul input the gemv feeds).
    """

    name: str
    opcode: int
    operands: tuple[str, ...]
    params: tuple[str, ...]
    infer: Callable[[Sequence[TileSig], dict], TileSig]
    run_f32: Callable[[Sequence[np.ndarray], dict], np.ndarray]
    flops: Callable[[Sequence[TileSig]], int]
    description: str = ""
    optional_operands: int = 0
    #: output dtypes the result may be declared with; the first is the default
    out_dtypes: tuple[str, ...] = ("bf16",)

    def check(self, inputs: Sequence[TileSig], params: dict, result: TileSig | None) -> TileSig:
        """Validate operands (and the declared result); return the result signature."""
        lo = len(self.operands) - self.optional_operands
        if not lo <= len(inputs) <= len(self.operands):
            want = str(len(self.operands)) if not self.optional_operands else f"{lo} or {len(self.operands)}"
            raise FamilyError(
                f"family '{self.name}' takes {want} operands ({', '.join(self.operands)}), got {len(inputs)}"
            )
        for p in self.params:
            if p not in params:
                raise FamilyError(f"family '{self.name}' needs parameter '{p}'")
        for p in params:
            if p not in self.params:
                raise FamilyError(f"family '{self.name}' has no parameter '{p}'")
        out = self.infer(inputs, params)
        if result is not None and result.shape == out.shape and result.dtype in self.out_dtypes:
            out = result
        if result is not None and result != out:
            raise FamilyError(
                f"family '{self.name}' produces a {out} tile here, but the result is declared {result}"
            )
        return out

    def run(self, inputs: Sequence[np.ndarray], params: dict, out_dtype: str) -> np.ndarray:
        """Numpy semantics: fp32 arithmetic, one rounding to the output dtype."""
        return _round(self.run_f32(inputs, params), out_dtype)

    def cost(self, inputs: Sequence[TileSig], out: TileSig) -> tuple[int, int]:
        """(bytes read from shared memory, flops) of one execution."""
        return sum(t.nbytes for t in inputs) + out.nbytes, self.flops(inputs)


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise FamilyError(msg)


def _vec(t: TileSig, what: str, fam: str) -> int:
    _need(t.shape[0] == 1, f"family '{fam}': {what} must be a 1xN tile, got {t}")
    return t.shape[1]


def _bf16(ts: Sequence[TileSig], fam: str, names: Sequence[str]) -> None:
    for t, n in zip(ts, names):
        _need(t.dtype == "bf16", f"family '{fam}': {n} must be bf16, got {t}")


def _infer_gemv(ins: Sequence[TileSig], params: dict, fam: str = "gemv") -> TileSig:
    w, x = ins[0], ins[1]
    _bf16([w, x], fam, ["weights", "x"])
    k = _vec(x, "x", fam)
    _need(
        w.shape[1] == k,
        f"family '{fam}': weights {w} and x {x} disagree on K ({w.shape[1]} vs {k})",
    )
    _need(k % 8 == 0, f"family '{fam}': K = {k} must be a multiple of 8 (16-byte rows)")
    rows = w.shape[0]
    if len(ins) > 2 and fam == "gemv":
        acc = ins[2]
        _need(
            acc.shape == (1, rows) and acc.dtype == "f32",
            f"family 'gemv': the accumulator must be 1x{rows}xf32, got {acc}",
        )
    return TileSig((1, rows), "bf16")


def _run_gemv(ins, params):
    y = gemv_f32(ins[0], ins[1])
    if len(ins) > 2:
        y = y + _f32(ins[2])
    return y


def _infer_elementwise(fam: str):
    def infer(ins, params):
        a, b = ins
        _bf16([a, b], fam, ["lhs", "rhs"])
        _need(a.shape == b.shape, f"family '{fam}': operand shapes differ ({a} vs {b})")
        return TileSig(a.shape, "bf16")

    return infer


def _infer_rmsnorm(ins, params, fam="rmsnorm"):
    x, g = ins
    _bf16([x, g], fam, ["x", "weight"])
    n = _vec(x, "x", fam)
    _need(g.shape == (1, n), f"family '{fam}': weight must be 1x{n}, got {g}")
    _need(float(params.get("eps", 1e-5)) > 0, f"family '{fam}': eps must be positive")
    return TileSig((1, n), "bf16")


def _infer_rmsnorm_gemv(ins, params):
    w, x, g = ins
    _infer_rmsnorm([x, g], params, "rmsnorm_gemv")
    return _infer_gemv([w, x], {}, "rmsnorm_gemv")


def _run_rmsnorm_gemv(ins, params):
    xn = _round(rmsnorm_f32(ins[1], ins[2], params["eps"]), "bf16")
    return gemv_f32(ins[0], xn)


def _infer_gemv_epilogue(fam: str):
    def infer(ins, params):
        w, x, other = ins
        out = _infer_gemv([w, x], {}, fam)
        _bf16([other], fam, ["epilogue operand"])
        _need(
            other.shape == out.shape,
            f"family '{fam}': epilogue operand must be {out}, got {other}",
        )
        if fam == "gemv_silu_mul":
            _need(
                int(params.get("operand", 0)) in (0, 1),
                "family 'gemv_silu_mul': operand must be 0 (silu of the gemv) or 1",
            )
        return out

    return infer


def _run_gemv_silu_mul(ins, params):
    y = _f32(_round(gemv_f32(ins[0], ins[1]), "bf16"))
    other = _f32(ins[2])
    if int(params["operand"]) == 0:
        return silu(y) * other
    return silu(other) * y


def _run_gemv_add(ins, params):
    y = _f32(_round(gemv_f32(ins[0], ins[1]), "bf16"))
    return y + _f32(ins[2])


def _gemv_flops(ins):
    return 2 * ins[0].shape[0] * ins[0].shape[1]


def _elem_flops(k):
    return lambda ins: k * ins[0].shape[0] * ins[0].shape[1]


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "gemv", 1, ("weights", "x", "acc"), (),
            _infer_gemv, _run_gemv, _gemv_flops,
            "y[1,R] = w[R,K] . x[1,K] (+ acc f32); bf16 out, or f32 for a partial sum",
            optional_operands=1, out_dtypes=("bf16", "f32"),
        ),
        Family(
            "rmsnorm", 2, ("x", "weight"), ("eps",),
            _infer_rmsnorm, lambda ins, p: rmsnorm_f32(ins[0], ins[1], p["eps"]),
            _elem_flops(4), "y = x / sqrt(mean(x^2) + eps) * weight",
        ),
        Family(
            "silu_mul", 3, ("gate", "up"), (),
            _infer_elementwise("silu_mul"),
            lambda ins, p: silu(_f32(ins[0])) * _f32(ins[1]),
            _elem_flops(6), "y = silu(gate) * up",
        ),
        Family(
            "add", 4, ("lhs", "rhs"), (),
            _infer_elementwise("add"),
            lambda ins, p: _f32(ins[0]) + _f32(ins[1]),
            _elem_flops(1), "y = lhs + rhs",
        ),
        Family(
            "rmsnorm_gemv", 5, ("weights", "x", "norm_weight"), ("eps",),
            _infer_rmsnorm_gemv, _run_rmsnorm_gemv, _gemv_flops,
            "gemv with an rmsnorm prologue on x (fused by vdir-fuse)",
        ),
        Family(
            "gemv_silu_mul", 6, ("weights", "x", "other"), ("operand",),
            _infer_gemv_epilogue("gemv_silu_mul"), _run_gemv_silu_mul, _gemv_flops,
            "gemv with a silu_mul epilogue; operand says which silu_mul input the gemv is",
        ),
        Family(
            "gemv_add", 7, ("weights", "x", "residual"), (),
            _infer_gemv_epilogue("gemv_add"), _run_gemv_add, _gemv_flops,
            "gemv with a residual-add epilogue",
        ),
    )
}

FAMILY_BY_OPCODE = {f.opcode: f for f in FAMILIES.values()}


class UnknownFamilyError(FamilyError):
    """No family has the given name."""


def get_family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise UnknownFamilyError(
            f"unknown op family '{name}' (known: {', '.join(sorted(FAMILIES))})"
        ) from None
