"""The decode-attention families: ``attn_block`` and ``attn_merge``.

One query token attends to a KV cache split into blocks of rows. For one KV
head, ``attn_block`` turns the ``G`` query heads that share it and one block
of ``B`` cached rows into a *partial softmax state* per query head: the
block's unnormalised output ``o``, its score maximum ``m`` and its softmax
denominator ``l`` relative to ``m``. ``attn_merge`` combines ``S`` such
states into the attention output, state 0 first, so that a context split over
SMs gives the same result whichever SM finishes first. Its output is ``G x D``,
or with ``flat = 1`` the same values as one ``1 x G*D`` row (the heads side
by side, as the output projection reads them: one tile instead of ``G``).

State rows are ``D + 4`` f32 values, ``[o (D values), m, l, 0, 0]``: the two
zeros pad a row to a multiple of 16 bytes, as loads and stores want.

Numerics are f32 (bf16 inputs widened exactly). A fully masked row (every
bias ``-inf``) has ``m = -inf``, ``l = 0``, ``o = 0``; a merge whose used
states all have ``m = -inf`` (or that uses none) gives zeros. Nothing here
yields a NaN for such rows.

Parameter words (``docs/isa.md``): ``attn_block`` puts ``G``, ``D``, ``B``
in ``p0``, ``p1``, ``p2`` and ``scale`` in ``f0``; ``attn_merge`` puts the
states' rows ``S * G`` and columns ``D + 4`` in ``p0``, ``p1``, ``groups``
in ``p2`` and ``flat`` in ``p3``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vdir.families.core import ComputeSignature, Family, FamilyError, ParamSpec, ParamWords, Role, TileSig

#: the package of the PTX bodies (referenced lazily: see vdir.families)
_PTX_BODY = "vdir.lowering.families.attention"

#: head dimensions the attn_block body supports (a warp's lanes split D evenly, 2 or 4 columns each)
HEAD_DIMS = (64, 128)
#: most query heads per KV head (grouped-query attention) an attn_block takes
MAX_GROUPS = 16
#: most cached rows in one block: a lane holds the scores of rows lane, lane + 32, .. in 4 registers
MAX_BLOCK_ROWS = 128
#: block rows come in multiples of this (16-byte bias rows)
BLOCK_ROW_MULTIPLE = 8
#: f32 words after ``o`` in a state row: ``m``, ``l`` and two zeros of padding
STATE_EXTRA = 4
#: column of ``m`` and ``l`` in a state row, counted from the end of ``o``
STATE_M, STATE_L = 0, 1

_NEG_INF = np.float32(-np.inf)


def _f32(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float32)


def attn_block_f32(q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray, scale: float) -> np.ndarray:
    """The partial softmax states (``G x (D + 4)`` f32) of query heads ``q`` over one block of ``k`` / ``v``.

    ``s = scale * (q . k^T) + bias``, ``m = max_b s``, ``p = exp(s - m)``,
    ``l = sum_b p``, ``o = p . v``, all in f32; a row whose scores are all
    ``-inf`` gets ``m = -inf`` and ``p = 0`` (so ``l = 0``, ``o = 0``).
    """
    scores = np.float32(scale) * (_f32(q) @ _f32(k).T) + _f32(bias).reshape(1, -1)
    m = scores.max(axis=1, keepdims=True)
    shift = np.where(m == _NEG_INF, np.float32(0), m)
    p = np.exp(scores - shift)
    g, d = q.shape
    out = np.zeros((g, d + STATE_EXTRA), dtype=np.float32)
    out[:, :d] = p @ _f32(v)
    out[:, d + STATE_M] = m[:, 0]
    out[:, d + STATE_L] = p.sum(axis=1, dtype=np.float32)
    return out


def attn_merge_f32(states: np.ndarray, mask: np.ndarray, groups: int) -> np.ndarray:
    """The attention output (``G x D`` f32) of ``S`` stacked partial states, merged in order s = 0..S-1.

    State ``s`` is rows ``s * G .. s * G + G - 1``; it is used unless
    ``mask[0, s]`` is ``-inf``. ``M = max m_s`` over the used states,
    ``w_s = exp(m_s - M)``, ``L = sum w_s l_s`` and ``acc = sum w_s o_s``
    (each product rounded to f32, then added, state 0 first), ``out = acc / L``;
    zeros where ``M = -inf``.
    """
    rows, cols = states.shape
    d = cols - STATE_EXTRA
    st = _f32(states).reshape(rows // groups, groups, cols)
    entries = _f32(mask)[0]
    used = [s for s in range(st.shape[0]) if entries[s] != _NEG_INF]
    top = np.full(groups, _NEG_INF, dtype=np.float32)
    for s in used:
        top = np.maximum(top, st[s, :, d + STATE_M])
    empty = top == _NEG_INF
    shift = np.where(empty, np.float32(0), top)
    total = np.zeros(groups, dtype=np.float32)
    acc = np.zeros((groups, d), dtype=np.float32)
    for s in used:
        w = np.exp(st[s, :, d + STATE_M] - shift)
        total = total + w * st[s, :, d + STATE_L]
        acc = acc + w[:, None] * st[s, :, :d]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = acc / total[:, None]
    return np.where(empty[:, None], np.float32(0), out).astype(np.float32)


# ---------------------------------------------------------------------------
# Signatures
# ---------------------------------------------------------------------------


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise FamilyError(msg)


def _dtype(t: TileSig, dtype: str, fam: str, what: str) -> None:
    _need(t.dtype == dtype, f"family '{fam}': {what} must be {dtype}, got {t}")


def _infer_attn_block(ins: Sequence[TileSig], params: dict) -> TileSig:
    """q ``G x D``, k and v ``B x D`` bf16, bias ``1 x B`` f32 -> the states ``G x (D + 4)`` f32."""
    q, k, v, bias = ins
    fam = "attn_block"
    for t, what in ((q, "q"), (k, "k"), (v, "v")):
        _dtype(t, "bf16", fam, what)
    _dtype(bias, "f32", fam, "bias")
    g, d = q.shape
    _need(d in HEAD_DIMS, f"family '{fam}': head dimension {d} (q {q}) must be one of {', '.join(map(str, HEAD_DIMS))}")
    _need(g <= MAX_GROUPS, f"family '{fam}': {g} query heads (q {q}) share one KV head; at most {MAX_GROUPS}")
    rows = k.shape[0]
    _need(k.shape[1] == d, f"family '{fam}': k must have {d} columns like q, got {k}")
    _need(
        rows % BLOCK_ROW_MULTIPLE == 0 and rows <= MAX_BLOCK_ROWS,
        f"family '{fam}': {rows} cached rows (k {k}) must be a multiple of {BLOCK_ROW_MULTIPLE} up to {MAX_BLOCK_ROWS}",
    )
    _need(v.shape == k.shape, f"family '{fam}': v must be {rows}x{d} like k, got {v}")
    _need(bias.shape == (1, rows), f"family '{fam}': bias must be 1x{rows}, got {bias}")
    return TileSig((g, d + STATE_EXTRA), "f32")


def _merge_shape(groups: int, d: int, flat: int) -> tuple[int, int]:
    return (1, groups * d) if flat else (groups, d)


def _infer_attn_merge(ins: Sequence[TileSig], params: dict) -> TileSig:
    """states ``(S * G) x (D + 4)`` f32, mask ``1 x S`` f32, ``groups`` = G -> ``G x D`` (flat: ``1 x G*D``) bf16."""
    states, mask = ins
    fam = "attn_merge"
    _dtype(states, "f32", fam, "states")
    _dtype(mask, "f32", fam, "mask")
    rows, cols = states.shape
    groups = int(params["groups"])
    _need(cols > STATE_EXTRA, f"family '{fam}': states {states} need D + {STATE_EXTRA} columns with D >= 1")
    _need(rows % groups == 0, f"family '{fam}': {rows} state rows are not whole states of groups = {groups} rows")
    count = rows // groups
    _need(mask.shape == (1, count), f"family '{fam}': mask must be 1x{count} (one entry per state), got {mask}")
    return TileSig(_merge_shape(groups, cols - STATE_EXTRA, int(ATTN_MERGE.param(params, "flat"))), "bf16")


# ---------------------------------------------------------------------------
# Parameter words
# ---------------------------------------------------------------------------


def _encode_attn_block(sig: ComputeSignature) -> ParamWords:
    g, d = sig.inputs[0].shape
    return ParamWords(g, d, sig.inputs[1].shape[0], f0=float(sig.params["scale"]))


def _decode_attn_block(w: ParamWords) -> ComputeSignature:
    g, d, rows = w.p0, w.p1, w.p2
    kv = TileSig((rows, d), "bf16")
    inputs = (TileSig((g, d), "bf16"), kv, kv, TileSig((1, rows), "f32"))
    return ComputeSignature(inputs, TileSig((g, d + STATE_EXTRA), "f32"), {"scale": w.f0})


def _encode_attn_merge(sig: ComputeSignature) -> ParamWords:
    rows, cols = sig.inputs[0].shape
    return ParamWords(rows, cols, int(sig.params["groups"]), int(ATTN_MERGE.param(sig.params, "flat")))


def _decode_attn_merge(w: ParamWords) -> ComputeSignature:
    rows, cols, groups, flat = w.p0, w.p1, w.p2, w.p3
    inputs = (TileSig((rows, cols), "f32"), TileSig((1, rows // max(groups, 1)), "f32"))
    out = TileSig(_merge_shape(groups, max(cols, STATE_EXTRA) - STATE_EXTRA, flat), "bf16")
    return ComputeSignature(inputs, out, {"groups": groups, "flat": flat})


def _attn_block_flops(ins: Sequence[TileSig]) -> int:
    (g, d), rows = ins[0].shape, ins[1].shape[0]
    return 4 * g * rows * d


def _attn_merge_flops(ins: Sequence[TileSig]) -> int:
    return 2 * ins[0].shape[0] * ins[0].shape[1]


# ---------------------------------------------------------------------------
# The families
# ---------------------------------------------------------------------------

ATTN_BLOCK = Family(
    "attn_block", 11, ("q", "k", "v", "bias"), ("scale",),
    _infer_attn_block,
    lambda ins, p: attn_block_f32(ins[0], ins[1], ins[2], ins[3], p["scale"]),
    _attn_block_flops, _encode_attn_block, _decode_attn_block,
    Role.WEIGHT_STREAMING, f"{_PTX_BODY}:attn_block",
    description="partial softmax state [o, m, l, 0, 0] per query head of q[G,D] over one block of k, v [B,D]",
    out_dtypes=("f32",),
)
ATTN_MERGE = Family(
    "attn_merge", 12, ("states", "mask"), ("groups", "flat"),
    _infer_attn_merge,
    lambda ins, p: attn_merge_f32(ins[0], ins[1], int(p["groups"])).reshape(
        _merge_shape(int(p["groups"]), ins[0].shape[1] - STATE_EXTRA, int(ATTN_MERGE.param(p, "flat")))),
    _attn_merge_flops, _encode_attn_merge, _decode_attn_merge,
    Role.ACTIVATION, f"{_PTX_BODY}:attn_merge",
    description="attention output [G,D] (flat: [1,G*D]) of S partial states (S*G rows), merged in order 0..S-1; "
                "mask -inf skips one",
    param_specs={"groups": ParamSpec.integral(1, MAX_GROUPS), "flat": ParamSpec.integral(0, 1)},
    param_defaults={"flat": 0},
)
