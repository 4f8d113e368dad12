"""Hostile inputs to the Python API get a clear ``VdirError``, never a traceback from deep inside."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ArrayAttr, StringAttr

import vdir
from vdir.compiler import InvalidModuleError
from vdir.diagnostics import VdirError
from vdir.frontend import ProgramBuilder
from vdir.tools.common import default_context, parse_text

#: a gemv whose weight tile and vector disagree on K; parsed, never verified
GEMV_K_MISMATCH = """\
vdir.program @gemv_k(%w: !vdir.buffer<8x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x8xbf16>) {
  %wt = vdir.load %w[0, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<8x64xbf16>
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x32xbf16>
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<8x64xbf16>, !vdir.tile<1x32xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}
"""


def copy_program():
    b = ProgramBuilder("copy")
    x = b.buffer("x", (1, 64))
    y = b.buffer("y", (1, 64))
    b.store(b.load(x, (0, 0), (1, 64), name="t"), y, (0, 0), name="s")
    return b.finish()


def test_compile_verifies_the_module_first():
    module = parse_text(default_context(), GEMV_K_MISMATCH, "gemv_k.mlir")
    with pytest.raises(InvalidModuleError) as e:
        vdir.compile(module)
    assert str(e.value) == (
        "gemv_k.mlir:4:3: error: family 'gemv': weights 8x64xbf16 and x 1x32xbf16 disagree on K (64 vs 32)"
    )
    assert isinstance(e.value, VdirError) and isinstance(e.value, ValueError)


def test_compile_rejects_a_module_changed_after_building():
    module = copy_program()
    program = next(iter(module.ops))
    program.properties["arg_names"] = ArrayAttr([StringAttr("x"), StringAttr("x")])
    with pytest.raises(InvalidModuleError, match=r"^<input>: error: program argument #1: name 'x' is already taken"):
        vdir.compile(module)
