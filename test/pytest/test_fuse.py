"""vdir-fuse: fusion never changes what a program computes; the cost model's numbers.

Random programs (chains of rmsnorm, gemv, silu_mul and add over loaded vectors,
duplicate loads, stores back into an input buffer, a repeat) are evaluated by
the reference evaluator before and after ``vdir-fuse`` and must agree bit for
bit.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from ml_dtypes import bfloat16
from xdsl.context import Context
from xdsl.dialects.affine import Affine
from xdsl.dialects.builtin import Builtin, ModuleOp

from vdir.analysis import cost_model as cm
from vdir.dialects.vdir import VDIR, ComputeOp, LoadOp, ProgramOp, TileType
from vdir.families import TileSig
from vdir.target import TARGETS, get_target
from vdir.testing.reference import evaluate
from vdir.tools.common import parse_text, verify_module
from vdir.transforms.fuse import FusePass


def _ctx() -> Context:
    ctx = Context()
    for d in (Builtin, Affine, VDIR):
        ctx.load_dialect(d)
    return ctx


def parse(text: str) -> ModuleOp:
    module = parse_text(_ctx(), text)
    verify_module(module)
    return module


def fuse(text: str, **options) -> ModuleOp:
    module = parse(text)
    FusePass(**options).apply(_ctx(), module)
    verify_module(module)
    return module


def families(module: ModuleOp) -> list[str]:
    return [op.family.data for op in module.walk() if isinstance(op, ComputeOp)]


# --------------------------------------------------------------------------
# Random programs
# --------------------------------------------------------------------------

N = 16  # every vector is 1xN, every weight tile NxN
V_ROWS = 4  # rows of the input-vector buffer (loads repeat, so some are duplicates)
W_BLOCKS = 3
OUT_ROWS = 64


def vec() -> str:
    return f"!vdir.tile<1x{N}xbf16>"


def random_program(seed: int) -> str:
    """A random, valid program over ``%v``, ``%g``, ``%w`` and ``%out``."""
    rng = np.random.default_rng(seed)
    lines: list[str] = []
    vecs: list[str] = []
    uses: dict[str, int] = {}
    counter = iter(range(10_000))
    out_row = iter(range(OUT_ROWS))
    vb, wb, ob = (
        f"!vdir.buffer<{V_ROWS}x{N}xbf16>",
        f"!vdir.buffer<{W_BLOCKS * N}x{N}xbf16>",
        f"!vdir.buffer<{OUT_ROWS}x{N}xbf16>",
    )

    def fresh(prefix: str) -> str:
        return f"%{prefix}{next(counter)}"

    def flow() -> str:
        return f" flow {rng.integers(1, 3)}" if rng.random() < 0.15 else ""

    def use(name: str) -> str:
        uses[name] = uses.get(name, 0) + 1
        return name

    def pick() -> str:
        # Prefer the newest value, which makes fusable single-use chains likely.
        if rng.random() < 0.6:
            return vecs[-1]
        return vecs[rng.integers(len(vecs))]

    def load_vec(indent: str = "  ") -> str:
        t = fresh("v")
        lines.append(f"{indent}{t} = vdir.load %v[{rng.integers(V_ROWS)}, 0]{flow()} : {vb} -> {vec()}")
        vecs.append(t)
        return t

    def compute(fam: str, args: list[str], result: str = "", params: str = "", indent: str = "  ") -> str:
        t = fresh("c")
        types = ", ".join(f"!vdir.tile<{N}x{N}xbf16>" if a.startswith("%w") else vec() for a in args)
        lines.append(
            f"{indent}{t} = vdir.compute {fam}({', '.join(use(a) for a in args)}){params}{flow()} "
            f": ({types}) -> {result or vec()}"
        )
        vecs.append(t)
        return t

    def gemv(x: str, indent: str = "  ") -> str:
        wt = fresh("w")
        lines.append(
            f"{indent}{wt} = vdir.load %w[{N * rng.integers(W_BLOCKS)}, 0] : {wb} -> !vdir.tile<{N}x{N}xbf16>"
        )
        return compute("gemv", [wt, x], indent=indent)

    load_vec()
    for _ in range(rng.integers(4, 14)):
        r = rng.random()
        if r < 0.2 or len(vecs) < 2:
            load_vec()
        elif r < 0.35:
            g = fresh("g")
            lines.append(f"  {g} = vdir.load %g[0, 0] : !vdir.buffer<1x{N}xbf16> -> {vec()}")
            compute("rmsnorm", [pick(), g], params=" {eps = 1.0e-05 : f32}")
        elif r < 0.6:
            gemv(pick())
        elif r < 0.75:
            compute("silu_mul", [pick(), pick()] if rng.random() < 0.5 else [pick(), vecs[-2]])
        elif r < 0.9:
            compute("add", [pick(), pick()] if rng.random() < 0.5 else [vecs[-2], pick()])
        else:  # write an input row: a later load of it must see the new value
            row = rng.integers(V_ROWS)
            lines.append(f"  {fresh('s')} = vdir.store {use(pick())}, %v[{row}, 0] : {vec()}, {vb}")
    if rng.random() < 0.5:
        # A repeat whose body fuses on its own and reads outer tiles.
        outer = pick()
        lines.append("  vdir.repeat %i = 0 to 2 {")
        lines.append("    %row = affine.apply affine_map<(d0) -> (d0 + 60)>(%i)")
        body_start = len(vecs)
        a = gemv(use(outer), indent="    ")
        b = compute("add", [a, use(outer)], indent="    ")
        lines.append(f"    %rs = vdir.store {use(b)}, %out[%row, 0] : {vec()}, {ob}")
        lines.append("  }")
        del vecs[body_start:]
    for t in vecs:
        if not uses.get(t):
            lines.append(f"  {fresh('s')} = vdir.store {t}, %out[{next(out_row)}, 0] : {vec()}, {ob}")
    head = f"vdir.program @p(%v: {vb}, %g: !vdir.buffer<1x{N}xbf16>, %w: {wb}, %out: {ob}) {{"
    return "\n".join([head, *lines, "}"]) + "\n"


def random_inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + 1)

    def bf(shape, scale):
        return (rng.standard_normal(shape) * scale).astype(bfloat16)

    return {
        "v": bf((V_ROWS, N), 1.0),
        "g": bf((1, N), 1.0),
        "w": bf((W_BLOCKS * N, N), 1.0 / np.sqrt(N)),
        "out": bf((OUT_ROWS, N), 1.0),
    }


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


SEEDS = range(100)


@pytest.mark.parametrize("seed", SEEDS)
def test_fusion_preserves_reference_semantics(seed: int) -> None:
    text = random_program(seed)
    inputs = random_inputs(seed)
    before = evaluate(parse(text), inputs)
    after = evaluate(fuse(text), inputs)
    assert before.keys() == after.keys()
    for name in before:
        assert np.array_equal(bits(before[name]), bits(after[name])), f"buffer '{name}' differs\n{text}"


def test_random_programs_exercise_every_pattern() -> None:
    """The property test above is only meaningful if fusion actually happens."""
    seen: dict[str, int] = {}
    merged_loads = 0
    for seed in SEEDS:
        text = random_program(seed)
        fused = fuse(text)
        for f in families(fused):
            seen[f] = seen.get(f, 0) + 1
        merged_loads += sum(isinstance(o, LoadOp) for o in parse(text).walk()) - sum(
            isinstance(o, LoadOp) for o in fused.walk()
        )
    for fam in ("rmsnorm_gemv", "gemv_silu_mul", "gemv_add"):
        assert seen.get(fam, 0) >= 3, (fam, seen)
    assert merged_loads >= 10


@pytest.mark.parametrize("seed", range(10))
def test_fusion_is_idempotent(seed: int) -> None:
    once = fuse(random_program(seed))
    again = once.clone()
    FusePass().apply(_ctx(), again)
    assert str(once) == str(again)


# --------------------------------------------------------------------------
# Specific decisions
# --------------------------------------------------------------------------

EPILOGUE = """
vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %u: !vdir.buffer<1x64xbf16>, %out: !vdir.buffer<1x64xbf16>) ATTRS {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %ut = vdir.load %u[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %a = vdir.compute gemv(%wt, %xt) on ENGINE : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %h = vdir.compute silu_mul(%a, %ut) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %h, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
"""


def epilogue(engine: str = "compute", attrs: str = "") -> str:
    return EPILOGUE.replace("ENGINE", engine).replace("ATTRS", attrs)


def test_fused_op_keeps_consumer_name_and_location() -> None:
    module = fuse(epilogue())
    (fused,) = [op for op in module.walk() if isinstance(op, ComputeOp)]
    assert fused.family.data == "gemv_silu_mul"
    assert fused.result.name_hint == "h"
    assert fused.location.line.data == 7  # type: ignore[attr-defined]


def test_different_engine_kinds_do_not_fuse(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a target whose store engine can also compute, a gemv there stays apart."""
    h200 = get_target("h200")
    engines = tuple(
        replace(k, runs=k.runs | {"compute"}) if k.name == "store" else k
        for k in h200.engines
    )
    monkeypatch.setitem(TARGETS, "dual", replace(h200, name="dual", engines=engines))
    text = epilogue("store", 'attributes {target = "dual"}')
    assert families(fuse(text)) == ["gemv", "silu_mul"]
    # Control: the same program with both on the compute engine fuses.
    assert families(fuse(epilogue("compute", 'attributes {target = "dual"}'))) == ["gemv_silu_mul"]


def test_min_benefit_is_compared_with_the_cost_model() -> None:
    target = get_target("h200")
    benefit = cm.compute_fusion_benefit(TileType([1, 64], "bf16"), target).time_us
    assert families(fuse(epilogue(), min_benefit=benefit * 0.99)) == ["gemv_silu_mul"]
    assert families(fuse(epilogue(), min_benefit=benefit)) == ["gemv", "silu_mul"]


def test_only_restricts_the_patterns() -> None:
    assert families(fuse(epilogue(), only=("gemv-add",))) == ["gemv", "silu_mul"]
    assert families(fuse(epilogue(), only=("gemv-silu-mul",))) == ["gemv_silu_mul"]


def test_vdir_opt_spelling(tmp_path) -> None:
    from vdir.tools.vdir_opt import main

    src = tmp_path / "p.mlir"
    src.write_text(epilogue())
    out = tmp_path / "o.mlir"
    assert main([str(src), "-p", "vdir-fuse{min-benefit=0.1 only=gemv-silu-mul}", "-o", str(out)]) == 0
    fused = r"%h = vdir.compute gemv_silu_mul\(%wt, %xt, %ut\) \{operand = 0 : i64\}"
    assert re.search(fused, out.read_text())


# --------------------------------------------------------------------------
# Cost model
# --------------------------------------------------------------------------

COSTS = """
vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)>(%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<16x64xbf16>
    %y = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
    %s = vdir.store %y, %out[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
  }
}
"""


def test_op_costs() -> None:
    target = get_target("h200")
    module = parse(COSTS)
    ops = {op.results[0].name_hint: op for op in module.walk() if op.results and op.results[0].name_hint}
    load = cm.op_cost(ops["wt"], target)
    assert (load.global_bytes, load.smem_bytes, load.flops) == (16 * 64 * 2, 16 * 64 * 2, 0)
    per_sm_hbm = target.hbm_bytes_per_us / target.num_sms
    expected = cm.MICRO_OP_OVERHEAD_US + 2048 / per_sm_hbm + 2048 / cm.SMEM_BYTES_PER_US_PER_SM
    assert load.time_us == pytest.approx(expected)
    gemv = cm.op_cost(ops["y"], target)
    assert gemv.global_bytes == 0
    assert gemv.flops == 2 * 16 * 64
    assert gemv.smem_bytes == 2048 + 128 + 32
    store = cm.op_cost(ops["s"], target)
    assert (store.global_bytes, store.flops) == (32, 0)
    assert cm.op_cost(ops["r"], target) == cm.ZERO_COST
    # The same numbers from signatures alone (for graph-level passes).
    assert cm.signature_cost(
        "compute",
        TileSig((1, 16), "bf16"),
        target,
        [TileSig((16, 64), "bf16"), TileSig((1, 64), "bf16")],
        "gemv",
    ) == gemv


def test_block_cost_counts_repeat_iterations() -> None:
    target = get_target("h200")
    module = parse(COSTS)
    program = next(op for op in module.walk() if isinstance(op, ProgramOp))
    total = cm.block_cost(program.body.block, target)
    assert total.global_bytes == 128 + 4 * (2048 + 32)
    assert total.flops == 4 * 2 * 16 * 64


def test_target_extra_overrides_constants() -> None:
    target = replace(get_target("h200"), extra={"micro_op_overhead_us": 2.0, "dependency_edge_us": 1.0})
    b = cm.compute_fusion_benefit(TileType([1, 64], "bf16"), target)
    assert (b.smem_bytes, b.edges, b.dispatches) == (256, 1, 1)
    assert b.time_us == pytest.approx(3.0 + 256 / cm.SMEM_BYTES_PER_US_PER_SM)
    m = cm.load_merge_benefit(TileType([16, 64], "bf16"), get_target("h200"))
    assert (m.global_bytes, m.edges, m.dispatches) == (2048, 0, 1)


@pytest.mark.parametrize("seed", SEEDS)
def test_choices_do_not_depend_on_visit_order(seed: int) -> None:
    """Prologue/epilogue and two-gemv choices are the same walking backwards."""
    from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker

    text = random_program(seed)
    forward = fuse(text)
    backward = parse(text)
    PatternRewriteWalker(
        GreedyRewritePatternApplier(FusePass().patterns()), walk_reverse=True
    ).rewrite_module(backward)
    assert str(forward) == str(backward)


def test_merging_finds_the_nearest_earlier_duplicate_past_other_loads() -> None:
    """Duplicates among many other loads merge into the nearest earlier copy; a store to the buffer in between
    stops the search (the block index of MergeDuplicateLoads gives what a scan back through the ops gives)."""
    rows = [
        f"  %a{i} = vdir.load %x[{i}, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<1x64xbf16>\n"
        f"  %t{i} = vdir.store %a{i}, %y[{i}, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<64x64xbf16>"
        for i in range(40)
    ]
    text = "\n".join([
        "vdir.program @many(%x: !vdir.buffer<64x64xbf16>, %y: !vdir.buffer<64x64xbf16>) {",
        *rows,
        "  %again = vdir.load %x[3, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<1x64xbf16>",
        "  %s0 = vdir.store %again, %y[3, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<64x64xbf16>",
        "  %s1 = vdir.store %a7, %x[63, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<64x64xbf16>",
        "  %after = vdir.load %x[5, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<1x64xbf16>",
        "  %s2 = vdir.store %after, %y[5, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<64x64xbf16>",
        "}",
    ])
    module = fuse(text)
    program = next(iter(module.ops))
    assert isinstance(program, ProgramOp)
    stores = [op for op in program.body.block.ops if op.name == "vdir.store"]
    assert stores[40].operands[0].name_hint == "a3"  # merged into the earlier load of row 3
    assert stores[42].operands[0].name_hint == "after"  # the store to %x in between keeps this load
    assert sum(isinstance(op, LoadOp) for op in program.body.block.ops) == 41
