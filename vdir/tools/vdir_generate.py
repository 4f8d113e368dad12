"""``vdir-generate``: greedy decoding of a Llama-family model, one vdir launch per token.

    vdir-generate --random tiny --prompt 1,2,3 --tokens 8 [--backend sim|cuda] [--json out.json]
    vdir-generate --weights DIR --prompt 1,2,3 --tokens 64 --backend cuda --max-context 1024

``--weights DIR`` reads a Hugging-Face style checkpoint (``config.json`` and
``*.safetensors``, Llama or Qwen3 tensor names); ``--random CONFIG`` builds
seeded random weights for a named config (``tiny``, ``tiny-qwen3``) or a
``config.json``. The prompt is consumed by the same decode step, one token
per launch; the generated ids stay on the device until the end (a model
whose step expands beyond the default micro-op limit, the 8B shape for one,
needs ``--max-micro-ops``). Prints the
ids, ms/token and tokens/s; ``--json FILE`` writes them (``"tokens"``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vdir.device_runtime import backend_names, default_backend
from vdir.diagnostics import UserError
from vdir.limits import limits_in_effect
from vdir.tools.common import (
    OneLineParser,
    add_limit_options,
    ascii_integer,
    check_output_path,
    flag_error,
    integer_option,
    limits_from_args,
    run_cli,
    write_text_whole,
    writes_over,
)

if TYPE_CHECKING:
    from vdir.frontend.llama import LlamaConfig
    from vdir.transforms.pipeline_options import PipelineOptions

DESCRIPTION = "greedy decoding of a Llama-family model, one vdir launch per token"


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``vdir-generate``."""
    p = OneLineParser(prog="vdir-generate", description=DESCRIPTION)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--weights", metavar="DIR", help="a checkpoint directory (config.json, *.safetensors)")
    source.add_argument("--random", metavar="CONFIG", help="seeded random weights for a named config or config.json")
    p.add_argument("--prompt", required=True, help="comma-separated token ids, e.g. 1,2,3")
    p.add_argument("--tokens", type=integer_option, default=16, help="new tokens to generate (default 16)")
    p.add_argument("--backend", choices=backend_names(), default=None, help="default: cuda when a GPU is usable")
    p.add_argument("--max-context", type=integer_option, default=None, help="positions the compiled step serves")
    p.add_argument("--context-buckets", default="auto", metavar="auto|none|N[,N]",
                   help="also compile steps for these shorter contexts, e.g. 1024,2048: each position runs the "
                        "shortest step that covers it (multiples of four attention blocks below --max-context); "
                        "default auto: the context halved while at least 2048; none: the full step alone")
    p.add_argument("--seed", type=integer_option, default=0, help="the seed of --random weights (default 0)")
    p.add_argument("--json", metavar="FILE", help="write the prompt, the generated ids and the timings here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--pipeline", default="", metavar="OPTIONS",
                   help="compile the step with these vdir-pipeline options, 'key=value ...' "
                        "(e.g. 'flag-words=4096 prefetch=1'; default: the pipeline's defaults)")
    p.add_argument("--flag-words", type=integer_option, default=0, metavar="N",
                   help="hand the step's rows of at most N bytes between SMs as flag words "
                        "(the same as --pipeline flag-words=N; default 0: through counters)")
    add_limit_options(p)  # a large model's step may expand beyond the default --max-micro-ops
    return p


def _prompt(text: str) -> list[int]:
    """The token ids of ``--prompt``: integers between commas, spaces around them allowed; an empty item
    (``1,,2``, a trailing comma) is an error rather than skipped, since it is likely a lost id."""
    items = [t.strip() for t in text.split(",")]
    if not any(items):
        raise UserError("error: --prompt: give at least one token id")
    if "" in items:
        raise UserError(f"error: --prompt {text!r}: item {items.index('') + 1} is empty")
    try:
        return [ascii_integer(t) for t in items]
    except ValueError:
        raise UserError(f"error: --prompt {text!r}: expected comma-separated integer token ids") from None


def run(args: argparse.Namespace) -> int:
    """Load or make the model, generate, report; returns the exit status."""
    from vdir.models.llama import LlamaDecoder, load_checkpoint, named_config
    from vdir.testing.llama import random_weights

    limits = limits_from_args(args)
    prompt = _prompt(args.prompt)
    if args.tokens < 1:
        raise UserError(f"error: --tokens {args.tokens}: generate at least one token")
    if args.max_context is not None and args.max_context < 1:
        raise UserError(f"error: --max-context {args.max_context}: must be positive")
    if args.seed < 0:
        raise UserError(f"error: --seed {args.seed}: a seed is a non-negative integer")
    if args.flag_words < 0:
        raise UserError(f"error: --flag-words {args.flag_words}: 0 (none) or a positive byte count")
    _check_paths(args)  # before the model is loaded and run, not after
    pipeline = _pipeline_options(args.pipeline, args.flag_words)
    backend = args.backend or default_backend()
    if args.weights is not None:
        cfg, weights = load_checkpoint(args.weights, args.max_context or 256)
    else:
        cfg = named_config(args.random, args.max_context)
        _check_host_memory(args.random, cfg, backend, _available_host_bytes())
        weights = random_weights(cfg, args.seed)
    progress = None if args.no_progress else _progress_bar()
    with limits_in_effect(limits):
        with LlamaDecoder(cfg, weights, backend=backend, pipeline=pipeline,
                          context_buckets=_context_buckets(args.context_buckets)) as decoder:
            result = decoder.generate(prompt, args.tokens, progress=progress)
            steps = decoder.steps
            compiled = {"compile_seconds": sum(exe.compile_seconds or 0.0 for _, exe in steps),
                        "compile_cache_hit": all(exe.compile_cache_hit for _, exe in steps),
                        "steps_attending": [attended for attended, _ in steps],
                        "target": decoder.exe.program.target}
    print("tokens: " + ",".join(map(str, result.tokens)))
    ms = result.ms_per_token
    print(f"backend: {backend}; {result.steps} steps; {ms:.3f} ms/token; "
          f"{1000.0 / ms if ms else float('inf'):.1f} tokens/s")
    seconds = compiled["compile_seconds"]
    attending = compiled["steps_attending"]
    print(f"compile: {seconds:.2f} s" + (" (read from the program cache)" if compiled["compile_cache_hit"] else "")
          + (f"; steps for {', '.join(map(str, attending))} positions" if len(attending) > 1 else ""))
    if args.json is not None:
        write_text_whole(args.json, "--json", json.dumps({**result.to_json(), **compiled, "backend": backend,
                                                       "config": cfg.name}, indent=1))
    return 0


def _check_paths(args: argparse.Namespace) -> None:
    """A one-line error, before the work, where a path option is empty, or ``--json``'s file cannot be
    written or is one of the inputs (the config file, or a file of the checkpoint that is read), which
    it would overwrite."""
    from vdir.models.llama import checkpoint_files, config_file

    for option, path, what in (("--weights", args.weights, "a checkpoint folder"),
                               ("--random", args.random, "a named config or a config.json"),
                               ("--json", args.json, "the file to write")):
        if path == "":
            raise UserError(f"error: {option}: empty; give {what}")
    if args.json is None:
        return
    check_output_path(args.json, "--json")
    if args.weights is not None:
        config, files = checkpoint_files(args.weights)
        inputs = [config, *files]
    else:
        inputs = [path for path in [config_file(args.random)] if path is not None]
    for path in inputs:
        if writes_over(args.json, path):
            raise UserError(f"{args.json}: error: --json: is the input {path}; name another file to write")


#: the copies of the weights in host memory while a backend runs the step: the decoder's, and on the
#: simulator its buffers' (host arrays); the CUDA backend's buffers are on the device
HOST_WEIGHT_COPIES = {"sim": 2, "cuda": 1}


def _check_host_memory(name: str, cfg: LlamaConfig, backend: str, available: int | None) -> None:
    """A one-line error, before any weight is made, where the weights of ``--random name`` cannot fit
    the host memory ``available`` (None: not known, no check): without it the process grows until the
    system kills it, with no word of why."""
    from vdir.frontend.llama import weight_bytes

    copies = HOST_WEIGHT_COPIES.get(backend, 1)
    need = weight_bytes(cfg) * copies
    if available is not None and need > available:
        held = f", and the {backend} backend holds a second copy" if copies > 1 else ""
        raise UserError(f"error: --random {name}: its weights are {weight_bytes(cfg) / 1e9:.1f} GB{held}: "
                        f"{need / 1e9:.1f} GB of host memory needed, {available / 1e9:.1f} GB available")


def _available_host_bytes() -> int | None:
    """The host memory the kernel says is available (``MemAvailable`` of ``/proc/meminfo``); None where
    it does not say."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _context_buckets(text: str) -> list[int] | str:
    """``--context-buckets`` as the decoder takes it (:func:`~vdir.models.llama.parse_context_buckets`; the
    decoder checks the sizes against the config); a bad one is a one-line error."""
    from vdir.models.llama import ModelError, parse_context_buckets

    try:
        return parse_context_buckets(text)
    except ModelError as e:
        raise UserError(f"error: --context-buckets {text!r}: {e}") from None


def _pipeline_options(text: str, flag_words: int) -> PipelineOptions:
    """``--pipeline``'s options with ``--flag-words`` put in; a bad option, or flag words given both
    ways, is a one-line error."""
    from vdir.transforms.pipeline_options import PipelineOptionError, PipelineOptions

    try:
        return PipelineOptions.parse(text).with_given(flag_words=flag_words or None)
    except PipelineOptionError as e:
        raise UserError(flag_error("--pipeline", e)) from None


def _progress_bar():
    """``tqdm`` when it is installed and stderr is a terminal, else None."""
    if not sys.stderr.isatty():
        return None
    try:
        tqdm = importlib.import_module("tqdm").tqdm  # optional: a progress bar where it is installed
    except ImportError:
        return None
    return lambda steps: tqdm(steps, unit="tok", leave=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit status (errors are one line on stderr)."""
    return run_cli(build_parser, run, argv)


if __name__ == "__main__":
    sys.exit(main())
