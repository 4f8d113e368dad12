"""The vdir types parsed from text: a shape text parsed before is not parsed again, with the same result."""

from __future__ import annotations

import io

import pytest
from xdsl.parser import AttrParser
from xdsl.printer import Printer

from vdir.diagnostics import UserError
from vdir.dialects import vdir as V
from vdir.dialects.vdir import BufferType, TileType
from vdir.tools.common import default_context, parse_text, verify_module

PROGRAM = """\
vdir.program @p(%x: !vdir.buffer<64x16xbf16>, %y: !vdir.buffer<64x16xbf16>) {
  %a = vdir.load %x[0, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<1x16xbf16>
  %b = vdir.store %a, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<64x16xbf16>
  %c = vdir.load %x[1, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<1x16xbf16>
  %d = vdir.store %c, %y[1, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<64x16xbf16>
}
"""


def parse(text: str):
    module = parse_text(default_context(), text, "p.mlir")
    verify_module(module)
    return module


def printed(module) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def _parse_every_time(cls: type[V._ShapedType], parser: AttrParser):
    return cls._parse_shape(parser)


def parsed_without_memo(text: str, monkeypatch: pytest.MonkeyPatch):
    with monkeypatch.context() as m:
        m.setattr(V._ShapedType, "parse_parameters", classmethod(_parse_every_time))
        return parse(text)


def test_a_repeated_shape_gives_equal_types_and_the_same_module(monkeypatch):
    V._PARSED_SHAPES.clear()
    module = parse(PROGRAM)
    assert (BufferType, "<64x16xbf16>") in V._PARSED_SHAPES and (TileType, "<64x16xbf16>") not in V._PARSED_SHAPES
    program = next(iter(module.ops))
    loads = [op for op in program.walk() if isinstance(op, V.LoadOp)]
    assert loads[0].result.type == loads[1].result.type == TileType((1, 16), "bf16")
    assert loads[0].source.type == BufferType((64, 16), "bf16")
    assert printed(module) == printed(parsed_without_memo(PROGRAM, monkeypatch))
    assert printed(parse(printed(module))) == printed(module)


def test_the_same_text_as_a_tile_and_as_a_buffer_gives_each_type():
    text = PROGRAM.replace("tile<1x16xbf16>", "tile<64x16xbf16>")
    V._PARSED_SHAPES.clear()
    module = parse_text(default_context(), text, "p.mlir")
    program = next(iter(module.ops))
    load = next(op for op in program.walk() if isinstance(op, V.LoadOp))
    assert isinstance(load.result.type, TileType) and isinstance(load.source.type, BufferType)
    assert load.result.type.dims == load.source.type.dims == (64, 16)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("!vdir.tile<0x16xbf16>", "vdir.tile dimensions must be positive"),
        ("!vdir.tile<1x16xf64>", "vdir.tile element type must be bf16, f32, i32 or i64"),
        ("!vdir.tile<1x2x16xbf16>", "vdir.tile must be two-dimensional"),
    ],
)
def test_a_bad_shape_is_an_error_at_each_occurrence(bad, message):
    text = PROGRAM.replace("!vdir.tile<1x16xbf16>, !vdir", f"{bad}, !vdir")
    for _ in range(2):
        with pytest.raises(UserError, match=rf"^p\.mlir:3:\d+: error: {message}"):
            parse(text)


def test_errors_after_a_memoised_type_are_located_as_before(monkeypatch):
    text = PROGRAM.replace("%y[1, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<64x16xbf16>",
                           "%y[1, 0] : !vdir.tile<1x16xbf16> !vdir.buffer<64x16xbf16>")
    parse(PROGRAM)  # the shapes are known
    with pytest.raises(UserError) as memo:
        parse(text)
    with pytest.raises(UserError) as plain:
        parsed_without_memo(text, monkeypatch)
    assert str(memo.value) == str(plain.value) and str(memo.value).startswith("p.mlir:5:")


def test_a_shape_spelled_with_spaces_is_parsed_as_before():
    module = parse(PROGRAM.replace("!vdir.tile<1x16xbf16>", "!vdir.tile< 1x16xbf16 >"))
    program = next(iter(module.ops))
    load = next(op for op in program.walk() if isinstance(op, V.LoadOp))
    assert load.result.type == TileType((1, 16), "bf16")


def test_the_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(V, "_PARSED_SHAPES_MAX", 2)
    V._PARSED_SHAPES.clear()
    parse(PROGRAM.replace("tile<1x16", "tile<2x16"))
    assert len(V._PARSED_SHAPES) <= 2
    parse(PROGRAM.replace("tile<1x16", "tile<3x16"))
    assert len(V._PARSED_SHAPES) <= 2
    V._PARSED_SHAPES.clear()
