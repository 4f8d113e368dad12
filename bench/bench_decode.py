"""The decode step against torch on the GPU: ms/token, the same model and weights, side by side.

For a Llama-family config (``--config tiny`` ... or the Llama-3.2-1B shape,
``--config llama-1b``), with seeded random weights, it measures in one run:

* vdir: :class:`vdir.models.llama.LlamaDecoder`, one launch per token, the
  token fed back on the device; the time of ``--steps`` steps queued back to
  back, divided by the steps;
* torch eager: a plain-torch step of the same model (bf16 weights, f32
  softmax), one token at a time with a KV cache;
* torch with a CUDA graph: the same step captured once and replayed;
* ``torch.compile`` (``--torch-compile MODE``, default
  ``max-autotune-no-cudagraphs``; ``none`` skips it) of the same step,
  captured in a CUDA graph and replayed;
* the bandwidth floor: the bytes a step must read (weights + the KV cache up
  to the context) at the measured copy bandwidth.

Correctness first: the torch step runs teacher-forced on vdir's tokens and
its logits must agree with vdir's within a bf16 tolerance (printed), and the
greedy tokens must match where the top two logits are clearly apart.

    python3 bench/bench_decode.py --config tiny --steps 32
    python3 bench/bench_decode.py --config llama-1b --context 1024 --steps 64
    python3 bench/bench_decode.py --config llama-8b --context 1024 --steps 64 --torch-compile none
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vdir.analysis.l2_prefetch import DEFAULT_BUDGET  # noqa: E402
from vdir.frontend.llama import AUTO_CHUNKS, LlamaConfig  # noqa: E402
from vdir.testing.torch_llama import TorchStep  # noqa: E402

#: the most micro-ops a step may expand to here: the 8B step (733k) is beyond
#: the default limit (vdir.limits.MAX_MICRO_OPS), which is for untrusted programs
DECODE_MAX_MICRO_OPS = 2_000_000

#: the l2-prefetch bytes the bench compiles with unless told: the pipeline's
DEFAULT_L2_PREFETCH = DEFAULT_BUDGET


def decode_configs() -> dict[str, LlamaConfig]:
    """The configs the bench may time: ``vdir.models.llama.NAMED_CONFIGS`` (the 1B and 8B shapes among them)."""
    from vdir.models.llama import NAMED_CONFIGS

    return dict(NAMED_CONFIGS)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="the decode step against torch on the GPU")
    p.add_argument("--config", default="tiny", choices=sorted(decode_configs()))
    p.add_argument("--context", type=int, default=None, help="the compiled context (default: the config's)")
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--torch-compile", default="max-autotune-no-cudagraphs",
                   help="torch.compile mode of the compiled baseline ('none' skips it)")
    p.add_argument("--l2-prefetch", default=str(DEFAULT_L2_PREFETCH),
                   help="vdir-encode's l2-prefetch bytes; a comma-separated list times each, in this run")
    p.add_argument("--lowering", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                   help="also time the step lowered with these options (e.g. load_ring=16); repeatable")
    p.add_argument("--pipeline", action="append", default=[], metavar="OPTION=VALUE[,OPTION=VALUE]",
                   help="also time the step compiled with these vdir-pipeline options (e.g. flag-words=4096,prefetch=1; "
                        "any but target, num-sms and l2-prefetch); repeatable, each timed in this run")
    p.add_argument("--context-buckets", action="append", default=[], metavar="auto|none|N[,N]",
                   help="LlamaDecoder's context_buckets, shorter steps for the positions below each N (e.g. "
                        "1024,2048); auto: the decoder's default choice, none: the full step alone; repeatable, "
                        "each timed in this run (default: auto)")
    p.add_argument("--variant", action="append", default=[], metavar="FIELD=VALUE[,FIELD=VALUE]",
                   help="also time the step with these LlamaConfig tiling fields changed (e.g. block=128); "
                        "repeatable, each timed in this run")
    opts = p.parse_args(argv)
    cfg = decode_configs()[opts.config]
    if opts.context:  # the attention block chosen anew for this context
        cfg = dataclasses.replace(cfg, max_context=opts.context, block=AUTO_CHUNKS)
    steps = min(opts.steps, cfg.max_context)
    # every option is checked before torch is imported and anything is timed
    variants = [cfg, *(tiling_variant(cfg, text) for text in opts.variant)]
    lowerings = ["", *opts.lowering]
    pipelines = ["", *opts.pipeline]
    for text in pipelines:
        pipeline_options(text)
    for text in lowerings:
        _lowering_options(text)
    l2_prefetches = _byte_list(opts.l2_prefetch)
    bucket_lists = list(dict.fromkeys(_context_buckets(cfg, text) for text in opts.context_buckets or ["auto"]))
    try:
        import torch
    except ImportError:
        raise _usage_error("the torch baselines need torch (and the step a CUDA GPU)") from None

    from vdir.testing.llama import random_weights

    weights = random_weights(cfg, seed=0)
    ref = TorchStep(cfg, weights)
    runs = [_run_vdir(v, weights, ref, steps, l2, lowering, pipeline, buckets) for v in variants
            for l2 in l2_prefetches for lowering in lowerings for pipeline in pipelines for buckets in bucket_lists]
    vdir_ms = min(r["vdir_ms"] for r in runs)

    def time_torch(step, n: int) -> float:
        torch.cuda.synchronize()
        t = time.perf_counter()
        for i in range(n):
            ref.pos.fill_(i)
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) * 1000 / n

    def captured(step) -> Callable[[], None]:
        graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):
            step()
        return graph.replay

    # each figure printed as it is measured: a run cut short (torch.compile's autotuning takes
    # minutes) keeps what it measured
    eager_ms = time_torch(ref.step, steps)
    print(f"torch eager: {eager_ms:.3f} ms/token", flush=True)
    graph_ms = time_torch(captured(ref.step), steps)
    print(f"torch CUDA graph: {graph_ms:.3f} ms/token", flush=True)
    compiled_ms = math.nan
    if opts.torch_compile != "none":
        t0 = time.time()
        compiled = torch.compile(ref.step, mode=opts.torch_compile)
        replay = captured(compiled)
        print(f"torch.compile ({opts.torch_compile}) compiled and captured in {time.time() - t0:.1f} s", flush=True)
        compiled_ms = time_torch(replay, steps)
        print(f"torch.compile ({opts.torch_compile}) in a CUDA graph: {compiled_ms:.3f} ms/token", flush=True)
    weight_bytes = sum(v.nbytes for k, v in weights.items() if k != "emb") + (
        weights["emb"].nbytes if cfg.tied_embeddings else weights["emb"].shape[1] * 2)
    kv_bytes = 2 * cfg.layers * steps * cfg.kv_heads * cfg.head_dim * 2
    copy = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(copy)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(20):
        dst.copy_(copy)
    torch.cuda.synchronize()
    bandwidth = 2 * copy.numel() * 20 / (time.perf_counter() - t)
    floor_ms = (weight_bytes + kv_bytes) / bandwidth * 1000
    print(f"{'ms/token':<12}{'vdir':>10}{'torch eager':>14}{'torch graph':>14}{'compile+graph':>15}{'floor':>10}")
    print(f"{'':<12}{vdir_ms:10.3f}{eager_ms:14.3f}{graph_ms:14.3f}{compiled_ms:15.3f}{floor_ms:10.3f}  "
          f"(context up to {steps}, copy {bandwidth / 1e12:.2f} TB/s, {torch.cuda.get_device_name()})")
    if opts.json:
        Path(opts.json).write_text(json.dumps({"config": cfg.name, "vdir_ms": vdir_ms, "eager_ms": eager_ms,
                                               "graph_ms": graph_ms, "compiled_graph_ms": compiled_ms,
                                               "torch_compile_mode": opts.torch_compile, "floor_ms": floor_ms,
                                               "device": torch.cuda.get_device_name(),
                                               "vdir_runs": runs}, indent=1))
    return 0


def _usage_error(text: str) -> SystemExit:
    """A clean exit naming the script that was run (these parsers serve trace_decode.py too)."""
    return SystemExit(f"{Path(sys.argv[0]).stem}: {text}")


#: the LlamaConfig fields ``--variant`` may change: how the step is tiled, not the model
TILING_FIELDS = ("block", "proj_rows", "qkv_rows", "o_rows", "up_rows", "down_rows", "vocab_rows", "down_chunks", "logit_chunks", "o_chunks", "argmax_parts",
                 "rope_in_tiles", "split_k_mlp", "mlp_group")
#: the boolean ones among them (``true``/``1``/``yes`` or anything else for false)
TILING_FLAGS = ("rope_in_tiles", "split_k_mlp")


def tiling_variant(cfg: LlamaConfig, text: str) -> LlamaConfig:
    """``cfg`` with the tiling fields of ``"block=128,rope_in_tiles=true"`` changed (the chunk counts that follow
    a changed field chosen again unless named too: ``LlamaConfig.retiled``); a clean exit on a bad one."""
    changes: dict[str, object] = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key not in TILING_FIELDS or not value:
            raise _usage_error(f"--variant takes FIELD=VALUE with FIELD one of {', '.join(TILING_FIELDS)}; "
                             f"got '{item}'")
        changes[key] = value.lower() in ("1", "true", "yes") if key in TILING_FLAGS else int(value)
    try:
        return cfg.retiled(**changes)
    except ValueError as e:
        raise _usage_error(f"--variant {text}: {e}") from None


def _byte_list(text: str) -> list[int]:
    """``"0,262144"`` -> [0, 262144]; an argparse error on anything else."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 0:
        raise _usage_error(f"--l2-prefetch takes non-negative byte counts, got '{text}'")
    return values


#: vdir-pipeline options the bench sets itself, which ``--pipeline`` may not
BENCH_PIPELINE_OPTIONS = {"target": "the GPU's", "num_sms": "every SM", "l2_prefetch": "--l2-prefetch"}


def pipeline_options(text: str) -> dict:
    """``"prefetch=4,side-loads=none"`` -> compile_to_encoded keyword arguments (the options that differ
    from the defaults); a clean exit on a bad one, or on one the bench sets itself."""
    from vdir.tools.common import flag_error
    from vdir.transforms.pipeline_options import PipelineOptionError, PipelineOptions

    try:
        options = PipelineOptions.parse(text)
    except PipelineOptionError as e:
        raise _usage_error(flag_error(f"--pipeline {text}", e)) from None
    for name, owner in BENCH_PIPELINE_OPTIONS.items():
        if name in options.changed():
            raise _usage_error(f"--pipeline {text}: {name.replace('_', '-')} is set by the bench ({owner})")
    return options.changed()


def _context_buckets(cfg: LlamaConfig, text: str) -> tuple[int, ...]:
    """``"1024,2048"`` -> the context buckets, checked against ``cfg`` (``auto``: the decoder's default
    choice for ``cfg``, ``none``: no bucket); a clean exit on a bad one."""
    from vdir.models.llama import ModelError, bucket_configs, parse_context_buckets

    try:
        return tuple(c.attended for c in bucket_configs(cfg, parse_context_buckets(text)))
    except ModelError as e:
        raise _usage_error(f"--context-buckets {text}: {e}") from None


def _lowering_options(text: str) -> str | None:
    """``"load_ring=16,stream_ring=4"`` -> the lowering options' text (None: the defaults); a clean exit on a bad one."""
    from vdir.lowering.options import LoweringOptionError, LoweringOptions

    options = " ".join(x for x in text.split(",") if x) or None
    try:
        LoweringOptions.coerce(options)
    except LoweringOptionError as e:
        raise _usage_error(f"--lowering {text}: {e}") from None
    return options


def _run_vdir(cfg, weights, ref, steps: int, l2_prefetch: int, lowering: str = "", pipeline: str = "",
              buckets: tuple[int, ...] = ()) -> dict:
    """Compile the step with ``l2_prefetch`` and the vdir-pipeline options ``pipeline``, lower it with the
    lowering options ``lowering`` (both ``"k=v,k=v"``), with shorter steps for the context ``buckets``
    (compiled alike), time ``steps`` greedy steps, compare 16 teacher-forced ones with ``ref``."""
    import torch

    from bench.bench_gpu import device_target
    from vdir.frontend.llama import build_decode_step
    from vdir.models.llama import LlamaDecoder
    from vdir.transforms.pipeline import compile_to_encoded

    t0 = time.time()
    target = device_target()  # what the pipeline leaves to the target: the GPU's
    passes = {**pipeline_options(pipeline), "target": target}
    program = compile_to_encoded(build_decode_step(cfg), l2_prefetch=l2_prefetch, max_micro_ops=DECODE_MAX_MICRO_OPS,
                                 **passes)
    options = _lowering_options(lowering)
    bucket_pipeline = {**passes, "l2_prefetch": l2_prefetch} if buckets else None
    with LlamaDecoder(cfg, weights, backend="cuda", program=program, options=options, pipeline=bucket_pipeline,
                      context_buckets=buckets, max_micro_ops=DECODE_MAX_MICRO_OPS) as decoder:
        compile_s = time.time() - t0
        ring = decoder.exe.artifact.lowered.stream_ring  # the option's, else the GPU's for the program
        prompt = [1]
        decoder.generate(prompt, 2)  # warm-up
        result = decoder.generate(prompt, steps)
        tokens = [prompt[0], *result.tokens]
        # torch, teacher-forced on vdir's tokens: logits compared at every step
        worst, agree, compared = 0.0, 0, min(steps, 16)
        decoder.reset()
        for pos in range(compared):
            decoder.step(pos, tokens[pos])
            ref.step_at(pos, tokens[pos])
            got = torch.from_numpy(decoder.logits().astype(np.float32)).cuda()
            want = ref.logits.float()
            worst = max(worst, float((got - want).abs().max() / want.abs().max()))
            agree += int(decoder.history(pos + 1)[pos] == int(ref.token))
    tiling = {k: getattr(cfg, k) for k in TILING_FIELDS}
    r = {"tiling": tiling, "target": target, "l2_prefetch": l2_prefetch, "lowering": lowering, "stream_ring": ring,
         "pipeline": pipeline,
         "context_buckets": list(buckets), "vdir_ms": result.ms_per_token, "compile_s": compile_s,
         "instructions": len(program.instrs), "worst_logit_error": worst, "same_tokens": agree, "compared": compared}
    print(f"vdir, block {cfg.block}, RoPE {'in tiles' if cfg.rope_in_tiles else 'whole-head'}, "
          f"{f'split-K MLP (groups of {cfg.mlp_group})' if cfg.split_k_mlp else 'two-phase MLP'}, l2-prefetch "
          f"{l2_prefetch}, lowering '{lowering or 'defaults'}' (stream ring {ring}), pipeline '{pipeline or 'defaults'}' "
          f"for {target}, "
          f"context buckets {','.join(map(str, buckets)) or 'none'}: "
          f"{r['vdir_ms']:.3f} ms/token, {r['instructions']} "
          f"instructions, compiled in {compile_s:.1f} s; worst logit error {worst:.3g}, same greedy token "
          f"{agree}/{compared}", flush=True)
    return r


if __name__ == "__main__":
    sys.exit(main())
