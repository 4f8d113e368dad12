"""A plain-torch decode step of a Llama-family model: the reference the GPU tests and the bench compare with.

Ordinary torch ops on the same stacked weights as :mod:`vdir.frontend.llama`
(bf16 matmuls, f32 norms and softmax inside ``scaled_dot_product_attention``),
written as a user would for a CUDA graph. torch is imported when a step is
built: nothing else in vdir needs it.
"""

from __future__ import annotations

import numpy as np

from vdir.frontend.llama import LlamaConfig
from vdir.frontend.rope import rope_tables


class TorchStep:
    """A plain-torch decode step of ``cfg`` on the given weights (our stacked names), with its own caches.

    Written as a user would for a CUDA graph: static shapes, the KV cache
    ``L x KV x C x D`` appended in place at ``pos``, attention over the
    whole compiled context with a mask, through
    ``scaled_dot_product_attention`` with grouped-query heads.
    """

    def __init__(self, cfg: LlamaConfig, weights: dict[str, np.ndarray]):
        import torch  # pyright: ignore[reportMissingImports]  -- only where a torch is installed (GPU tests, bench)

        self.torch, self.cfg = torch, cfg
        dev = "cuda"
        self.w = {k: torch.from_numpy(v.view(np.int16)).view(torch.bfloat16).to(dev) for k, v in weights.items()}
        cos, sin = rope_tables(cfg.max_context, cfg.head_dim, cfg.rope_theta, cfg.rope_scaling)
        self.cos = torch.from_numpy(cos).to(dev)
        self.sin = torch.from_numpy(sin).to(dev)
        L, C, KV, D = cfg.layers, cfg.max_context, cfg.kv_heads, cfg.head_dim
        self.k = torch.zeros(L, KV, C, D, dtype=torch.bfloat16, device=dev)
        self.v = torch.zeros_like(self.k)
        self.positions = torch.arange(C, device=dev)
        self.token = torch.zeros(1, dtype=torch.long, device=dev)
        self.pos = torch.zeros(1, dtype=torch.long, device=dev)
        self.logits = torch.zeros(1, cfg.vocab, dtype=torch.bfloat16, device=dev)

    def _norm(self, x, g):
        t = self.torch
        xf = x.float()
        return (xf * t.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.cfg.eps)).bfloat16() * g

    def _rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        rotated = self.torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return (x.float() * cos + rotated.float() * sin).bfloat16()

    def step_at(self, pos: int, token: int) -> None:
        """:meth:`step` with ``token`` at position ``pos`` (teacher forcing)."""
        self.token.fill_(token)
        self.pos.fill_(pos)
        self.step()

    def step(self) -> None:
        """One token at ``self.pos`` from ``self.token``; writes ``self.logits`` and the greedy ``self.token``."""
        t, cfg, w = self.torch, self.cfg, self.w
        H, KV, D, Hd = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.hidden
        pos = self.pos
        h = w["emb"][self.token]  # 1 x hidden
        cos, sin = self.cos[pos], self.sin[pos]
        visible = (self.positions <= pos).view(1, 1, 1, -1)
        for layer in range(cfg.layers):
            rows = lambda name, n, layer=layer: w[name][layer * n : (layer + 1) * n]  # noqa: E731
            xn = self._norm(h, w["attn_norm"][layer])
            q = (xn @ rows("wq", H * D).t()).view(H, D)
            k = (xn @ rows("wk", KV * D).t()).view(KV, D)
            v = (xn @ rows("wv", KV * D).t()).view(KV, D)
            if cfg.qk_norm:
                q, k = self._norm(q, w["q_norm"][layer]), self._norm(k, w["k_norm"][layer])
            q, k = self._rope(q, cos, sin), self._rope(k, cos, sin)
            self.k[layer].index_copy_(1, pos, k.unsqueeze(1))
            self.v[layer].index_copy_(1, pos, v.unsqueeze(1))
            att = t.nn.functional.scaled_dot_product_attention(
                q.view(1, H, 1, D), self.k[layer].unsqueeze(0), self.v[layer].unsqueeze(0), attn_mask=visible,
                enable_gqa=True)
            h = h + att.reshape(1, H * D) @ rows("wo", Hd).t()
            xn = self._norm(h, w["mlp_norm"][layer])
            act = (t.nn.functional.silu((xn @ rows("wg", cfg.intermediate).t()).float()).bfloat16()
                   * (xn @ rows("wu", cfg.intermediate).t()))
            h = h + act @ rows("wd", Hd).t()
        head = w["emb"] if cfg.tied_embeddings else w["lm_head"]
        self.logits.copy_(self._norm(h, w["final_norm"]) @ head.t())
        self.token.copy_(self.logits.float().argmax(-1))


__all__ = ["TorchStep"]
