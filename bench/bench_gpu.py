"""GPU benchmark: pipeline-compiled vdir programs against the copy ceiling and torch.

Run on a machine with an H100/H200 and PyTorch:

    python3 bench/bench_gpu.py [--quick] [--json FILE]
    python3 bench/bench_gpu.py --sim      # no GPU: the same programs, small, on the simulator

Prints one table; every figure comes from this one run. Times are medians of
many launches timed with CUDA events around each kernel (or graph replay),
the launches queued behind a gate so they run back to back. Each gemv and
the MLP block rotate several weight sets whose total is well over the 60 MiB
L2, for vdir and the torch baselines alike, so weights stream from HBM. The
16-layer MLP stack is not rotated: its 1.5 GiB of weights are 25 times the
L2 by themselves.

vdir programs are built with ``vdir.frontend.examples`` and compiled by the
pass pipeline (``compile_to_encoded``) for all SMs of the device; each
program is compiled and JIT-loaded once per run, outside the timed region.
The sync block advances on the device, so nothing is reset between timed launches.

Bandwidth counts the bytes that must move: for a gemv weights + x + y; for
the MLP the weights (each read once), the norm weights and the residual
input and output (the 16 KiB activation scratch row is left out); read +
written for the copy.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from vdir import isa  # noqa: E402
from vdir.families import DTYPE_BYTES, FAMILIES  # noqa: E402
from vdir.lowering.options import LoweringOptions  # noqa: E402
from vdir.target import DEFAULT_TARGET, TargetDescription, get_target  # noqa: E402
from vdir.testing.assembler import ProgramAssembler  # noqa: E402

L2_BYTES = 60 * 2**20
EPS = 1e-5
#: gemv: max |vdir - ref| / max |ref| allowed, ref the f32 product of the same bf16 data.
#: (The MLP check is relative to torch: vdir's error against the same math in f32
#: may be at most twice torch bf16's own, plus 1e-3.)
TOL_GEMV = 1e-2
TOL_MLP = 2e-2  # the simulator check against the host math
#: lowering options tried beside the table's, on gemv 8192 x 8192 and the MLP programs
SWEEP = ({"tensor_copies": 0}, {"release_fence": 1}, {"bit_signal": "xor32"}, {"stream_evict_first": 0})
#: (down_rows, down_chunks, scheduler prefetch) of the 16-layer stack tried beside the
#: example's (8, 2, 2): more activation chunks let the down projection start on the
#: chunks other SMs finished first
STACK_TILINGS = ((16, 4, 2),)
#: the same, for tensor copies of fewer rows per box (the program's tensor maps re-assigned)
BOX_SWEEP = ({"box": "view=2"}, {"box": "box_rows=1"})

#: gemv tiles per shape for ``build_gemv``: (rows_per_tile, k_chunks), best first guess
#: first. 64 KiB weight tiles where the shape allows; rows >= 8 (a stored y row is 16 B).
GEMV_TILES = {
    (2048, 2048): [(16, 1), (8, 1)],
    (8192, 2048): [(16, 1), (8, 1)],
    (2048, 8192): [(8, 2), (8, 4)],
    (8192, 8192): [(8, 2)],
    (28672, 8192): [(8, 2)],
}


def _pick_rows(M: int, K: int, num_sms: int, tile_kib: int) -> int:
    """Tile rows: a power of two, the tile at most ``tile_kib`` KiB, and at
    least ~2 tiles per SM where the matrix allows it (load balance)."""
    r = max(1, (tile_kib * 1024) // (2 * K))
    r = 1 << int(math.log2(r))
    while r > 1 and M // r < 2 * num_sms:
        r //= 2
    while M % r:
        r //= 2
    return r


def build_gemv_program(M: int, K: int, num_sms: int, tile_kib: int = 32, slots: int = 4) -> isa.EncodedProgram:
    """y[1,M] = w[M,K] . x[1,K] as a hand-built program over ``num_sms`` SMs.

    Buffers: w (MxK bf16), x (1xK bf16), y (1xM bf16, output). The weights are
    cut into tiles of R rows (R chosen by :func:`_pick_rows`), tiles go to the
    SMs round-robin, and each SM streams its tiles through a ring of ``slots``
    shared-memory slots; x is loaded once per SM.

    Dependency bits per SM: 0 = x loaded; 1+s = slot s full (load -> compute);
    16+s = slot s free (compute -> load, the WAR edge); 32+s = result slot s
    full (compute -> store); 48+s = result slot s free (store -> compute). A
    waiter waits for the parity its producer's n-th toggle leaves.
    """
    assert slots <= 15
    R = _pick_rows(M, K, num_sms, tile_kib)
    T = M // R
    tile = R * K * 2
    bufs = [isa.BufferInfo("w", (M, K), "bf16", False), isa.BufferInfo("x", (1, K), "bf16", False),
            isa.BufferInfo("y", (1, M), "bf16", True)]
    align = lambda n: (n + 1023) // 1024 * 1024  # noqa: E731
    slot_off = [s * align(tile) for s in range(slots)]
    x_off = slots * align(tile)
    out_off = [x_off + align(2 * K) + s * 128 for s in range(slots)]
    smem = out_off[-1] + max(128, 2 * R)
    used = min(num_sms, T)
    a = ProgramAssembler(used, bufs, smem)
    gemv = FAMILIES["gemv"].opcode
    for sm in range(used):
        a.load(sm, 1, 0, 1, 2 * K, 2 * K, x_off, signal=1, name=f"x -> SM{sm}")
        for i, t in enumerate(range(sm, T, used)):
            s, u = i % slots, i // slots
            full, free, ofull, ofree = 1 << (1 + s), 1 << (16 + s), 1 << (32 + s), 1 << (48 + s)
            # load tile t into slot s once the compute of its previous use is done
            a.load(sm, 0, t * tile, R, 2 * K, 2 * K, slot_off[s],
                   wait=free if u else 0, parity=free if u % 2 else 0, signal=full, name=f"load w[{t}]")
            wmask = 1 | full | (ofree if u else 0)
            wpar = 1 | (full if (u + 1) % 2 else 0) | (ofree if u % 2 else 0)
            a.compute(sm, gemv, out_off[s], [slot_off[s], x_off], R, K, 0,
                      wait=wmask, parity=wpar, signal=free | ofull, name=f"gemv tile {t}")
            a.store(sm, 2, t * R * 2, 1, 2 * R, 2 * R, out_off[s],
                    wait=ofull, parity=ofull if (u + 1) % 2 else 0, signal=ofree, name=f"store y[{t}]")
    return a.finish()


# ---------------------------------------------------------------------------
# Programs compiled by the pipeline
# ---------------------------------------------------------------------------

def compile_gemv(M: int, K: int, rows: int, k_chunks: int, num_sms: int,
                 pipeline: dict | None = None) -> isa.EncodedProgram:
    """``build_gemv`` through the pass pipeline (``pipeline``: more of its options, e.g. ``side_loads``)."""
    from vdir.frontend.examples import build_gemv
    from vdir.transforms.pipeline import compile_to_encoded

    return compile_to_encoded(build_gemv(M, K, rows_per_tile=rows, k_chunks=k_chunks), num_sms=num_sms,
                              **(pipeline or {}))


def compile_mlp(layers: int | None, hidden: int, inter: int, num_sms: int, prefetch: int = 2,
                keep_trips: bool = False, pipeline: dict | None = None, **tiling) -> isa.EncodedProgram:
    """``build_mlp_block`` (layers None) or ``build_mlp_stack`` through the pass pipeline.

    ``prefetch`` is the scheduler's: independent loads moved ahead of each
    load that waits on other SMs; ``keep_trips``: vdir-place's (every layer
    placed as the first); ``tiling``: the builders' ``up_rows``,
    ``down_rows``, ``down_chunks``; ``pipeline``: more of the pipeline's options (e.g.
    ``side_loads``); with ``flag_words`` among them, ``act`` is declared scratch (the caller never
    reads it), so that the hand-offs through it may go as words alone.
    """
    from vdir.frontend.examples import build_mlp_block, build_mlp_stack
    from vdir.transforms.pipeline import compile_to_encoded

    scratch_act = bool((pipeline or {}).get("flag_words"))
    if layers is None:
        mod = build_mlp_block(hidden, inter, eps=EPS, scratch_act=scratch_act, **tiling)
    else:
        mod = build_mlp_stack(layers, hidden, inter, eps=EPS, scratch_act=scratch_act, **tiling)
    return compile_to_encoded(mod, num_sms=num_sms, prefetch=prefetch, keep_trips=keep_trips, **(pipeline or {}))


def uops_per_sm(prog: isa.EncodedProgram) -> tuple[int, int]:
    """(max, mean) micro-ops per SM over the used SMs (all engines' queues)."""
    per = [sum(int(count) for _start, count in sm) for sm in prog.queues]  # (start, count) per engine
    return max(per), int(round(sum(per) / max(len(per), 1)))


def variant(prog: isa.EncodedProgram, kind: str) -> isa.EncodedProgram:
    """``prog`` with some engines' instructions made nops (same waits and signals).

    ``load_only``: computes and stores are nops (the load engine, the
    hand-offs and the cross-SM counters remain). ``loads_free``: only the load
    queues run, with no waits: how fast this program's loads stream.
    ``only=ENGINE`` (``compute``, ``store``, ...): only that engine's queues
    run, with no waits, on whatever the shared memory holds (timing only: the
    results are garbage): that engine's own cost per micro-op.
    """
    prog = prog.without_loops()  # the records changed below are executed instructions
    instrs = prog.instrs.copy()
    ops = instrs[:, isa.W_OPCODE] & 0xFF
    queues = prog.queues
    if kind == "loads_free" or kind.startswith("only="):  # some queues run, with no waits; the rest are emptied
        target = get_target(prog.target)
        kept = set(target.load_engines) if kind == "loads_free" else {_engine_index(target, kind[len("only="):])}
        instrs[:, isa.W_WAIT_MASK:isa.W_WAIT_MASK + 2] = 0
        instrs[:, isa.W_WAIT_COUNTER] = 0
        instrs, queues = _kept_queues(instrs, prog.queues, kept)
        isa.assign_tensor_maps(instrs, prog.buffers)  # the kept instructions' maps, numbered densely
    elif kind == "no_counter_waits":  # racy: only to time what the cross-SM waits cost
        instrs[:, isa.W_WAIT_COUNTER] = 0
    elif kind.startswith("box_rows="):  # tensor copies of at most that many rows per box
        isa.assign_tensor_maps(instrs, prog.buffers, max_box_rows=int(kind.split("=")[1]))
    elif kind.startswith("view="):  # tensor maps viewing buffers as elements of that many bytes
        isa.assign_tensor_maps(instrs, prog.buffers, view_bytes=int(kind.split("=")[1]))
    elif kind == "load_only":
        nop = (ops == isa.OP_STORE) | (ops == isa.OP_COMPUTE)
        instrs[nop, isa.W_OPCODE] = isa.OP_NOP
        instrs[nop, isa.TMAP.word] = 0  # a nop copies nothing: the stores' maps go, the rest renumbered densely
        isa.assign_tensor_maps(instrs, prog.buffers)
    return dataclasses.replace(prog, instrs=instrs, queues=queues)


def _kept_queues(instrs: np.ndarray, queues: list, kept: set[int]) -> tuple[np.ndarray, list]:
    """The instructions of the queues of the engines ``kept`` alone, laid out one queue after another in
    table order as an encoded program's are (``isa.check_queue_layout``), and their queue table; the
    other engines' queues are empty."""
    parts, table, start = [], [], 0
    for row in queues:
        entries = []
        for e, (first, count) in enumerate(row):
            count = count if e in kept else 0
            parts.append(instrs[first:first + count])
            entries.append((start, count))
            start += count
        table.append(entries)
    return (np.concatenate(parts) if parts else instrs[:0]), table


def _engine_index(target: TargetDescription, name: str) -> int:
    """The queue index of ``name`` on ``target``; a one-line exit naming the engines where it has none."""
    try:
        return target.engine_index(name)
    except KeyError:
        raise SystemExit(f"variant only={name}: the target's engines are {', '.join(target.engine_names)}") from None


def _u64(w: np.ndarray, at: int) -> int:
    return int(w[at]) | (int(w[at + 1]) << 32)


def np_mlp(h, g, wg, wu, wd):
    """out = h + Wd . (silu(Wg . xn) * (Wu . xn)), xn = rmsnorm(h) * g; bf16 in and out."""
    from ml_dtypes import bfloat16

    from vdir.families import rmsnorm_f32, silu

    f = lambda a: np.asarray(a, np.float32)  # noqa: E731
    bf = lambda a: np.asarray(a, np.float32).astype(bfloat16)  # noqa: E731
    xn = bf(rmsnorm_f32(h, g, EPS))
    gate, up = bf(f(xn) @ f(wg).T), bf(f(xn) @ f(wu).T)
    a = bf(silu(f(gate)) * f(up))
    return bf(f(bf(f(a) @ f(wd).T)) + f(h))


def np_mlp_stack(inp: dict[str, np.ndarray], layers: int) -> np.ndarray:
    """Rows 1..layers of the residual stream of a stack (``mlp_inputs``' arrays), layer by layer with
    :func:`np_mlp`."""
    H, I = inp["g"].shape[1], inp["wg"].shape[0] // layers  # noqa: E741 -- I: the intermediate size
    h, rows = inp["hs"][:1], []
    for k in range(layers):
        h = np_mlp(h, inp["g"][k:k + 1], inp["wg"][k * I:(k + 1) * I], inp["wu"][k * I:(k + 1) * I],
                   inp["wd"][k * H:(k + 1) * H])
        rows.append(h)
    return np.concatenate(rows)


def run_mlp(exe, inp: dict[str, np.ndarray], layers: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(the output, the numpy reference) of an MLP block (``layers`` None) or stack compiled as ``exe``,
    on ``mlp_inputs``' arrays; a stack's output rows start as NaN, so every one must be written."""
    w = {k: inp[k] for k in ("g", "wg", "wu", "wd")}
    if layers is None:
        return _named(exe(h=inp["hs"][:1], **w), "out"), np_mlp(inp["hs"][:1], *w.values())
    hs = inp["hs"].copy()
    hs[1:] = np.nan
    return _named(exe(hs=hs, **w), "hs")[1:], np_mlp_stack(inp, layers)


def _named(got, name: str) -> np.ndarray:
    """Output ``name`` of a call's result: a dict of outputs, or the only one (``act`` scratch)."""
    return got[name] if isinstance(got, dict) else got


def mlp_inputs(rng, layers: int, hidden: int, inter: int) -> dict[str, np.ndarray]:
    """Random bf16 inputs (never zeros) for a stack of ``layers`` (names of ``build_mlp_stack``)."""
    from ml_dtypes import bfloat16

    r = lambda shape, s=1.0, o=0.0: (rng.standard_normal(shape) * s + o).astype(bfloat16)  # noqa: E731
    return {"hs": r((layers + 1, hidden)), "g": r((layers, hidden), 0.1, 1.0),
            "wg": r((layers * inter, hidden), hidden ** -0.5), "wu": r((layers * inter, hidden), hidden ** -0.5),
            "wd": r((layers * hidden, inter), inter ** -0.5)}


def sim_main(opts) -> int:
    """The bench's programs at small sizes on the simulator, checked against the host math."""
    from ml_dtypes import bfloat16

    import vdir

    rng = np.random.default_rng()
    worst = 0.0
    nsm = 4
    for (M, K), tiles in GEMV_TILES.items():  # the same tile choices, shapes divided by 16 / 8
        m, k = M // 16, K // 8
        for rows, kc in tiles:
            w = (rng.standard_normal((m, k)) * k ** -0.5).astype(bfloat16)
            x = rng.standard_normal((1, k)).astype(bfloat16)
            t0 = time.time()
            exe = vdir.compile(compile_gemv(m, k, rows, kc, nsm), backend="sim")
            y = exe(w=w, x=x)
            ref = FAMILIES["gemv"].run([w, x], {}, "bf16").astype(np.float32)
            err = float(np.max(np.abs(y.astype(np.float32) - ref)) / np.max(np.abs(ref)))
            worst = max(worst, err / TOL_GEMV)
            print(f"sim gemv {m}x{k} rows={rows} k_chunks={kc}: max rel err {err:.2e} ({time.time() - t0:.1f} s)")
    for layers in (None, 2):
        H, I = 256, 512  # noqa: E741 -- I: the MLP's intermediate size, as in its formulas
        inp = mlp_inputs(rng, layers or 1, H, I)
        exe = vdir.compile(compile_mlp(layers, H, I, nsm), backend="sim")
        out, ref = run_mlp(exe, inp, layers)
        o, r = out.astype(np.float32), ref.astype(np.float32)
        err = float(np.max(np.abs(o - r)) / np.max(np.abs(r)))
        worst = max(worst, err / TOL_MLP if np.isfinite(err) else math.inf)
        print(f"sim mlp {'block' if layers is None else f'stack x{layers}'} {H}/{I}: max rel err {err:.2e}")
    if not opts.quick:  # the real sizes compile (tile choices accepted by the pipeline)
        for (M, K), tiles in GEMV_TILES.items():
            for rows, kc in tiles:
                p = compile_gemv(M, K, rows, kc, 132)
                print(f"compiled gemv {M}x{K} rows={rows} k_chunks={kc}: {len(p.instrs)} uops, "
                      f"{p.smem_bytes} B smem")
        t0 = time.time()
        p = compile_mlp(16, 2048, 8192, 132)
        print(f"compiled mlp stack x16: {len(p.instrs)} uops, {p.num_counters} counters, "
              f"uops/SM (max, mean) {uops_per_sm(p)}, {time.time() - t0:.1f} s")
    print("sim check", "PASS" if worst <= 1.0 else "FAIL")
    return 0 if worst <= 1.0 else 1


# ---------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------

def device_target() -> str:
    """The target that describes the GPU (``CudaPlatform.device_target``; the default target for a GPU
    none describes, or without one). The benches compile for it: what the pass pipeline leaves to the
    target (the stream holds, :attr:`vdir.target.TargetDescription.stream_holds`) is then the measured
    GPU's, as the stream rings are at lowering (:meth:`vdir.target.TargetDescription.on_device`)."""
    from vdir.device_runtime.cuda import CudaPlatform

    return CudaPlatform.device_target() or DEFAULT_TARGET


def gpu_sm_count() -> int | None:
    """The CUDA device's SM count, or None (after printing why) when no GPU is usable."""
    from vdir.device_runtime.cuda import CudaPlatform

    ok, why = CudaPlatform.is_available()
    if not ok:
        print(f"no GPU: {why}")
        return None
    plat = CudaPlatform()
    try:
        return plat.target().num_sms
    finally:
        plat.close()


class VdirCase:
    """One program bound to several sets of torch tensors (one artifact, JIT-loaded once).

    Each set gets its own sync block (and, inside the artifact, its own
    pointer table), so sets can be launched in rotation.
    """

    def __init__(self, plat, prog: isa.EncodedProgram, sets: list[dict], lowering: LoweringOptions, **options):
        from vdir.device_runtime.platform import DeviceBuffer, LaunchSpec

        self.plat, self.prog = plat, prog
        art0 = plat.load_artifact(prog, lowering)
        self.arts = [art0] * len(sets)
        self.specs = []
        for s in sets:
            sync = plat.allocate(prog.sync_bytes)
            plat.fill_zero(sync)
            bufs = []
            for info in prog.buffers:
                t = s[info.name]
                assert t.is_contiguous() and t.dtype.itemsize == DTYPE_BYTES[info.dtype], info
                assert tuple(t.shape) == tuple(info.shape), info
                bufs.append(DeviceBuffer(t.data_ptr(), t.numel() * t.element_size(), plat, owned=False, keepalive=t))
            self.specs.append(LaunchSpec(prog, bufs, sync, options=dict(options)))

    @property
    def stream_ring(self) -> int:
        """The weight tiles in flight per SM that the kernel was built with (the option's, else the GPU's
        for the program)."""
        return self.arts[0].lowered.stream_ring

    def run_all(self) -> None:
        """One launch of every set (torch's writes must be finished: synchronize first)."""
        for a, s in zip(self.arts, self.specs, strict=True):
            self.plat.launch(a, s)
        self.plat.synchronize()

    def time(self, n: int) -> float:
        """Median us over ``n`` launches, sets in rotation."""
        return float(np.median(self.plat.time_launches(self.arts, self.specs, n)))


# ---------------------------------------------------------------------------
# torch: timing, checks and the MLP baseline (shared with bench_sweep.py)
# ---------------------------------------------------------------------------

def torch_times(fn, n):
    """Median event time (us) of ``fn(i)`` for i < n, queued behind a sleep in batches of 64."""
    import torch

    out = []
    for b0 in range(0, n, 64):
        evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
               for _ in range(min(64, n - b0))]
        torch.cuda._sleep(20_000_000)  # hold the stream so the batch runs back to back
        for k, (e0, e1) in enumerate(evs):
            e0.record()
            fn(b0 + k)
            e1.record()
        torch.cuda.synchronize()
        out += [1000.0 * e0.elapsed_time(e1) for e0, e1 in evs]
    return float(np.median(out))


def relerr(got, ref) -> float:
    """max |got - ref| / max |ref| of two torch tensors (inf where not finite)."""
    e = ((got.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
    return e if math.isfinite(e) else math.inf


def copy_time_us(nbytes: int) -> float:
    """Median us of a device-to-device copy of ``nbytes`` (``nbytes`` read and as many written)."""
    import torch

    src = [torch.empty(nbytes // 2, dtype=torch.bfloat16, device="cuda").normal_() for _ in range(2)]
    dst = torch.empty_like(src[0])
    torch_times(lambda i, dst=dst, src=src: dst.copy_(src[i % 2]), 4)
    copy_us = torch_times(lambda i, dst=dst, src=src: dst.copy_(src[i % 2]), 40)
    del src, dst
    return copy_us


def mlp_torch_sets(layers: int, hidden: int, inter: int, n: int, device="cuda") -> list[dict]:
    """``n`` sets of fresh random bf16 tensors for ``build_mlp_block`` / ``build_mlp_stack`` (their
    names), weights scaled as a trained model's; ``h`` and ``out`` are views of rows 0 and 1 of
    ``hs``, whose rows 1.. the program writes."""
    import torch

    def r(*shape, s=1.0, o=0.0):
        return torch.randn(*shape, dtype=torch.bfloat16, device=device) * s + o

    sets = [{"hs": r(layers + 1, hidden), "g": r(layers, hidden, s=0.1, o=1.0),
             "wg": r(layers * inter, hidden, s=hidden ** -0.5), "wu": r(layers * inter, hidden, s=hidden ** -0.5),
             "wd": r(layers * hidden, inter, s=inter ** -0.5),
             "act": torch.empty(layers, inter, dtype=torch.bfloat16, device=device)} for _ in range(n)]
    for s in sets:
        s["h"], s["out"] = s["hs"][0:1], s["hs"][1:2]
    return sets


def torch_mlp_layer(h, g, wg, wu, wd):
    """One MLP block in torch: ``h + Wd . (silu(Wg . xn) * (Wu . xn))``, ``xn = rmsnorm(h) * g``."""
    import torch.nn.functional as Fn

    xn = Fn.rms_norm(h, (h.shape[-1],), g.reshape(-1), EPS)
    a = Fn.silu(Fn.linear(xn, wg)) * Fn.linear(xn, wu)
    return h + Fn.linear(a, wd)


def torch_mlp_stack(s, layers, dtype=None):
    """The stack's rows 1..layers (names of ``build_mlp_stack``); ``dtype`` float32: the same math on upcast data."""
    H, I = s["hs"].shape[1], s["wg"].shape[0] // layers  # noqa: E741 -- I: the MLP's intermediate size
    c = (lambda t: t) if dtype is None else (lambda t: t.to(dtype))  # noqa: E731
    h, outs = c(s["hs"][:1]), []
    for k in range(layers):
        h = torch_mlp_layer(h, c(s["g"][k:k + 1]), c(s["wg"][k * I:(k + 1) * I]), c(s["wu"][k * I:(k + 1) * I]),
                            c(s["wd"][k * H:(k + 1) * H]))
        outs.append(h)
    return outs


def graph_of(fn):
    """A CUDA graph of ``fn()`` (warmed up on a side stream first) and its static outputs."""
    import torch

    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out


def gpu_main(opts) -> int:
    import torch
    import torch.nn.functional as Fn

    from vdir.device_runtime.cuda import CudaPlatform

    ok, why = CudaPlatform.is_available()
    if not ok:
        print(f"no GPU: {why}")
        return 1
    plat = CudaPlatform()
    base_lowering: LoweringOptions = opts.lowering
    nsm = plat.target().num_sms
    on_gpu = {"target": device_target()}  # the pipeline options of every program here
    iters = 50 if opts.quick else opts.iters
    dev = torch.device("cuda")
    torch.manual_seed(int(time.time()))
    torch.backends.cuda.matmul.allow_tf32 = False  # the f32 references are f32
    rows: list[dict] = []
    notes: list[str] = []
    failed = []

    # ---- copy ceiling --------------------------------------------------------
    nbytes = 1 << 30
    copy_us = copy_time_us(nbytes)
    copy_tbs = 2 * nbytes / copy_us / 1e6
    rows.append(dict(case="copy 1 GiB (read+write)", moved=2 * nbytes, vdir=None, torch=copy_us, graph=None,
                     err=None, cfg="torch d2d copy: the ceiling"))

    # ---- gemv ------------------------------------------------------------------
    shapes = list(GEMV_TILES)
    if opts.quick:
        shapes = [(2048, 2048), (8192, 8192)]
    for M, K in shapes:
        wbytes = M * K * 2
        nsets = max(2, min(32, math.ceil(2.5 * L2_BYTES / wbytes)))
        sets = [{"w": torch.randn(M, K, dtype=torch.bfloat16, device=dev) * (K ** -0.5),
                 "x": torch.randn(1, K, dtype=torch.bfloat16, device=dev),
                 "y": torch.empty(1, M, dtype=torch.bfloat16, device=dev)} for _ in range(nsets)]
        moved = wbytes + 2 * K + 2 * M
        torch_times(lambda i, sets=sets, nsets=nsets: Fn.linear(sets[i % nsets]["x"], sets[i % nsets]["w"]), 8)
        t_us = torch_times(lambda i, sets=sets, nsets=nsets: Fn.linear(sets[i % nsets]["x"], sets[i % nsets]["w"]),
                           iters)
        refs = [(s["w"].float() @ s["x"].float().reshape(-1)).reshape(1, -1) for s in sets]
        torch.cuda.synchronize()

        def run_vdir(prog, lowering=base_lowering, sets=sets, nsets=nsets, refs=refs):
            case = VdirCase(plat, prog, sets, lowering)
            case.time(2 * nsets)  # warm-up
            for s in sets:
                s["y"].fill_(float("nan"))  # poisoned: every element must be written
            torch.cuda.synchronize()
            case.run_all()
            err = max(relerr(s["y"], r) for s, r in zip(sets, refs, strict=True))
            return case.time(iters), err, case.stream_ring

        best = None
        for r, kc in GEMV_TILES[(M, K)]:
            t0 = time.time()
            prog = compile_gemv(M, K, r, kc, nsm, on_gpu)
            ct = time.time() - t0
            try:
                v_us, err, ring = run_vdir(prog)
            except Exception as e:  # noqa: BLE001  (a watchdog report: say so, go on)
                print(f"  gemv {M}x{K} rows={r} k_chunks={kc}: FAILED {type(e).__name__}: {str(e)[:300]}")
                failed.append(f"gemv {M}x{K} rows={r} k_chunks={kc}")
                if getattr(plat, "_closed", False):
                    raise
                continue
            cfg = f"rows={r} k_chunks={kc} tile={r * K // kc * 2 // 1024}KiB ring={ring}"
            print(f"  gemv {M}x{K} pipeline {cfg}: {v_us:.2f} us {moved / v_us / 1e6:.3f} TB/s err {err:.2e} "
                  f"({len(prog.instrs)} uops, compiled in {ct:.2f} s)")
            if best is None or v_us < best[0]:
                best = (v_us, err, cfg, (r, kc))
        hb = ""
        if (M, K) == (8192, 8192) and best is not None and not opts.quick:
            # other lowering options on the best tiling, same sets
            prog0 = compile_gemv(M, K, *best[3], nsm, on_gpu)
            for o in SWEEP + BOX_SWEEP:
                prog = variant(prog0, o["box"]) if "box" in o else prog0
                d_us, d_err, _ring = run_vdir(prog, base_lowering.with_overrides({k: v for k, v in o.items() if k != "box"}))
                notes.append(f"gemv {M}x{K} {best[2]} lowering {o}: {d_us:.2f} us "
                             f"({moved / d_us / 1e6:.3f} TB/s, {100 * moved / d_us / 1e6 / copy_tbs:.1f}% of copy; "
                             f"err {d_err:.1e})")
                print(f"  {notes[-1]}")
                if d_err > TOL_GEMV:
                    failed.append(f"gemv {M}x{K} lowering {o}")
        if not opts.no_handbuilt:
            h_us, h_err, _ring = run_vdir(build_gemv_program(M, K, nsm, 64, 3))
            print(f"  gemv {M}x{K} hand-built 64KiB/3 slots: {h_us:.2f} us err {h_err:.2e}")
            hb = f"; hand-built {h_us:.1f} us"
        if best is None:
            continue
        v_us, err, cfg, _tiling = best
        if err > TOL_GEMV:
            failed.append(f"gemv {M}x{K}")
        rows.append(dict(case=f"gemv {M}x{K}", moved=moved, vdir=v_us, torch=t_us, graph=None, err=err,
                         cfg=cfg + f"; {nsets} sets" + hb))
        del sets, refs
        torch.cuda.empty_cache()

    # ---- MLP: the torch baselines ---------------------------------------------
    H, I = 2048, 8192  # noqa: E741 -- I: the MLP's intermediate size, as in its formulas

    mlp_cases = [("MLP block", None, 3), ("MLP stack x16", 16, 1)]
    if opts.quick:
        mlp_cases = [("MLP block", None, 3), ("MLP stack x4", 4, 1)]
    diag = None
    for name, layers, nsets in mlp_cases:
        L = layers or 1
        sets = mlp_torch_sets(L, H, I, nsets, dev)
        wbytes = 3 * L * H * I * 2
        moved = wbytes + L * H * 2 + 2 * H * 2
        # torch eager and graphs (weights counted once: the graph replays the same math)
        eager = lambda i, sets=sets, nsets=nsets, L=L: torch_mlp_stack(sets[i % nsets], L)  # noqa: E731
        torch_times(eager, 4)
        e_us = torch_times(eager, iters)
        graphs = [graph_of(lambda s=s, L=L: torch_mlp_stack(s, L)) for s in sets]
        torch_times(lambda i, graphs=graphs, nsets=nsets: graphs[i % nsets][0].replay(), 4)
        g_us = torch_times(lambda i, graphs=graphs, nsets=nsets: graphs[i % nsets][0].replay(), iters)
        # vdir: compiled once, outside the timed region
        t0 = time.time()
        prog = compile_mlp(layers, H, I, nsm, pipeline=on_gpu)
        ct = time.time() - t0
        refs = [torch.cat(torch_mlp_stack(s, L)) for s in sets]
        refs32 = [torch.cat(torch_mlp_stack(s, L, torch.float32)) for s in sets]  # the same math in f32
        err_t32 = max(relerr(r, r32) for r, r32 in zip(refs, refs32, strict=True))
        for s in sets:
            s["hs"][1:].fill_(float("nan"))  # poisoned: every output row must be written
        torch.cuda.synchronize()
        case = VdirCase(plat, prog, sets, base_lowering)
        case.run_all()
        errs = [relerr(s["hs"][1:], r) for s, r in zip(sets, refs, strict=True)]
        err_last = max(relerr(s["hs"][L:], r[L - 1:]) for s, r in zip(sets, refs, strict=True))
        err = max(errs)
        err_v32 = max(relerr(s["hs"][1:], r32) for s, r32 in zip(sets, refs32, strict=True))
        del refs32
        case.time(4)
        v_us = case.time(iters)
        # same run, again: the spread of repeated medians
        v_us2 = case.time(iters)
        mx, mean = uops_per_sm(prog)
        print(f"  {name}: vdir {v_us:.1f} / {v_us2:.1f} us (two medians), torch eager {e_us:.1f} us, "
              f"torch graph {g_us:.1f} us; {len(prog.instrs)} uops, uops/SM max {mx} mean {mean}, "
              f"{prog.num_counters} counters; compiled in {ct:.1f} s; max rel err all rows {err:.2e}, "
              f"last row {err_last:.2e}; vs the f32 math: vdir {err_v32:.2e}, torch bf16 {err_t32:.2e}")
        if err_v32 > 2 * err_t32 + 1e-3:
            failed.append(name)
        ring = case.stream_ring
        rows.append(dict(case=name, moved=moved, vdir=v_us, torch=e_us, graph=g_us, err=err,
                         cfg=f"{nsets} set(s); {mx} uops on the busiest SM; stream ring {ring}; "
                             f"vs f32 math: vdir {err_v32:.1e}, torch {err_t32:.1e}"))
        if layers is None and not opts.quick:
            for o in SWEEP:  # other lowering options, same sets
                vc = VdirCase(plat, prog, sets, base_lowering.with_overrides(o))
                for s in sets:
                    s["hs"][1:].fill_(float("nan"))
                torch.cuda.synchronize()
                vc.run_all()
                d_err = max(relerr(s["hs"][1:], r) for s, r in zip(sets, refs, strict=True))
                vc.time(4)
                d_us = vc.time(iters)
                notes.append(f"{name} lowering {o}: {d_us:.1f} us ({moved / d_us / 1e6:.3f} TB/s; "
                             f"max rel err {d_err:.2e})")
                print(f"  {notes[-1]}")
                del vc
        if layers is not None and not opts.quick:
            diag = (name, prog, sets, refs, moved, L, v_us, mx, (layers, H, I))
        del graphs, case
        if layers is None:
            del sets, refs
        torch.cuda.empty_cache()

    # ---- the table ---------------------------------------------------------------
    print()
    print(f"device: {torch.cuda.get_device_name()}  SMs: {nsm}  date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
          f"  launches per figure: {iters} (median)  torch {torch.__version__}"
          f"  lowering options: {base_lowering.changed() or 'defaults'}")
    pct = lambda us, mv: 100.0 * (mv / us / 1e6) / copy_tbs  # noqa: E731
    hdr = (f"{'case':<24} {'MiB':>7} {'vdir us':>8} {'TB/s':>6} {'%copy':>6} {'torch us':>9} {'TB/s':>6} "
           f"{'%copy':>6} {'graph us':>9} {'TB/s':>6} {'vdir speedup':>12} {'max rel err':>11}  notes")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        mv = r["moved"]
        if r["vdir"] is None:
            print(f"{r['case']:<24} {mv / 2**20:>7.1f} {'':>8} {'':>6} {'':>6} {r['torch']:>9.2f} "
                  f"{mv / r['torch'] / 1e6:>6.3f} {100.0:>5.1f}%  {r['cfg']}")
            continue
        best = r["graph"] if r["graph"] is not None else r["torch"]
        gcol = (f"{r['graph']:>9.2f} {mv / r['graph'] / 1e6:>6.3f}" if r["graph"] is not None
                else f"{'-':>9} {'-':>6}")
        print(f"{r['case']:<24} {mv / 2**20:>7.1f} {r['vdir']:>8.2f} {mv / r['vdir'] / 1e6:>6.3f} "
              f"{pct(r['vdir'], mv):>5.1f}% {r['torch']:>9.2f} {mv / r['torch'] / 1e6:>6.3f} {pct(r['torch'], mv):>5.1f}% "
              f"{gcol} {best / r['vdir']:>11.2f}x {r['err']:>11.2e}  {r['cfg']}")
    print("vdir speedup: over torch graphs where measured, else over torch eager (cuBLAS for a gemv)")
    print(f"tolerance: gemv: max|vdir - ref| / max|ref| <= {TOL_GEMV}, ref the f32 product of the same bf16 data; "
          "MLP (all output rows): max rel err of vdir vs the f32 math <= 2 x torch bf16's own + 1e-3; "
          "the column shows vdir vs torch bf16")
    for n in notes:
        print("note:", n)
    print("correctness:", "PASS" if not failed else "FAIL " + ", ".join(failed))

    # ---- where the stack's time goes (after the table: an experiment that fails cannot lose it)
    if diag is not None:
        name, prog, sets, refs, moved, L, v_us, mx, diag_shape = diag
        notes.append(f"{name}: {v_us / L:.1f} us per layer; {1e3 * v_us / mx:.0f} ns per uop on the busiest SM")
        print(f"note: {notes[-1]}")
        exps = [(kind, variant(prog, kind), {})
                for kind in ("load_only", "loads_free", "no_counter_waits", "view=2")]
        layers_hidden_inter = diag_shape
        for n in (0, 1, 3, 4):  # the scheduler's prefetch (the table uses its default, 2)
            vp = compile_mlp(*layers_hidden_inter, nsm, prefetch=n, pipeline=on_gpu)
            exps.append((f"scheduler prefetch={n}", vp, {}))
        kept = compile_mlp(*layers_hidden_inter, nsm, keep_trips=True, pipeline=on_gpu)
        exps.append(("keep_trips (every layer placed as the first; its loops unrolled on the host)", kept, {}))
        exps.append(("keep_trips, the engines run its loops (run_loops=1)", kept, {"run_loops": True}))
        exps += [(f"lowering {o}", prog, o) for o in SWEEP]
        for rows, chunks, pf in STACK_TILINGS:  # other tilings of the down projection
            vp = compile_mlp(*layers_hidden_inter, nsm, prefetch=pf, pipeline=on_gpu,
                             down_rows=rows, down_chunks=chunks)
            exps.append((f"down_rows={rows} down_chunks={chunks} prefetch={pf}", vp, {}))
        for label, vp, lopts in exps:
            try:
                vc = VdirCase(plat, vp, sets, base_lowering.with_overrides(lopts), watchdog_ms=200.0)
                for s in sets:
                    s["hs"][1:].fill_(float("nan"))
                torch.cuda.synchronize()
                vc.run_all()  # a variant that cannot finish fails here, once
                err = max(relerr(s["hs"][1:], r) for s, r in zip(sets, refs, strict=True))
                vc.time(4)
                t = vc.time(max(20, iters // 4))
                exact = vp is prog or any(k in label for k in ("prefetch", "box", "view", "keep_trips"))
                what = f"max rel err {err:.2e}" if exact else "results not meaningful"
                notes.append(f"{name} {label}: {t:.1f} us ({moved / t / 1e6:.3f} TB/s; {what})")
            except Exception as e:  # noqa: BLE001  (an option the lowering refuses, a watchdog report)
                notes.append(f"{name} {label}: failed ({type(e).__name__}: {str(e)[:160]})")
                if getattr(plat, "_closed", False):
                    print(f"note: {notes[-1]}")
                    break
            print(f"note: {notes[-1]}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"copy_tbs": copy_tbs, "rows": rows, "notes": notes, "failed": failed,
                       "device": torch.cuda.get_device_name(), "iters": iters}, f, indent=1)
    if not getattr(plat, "_closed", False):
        plat.close()
    return 0 if not failed else 1


def add_lowering_argument(ap: argparse.ArgumentParser, what: str) -> None:
    """``--lowering KEY=VALUE`` (repeatable): a lowering option for every vdir program of ``what``."""
    ap.add_argument("--lowering", action="append", default=[], metavar="KEY=VALUE",
                    help=f"a lowering option for every vdir program of {what} (repeatable)")


def lowering_options(ap: argparse.ArgumentParser, values: list[str]) -> LoweringOptions:
    """The ``--lowering`` values as options; an argparse error naming a bad one."""
    try:
        return LoweringOptions.parse(" ".join(values))
    except ValueError as e:
        ap.error(f"--lowering: {e} (e.g. --lowering compute_warps=16)")


def main() -> int:
    """Parse arguments; run on the GPU (default) or the simulator (``--sim``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer shapes and launches")
    ap.add_argument("--sim", action="store_true", help="no GPU: small programs on the simulator")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--no-handbuilt", action="store_true", help="skip the hand-built gemv column")
    ap.add_argument("--json", help="also write the figures to this file")
    add_lowering_argument(ap, "the table")
    opts = ap.parse_args()
    opts.lowering = lowering_options(ap, opts.lowering)
    return sim_main(opts) if opts.sim else gpu_main(opts)


if __name__ == "__main__":
    raise SystemExit(main())
