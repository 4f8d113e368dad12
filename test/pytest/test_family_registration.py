"""A new op family registered from outside the package goes through every layer.

The toy family ``scale`` (``y = x * factor``: one bf16 tile, an f32 factor)
is defined entirely here: its signature, numpy semantics, cost, parameter
words (encoding, and the decoding the simulator uses), placement role and a
PTX body. Registered through :func:`vdir.families.register_family` for the
duration of one test module, it must then work like a built-in family: a
program using it (next to the built-in ``add``) is built, compiled by the
whole pipeline, run by the CPU simulator against numpy on random inputs, and
lowered with ``vdir-opt -t ptx`` to PTX that assembles for sm_90a. After the
module, the family is gone again.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace

import numpy as np
import pytest
from ml_dtypes import bfloat16
from test_examples_ptx import _nvjitlink, assemble_nvjitlink, assemble_ptxas
from xdsl.ir import SSAValue

from vdir import isa
from vdir.analysis.graph import build_graph
from vdir.compiler import compile_module
from vdir.device_runtime.sim import simulate
from vdir.families import (
    FAMILIES,
    ComputeSignature,
    Epilogue,
    Family,
    FamilyError,
    ParamWords,
    Role,
    TileSig,
    family_by_opcode,
    get_family,
    register_family,
)
from vdir.frontend import ProgramBuilder
from vdir.lowering import families as F
from vdir.lowering.emit import lower_to_ptx
from vdir.lowering.families import ComputeCtx
from vdir.tools.vdir_opt import main as vdir_opt
from vdir.transforms.place import is_rematerialisable

#: an opcode no built-in family uses
SCALE_OPCODE = 200
ROWS, COLS, BLOCKS = 2, 256, 4
FACTOR = 0.3


# ---------------------------------------------------------------------------
# The toy family
# ---------------------------------------------------------------------------


def _infer_scale(inputs: list[TileSig], params: dict) -> TileSig:
    (x,) = inputs
    if x.dtype != "bf16":
        raise FamilyError(f"family 'scale': x must be bf16, got {x}")
    return TileSig(x.shape, "bf16")


def _run_scale(inputs: list[np.ndarray], params: dict) -> np.ndarray:
    return np.asarray(inputs[0]).astype(np.float32) * np.float32(params["factor"])


def _encode_scale(sig: ComputeSignature) -> ParamWords:
    rows, cols = sig.inputs[0].shape
    return ParamWords(p0=rows, p1=cols, f0=float(sig.params["factor"]))


def _decode_scale(words: ParamWords) -> ComputeSignature:
    tile = TileSig((words.p0, words.p1), "bf16")
    return ComputeSignature((tile,), tile, {"factor": words.f0})


def _scale_body(cc: ComputeCtx) -> None:
    """y = x * f0 over a p0 x p1 tile, one element per thread and step."""
    b = cc.b
    n = b.i("mul.lo.u32", "u32", cc.p0, cc.p1)

    def body(i: SSAValue) -> None:
        off = b.i("mul.lo.u32", "u32", i, 2)
        x = F.load_bf16(b, b.i("add.u32", "u32", cc.ins[0], off))
        y = b.i("mul.rn.f32", "f32", x, cc.f0)
        b.st("st.shared.b16", b.i("add.u32", "u32", cc.out, off), 0, F.to_bf16(b, y))

    b.for_range(cc.ct, n, cc.nthreads, body, "scale")


SCALE = Family(
    "scale", SCALE_OPCODE, ("x",), ("factor",),
    _infer_scale, _run_scale, lambda inputs: inputs[0].shape[0] * inputs[0].shape[1],
    _encode_scale, _decode_scale, Role.ACTIVATION, _scale_body,
    description="y = x * factor",
)


@pytest.fixture(scope="module", autouse=True)
def scale_registration():
    """``scale`` is registered for this module's tests only (the handle is the fixture's value)."""
    registration = register_family(SCALE)
    yield registration
    registration.unregister()
    assert "scale" not in FAMILIES and family_by_opcode(SCALE_OPCODE) is None
    with pytest.raises(ValueError, match="unknown op family 'scale'"):
        scale_add_program()


# ---------------------------------------------------------------------------
# A program using it
# ---------------------------------------------------------------------------


def scale_add_program():
    """y = scale(x, FACTOR) + z over BLOCKS row blocks of ROWS x COLS."""
    b = ProgramBuilder("scale_add", target="h200")
    shape = (ROWS * BLOCKS, COLS)
    x, z, y = b.buffer("x", shape), b.buffer("z", shape), b.buffer("y", shape)
    with b.repeat(0, BLOCKS, name="i") as i:
        r = b.affine(i, scale=ROWS, name="r")
        xt = b.load(x, (r, 0), (ROWS, COLS), name="xt")
        zt = b.load(z, (r, 0), (ROWS, COLS), name="zt")
        st = b.compute("scale", [xt], params={"factor": FACTOR}, name="st")
        yt = b.compute("add", [st, zt], name="yt")
        b.store(yt, y, (r, 0), name="done")
    return b.finish()


def _expected(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    scaled = (x.astype(np.float32) * np.float32(FACTOR)).astype(bfloat16)
    return (scaled.astype(np.float32) + z.astype(np.float32)).astype(bfloat16)


def test_family_words_round_trip():
    """The family's decoding inverts its encoding, through the instruction words."""
    sig = ComputeSignature((TileSig((ROWS, COLS), "bf16"),), TileSig((ROWS, COLS), "bf16"), {"factor": 0.5})
    row = [0] * isa.INSTR_WORDS
    get_family("scale").encode_params(sig).write(row)
    assert get_family("scale").decode_operands(ParamWords.read(row)) == sig


@pytest.mark.parametrize("seed", range(3))
def test_pipeline_and_simulator_match_numpy(seed):
    """Compiled for several SMs and simulated, the program computes exactly numpy's bytes."""
    program = compile_module(scale_add_program(), num_sms=3)
    ops = program.instrs[:, isa.W_OPCODE]
    assert ((ops & 0xFF == isa.OP_COMPUTE) & (ops >> 8 & 0xFF == SCALE_OPCODE)).sum() == BLOCKS
    rng = np.random.default_rng(seed)
    shape = (ROWS * BLOCKS, COLS)
    x = rng.standard_normal(shape).astype(bfloat16)
    z = rng.standard_normal(shape).astype(bfloat16)
    y = np.zeros(shape, bfloat16)
    simulate(program, [x, z, y], seed=seed)
    assert np.array_equal(y.view(np.uint16), _expected(x, z).view(np.uint16))


def test_ptx_target_emits_and_assembles(tmp_path, capsys):
    """``vdir-opt -p vdir-pipeline -t ptx`` on the IR text emits the body, which assembles for sm_90a."""
    src = tmp_path / "scale_add.mlir"
    src.write_text(str(scale_add_program()))
    assert vdir_opt([str(src), "-p", "vdir-pipeline", "-t", "isa"]) == 0
    assert "scale(smem[" in capsys.readouterr().out
    out = tmp_path / "scale_add.ptx"
    assert vdir_opt([str(src), "-p", "vdir-pipeline", "-t", "ptx", "-o", str(out)]) == 0
    text = out.read_text()
    assert f"$L_fam{SCALE_OPCODE}_0:" in text and "$L_scale_0:" in text
    if shutil.which("ptxas"):
        assert assemble_ptxas(text) > 0
    elif _nvjitlink() is not None:
        assert assemble_nvjitlink(text) > 0
    else:
        pytest.skip("neither ptxas nor cuda.bindings.nvjitlink is available to assemble PTX")


def test_family_without_a_body_is_a_ptx_error(tmp_path, capsys):
    """A registered family without a PTX body: ``-t ptx`` fails with one line naming its opcode."""
    src = tmp_path / "no_body.mlir"
    with register_family(_variant(name="scale_no_body", opcode=203, ptx_body=None)):
        text = str(scale_add_program()).replace("vdir.compute scale(", "vdir.compute scale_no_body(")
        src.write_text(text)
        assert vdir_opt([str(src), "-p", "vdir-pipeline", "-t", "ptx"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"{src}: error: target 'ptx' failed: the PTX lowering has no body for family opcode(s) [203]")


def test_a_group_state_is_made_once_before_the_loop_and_reaches_the_bodies():
    """A family's ``ptx_state`` emitter runs once per kernel, before the compute group's loop, however many
    families name it, and each of their bodies finds what it made in its context (``ComputeCtx.state``);
    an emitter no family names makes nothing, and a body asking for its state finds None."""
    made, seen = [], []

    def keep_a_count(c) -> SSAValue:
        made.append(c.b.var("u32", 12345))
        return made[-1]

    def counting_body(cc: ComputeCtx) -> None:
        seen.append(cc.state(keep_a_count))
        cc.b.i("add.u32", "u32", cc.state(keep_a_count), 1, dst=cc.state(keep_a_count))
        _scale_body(cc)

    def named_by_no_family(c) -> None:
        raise AssertionError("no family names this emitter: it never runs")

    def plain_body(cc: ComputeCtx) -> None:
        seen.append(cc.state(named_by_no_family))
        _scale_body(cc)

    with register_family(_variant(name="scale_a", opcode=204, ptx_state=keep_a_count, ptx_body=counting_body)), \
            register_family(_variant(name="scale_b", opcode=205, ptx_state=keep_a_count, ptx_body=counting_body)), \
            register_family(_variant(name="scale_c", opcode=206, ptx_body=plain_body)):
        program = compile_module(scale_add_program(), num_sms=1)
        ops = program.instrs[:, isa.W_OPCODE].copy()
        compute = ops & 0xFF == isa.OP_COMPUTE
        families = ops >> 8 & 0xFF
        # the scale tiles become scale_a, scale_b and scale_c in turn (the same words: SCALE's variants);
        # the kernel emits each family's body once, in opcode order
        for k, idx in enumerate(np.flatnonzero(compute & (families == SCALE_OPCODE))):
            program.instrs[idx, isa.W_OPCODE] = (int(ops[idx]) & ~0xFF00) | ((204 + k % 3) << 8)
        text = lower_to_ptx(program)
    assert len(made) == 1
    assert len(re.findall(r"mov\.u32 %r\d+, 12345;", text)) == 1
    assert text.index(", 12345;") < text.index("$L_cp_top_0:") < text.index(f"$L_fam{SCALE_OPCODE + 4}_0:")
    assert seen == [made[0], made[0], None]


def test_a_reference_to_no_function_is_a_ptx_error(tmp_path, capsys):
    """A group state (or body) named by a ``"module:function"`` reference that names nothing: ``-t ptx``
    fails with one line naming the family, the field and the reference."""
    src = tmp_path / "no_state.mlir"
    ref = "vdir.lowering.families.gemv:no_such_state"
    with register_family(_variant(name="scale_no_state", opcode=207, ptx_state=ref)):
        src.write_text(str(scale_add_program()).replace("vdir.compute scale(", "vdir.compute scale_no_state("))
        assert vdir_opt([str(src), "-p", "vdir-pipeline", "-t", "ptx"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{src}: error: target 'ptx' failed: family 'scale_no_state': ptx_state '{ref}' "
                          "names no function (")
    assert "\n" not in err


def test_placement_reads_the_role():
    """Placement may recompute an activation-role family per SM, as it does ``add``."""
    graph = build_graph(scale_add_program())
    computes = [n for n in graph.nodes if n.kind == "compute"]
    assert {n.family for n in computes} == {"scale", "add"}
    assert all(is_rematerialisable(n, {}) for n in computes)
    with register_family(_variant(name="scale_anchored", opcode=202, role=Role.WEIGHT_STREAMING)):
        for n in computes:
            n.family = "scale_anchored" if n.family == "scale" else n.family
        assert not any(is_rematerialisable(n, {}) for n in computes)


# ---------------------------------------------------------------------------
# Registration errors
# ---------------------------------------------------------------------------


def _variant(**changes) -> Family:
    """SCALE with some fields changed."""
    return replace(SCALE, **changes)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({}, "op family 'scale' is already registered"),
        ({"name": "scale2", "opcode": 1}, "family 'scale2': opcode 1 is taken by 'gemv'"),
        ({"name": "scale2", "opcode": 0}, r"family 'scale2': opcode 0 is not in 1\.\.255"),
        ({"name": "scale2", "opcode": 201, "operands": ("a", "b", "c", "d", "e")},
         "family 'scale2' has 5 operands; an instruction holds 4"),
        ({"name": "scale2", "opcode": 201, "fusion": Epilogue("gemv", "mul")},
         "family 'scale2' fuses 'mul', which is not registered"),
        ({"name": "scale2", "opcode": 201, "out_dtypes": ("f16",)},
         r"family 'scale2': result dtypes \('f16',\) must be some of \('bf16', 'f32', 'i32', 'i64'\)"),
        ({"name": "scale2", "opcode": 201, "ptx_state": "split_cache"},
         "family 'scale2': ptx_state must be a function or a 'module:function' string, got 'split_cache'"),
        ({"name": "scale2", "opcode": 201, "ptx_body": 3},
         "family 'scale2': ptx_body must be a function or a 'module:function' string, got 3"),
    ],
)
def test_bad_registration(changes, message):
    """A family that clashes with a registered one, or cannot be encoded, is refused by name."""
    with pytest.raises(FamilyError, match=message):
        register_family(_variant(**changes))


def test_part_of_a_fused_family_stays_registered(scale_registration):
    """A family a fused family is made of cannot be removed before it."""
    fused = _variant(name="gemv_scale", opcode=201, fusion=Epilogue("gemv", "scale"))
    with register_family(fused):
        with pytest.raises(FamilyError, match="'scale' is part of fused family gemv_scale"):
            scale_registration.unregister()
        assert get_family("gemv_scale") is fused
    assert "gemv_scale" not in FAMILIES and get_family("scale") is SCALE
