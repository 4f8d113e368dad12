"""The decode-attention families: ``attn_block``, ``attn_self`` and ``attn_merge``.

One query token attends to a KV cache split into blocks of rows. For one KV
head, ``attn_block`` turns the ``G`` query heads that share it and one block
of ``B`` cached rows into a *partial softmax state* per query head: the
block's unnormalised output ``o``, its score maximum ``m`` and its softmax
denominator ``l`` relative to ``m``. ``attn_merge`` combines ``S`` such
states into the attention output, state 0 first, so that a context split over
SMs gives the same result whichever SM finishes first. ``attn_self`` is the
state of one row given as its own ``k`` and ``v`` (the new token's, before
it is in the cache): ``m`` is the score, ``l = 1``, ``o = v``; ``attn_merge``
takes it as an optional third operand, merged after the stacked states, so
that the blocks over the cache need not wait for the new row to reach it.
Its output is ``G x D``,
or with ``flat = 1`` the same values as one ``1 x G*D`` row (the heads side
by side, as the output projection reads them: one tile instead of ``G``).

State rows are ``D + 4`` f32 values, ``[o (D values), m, l, 0, 0]``: the two
zeros pad a row to a multiple of 16 bytes, as loads and stores want.

Numerics are f32 (bf16 inputs widened exactly). A fully masked row (every
bias ``-inf``) has ``m = -inf``, ``l = 0``, ``o = 0``; a merge whose used
states all have ``m = -inf`` (or that uses none) gives zeros. Nothing here
yields a NaN for such rows.

Parameter words (``docs/isa.md``): ``attn_block`` puts ``G``, ``D``, ``B``
in ``p0``, ``p1``, ``p2`` and ``scale`` in ``f0``; ``attn_self`` puts ``G``,
``D`` in ``p0``, ``p1`` and ``scale`` in ``f0``; ``attn_merge`` puts the
states' rows ``S * G`` and columns ``D + 4`` in ``p0``, ``p1``, ``groups``
in ``p2`` and ``flat`` (bit 0) and whether it has the self state (bit 1,
:data:`MERGE_HAS_SELF`) in ``p3``.
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
#: ``attn_merge``'s ``p3`` bit saying a self state (its third operand) follows the stacked ones
MERGE_HAS_SELF = 2

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


def attn_self_f32(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    """The state (``G x (D + 4)`` f32) of query heads ``q`` over the one row ``k`` / ``v`` (each ``1 x D``).

    ``m = scale * (q . k)`` in f32, ``l = 1`` (the row's ``exp(s - m)``),
    ``o = v``: :func:`attn_block_f32` over a block of that one row, unmasked.
    """
    return attn_block_f32(q, k, v, np.zeros((1, 1), np.float32), scale)


def attn_merge_f32(states: np.ndarray, mask: np.ndarray, groups: int,
                   self_state: np.ndarray | None = None) -> np.ndarray:
    """The attention output (``G x D`` f32) of ``S`` stacked partial states, merged in order s = 0..S-1.

    State ``s`` is rows ``s * G .. s * G + G - 1``; it is used unless
    ``mask[0, s]`` is ``-inf``. A ``self_state`` (``G`` rows) is used always,
    after state ``S - 1``. ``M = max m_s`` over the used states,
    ``w_s = exp(m_s - M)``, ``L = sum w_s l_s`` and ``acc = sum w_s o_s``
    (each product rounded to f32, then added, state 0 first), ``out = acc / L``;
    zeros where ``M = -inf``.
    """
    rows, cols = states.shape
    d = cols - STATE_EXTRA
    st = _f32(states).reshape(rows // groups, groups, cols)
    entries = _f32(mask)[0]
    used = [s for s in range(st.shape[0]) if entries[s] != _NEG_INF]
    if self_state is not None:
        st = np.concatenate([st, _f32(self_state).reshape(1, groups, cols)])
        used.append(st.shape[0] - 1)
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


def _query_heads(fam: str, q: TileSig, k: TileSig, v: TileSig) -> tuple[int, int]:
    """Check what ``fam``'s q, k and v share (bf16; a supported head dimension; at most
    :data:`MAX_GROUPS` query heads); return q's ``G``, ``D``."""
    for t, what in ((q, "q"), (k, "k"), (v, "v")):
        _dtype(t, "bf16", fam, what)
    g, d = q.shape
    _need(d in HEAD_DIMS, f"family '{fam}': head dimension {d} (q {q}) must be one of {', '.join(map(str, HEAD_DIMS))}")
    _need(g <= MAX_GROUPS, f"family '{fam}': {g} query heads (q {q}) share one KV head; at most {MAX_GROUPS}")
    return g, d


def _infer_attn_block(ins: Sequence[TileSig], params: dict) -> TileSig:
    """q ``G x D``, k and v ``B x D`` bf16, bias ``1 x B`` f32 -> the states ``G x (D + 4)`` f32."""
    q, k, v, bias = ins
    fam = "attn_block"
    g, d = _query_heads(fam, q, k, v)
    _dtype(bias, "f32", fam, "bias")
    rows = k.shape[0]
    _need(k.shape[1] == d, f"family '{fam}': k must have {d} columns like q, got {k}")
    _need(
        rows % BLOCK_ROW_MULTIPLE == 0 and rows <= MAX_BLOCK_ROWS,
        f"family '{fam}': {rows} cached rows (k {k}) must be a multiple of {BLOCK_ROW_MULTIPLE} up to {MAX_BLOCK_ROWS}",
    )
    _need(v.shape == k.shape, f"family '{fam}': v must be {rows}x{d} like k, got {v}")
    _need(bias.shape == (1, rows), f"family '{fam}': bias must be 1x{rows}, got {bias}")
    return TileSig((g, d + STATE_EXTRA), "f32")


def _infer_attn_self(ins: Sequence[TileSig], params: dict) -> TileSig:
    """q ``G x D``, k and v ``1 x D`` bf16 -> the state ``G x (D + 4)`` f32."""
    q, k, v = ins
    fam = "attn_self"
    g, d = _query_heads(fam, q, k, v)
    _need(k.shape == (1, d), f"family '{fam}': k must be the one row 1x{d}, got {k}")
    _need(v.shape == (1, d), f"family '{fam}': v must be the one row 1x{d}, got {v}")
    return TileSig((g, d + STATE_EXTRA), "f32")


def _merge_shape(groups: int, d: int, flat: int) -> tuple[int, int]:
    return (1, groups * d) if flat else (groups, d)


def _infer_attn_merge(ins: Sequence[TileSig], params: dict) -> TileSig:
    """states ``(S * G) x (D + 4)`` f32, mask ``1 x S`` f32, optionally a self state ``G x (D + 4)`` f32,
    ``groups`` = G -> ``G x D`` (flat: ``1 x G*D``) bf16."""
    states, mask = ins[0], ins[1]
    fam = "attn_merge"
    _dtype(states, "f32", fam, "states")
    _dtype(mask, "f32", fam, "mask")
    rows, cols = states.shape
    groups = int(params["groups"])
    _need(cols > STATE_EXTRA, f"family '{fam}': states {states} need D + {STATE_EXTRA} columns with D >= 1")
    _need(rows % groups == 0, f"family '{fam}': {rows} state rows are not whole states of groups = {groups} rows")
    count = rows // groups
    _need(mask.shape == (1, count), f"family '{fam}': mask must be 1x{count} (one entry per state), got {mask}")
    if len(ins) > 2:
        self_state = ins[2]
        _dtype(self_state, "f32", fam, "self")
        _need(self_state.shape == (groups, cols),
              f"family '{fam}': self must be one state of {groups}x{cols} like the stacked ones, got {self_state}")
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


def _encode_attn_self(sig: ComputeSignature) -> ParamWords:
    g, d = sig.inputs[0].shape
    return ParamWords(g, d, f0=float(sig.params["scale"]))


def _decode_attn_self(w: ParamWords) -> ComputeSignature:
    g, d = w.p0, w.p1
    row = TileSig((1, d), "bf16")
    return ComputeSignature((TileSig((g, d), "bf16"), row, row), TileSig((g, d + STATE_EXTRA), "f32"),
                            {"scale": w.f0})


def _encode_attn_merge(sig: ComputeSignature) -> ParamWords:
    rows, cols = sig.inputs[0].shape
    flags = int(ATTN_MERGE.param(sig.params, "flat")) | (MERGE_HAS_SELF if len(sig.inputs) > 2 else 0)
    return ParamWords(rows, cols, int(sig.params["groups"]), flags)


def _decode_attn_merge(w: ParamWords) -> ComputeSignature:
    rows, cols, groups = w.p0, w.p1, w.p2
    flat = w.p3 & ~MERGE_HAS_SELF
    inputs: tuple[TileSig, ...] = (TileSig((rows, cols), "f32"), TileSig((1, rows // max(groups, 1)), "f32"))
    if w.p3 & MERGE_HAS_SELF:
        inputs = (*inputs, TileSig((groups, cols), "f32"))
    out = TileSig(_merge_shape(groups, max(cols, STATE_EXTRA) - STATE_EXTRA, flat), "bf16")
    return ComputeSignature(inputs, out, {"groups": groups, "flat": flat})


def _attn_block_flops(ins: Sequence[TileSig]) -> int:
    (g, d), rows = ins[0].shape, ins[1].shape[0]
    return 4 * g * rows * d


def _attn_self_flops(ins: Sequence[TileSig]) -> int:
    g, d = ins[0].shape
    return 2 * g * d


def _attn_merge_flops(ins: Sequence[TileSig]) -> int:
    rows, cols = ins[0].shape
    self_rows = ins[2].shape[0] if len(ins) > 2 else 0
    return 2 * (rows + self_rows) * cols


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
ATTN_SELF = Family(
    "attn_self", 16, ("q", "k", "v"), ("scale",),
    _infer_attn_self,
    lambda ins, p: attn_self_f32(ins[0], ins[1], ins[2], p["scale"]),
    _attn_self_flops, _encode_attn_self, _decode_attn_self,
    Role.ACTIVATION, f"{_PTX_BODY}:attn_self",
    description="the state [o = v, m = scale q.k, l = 1, 0, 0] per query head of q[G,D] over the one row k, v [1,D]",
    out_dtypes=("f32",),
)
ATTN_MERGE = Family(
    "attn_merge", 12, ("states", "mask", "self"), ("groups", "flat"),
    _infer_attn_merge,
    lambda ins, p: attn_merge_f32(ins[0], ins[1], int(p["groups"]), ins[2] if len(ins) > 2 else None).reshape(
        _merge_shape(int(p["groups"]), ins[0].shape[1] - STATE_EXTRA, int(ATTN_MERGE.param(p, "flat")))),
    _attn_merge_flops, _encode_attn_merge, _decode_attn_merge,
    Role.ACTIVATION, f"{_PTX_BODY}:attn_merge",
    description="attention output [G,D] (flat: [1,G*D]) of S partial states (S*G rows), merged in order 0..S-1, "
                "then the optional self state; mask -inf skips one",
    param_specs={"groups": ParamSpec.integral(1, MAX_GROUPS), "flat": ParamSpec.integral(0, 1)},
    param_defaults={"flat": 0},
    optional_operands=1,
)
