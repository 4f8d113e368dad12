"""A small MLP stack compiled by the pipeline, on the GPU, checked against the reference.

Small enough to run under compute-sanitizer (memcheck, racecheck, synccheck):

    compute-sanitizer --tool memcheck python3 bench/sanitize_mlp.py [--layers 2 --sms 8] [--lowering control_warp=1]

``--flag-words N`` compiles the stack with flag-word hand-offs (``vdir-pipeline{flag-words=N}``), and
``--scratch-act`` declares ``act`` scratch, so that those into it write their words alone.

Exits non-zero when the output misses the cuda tolerance of
``vdir.testing.compare.TOLERANCES``.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from bench.bench_gpu import add_lowering_argument, lowering_options  # noqa: E402


def main() -> int:
    """Compile, run twice (the second launch at the next epoch), compare both runs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--inter", type=int, default=2048)
    ap.add_argument("--sms", type=int, default=8)
    ap.add_argument("--l2-prefetch", type=int, default=0, help="vdir-encode's l2-prefetch bytes")
    ap.add_argument("--flag-words", type=int, default=0, help="vdir-pipeline's flag-words bytes (0: none)")
    ap.add_argument("--scratch-act", action="store_true", help="declare act scratch (the caller never gets it)")
    add_lowering_argument(ap, "the stack")
    opts = ap.parse_args()
    opts.lowering = lowering_options(ap, opts.lowering)

    import vdir
    from bench.bench_gpu import mlp_inputs
    from vdir.frontend.examples import build_mlp_stack
    from vdir.testing.compare import compare_outputs
    from vdir.testing.reference import evaluate
    from vdir.transforms.pipeline import compile_to_encoded

    module = build_mlp_stack(opts.layers, opts.hidden, opts.inter, scratch_act=opts.scratch_act)
    program = compile_to_encoded(module, num_sms=opts.sms, l2_prefetch=opts.l2_prefetch, flag_words=opts.flag_words)
    # a generous watchdog: instrumented kernels run many times slower
    exe = vdir.compile(program, backend="cuda", options=opts.lowering, watchdog_ms=120_000.0)
    rng = np.random.default_rng()
    worst = 0
    for run in range(2):
        inputs = mlp_inputs(rng, opts.layers, opts.hidden, opts.inter)
        ref = evaluate(module, {**inputs, "act": np.zeros((opts.layers, opts.inter), inputs["hs"].dtype)})
        inputs["hs"][1:] = np.nan  # poisoned: every output row must be written
        out = exe(**inputs)
        out = out if isinstance(out, dict) else {exe.outputs[0].name: out}
        bad = compare_outputs(out, ref, "cuda")
        err = max(float(np.nanmax(np.abs(out[k].astype(np.float32) - ref[k].astype(np.float32))))
                  / float(np.max(np.abs(ref[k].astype(np.float32)))) for k in ref)
        print(f"mlp stack x{opts.layers} {opts.hidden}/{opts.inter} on {opts.sms} SMs, run {run + 1}: "
              f"max rel err {err:.2e} -> {'ok' if bad is None else bad}")
        worst |= bad is not None
    exe.close()
    return 1 if worst else 0


if __name__ == "__main__":
    raise SystemExit(main())
