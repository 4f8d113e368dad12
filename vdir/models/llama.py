"""Greedy decoding of a Llama-family model with one vdir launch per token.

:class:`LlamaDecoder` compiles :func:`vdir.frontend.llama.build_decode_step`
once, uploads the weights and the constant tables once (resident buffers),
and runs one launch per token. The token id never leaves the device between
steps: each launch reads ``tok`` and writes the next one there, and appends
it to ``history`` at its position; a prompt token is written into ``tok``
before its step. The host reads the history once, at the end (or after each
step when asked).

:func:`load_checkpoint` reads a Hugging-Face style directory
(``config.json`` + ``model.safetensors``, the Llama or Qwen3 tensor names)
into a :class:`~vdir.frontend.llama.LlamaConfig` and the step's weights.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np
from ml_dtypes import bfloat16

from vdir.diagnostics import VdirError
from vdir.families import DTYPES
from vdir.frontend.llama import (
    AUTO_CHUNKS,
    LlamaConfig,
    build_decode_step,
    decode_tables,
    device_weights,
    state_shapes,
    step_weight_shapes,
    weight_shapes,
)
from vdir.frontend.rope import Llama3Scaling
from vdir.isa import EncodedProgram


def _is_int(value: object) -> bool:
    """Whether ``value`` is an integer (numpy's too), not a bool or a float."""
    return isinstance(value, Integral) and not isinstance(value, bool)


class ModelError(VdirError, ValueError):
    """A model that cannot be built or run as asked: a bad config, checkpoint, prompt or length."""


#: the shortest context :func:`auto_context_buckets` compiles a step for. Below it a shorter step gains
#: little: on the H200 the 1B step compiled for 1024 positions runs a 512-position bucket 0.1% faster,
#: and the simulator's clock puts the step compiled for 2048 within 0.7% of the one for 1024, where the
#: one for 4096 is 5.7% slower (docs/performance.md, round 38)
AUTO_BUCKET_MIN_CONTEXT = 2048

#: what ``context_buckets`` takes for :func:`auto_context_buckets`' choice
AUTO_BUCKETS = "auto"
#: how a command line asks for the full step alone (``context_buckets=()``)
NO_BUCKETS = "none"


#: named configs for ``--random``: small ones for the simulator, and the shapes the benches measure
NAMED_CONFIGS: dict[str, LlamaConfig] = {
    "tiny": LlamaConfig(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, intermediate=512, vocab=512,
                        max_context=64, block=16, name="tiny"),
    "tiny-qwen3": LlamaConfig(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, intermediate=512, vocab=512,
                              max_context=64, block=16, qk_norm=True, tied_embeddings=True, name="tiny_qwen3"),
    # the Llama-3.2-1B shape (for the GPU: its weights are 2.5 GB)
    "llama-1b": LlamaConfig(layers=16, hidden=2048, heads=32, kv_heads=8, head_dim=64, intermediate=8192,
                            vocab=128256, rope_theta=500000.0, rope_scaling=Llama3Scaling(32.0, 1.0, 4.0, 8192),
                            tied_embeddings=True, max_context=1024, name="llama_1b"),
    # the Llama-3.2-3B shape (6.4 GB of weights); 16-row projection tiles of 96 KB (frontend.llama.PROJECTION_ROWS)
    "llama-3b": LlamaConfig(layers=28, hidden=3072, heads=24, kv_heads=8, head_dim=128, intermediate=8192,
                            vocab=128256, rope_theta=500000.0, rope_scaling=Llama3Scaling(32.0, 1.0, 4.0, 8192),
                            tied_embeddings=True, max_context=1024, name="llama_3b"),
    # the Llama-3.1-8B shape; 8-row projection tiles keep a 4096-wide weight tile at 64 KB, the tiling its
    # H200 figures were measured with (16 rows ran level with it on an H100); its step expands to about
    # 733k micro-ops: beyond the default --max-micro-ops
    "llama-8b": LlamaConfig(layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, intermediate=14336,
                            vocab=128256, rope_theta=500000.0, rope_scaling=Llama3Scaling(8.0, 1.0, 4.0, 8192),
                            max_context=1024, proj_rows=8, name="llama_8b"),
    # the Qwen3-0.6B, 1.7B and 4B shapes (QK-norm, tied embeddings, a 151936-token vocabulary; 1.2, 3.4 and
    # 8.0 GB)
    "qwen3-0.6b": LlamaConfig(layers=28, hidden=1024, heads=16, kv_heads=8, head_dim=128, intermediate=3072,
                              vocab=151936, rope_theta=1000000.0, eps=1e-6, tied_embeddings=True, qk_norm=True,
                              max_context=1024, name="qwen3_0_6b"),
    "qwen3-1.7b": LlamaConfig(layers=28, hidden=2048, heads=16, kv_heads=8, head_dim=128, intermediate=6144,
                              vocab=151936, rope_theta=1000000.0, eps=1e-6, tied_embeddings=True, qk_norm=True,
                              max_context=1024, name="qwen3_1_7b"),
    "qwen3-4b": LlamaConfig(layers=36, hidden=2560, heads=32, kv_heads=8, head_dim=128, intermediate=9728,
                            vocab=151936, rope_theta=1000000.0, eps=1e-6, tied_embeddings=True, qk_norm=True,
                            max_context=1024, name="qwen3_4b"),
}


@dataclass
class Generation:
    """What :meth:`LlamaDecoder.generate` returns: the generated ids and the time they took."""

    tokens: list[int]
    prompt: list[int]
    seconds: float = 0.0  # every step, enqueued back to back and waited for at the end
    steps: int = 0

    @property
    def ms_per_token(self) -> float:
        """Wall time per step, in ms."""
        return 1000.0 * self.seconds / self.steps if self.steps else 0.0

    def to_json(self) -> dict[str, Any]:
        """The JSON form ``vdir-generate --json`` writes."""
        ms = self.ms_per_token
        return {"prompt": self.prompt, "tokens": self.tokens, "ms_per_token": ms,
                "tokens_per_second": 1000.0 / ms if ms else None}


def _pipeline_for_device(pipeline: Any, backend: str) -> Any:
    """``pipeline`` (pass pipeline options in any form ``vdir.compile`` takes) for a step compiled to run
    on ``backend``: with the target of its device where they name none and a target describes the
    device (:meth:`~vdir.device_runtime.platform.Platform.device_target`), else as given."""
    from vdir.device_runtime import platform_class
    from vdir.transforms.pipeline_options import PipelineOptions

    options = PipelineOptions.coerce(pipeline)
    target = None if options.target else platform_class(backend).device_target()
    return pipeline if target is None else options.with_overrides(target=target)


class LlamaDecoder:
    """One compiled decode step with its weights resident; :meth:`generate` runs greedy decoding.

    ``weights`` are host arrays (:func:`vdir.testing.llama.random_weights`,
    :func:`load_checkpoint`) named as :func:`vdir.frontend.llama.weight_shapes` says;
    ``options`` are the lowering options (``"trace=1"`` records a timeline),
    ``pipeline`` the pass pipeline's (``"flag-words=4096"``; see ``vdir.compile``);
    ``program``, the step already compiled (then it takes no ``pipeline``). A step compiled here is
    compiled for the target of the backend's device where ``pipeline`` names no target and a target
    describes the device (:meth:`~vdir.device_runtime.platform.Platform.device_target`: ``h100`` on an
    H100, whose stream holds it then gets; otherwise the step's own, ``h200``).

    ``context_buckets``: shorter contexts (each a multiple of four attention
    blocks, below the step's) to compile a step for as well; by default
    (``"auto"``) those :func:`auto_context_buckets` picks, none below 2048
    positions; ``()`` for the full step alone. A step covering ``attend``
    positions has no blocks past them, which the full step runs as skipped
    micro-ops that still wait and signal (on the 1B shape on the H200, the
    step compiled for 4096 positions takes 0.955 ms a token at the early
    positions, and 0.895 with a shorter step for them); each position runs
    the shortest step that covers it. The steps share the weights, the
    caches and the history (bound, not copied), so the tokens are the same
    as with the full step alone. ``program`` is the full step's; the
    buckets' are compiled here with ``pipeline``.
    """

    def __init__(self, cfg: LlamaConfig, weights: dict[str, np.ndarray], backend: str = "sim",
                 options: Any = None, program: EncodedProgram | None = None, pipeline: Any = None,
                 context_buckets: Sequence[int] | str = AUTO_BUCKETS, **launch_options: Any):
        import vdir

        _check_weights(cfg, weights)
        self.cfg = cfg
        buckets = bucket_configs(cfg, context_buckets)
        step = build_decode_step(cfg) if program is None else program
        if program is None or buckets:  # a step is compiled here
            pipeline = _pipeline_for_device(pipeline, backend)
        # a compiled program takes no pipeline options (vdir.compile refuses them); with buckets they are
        # the buckets' own
        self.exe = vdir.compile(step, backend=backend, options=options,
                                pipeline=None if program is not None and buckets else pipeline, **launch_options)
        self._stream = self.exe.platform.stream_handle(None)  # the executable's own: launches queue on it
        #: (config, executable) of the shorter steps, shortest first; the full step is ``exe``
        self._shorter: list[tuple[LlamaConfig, Any]] = []
        #: the executable the last step ran: where its logits are
        self._last = self.exe
        try:
            for name, array in {**device_weights(cfg, weights), **decode_tables(cfg)}.items():
                self.exe.upload(name, array)
            for bucket in buckets:
                exe = vdir.compile(build_decode_step(bucket), backend=backend, options=options, pipeline=pipeline,
                                   **launch_options)
                self._shorter.append((bucket, exe))
                for name in shared_buffers(cfg):
                    exe.bind_buffer(name, self.exe.buffer(name))
                exe.upload("merge_mask", decode_tables(bucket)["merge_mask"])
            self.reset()
        except BaseException:
            self.close()
            raise

    def reset(self) -> None:
        """Start a new sequence: zero the caches, the attention states and the history."""
        for name, (shape, dtype) in state_shapes(self.cfg).items():
            self.exe.upload(name, np.zeros(shape, DTYPES[dtype]))
        for bucket, exe in self._shorter:  # the rest of their state is the full step's, bound
            shape, dtype = state_shapes(bucket)["states"]
            exe.upload("states", np.zeros(shape, DTYPES[dtype]))

    @property
    def steps(self) -> list[tuple[int, Any]]:
        """(positions attended, executable) of every compiled step, shortest first: the context buckets'
        steps, then the full one (``exe``)."""
        return [*((bucket.attended, exe) for bucket, exe in self._shorter), (self.cfg.attended, self.exe)]

    def _synchronize(self) -> None:
        """Wait for the queued steps; a device error of any of them raises here."""
        for _, exe in self._shorter:
            exe.synchronize()
        self.exe.synchronize()

    def step_for(self, pos: int) -> Any:
        """The executable of the shortest step that covers position ``pos`` (the one :meth:`step` runs)."""
        return next((exe for bucket, exe in self._shorter if pos < bucket.attended), self.exe)

    def step(self, pos: int, token: int | None = None) -> None:
        """Enqueue the step at position ``pos``; ``token`` overrides the id on the device (a prompt token)."""
        if not _is_int(pos) or (token is not None and not _is_int(token)):
            raise ModelError(f"step: the position and token id are integers, got {pos!r} and {token!r}")
        if not 0 <= pos < self.cfg.attended:
            raise ModelError(f"position {pos} is past the compiled context of {self.cfg.attended} tokens")
        if token is not None:
            if not 0 <= token < self.cfg.vocab:
                raise ModelError(f"token id {token} is outside the vocabulary of {self.cfg.vocab}")
            self.exe.buffer("tok").write_words([token], stream=self._stream)
        self._last = self.step_for(pos)
        self._last.launch(pos=pos, stream=self._stream)

    def history(self, count: int) -> list[int]:
        """The first ``count`` tokens written to the history (waits for the launches)."""
        if not _is_int(count) or count < 0:
            raise ModelError(f"history: a count of tokens, 0 or more, not {count!r}")
        self._synchronize()
        return [int(t) for t in self.exe.buffer("history").numpy()[:count, 0]]

    def logits(self) -> np.ndarray:
        """The last step's logits (1 x vocab, bf16; waits for the launches)."""
        self._synchronize()
        return self._last.buffer("logits").numpy()

    def generate(self, prompt: Sequence[int], tokens: int,
                 progress: Callable[[Iterable[int]], Iterable[int]] | None = None) -> Generation:
        """Greedy decoding: the prompt one token per step, then ``tokens`` new ones; returns them.

        ``progress`` wraps the step loop (e.g. ``tqdm.tqdm``).
        """
        if isinstance(prompt, str | bytes) or not isinstance(prompt, Sequence | np.ndarray) or (
                isinstance(prompt, np.ndarray) and prompt.ndim != 1):
            raise ModelError(f"the prompt is a sequence of token ids, not {type(prompt).__name__}"
                             + (f" of {prompt.ndim} dimensions" if isinstance(prompt, np.ndarray) else ""))
        if not all(_is_int(t) for t in prompt):
            raise ModelError(f"the prompt's token ids are integers, got {next(t for t in prompt if not _is_int(t))!r}")
        prompt = [int(t) for t in prompt]
        if not prompt:
            raise ModelError("the prompt needs at least one token")
        if not _is_int(tokens) or tokens < 1:
            raise ModelError(f"tokens: how many to generate, at least 1, not {tokens!r}")
        if progress is not None and not callable(progress):
            raise ModelError(f"progress wraps the step loop (e.g. tqdm.tqdm): a callable, not {progress!r}")
        total = len(prompt) + tokens - 1
        if total > self.cfg.attended:
            raise ModelError(f"{len(prompt)} prompt tokens and {tokens} new ones need {total} positions; "
                             f"the step was compiled for {self.cfg.attended}")
        self.reset()
        steps = range(total)
        t0 = time.perf_counter()
        for pos in progress(steps) if progress is not None else steps:
            self.step(pos, prompt[pos] if pos < len(prompt) else None)
        generated = self.history(total)[len(prompt) - 1 :]  # waits for the queued launches
        return Generation(generated, prompt, time.perf_counter() - t0, total)

    def close(self) -> None:
        """Release the executables (the shorter steps first: they hold the full step's buffers)."""
        for _, exe in self._shorter:
            exe.close()
        self.exe.close()

    def __enter__(self) -> LlamaDecoder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def auto_context_buckets(cfg: LlamaConfig) -> list[int]:
    """The context buckets :class:`LlamaDecoder` compiles by default: the step's context halved, and
    halved again, while it stays at least :data:`AUTO_BUCKET_MIN_CONTEXT` positions and a whole number
    of four attention blocks (4096 -> [2048]; 8192 -> [2048, 4096]; 1024 -> none). A position past
    2048 then runs a step that attends fewer than twice the positions it needs; each bucket is one more
    compile of the step."""
    quantum = cfg.context_quantum
    buckets, attend = [], cfg.attended // 2
    while attend >= AUTO_BUCKET_MIN_CONTEXT and attend % quantum == 0:
        buckets.append(attend)
        attend //= 2
    return sorted(buckets)


def bucket_configs(cfg: LlamaConfig, context_buckets: Sequence[int] | str) -> list[LlamaConfig]:
    """The configs of the steps for ``context_buckets`` (:class:`LlamaDecoder`), shortest first: ``cfg``
    attending that many positions; ``"auto"``, those of :func:`auto_context_buckets`. A
    :class:`ModelError` naming the bucket where one is not a whole number of positions below the step's
    context in multiples of four attention blocks."""
    if context_buckets == AUTO_BUCKETS:
        context_buckets = auto_context_buckets(cfg)
    quantum = cfg.context_quantum
    if isinstance(context_buckets, (str, bytes)) or not isinstance(context_buckets, Iterable):
        raise ModelError(f"context buckets: {AUTO_BUCKETS!r} or a list of context lengths, got {context_buckets!r}")
    for attend in context_buckets:
        if isinstance(attend, bool) or not isinstance(attend, int) or not 0 < attend < cfg.attended \
                or attend % quantum:
            raise ModelError(f"context bucket {attend!r}: a bucket is a context below the step's "
                             f"{cfg.attended} positions in multiples of {quantum} (four attention blocks of "
                             f"{cfg.block})")
    return [replace(cfg, attend=attend) for attend in sorted(set(context_buckets))]


def parse_context_buckets(text: str) -> list[int] | str:
    """A command line's context buckets: ``auto`` (:data:`AUTO_BUCKETS`), ``none`` (no bucket) or
    comma-separated context lengths (``1024,2048``; :func:`bucket_configs` checks them against a config).
    A :class:`ModelError` saying what it takes for anything else."""
    word = text.strip()
    if word in (AUTO_BUCKETS, NO_BUCKETS):
        return AUTO_BUCKETS if word == AUTO_BUCKETS else []
    try:
        buckets = [int(t, 0) for t in text.split(",") if t.strip()]
    except ValueError:
        buckets = []
    if not buckets:
        raise ModelError(f"expected {AUTO_BUCKETS}, {NO_BUCKETS} or comma-separated context lengths")
    return buckets


def shared_buffers(cfg: LlamaConfig) -> list[str]:
    """The buffers a shorter step shares with the full one: the weights, the tables of every position,
    and the state kept from launch to launch but the attention states (whose rows follow the blocks)."""
    states = [name for name in state_shapes(cfg) if name != "states"]
    return [*step_weight_shapes(cfg), "rope_cos", "rope_sin", "attn_bias", *states]


def _check_weights(cfg: LlamaConfig, weights: dict[str, np.ndarray]) -> None:
    shapes = weight_shapes(cfg)
    missing = sorted(set(shapes) - set(weights))
    if missing:
        raise ModelError(f"missing weight(s): {', '.join(missing)}")
    for name, shape in shapes.items():
        got = tuple(np.shape(weights[name]))
        if got != shape:
            raise ModelError(f"weight '{name}': expected shape {shape}, got {got}")


# ---------------------------------------------------------------------------
# Hugging-Face checkpoints
# ---------------------------------------------------------------------------

#: our weight name -> the per-layer Hugging-Face tensor (``{}`` is the layer index)
_LAYER_TENSORS = {
    "attn_norm": "model.layers.{}.input_layernorm.weight",
    "wq": "model.layers.{}.self_attn.q_proj.weight",
    "wk": "model.layers.{}.self_attn.k_proj.weight",
    "wv": "model.layers.{}.self_attn.v_proj.weight",
    "wo": "model.layers.{}.self_attn.o_proj.weight",
    "mlp_norm": "model.layers.{}.post_attention_layernorm.weight",
    "wg": "model.layers.{}.mlp.gate_proj.weight",
    "wu": "model.layers.{}.mlp.up_proj.weight",
    "wd": "model.layers.{}.mlp.down_proj.weight",
    "q_norm": "model.layers.{}.self_attn.q_norm.weight",
    "k_norm": "model.layers.{}.self_attn.k_norm.weight",
}
_GLOBAL_TENSORS = {"emb": "model.embed_tokens.weight", "final_norm": "model.norm.weight", "lm_head": "lm_head.weight"}


#: the most each size setting of a ``config.json`` may be, so that a mistyped or hostile size is one
#: line naming it rather than minutes of tiling or a host-memory error: about 8 times the largest
#: published shapes (Llama-3.1-405B: hidden 16384, intermediate 53248, 126 layers, 128 heads; Gemma 3:
#: a 262144-token vocabulary, head dim 256; Llama 3.1: a 131072-position context), and at least 8
#: times those of :data:`NAMED_CONFIGS` (at most hidden 4096, intermediate 14336, vocabulary 151936,
#: 36 layers, 32 heads, head dim 128)
CONFIG_SIZE_LIMITS = {
    "hidden_size": 1 << 17,
    "intermediate_size": 1 << 19,
    "vocab_size": 1 << 21,
    "num_hidden_layers": 1 << 10,
    "num_attention_heads": 1 << 10,
    "num_key_value_heads": 1 << 10,
    "head_dim": 1 << 11,
    "rope_scaling.original_max_position_embeddings": 1 << 20,
}
#: the characters of a setting's value a message shows
_SHOWN_CHARS = 40


def config_from_json(data: Any, max_context: int, *, source: str = "config.json", **tiling: Any) -> LlamaConfig:
    """A :class:`LlamaConfig` from a Hugging-Face ``config.json`` (Llama or Qwen3); errors name ``source``.

    Each setting must be of its JSON type (a size a JSON integer within :data:`CONFIG_SIZE_LIMITS`, a
    float a finite number, a flag ``true`` or ``false``, ``model_type`` a string); an optional setting
    given as ``null`` is left out.
    """
    if not isinstance(data, dict):
        raise ModelError(f"{source}: expected a JSON object of the model's settings, got a {type(data).__name__}")
    heads = _size(data, "num_attention_heads", source)
    hidden = _size(data, "hidden_size", source)
    if heads < 1 or hidden < 1:
        raise ModelError(f"{source}: hidden_size ({hidden}) and num_attention_heads ({heads}) must be positive")
    head_dim = _size(data, "head_dim", source, default=0)  # 0 (or null): the hidden size split into heads
    if not head_dim and hidden % heads:
        raise ModelError(f"{source}: hidden_size {hidden} is not a multiple of num_attention_heads {heads} "
                         "(and no head_dim is given)")
    try:
        llama3 = _rope_scaling(data.get("rope_scaling") or None, source)
        return LlamaConfig(
            layers=_size(data, "num_hidden_layers", source), hidden=hidden, heads=heads,
            kv_heads=_size(data, "num_key_value_heads", source, default=heads),
            head_dim=head_dim or hidden // heads, intermediate=_size(data, "intermediate_size", source),
            vocab=_size(data, "vocab_size", source), rope_theta=_number(data, "rope_theta", source, 10000.0),
            rope_scaling=llama3,
            eps=_number(data, "rms_norm_eps", source, 1e-5),
            tied_embeddings=_flag(data, "tie_word_embeddings", source, False),
            qk_norm=_text(data, "model_type", source, "").startswith("qwen3"), max_context=max_context, **tiling,
        )
    except (TypeError, ValueError) as e:  # a shape the step cannot take (head_dim 96, heads not over kv_heads, ...)
        if isinstance(e, ModelError):
            raise
        raise ModelError(f"{source}: {e}") from None


def _rope_scaling(scaling: Any, source: str) -> Llama3Scaling | None:
    """The ``rope_scaling`` object of a config (None: none); only Llama 3's is taken."""
    if scaling is None:
        return None
    if not isinstance(scaling, dict):
        raise ModelError(f"{source}: rope_scaling is a {type(scaling).__name__}, not an object")
    if scaling.get("rope_type", scaling.get("type")) != "llama3":
        raise ModelError(f"{source}: rope_scaling type {scaling.get('rope_type')!r} is not supported "
                         "(only 'llama3')")
    factor, low, high = (_number(scaling, key, source, prefix="rope_scaling.")
                         for key in ("factor", "low_freq_factor", "high_freq_factor"))
    return Llama3Scaling(factor, low, high,
                         _size(scaling, "original_max_position_embeddings", source, prefix="rope_scaling."))


#: marks a setting that a config must give (no default)
_REQUIRED: Any = object()


def _setting(data: dict[str, Any], key: str, source: str, default: Any, prefix: str) -> Any:
    """The value of setting ``key``: ``default`` where it is absent or null, a :class:`ModelError`
    naming it where it is required (``default`` :data:`_REQUIRED`)."""
    value = data.get(key)
    if value is None:
        if default is _REQUIRED:
            raise ModelError(f"{source}: missing key '{prefix}{key}'")
        return default
    return value


def _refused(source: str, setting: str, expected: str, value: Any) -> ModelError:
    """The error of a setting whose value is not of its type: names the setting and what was found,
    as JSON (shortened)."""
    if isinstance(value, (dict, list)):
        found = "an object" if isinstance(value, dict) else "an array"
    else:
        found = json.dumps(value)
        found = found if len(found) <= _SHOWN_CHARS else found[: _SHOWN_CHARS - 3] + "..."
    return ModelError(f"{source}: {setting} must be {expected}, got {found}")


def _size(data: dict[str, Any], key: str, source: str, default: Any = _REQUIRED, prefix: str = "") -> int:
    """A size setting: a JSON integer (not a float, not true or false) within its
    :data:`CONFIG_SIZE_LIMITS`."""
    value = _setting(data, key, source, default, prefix)
    setting = prefix + key
    if isinstance(value, bool) or not isinstance(value, int):
        raise _refused(source, setting, "an integer", value)
    if value < 0:
        raise ModelError(f"{source}: {setting} must be a positive integer, got {_shown(value)}")
    limit = CONFIG_SIZE_LIMITS[setting]
    if value > limit:
        raise ModelError(f"{source}: {setting} {_shown(value)} is beyond {limit:,}, the most this reader "
                         "takes (about 8 times the largest published model's)")
    return value


def _shown(value: int) -> str:
    """An integer as a message shows it: at most :data:`_SHOWN_CHARS` digits."""
    text = str(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:12]}... ({len(text)} digits)"


def _number(data: dict[str, Any], key: str, source: str, default: Any = _REQUIRED, prefix: str = "") -> float:
    """A float setting: a finite JSON number (not true or false)."""
    value = _setting(data, key, source, default, prefix)
    try:
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    except OverflowError:  # an integer beyond the floats
        number = math.inf
    if not math.isfinite(number):
        raise _refused(source, prefix + key, "a finite number", value)
    return number


def _flag(data: dict[str, Any], key: str, source: str, default: bool) -> bool:
    """A flag setting: JSON ``true`` or ``false`` (not ``"false"``, not 0)."""
    value = _setting(data, key, source, default, "")
    if not isinstance(value, bool):
        raise _refused(source, key, "true or false", value)
    return value


def _text(data: dict[str, Any], key: str, source: str, default: str) -> str:
    """A string setting: a JSON string."""
    value = _setting(data, key, source, default, "")
    if not isinstance(value, str):
        raise _refused(source, key, "a string", value)
    return value


def read_config_file(path: Path) -> Any:
    """The JSON of a config file; a :class:`ModelError` naming ``path`` where it cannot be read or
    is not JSON (a syntax error, arrays nested beyond Python's recursion, an integer of more digits
    than Python converts)."""
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as e:
        raise ModelError(f"{path}: {e}") from None
    except RecursionError:
        raise ModelError(f"{path}: arrays or objects nested too deeply to read") from None
    except ValueError as e:  # json.JSONDecodeError, or an integer too long to convert
        raise ModelError(f"{path}: {str(e).split('; use sys.')[0]}") from None


def load_checkpoint(directory: str | Path, max_context: int, **tiling: Any) -> tuple[LlamaConfig, dict[str, np.ndarray]]:
    """The config and the stacked bf16 weights of a Hugging-Face style checkpoint directory."""
    from safetensors.numpy import load_file

    root = Path(directory)
    config, files = checkpoint_files(root)
    cfg = config_from_json(read_config_file(config), max_context, source=str(config), **tiling)
    if not files:
        raise ModelError(f"{root}: no *.safetensors file")
    tensors: dict[str, np.ndarray] = {}
    for path in files:
        try:
            tensors.update(load_file(str(path)))
        except Exception as e:  # the reader's own errors: a truncated or foreign file
            raise ModelError(f"{path}: cannot read it as safetensors ({e})") from None
    return cfg, stack_weights(cfg, tensors, consume=True)


def checkpoint_files(directory: str | Path) -> tuple[Path, list[Path]]:
    """The files :func:`load_checkpoint` reads from a checkpoint folder: its ``config.json`` and its
    ``*.safetensors`` files (in name order; none where the folder is missing)."""
    root = Path(directory)
    return root / "config.json", sorted(root.glob("*.safetensors"))


def stack_weights(cfg: LlamaConfig, tensors: dict[str, np.ndarray], consume: bool = False) -> dict[str, np.ndarray]:
    """Our stacked weights from Hugging-Face tensors (checked: every tensor present, shaped as the config says).

    ``consume``: drop each tensor from ``tensors`` once it is stacked, so that a checkpoint's tensors
    and the stacked weights are not all held at once (an 8B checkpoint's 16 GB twice over, otherwise).
    """
    expected = weight_shapes(cfg)
    out: dict[str, np.ndarray] = {}
    for name, shape in expected.items():
        if name in _GLOBAL_TENSORS:
            keys = [_GLOBAL_TENSORS[name]]
        else:
            keys = [_LAYER_TENSORS[name].format(i) for i in range(cfg.layers)]
        parts = [_tensor(tensors, key) for key in keys]
        parts = [p.reshape(1, -1) if p.ndim == 1 else p for p in parts]
        try:
            # one copy: the concatenation, already bf16 where the tensors are
            stacked = np.concatenate(parts, axis=0).astype(bfloat16, copy=False)
        except ValueError as e:
            raise ModelError(f"tensors of '{name}' do not stack: {e}") from None
        if stacked.shape != shape:
            raise ModelError(f"weight '{name}': the checkpoint gives shape {stacked.shape}, the config needs {shape}")
        out[name] = stacked
        if consume:
            del parts
            for key in keys:
                tensors.pop(key, None)
    return out


def _tensor(tensors: dict[str, np.ndarray], key: str) -> np.ndarray:
    if key not in tensors:
        raise ModelError(f"the checkpoint has no tensor '{key}'")
    return np.asarray(tensors[key])


def named_config(name: str, max_context: int | None = None) -> LlamaConfig:
    """A config of :data:`NAMED_CONFIGS`, or one read from a JSON file (a Hugging-Face ``config.json``).

    ``max_context`` replaces the named config's; its attention block stays
    where the new context still splits into whole merge masks of it
    (:data:`~vdir.frontend.llama.MERGE_MASK_BLOCKS` blocks), else the config
    chooses one for the new context (a ``ValueError`` naming the context
    where none fits).
    """
    if name in NAMED_CONFIGS:
        cfg = NAMED_CONFIGS[name]
        if not max_context:
            return cfg
        keeps_block = max_context % cfg.context_quantum == 0
        return replace(cfg, max_context=max_context, block=cfg.block if keeps_block else AUTO_CHUNKS)
    path = config_file(name)
    if path is not None:
        return config_from_json(read_config_file(path), max_context or 256, source=str(path))
    raise ModelError(f"unknown config '{name}' (named: {', '.join(NAMED_CONFIGS)}; or a config.json path)")


def config_file(name: str) -> Path | None:
    """The file :func:`named_config` reads for ``name``: an existing ``.json`` file that is not a named
    config; None for a named config or anything else."""
    path = Path(name)
    return path if name not in NAMED_CONFIGS and path.suffix == ".json" and path.exists() else None
