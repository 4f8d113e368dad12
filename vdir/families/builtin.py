"""The built-in op families: gemv, vecmat, rmsnorm(_rows), silu_mul, add, fixed_add, zeros, sum_rows, rope,
argmax, slice, the fused gemv forms and the decode-attention families (defined in :mod:`vdir.families.attention`).

Each is one :class:`~vdir.families.core.Family` value below, registered when
:mod:`vdir.families` is imported. Inputs are bf16 unless said otherwise
(``add`` also takes f32 operands, ``sum_rows`` takes f32 partial sums);
arithmetic is fp32 with one rounding to the output dtype, as the GPU bodies
do. The fused families are the exact composition of their parts, including
the bf16 rounding of the intermediate tile. No built-in family computes on
i32 tiles: they are only loaded and stored (``argmax_final`` writes one). An i64
tile is fixed point (:data:`~vdir.families.core.FIXED_POINT_BITS`): ``vecmat``
writes one, reducing stores add them across SMs, ``fixed_add`` reads one.

Parameter words (``docs/isa.md``): every family but vecmat puts the shape of
its first input in ``p0``/``p1`` (gemv forms: the weight tile ``R x K``;
rmsnorm: ``1 x N``; elementwise: ``R x C``; sum_rows: ``P x C``; rope:
``H x D``), vecmat its weights' ``K x N``; ``p2`` holds gemv's flags
(``isa.GEMV_HAS_ACC``, ``isa.GEMV_OUT_F32``), vecmat's (``isa.VECMAT_HAS_ACC``, ``isa.VECMAT_OUT_FIXED``),
add's (``isa.ADD_IN_F32``, ``isa.ADD_OUT_F32``), sum_rows'
(``isa.SUM_ROWS_OUT_F32``), rope's (``isa.ROPE_TABLES_F32``),
argmax_partial's (``isa.ARGMAX_IN_F32``), ``gemv_silu_mul``'s
``operand`` or slice's ``width``; ``p3`` holds argmax_partial's ``base`` or
slice's ``start``; ``f0`` holds ``eps``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vdir import isa
from vdir.families.attention import ATTN_BLOCK, ATTN_MERGE, ATTN_SELF
from vdir.families.core import (
    ComputeSignature,
    Epilogue,
    Family,
    FamilyError,
    ParamSpec,
    ParamWords,
    Prologue,
    Role,
    TileSig,
    from_fixed,
    register_family,
    round_to,
)

#: the package of the built-in PTX bodies (referenced lazily: see vdir.families)
_PTX = "vdir.lowering.families"
#: the gemv bodies' shared group state: the row split of the last gemv the group ran
_GEMV_STATE = f"{_PTX}.gemv:split_cache"

# ---------------------------------------------------------------------------
# Numerics
# ---------------------------------------------------------------------------


def _f32(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float32)


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
    """x / sqrt(mean(x^2) + eps) * g in fp32."""
    xf = _f32(x)
    inv = np.float32(1.0) / np.sqrt(np.mean(xf * xf, dtype=np.float32) + np.float32(eps))
    return xf * inv * _f32(g)


def _run_gemv(ins, params):
    y = gemv_f32(ins[0], ins[1])
    if len(ins) > 2:
        y = y + _f32(ins[2])
    return y


def _run_rmsnorm_gemv(ins, params):
    xn = round_to(rmsnorm_f32(ins[1], ins[2], params["eps"]), "bf16")
    return gemv_f32(ins[0], xn)


def _gemv_bf16(ins) -> np.ndarray:
    """The gemv part of a fused epilogue family, rounded to bf16 as its own tile would be."""
    return _f32(round_to(gemv_f32(ins[0], ins[1]), "bf16"))


def _run_gemv_silu_mul(ins, params):
    y = _gemv_bf16(ins)
    other = _f32(ins[2])
    if int(params["operand"]) == 0:
        return silu(y) * other
    return silu(other) * y


def _run_gemv_add(ins, params):
    return _gemv_bf16(ins) + _f32(ins[2])


def vecmat_f32(x: np.ndarray, w: np.ndarray, acc: np.ndarray | None = None) -> np.ndarray:
    """``x[1,K] . w[K,N]`` -> ``[1,N]`` in fp32, each column's products added in row order 0..K-1 to
    ``acc`` (or to +0.0).

    The GPU body adds each product with one ``fma``; the product of two bf16
    values is exact in f32 (8-bit significands), so ``total + x * w`` in f32
    rounds as the ``fma`` does (away from f32's underflow and overflow): the
    result is the same bits on every backend and does not depend on how the
    compute group splits the columns.
    """
    xs, ws = _f32(x).reshape(-1), _f32(w)
    total = np.zeros((1, ws.shape[1]), dtype=np.float32) if acc is None else _f32(acc).copy()
    for k in range(ws.shape[0]):
        total += xs[k] * ws[k]
    return total


def sum_rows_f32(partials: np.ndarray) -> np.ndarray:
    """The column sums of a ``P x C`` tile, ``[1, C]``, added row after row in fp32.

    The order is fixed (row 0, 1, ..., P-1, starting from +0.0), as the GPU
    body adds them, so the result does not depend on where or when the rows
    were computed; numpy's ``sum`` would add pairwise instead.
    """
    rows = _f32(partials)
    total = np.zeros((1, rows.shape[1]), dtype=np.float32)
    for row in rows:
        total += row
    return total


def rotate_half(x: np.ndarray) -> np.ndarray:
    """``[-x2, x1]`` for ``x = [x1, x2]`` split in halves along the last axis (the Llama/HF convention)."""
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rope_f32(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotary position embedding of the rows of ``x`` (``H x D``, one head per row) in fp32.

    ``x * cos + rotate_half(x) * sin``, each product rounded to f32 and then
    their sum, as the GPU body computes it; ``cos`` and ``sin`` are the
    ``1 x D`` rows of the position's tables (both halves equal, as
    :func:`vdir.frontend.rope.rope_tables` makes them).
    """
    xf = _f32(x)
    return xf * _f32(cos) + rotate_half(xf) * _f32(sin)


#: indices of the argmax families travel as f32 (argmax_partial's result
#: row): every integer up to 2^24 is exact there
ARGMAX_INDEX_LIMIT = 1 << 24


def argmax_partial_f32(x: np.ndarray, base: int) -> np.ndarray:
    """``[[best, base + i, 0, 0]]`` (f32) for the best element ``best = x[0, i]`` of a ``1 x N`` row.

    The best is the largest value, a NaN counting as larger than every
    number, and of equal values (``-0.0 == +0.0``, or any two NaNs) the one
    with the lowest index: ``i`` is ``numpy.argmax``'s answer (the first
    NaN, else the first maximum). ``best`` is that element widened to f32.
    """
    row = _f32(x).reshape(-1)
    i = int(np.argmax(row))
    out = np.zeros((1, 4), dtype=np.float32)
    out[0, 0], out[0, 1] = row[i], base + i
    return out


def argmax_index_column(partials: np.ndarray) -> np.ndarray:
    """The indices in column 1 of ``S x 4`` argmax_partial rows, as integers.

    Truncated toward zero and clamped to ``0..2^24`` (a NaN counts as 0), as
    the GPU body's saturating conversion reads them; indices that
    argmax_partial wrote are integers in range and come back unchanged.
    """
    column = np.nan_to_num(_f32(partials)[:, 1], nan=0.0)
    return np.trunc(np.clip(column, 0, ARGMAX_INDEX_LIMIT)).astype(np.int64)


def argmax_final_f32(partials: np.ndarray, stride: int = 0) -> np.ndarray:
    """``[[index, 0, 0, 0]]`` of the best of ``S x 4`` argmax_partial rows ``[value, index, 0, 0]``.

    Row ``r``'s index is its column 1 plus ``r * stride``: with ``stride``
    the slice width, slices computed in a loop (each argmax_partial with
    ``base`` 0) give their indices in the whole row. The best row has the
    largest value (a NaN larger than every number) and, among rows of equal
    value, the lowest index (compared as indices, not by row order), so the
    answer does not depend on the order of the rows: it is ``numpy.argmax``
    of the whole row the partials were taken from.
    """
    values = _f32(partials)[:, 0]
    indices = argmax_index_column(partials) + np.arange(len(values), dtype=np.int64) * int(stride)
    nan = np.isnan(values)
    best = nan if nan.any() else values == values.max()
    out = np.zeros((1, 4), dtype=np.float32)
    out[0, 0] = indices[best].min()
    return out


def _gemv_flops(ins):
    return 2 * ins[0].shape[0] * ins[0].shape[1]


def _elem_flops(k):
    return lambda ins: k * ins[0].shape[0] * ins[0].shape[1]


# ---------------------------------------------------------------------------
# Signatures
# ---------------------------------------------------------------------------


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise FamilyError(msg)


def _vec(t: TileSig, what: str, fam: str) -> int:
    _need(t.shape[0] == 1, f"family '{fam}': {what} must be a 1xN tile, got {t}")
    return t.shape[1]


def _bf16(ts: Sequence[TileSig], fam: str, names: Sequence[str]) -> None:
    for t, n in zip(ts, names, strict=True):
        _need(t.dtype == "bf16", f"family '{fam}': {n} must be bf16, got {t}")


def _bf16_or_f32(ts: Sequence[TileSig], fam: str, names: Sequence[str]) -> None:
    for t, n in zip(ts, names, strict=True):
        _need(t.dtype in ("bf16", "f32"), f"family '{fam}': {n} must be bf16 or f32, got {t}")


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
    if len(ins) > 2:  # gemv's accumulator (the fused forms pass only w and x)
        acc = ins[2]
        _need(
            acc.shape == (1, rows) and acc.dtype == "f32",
            f"family 'gemv': the accumulator must be 1x{rows}xf32, got {acc}",
        )
    return TileSig((1, rows), "bf16")


def _infer_vecmat(ins: Sequence[TileSig], params: dict) -> TileSig:
    """x ``1 x K`` bf16, weights ``K x N`` bf16 (N whole 16-byte rows), and optionally acc ``1 x N`` f32
    -> ``1 x N`` f32."""
    x, w = ins[0], ins[1]
    _bf16([x, w], "vecmat", ["x", "weights"])
    k = _vec(x, "x", "vecmat")
    _need(w.shape[0] == k, f"family 'vecmat': x {x} and weights {w} disagree on K ({k} vs {w.shape[0]})")
    n = w.shape[1]
    _need(n % 8 == 0, f"family 'vecmat': N = {n} must be a multiple of 8 (16-byte rows)")
    if len(ins) > 2:
        _need(ins[2].shape == (1, n) and ins[2].dtype == "f32",
              f"family 'vecmat': the accumulator must be 1x{n}xf32, got {ins[2]}")
    return TileSig((1, n), "f32")


def _infer_elementwise(fam: str):
    def infer(ins, params):
        a, b = ins
        _bf16([a, b], fam, ["lhs", "rhs"])
        _need(a.shape == b.shape, f"family '{fam}': operand shapes differ ({a} vs {b})")
        return TileSig(a.shape, "bf16")

    return infer


def _infer_add(ins, params):
    """Both operands bf16 or both f32; the result defaults to their dtype."""
    a, b = ins
    _bf16_or_f32([a, b], "add", ["lhs", "rhs"])
    _need(a.dtype == b.dtype, f"family 'add': operand dtypes differ ({a} vs {b})")
    _need(a.shape == b.shape, f"family 'add': operand shapes differ ({a} vs {b})")
    return TileSig(a.shape, a.dtype)


def _infer_sum_rows(ins, params):
    """A ``P x C`` f32 tile of partial sums -> its ``1 x C`` column sums (f32 by default)."""
    (partials,) = ins
    _need(partials.dtype == "f32", f"family 'sum_rows': partials must be f32, got {partials}")
    return TileSig((1, partials.shape[1]), "f32")


def _infer_rope(ins, params):
    """``x`` ``H x D`` bf16 (D even), ``cos`` and ``sin`` ``1 x D`` of one dtype (bf16 or f32) -> ``H x D`` bf16."""
    x, cos, sin = ins
    _bf16([x], "rope", ["x"])
    d = x.shape[1]
    _need(d % 2 == 0, f"family 'rope': the head dimension {d} must be even (rotate-half pairs its halves)")
    for t, name in ((cos, "cos"), (sin, "sin")):
        _need(t.shape == (1, d), f"family 'rope': {name} must be 1x{d}, got {t}")
    _bf16_or_f32([cos, sin], "rope", ["cos", "sin"])
    _need(cos.dtype == sin.dtype, f"family 'rope': cos and sin dtypes differ ({cos} vs {sin})")
    return TileSig(x.shape, "bf16")


def _infer_rmsnorm(ins, params, fam="rmsnorm"):
    x, g = ins
    _bf16([x, g], fam, ["x", "weight"])
    n = _vec(x, "x", fam)
    _need(g.shape == (1, n), f"family '{fam}': weight must be 1x{n}, got {g}")
    _need(float(params.get("eps", 1e-5)) > 0, f"family '{fam}': eps must be positive")
    return TileSig((1, n), "bf16")


def _infer_rmsnorm_rows(ins, params):
    """x ``R x N`` bf16 (one head per row), weight ``1 x N`` bf16, ``eps`` > 0 -> ``R x N`` bf16."""
    x, g = ins
    _bf16([x, g], "rmsnorm_rows", ["x", "weight"])
    n = x.shape[1]
    _need(g.shape == (1, n), f"family 'rmsnorm_rows': weight must be 1x{n}, got {g}")
    _need(float(params.get("eps", 1e-5)) > 0, "family 'rmsnorm_rows': eps must be positive")
    return TileSig(x.shape, "bf16")


def _run_rmsnorm_rows(ins, params):
    x, g = ins
    return np.concatenate([rmsnorm_f32(row.reshape(1, -1), g, params["eps"]) for row in x], axis=0)


def _infer_rmsnorm_rope(ins, params):
    """``rope(rmsnorm_rows(x, weight) {eps}, cos, sin)``: x ``H x D`` bf16, weight ``1 x D`` bf16, cos and sin
    ``1 x D`` of one dtype -> ``H x D`` bf16 (each part checks its own operands)."""
    x, g, cos, sin = ins
    return _infer_rope([_infer_rmsnorm_rows([x, g], params), cos, sin], params)


def _run_rmsnorm_rope(ins, params):
    """The exact composition: the normed heads rounded to bf16, as their own tile would be, then rotated."""
    x, g, cos, sin = ins
    return rope_f32(round_to(_run_rmsnorm_rows([x, g], params), "bf16"), cos, sin)


def _infer_slice(ins, params):
    """Columns ``start .. start + width - 1`` of a bf16 tile, every row: an exact copy."""
    (x,) = ins
    _bf16([x], "slice", ["x"])
    start, width = int(params["start"]), int(params["width"])
    _need(width >= 1 and start + width <= x.shape[1],
          f"family 'slice': columns {start} to {start + width - 1} are not within the {x.shape[1]} columns of {x}")
    return TileSig((x.shape[0], width), "bf16")


def _run_slice(ins, params):
    start = int(params["start"])
    return ins[0][:, start : start + int(params["width"])]


def _infer_argmax_partial(ins, params):
    """x ``1 x N`` bf16 or f32, ``base + N <= 2^24`` -> ``1 x 4`` f32 ``[best, base + index, 0, 0]``."""
    (x,) = ins
    n = _vec(x, "x", "argmax_partial")
    _bf16_or_f32([x], "argmax_partial", ["x"])
    base = int(params.get("base", 0))
    _need(
        base + n <= ARGMAX_INDEX_LIMIT,
        f"family 'argmax_partial': base + N = {base} + {n} exceeds 2^24 = {ARGMAX_INDEX_LIMIT} "
        "(the index travels as an f32, exact only up to 2^24)",
    )
    return TileSig((1, 4), "f32")


def _infer_argmax_final(ins, params):
    """partials ``S x 4`` f32 (argmax_partial rows) -> ``1 x 4`` i32 ``[index, 0, 0, 0]``."""
    (partials,) = ins
    _need(partials.dtype == "f32", f"family 'argmax_final': partials must be f32, got {partials}")
    _need(
        partials.shape[1] == 4,
        f"family 'argmax_final': partials must be Sx4 (one argmax_partial result per row), got {partials}",
    )
    last = (partials.shape[0] - 1) * int(params.get("stride", 0))
    _need(last < ARGMAX_INDEX_LIMIT,
          f"family 'argmax_final': the last row's offset (S - 1) * stride = {last} reaches 2^24 = {ARGMAX_INDEX_LIMIT}")
    return TileSig((1, 4), "i32")


def _infer_rmsnorm_gemv(ins, params):
    w, x, g = ins
    _infer_rmsnorm([x, g], params, "rmsnorm_gemv")
    return _infer_gemv([w, x], {}, "rmsnorm_gemv")


def _infer_gemv_epilogue(fam: str, operand_param: str | None = None):
    def infer(ins, params):
        w, x, other = ins
        out = _infer_gemv([w, x], {}, fam)
        _bf16([other], fam, ["epilogue operand"])
        _need(
            other.shape == out.shape,
            f"family '{fam}': epilogue operand must be {out}, got {other}",
        )
        if operand_param is not None:
            _need(
                int(params.get(operand_param, 0)) in (0, 1),
                f"family '{fam}': {operand_param} must be 0 (silu of the gemv) or 1",
            )
        return out

    return infer


# ---------------------------------------------------------------------------
# Parameter words
# ---------------------------------------------------------------------------


def _tile(rows: int, cols: int, dtype: str = "bf16") -> TileSig:
    return TileSig((rows, cols), dtype)


def _encode_shape(sig: ComputeSignature, p2: int = 0) -> ParamWords:
    """``p0``/``p1``: the first input's shape; ``f0``: ``eps`` when the family has one."""
    rows, cols = sig.inputs[0].shape
    return ParamWords(rows, cols, p2, f0=float(sig.params.get("eps", 0.0)))


def _encode_gemv(sig: ComputeSignature) -> ParamWords:
    flags = (isa.GEMV_HAS_ACC if len(sig.inputs) > 2 else 0) | (isa.GEMV_OUT_F32 if sig.result.dtype == "f32" else 0)
    return _encode_shape(sig, flags)


def _decode_gemv(w: ParamWords) -> ComputeSignature:
    R, K = w.p0, w.p1
    inputs = [_tile(R, K), _tile(1, K)]
    if w.p2 & isa.GEMV_HAS_ACC:
        inputs.append(_tile(1, R, "f32"))
    out = _tile(1, R, "f32" if w.p2 & isa.GEMV_OUT_F32 else "bf16")
    return ComputeSignature(tuple(inputs), out)


def _encode_vecmat(sig: ComputeSignature) -> ParamWords:
    """``p0``/``p1``: the weights' ``K x N``; ``p2``: ``isa.VECMAT_HAS_ACC`` with an accumulator,
    ``isa.VECMAT_OUT_FIXED`` for an i64 (fixed-point) result."""
    k, n = sig.inputs[1].shape
    flags = (isa.VECMAT_HAS_ACC if len(sig.inputs) > 2 else 0) | (
        isa.VECMAT_OUT_FIXED if sig.result.dtype == "i64" else 0)
    return ParamWords(k, n, flags)


def _decode_vecmat(w: ParamWords) -> ComputeSignature:
    K, N = w.p0, w.p1
    inputs = [_tile(1, K), _tile(K, N)]
    if w.p2 & isa.VECMAT_HAS_ACC:
        inputs.append(_tile(1, N, "f32"))
    return ComputeSignature(tuple(inputs), _tile(1, N, "i64" if w.p2 & isa.VECMAT_OUT_FIXED else "f32"))


#: the result dtypes of ``zeros``, by their code in its p2
ZEROS_DTYPES = ("bf16", "f32", "i32", "i64")


def _infer_zeros(ins: Sequence[TileSig], params: dict) -> TileSig:
    """No operands; ``rows x cols`` of the declared dtype (bf16 unless declared)."""
    return TileSig((int(params["rows"]), int(params["cols"])), "bf16")


def _encode_zeros(sig: ComputeSignature) -> ParamWords:
    """``p0``/``p1``: the result's ``R x C``; ``p2``: its dtype's index in :data:`ZEROS_DTYPES`."""
    rows, cols = sig.result.shape
    return ParamWords(rows, cols, ZEROS_DTYPES.index(sig.result.dtype))


def _decode_zeros(w: ParamWords) -> ComputeSignature:
    if w.p2 >= len(ZEROS_DTYPES):
        raise FamilyError(f"family 'zeros': dtype code {w.p2} is not one of 0..{len(ZEROS_DTYPES) - 1}")
    return ComputeSignature((), _tile(w.p0, w.p1, ZEROS_DTYPES[w.p2]), {"rows": w.p0, "cols": w.p1})


def _infer_fixed_add(ins: Sequence[TileSig], params: dict) -> TileSig:
    """sum ``R x C`` i64 (fixed point), residual ``R x C`` bf16 -> ``R x C`` bf16."""
    total, residual = ins
    _need(total.dtype == "i64", f"family 'fixed_add': sum must be i64 (fixed point), got {total}")
    _bf16([residual], "fixed_add", ["residual"])
    _need(total.shape == residual.shape, f"family 'fixed_add': operand shapes differ ({total} vs {residual})")
    return TileSig(total.shape, "bf16")


def _decode_fixed_add(w: ParamWords) -> ComputeSignature:
    return ComputeSignature((_tile(w.p0, w.p1, "i64"), _tile(w.p0, w.p1)), _tile(w.p0, w.p1))


def _decode_rmsnorm(w: ParamWords) -> ComputeSignature:
    n = w.p1
    return ComputeSignature((_tile(1, n), _tile(1, n)), _tile(1, n), {"eps": w.f0})


def _decode_rmsnorm_rows(w: ParamWords) -> ComputeSignature:
    return ComputeSignature((_tile(w.p0, w.p1), _tile(1, w.p1)), _tile(w.p0, w.p1), {"eps": w.f0})


def _decode_elementwise(w: ParamWords) -> ComputeSignature:
    t = _tile(w.p0, w.p1)
    return ComputeSignature((t, t), t)


def _decode_rmsnorm_gemv(w: ParamWords) -> ComputeSignature:
    R, K = w.p0, w.p1
    return ComputeSignature((_tile(R, K), _tile(1, K), _tile(1, K)), _tile(1, R), {"eps": w.f0})


def _encode_add(sig: ComputeSignature) -> ParamWords:
    flags = (isa.ADD_IN_F32 if sig.inputs[0].dtype == "f32" else 0) | (
        isa.ADD_OUT_F32 if sig.result.dtype == "f32" else 0)
    return _encode_shape(sig, flags)


def _decode_add(w: ParamWords) -> ComputeSignature:
    t = _tile(w.p0, w.p1, "f32" if w.p2 & isa.ADD_IN_F32 else "bf16")
    return ComputeSignature((t, t), _tile(w.p0, w.p1, "f32" if w.p2 & isa.ADD_OUT_F32 else "bf16"))


def _encode_sum_rows(sig: ComputeSignature) -> ParamWords:
    return _encode_shape(sig, isa.SUM_ROWS_OUT_F32 if sig.result.dtype == "f32" else 0)


def _decode_sum_rows(w: ParamWords) -> ComputeSignature:
    out = _tile(1, w.p1, "f32" if w.p2 & isa.SUM_ROWS_OUT_F32 else "bf16")
    return ComputeSignature((_tile(w.p0, w.p1, "f32"),), out)


def _encode_rope(sig: ComputeSignature) -> ParamWords:
    return _encode_shape(sig, isa.ROPE_TABLES_F32 if sig.inputs[1].dtype == "f32" else 0)


def _decode_rope(w: ParamWords) -> ComputeSignature:
    table = _tile(1, w.p1, "f32" if w.p2 & isa.ROPE_TABLES_F32 else "bf16")
    return ComputeSignature((_tile(w.p0, w.p1), table, table), _tile(w.p0, w.p1))


def _encode_rmsnorm_rope(sig: ComputeSignature) -> ParamWords:
    """``p0``/``p1``: the heads' ``H x D``; ``p2``: rope's table flag; ``f0``: ``eps``."""
    return _encode_shape(sig, isa.ROPE_TABLES_F32 if sig.inputs[2].dtype == "f32" else 0)


def _decode_rmsnorm_rope(w: ParamWords) -> ComputeSignature:
    table = _tile(1, w.p1, "f32" if w.p2 & isa.ROPE_TABLES_F32 else "bf16")
    heads = _tile(w.p0, w.p1)
    return ComputeSignature((heads, _tile(1, w.p1), table, table), heads, {"eps": w.f0})


def _encode_slice(sig: ComputeSignature) -> ParamWords:
    """``p0``/``p1``: the input's ``R x K``; ``p2``: ``width``; ``p3``: ``start``."""
    rows, cols = sig.inputs[0].shape
    return ParamWords(rows, cols, int(sig.params["width"]), int(sig.params["start"]))


def _decode_slice(w: ParamWords) -> ComputeSignature:
    return ComputeSignature((_tile(w.p0, w.p1),), _tile(w.p0, w.p2), {"start": w.p3, "width": w.p2})


def _encode_argmax_partial(sig: ComputeSignature) -> ParamWords:
    """``p0``/``p1``: ``1 x N``; ``p2``: ``isa.ARGMAX_IN_F32`` for an f32 row; ``p3``: ``base``."""
    (x,) = sig.inputs
    flags = isa.ARGMAX_IN_F32 if x.dtype == "f32" else 0
    return ParamWords(x.shape[0], x.shape[1], flags, int(sig.params["base"]))


def _decode_argmax_partial(w: ParamWords) -> ComputeSignature:
    x = _tile(w.p0, w.p1, "f32" if w.p2 & isa.ARGMAX_IN_F32 else "bf16")
    return ComputeSignature((x,), _tile(1, 4, "f32"), {"base": w.p3})


def _encode_argmax_final(sig: ComputeSignature) -> ParamWords:
    """``p0``/``p1``: ``S x 4``; ``p3``: ``stride``."""
    (partials,) = sig.inputs
    return ParamWords(partials.shape[0], partials.shape[1], 0, int(sig.params["stride"]))


def _decode_argmax_final(w: ParamWords) -> ComputeSignature:
    return ComputeSignature((_tile(w.p0, w.p1, "f32"),), _tile(1, 4, "i32"), {"stride": w.p3})


def _encode_gemv_silu_mul(sig: ComputeSignature) -> ParamWords:
    return _encode_shape(sig, int(sig.params["operand"]))


def _decode_gemv_epilogue(operand_param: str | None):
    def decode(w: ParamWords) -> ComputeSignature:
        R, K = w.p0, w.p1
        params = {operand_param: w.p2} if operand_param else {}
        return ComputeSignature((_tile(R, K), _tile(1, K), _tile(1, R)), _tile(1, R), params)

    return decode


# ---------------------------------------------------------------------------
# The families
# ---------------------------------------------------------------------------

GEMV = Family(
    "gemv", 1, ("weights", "x", "acc"), (),
    _infer_gemv, _run_gemv, _gemv_flops, _encode_gemv, _decode_gemv,
    Role.WEIGHT_STREAMING, f"{_PTX}.gemv:gemv",
    description="y[1,R] = w[R,K] . x[1,K] (+ acc f32); bf16 out, or f32 for a partial sum",
    optional_operands=1, out_dtypes=("bf16", "f32"), ptx_state=_GEMV_STATE,
)
RMSNORM = Family(
    "rmsnorm", 2, ("x", "weight"), ("eps",),
    _infer_rmsnorm, lambda ins, p: rmsnorm_f32(ins[0], ins[1], p["eps"]), _elem_flops(4),
    _encode_shape, _decode_rmsnorm,
    Role.ACTIVATION, f"{_PTX}.elementwise:rmsnorm",
    description="y = x / sqrt(mean(x^2) + eps) * weight",
)
SILU_MUL = Family(
    "silu_mul", 3, ("gate", "up"), (),
    _infer_elementwise("silu_mul"), lambda ins, p: silu(_f32(ins[0])) * _f32(ins[1]), _elem_flops(6),
    _encode_shape, _decode_elementwise,
    Role.ACTIVATION, f"{_PTX}.elementwise:silu_mul",
    description="y = silu(gate) * up",
)
ADD = Family(
    "add", 4, ("lhs", "rhs"), (),
    _infer_add, lambda ins, p: _f32(ins[0]) + _f32(ins[1]), _elem_flops(1),
    _encode_add, _decode_add,
    Role.ACTIVATION, f"{_PTX}.elementwise:add",
    description="y = lhs + rhs; operands both bf16 or both f32, result bf16 or f32",
    out_dtypes=("bf16", "f32"),
)
RMSNORM_GEMV = Family(
    "rmsnorm_gemv", 5, ("weights", "x", "norm_weight"), ("eps",),
    _infer_rmsnorm_gemv, _run_rmsnorm_gemv, _gemv_flops, _encode_shape, _decode_rmsnorm_gemv,
    Role.WEIGHT_STREAMING, f"{_PTX}.gemv:rmsnorm_gemv",
    fusion=Prologue(producer="rmsnorm", consumer="gemv", operand=1),
    description="gemv with an rmsnorm prologue on x (fused by vdir-fuse)", ptx_state=_GEMV_STATE,
)
GEMV_SILU_MUL = Family(
    "gemv_silu_mul", 6, ("weights", "x", "other"), ("operand",),
    _infer_gemv_epilogue("gemv_silu_mul", "operand"), _run_gemv_silu_mul, _gemv_flops,
    _encode_gemv_silu_mul, _decode_gemv_epilogue("operand"),
    Role.WEIGHT_STREAMING, f"{_PTX}.gemv:gemv_silu_mul",
    fusion=Epilogue(producer="gemv", consumer="silu_mul", operand_param="operand"),
    description="gemv with a silu_mul epilogue; operand says which silu_mul input the gemv is",
    param_specs={"operand": ParamSpec.integral()}, ptx_state=_GEMV_STATE,
)
GEMV_ADD = Family(
    "gemv_add", 7, ("weights", "x", "residual"), (),
    _infer_gemv_epilogue("gemv_add"), _run_gemv_add, _gemv_flops, _encode_shape, _decode_gemv_epilogue(None),
    Role.WEIGHT_STREAMING, f"{_PTX}.gemv:gemv_add",
    fusion=Epilogue(producer="gemv", consumer="add"),
    description="gemv with a residual-add epilogue", ptx_state=_GEMV_STATE,
)

SUM_ROWS = Family(
    "sum_rows", 8, ("partials",), (),
    _infer_sum_rows, lambda ins, p: sum_rows_f32(ins[0]), _elem_flops(1),
    _encode_sum_rows, _decode_sum_rows,
    Role.ACTIVATION, f"{_PTX}.reduce:sum_rows",
    description="y[1,C] = partials[0,:] + partials[1,:] + ... + partials[P-1,:] in this order (f32 in)",
    out_dtypes=("f32", "bf16"),
)

ROPE = Family(
    "rope", 9, ("x", "cos", "sin"), (),
    _infer_rope, lambda ins, p: rope_f32(ins[0], ins[1], ins[2]), _elem_flops(3),
    _encode_rope, _decode_rope,
    Role.ACTIVATION, f"{_PTX}.rope:rope",
    description="y[h,:] = x[h,:] * cos + rotate_half(x[h,:]) * sin, one head per row (cos, sin: the position's table rows)",
)

RMSNORM_ROWS = Family(
    "rmsnorm_rows", 10, ("x", "weight"), ("eps",),
    _infer_rmsnorm_rows, _run_rmsnorm_rows, _elem_flops(4),
    _encode_shape, _decode_rmsnorm_rows,
    Role.ACTIVATION, f"{_PTX}.elementwise:rmsnorm_rows",
    description="each row (head) of x normalised on its own, times weight (Qwen3's QK-norm)",
)

ARGMAX_PARTIAL = Family(
    "argmax_partial", 13, ("x",), ("base",),
    _infer_argmax_partial, lambda ins, p: argmax_partial_f32(ins[0], int(p["base"])), _elem_flops(1),
    _encode_argmax_partial, _decode_argmax_partial,
    Role.ACTIVATION, f"{_PTX}.argmax:argmax_partial",
    description="[best, base + index, 0, 0] of a 1xN slice of a row (first NaN, else first maximum)",
    out_dtypes=("f32",),
    param_specs={"base": ParamSpec.integral(0, ARGMAX_INDEX_LIMIT)},
)

ARGMAX_FINAL = Family(
    "argmax_final", 14, ("partials",), ("stride",),
    _infer_argmax_final, lambda ins, p: argmax_final_f32(ins[0], int(p["stride"])), _elem_flops(1),
    _encode_argmax_final, _decode_argmax_final,
    Role.ACTIVATION, f"{_PTX}.argmax:argmax_final",
    description="[index, 0, 0, 0] (i32) of the best of Sx4 argmax_partial rows, row r's index plus "
                "r * stride (ties: the lowest index)",
    out_dtypes=("i32",),
    param_specs={"stride": ParamSpec.integral(0, ARGMAX_INDEX_LIMIT)},
)

SLICE = Family(
    "slice", 15, ("x",), ("start", "width"),
    _infer_slice, _run_slice, _elem_flops(1),
    _encode_slice, _decode_slice,
    Role.ACTIVATION, f"{_PTX}.elementwise:slice_columns",
    description="y[r, c] = x[r, start + c] for c < width (bf16, copied exactly): a K chunk of a computed row, "
                "for gemv tiles split along K",
    param_specs={"start": ParamSpec.integral(), "width": ParamSpec.integral(1)},
)

RMSNORM_ROPE = Family(
    "rmsnorm_rope", 17, ("x", "weight", "cos", "sin"), ("eps",),
    _infer_rmsnorm_rope, _run_rmsnorm_rope, _elem_flops(7),
    _encode_rmsnorm_rope, _decode_rmsnorm_rope,
    Role.ACTIVATION, f"{_PTX}.rope:rmsnorm_rope",
    fusion=Prologue(producer="rmsnorm_rows", consumer="rope", operand=0),
    description="rope with an rmsnorm_rows prologue on x (Qwen3's QK-norm then RoPE; fused by vdir-fuse)",
)

VECMAT = Family(
    "vecmat", 18, ("x", "weights", "acc"), (),
    _infer_vecmat, lambda ins, p: vecmat_f32(ins[0], ins[1], ins[2] if len(ins) > 2 else None),
    lambda ins: 2 * ins[1].shape[0] * ins[1].shape[1], _encode_vecmat, _decode_vecmat,
    Role.WEIGHT_STREAMING, f"{_PTX}.vecmat:vecmat",
    description="y[1,N] = x[1,K] . w[K,N] (+ acc f32), f32, each column added in row order: the partial of a "
                "split-K projection over the rows of its (transposed) weights; i64 out: as fixed point",
    optional_operands=1, out_dtypes=("f32", "i64"),
)

FIXED_ADD = Family(
    "fixed_add", 19, ("sum", "residual"), (),
    _infer_fixed_add, lambda ins, p: from_fixed(ins[0]) + _f32(ins[1]), _elem_flops(2),
    _encode_shape, _decode_fixed_add,
    Role.ACTIVATION, f"{_PTX}.elementwise:fixed_add",
    description="y = sum + residual: an i64 fixed-point sum (reducing stores of vecmat's fixed-point partials) "
                "read as f32, plus a bf16 residual",
)

ZEROS = Family(
    "zeros", 20, (), ("rows", "cols"),
    _infer_zeros, lambda ins, p: np.zeros((int(p["rows"]), int(p["cols"])), dtype=np.float32), lambda ins: 0,
    _encode_zeros, _decode_zeros,
    Role.ACTIVATION, f"{_PTX}.elementwise:zeros",
    description="y = 0 (rows x cols, any dtype): the start of a sum that reducing stores add into",
    out_dtypes=ZEROS_DTYPES,
    param_specs={"rows": ParamSpec.integral(1), "cols": ParamSpec.integral(1)},
)

#: in registration order (a fused family after its parts)
BUILTIN_FAMILIES = (GEMV, RMSNORM, SILU_MUL, ADD, RMSNORM_GEMV, GEMV_SILU_MUL, GEMV_ADD, SUM_ROWS, ROPE,
                    RMSNORM_ROWS, ATTN_BLOCK, ATTN_MERGE, ARGMAX_PARTIAL, ARGMAX_FINAL, SLICE,
                    ATTN_SELF, RMSNORM_ROPE, VECMAT, FIXED_ADD, ZEROS)

for _family in BUILTIN_FAMILIES:
    register_family(_family)
