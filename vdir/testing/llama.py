"""References for the Llama decode step of :mod:`vdir.frontend.llama`, and seeded random weights.

:class:`MirrorModel` computes the step with the op families' numpy semantics,
op for op, rounding where the program rounds: a token-for-token and
bit-for-bit oracle for the simulator. :func:`ideal_logits` computes the same
model in float64 without intermediate rounding, the independent check that
the program computes a Llama step at all (compared within a bf16 tolerance).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from ml_dtypes import bfloat16

from vdir.families import FAMILIES
from vdir.families.builtin import rotate_half
from vdir.frontend.llama import (
    STATE_EXTRA,
    LlamaConfig,
    decode_tables,
    device_weights,
    rope_in_projection,
    weight_shapes,
)
from vdir.frontend.rope import rope_tables

if TYPE_CHECKING:
    from vdir.models.llama import LlamaDecoder


#: f32 values :func:`random_weights` draws at a time: the peak of its temporaries, not a whole tensor's
RANDOM_DRAW_VALUES = 1 << 26


def random_weights(cfg: LlamaConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random bf16 weights with the scales of a trained model's (norm weights near 1).

    Each tensor is drawn in blocks of rows, at most :data:`RANDOM_DRAW_VALUES` f32 values at a time,
    into its bf16 array: the same values as one draw of the whole tensor (the generator's stream does
    not depend on how it is split), without a whole tensor's f32 copy beside the weights (7.5 GB for
    the 8B shape's gate weights alone).
    """
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in weight_shapes(cfg).items():
        out = np.empty(shape, dtype=bfloat16)
        step = max(1, RANDOM_DRAW_VALUES // shape[1])
        for row in range(0, shape[0], step):
            values = rng.standard_normal((min(step, shape[0] - row), shape[1]), dtype=np.float32)
            if name.endswith("norm"):
                values = 1.0 + np.float32(0.1) * values
            else:
                values *= np.float32(1 / math.sqrt(shape[1]))
            out[row : row + len(values)] = values.astype(bfloat16)
        weights[name] = out
    return weights


def _run(family: str, inputs: list[np.ndarray], out: str = "bf16", **params) -> np.ndarray:
    return FAMILIES[family].run(inputs, params, out)


def _chunked(w: np.ndarray, x: np.ndarray, chunks: int) -> np.ndarray:
    """A gemv over ``chunks`` equal column chunks: f32 partial sums in order, the last rounds to bf16."""
    width = x.shape[1] // chunks
    acc = None
    for c in range(chunks):
        ins = [w[:, c * width : (c + 1) * width], x[:, c * width : (c + 1) * width]]
        acc = _run("gemv", ins + ([acc] if acc is not None else []), "bf16" if c == chunks - 1 else "f32")
    assert acc is not None
    return acc


class MirrorModel:
    """The decode step in the families' semantics, with its own caches (one sequence)."""

    def __init__(self, cfg: LlamaConfig, weights: dict[str, np.ndarray]):
        # the step's layout: q and k rows (and the RoPE tables' columns) in head_row_order
        self.cfg, self.w = cfg, device_weights(cfg, weights)
        self.tables = decode_tables(cfg)
        kv = cfg.kv_heads * cfg.head_dim
        self.kcache = np.zeros((cfg.layers, cfg.max_context, kv), bfloat16)
        self.vcache = np.zeros_like(self.kcache)

    def step(self, token: int, pos: int) -> tuple[int, np.ndarray]:
        """Run token ``token`` at position ``pos``; return (the greedy next token, the bf16 logits)."""
        cfg, w = self.cfg, self.w
        h = w["emb"][token : token + 1]
        for layer in range(cfg.layers):
            h = self._attention(layer, h, pos)
            h = self._mlp(layer, h)
        xn = _run("rmsnorm", [h, w["final_norm"]], eps=cfg.eps)
        head = w["emb"] if cfg.tied_embeddings else w["lm_head"]
        logits = _chunked(head, xn, cfg.logit_chunks)
        return int(np.argmax(logits.astype(np.float32)[0])), logits

    def _rows(self, name: str, layer: int, rows: int) -> np.ndarray:
        return self.w[name][layer * rows : (layer + 1) * rows]

    def _attention(self, layer: int, h: np.ndarray, pos: int) -> np.ndarray:
        cfg, w = self.cfg, self.w
        H, KV, D, G = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.group
        xn = _run("rmsnorm", [h, w["attn_norm"][layer : layer + 1]], eps=cfg.eps)
        q = _run("gemv", [self._rows("wq", layer, H * D), xn]).reshape(H, D)
        k = _run("gemv", [self._rows("wk", layer, KV * D), xn]).reshape(KV, D)
        v = _run("gemv", [self._rows("wv", layer, KV * D), xn]).reshape(KV, D)
        cos, sin = self.tables["rope_cos"][pos : pos + 1], self.tables["rope_sin"][pos : pos + 1]
        if rope_in_projection(cfg):  # each projection tile rotated as it is made
            q, k = self._rotate_tiles(q, cos, sin), self._rotate_tiles(k, cos, sin)
        out = np.zeros((H, D), bfloat16)
        B, S = cfg.block, cfg.blocks
        scale = 1 / math.sqrt(D)
        for kvh in range(KV):
            qg = self._as_attended(q[kvh * G : (kvh + 1) * G], "q_norm", layer, cos, sin)
            # the blocks over the cached positions before pos
            states = np.zeros((S * G, D + STATE_EXTRA), np.float32)
            for j in range(S):
                if pos < j * B + 1:
                    continue
                rows = slice(j * B, (j + 1) * B)
                kt = self.kcache[layer, rows, kvh * D : (kvh + 1) * D]
                vt = self.vcache[layer, rows, kvh * D : (kvh + 1) * D]
                bias = self.tables["attn_bias"][pos - j * B + cfg.max_context : pos - j * B + cfg.max_context + 1]
                states[j * G : (j + 1) * G] = _run("attn_block", [qg, kt, vt, bias], "f32", scale=scale)
            # the new position's own state, merged last; then its rows are appended to the caches
            kh = self._as_attended(k[kvh : kvh + 1], "k_norm", layer, cos, sin)
            vh = v[kvh : kvh + 1]
            own = _run("attn_self", [qg, kh, vh], "f32", scale=scale)
            mask = self.tables["merge_mask"][pos : pos + 1]
            out[kvh * G : (kvh + 1) * G] = _run("attn_merge", [states, mask, own], groups=G)
            self.kcache[layer, pos, kvh * D : (kvh + 1) * D] = kh[0]
            self.vcache[layer, pos, kvh * D : (kvh + 1) * D] = vh[0]
        # the output projection over the heads side by side, in o_chunks f32 chunks
        return _run("add", [_chunked(self._rows("wo", layer, cfg.hidden), out.reshape(1, -1), cfg.o_chunks), h])

    def _as_attended(self, heads: np.ndarray, norm: str, layer: int, cos: np.ndarray, sin: np.ndarray
                     ) -> np.ndarray:
        """``heads`` as attention reads them: QK-normed by ``norm`` where the model has QK-norm, then rotated
        whole unless the projection tiles rotated them."""
        cfg = self.cfg
        if cfg.qk_norm:
            heads = _run("rmsnorm_rows", [heads, self.w[norm][layer : layer + 1]], eps=cfg.eps)
        return heads if rope_in_projection(cfg) else _run("rope", [heads, cos, sin])

    def _rotate_tiles(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
        """``rope`` over each ``qkv_rows``-column tile of ``x``'s heads, with the tables' matching columns."""
        R = self.cfg.qkv_rows
        return np.concatenate([_run("rope", [x[:, c : c + R], cos[:, c : c + R], sin[:, c : c + R]])
                               for c in range(0, x.shape[1], R)], axis=1)

    def _mlp(self, layer: int, h: np.ndarray) -> np.ndarray:
        cfg, w = self.cfg, self.w
        I = cfg.intermediate  # noqa: E741 -- the usual name
        xn = _run("rmsnorm", [h, w["mlp_norm"][layer : layer + 1]], eps=cfg.eps)
        gate = _run("gemv", [self._rows("wg", layer, I), xn])
        up = _run("gemv", [self._rows("wu", layer, I), xn])
        act = _run("silu_mul", [gate, up])
        if cfg.split_k_mlp:
            return _run("fixed_add", [self._split_k_down(layer, act), h])
        return _run("add", [_chunked(self._rows("wd", layer, cfg.hidden), act, cfg.down_chunks), h])

    def _split_k_down(self, layer: int, act: np.ndarray) -> np.ndarray:
        """The split-K down projection's fixed-point sum: per group of ``mlp_group`` ``up_rows``-row tiles,
        a chain of ``vecmat``s in f32, the last in fixed point; the groups' sums added exactly (any order)."""
        cfg = self.cfg
        wdt, R = self._rows("wdt", layer, cfg.intermediate), cfg.up_rows
        total = np.zeros((1, cfg.hidden), np.int64)
        for first in range(0, cfg.intermediate // R, cfg.mlp_group):
            tiles = range(first, min(first + cfg.mlp_group, cfg.intermediate // R))
            partial = None
            for t in tiles:
                ins = [act[:, t * R : (t + 1) * R], wdt[t * R : (t + 1) * R]] + ([partial] if partial is not None else [])
                partial = _run("vecmat", ins, "i64" if t == tiles[-1] else "f32")
            assert partial is not None
            total += partial
        return total


def follow_mirror_exactly(decoder: LlamaDecoder, mirror: MirrorModel, token: int, steps: int) -> None:
    """Step ``decoder`` and ``mirror`` from ``token`` at positions ``0 .. steps - 1``, each fed the mirror's
    own greedy token; every step's logits must be bit-identical (the simulator runs the families'
    semantics exactly)."""
    for pos in range(steps):
        decoder.step(pos, token)
        want_token, want_logits = mirror.step(token, pos)
        assert np.array_equal(decoder.logits().view(np.uint16), want_logits.view(np.uint16)), f"logits at {pos}"
        token = want_token


def _rmsnorm64(x: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def _silu64(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def ideal_logits(cfg: LlamaConfig, weights: dict[str, np.ndarray], tokens: list[int]) -> np.ndarray:
    """The logits after each of ``tokens`` (positions 0, 1, ...), in float64 without intermediate rounding."""
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    cos_table, sin_table = rope_tables(cfg.max_context, cfg.head_dim, cfg.rope_theta, cfg.rope_scaling)
    H, KV, D, G = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.group
    keys = np.zeros((cfg.layers, len(tokens), KV, D))
    values = np.zeros_like(keys)
    out = []
    for pos, token in enumerate(tokens):
        h = w["emb"][token]
        cos, sin = cos_table[pos].astype(np.float64), sin_table[pos].astype(np.float64)
        for layer in range(cfg.layers):
            def rows(name: str, n: int, layer: int = layer) -> np.ndarray:
                return w[name][layer * n : (layer + 1) * n]

            xn = _rmsnorm64(h, w["attn_norm"][layer], cfg.eps)
            q, k, v = (rows(n, c * D) @ xn for n, c in (("wq", H), ("wk", KV), ("wv", KV)))
            q, k, v = q.reshape(H, D), k.reshape(KV, D), v.reshape(KV, D)
            if cfg.qk_norm:
                q = _rmsnorm64(q, w["q_norm"][layer], cfg.eps)
                k = _rmsnorm64(k, w["k_norm"][layer], cfg.eps)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            keys[layer, pos], values[layer, pos] = k, v
            att = np.zeros((H, D))
            for head in range(H):
                scores = keys[layer, : pos + 1, head // G] @ q[head] / math.sqrt(D)
                p = np.exp(scores - scores.max())
                att[head] = (p / p.sum()) @ values[layer, : pos + 1, head // G]
            h = h + rows("wo", cfg.hidden) @ att.reshape(-1)
            xn = _rmsnorm64(h, w["mlp_norm"][layer], cfg.eps)
            act = _silu64(rows("wg", cfg.intermediate) @ xn) * (rows("wu", cfg.intermediate) @ xn)
            h = h + rows("wd", cfg.hidden) @ act
        xn = _rmsnorm64(h, w["final_norm"][0], cfg.eps)
        out.append((w["emb"] if cfg.tied_embeddings else w["lm_head"]) @ xn)
    return np.array(out)


__all__ = ["MirrorModel", "ideal_logits", "random_weights"]
