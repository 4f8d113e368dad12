"""Tensor-copy words of loads and stores (``isa.assign_tensor_maps``) and the
map table the CUDA backend builds from them (``isa.tensor_map_table``)."""

from __future__ import annotations

import numpy as np
import pytest

from vdir import isa
from vdir.frontend.examples import build_mlp_block
from vdir.testing.assembler import ProgramAssembler
from vdir.transforms.pipeline import compile_to_encoded


def memory_instrs(prog: isa.EncodedProgram) -> np.ndarray:
    ops = isa.OPCODE.column(prog.instrs)
    return prog.instrs[(ops == isa.OP_LOAD) | (ops == isa.OP_STORE)]


def test_pipeline_gives_every_mlp_region_a_tensor_form():
    """Each box lands where the region's bytes are: coordinates and box shape
    rebuild the global offset and the tile's row bytes."""
    prog = compile_to_encoded(build_mlp_block(512, 1024), num_sms=4)
    table = isa.tensor_map_table(prog)
    mem = memory_instrs(prog)
    assert len(mem) and (mem[:, isa.W_TMAP] > 0).all()
    for w in mem:
        spec = table[int(w[isa.W_TMAP]) - 1]
        e = spec.elem_bytes
        assert spec.buffer == int(w[isa.W_BUFFER])
        assert spec.box_chunks * spec.width * e == int(w[isa.W_ROW_BYTES])
        assert int(w[isa.W_TBOXES]) * int(w[isa.W_TBOX_ROWS]) == int(w[isa.W_ROWS])
        assert max(spec.box_dims) <= isa.TMA_BOX_MAX
        off = isa.GLOBAL_OFFSET.get(w)
        assert off == int(w[isa.W_TROW]) * spec.global_strides[1] + int(w[isa.W_TCHUNK]) * spec.global_strides[0]
        assert spec.global_strides[1] == int(w[isa.W_ROW_STRIDE])


def one_transfer(shape, rows, row_bytes, offset=0, dtype="bf16", max_box_rows=isa.TMA_BOX_MAX,
                 view_bytes=isa.TMA_VIEW_BYTES):
    """A one-load program over a buffer of ``shape``; returns (instruction words, table)."""
    buf = isa.BufferInfo("b", shape, dtype, is_output=False)
    a = ProgramAssembler(1, [buf], smem_bytes=1 << 16)
    a.load(0, 0, offset, rows, row_bytes, shape[1] * isa.DTYPE_SIZES[dtype], 0)
    prog = a.finish(tensor_maps=False)
    isa.assign_tensor_maps(prog.instrs, prog.buffers, max_box_rows=max_box_rows, view_bytes=view_bytes)
    return prog.instrs[0], isa.tensor_map_table(prog)


def test_a_tall_region_is_several_boxes():
    w, table = one_transfer((1024, 8), 512, 16)
    assert int(w[isa.W_TBOXES]) == 2 and int(w[isa.W_TBOX_ROWS]) == 256
    assert table[0].box_dims == (2, 1, 256) and table[0].elem_bytes == 8


@pytest.mark.parametrize("rows", [257, 300, 700, 40, 24, 7])
def test_every_box_lands_at_an_aligned_shared_address(rows):
    """Box k lands k * box bytes into the tile: past the first box that must keep 128-byte alignment (a
    257-row region of 16-byte rows once became 257 boxes of 16 bytes: a misaligned-address fault)."""
    w, table = one_transfer((1024, 4), rows, 16, dtype="f32")
    boxes, box_rows = int(w[isa.W_TBOXES]), int(w[isa.W_TBOX_ROWS])
    if table:  # a tensor form: one box, or boxes of whole 128-byte multiples
        assert boxes * box_rows == rows
        assert boxes == 1 or box_rows * 16 % isa.TMA_SMEM_ALIGN == 0
    else:  # no such split: the region keeps a plain bulk copy
        assert boxes == 0 and rows > isa.TMA_BOX_MAX


def test_box_rows_can_be_capped():
    w, table = one_transfer((64, 4096), 8, 8192, max_box_rows=1)
    assert int(w[isa.W_TBOXES]) == 8 and table[0].box_dims == (256, 4, 1)


def test_maps_view_rows_as_8_byte_elements_where_they_can():
    """8 KiB rows: four 2 KiB segments of 8-byte elements, or sixteen of bf16."""
    _, wide = one_transfer((64, 4096), 8, 8192)
    _, narrow = one_transfer((64, 4096), 8, 8192, view_bytes=2)
    assert wide[0].box_dims == (256, 4, 8) and wide[0].elem_bytes == 8
    assert narrow[0].box_dims == (256, 16, 8) and narrow[0].elem_bytes == 2


def test_segment_width_follows_the_column_offset():
    """A region starting 32 bytes into a row gets 32-byte segments."""
    w, table = one_transfer((4, 4096), 1, 64, offset=32)
    assert table[0].width * table[0].elem_bytes == 32 and int(w[isa.W_TCHUNK]) == 1


@pytest.mark.parametrize("shape,rows,row_bytes,why", [
    ((4, 12), 1, 16, "buffer rows of 24 bytes are not a multiple of 16"),
    ((8, 2056), 8, 4112, "2056 columns need 257 segments of 8, more than a box holds"),
])
def test_regions_without_a_tensor_form_keep_plain_copies(shape, rows, row_bytes, why):
    w, table = one_transfer(shape, rows, row_bytes)
    assert int(w[isa.W_TMAP]) == 0 and table == [], why


def test_inconsistent_words_are_refused():
    prog = compile_to_encoded(build_mlp_block(512, 1024), num_sms=2)
    mem = np.nonzero(prog.instrs[:, isa.W_TMAP] > 0)[0]
    prog.instrs[mem[0], isa.W_TBOX_ROWS] += 1
    with pytest.raises(ValueError, match="tensor map"):
        isa.tensor_map_table(prog)
