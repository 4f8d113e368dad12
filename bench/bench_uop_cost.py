"""What one micro-op costs on each engine: the fixed cost that small tiles and short stages pay.

A program of ``n`` independent triples per SM — load a 16-byte row, ``add``
it to itself, store it — keeps each engine's queue full of tiny micro-ops,
so the kernel time is set by the slowest engine's cost per micro-op. The
slope between two sizes, ``(T(n2) - T(n1)) / (n2 - n1)``, is that cost
without the launch's fixed part. Variants make some engines' instructions
nops (same waits and signals) to see each engine's share:

* ``full``: load, compute, store;
* ``load_only``: computes and stores are nops (the load engine issues, lands
  and retires its tiny copies, and the hand-offs remain);
* ``loads_free``: only the load queues run, with no waits at all (the load
  engine's issue and retire cost alone);
* ``only=compute``, ``only=store``: only that engine's queues run, with no
  waits (its own cost per micro-op; the data is garbage, so only ``full`` is
  checked).

``--gemv RxK`` times triples of a larger kind instead: load an ``R x K``
weight tile and a ``1 x K`` row, ``gemv`` them, store the ``1 x R`` result:
the gemv body's cost per micro-op on the compute engine. ``--vecmat KxN``
does the same with ``vecmat``: a ``1 x K`` row times a ``K x N`` weight
tile, the ``1 x N`` f32 result stored (a split-K partial's step).

Run on the GPU (compiles in a few seconds)::

    python3 bench/bench_uop_cost.py [--sms 1,132] [--sizes 128,512] [--json FILE]
    python3 bench/bench_uop_cost.py --gemv 16x1024 --sms 1 --sizes 16,64 --variants full,only=compute
    python3 bench/bench_uop_cost.py --vecmat 16x2048 --sms 1 --sizes 16,64 --variants full,only=compute
    python3 bench/bench_uop_cost.py --sim      # the programs on the simulator, checked, no timing
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
from ml_dtypes import bfloat16  # noqa: E402

#: elements of one row (16 bytes of bf16: one bulk-copy unit)
ROW = 8
#: the variants timed (see the module docstring)
VARIANTS = ("full", "load_only", "loads_free", "only=compute", "only=store")


def build(n: int, sms: int):
    """``n * sms`` independent (load, add, store) triples over a ``n*sms x ROW`` bf16 buffer."""
    from vdir.frontend.builder import ProgramBuilder

    b = ProgramBuilder(f"uops_{n}x{sms}")
    x = b.buffer("x", (n * sms, ROW))
    y = b.buffer("y", (n * sms, ROW))
    with b.repeat(0, n * sms, name="i") as i:
        t = b.load(x, (i, 0), (1, ROW), name="t")
        b.store(b.compute("add", [t, t], name="u"), y, (i, 0), name="u_saved")
    return b.finish()


def build_gemv(n: int, sms: int, rows: int, k: int):
    """``n * sms`` independent (load, gemv, store) triples of ``R x K`` weight tiles against a ``1 x K``
    row (loaded with each tile: a small load beside a large one, as in a gemv's first tile)."""
    from vdir.frontend.builder import ProgramBuilder

    b = ProgramBuilder(f"gemv_uops_{n}x{sms}_{rows}x{k}")
    w = b.buffer("w", (n * sms * rows, k))
    x = b.buffer("x", (1, k))
    y = b.buffer("y", (1, n * sms * rows))
    with b.repeat(0, n * sms * rows, rows, name="r") as r:
        t = b.load(w, (r, 0), (rows, k), name="t")
        xt = b.load(x, (0, 0), (1, k), name="xt")
        b.store(b.compute("gemv", [t, xt], name="u"), y, (0, r), name="u_saved")
    return b.finish()


def build_vecmat(n: int, sms: int, k: int, cols: int):
    """``n * sms`` independent (load, vecmat, store) triples of ``K x N`` weight tiles (column blocks of
    one ``K x n*sms*N`` buffer) against a ``1 x K`` row, each ``1 x N`` f32 result stored."""
    from vdir.frontend.builder import ProgramBuilder

    b = ProgramBuilder(f"vecmat_uops_{n}x{sms}_{k}x{cols}")
    w = b.buffer("w", (k, n * sms * cols))
    x = b.buffer("x", (1, k))
    y = b.buffer("y", (1, n * sms * cols), dtype="f32")
    with b.repeat(0, n * sms * cols, cols, name="c") as c:
        t = b.load(w, (0, c), (k, cols), name="t")
        xt = b.load(x, (0, 0), (1, k), name="xt")
        b.store(b.compute("vecmat", [xt, t], name="u"), y, (0, c), name="u_saved")
    return b.finish()


#: a triple's kind: None (16-byte adds), ("gemv", R, K) or ("vecmat", K, N)
Kind = tuple[str, int, int] | None


def compile_program(n: int, sms: int, kind: Kind = None):
    from vdir.transforms.pipeline import compile_to_encoded

    if kind is None:
        module = build(n, sms)
    else:
        module = (build_gemv if kind[0] == "gemv" else build_vecmat)(n, sms, kind[1], kind[2])
    return compile_to_encoded(module, num_sms=sms, fuse=False)


def inputs(rng, n: int, sms: int, kind: Kind) -> dict[str, np.ndarray]:
    def bf(*shape):
        return rng.standard_normal(shape, dtype=np.float32).astype(bfloat16)

    if kind is None:
        return {"x": bf(n * sms, ROW)}
    family, a, b = kind
    if family == "gemv":  # R x K tiles
        return {"w": bf(n * sms * a, b), "x": bf(1, b)}
    return {"w": bf(a, n * sms * b), "x": bf(1, a)}  # K x N tiles


def _reference(inp: dict[str, np.ndarray], kind: Kind) -> np.ndarray:
    """The exact result for ``add`` (x + x); for gemv and vecmat the f64 product, compared with a tolerance."""
    x = inp["x"].astype(np.float64)
    if kind is None:
        return 2 * x
    w = inp["w"].astype(np.float64)
    return w @ x[0] if kind[0] == "gemv" else x[0] @ w


def _check(out: np.ndarray, inp, n: int, sms: int, kind: Kind) -> None:
    """``add``: exactly ``x + x``. gemv and vecmat: within the f32 summation bound ``K * 2^-24 * sum |w x|``
    of the f64 product (the bf16 products are exact in f32) plus the bf16 rounding of gemv's result."""
    ref = _reference(inp, kind)
    out = out.astype(np.float64).reshape(ref.shape)
    if kind is None:
        ok = np.array_equal(out, ref)
    else:
        w, x = inp["w"].astype(np.float64), inp["x"].astype(np.float64)[0]
        k = kind[2] if kind[0] == "gemv" else kind[1]
        scale = np.abs(w * x).sum(axis=-1) if kind[0] == "gemv" else np.abs(x[:, None] * w).sum(axis=0)
        ok = bool(np.all(np.abs(out - ref) <= k * 2.0 ** -24 * scale + 2.0 ** -8 * np.abs(ref)))
    if not ok:
        raise SystemExit(f"the result of {n} triples on {sms} SMs differs from the reference")


def parse_tile(text: str, parser: argparse.ArgumentParser, option: str = "--gemv") -> tuple[int, int]:
    """``--gemv RxK`` as ``(R, K)`` (``--vecmat KxN`` as ``(K, N)``); anything else is a usage error."""
    try:
        rows, k = (int(v) for v in text.lower().split("x"))
    except ValueError:
        rows = k = 0
    if min(rows, k) <= 0:
        shape = "RxK" if option == "--gemv" else "KxN"
        parser.error(f"{option} takes {shape}, two positive integers (e.g. 16x1024), not {text!r}")
    return rows, k


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="the fixed cost of one micro-op on each engine")
    p.add_argument("--sms", default="1,132", help="SM counts (comma-separated)")
    p.add_argument("--sizes", default="128,512", help="two triple counts per SM: the slope is between them")
    p.add_argument("--lowering", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                   help="also time the programs lowered with these options (e.g. load_ring=16); repeatable")
    p.add_argument("--variants", default=",".join(VARIANTS),
                   help=f"the variants timed (comma-separated; some of {', '.join(VARIANTS)})")
    kinds = p.add_mutually_exclusive_group()
    kinds.add_argument("--gemv", metavar="RxK", help="gemv triples of R x K weight tiles instead of 16-byte adds")
    kinds.add_argument("--vecmat", metavar="KxN", help="vecmat triples of K x N weight tiles instead of 16-byte adds")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--sim", action="store_true", help="run small programs on the simulator and check them")
    opts = p.parse_args(argv)
    sms_list = [int(s) for s in opts.sms.split(",")]
    sizes = [int(s) for s in opts.sizes.split(",")]
    if len(sizes) != 2 or sizes[0] >= sizes[1] or min(sizes) <= 0:
        p.error("--sizes takes two increasing positive counts")
    kind: Kind = None
    if opts.gemv:
        kind = ("gemv", *parse_tile(opts.gemv, p))
    elif opts.vecmat:
        kind = ("vecmat", *parse_tile(opts.vecmat, p, "--vecmat"))
    if opts.sim:
        return _check_on_the_simulator(kind)
    import vdir
    from bench.bench_gpu import variant

    variants = [v for v in opts.variants.split(",") if v]
    if not set(variants) <= set(VARIANTS):
        p.error(f"--variants takes some of {', '.join(VARIANTS)}")
    rows = []
    rng = np.random.default_rng(0)
    for sms in sms_list:
        for lowering in ["", *opts.lowering]:
            options = " ".join(x for x in lowering.split(",") if x) or None
            times: dict[str, list[float]] = {v: [] for v in variants}
            for n in sizes:
                program = compile_program(n, sms, kind)
                inp = inputs(rng, n, sms, kind)
                for v in variants:
                    prog = program if v == "full" else variant(program, v)
                    with vdir.compile(prog, backend="cuda", options=options) as exe:
                        if v == "full":  # the result first
                            _check(exe(**inp), inp, n, sms, kind)
                        times[v].append(float(np.median(exe.time(**inp, iterations=30))))
            for v in variants:
                t1, t2 = times[v]
                per_uop_ns = 1000 * (t2 - t1) / (sizes[1] - sizes[0])
                rows.append({"sms": sms, "variant": v, "lowering": lowering, "gemv": opts.gemv, "vecmat": opts.vecmat,
                             "us": dict(zip(map(str, sizes), (t1, t2), strict=True)), "ns_per_triple": per_uop_ns})
                print(f"{sms:4d} SMs  {v:<11} {lowering or 'defaults':<14} {t1:9.1f} us ({sizes[0]}/SM)  "
                      f"{t2:9.1f} us ({sizes[1]}/SM)  -> {per_uop_ns:7.1f} ns per micro-op on the slowest engine",
                      flush=True)
    if opts.json:
        Path(opts.json).write_text(json.dumps(rows, indent=1))
    return 0


def _check_on_the_simulator(kind: Kind) -> int:
    """The programs (small) on the simulator, checked against the reference."""
    import vdir

    rng = np.random.default_rng(0)
    for n, sms in ((16, 1), (8, 4)):
        inp = inputs(rng, n, sms, kind)
        with vdir.compile(compile_program(n, sms, kind)) as exe:
            _check(exe(**inp), inp, n, sms, kind)
        print(f"{n} triples on each of {sms} SMs on the simulator: as the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
