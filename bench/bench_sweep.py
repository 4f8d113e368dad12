"""Shape sweep: vdir against torch eager, CUDA graphs, cuBLAS and torch.compile, one table, one run.

Run on a machine with an H100/H200 and PyTorch:

    python3 bench/bench_sweep.py [--quick] [--only gemv|mlp|stack] [--case NAME] [--torch-compile MODE] [--tile-bytes N] [--json FILE]
    python3 bench/bench_sweep.py --only gemv --tile-rows N [--tile-bytes N]   # a tiling other than the library's
    python3 bench/bench_sweep.py --only gemv --gemv 1024x6144 [--gemv MxK]...  # other gemv shapes
    python3 bench/bench_sweep.py --sim      # no GPU: the same cases, 32 times smaller, on the simulator

Cases: gemvs y = W x (W bf16, M x K) over M, K in {1024, ..., 28672} in both
orientations; one MLP layer (rmsnorm, gate/up, silu_mul, down, residual) and
a 16-layer MLP stack for Llama-like (hidden, intermediate) pairs; the
(8192, 28672) MLP as one layer only (sixteen would not fit in memory).

Each case is timed, in this one run, for vdir and for torch eager
(``F.linear``, or the MLP's ops: cuBLAS calls and small kernels), the same in
a CUDA graph, cuBLAS as ``torch.matmul(W, x)`` (gemv only) and
``torch.compile`` (``--torch-compile MODE``, default ``default``; ``none``
leaves it out) captured in a CUDA graph. Times are medians of many launches
timed with CUDA events around each one, queued behind a gate so they run
back to back (``bench_gpu.torch_times``; vdir: ``VdirCase.time``). The
gemvs and single MLP layers rotate weight sets whose total is at least 2.5
times the 60 MiB L2, for vdir and torch alike, so the weights stream from
HBM; a 16-layer stack (1.5 GiB and more) runs on one set.

Every contender's result is checked on fresh random inputs (never zeros):
a gemv against the f32 product of the same bf16 data, max|got - ref| /
max|ref| <= ``TOL_GEMV``; an MLP (all output rows) against the same math in
f32, its error at most twice torch bf16's own plus 1e-3. vdir outputs are
poisoned with NaN before the checked launch, so every element must be
written.

vdir programs are built by ``vdir.frontend.examples`` with the tile choice of
``vdir.frontend.layers`` (``gemv_tiling``, ``mlp_tiling``: weight tiles of
at most ``WEIGHT_TILE_BYTES``) and compiled by the pass pipeline for all SMs, in worker
processes while the GPU measures the cases before them; a program that does
not compile is reported as ``compile failed: <reason>`` in its row.
Bandwidth counts the bytes that must move (as in ``bench_gpu.py``) and is
also given as a share of a 1 GiB device-to-device copy measured in the run.
Under the table, each performance target against this run (``bench/targets.py``).

``--json FILE`` (rewritten after every case, so a run cut short keeps what it
measured) holds per case: the us and the checked error of each contender,
the tolerance, vdir's GB/s, %copy and speed-ups, the tiling, the vdir
compile and load seconds, the torch.compile seconds and any failure.
``--deadline`` skips the cases not started by then, so that the table still
prints within a time limit. Runs of two versions of the code, taken
alternately, compare with ``bench/compare_runs.py before.json after.json
[before2.json after2.json ...]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import gc
import json
import math
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from bench.bench_gpu import (  # noqa: E402
    EPS,
    L2_BYTES,
    TOL_GEMV,
    TOL_MLP,
    VdirCase,
    add_lowering_argument,
    compile_gemv,
    compile_mlp,
    copy_time_us,
    device_target,
    graph_of,
    lowering_options,
    mlp_inputs,
    mlp_torch_sets,
    relerr,
    run_mlp,
    torch_mlp_stack,
    torch_times,
)
from bench.targets import print_verdicts  # noqa: E402
from vdir.frontend.layers import WEIGHT_TILE_BYTES, gemv_tiling, mlp_tiling  # noqa: E402
from vdir.lowering.options import LoweringOptions  # noqa: E402
from vdir.transforms.place import DEFAULT_SIDE_LOADS, SIDE_LOADS  # noqa: E402

#: gemv (M, K): y[M] = W[M, K] . x[K]; squares and both orientations of each pair
GEMV_SHAPES = (
    (2048, 2048), (4096, 4096), (8192, 8192),
    (1024, 4096), (4096, 1024),
    (1024, 8192), (8192, 1024),
    (2048, 8192), (8192, 2048),
    (4096, 14336), (14336, 4096),
    (8192, 28672), (28672, 8192),
)
#: MLP (hidden, intermediate): one layer each; the stack for those in STACK_SHAPES
MLP_SHAPES = ((2048, 8192), (4096, 14336), (5120, 13824), (8192, 28672))
STACK_SHAPES = ((2048, 8192), (4096, 14336), (5120, 13824))
STACK_LAYERS = 16
#: ``--quick``: a few of each
QUICK_GEMV = ((2048, 2048), (8192, 8192), (8192, 28672), (28672, 8192))
QUICK_MLP = ((4096, 14336),)
QUICK_STACK = ((2048, 8192),)
#: ``--sim``: every dimension and the weight-tile limit divided by this, on SIM_SMS SMs
SIM_SCALE = 32
SIM_SMS = 4
#: the SM count the real-size programs are compiled for in ``--sim`` (an H200's)
SIM_REAL_SMS = 132
#: rotation: weight sets of a gemv or a single MLP layer total at least this many L2s (2 to 32 sets)
ROTATE_L2S = 2.5
#: torch.compile modes that capture CUDA graphs themselves (timed as torch runs them)
SELF_GRAPHED_MODES = ("reduce-overhead", "max-autotune")
#: the contenders, in the table's order (``splitk``: the split-K stack, with ``--split-k``)
CONTENDERS = ("vdir", "splitk", "eager", "graph", "cublas", "compile")


# ---------------------------------------------------------------------------
# Cases and their vdir programs
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Case:
    """One row of the table: a gemv (``a`` = M, ``b`` = K) or an MLP (``a`` = hidden, ``b`` = intermediate)."""

    kind: str  # "gemv", "block" (one MLP layer) or "stack"
    a: int
    b: int
    layers: int = 1

    @property
    def name(self) -> str:
        if self.kind == "gemv":
            return f"gemv {self.a}x{self.b}"
        if self.kind == "block":
            return f"MLP block {self.a}/{self.b}"
        return f"MLP x{self.layers} {self.a}/{self.b}"

    @property
    def weight_bytes(self) -> int:
        n = self.a * self.b if self.kind == "gemv" else 3 * self.layers * self.a * self.b
        return 2 * n

    @property
    def moved(self) -> int:
        """Bytes that must move: weights, x and y (gemv); weights, norm weights, residual in and out (MLP)."""
        if self.kind == "gemv":
            return self.weight_bytes + 2 * self.b + 2 * self.a
        return self.weight_bytes + 2 * self.layers * self.a + 2 * 2 * self.a

    @property
    def sets(self) -> int:
        """Weight sets rotated through: one for a stack, else enough for ``ROTATE_L2S`` L2s."""
        if self.kind == "stack":
            return 1
        return max(2, min(32, math.ceil(ROTATE_L2S * L2_BYTES / self.weight_bytes)))

    def scaled(self, f: int) -> Case:
        return dataclasses.replace(self, a=self.a // f, b=self.b // f)


def select_cases(opts) -> list[Case]:
    """The cases of the run (``--quick``, ``--only``, ``--gemv``, ``--case``)."""
    gemv, mlp, stack = (QUICK_GEMV, QUICK_MLP, QUICK_STACK) if opts.quick else (GEMV_SHAPES, MLP_SHAPES, STACK_SHAPES)
    gemv = opts.gemv or gemv
    cases = []
    if opts.only in (None, "gemv"):
        cases += [Case("gemv", m, k) for m, k in gemv]
    if opts.only in (None, "mlp"):
        cases += [Case("block", h, i) for h, i in mlp]
    if opts.only in (None, "mlp", "stack"):
        cases += [Case("stack", h, i, STACK_LAYERS) for h, i in stack]
    if opts.case:
        unknown = set(opts.case) - {c.name for c in cases}
        if unknown:
            raise SystemExit(f"bench_sweep: no case named {', '.join(sorted(map(repr, unknown)))} "
                             f"(the cases: {', '.join(c.name for c in cases)})")
        cases = [c for c in cases if c.name in opts.case]
    return cases


def tiling(case: Case, sms: int, tile_bytes: int = WEIGHT_TILE_BYTES, gemv_rows: int | None = None) -> dict[str, int]:
    """The builders' tile arguments for ``case`` on ``sms`` SMs: the library's choice (``gemv_tiling``,
    ``mlp_tiling``) for weight tiles within ``tile_bytes``; a gemv's tiles of ``gemv_rows`` rows
    where given (its K chunks still the library's choice for that many rows)."""
    if case.kind == "gemv":
        rows, k_chunks = gemv_tiling(case.a, case.b, rows=gemv_rows, tile_bytes=tile_bytes, sms=sms)
        return {"rows": rows, "k_chunks": k_chunks}
    up, down, down_chunks = mlp_tiling(case.a, case.b, tile_bytes=tile_bytes)
    return {"up_rows": up, "down_rows": down, "down_chunks": down_chunks}


def one_line(e: BaseException, n: int = 200) -> str:
    """``e`` as one line of at most ``n`` characters."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= n else text[:n - 3] + "..."


def pipeline_options(opts, target: str | None = None) -> dict:
    """The vdir-pipeline options the command line sets for every program, compiled for ``target`` (None: the
    programs' own); the stream holds and release-first where given (else the target's)."""
    chosen = {"side_loads": opts.side_loads, "flag_words": opts.flag_words, "hold_streams": opts.hold_streams,
              "release_first": opts.release_first}
    if target is not None:
        chosen["target"] = target
    return {name: value for name, value in chosen.items() if value is not None}


def compile_case(case: Case, num_sms: int, tile_bytes: int, gemv_rows: int | None = None,
                 pipeline: dict | None = None) -> dict:
    """The case's program, compiled (``pipeline``: more of vdir-pipeline's options, as ``pipeline_options``
    gives them): {prog, seconds, error, tiling}; ``error`` one line, ``prog`` None then."""
    t0 = time.time()
    t = None
    pipeline = pipeline or {}
    try:
        t = tiling(case, num_sms, tile_bytes, gemv_rows)
        if case.kind == "gemv":
            prog = compile_gemv(case.a, case.b, t["rows"], t["k_chunks"], num_sms, pipeline)
        else:
            prog = compile_mlp(None if case.kind == "block" else case.layers, case.a, case.b, num_sms,
                               pipeline=pipeline, **t)
        return {"prog": prog, "seconds": time.time() - t0, "error": None, "tiling": t}
    except Exception as e:  # noqa: BLE001  (the row says why)
        return {"prog": None, "seconds": time.time() - t0, "error": one_line(e), "tiling": t}


def _worker_init() -> None:
    try:
        os.nice(10)  # the measuring process comes first
    except OSError:
        pass


class Programs:
    """The cases' programs: compiled ahead, in worker processes (``jobs`` > 1), or when asked for."""

    def __init__(self, cases: list[Case], num_sms: int, tile_bytes: int, jobs: int, gemv_rows: int | None = None,
                 pipeline: dict | None = None):
        self.num_sms, self.tile_bytes, self.gemv_rows, self.pipeline = num_sms, tile_bytes, gemv_rows, pipeline
        self.pool = None
        self.futures: dict[Case, concurrent.futures.Future] = {}
        if jobs > 1 and len(cases) > 1:
            self.pool = concurrent.futures.ProcessPoolExecutor(
                min(jobs, len(cases)), mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init)
            for c in cases:  # in the order they are needed
                self.futures[c] = self.pool.submit(compile_case, c, num_sms, tile_bytes, gemv_rows, pipeline)

    def get(self, case: Case) -> dict:
        fut = self.futures.pop(case, None)
        if fut is not None:
            try:
                return fut.result()
            except Exception:  # noqa: BLE001  (a worker lost: compile here instead)
                pass
        return compile_case(case, self.num_sms, self.tile_bytes, self.gemv_rows, self.pipeline)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def tiling_text(t: dict | None) -> str:
    return " ".join(f"{k}={v}" for k, v in (t or {}).items())


def write_json(path: str | None, doc: dict) -> None:
    if path:
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)


# ---------------------------------------------------------------------------
# Simulator
# ---------------------------------------------------------------------------

def sim_main(opts, cases: list[Case]) -> int:
    """Every case at 1/SIM_SCALE of its size on the simulator, checked against the host math."""
    from ml_dtypes import bfloat16

    import vdir

    t_start = time.time()
    rng = np.random.default_rng()
    small = [c.scaled(SIM_SCALE) for c in cases]
    programs = Programs(small, SIM_SMS, WEIGHT_TILE_BYTES // SIM_SCALE, opts.jobs or 1, pipeline=pipeline_options(opts))
    rows, failed = [], []
    f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
    try:
        for case, sc in zip(cases, small, strict=True):
            res = programs.get(sc)
            row = {"case": case.name, "sim_shape": [sc.a, sc.b], "layers": sc.layers, "tiling": res["tiling"],
                   "vdir_compile_s": round(res["seconds"], 3), "vdir_status": None, "err": None, "tol": None,
                   "sim_s": None, "uops": None}
            rows.append(row)
            if res["error"]:
                row["vdir_status"] = f"compile failed: {res['error']}"
                print(f"{case.name}: {row['vdir_status']}", flush=True)
                continue
            prog = res["prog"]
            row["uops"] = len(prog.instrs)
            t0 = time.time()
            try:
                exe = vdir.compile(prog, backend="sim")
                if sc.kind == "gemv":
                    w = (rng.standard_normal((sc.a, sc.b)) * sc.b ** -0.5).astype(bfloat16)
                    x = rng.standard_normal((1, sc.b)).astype(bfloat16)
                    out, ref, tol = exe(w=w, x=x), (f32(w) @ f32(x).reshape(-1)).reshape(1, -1), TOL_GEMV
                else:
                    H, I, L = sc.a, sc.b, sc.layers  # noqa: E741
                    inp = mlp_inputs(rng, L, H, I)
                    out, ref = run_mlp(exe, inp, None if sc.kind == "block" else L)
                    tol = TOL_MLP
                o, r = f32(out), f32(ref)
                err = float(np.max(np.abs(o - r)) / np.max(np.abs(r)))
                err = err if math.isfinite(err) else math.inf
            except Exception as e:  # noqa: BLE001  (the row says why)
                row["vdir_status"] = f"run failed: {type(e).__name__}: {one_line(e)}"
                failed.append(case.name)
                print(f"{case.name}: {row['vdir_status']}", flush=True)
                continue
            row.update(err=err, tol=tol, sim_s=round(time.time() - t0, 3))
            if err > tol:
                failed.append(case.name)
            print(f"{case.name} as {sc.name}: max rel err {err:.2e} (tol {tol:.0e}), compiled in "
                  f"{res['seconds']:.2f} s, simulated in {row['sim_s']:.2f} s", flush=True)
    finally:
        programs.close()

    print()
    print(f"simulator, {SIM_SMS} SMs: every dimension and the {WEIGHT_TILE_BYTES // 1024} KiB weight-tile limit "
          f"divided by {SIM_SCALE}; reference: the host math in f32 (numpy)")
    hdr = (f"{'case':<22} {'sim shape':<14} {'tiling':<36} {'uops':>6} {'compile s':>9} {'sim s':>6} "
           f"{'max rel err':>11} {'tol':>7}  check")
    print(hdr)
    print("-" * len(hdr))
    for case, sc, r in zip(cases, small, rows, strict=True):
        shape = f"{sc.a}x{sc.b}" if sc.kind == "gemv" else f"{sc.a}/{sc.b}" + (f" x{sc.layers}" if sc.kind == "stack" else "")
        if r["vdir_status"]:
            print(f"{case.name:<22} {shape:<14} {tiling_text(r['tiling']):<36} {'':>6} {r['vdir_compile_s']:>9.2f} "
                  f"{'':>6} {'-':>11} {'-':>7}  {r['vdir_status']}")
            continue
        print(f"{case.name:<22} {shape:<14} {tiling_text(r['tiling']):<36} {r['uops']:>6} {r['vdir_compile_s']:>9.2f} "
              f"{r['sim_s']:>6.2f} {r['err']:>11.2e} {r['tol']:>7.0e}  {'PASS' if r['err'] <= r['tol'] else 'FAIL'}")

    real = []
    if not opts.quick:  # the real sizes compile, or say why not (16-layer stacks left out: tens of seconds each)
        print()
        print(f"real sizes, compiled for {SIM_REAL_SMS} SMs (16-layer stacks left out):")
        big = [c for c in cases if c.kind != "stack"]
        progs = Programs(big, SIM_REAL_SMS, WEIGHT_TILE_BYTES, opts.jobs or 1, pipeline=pipeline_options(opts))
        try:
            for c in big:
                res = progs.get(c)
                p = res["prog"]
                what = (f"compile failed: {res['error']}" if p is None else
                        f"{len(p.instrs)} uops, {p.smem_bytes} B shared memory")
                real.append({"case": c.name, "tiling": res["tiling"], "compile_s": round(res["seconds"], 3),
                             "status": what})
                print(f"  {c.name:<22} {tiling_text(res['tiling']):<36} {res['seconds']:>6.2f} s  {what}", flush=True)
        finally:
            progs.close()
    print(f"sim check: {'PASS' if not failed else 'FAIL ' + ', '.join(failed)}  ({time.time() - t_start:.0f} s)")
    write_json(opts.json, {"mode": "sim", "scale": SIM_SCALE, "sms": SIM_SMS, "rows": rows, "real_size_compiles": real,
                           "failed": failed, "wall_s": round(time.time() - t_start, 1)})
    return 0 if not failed else 1


# ---------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------

def print_table(doc: dict) -> None:
    """The GPU run's table, from the figures ``gpu_main`` collects (the JSON document)."""
    rows, mode = doc["rows"], doc["torch_compile_mode"]
    print()
    print(f"device: {doc['device']}  SMs: {doc['sms']}  date: {doc['date']}  launches per figure: {doc['iters']} "
          f"(median)  torch {doc['torch']}  torch.compile mode: {mode}  lowering options: {doc['lowering']}  "
          f"side-loads: {doc.get('side_loads', DEFAULT_SIDE_LOADS)}  flag-words: {doc.get('flag_words', 0)}  "
          f"compiled for: {doc.get('target', 'h200')}  hold-streams: {doc.get('hold_streams', 0)}  "
          f"release-first: {doc.get('release_first', False)}  "
          f"weight tiles of at most {doc['tile_bytes']} bytes, gemv tile rows: {doc['gemv_tile_rows']}")
    print(f"copy 1 GiB (read+write): {doc['copy']['us']:.1f} us = {doc['copy']['gbps']:.0f} GB/s (the %copy reference)")
    f = lambda v, w, p=1: f"{v:>{w}.{p}f}" if v is not None else f"{'-':>{w}}"  # noqa: E731
    x = lambda v, w: f"{v:>{w - 1}.2f}x" if v is not None else f"{'-':>{w}}"  # noqa: E731
    sci = lambda v, w, p=2: f"{v:>{w}.{p}e}" if v is not None else f"{'-':>{w}}"  # noqa: E731
    hdr = (f"{'case':<22} {'MiB':>7} {'sets':>4} {'vdir us':>8} {'GB/s':>5} {'%copy':>5} {'eager us':>9} "
           f"{'graph us':>9} {'cuBLAS us':>9} {'compile us':>10} {'x graph':>7} {'x compile':>9} {'vdir err':>8} "
           f"{'tol':>7}  notes")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        us, err = r["us"], r["err"]
        notes = [r["vdir_status"]] if r["vdir_status"] else []
        if r.get("tiling"):
            ring = f", stream ring {r['stream_ring']}" if "stream_ring" in r else ""
            notes.append(tiling_text(r["tiling"]) + f"{ring}, compiled in {r['vdir_compile_s']:.1f} s")
        if "splitk" in us:
            gains = ", ".join(f"{r[f'splitk_speedup_{k}']:.2f}x {k}" for k in ("vdir", "graph", "compile")
                              if f"splitk_speedup_{k}" in r)
            notes.append(f"split-K {us['splitk']:.2f} us ({r['splitk_pct_copy']:.1f}% copy; {gains}; "
                         f"err {err.get('splitk', float('nan')):.1e})")
        if "torch_compile_s" in r:
            notes.append(f"torch.compile {r['torch_compile_s']:.1f} s")
        notes += r["notes"]
        print(f"{r['case']:<22} {r['moved_bytes'] / 2**20:>7.1f} {r.get('sets', 0):>4} {f(us.get('vdir'), 8, 2)} "
              f"{f(r.get('vdir_gbps'), 5, 0)} {f(r.get('vdir_pct_copy'), 5)} {f(us.get('eager'), 9, 2)} "
              f"{f(us.get('graph'), 9, 2)} {f(us.get('cublas'), 9, 2)} {f(us.get('compile'), 10, 2)} "
              f"{x(r.get('speedup_graph'), 7)} {x(r.get('speedup_compile'), 9)} "
              f"{sci(err.get('vdir'), 8, 1)} {sci(r.get('tol'), 7, 1)}  {'; '.join(notes)}")
    print("contenders: eager = F.linear(x, W) (gemv) or the MLP's torch ops (cuBLAS gemms and small kernels); "
          "graph = the same in one CUDA graph per weight set; cuBLAS = torch.matmul(W, x) with x a column; "
          f"compile = torch.compile(mode={mode!r})" + (" as torch runs it" if mode in SELF_GRAPHED_MODES else
                                                      " in one CUDA graph per weight set"))
    print("x graph, x compile: vdir's speed-up (their time / vdir's); GB/s: bytes that must move / vdir's time; "
          f"sets: weight sets rotated through (>= {ROTATE_L2S} x the 60 MiB L2; a 16-layer stack: one)")
    print(f"tolerance: gemv max|got - ref| / max|ref| <= {TOL_GEMV}, ref the f32 product of the same bf16 data; "
          "MLP (all output rows) the same against the math in f32, at most 2 x torch bf16's own error + 1e-3 "
          "(the tol column); every contender is checked, the err column is vdir's")
    compile_failed = [r["case"] for r in rows if (r["vdir_status"] or "").startswith("compile failed")]
    if compile_failed:
        print("vdir compile failed (not counted as a correctness failure):", ", ".join(compile_failed))
    failed = doc["failed"]
    print("correctness:", "PASS" if not failed else "FAIL " + ", ".join(failed), f" (run {doc['wall_s']:.0f} s)")
    print_verdicts(doc)


def gpu_main(opts, cases: list[Case]) -> int:
    import torch
    import torch.nn.functional as Fn

    from vdir.device_runtime.cuda import CudaPlatform

    if opts.torch_compile != "none":
        import torch._dynamo  # noqa: F401  (torch._dynamo.reset between cases)
    t_start = time.time()
    ok, why = CudaPlatform.is_available()
    if not ok:
        print(f"no GPU: {why}")
        return 1
    plat = CudaPlatform()
    nsm = plat.target().num_sms
    target = device_target()
    jobs = opts.jobs or min(4, max(1, (os.cpu_count() or 2) - 2))
    # compiling while the GPU measures
    programs = Programs(cases, nsm, opts.tile_bytes, jobs, opts.tile_rows, pipeline_options(opts, target))
    print(f"{len(cases)} cases; vdir programs compiled for {nsm} SMs in {jobs} process(es), weight tiles of "
          f"at most {opts.tile_bytes} bytes; torch.compile mode: {opts.torch_compile}", flush=True)
    lowering: LoweringOptions = opts.lowering
    iters = 50 if opts.quick else opts.iters
    mode = opts.torch_compile
    dev = torch.device("cuda")
    torch.manual_seed(int(time.time()))
    torch.backends.cuda.matmul.allow_tf32 = False  # the f32 references are f32
    elapsed = lambda: time.time() - t_start  # noqa: E731

    copy_bytes = 1 << 30
    copy_us = copy_time_us(copy_bytes)
    copy_gbps = 2 * copy_bytes / copy_us / 1e3
    print(f"copy 1 GiB (read+write): {copy_us:.1f} us, {copy_gbps:.0f} GB/s", flush=True)
    rows: list[dict] = []
    failed: list[str] = []
    doc = {"device": torch.cuda.get_device_name(), "sms": nsm, "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "iters": iters,
           "torch_compile_mode": mode, "compile_jobs": jobs, "lowering": str(lowering.changed() or "defaults"),
           "target": target, "side_loads": opts.side_loads, "flag_words": opts.flag_words,
           "hold_streams": "the target's" if opts.hold_streams is None else opts.hold_streams,
           "release_first": "the target's" if opts.release_first is None else opts.release_first,
           "also_lowering": [text for text, _ in opts.also_lowering],
           "tile_bytes": opts.tile_bytes, "gemv_tile_rows": opts.tile_rows or "the library's",
           "copy": {"bytes": 2 * copy_bytes, "us": copy_us, "gbps": copy_gbps}, "tol_gemv": TOL_GEMV,
           "tol_mlp": "2 x torch bf16's own error against the f32 math + 1e-3", "rows": rows, "failed": failed}
    state = {"plat": plat}  # None once the platform closed (a watchdog report)

    def as_out(o):
        return torch.cat(list(o)) if isinstance(o, (list, tuple)) else o

    def run_case(case: Case, row: dict) -> None:
        nsets = case.sets
        row["sets"] = nsets
        L = case.layers
        # ---- inputs, references and the torch contenders' functions
        if case.kind == "gemv":
            M, K = case.a, case.b
            sets = [{"w": torch.randn(M, K, dtype=torch.bfloat16, device=dev) * (K ** -0.5),
                     "x": torch.randn(1, K, dtype=torch.bfloat16, device=dev),
                     "y": torch.empty(1, M, dtype=torch.bfloat16, device=dev)} for _ in range(nsets)]
            refs = [(s["w"].float() @ s["x"].float().reshape(-1)).reshape(1, -1) for s in sets]
            tol = TOL_GEMV
            errs_of = lambda outs: [relerr(o, r) for o, r in zip(outs, refs, strict=True)]  # noqa: E731
            vout = lambda s: s["y"]  # noqa: E731
            eager = lambda s: Fn.linear(s["x"], s["w"])  # noqa: E731
            cublas = lambda s: torch.matmul(s["w"], s["x"].view(-1, 1)).view(1, -1)  # noqa: E731
            cfn_src = lambda x, w: Fn.linear(x, w)  # noqa: E731
            cargs = lambda s: (s["x"], s["w"])  # noqa: E731
        else:
            sets = mlp_torch_sets(case.layers, case.a, case.b, nsets, dev)
            refs = [torch.cat(torch_mlp_stack(s, L)) for s in sets]
            refs32 = [torch.cat(torch_mlp_stack(s, L, torch.float32)) for s in sets]  # the same math in f32
            err_t32 = max(relerr(r, r32) for r, r32 in zip(refs, refs32, strict=True))
            del refs
            tol = 2 * err_t32 + 1e-3
            row["torch_bf16_err_vs_f32"] = err_t32
            errs_of = lambda outs: [relerr(o, r) for o, r in zip(outs, refs32, strict=True)]  # noqa: E731
            vout = (lambda s: s["hs"][1:2]) if case.kind == "block" else (lambda s: s["hs"][1:])  # noqa: E731
            eager = lambda s: torch_mlp_stack(s, L)  # noqa: E731
            cublas = None

            def cfn_src(hs, g, wg, wu, wd):
                return torch_mlp_stack({"hs": hs, "g": g, "wg": wg, "wu": wu, "wd": wd}, L)

            cargs = lambda s: (s["hs"], s["g"], s["wg"], s["wu"], s["wd"])  # noqa: E731
        row["tol"] = tol
        torch.cuda.synchronize()

        def record(name: str, us: float, errs: list[float]) -> None:
            err = max(errs)
            row["us"][name], row["err"][name] = us, err
            if not err <= tol:
                failed.append(f"{case.name} [{name}]")

        def measure(name: str, call) -> None:
            """``call(i)`` runs set i's work and returns its output: checked per set, then timed."""
            try:
                errs = errs_of([as_out(call(i)).clone() for i in range(nsets)])
                fn = lambda i: call(i % nsets)  # noqa: E731
                torch_times(fn, 8)
                record(name, torch_times(fn, iters), errs)
            except Exception as e:  # noqa: BLE001  (the row says why; the sweep goes on)
                row["notes"].append(f"{name} failed: {type(e).__name__}: {one_line(e, 120)}")
                failed.append(f"{case.name} [{name}]")

        # ---- torch eager, cuBLAS, eager in CUDA graphs
        measure("eager", lambda i: eager(sets[i]))
        if cublas is not None:
            measure("cublas", lambda i: cublas(sets[i]))
        try:
            graphs = [graph_of(lambda s=s: eager(s)) for s in sets]
        except Exception as e:  # noqa: BLE001
            row["notes"].append(f"graph capture failed: {type(e).__name__}: {one_line(e, 120)}")
            failed.append(f"{case.name} [graph]")
        else:
            measure("graph", lambda i: (graphs[i][0].replay(), graphs[i][1])[1])
            del graphs

        # ---- vdir
        res = programs.get(case)
        row["tiling"], row["vdir_compile_s"] = res["tiling"], round(res["seconds"], 3)
        if res["error"]:
            row["vdir_status"] = f"compile failed: {res['error']}"
        elif state["plat"] is None:
            row["vdir_status"] = "not run: the device platform closed after an earlier failure"
        else:
            prog = res["prog"]
            row["vdir_uops"] = len(prog.instrs)
            stage = "load"
            try:
                t0 = time.time()
                vc = VdirCase(state["plat"], prog, sets, lowering)
                row["vdir_load_s"] = round(time.time() - t0, 3)
                row["stream_ring"] = vc.stream_ring
                stage = "run"
                record("vdir", *checked_figure(vc, sets, vout, errs_of, iters))
                if opts.also_lowering:
                    stage = "lowering variants"
                    time_lowering_variants(case, row, vc, sets, opts.also_lowering, vout, errs_of, record, failed,
                                           iters)
                del vc
            except Exception as e:  # noqa: BLE001  (a watchdog report, a refused program: say so, go on)
                row["vdir_status"] = f"{stage} failed: {type(e).__name__}: {one_line(e)}"
                failed.append(f"{case.name} [vdir]")
                if getattr(state["plat"], "_closed", False):
                    state["plat"] = None

        if opts.split_k and case.kind == "stack" and state["plat"] is not None:
            run_split_k(case, row, sets, nsm, vout, errs_of, record, failed, state["plat"], lowering, iters)

        # ---- torch.compile, in CUDA graphs unless the mode makes its own
        if mode != "none":
            def compiled(fullgraph: bool):
                torch._dynamo.reset()
                fn = torch.compile(cfn_src, mode=mode, dynamic=False, fullgraph=fullgraph)
                t0 = time.time()
                fn(*cargs(sets[0]))
                torch.cuda.synchronize()
                row["torch_compile_s"] = round(time.time() - t0, 2)
                return fn

            try:
                try:  # one graph, or say where it breaks and compile it as torch would
                    cfn = compiled(True)
                except Exception as e:  # noqa: BLE001
                    row["notes"].append(f"torch.compile fullgraph failed ({type(e).__name__}: {one_line(e, 100)}); "
                                        "timed with graph breaks")
                    cfn = compiled(False)
            except Exception as e:  # noqa: BLE001
                row["notes"].append(f"torch.compile failed: {type(e).__name__}: {one_line(e, 120)}")
                failed.append(f"{case.name} [compile]")
            else:
                if mode in SELF_GRAPHED_MODES:
                    measure("compile", lambda i: cfn(*cargs(sets[i])))
                else:
                    try:
                        cgraphs = [graph_of(lambda s=s: cfn(*cargs(s))) for s in sets]
                    except Exception as e:  # noqa: BLE001
                        row["notes"].append(f"graph capture of torch.compile failed: {type(e).__name__}: "
                                            f"{one_line(e, 120)}")
                        failed.append(f"{case.name} [compile]")
                    else:
                        measure("compile", lambda i: (cgraphs[i][0].replay(), cgraphs[i][1])[1])
                        del cgraphs
                del cfn
            torch._dynamo.reset()

    try:
        for case in cases:
            row = {"case": case.name, "kind": case.kind, "dims": [case.a, case.b], "layers": case.layers,
                   "weight_bytes": case.weight_bytes, "moved_bytes": case.moved, "us": {}, "err": {}, "notes": [],
                   "vdir_status": None}
            rows.append(row)
            if elapsed() > opts.deadline:
                row["vdir_status"] = f"skipped: started after {opts.deadline:.0f} s (--deadline)"
                print(f"[{elapsed():5.0f} s] {case.name}: {row['vdir_status']}", flush=True)
                continue
            t0 = time.time()
            try:
                run_case(case, row)
            except Exception as e:  # noqa: BLE001  (an allocation that fails, ...: the row says why)
                row["notes"].append(f"case failed: {type(e).__name__}: {one_line(e, 160)}")
                failed.append(case.name)
            gc.collect()
            torch.cuda.empty_cache()
            row["wall_s"] = round(time.time() - t0, 1)
            us = row["us"]
            if "splitk" in us:
                row["splitk_pct_copy"] = 100.0 * case.moved / us["splitk"] / 1e3 / copy_gbps
                for k in ("vdir", "graph", "compile"):
                    if k in us:
                        row[f"splitk_speedup_{k}"] = us[k] / us["splitk"]
            if "vdir" in us:
                row["vdir_gbps"] = case.moved / us["vdir"] / 1e3
                row["vdir_pct_copy"] = 100.0 * row["vdir_gbps"] / copy_gbps
                for k in ("graph", "compile"):
                    if k in us:
                        row[f"speedup_{k}"] = us[k] / us["vdir"]
            figs = " ".join(f"{k} {us[k]:.1f}" for k in CONTENDERS if k in us)
            print(f"[{elapsed():5.0f} s] {case.name}: {figs} us"
                  + (f"; {row['vdir_status']}" if row["vdir_status"] else "")
                  + (f"; torch.compile {row['torch_compile_s']} s" if "torch_compile_s" in row else "")
                  + "".join(f"; {n}" for n in row["notes"]), flush=True)
            doc["wall_s"] = round(elapsed(), 1)
            write_json(opts.json, doc)  # after every case: a run cut short keeps what it measured
    finally:
        programs.close()

    doc["wall_s"] = round(elapsed(), 1)
    print_table(doc)
    write_json(opts.json, doc)
    if state["plat"] is not None and not getattr(state["plat"], "_closed", False):
        state["plat"].close()
    return 0 if not failed else 1


def checked_figure(vc: VdirCase, sets: list[dict], vout, errs_of, iters: int) -> tuple[float, list[float]]:
    """One vdir kernel's figure on ``sets``: each set's output rows poisoned (every element must be
    written), one launch of each checked by ``errs_of``, a warm-up, then the median of ``iters`` launches;
    (µs, the errors)."""
    import torch

    for s in sets:
        vout(s).fill_(float("nan"))
    torch.cuda.synchronize()
    vc.run_all()
    errs = errs_of([vout(s) for s in sets])
    vc.time(2 * len(sets))  # warm-up
    return vc.time(iters), errs


def time_lowering_variants(case: Case, row: dict, vc: VdirCase, sets: list[dict],
                           variants: list[tuple[str, LoweringOptions]], vout, errs_of, record, failed: list[str],
                           iters: int) -> None:
    """``--also-lowering``: the case's program lowered with each of ``variants`` (label, options) on the same
    sets, each checked as vdir's own figure is (its rows poisoned first) and timed right after it, then the
    program's own kernel (``vc``) timed again, so that each variant sits between two figures of the
    default in one process. The row's notes give each against the mean of those two."""
    before = row["us"]["vdir"]
    timed: list[tuple[str, float, int]] = []
    for label, options in variants:
        name = f"vdir {label}"
        try:
            variant = VdirCase(vc.plat, vc.prog, sets, options)
            us, errs = checked_figure(variant, sets, vout, errs_of, iters)
            record(name, us, errs)
            timed.append((label, us, variant.stream_ring))
            del variant
        except Exception as e:  # noqa: BLE001  (the row says why; the other variants go on)
            row["notes"].append(f"lowering {label} failed: {type(e).__name__}: {one_line(e, 120)}")
            failed.append(f"{case.name} [{name}]")
    after = vc.time(iters)
    row["us"]["vdir again"] = after
    row["notes"].append(f"vdir again: {after:.2f} us")
    default = (before + after) / 2
    for label, us, ring in timed:
        row["notes"].append(f"lowering {label}: {us:.2f} us ({us / default - 1:+.1%} against the default's two "
                            f"figures; stream ring {ring})")


def split_k_sets(sets: list[dict], layers: int, hidden: int, inter: int) -> list[dict]:
    """The split-K stack's tensors for each of ``sets`` (``build_split_k_mlp_stack``'s names): the same
    ``hs``, ``g``, ``wg``, ``wu``, the down weights transposed layer by layer (``wdt``), and the i64
    accumulator."""
    import torch

    out = []
    for s in sets:
        wdt = s["wd"].view(layers, hidden, inter).transpose(1, 2).contiguous().view(layers * inter, hidden)
        acc = torch.empty(layers, hidden, dtype=torch.int64, device=s["hs"].device)
        out.append({"hs": s["hs"], "g": s["g"], "wg": s["wg"], "wu": s["wu"], "wdt": wdt, "acc": acc})
    return out


def run_split_k(case: Case, row: dict, sets: list[dict], nsm: int, vout, errs_of, record, failed: list[str],
                plat, lowering: LoweringOptions, iters: int) -> None:
    """Time the split-K form of a stack (``build_split_k_mlp_stack``) on the case's weights, checked as
    vdir's plain stack is (its rows poisoned first); the row notes why where it fails."""
    from vdir.frontend.examples import build_split_k_mlp_stack
    from vdir.transforms.pipeline import compile_to_encoded

    stage = "compile"
    try:
        t0 = time.time()
        prog = compile_to_encoded(build_split_k_mlp_stack(case.layers, case.a, case.b, eps=EPS), num_sms=nsm)
        row["splitk_compile_s"] = round(time.time() - t0, 2)
        stage = "run"
        split = split_k_sets(sets, case.layers, case.a, case.b)
        vc = VdirCase(plat, prog, split, lowering)
        record("splitk", *checked_figure(vc, split, vout, errs_of, iters))
        del vc, split
    except Exception as e:  # noqa: BLE001  (the row says why; the sweep goes on)
        row["notes"].append(f"split-K {stage} failed: {type(e).__name__}: {one_line(e, 160)}")
        if stage != "compile":  # as for vdir's own column, a program that does not compile is no wrong result
            failed.append(f"{case.name} [splitk]")


def lowering_variant(ap: argparse.ArgumentParser, base: LoweringOptions, text: str) -> LoweringOptions:
    """``--also-lowering``'s ``text`` (``"key=value[,key=value]"``) over the options ``base``; an argparse error
    naming a bad one."""
    try:
        return base.with_text(text)
    except ValueError as e:
        ap.error(f"--also-lowering {text}: {e}")


def gemv_shape(text: str) -> tuple[int, int]:
    """``--gemv``'s ``MxK``: two positive integers (an :class:`argparse.ArgumentTypeError` otherwise)."""
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not MxK with M and K positive integers")
    return int(parts[0]), int(parts[1])


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the command line); run on the GPU (default) or the simulator (``--sim``)."""
    opts = parse_options(argv)
    cases = select_cases(opts)
    return sim_main(opts, cases) if opts.sim else gpu_main(opts, cases)


def parse_options(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line's options, checked (a usage error exits), the lowering options parsed."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few cases (4 gemvs, 1 MLP layer, 1 stack), fewer launches")
    ap.add_argument("--sim", action="store_true", help="no GPU: the cases, 32 times smaller, on the simulator")
    ap.add_argument("--only", choices=("gemv", "mlp", "stack"),
                    help="only the gemvs, only the MLPs (blocks and stacks) or only the 16-layer stacks")
    ap.add_argument("--case", action="append", default=[], metavar="NAME",
                    help="only this case, named as in the table (e.g. 'MLP block 8192/28672'); repeatable")
    ap.add_argument("--torch-compile", default="default", metavar="MODE",
                    help="torch.compile mode: default, max-autotune-no-cudagraphs (minutes per case), "
                         "reduce-overhead, max-autotune; none leaves it out (default: %(default)s)")
    ap.add_argument("--iters", type=int, default=200, help="launches per figure (default %(default)s; --quick 50)")
    ap.add_argument("--jobs", type=int, default=0,
                    help="processes compiling vdir programs ahead (0: up to 4 on the GPU, 1 with --sim)")
    ap.add_argument("--deadline", type=float, default=450.0, metavar="S",
                    help="cases not started S seconds into the run are skipped, so that the table still "
                         "prints under a time limit (default %(default)s)")
    ap.add_argument("--json", help="also write every figure to this file (rewritten after each case)")
    ap.add_argument("--tile-bytes", type=int, default=None, metavar="N",
                    help="the weight-tile limit the library's tiling chooses within, on the GPU "
                         f"(default {WEIGHT_TILE_BYTES}; --sim scales the default down with the shapes)")
    ap.add_argument("--gemv", action="append", default=[], type=gemv_shape, metavar="MxK",
                    help="a gemv of this shape in place of the table's gemvs (repeatable), e.g. 1024x6144")
    ap.add_argument("--tile-rows", type=int, default=None, metavar="N",
                    help="the gemvs' weight-tile rows, on the GPU with --only gemv (default: the library's "
                         "choice; the K chunks are chosen for these rows within the tile limit)")
    ap.add_argument("--side-loads", choices=SIDE_LOADS, default=DEFAULT_SIDE_LOADS,
                    help="vdir-place's side-loads for every vdir program (default: %(default)s)")
    ap.add_argument("--flag-words", type=int, default=0, metavar="N",
                    help="vdir-pipeline's flag-words for every vdir program (0, the default: none); the MLPs "
                         "then declare act scratch, so that its hand-offs go as words alone")
    ap.add_argument("--hold-streams", type=int, default=None, metavar="N",
                    help="vdir-pipeline's hold-streams for every vdir program (0: none; default: the target's, "
                         "the programs being compiled for the GPU's target)")
    ap.add_argument("--release-first", action=argparse.BooleanOptionalAction, default=None,
                    help="vdir-pipeline's release-first for every vdir program: a store a stream load on its "
                         "SM waits for releases its counter before its bits (default: the target's)")
    ap.add_argument("--split-k", action="store_true",
                    help="also time each stack's split-K form (build_split_k_mlp_stack) on the same weights")
    add_lowering_argument(ap, "the sweep")
    ap.add_argument("--also-lowering", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                    help="also time every vdir program lowered with these options (on top of --lowering) in the "
                         "same process, right after its own figure, which is then timed again (repeatable)")
    opts = ap.parse_args(argv)
    if opts.also_lowering and opts.sim:
        ap.error("--also-lowering applies on the GPU (the simulator does not model the kernel's lowering)")
    if opts.split_k and opts.sim:
        ap.error("--split-k applies on the GPU (the simulator's tests cover the split-K stack)")
    if opts.gemv and opts.only in ("mlp", "stack"):
        ap.error(f"--gemv adds gemvs: it cannot be given with --only {opts.only}")
    if opts.tile_rows is not None:
        if opts.sim or opts.only != "gemv":
            ap.error("--tile-rows applies to the gemvs on the GPU: give it with --only gemv, without --sim")
        if opts.tile_rows <= 0:
            ap.error(f"--tile-rows must be positive, not {opts.tile_rows}")
    if opts.tile_bytes is not None and opts.sim:
        ap.error("--tile-bytes applies on the GPU; --sim scales the default limit down with the shapes")
    if opts.tile_bytes is None:
        opts.tile_bytes = WEIGHT_TILE_BYTES
    elif opts.tile_bytes <= 0:
        ap.error(f"--tile-bytes must be positive, not {opts.tile_bytes}")
    if opts.flag_words < 0:
        ap.error(f"--flag-words must be 0 (none) or positive, not {opts.flag_words}")
    if opts.hold_streams is not None and opts.hold_streams < 0:
        ap.error(f"--hold-streams must be 0 (none) or positive, not {opts.hold_streams}")
    opts.lowering = lowering_options(ap, opts.lowering)
    opts.also_lowering = [(text, lowering_variant(ap, opts.lowering, text)) for text in opts.also_lowering]
    return opts


if __name__ == "__main__":
    raise SystemExit(main())
