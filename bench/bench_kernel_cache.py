"""Kernel load time with and without the kernel cache, each in a fresh process.

Run on a machine with a GPU:

    python3 bench/bench_kernel_cache.py [--program mlp_stack|gemv] [--repeat 3] [--json FILE]

The program (by default the 16-layer MLP stack, for all SMs of the device)
is compiled by the pass pipeline once, here; each measurement is then a
fresh Python process that loads it with ``vdir.compile(program,
backend="cuda")``. Each round runs, in order:

* ``driver JIT``: the cache off (``VDIR_KERNEL_CACHE=0``) and the driver's own
  JIT cache off (``CUDA_CACHE_DISABLE=1``): the PTX is compiled at every start;
* ``driver JIT, its cache warm``: the cache off, the driver's JIT cache on, in
  a directory the round's previous run filled (``CUDA_CACHE_PATH``);
* ``vdir cache cold``: an empty ``VDIR_CACHE_DIR``: a miss (linked, stored);
* ``vdir cache warm``: the same directory again: a hit.

Printed per case: the module load the artifact records (``load_seconds``:
cache lookup, compilation on a miss, ``cuModuleLoadData``) and the whole
``vdir.compile`` (context creation, lowering to PTX, the module load, the
uploads), medians over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

ROOT = Path(__file__).resolve().parent.parent
#: the environment variables this benchmark sets per case; inherited values are dropped
CONTROLLED_ENV = ("VDIR_KERNEL_CACHE", "VDIR_CACHE_DIR", "CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH")


def build_program(name: str, num_sms: int):
    """The encoded program to load: ``mlp_stack`` (16 layers, 2048 x 8192) or ``gemv`` (8192 x 8192)."""
    from vdir.frontend.examples import build_gemv, build_mlp_stack
    from vdir.transforms.pipeline import compile_to_encoded

    module = build_mlp_stack(16, eps=1e-5) if name == "mlp_stack" else build_gemv(8192, 8192)
    return compile_to_encoded(module, num_sms=num_sms)


def child_main(program_file: str) -> int:
    """One measurement: load the pickled program on cuda; print the times as JSON."""
    import vdir

    with open(program_file, "rb") as f:
        program = pickle.load(f)
    t0 = time.perf_counter()
    exe = vdir.compile(program, backend="cuda")
    total = time.perf_counter() - t0
    art = exe.artifact
    print(json.dumps({"cache_hit": art.cache_hit, "load_s": art.load_seconds, "compile_s": total,
                      "ptx_chars": len(art.lowered.ptx)}))
    exe.close()
    return 0


def measure(program_file: Path, env: dict[str, str]) -> dict:
    """Run :func:`child_main` in a fresh interpreter with ``env`` added; its JSON."""
    child_env = {k: v for k, v in os.environ.items() if k not in CONTROLLED_ENV}
    child_env.update(env)
    child_env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p])
    r = subprocess.run([sys.executable, __file__, "--child", str(program_file)], env=child_env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"the measuring process failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def one_round(program_file: Path, scratch: Path) -> dict[str, dict]:
    """The four cases of the module docstring, in order, with fresh cache directories."""
    vdir_dir, driver_dir = scratch / "vdir-kernels", scratch / "driver-cache"
    off = {"VDIR_KERNEL_CACHE": "0"}
    measure(program_file, {**off, "CUDA_CACHE_PATH": str(driver_dir)})  # fills the driver's JIT cache
    return {
        "driver JIT": measure(program_file, {**off, "CUDA_CACHE_DISABLE": "1"}),
        "driver JIT, its cache warm": measure(program_file, {**off, "CUDA_CACHE_PATH": str(driver_dir)}),
        "vdir cache cold": measure(program_file, {"VDIR_CACHE_DIR": str(vdir_dir), "CUDA_CACHE_DISABLE": "1"}),
        "vdir cache warm": measure(program_file, {"VDIR_CACHE_DIR": str(vdir_dir), "CUDA_CACHE_DISABLE": "1"}),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", choices=("mlp_stack", "gemv"), default="mlp_stack")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (fresh cache directories each)")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.child:
        return child_main(opts.child)

    from bench_gpu import gpu_sm_count

    num_sms = gpu_sm_count()
    if num_sms is None:
        return 1
    t0 = time.perf_counter()
    program = build_program(opts.program, num_sms)
    print(f"{opts.program}: {len(program.instrs)} instructions on {num_sms} SMs, "
          f"compiled in {time.perf_counter() - t0:.1f} s")
    rounds: list[dict[str, dict]] = []
    with tempfile.TemporaryDirectory(prefix="vdir-kcache-bench-") as tmp:
        program_file = Path(tmp) / "program.pickle"
        program_file.write_bytes(pickle.dumps(program))
        for r in range(opts.repeat):
            scratch = Path(tmp) / f"round{r}"
            scratch.mkdir()
            rounds.append(one_round(program_file, scratch))
    report(opts.program, rounds)
    if opts.json:
        Path(opts.json).write_text(json.dumps({"program": opts.program, "rounds": rounds}, indent=1))
    return 0


def report(program: str, rounds: list[dict[str, dict]]) -> None:
    """Print the medians (and the hit flags, which must not vary) per case."""
    print(f"kernel load of {program} (PTX {rounds[0]['driver JIT']['ptx_chars']} chars), "
          f"median of {len(rounds)} fresh processes each")
    print(f"  {'case':<28} {'module load':>12} {'vdir.compile':>13}  cache hit")
    for case in rounds[0]:
        runs = [r[case] for r in rounds]
        load = statistics.median(x["load_s"] for x in runs)
        total = statistics.median(x["compile_s"] for x in runs)
        hits = sorted({str(x["cache_hit"]) for x in runs})
        print(f"  {case:<28} {1e3 * load:>9.1f} ms {total:>11.3f} s  {'/'.join(hits)}")


if __name__ == "__main__":
    sys.exit(main())
