"""Host cost per launch: what a caller pays to run a compiled program, per path, on the GPU.

For a gemv and an MLP stack (weights resident on the device) it measures,
side by side in one process:

* ``host call``: ``exe(*numpy inputs)``: copies every input in and every
  output out, waits (the old and only path before resident buffers);
* ``enqueue``: ``exe.launch(stream=s)`` with every buffer bound: the host
  time of the call alone (the launches queue behind each other; the queue is
  drained outside the timed region);
* ``launch+sync``: one ``launch`` and a stream synchronize, per call;
* ``graph replay``: the launch captured once in a CUDA graph (torch), replayed;
* the kernel's own time (``exe.time``), so the host figures can be read against it.

Each result is checked against the host-path result (bit-identical: the same
kernel on the same inputs). Prints a table; ``--json`` writes it.

    python3 bench/bench_launch.py [--json out.json] [--iters 300]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _median_us(fn, iters: int) -> float:
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return float(np.median(times))


def _enqueue_us(exe, stream, torch, iters: int) -> float:
    """Host time of ``launch`` alone: batches of 32 (well inside the driver's queue), drained untimed."""
    per = []
    for _ in range(max(iters // 32, 1)):
        torch.cuda.current_stream().synchronize()
        t0 = time.perf_counter()
        for _ in range(32):
            exe.launch(stream=stream)
        per.append((time.perf_counter() - t0) * 1e6 / 32)
        stream.synchronize()
    exe.synchronize()
    return float(np.median(per))


PROFILE = False


def _profile(exe, stream) -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(500):
        exe.launch(stream=stream)
        if _ % 32 == 31:
            stream.synchronize()
    prof.disable()
    stream.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)


def measure(name: str, module, inputs: dict[str, np.ndarray], iters: int) -> dict:
    import torch

    import vdir

    exe = vdir.compile(module, backend="cuda")
    try:
        t_host = _median_us(lambda: exe(**inputs), max(iters // 10, 5))
        expected = exe(**inputs)
        expected = expected if isinstance(expected, dict) else {exe.outputs[0].name: expected}
        for key, value in inputs.items():  # resident: bound once as torch tensors
            exe.bind_buffer(key, torch.from_numpy(value.view(np.int16)).view(torch.bfloat16).cuda())
        stream = torch.cuda.Stream()
        exe.launch(stream=stream)
        stream.synchronize()
        exe.synchronize()
        t_enqueue = _enqueue_us(exe, stream, torch, iters)
        if PROFILE:
            _profile(exe, stream)
        t_sync = _median_us(lambda: (exe.launch(stream=stream), stream.synchronize()), iters)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            exe.launch(stream=torch.cuda.current_stream())
        graph.replay()
        torch.cuda.synchronize()
        t_replay = _median_us(lambda: graph.replay(), iters)
        torch.cuda.synchronize()
        exe.synchronize()
        for out, want in expected.items():  # the resident runs give the host path's bits
            got = exe.buffer(out).numpy()
            if not np.array_equal(got.view(np.uint16), want.view(np.uint16)):
                raise SystemExit(f"{name}: output '{out}' of the resident launches differs from the host call")
        for info in exe.inputs:
            exe.unbind(info.name)
        t_kernel = float(np.median(exe.time(**inputs, iterations=50)))
    finally:
        exe.close()
    return {"case": name, "host_call_us": t_host, "enqueue_us": t_enqueue, "launch_sync_us": t_sync,
            "graph_replay_us": t_replay, "kernel_us": t_kernel}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="write the results here")
    p.add_argument("--iters", type=int, default=300)
    p.add_argument("--profile", action="store_true", help="also print where the enqueue time of the first case goes")
    opts = p.parse_args(argv)
    from bench_gpu import mlp_inputs
    from ml_dtypes import bfloat16

    from vdir.frontend.examples import build_gemv, build_mlp_stack

    rng = np.random.default_rng()
    cases = [
        ("gemv 8192x8192", build_gemv(8192, 8192),
         {"w": (rng.standard_normal((8192, 8192)) * 0.02).astype(bfloat16),
          "x": rng.standard_normal((1, 8192)).astype(bfloat16)}),
        ("gemv 2048x2048", build_gemv(2048, 2048),
         {"w": (rng.standard_normal((2048, 2048)) * 0.02).astype(bfloat16),
          "x": rng.standard_normal((1, 2048)).astype(bfloat16)}),
        ("mlp stack 4x2048x8192", build_mlp_stack(4, 2048, 8192), mlp_inputs(rng, 4, 2048, 8192)),
    ]
    global PROFILE
    PROFILE = opts.profile
    rows = []
    print(f"{'case':<24}{'host call':>12}{'enqueue':>10}{'launch+sync':>13}{'graph replay':>14}{'kernel':>10}  (us)")
    for name, module, inputs in cases:
        r = measure(name, module, inputs, opts.iters)
        rows.append(r)
        PROFILE = False
        print(f"{name:<24}{r['host_call_us']:12.1f}{r['enqueue_us']:10.1f}{r['launch_sync_us']:13.1f}"
              f"{r['graph_replay_us']:14.1f}{r['kernel_us']:10.1f}", flush=True)
    if opts.json:
        Path(opts.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
