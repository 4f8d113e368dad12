"""The Python builder API (vdir.frontend) against the example files and the verifiers."""

from __future__ import annotations

import dataclasses
import functools
import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ml_dtypes import bfloat16
from xdsl.printer import Printer

import vdir
from vdir.diagnostics import PassFailure, UserError
from vdir.dialects.vdir import ComputeOp, LoadOp, RepeatOp, StoreOp
from vdir.frontend import ProgramBuilder, verify
from vdir.frontend.examples import (
    build_argmax,
    build_gemv,
    build_mlp_block,
    build_mlp_stack,
    build_rmsnorm_gemv,
    build_split_k_gemv,
    build_split_k_mlp_stack,
)
from vdir.target import TARGETS
from vdir.tools.common import default_context, parse_text, verify_module

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def parse(text: str):
    module = parse_text(default_context(), text, "<test>")
    verify_module(module)
    return module


# --------------------------------------------------------------------------
# The builder produces the example files exactly
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, build",
    [
        ("gemv", build_gemv),
        ("rmsnorm_gemv", build_rmsnorm_gemv),
        ("mlp", build_mlp_block),
        ("mlp_stack", build_mlp_stack),
        ("mlp_stack_split_k", build_split_k_mlp_stack),
        ("split_k_gemv", build_split_k_gemv),
        ("split_k_gemv_reduce", functools.partial(build_split_k_gemv, reduce=True)),
        ("argmax", build_argmax),
    ],
)
def test_builder_matches_example_file(name, build):
    from_file = parse((EXAMPLES / f"{name}.mlir").read_text())
    built = build()
    assert str(built) == str(from_file)


@pytest.mark.parametrize(
    "module",
    [
        build_gemv(16, 64),
        build_rmsnorm_gemv(32, 64),
        build_mlp_block(64, 128),
        build_mlp_stack(3, 64, 128),
        build_split_k_gemv(64, 512, splits=4, rows_per_tile=16, combine_cols=32),
    ],
    ids=["gemv", "rmsnorm_gemv", "mlp", "mlp_stack", "split_k_gemv"],
)
def test_small_programs_round_trip_through_text(module):
    text = str(module)
    assert str(parse(text)) == text


def test_gemv_structure():
    module = build_gemv(32, 128, rows_per_tile=8, k_chunks=4)
    ops = list(module.walk())
    repeat = next(op for op in ops if isinstance(op, RepeatOp))
    assert repeat.trip_count == 4
    computes = [op for op in ops if isinstance(op, ComputeOp)]
    # three f32 partial sums, then the bf16 result
    assert [c.result.type.dtype for c in computes] == ["f32", "f32", "f32", "bf16"]
    assert [len(c.inputs) for c in computes] == [2, 3, 3, 3]
    assert all(c.result.type.dims == (1, 8) for c in computes)
    loads = [op for op in ops if isinstance(op, LoadOp)]
    assert [ld.result.name_hint for ld in loads] == ["x0", "x1", "x2", "x3", "w0", "w1", "w2", "w3"]


def test_mlp_stack_offsets_use_layer_index():
    text = str(build_mlp_stack(2, 64, 128))
    assert "vdir.repeat %l = 0 to 2 {" in text
    assert "affine_map<(d0, d1) -> (((d0 * 128) + (d1 * 16)))> (%l, %j)" in text
    assert "affine_map<(d0, d1) -> (((d0 * 64) + (d1 * 8)))> (%l, %k)" in text
    assert "vdir.store %o, %hs[%next, %rk]" in text
    assert "!vdir.buffer<3x64xbf16>" in text  # layers + 1 rows of residual stream


@settings(max_examples=25, deadline=None)
@given(
    m_blocks=st.integers(1, 6),
    k_chunks=st.integers(1, 3),
    k_per_chunk=st.sampled_from([8, 16, 64]),
    rows=st.sampled_from([8, 16]),
)
def test_gemv_sizes_verify(m_blocks, k_chunks, k_per_chunk, rows):
    module = build_gemv(m_blocks * rows, k_chunks * k_per_chunk, rows_per_tile=rows, k_chunks=k_chunks)
    assert str(parse(str(module))) == str(module)


@settings(max_examples=15, deadline=None)
@given(layers=st.integers(1, 4), hidden=st.sampled_from([16, 32, 64]), mult=st.integers(1, 4))
def test_mlp_stack_sizes_verify(layers, hidden, mult):
    inter = 16 * mult * 2
    module = build_mlp_stack(layers, hidden, inter)
    assert str(parse(str(module))) == str(module)


# --------------------------------------------------------------------------
# The builder API
# --------------------------------------------------------------------------


def test_builder_names_and_tokens():
    b = ProgramBuilder("tok", target="h100")
    a = b.buffer("a", (2, 16), "bf16")
    o = b.buffer("o", (2, 16), "bf16")
    t = b.load(a, (0, 0), (1, 16), name="t")
    s0 = b.store(t, o, (0, 0), name="s0", flow=1)
    u = b.load(o, (0, 0), (1, 16), name="u", after=[s0])
    s1 = b.store(u, o, (1, 0), name="s1")
    j = b.join([s0, s1], name="both")
    v = b.load(a, (1, 0), (1, 16), name="v", after=[j])
    b.store(v, a, (0, 0), name="s2")
    text = str(b.finish())
    assert 'attributes {target = "h100"}' in text
    assert "%s0 = vdir.store %t, %o[0, 0] on store flow 1 :" in text
    assert "%u = vdir.load %o[0, 0] on load after %s0 :" in text
    assert "%both = vdir.join %s0, %s1" in text
    assert str(parse(text)) == text


def test_affine_forms():
    b = ProgramBuilder("aff")
    a = b.buffer("a", (64, 64), "f32")
    with b.repeat(0, 4, name="i") as i:
        with b.repeat(1, 3, name="j") as j:
            r = b.affine(i, scale=16, offset=4, name="r")
            c = b.linear([(i, 1), (j, 8)], name="c")
            t = b.load(a, (r, c), (4, 4), name="t")
            b.store(t, a, (0, 0), name="s")
    text = str(b.finish())
    assert "%r = affine.apply affine_map<(d0) -> (((d0 * 16) + 4))> (%i)" in text
    assert "%c = affine.apply affine_map<(d0, d1) -> ((d0 + (d1 * 8)))> (%i, %j)" in text
    assert "vdir.repeat %j = 1 to 3 {" in text


def test_compute_infers_result_type():
    b = ProgramBuilder("infer")
    w = b.buffer("w", (16, 64), "bf16")
    x = b.buffer("x", (1, 64), "bf16")
    wt = b.load(w, (0, 0), (16, 64))
    xt = b.load(x, (0, 0), (1, 64))
    y = b.compute("gemv", [wt, xt])
    p = b.compute("gemv", [wt, xt], out_dtype="f32")
    assert (y.type.dims, y.type.dtype) == ((1, 16), "bf16")
    assert (p.type.dims, p.type.dtype) == ((1, 16), "f32")
    n = b.compute("rmsnorm", [xt, xt], params={"eps": 1e-6})
    assert n.type.dims == (1, 64)
    assert isinstance(n.owner, ComputeOp) and n.owner.param_values["eps"] == pytest.approx(1e-6)


# --------------------------------------------------------------------------
# Errors: a ValueError that names the problem
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, message",
    [
        ((2, 4, 8), "two-dimensional (rows, columns), got 3 dimensions"),
        ((8,), "two-dimensional (rows, columns), got 1 dimensions"),
        ((0, 8), "dimensions must be positive, got 0x8"),
        ((2.5, 8), "must hold integers"),
        (8, "must be a (rows, columns) pair"),
    ],
)
def test_bad_buffer_shape(shape, message):
    b = ProgramBuilder("p")
    with pytest.raises(ValueError, match="buffer 'a'") as e:
        b.buffer("a", shape, "bf16")
    assert message in str(e.value)


def test_bad_tile_shape():
    b = ProgramBuilder("p")
    a = b.buffer("a", (8, 64), "bf16")
    with pytest.raises(ValueError, match=r"load tile shape must be two-dimensional"):
        b.load(a, (0, 0), (1, 8, 8))


def test_bad_dtype_and_duplicate_buffer():
    b = ProgramBuilder("p")
    with pytest.raises(ValueError, match=r"element type must be one of bf16, f32, i32, i64, got 'f16'"):
        b.buffer("a", (8, 8), "f16")
    b.buffer("a", (8, 8), "bf16")
    with pytest.raises(ValueError, match="buffer 'a' is already declared"):
        b.buffer("a", (8, 8), "bf16")


@pytest.mark.parametrize("name", ["", "a b", "1x", "x:y", "\u00e9", 3])
def test_non_identifier_argument_names(name):
    b = ProgramBuilder("p")
    with pytest.raises(ValueError, match="buffer name must be an identifier"):
        b.buffer(name, (8, 8), "bf16")
    with pytest.raises(ValueError, match="scalar name must be an identifier"):
        b.scalar(name, 0, 4)


def test_duplicate_generic_arg_names_rejected_by_verifier():
    """Two inputs must never bind to one array: the verifier rejects a repeated name."""
    b = ProgramBuilder("p")
    b.buffer("x", (8, 8), "bf16")
    b.buffer("y", (8, 8), "bf16")
    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(b.finish())
    generic = out.getvalue().replace('arg_names = ["x", "y"]', 'arg_names = ["x", "x"]')
    with pytest.raises(UserError, match=r"<input>:\d+:\d+: error: program argument #1: name 'x' is already taken"):
        verify_module(parse_text(default_context(), generic))


def test_unknown_target():
    with pytest.raises(ValueError, match=r"unknown target 'tpu' \(known: h100, h200\)"):
        ProgramBuilder("p", target="tpu")


def test_a_builder_error_is_a_vdir_error_and_a_value_error():
    """``except VdirError`` catches every error the builders raise on purpose, ``except ValueError`` as
    before; an argument of the wrong kind (a list where a name goes) is one of them, not a TypeError."""
    from vdir.diagnostics import VdirError
    from vdir.frontend import BuildError

    b = ProgramBuilder("p")
    w = b.buffer("w", (64, 64))
    with pytest.raises(BuildError, match=r"load: region rows \[60, 68\) are out of the buffer's bounds"):
        b.load(w, (60, 0), (8, 64))
    assert issubclass(BuildError, VdirError) and issubclass(BuildError, ValueError)
    with pytest.raises(BuildError, match=r"element type must be one of .*, got \['bf16'\]"):
        b.buffer("v", (8, 8), ["bf16"])  # type: ignore[arg-type]
    with pytest.raises(BuildError, match=r"unknown target \['h200'\]"):
        ProgramBuilder("q", target=["h200"])  # type: ignore[arg-type]
    t = b.load(w, (0, 0), (8, 64))
    with pytest.raises(BuildError, match=r"compute: the family is named by a string, got \['gemv'\]"):
        b.compute(["gemv"], [t, t])  # type: ignore[arg-type]


def test_a_value_made_inside_a_repeat_is_not_used_after_it():
    """The induction variable used after its repeat had compiled and run as if it were 0 (the parser
    refuses the text; a program built in Python never reaches it)."""
    b = ProgramBuilder("p")
    w, x, y = b.buffer("w", (64, 64)), b.buffer("x", (1, 64)), b.buffer("y", (1, 8), "f32")
    xt = b.load(x, (0, 0), (1, 64))
    with b.repeat(0, 8, name="i") as i:
        pass
    wt = b.load(w, (b.affine(i, scale=8), 0), (8, 64))
    b.store(b.compute("gemv", [wt, xt], out_dtype="f32"), y, (0, 0))
    with pytest.raises(ValueError, match=r"a value defined in a vdir.repeat body is used outside it: %i, by "
                                         r"affine.apply"):
        b.finish()


@pytest.mark.parametrize(
    "offsets, shape, message",
    [
        ((12, 0), (8, 64), r"load: region rows \[12, 20\) are out of the buffer's bounds \[0, 16\)"),
        ((0, 40), (8, 32), r"load: region columns \[40, 72\) are out of the buffer's bounds \[0, 64\)"),
        ((0, 4), (8, 8), "load: column offset 4 is not 16-byte aligned"),
        ((0, 0), (8, 4), "load: tile rows are 8 bytes; bulk copies need a multiple of 16"),
        ((0, 0), (32, 64), "load: a 32x64 tile does not fit in a 16x64 buffer"),
        ((0,), (8, 64), r"load needs 2 offsets \(row, column\), got 1"),
        ((-8, 0), (8, 64), "non-negative integer"),
    ],
)
def test_bad_load_region(offsets, shape, message):
    b = ProgramBuilder("p")
    a = b.buffer("a", (16, 64), "bf16")
    with pytest.raises(ValueError, match=message):
        b.load(a, offsets, shape)


def test_bad_store_region():
    b = ProgramBuilder("p")
    a = b.buffer("a", (16, 64), "bf16")
    o = b.buffer("o", (4, 64), "f32")
    t = b.load(a, (0, 0), (2, 64))
    with pytest.raises(ValueError, match="store: buffer element type f32 differs from tile element type bf16"):
        b.store(t, o, (0, 0))
    with pytest.raises(ValueError, match=r"store: expected a buffer declared with buffer\(\)"):
        b.store(t, t, (0, 0))


@pytest.mark.parametrize(
    "family, operands, kwargs, message",
    [
        ("gemv", ("w", "x32"), {}, r"family 'gemv': weights 8x64xbf16 and x 1x32xbf16 disagree on K \(64 vs 32\)"),
        ("add", ("x", "x", "x"), {}, r"family 'add' takes 2 operands \(lhs, rhs\), got 3"),
        ("softmax", ("x",), {}, "unknown op family 'softmax'"),
        ("rmsnorm", ("x", "x"), {}, "family 'rmsnorm' needs parameter 'eps'"),
        ("add", ("x", "x"), {"params": {"alpha": 2.0}}, "family 'add' has no parameter 'alpha'"),
        ("add", ("x", "x"), {"params": {"alpha": "big"}}, "parameter 'alpha' must be a number"),
        ("silu_mul", ("x", "x"), {"out_dtype": "f32"},
         "family 'silu_mul' produces a 1x64xbf16 tile here, but the result is declared 1x64xf32"),
        ("add", ("x", "x32f"), {}, r"family 'add': operand dtypes differ \(1x64xbf16 vs 1x64xf32\)"),
        ("add", ("xi", "xi"), {}, "family 'add': lhs must be bf16 or f32, got 1x64xi32"),
        ("gemv", ("w", "xi"), {}, "family 'gemv': x must be bf16, got 1x64xi32"),
        ("sum_rows", ("w",), {}, "family 'sum_rows': partials must be f32, got 8x64xbf16"),
        ("sum_rows", ("x32f",), {"out_dtype": "i32"},
         "family 'sum_rows' produces a 1x64xf32 tile here, but the result is declared 1x64xi32"),
    ],
)
def test_bad_compute(family, operands, kwargs, message):
    b = ProgramBuilder("p")
    w = b.buffer("w", (8, 64), "bf16")
    v = b.buffer("v", (1, 64), "bf16")
    f = b.buffer("f", (1, 64), "f32")
    i = b.buffer("i", (1, 64), "i32")
    tiles = {
        "w": b.load(w, (0, 0), (8, 64)),
        "x": b.load(v, (0, 0), (1, 64)),
        "x32": b.load(v, (0, 0), (1, 32)),
        "x32f": b.load(f, (0, 0), (1, 64)),
        "xi": b.load(i, (0, 0), (1, 64)),
    }
    with pytest.raises(ValueError, match=message):
        b.compute(family, [tiles[o] for o in operands], **kwargs)


def test_bad_repeat():
    b = ProgramBuilder("p")
    with pytest.raises(ValueError, match="repeat from 4 to 4 runs no iterations"):
        with b.repeat(4, 4):
            pass
    with pytest.raises(ValueError, match="repeat step must be positive, got 0"):
        with b.repeat(0, 4, 0):
            pass


def test_bad_engine_name():
    b = ProgramBuilder("p")
    a = b.buffer("a", (1, 8), "bf16")
    with pytest.raises(ValueError, match="unknown engine kind 'tma'"):
        b.load(a, (0, 0), (1, 8), engine="tma")


def test_example_size_errors():
    with pytest.raises(ValueError, match="M = 12 is not a multiple of the 8-row tile"):
        build_gemv(12, 64)
    with pytest.raises(ValueError, match="K = 65 does not split into 2 equal chunks"):
        build_gemv(16, 65, k_chunks=2)
    with pytest.raises(ValueError, match="layers must be positive"):
        build_mlp_stack(0, 64, 128)
    with pytest.raises(ValueError, match="K = 500 does not split into 8 equal chunks"):
        build_split_k_gemv(64, 500, splits=8)
    with pytest.raises(ValueError, match="M = 64 is not a multiple of the 48-row tile"):
        build_split_k_gemv(64, 512, rows_per_tile=48)


# --------------------------------------------------------------------------
# finish(): the dialect's verifiers, as ValueError
# --------------------------------------------------------------------------


def test_finish_unused_tile():
    b = ProgramBuilder("p")
    a = b.buffer("a", (1, 8), "bf16")
    b.load(a, (0, 0), (1, 8), name="lost")
    with pytest.raises(ValueError, match=r"^vdir.load %lost: tile %lost is produced but never used$"):
        b.finish()


def test_finish_wrong_engine():
    b = ProgramBuilder("p")
    a = b.buffer("a", (1, 8), "bf16")
    t = b.load(a, (0, 0), (1, 8), name="t")
    u = b.compute("add", [t, t], engine="load", name="u")
    b.store(u, a, (0, 0), name="s")
    with pytest.raises(ValueError, match=r"vdir.compute %u: the load engine cannot run a compute micro-op"):
        b.finish()


def test_finish_value_escaping_repeat():
    b = ProgramBuilder("p")
    a = b.buffer("a", (1, 8), "bf16")
    with b.repeat(0, 2):
        t = b.load(a, (0, 0), (1, 8), name="t")
    b.store(t, a, (0, 0), name="s")
    with pytest.raises(ValueError, match="a value defined in a vdir.repeat body is used outside it"):
        b.finish()


def test_finish_twice_and_inside_repeat():
    b = ProgramBuilder("p")
    a = b.buffer("a", (1, 8), "bf16")
    with b.repeat(0, 2):
        t = b.load(a, (0, 0), (1, 8))
        b.store(t, a, (0, 0))
        with pytest.raises(ValueError, match="inside an open repeat"):
            b.finish()
    b.finish()
    with pytest.raises(ValueError, match="already finished"):
        b.buffer("late", (1, 8))


def test_verify_rejects_cycle():
    # Text cannot express a cycle (use before def); IR built in Python can.
    b = ProgramBuilder("p")
    a = b.buffer("a", (1, 8), "bf16")
    t = b.load(a, (0, 0), (1, 8), name="t")
    u = b.compute("add", [t, t], name="u")
    v = b.compute("add", [t, u], name="v")
    b.store(v, a, (0, 0), name="s")
    module = b.finish()
    u.owner.operands = [t, v]  # u now depends on v, which depends on u
    with pytest.raises(ValueError, match=r"dependency cycle: .*%u \(vdir.compute\).*%v \(vdir.compute\)"):
        verify(module)


def test_tile_on_engine_that_cannot_read_tiles(monkeypatch):
    # No built-in target has such an engine; describe one whose store engine
    # reads only global memory.
    h200 = TARGETS["h200"]
    engines = tuple(
        dataclasses.replace(e, reads_tiles=False) if e.name == "store" else e for e in h200.engines
    )
    monkeypatch.setitem(TARGETS, "no_tile_store", dataclasses.replace(h200, name="no_tile_store", engines=engines))
    b = ProgramBuilder("p", target="no_tile_store")
    a = b.buffer("a", (1, 8), "bf16")
    t = b.load(a, (0, 0), (1, 8), name="t")
    b.store(t, a, (0, 0), name="s")
    with pytest.raises(
        ValueError, match="tile %t is consumed on the store engine, which cannot read tiles"
    ):
        b.finish()


def test_finished_module_ops_are_the_dialect_ops():
    module = build_rmsnorm_gemv(16, 64)
    kinds = {type(op) for op in module.walk()}
    assert {LoadOp, ComputeOp, StoreOp, RepeatOp} <= kinds


def _through_scratch(read_first: bool):
    """x -> mid (scratch) -> y; ``read_first``: mid is read back before it is written."""
    b = ProgramBuilder("p")
    x = b.buffer("x", (1, 64), "bf16")
    mid = b.buffer("mid", (1, 64), "bf16", scratch=True)
    y = b.buffer("y", (1, 64), "bf16")
    steps = [lambda: b.store(b.load(x, (0, 0), (1, 64), name="xt"), mid, (0, 0)),
             lambda: b.store(b.load(mid, (0, 0), (1, 64), name="back"), y, (0, 0))]
    for step in reversed(steps) if read_first else steps:
        step()
    return b.finish()


def test_scratch_buffers_round_trip_and_are_neither_inputs_nor_outputs():
    """``buffer(..., scratch=True)`` prints ``scratch`` after the type, reads back the same, and the
    compiled program gives the buffer the scratch role (the caller neither binds nor gets it)."""
    with pytest.raises(PassFailure, match="reads bytes of scratch buffer 'mid' that no earlier store surely writes"):
        vdir.compile(_through_scratch(read_first=True), backend="sim")
    module = _through_scratch(read_first=False)
    text = str(module)
    assert "%mid: !vdir.buffer<1x64xbf16> scratch," in text
    assert str(parse_text(default_context(), text)) == text
    with vdir.compile(module, backend="sim") as exe:
        assert [(i.name, i.role) for i in exe.program.buffers] == [("x", "in"), ("mid", "scratch"), ("y", "out")]
        xs = np.arange(64, dtype=np.float32).reshape(1, 64).astype(bfloat16)
        assert np.array_equal(np.asarray(exe(x=xs)), xs)
