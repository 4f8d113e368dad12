"""Branches declared warp-uniform (``PtxBuilder.bra(..., uniform=True)``) and the lowering option
``uniform_checks`` that checks the claims.

Without the option a declared branch is a guarded ``bra.uni``; with it, the
same branch is a plain ``bra`` after a ``vote.sync.uni`` over the threads that
reach it, and a disagreement writes the error record ``ERR_DIVERGENT``, which
the launch raises. On the GPU: every family, a gemv with split rows and a
partial last chunk group, and a looped stack run with every claim checked
and give the results they give unchecked; a claim broken on purpose is
reported, twice on one executable, which then still runs.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir.device_runtime.cuda import describe_error
from vdir.device_runtime.platform import PlatformError
from vdir.dialects import ptx
from vdir.frontend import examples
from vdir.lowering import layout as L
from vdir.lowering.builder import PtxBuilder
from vdir.lowering.emit import lower_to_ptx
from vdir.testing.assembler import family_program
from vdir.testing.gpu import gpu
from vdir.transforms.pipeline import compile_to_encoded

#: a guarded branch in printed PTX: ``@%p3 bra.uni $L_x_0;`` or ``@!%p3 bra $L_x_0;``
GUARDED = re.compile(r"^\s*@!?%p\d+ (bra(?:\.uni)?) ", re.M)


def _guarded_branches(text: str) -> dict[str, int]:
    counts = {"bra": 0, "bra.uni": 0}
    for m in GUARDED.finditer(text):
        counts[m.group(1)] += 1
    return counts


def _kernel() -> ptx.KernelOp:
    return ptx.KernelOp("k", [], 32, minnctapersm=1)


def test_a_uniform_branch_is_bra_uni_and_a_checked_one_a_plain_bra_after_its_check():
    """Only a branch declared uniform becomes ``bra.uni``; with a check installed it is handed to the
    check and stays a plain ``bra``; an unguarded branch is ``bra.uni`` either way."""
    b = PtxBuilder(_kernel())
    p = b.setp("eq.u32", b.special("u32", "%tid.x"), 0)
    b.bra("$L_a", p, uniform=True)
    b.bra("$L_b", p)
    checked: list[object] = []
    b.uniform_check = checked.append
    b.bra("$L_c", p, neg=True, uniform=True)
    b.bra("$L_d", p)
    b.bra("$L_e")
    mnemonics = [op.mnemonic() for op in b.block.ops if isinstance(op, ptx.BraOp)]
    assert mnemonics == ["bra.uni", "bra", "bra", "bra", "bra.uni"]
    assert checked == [p]  # only the declared branch, once


def test_every_declared_branch_of_a_kernel_is_checked_under_uniform_checks():
    """Each guarded ``bra.uni`` of the plain kernel is, under the option, one vote, one report and one
    plain branch (plus the check's own skip), the report numbered as the label after it."""
    program = compile_to_encoded(examples.build_mlp_stack(2, 256, 512), num_sms=2)
    plain = lower_to_ptx(program, options={"run_loops": True})
    checked = lower_to_ptx(program, options={"run_loops": True, "uniform_checks": True})
    declared = _guarded_branches(plain)["bra.uni"]
    assert declared > 20  # the compute and store engines' loops, waits and dispatch
    assert "vote.sync.uni" not in plain
    assert _guarded_branches(checked)["bra.uni"] == 0
    assert checked.count("vote.sync.uni.pred") == declared
    assert _guarded_branches(checked)["bra"] == _guarded_branches(plain)["bra"] + 2 * declared  # + its skip
    reports = re.findall(rf"cas\.b32 %r\d+, \[%rd\d+\], 0, {L.ERR_DIVERGENT};", checked)
    assert len(reports) == declared
    # each record names its check by the number of the label that follows it: 0, 1, 2, ... in order
    numbered = re.findall(rf"\+{4 * L.E_VALUE}\], (\d+);\n\$L_{L.UNIFORM_CHECK_LABEL}_(\d+):", checked)
    assert [(int(n), int(m)) for n, m in numbered] == [(k, k) for k in range(declared)]


def test_the_error_record_of_a_diverged_branch_names_the_sm_the_warp_and_the_check():
    """The host's message for an ``ERR_DIVERGENT`` record."""
    program = compile_to_encoded(examples.build_gemv(), num_sms=1)
    rec = np.zeros(L.ERROR_WORDS, np.uint32)
    rec[L.E_CODE], rec[L.E_SM], rec[L.E_WARP], rec[L.E_VALUE] = L.ERR_DIVERGENT, 3, 5, 17
    assert describe_error(program, rec, 1000.0) == (
        "a branch declared warp-uniform diverged: warp 5 of SM 3 at uniform-branch check #17 (lowering "
        "option uniform_checks; the check's label in the PTX is $L_uniform_ok_17)")


# ---------------------------------------------------------------------------
# on the GPU
# ---------------------------------------------------------------------------

def _inputs(program, seed=None) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {b.name: (rng.standard_normal(b.shape, dtype=np.float32) / 8).astype(
        bfloat16 if b.dtype == "bf16" else np.float32) for b in program.buffers if b.is_input}


def _outputs(program, inputs, **options) -> list[np.ndarray]:
    with vdir.compile(program, backend="cuda", options=options) as exe:
        out = exe(**inputs)
    names = [b.name for b in program.buffers if b.is_output]
    return [np.asarray(out[n]) for n in names] if isinstance(out, dict) else [np.asarray(out)]


GEMVS = [(3, 1000), (8, 2056), (16, 1024), (5, 4104)]  # split rows (G = 2, 1), partial last groups


@gpu
@pytest.mark.parametrize("rows,k", GEMVS, ids=[f"{r}x{k}" for r, k in GEMVS])
def test_gemvs_with_every_claim_checked_give_the_bytes_they_give_unchecked(rows, k):
    """Split rows (G > 1) and a last chunk group that only some lanes own: no claim fails, the bytes
    are those of the unchecked kernel, and both are within a bf16 rounding of the f32 product."""
    program = family_program("gemv", [(rows, k), (1, k)], ["bf16", "bf16"], (1, rows), "bf16", {})
    rng = np.random.default_rng()
    w = (rng.standard_normal((rows, k), dtype=np.float32) / np.sqrt(k)).astype(bfloat16)
    x = rng.standard_normal((1, k), dtype=np.float32).astype(bfloat16)
    inputs = {"in0": w, "in1": x, "out": np.full((1, rows), np.nan, bfloat16)}
    checked = _outputs(program, inputs, uniform_checks=True)
    plain = _outputs(program, inputs)
    assert np.array_equal(checked[0].view(np.uint8), plain[0].view(np.uint8))
    ref = w.astype(np.float32) @ x[0].astype(np.float32)
    got = checked[0].astype(np.float32).reshape(-1)
    assert np.all(np.abs(got - ref) <= 2 ** -8 * np.abs(ref) + 1e-3 * np.max(np.abs(ref)))


STACK_OPTIONS = [{}, {"run_loops": True}, {"load_path": "lsu"}, {"tensor_copies": False}]


@gpu
@pytest.mark.parametrize("options", STACK_OPTIONS, ids=["defaults", "run_loops", "lsu", "plain_copies"])
def test_a_stack_with_every_claim_checked_gives_the_bytes_it_gives_unchecked(options):
    """The compute group fed by its fetch warp (loop records), the load engines with their fields in
    registers (lsu) or copying in bulk without tensor maps."""
    program = compile_to_encoded(examples.build_mlp_stack(4, 256, 512), num_sms=2)
    inputs = _inputs(program)
    checked = _outputs(program, inputs, uniform_checks=True, **options)
    plain = _outputs(program, inputs, **options)
    for a, b in zip(checked, plain, strict=True):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


@gpu
def test_a_broken_claim_is_reported_and_the_executable_stays_usable(monkeypatch):
    """A compute instruction's condition made lane-dependent (lanes 0-15 run the body, 16-31 skip it)
    under a branch declared uniform: the launch raises ERR_DIVERGENT naming a compute warp, twice on
    one executable; the same program lowered as it is then computes its result."""
    from vdir.lowering.kernel import compute_engine

    program = family_program("add", [(1, 64), (1, 64)], ["bf16", "bf16"], (1, 64), "bf16", {})
    inputs = _inputs(program)
    monkeypatch.setattr(compute_engine, "condition_holds", lambda c, f: c.b.setp("lt.u32", c.lane, 16))
    with vdir.compile(program, backend="cuda", options={"uniform_checks": True}) as exe:
        for _ in range(2):
            with pytest.raises(PlatformError, match=r"a branch declared warp-uniform diverged: warp (\d+) "
                                                     r"of SM 0 at uniform-branch check #\d+ \(lowering "
                                                     r"option uniform_checks") as raised:
                exe(**inputs)
            warp = int(re.search(r"warp (\d+)", str(raised.value)).group(1))  # type: ignore[union-attr]
            assert L.COMPUTE_FIRST_WARP <= warp < L.COMPUTE_FIRST_WARP + 8
    monkeypatch.undo()
    (out,) = _outputs(program, inputs, uniform_checks=True)
    a, b = (inputs[n].astype(np.float32) for n in ("in0", "in1"))
    np.testing.assert_allclose(out.astype(np.float32), a + b, rtol=2 ** -8, atol=0)  # one bf16 rounding
