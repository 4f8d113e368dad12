"""The typed ``ptx`` dialect: the builder's operand slots, and the verifier on whole kernels."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, SymbolRefAttr
from xdsl.utils.exceptions import VerifyException

from vdir import isa
from vdir.dialects import ptx
from vdir.families import FAMILIES
from vdir.lowering import ptx_module
from vdir.lowering.builder import PtxBuilder
from vdir.testing.assembler import ProgramAssembler


def _kernel() -> tuple[ptx.ModuleOp, PtxBuilder]:
    mod = ptx.ModuleOp("8.0", "sm_90a")
    k = ptx.KernelOp("k", [("u64", "p_in")], 32)
    mod.body.block.add_op(k)
    return mod, PtxBuilder(k)


def test_raw_template_becomes_typed_slots():
    """``raw`` parses its PTX-syntax operand list into addresses, immediates and vectors."""
    mod, b = _kernel()
    src = b.param("u64", "p_in")
    dst = b.mov("u32", 0)
    b.raw("cp.async.ca.shared.global", "[{0}+32], [{1}], 16", ins=[dst, src])
    lo, hi = b.raw("mov.b64", "{{{0}, {1}}}, {2}", outs=["b32", "b32"], ins=[src])
    b.raw("mov.f32", "{0}, 0f3F800000", outs=["f32"])
    mod.verify()
    cp, unpack, mov = list(b.block.ops)[-3:]
    dst_addr, src_addr, size = cp.slots.data
    assert (dst_addr.space.data, dst_addr.offset.data) == ("shared", 32)
    assert (src_addr.space.data, src_addr.offset.data) == ("global", 0)
    assert isinstance(size, IntegerAttr) and size.value.data == 16
    assert list(cp.operands) == [dst, src]
    assert isinstance(unpack.slots.data[0], ptx.VectorAttr) and list(unpack.results) == [lo, hi]
    assert isinstance(mov.slots.data[1], FloatAttr) and mov.slots.data[1].value.data == 1.0
    assert "cp.async.ca.shared.global [%r1+32], [%rd1], 16;" in ptx.print_ptx(mod)


def test_param_address_is_a_symbol():
    """A kernel parameter is addressed by its symbol in the param space."""
    mod, b = _kernel()
    b.param("u64", "p_in")
    (ld,) = b.block.ops
    addr = ld.slots.data[1]
    assert isinstance(addr, ptx.AddressAttr) and addr.space.data == "param"
    assert addr.base == SymbolRefAttr("p_in")


@pytest.mark.parametrize("template", ["{0}, [{1}+]", "{0}, ?", "{1}, {1}, 4"])
def test_unreadable_template_is_rejected(template):
    """An operand list the dialect has no slot for is a ValueError, not text in the IR."""
    _, b = _kernel()
    x = b.mov("u32", 0)
    with pytest.raises(ValueError):
        b.raw("add.u32", template, outs=["u32"], ins=[x])


def test_builder_output_is_checked_by_the_verifier():
    """A wrongly typed builder call fails verification, naming the instruction and operand."""
    mod, b = _kernel()
    f = b.mov("f32", 1.0)
    b.i("add.u32", "u32", f, 1)
    with pytest.raises(VerifyException, match=r"add\.u32: operand 2: a !ptx\.reg<f32> where a \.u32 register"):
        mod.verify()


@pytest.mark.parametrize("options", [{}, {"tensor_copies": 0}, {"load_path": "lsu"}, {"release_fence": 1},
                                     {"bit_signal": "xor32"}, {"batch_releases": 1}])
def test_kernel_with_every_family_verifies(options):
    """The kernel with every family, on each load path, is well-typed ptx IR."""
    a = ProgramAssembler(2, [isa.BufferInfo("b", (1, 64), "bf16", False)], 4096, num_counters=1)
    for fam in FAMILIES.values():
        a.compute(0, fam.opcode, 0, [0, 0, 0], 1, 8)
    a.load(1, 0, 0, 1, 128, 128, 0, wait_counter=0, wait_count=1)
    a.store(0, 0, 0, 1, 128, 128, 0, release_counter=0)
    ptx_module(a.finish(), "h200", options).verify()
