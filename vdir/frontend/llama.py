"""A Llama-family decode step as one vdir program: :class:`LlamaConfig` -> :func:`build_decode_step`.

One launch runs one token through the whole model, batch 1:

* the token id lives on the device (``tok[0, 0]``, i32): the embedding row is
  gathered by it (a runtime row offset, bounds-checked on the device), and
  the step ends by writing the greedy next token there (a two-phase argmax),
  so consecutive launches feed each other without a host round trip;
* the position ``pos`` is the launch-time scalar: RoPE reads row ``pos`` of
  its tables, attention covers positions ``0 .. pos``, and the new K and V
  rows are appended to the caches at row ``pos`` once the layer's attention
  has read them;
* attention over the cached positions ``0 .. pos - 1`` is split along the
  context into blocks of ``block`` rows, one ``attn_block`` micro-op each
  (run only ``when pos > first row``); the new position's row takes no
  detour through the cache: ``attn_self`` makes its state from the new k
  and v rows on the merge's SM, and ``attn_merge`` merges the blocks' states
  in a fixed order, then that one. So the blocks wait for the q row only,
  not for the new K row's RoPE and append. The last block's rows from
  ``pos`` on are masked by a bias row that the program loads from a
  host-built table at a row that depends on ``pos`` (:func:`decode_tables`),
  and so are the merge's unused states.

Layout of the buffers (``L`` layers, ``H`` heads, ``KV`` kv heads, ``D``
head dim, ``C`` the maximum context): weights stacked by layer as in
``examples/mlp_stack.mlir``; the caches are ``L*C x KV*D`` (row ``l*C + t``
holds position ``t`` of layer ``l``, all kv heads side by side); the residual
stream ``hs`` has ``2L + 1`` rows (row ``2l`` enters layer ``l``, row
``2l + 1`` is after its attention, row ``2l + 2`` after its MLP). The rows
handed between stages (``hs``, ``q``, ``knew``, ``vnew``, ``ao``, ``act``,
``final_x``, ``best``) are ``scratch``: the caller neither binds nor gets
them, and a flag-word hand-off may carry them in its words alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from vdir.diagnostics import BuildError
from vdir.dialects.vdir import BULK_COPY_ALIGN
from vdir.families import DTYPE_BYTES
from vdir.families.attention import BLOCK_ROW_MULTIPLE, MAX_BLOCK_ROWS
from vdir.frontend.builder import Offset, ProgramBuilder
from vdir.frontend.layers import (
    balanced_rows,
    chunked_gemv,
    chunks_for,
    clear_rows,
    fixed_point_residual,
    load_chunks,
    mlp_layer,
    split_evenly,
    split_k_groups,
    split_k_mlp_layer,
    tile_count,
)
from vdir.frontend.rope import Llama3Scaling, rope_tables
from vdir.target import DEFAULT_TARGET, get_target

#: head dimensions the attention families take
HEAD_DIMS = (64, 128)
#: the token buffer's width (one 16-byte row of i32; the id is element 0)
TOKEN_WIDTH = 4
#: the width of one partial attention state row beyond the head dim: m, l and padding
STATE_EXTRA = 4
#: a chunk count of :class:`LlamaConfig` that the config chooses itself
AUTO_CHUNKS = 0
#: bytes of a bf16 element
_BF16 = DTYPE_BYTES["bf16"]
#: the most logits one ``argmax_partial`` of the step reads (a 16 KB bf16 tile): few parts, so that an SM's
#: logits stores of one part release its counter once (vdir-layout-deps), not once each
ARGMAX_PART_LOGITS = 8192
#: logits in one bulk-copy unit: an argmax part's width is a multiple of it (its row whole 16-byte units)
LOGITS_PER_UNIT = BULK_COPY_ALIGN // _BF16
#: the weight rows of a projection tile (q, k, v, output, gate, up, down) unless a config gives them,
#: whatever the hidden size. Measured on the decode step (docs/performance.md, round 39): 8 rows cost
#: the 1B shape 21% and the 3B shape 2.3-2.7% (though its 16-row tiles are 96 KB), 32 rows cost the
#: 1B shape 15% (64 q tiles for 132 SMs), the 8B shape runs 8 and 16 rows level; what pays is rows
#: per tile, not bytes (longer K chunks lost on the 3B shape). Gate/up tiles alone in 32 rows (K split
#: in 64 KB chunks) cost the 1B and 3B shapes 2.5% and 3.5% (round 41)
PROJECTION_ROWS = 16
#: the SMs the down projection's rows are balanced over where a config leaves them out (the default
#: target's; both Hopper targets have 132). Measured on the H100 (docs/performance.md, round 40): the 3B
#: shape's down projection in 8-row tiles (at most 3 of 384 per SM, where 16-row tiles put 2 of 192 on
#: 60 SMs) is 2.4-2.5% faster a step (0.5% on the H200, round 41); the 1B shape's, whose 128 tiles of
#: 16 rows fit one per SM, runs level in 8 rows (+0.4%) and keeps 16; the 3B output projection in 8 rows
#: loses (+4%), and in 24 rows (one tile per SM) runs level (round 42), so the rule is the down
#: projection's only
DECODE_SMS = get_target(DEFAULT_TARGET).num_sms


@dataclass(frozen=True)
class LlamaConfig:
    """The shape of a Llama-family model (Llama 2/3, Qwen3 with ``qk_norm``) and how its step is tiled.

    ``max_context`` is the largest position + 1 the compiled step serves;
    ``attend`` (0: ``max_context``) the positions its attention covers, the
    caches still laid out for ``max_context``: a step for the early positions
    only, whose blocks past ``attend`` are not compiled at all (the
    ``context_buckets`` of :class:`vdir.models.llama.LlamaDecoder`);
    ``block`` the context rows of one attention micro-op (left out:
    :func:`attention_block_for` of ``max_context``); ``proj_rows`` the
    weight rows of one projection gemv tile (:data:`PROJECTION_ROWS` unless given), and ``qkv_rows``,
    ``o_rows``, ``up_rows``, ``down_rows`` those of the q/k/v, output, MLP gate/up and down projections'
    tiles (left out:
    ``proj_rows``, and for the down projection half of it where that spreads its tiles more evenly over
    :data:`DECODE_SMS` SMs, :func:`~vdir.frontend.layers.balanced_rows`); ``vocab_rows`` the logits of
    one gemv slice, in ``logit_chunks`` f32 chunks of the hidden size (so
    that a slice's weight tile fits shared memory); ``argmax_parts`` the
    parts the greedy token's first argmax phase splits the logits into (left
    out: the fewest of at most :data:`ARGMAX_PART_LOGITS`; the last is shorter where no equal split
    is whole 16-byte rows); ``down_chunks`` and
    ``o_chunks`` the K chunks of the MLP's down projection and of the
    attention's output projection. A chunk count left out (:data:`AUTO_CHUNKS`) is the fewest that
    keep each weight tile within :data:`~vdir.frontend.layers.WEIGHT_TILE_BYTES`
    (:func:`~vdir.frontend.layers.chunks_for`). ``rope_in_tiles``: rotate q
    and k in the projection tiles that make them where the model allows
    (:func:`rope_in_projection`), rather than as whole heads after a hand-off.
    ``split_k_mlp``: split each MLP's down projection along K across the SMs
    (:func:`~vdir.frontend.layers.split_k_mlp_layer`: the down weights held
    transposed, as ``wdt``; each SM group of ``mlp_group`` activation tiles,
    left out :func:`~vdir.frontend.layers.split_k_groups` for
    :data:`DECODE_SMS` SMs, adds its partial in fixed point into the layer's
    accumulator row), so that the MLP hands over one row instead of two.
    """

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    rope_theta: float = 10000.0
    rope_scaling: Llama3Scaling | None = None
    eps: float = 1e-5
    tied_embeddings: bool = False
    qk_norm: bool = False
    max_context: int = 256
    attend: int = 0
    block: int = AUTO_CHUNKS
    proj_rows: int = PROJECTION_ROWS
    qkv_rows: int = AUTO_CHUNKS
    o_rows: int = AUTO_CHUNKS
    up_rows: int = AUTO_CHUNKS
    down_rows: int = AUTO_CHUNKS
    vocab_rows: int = 16
    down_chunks: int = AUTO_CHUNKS
    logit_chunks: int = AUTO_CHUNKS
    o_chunks: int = AUTO_CHUNKS
    argmax_parts: int = AUTO_CHUNKS
    rope_in_tiles: bool = False
    split_k_mlp: bool = False
    mlp_group: int = AUTO_CHUNKS
    name: str = field(default="llama", compare=False)

    def __post_init__(self) -> None:
        self._check_positive("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab",
                             "max_context", "proj_rows", "vocab_rows")
        for what in ("qkv_rows", "o_rows", "up_rows"):
            if getattr(self, what) == AUTO_CHUNKS:  # frozen: the chosen rows are set once, here
                object.__setattr__(self, what, self.proj_rows)
        if self.down_rows == AUTO_CHUNKS:
            object.__setattr__(self, "down_rows", balanced_rows(self.hidden, self.proj_rows, DECODE_SMS))
        self._check_positive("qkv_rows", "o_rows", "up_rows", "down_rows")
        if self.block == AUTO_CHUNKS:  # frozen: the chosen block is set once, here
            object.__setattr__(self, "block", attention_block_for(self.max_context))
        self._check_positive("block")
        for what, rows, k in (("down_chunks", self.down_rows, self.intermediate),
                              ("logit_chunks", self.vocab_rows, self.hidden),
                              ("o_chunks", self.o_rows, self.heads * self.head_dim)):
            if getattr(self, what) == AUTO_CHUNKS:  # frozen: the chosen count is set once, here
                object.__setattr__(self, what, chunks_for(rows, k, f"config: {what}"))
        self._check_positive("down_chunks", "logit_chunks", "o_chunks")
        if self.heads % self.kv_heads:
            raise BuildError(f"config: heads = {self.heads} is not a multiple of kv_heads = {self.kv_heads}")
        if self.head_dim not in HEAD_DIMS:
            raise BuildError(f"config: head_dim = {self.head_dim} is not supported (one of {HEAD_DIMS})")
        if self.max_context % self.block:
            raise BuildError(f"config: max_context = {self.max_context} is not a multiple of block = {self.block}")
        if not (isinstance(self.attend, int) and 0 <= self.attend <= self.max_context):
            raise BuildError(f"config: attend = {self.attend!r} must be 0 (max_context) or a context of at most "
                             f"max_context = {self.max_context}")
        if self.attend % self.block:
            raise BuildError(f"config: attend = {self.attend} is not a multiple of block = {self.block}")
        if self.blocks % MERGE_MASK_BLOCKS:
            raise BuildError(f"config: {'attend' if self.attend else 'max_context'} / block = {self.blocks} "
                             f"attention blocks, not a multiple of "
                             f"{MERGE_MASK_BLOCKS}: the merge's f32 mask row would not be whole "
                             f"{BULK_COPY_ALIGN}-byte rows")
        for total, rows, what in ((self.hidden, self.o_rows, "hidden"), (self.hidden, self.down_rows, "hidden"),
                                  (self.head_dim, self.qkv_rows, "head_dim"),
                                  (self.intermediate, self.up_rows, "intermediate"),
                                  (self.vocab, self.vocab_rows, "vocab")):
            tile_count(total, rows, what)
        split_evenly(self.hidden, self.logit_chunks, "hidden")
        split_evenly(self.intermediate, self.down_chunks, "intermediate")
        split_evenly(self.heads * self.head_dim, self.o_chunks, "heads x head_dim")
        if self.vocab % LOGITS_PER_UNIT:
            raise BuildError(f"config: vocab = {self.vocab} logits are not whole {BULK_COPY_ALIGN}-byte rows "
                             f"(a multiple of {LOGITS_PER_UNIT})")
        if self.argmax_parts == AUTO_CHUNKS:  # the fewest parts of the logits row within the limit
            object.__setattr__(self, "argmax_parts", -(-self.vocab // ARGMAX_PART_LOGITS))
        self._check_positive("argmax_parts")
        if self.argmax_last_width <= 0:
            raise BuildError(f"config: argmax_parts = {self.argmax_parts}: {self.argmax_parts - 1} parts of "
                             f"{self.argmax_width} logits (whole {BULK_COPY_ALIGN}-byte rows) leave none of "
                             f"vocab = {self.vocab} for the last")
        for flag in ("rope_in_tiles", "split_k_mlp"):
            if not isinstance(getattr(self, flag), bool):
                raise BuildError(f"config: {flag} must be true or false, got {getattr(self, flag)!r}")
        if self.mlp_group == AUTO_CHUNKS:  # frozen: the chosen group is set once, here
            object.__setattr__(self, "mlp_group",
                               split_k_groups(tile_count(self.intermediate, self.up_rows, "intermediate"),
                                              DECODE_SMS))
        self._check_positive("mlp_group")
        if not (self.eps > 0 and self.rope_theta > 0):
            raise BuildError(f"config: eps and rope_theta must be positive, got {self.eps} and {self.rope_theta}")

    def retiled(self, **changes: Any) -> LlamaConfig:
        """This config with tiling fields changed, and the chunk counts chosen from a changed field
        (:data:`DERIVED_TILING`) chosen again for it unless ``changes`` gives them too: 16-row
        projection tiles of the 8B shape get the down and output projections' K chunks of 16-row
        tiles, not those chosen for 8 (``dataclasses.replace`` keeps every field as it was)."""
        for field_name, derived in DERIVED_TILING.items():
            if field_name in changes:
                for what in derived:
                    changes.setdefault(what, AUTO_CHUNKS)
        return replace(self, **changes)

    def _check_positive(self, *names: str) -> None:
        for what in names:
            value = getattr(self, what)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise BuildError(f"config: {what} must be a positive integer, got {value!r}")

    @property
    def group(self) -> int:
        """Query heads per kv head."""
        return self.heads // self.kv_heads

    @property
    def attended(self) -> int:
        """The positions the step's attention covers: ``attend``, or ``max_context`` where it is 0."""
        return self.attend or self.max_context

    @property
    def blocks(self) -> int:
        """Attention blocks of the attended context."""
        return self.attended // self.block

    @property
    def argmax_width(self) -> int:
        """Logits of each argmax part but the last: the vocabulary split into ``argmax_parts``, rounded up
        to whole bulk-copy units (:data:`LOGITS_PER_UNIT`)."""
        per_part = -(-self.vocab // self.argmax_parts)
        return -(-per_part // LOGITS_PER_UNIT) * LOGITS_PER_UNIT

    @property
    def argmax_last_width(self) -> int:
        """Logits of the last argmax part: what the others leave (at most :attr:`argmax_width`; a
        vocabulary that no equal split of whole units covers, such as Qwen3's 151936 = 8 x 18992, ends in a
        shorter part instead of taking parts of one unit)."""
        return self.vocab - (self.argmax_parts - 1) * self.argmax_width

    @property
    def context_quantum(self) -> int:
        """A compiled context (``max_context``, ``attend``) is a multiple of this many positions:
        :data:`MERGE_MASK_BLOCKS` attention blocks."""
        return self.block * MERGE_MASK_BLOCKS


#: the tiling fields a config chooses from another where they are left out, by the field they follow
#: (:meth:`LlamaConfig.retiled`)
DERIVED_TILING: dict[str, tuple[str, ...]] = {
    "proj_rows": ("qkv_rows", "o_rows", "up_rows", "down_rows", "down_chunks", "o_chunks", "mlp_group"),
    "o_rows": ("o_chunks",), "down_rows": ("down_chunks",), "vocab_rows": ("logit_chunks",), "up_rows": ("mlp_group",)}


#: the attention blocks of a context come in multiples of this: the merge reads one f32 mask entry
#: per block (``decode_tables``' ``merge_mask``), and a row of the mask is whole 16-byte bulk-copy units
MERGE_MASK_BLOCKS = BULK_COPY_ALIGN // 4


def attention_block_for(max_context: int) -> int:
    """The context rows of one attention block when the config leaves them out: the largest the
    ``attn_block`` family takes (:data:`~vdir.families.attention.MAX_BLOCK_ROWS`) that divides
    ``max_context`` in whole :data:`~vdir.families.attention.BLOCK_ROW_MULTIPLE` rows into a
    multiple of :data:`MERGE_MASK_BLOCKS` blocks.

    Larger blocks mean fewer micro-ops per kv head, and the blocks past ``pos`` cost their waits and
    signals although they do nothing: on the 1B shape 128-row blocks beat 64-row ones by 2% over a
    1024-token context and 11% over 4096 (docs/performance.md). A ``ValueError`` where no block fits.
    """
    for rows in range(min(MAX_BLOCK_ROWS, max_context), 0, -1):
        if max_context % rows == 0 and rows % BLOCK_ROW_MULTIPLE == 0 and (max_context // rows) % MERGE_MASK_BLOCKS == 0:
            return rows
    raise BuildError(f"config: max_context = {max_context} has no attention block (a multiple of "
                     f"{BLOCK_ROW_MULTIPLE} rows up to {MAX_BLOCK_ROWS} that divides it into a multiple of "
                     f"{MERGE_MASK_BLOCKS} blocks)")


def weight_shapes(cfg: LlamaConfig) -> dict[str, tuple[int, int]]:
    """The weight buffers of the step and their shapes (all bf16), in argument order."""
    L, Hd, D = cfg.layers, cfg.hidden, cfg.head_dim
    shapes = {
        "emb": (cfg.vocab, Hd),
        "attn_norm": (L, Hd),
        "wq": (L * cfg.heads * D, Hd),
        "wk": (L * cfg.kv_heads * D, Hd),
        "wv": (L * cfg.kv_heads * D, Hd),
        "wo": (L * Hd, cfg.heads * D),
        "mlp_norm": (L, Hd),
        "wg": (L * cfg.intermediate, Hd),
        "wu": (L * cfg.intermediate, Hd),
        "wd": (L * Hd, cfg.intermediate),
        "final_norm": (1, Hd),
    }
    if cfg.qk_norm:
        shapes["q_norm"] = (L, D)
        shapes["k_norm"] = (L, D)
    if not cfg.tied_embeddings:
        shapes["lm_head"] = (cfg.vocab, Hd)
    return shapes


def step_weight_shapes(cfg: LlamaConfig) -> dict[str, tuple[int, int]]:
    """The weight buffers of the step program, in argument order: :func:`weight_shapes`, but with
    ``split_k_mlp`` the down weights transposed (``wdt``, row ``l * intermediate + i`` column ``i`` of layer
    ``l``'s ``wd``; :func:`device_weights` makes it)."""
    shapes = weight_shapes(cfg)
    if not cfg.split_k_mlp:
        return shapes
    return {("wdt" if name == "wd" else name): ((cfg.layers * cfg.intermediate, cfg.hidden) if name == "wd" else shape)
            for name, shape in shapes.items()}


def weight_bytes(cfg: LlamaConfig) -> int:
    """The bytes of the step's weights (:func:`weight_shapes`, bf16)."""
    return sum(rows * cols for rows, cols in weight_shapes(cfg).values()) * _BF16


def rope_in_projection(cfg: LlamaConfig) -> bool:
    """Whether the step rotates q and k in the projection tiles that make them (:func:`head_row_order`).

    When the config asks (``rope_in_tiles``); not with QK-norm, which needs
    a whole head before the rotation; and only with tiles of an even number
    of rows.
    """
    return cfg.rope_in_tiles and not cfg.qk_norm and cfg.qkv_rows % 2 == 0


def head_row_order(cfg: LlamaConfig) -> np.ndarray:
    """Row ``n`` of a q or k head in the step's layout is row ``order[n]`` of the model's.

    With RoPE in the projection, projection tile ``t`` (``R = qkv_rows``
    rows) holds rows ``t*R/2 .. (t+1)*R/2`` of the head's first half, then
    the same rows of its second half: rotate-half over the ``1 x R`` tile
    then pairs exactly the model's ``(x[i], x[i + D/2])``, so the tile is
    rotated where it is made, with no hand-off to a whole-head RoPE on
    another SM. q and k are permuted alike, so ``q . k`` — attention — is
    the model's; the K cache holds its rows in this order. Otherwise the
    identity.
    """
    D, R = cfg.head_dim, cfg.qkv_rows
    if not rope_in_projection(cfg):
        return np.arange(D)
    tile, row = np.divmod(np.arange(D), R)
    half = R // 2
    return np.where(row < half, tile * half + row, D // 2 + tile * half + (row - half))


def device_weights(cfg: LlamaConfig, weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``weights`` (the model's, :func:`weight_shapes`) as the step reads them (:func:`step_weight_shapes`):
    each q and k head's rows in :func:`head_row_order`; with ``split_k_mlp``, ``wd`` as ``wdt``, each layer's
    down weights transposed."""
    out = dict(weights)
    if cfg.split_k_mlp:
        wd = np.asarray(out.pop("wd")).reshape(cfg.layers, cfg.hidden, cfg.intermediate)
        out["wdt"] = np.ascontiguousarray(wd.transpose(0, 2, 1)).reshape(cfg.layers * cfg.intermediate, cfg.hidden)
    order = head_row_order(cfg)
    if np.array_equal(order, np.arange(cfg.head_dim)):
        return out
    for name, heads in (("wq", cfg.heads), ("wk", cfg.kv_heads)):
        rows = np.arange(cfg.layers * heads)[:, None] * cfg.head_dim + order[None, :]
        out[name] = np.asarray(weights[name])[rows.reshape(-1)]
    return out


def decode_tables(cfg: LlamaConfig) -> dict[str, np.ndarray]:
    """The constant tables the step reads at rows that depend on ``pos`` (f32).

    * ``rope_cos``, ``rope_sin``: ``C x D``, row ``p`` for position ``p``, its
      columns in :func:`head_row_order`;
    * ``attn_bias``: ``2C x block``; block ``j`` loads row ``pos - j*block + C``,
      whose column ``c`` is 0 when ``c < pos - j*block`` (a position before
      ``pos``: the cache holds it) and -inf after (rows up to ``C`` belong to
      blocks from ``pos`` on, which do not run);
    * ``merge_mask``: ``C x blocks`` (the attended context's blocks); row
      ``pos`` keeps the states of blocks ``j * block < pos`` (the new
      position's own state is always merged).
    """
    C, B, S = cfg.max_context, cfg.block, cfg.blocks
    cos, sin = rope_tables(C, cfg.head_dim, cfg.rope_theta, cfg.rope_scaling)
    order = head_row_order(cfg)
    cos, sin = np.ascontiguousarray(cos[:, order]), np.ascontiguousarray(sin[:, order])
    r = np.arange(2 * C)[:, None] - C
    attn_bias = np.where(np.arange(B)[None, :] < r, 0.0, -np.inf).astype(np.float32)
    merge_mask = np.where(np.arange(S)[None, :] * B < np.arange(C)[:, None], 0.0, -np.inf).astype(np.float32)
    return {"rope_cos": cos, "rope_sin": sin, "attn_bias": attn_bias, "merge_mask": merge_mask}


def state_shapes(cfg: LlamaConfig) -> dict[str, tuple[tuple[int, int], str]]:
    """The buffers the step keeps from launch to launch: the token, the caches, the attention states."""
    L, C = cfg.layers, cfg.max_context
    kv = cfg.kv_heads * cfg.head_dim
    return {
        "tok": ((1, TOKEN_WIDTH), "i32"),
        "kcache": ((L * C, kv), "bf16"),
        "vcache": ((L * C, kv), "bf16"),
        # partial softmax states, one row per query head of each block; rows of
        # blocks past pos are stale, and the merge masks them
        "states": ((L * cfg.kv_heads * cfg.blocks * cfg.group, cfg.head_dim + STATE_EXTRA), "f32"),
        # the token each step wrote, at its position (bound: launches keep the rows they do not write)
        "history": ((C, TOKEN_WIDTH), "i32"),
    }


def build_decode_step(cfg: LlamaConfig, target: str = "h200") -> ModuleOp:
    """The decode step of ``cfg`` as a program (see the module docstring for its buffers)."""
    b = ProgramBuilder(cfg.name, target=target)
    bufs: dict[str, SSAValue] = {}
    for name, shape in step_weight_shapes(cfg).items():
        bufs[name] = b.buffer(name, shape, "bf16")
    for name, table in decode_tables(cfg).items():
        bufs[name] = b.buffer(name, table.shape, "f32")
    for name, (shape, dtype) in state_shapes(cfg).items():
        bufs[name] = b.buffer(name, shape, dtype)
    L, H, D = cfg.layers, cfg.heads, cfg.head_dim
    # the rows handed between the step's stages: scratch, which the caller never sees (split-K: two rows
    # more, the embedding at row 1, each layer's rows two further on; see _residual)
    bufs["hs"] = b.buffer("hs", (2 * L + (3 if cfg.split_k_mlp else 1), cfg.hidden), "bf16", scratch=True)
    bufs["q"] = b.buffer("q", (L * H, D), "bf16", scratch=True)
    # the new position's k (rotated when the projection tiles rotate) and v rows, row l*KV + kv head
    bufs["knew"] = b.buffer("knew", (L * cfg.kv_heads, D), "bf16", scratch=True)
    bufs["vnew"] = b.buffer("vnew", (L * cfg.kv_heads, D), "bf16", scratch=True)
    bufs["ao"] = b.buffer("ao", (L, H * D), "bf16", scratch=True)  # row l: layer l's heads side by side
    if cfg.split_k_mlp:  # row l + 1: layer l's down projection, in fixed point (row 0 stays zero)
        bufs["acc"] = b.buffer("acc", (L + 1, cfg.hidden), "i64", scratch=True)
    else:
        bufs["act"] = b.buffer("act", (L, cfg.intermediate), "bf16", scratch=True)
    bufs["logits"] = b.buffer("logits", (1, cfg.vocab), "bf16")
    if cfg.logit_chunks > 1:
        bufs["final_x"] = b.buffer("final_x", (1, cfg.hidden), "bf16", scratch=True)
    bufs["best"] = b.buffer("best", (cfg.argmax_parts, 4), "f32", scratch=True)
    pos = b.scalar("pos", 0, cfg.attended)

    tok = b.read(bufs["tok"], 0, 0, name="tok_id")
    row = b.load(bufs["emb"], (tok, 0), (1, cfg.hidden), name="emb_row")
    first = 1 if cfg.split_k_mlp else 0  # the embedding's row of hs
    b.store(row, bufs["hs"], (first, 0), name="embedded")
    if cfg.split_k_mlp:
        clear_rows(b, bufs["acc"], L + 1, cfg.hidden)
    with b.repeat(0, L, name="l") as layer:
        x_row = b.affine(layer, 2, 2 * first, name="x_row")
        mid = b.affine(layer, 2, 2 * first + 1, name="mid")
        x = _residual(b, cfg, bufs, layer, x_row) if cfg.split_k_mlp else \
            b.load(bufs["hs"], (x_row, 0), (1, cfg.hidden), name="x")
        _attention(b, cfg, bufs, layer, pos, x, x_row, mid)
        if cfg.split_k_mlp:
            _split_k_mlp(b, cfg, bufs, layer, mid)
        else:
            mlp = {"h": bufs["hs"], "g": bufs["mlp_norm"], "wg": bufs["wg"], "wu": bufs["wu"], "wd": bufs["wd"],
                   "act": bufs["act"], "out": bufs["hs"]}
            mlp_layer(b, mlp, layer, cfg.hidden, cfg.intermediate, cfg.up_rows, cfg.down_rows, cfg.down_chunks,
                      cfg.eps, in_row=mid, out_row=b.affine(layer, 2, 2, name="next"))
    final_row = 2 * L + 2 * first
    x = _residual(b, cfg, bufs, L, final_row) if cfg.split_k_mlp else \
        b.load(bufs["hs"], (final_row, 0), (1, cfg.hidden), name="xf")
    _logits_and_argmax(b, cfg, bufs, pos, x)
    return b.finish()


def _residual(b: ProgramBuilder, cfg: LlamaConfig, bufs: dict[str, SSAValue], layer: Offset,
              x_row: Offset) -> SSAValue:
    """Split-K: the residual row entering layer ``layer`` (``cfg.layers``: the final norm's), made on each
    SM that needs it and stored to row ``x_row`` of ``hs`` (the output projection's residual reads it there):
    the row before the previous layer's MLP (``hs[x_row - 1]``: the embedding for layer 0) plus that MLP's
    down projection (``acc[layer]``; row 0, for layer 0, stays zero)."""
    before_row = x_row - 1 if isinstance(x_row, int) else b.affine(x_row, 1, -1, name="before_row")
    return fixed_point_residual(b, bufs["acc"], layer, bufs["hs"], before_row, x_row, cfg.hidden)


def _split_k_mlp(b: ProgramBuilder, cfg: LlamaConfig, bufs: dict[str, SSAValue], layer: SSAValue,
                 mid: SSAValue) -> None:
    """Split-K: layer ``layer``'s MLP on row ``mid`` of ``hs``, its down projection added into row
    ``layer + 1`` of ``acc`` (:func:`~vdir.frontend.layers.split_k_mlp_layer`)."""
    h = b.load(bufs["hs"], (mid, 0), (1, cfg.hidden), name="h_mid")
    split_k_mlp_layer(b, {**bufs, "g": bufs["mlp_norm"]}, layer, h, cfg.hidden, cfg.intermediate, cfg.up_rows,
                      cfg.mlp_group, cfg.eps, acc_row=b.affine(layer, 1, 1, name="acc_row"))


def _projection(b: ProgramBuilder, cfg: LlamaConfig, w: SSAValue, xn: SSAValue, layer: SSAValue, heads: int,
                dst: SSAValue, name: str, rope: tuple[SSAValue, SSAValue, SSAValue] | None = None) -> None:
    """``heads`` head projections of ``xn`` (``heads * D`` weight rows of layer ``layer``), tile by tile.

    Head ``h``'s ``D`` outputs go to row ``layer * heads + h`` of ``dst``.
    With ``rope`` (the cos and sin tables and the position), each tile is
    rotated before it is stored (:func:`head_row_order`).
    """
    D, R = cfg.head_dim, cfg.qkv_rows
    with b.repeat(0, heads, name=f"{name}h") as h, b.repeat(0, D // R, name=f"{name}t") as t:
        wrow = b.linear([(layer, heads * D), (h, D), (t, R)], name=f"{name}row")
        wt = b.load(w, (wrow, 0), (R, cfg.hidden), name=f"{name}w")
        y = b.compute("gemv", [wt, xn], name=name)
        col = b.linear([(t, R)], name=f"{name}col")
        if rope is not None:
            cos_table, sin_table, at = rope
            cos = b.load(cos_table, (at, col), (1, R), name=f"{name}cos")
            sin = b.load(sin_table, (at, col), (1, R), name=f"{name}sin")
            y = b.compute("rope", [y, cos, sin], name=f"{name}_rot")
        b.store(y, dst, (b.linear([(layer, heads), (h, 1)], name=f"{name}dst"), col), name=f"{name}_saved")


def _attention(b: ProgramBuilder, cfg: LlamaConfig, bufs: dict[str, SSAValue], layer: SSAValue,
               pos: SSAValue, x: SSAValue, x_row: SSAValue, mid: SSAValue) -> None:
    """Layer ``layer``'s attention on ``x`` (row ``x_row`` of ``hs``): norm, projections, RoPE, cache append,
    blocks, merge, output projection plus the residual into row ``mid``."""
    H, KV, D = cfg.heads, cfg.kv_heads, cfg.head_dim
    hs = bufs["hs"]
    xn = b.compute("rmsnorm", [x, b.load(bufs["attn_norm"], (layer, 0), (1, cfg.hidden), name="an")],
                   params={"eps": cfg.eps}, name="xn_a")
    # q first: the attention blocks wait for its row (and nothing else of this
    # launch), and an SM with a q tile and a k or v tile runs them in this order
    fused = rope_in_projection(cfg)
    rope = (bufs["rope_cos"], bufs["rope_sin"], pos) if fused else None
    _projection(b, cfg, bufs["wq"], xn, layer, H, bufs["q"], "qp", rope)
    _projection(b, cfg, bufs["wk"], xn, layer, KV, bufs["knew"], "kp", rope)
    _projection(b, cfg, bufs["wv"], xn, layer, KV, bufs["vnew"], "vp")
    tables = None
    if not fused:
        tables = (b.load(bufs["rope_cos"], (pos, 0), (1, D), name="cos"),
                  b.load(bufs["rope_sin"], (pos, 0), (1, D), name="sin"))
    _attend(b, cfg, bufs, layer, pos, tables)
    # the output projection: a gemv over the heads' outputs (o_chunks chunks of the row), plus the residual
    heads = load_chunks(b, bufs["ao"], layer, H * D, cfg.o_chunks, "ao")
    R = cfg.o_rows
    with b.repeat(0, tile_count(cfg.hidden, R, "hidden"), name="r") as r:
        orow = b.linear([(layer, cfg.hidden), (r, R)], name="orow")
        col = b.affine(r, R, name="ocol")
        d = chunked_gemv(b, bufs["wo"], orow, R, heads, "wo", "op", "od")
        res = b.load(hs, (x_row, col), (1, R), name="ores")
        b.store(b.compute("add", [d, res], name="oa"), hs, (mid, col), name="oa_saved")


def _attend(b: ProgramBuilder, cfg: LlamaConfig, bufs: dict[str, SSAValue], layer: SSAValue, pos: SSAValue,
            tables: tuple[SSAValue, SSAValue] | None) -> None:
    """Attention blocks over the cached positions, the new position's state, their merges into row ``layer``
    of ``ao``, and the new K and V rows appended to the caches at ``pos``.

    With ``tables`` (position ``pos``'s cos and sin), q's and k's heads are
    rotated here, whole (after QK-norm), rather than in their projection tiles.
    """
    KV, D, G, C, B = cfg.kv_heads, cfg.head_dim, cfg.group, cfg.max_context, cfg.block
    scale = 1.0 / math.sqrt(D)
    # every kv head's blocks before any merge: a merge waits for its head's
    # blocks on other SMs, and an engine's queue is in order, so a merge
    # placed between two heads' blocks would hold the second head's back
    first_states = []
    for kvh in range(KV):
        q = _query_heads(b, cfg, bufs, layer, kvh, tables, "")
        first_state = b.linear([(layer, KV * cfg.blocks * G)], kvh * cfg.blocks * G, name=f"st{kvh}")
        first_states.append(first_state)
        for j in range(cfg.blocks):
            runs = (pos, ">=", j * B + 1)  # the block holds a cached position, one before pos
            krow = b.affine(layer, C, j * B, name=f"kb{kvh}_{j}")
            vt = b.load(bufs["vcache"], (krow, kvh * D), (B, D), name=f"vt{kvh}_{j}", when=runs)
            kt = b.load(bufs["kcache"], (krow, kvh * D), (B, D), name=f"kt{kvh}_{j}", when=runs)
            bias = b.load(bufs["attn_bias"], (b.affine(pos, 1, C - j * B, name=f"br{kvh}_{j}"), 0), (1, B),
                          name=f"bias{kvh}_{j}", when=runs)
            st = b.compute("attn_block", [q, kt, vt, bias], params={"scale": scale}, name=f"s{kvh}_{j}", when=runs)
            b.store(st, bufs["states"], (b.affine(first_state, 1, j * G, name=f"sr{kvh}_{j}"), 0),
                    name=f"s{kvh}_{j}_saved", when=runs)
    crow = b.linear([(layer, C), (pos, 1)], name="crow")
    for kvh, first_state in enumerate(first_states):
        # the new position on the merge's SM: its state from the new rows, no detour through the cache
        q = _query_heads(b, cfg, bufs, layer, kvh, tables, "m")
        new_row = b.affine(layer, KV, kvh, name=f"nr{kvh}")
        k = _as_attended(b, cfg, bufs, b.load(bufs["knew"], (new_row, 0), (1, D), name=f"k{kvh}"), "k_norm", layer,
                         tables, f"k{kvh}")
        v = b.load(bufs["vnew"], (new_row, 0), (1, D), name=f"v{kvh}")
        own = b.compute("attn_self", [q, k, v], params={"scale": scale}, name=f"own{kvh}")
        states = b.load(bufs["states"], (first_state, 0), (cfg.blocks * G, D + STATE_EXTRA), name=f"sts{kvh}")
        mask = b.load(bufs["merge_mask"], (pos, 0), (1, cfg.blocks), name=f"mask{kvh}")
        o = b.compute("attn_merge", [states, mask, own], params={"groups": G, "flat": 1}, name=f"o{kvh}")
        b.store(o, bufs["ao"], (layer, kvh * G * D), name=f"o{kvh}_saved")
        # the append, after the blocks in program order: it waits for their reads of the cache
        b.store(k, bufs["kcache"], (crow, kvh * D), name=f"k{kvh}_cached")
        b.store(v, bufs["vcache"], (crow, kvh * D), name=f"v{kvh}_cached")


def _query_heads(b: ProgramBuilder, cfg: LlamaConfig, bufs: dict[str, SSAValue], layer: SSAValue, kvh: int,
                 tables: tuple[SSAValue, SSAValue] | None, tag: str) -> SSAValue:
    """The ``G`` query heads of kv head ``kvh`` as attention reads them (:func:`_as_attended`)."""
    G, D = cfg.group, cfg.head_dim
    q = b.load(bufs["q"], (b.affine(layer, cfg.heads, kvh * G, name=f"q{tag}r{kvh}"), 0), (G, D),
               name=f"q{tag}{kvh}")
    return _as_attended(b, cfg, bufs, q, "q_norm", layer, tables, f"q{tag}{kvh}")


def _as_attended(b: ProgramBuilder, cfg: LlamaConfig, bufs: dict[str, SSAValue], heads: SSAValue, norm: str,
                 layer: SSAValue, tables: tuple[SSAValue, SSAValue] | None, name: str) -> SSAValue:
    """``heads`` (one per row) as attention reads them: QK-normed by row ``layer`` of ``bufs[norm]`` where the
    model has QK-norm (Qwen3), then rotated by ``tables`` (position ``pos``'s cos and sin) where given."""
    if cfg.qk_norm:
        weight = b.load(bufs[norm], (layer, 0), (1, cfg.head_dim), name=f"{name}n")
        heads = b.compute("rmsnorm_rows", [heads, weight], params={"eps": cfg.eps}, name=f"{name}q")
    if tables is not None:
        heads = b.compute("rope", [heads, *tables], name=f"{name}_rot")
    return heads


def _logits_and_argmax(b: ProgramBuilder, cfg: LlamaConfig, bufs: dict[str, SSAValue], pos: SSAValue,
                       x: SSAValue) -> None:
    """The final norm of ``x``, the logits slice by slice, the greedy token in two argmax phases, written back.

    The slices only multiply (a weight tile of the gemv's best shape each);
    the argmax then reads the stored logits in ``argmax_parts`` parts of
    :attr:`~LlamaConfig.argmax_width` (the last possibly shorter), one
    ``argmax_partial`` each, and ``argmax_final`` picks among them.
    """
    xn = b.compute("rmsnorm", [x, b.load(bufs["final_norm"], (0, 0), (1, cfg.hidden), name="fn")],
                   params={"eps": cfg.eps}, name="xn_f")
    head = bufs["emb"] if cfg.tied_embeddings else bufs["lm_head"]
    R = cfg.vocab_rows
    xs: list[SSAValue] = []
    if cfg.logit_chunks > 1:  # the normed row in chunks, through a scratch row
        b.store(xn, bufs["final_x"], (0, 0), name="xn_f_saved")
        xs = load_chunks(b, bufs["final_x"], 0, cfg.hidden, cfg.logit_chunks, "xc")
    with b.repeat(0, cfg.vocab // R, name="vs") as s:
        row = b.affine(s, R, name="vrow")
        if cfg.logit_chunks > 1:
            lg = chunked_gemv(b, head, row, R, xs, "lw", "lp", "lg")
        else:
            lg = b.compute("gemv", [b.load(head, (row, 0), (R, cfg.hidden), name="lw"), xn], name="lg")
        b.store(lg, bufs["logits"], (0, row), name="lg_saved")
    width, last = cfg.argmax_width, cfg.argmax_last_width
    whole = cfg.argmax_parts if last == width else cfg.argmax_parts - 1

    def argmax_part(part: SSAValue | int, col: SSAValue | int, logits: int, tag: str) -> None:
        """Part ``part``'s argmax from 0 (``argmax_final`` adds ``part * width``) into row ``part`` of ``best``."""
        best = b.compute("argmax_partial", [b.load(bufs["logits"], (0, col), (1, logits), name=f"lgp{tag}")],
                         params={"base": 0}, name=f"best{tag}")
        b.store(best, bufs["best"], (part, 0), name=f"best{tag}_saved")

    with b.repeat(0, whole, name="ap") as part:
        argmax_part(part, b.affine(part, width, name="apcol"), width, "")
    if whole < cfg.argmax_parts:  # the shorter last part, at whole * width as argmax_final reckons
        argmax_part(whole, whole * width, last, "_last")
    partials = b.load(bufs["best"], (0, 0), (cfg.argmax_parts, 4), name="bests")
    token = b.compute("argmax_final", [partials], params={"stride": width}, name="next_tok")
    b.store(token, bufs["tok"], (0, 0), name="next_tok_saved")
    b.store(token, bufs["history"], (pos, 0), name="next_tok_logged")


__all__ = ["ARGMAX_PART_LOGITS", "AUTO_CHUNKS", "LOGITS_PER_UNIT", "LlamaConfig", "build_decode_step", "decode_tables", "state_shapes", "weight_shapes"]
