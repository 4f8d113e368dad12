"""The PTX lowering: structure of the printed kernel, and that it assembles.

No GPU is needed. Assembly uses ``ptxas`` when it is on PATH, else nvJitLink
from ``cuda.bindings``; the assembling tests skip (saying why) when neither
is there.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

import pytest

from vdir import isa
from vdir.dialects import ptx
from vdir.families import FAMILIES
from vdir.lowering import layout as L
from vdir.lowering import lower, lower_to_ptx, ptx_module, used_families
from vdir.lowering.options import LoweringOptionError, LoweringOptions
from vdir.target import get_target
from vdir.testing.assembler import ProgramAssembler, family_program


def _assembler():
    if shutil.which("ptxas"):
        return "ptxas"
    try:
        from cuda.bindings import nvjitlink  # noqa: F401

        return "nvjitlink"
    except Exception:  # noqa: BLE001
        return None


def assemble(text: str, arch: str = "sm_90a") -> str:
    """Assemble PTX for ``arch``; return the assembler's info output."""
    how = _assembler()
    if how is None:
        pytest.skip("neither ptxas nor cuda.bindings.nvjitlink is available to assemble PTX")
    if how == "ptxas":
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "k.ptx")
            with open(src, "w") as f:
                f.write(text)
            r = subprocess.run(["ptxas", f"-arch={arch}", "-v", src, "-o", os.path.join(d, "k.cubin")],
                               capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            return r.stderr + r.stdout
    from cuda.bindings import nvjitlink

    h = nvjitlink.create(1, [f"-arch={arch}"])
    try:
        nvjitlink.add_data(h, nvjitlink.InputType.PTX, text.encode(), len(text), "k.ptx")
        nvjitlink.complete(h)
        return ""
    finally:
        nvjitlink.destroy(h)


def gemv_program(R: int = 16, K: int = 2048) -> isa.EncodedProgram:
    """One SM: load w, load x, gemv, store y."""
    return family_program("gemv", [(R, K), (1, K)], ["bf16", "bf16"], (1, R))


def test_scheduler_structure():
    """The kernel has the three role loops and the memory-model instructions."""
    text = lower_to_ptx(gemv_program(), get_target("h200"))
    assert text.startswith("//")
    assert ".version 8.0" in text and ".target sm_90a" in text and ".address_size 64" in text
    assert f".visible .entry {L.KERNEL_NAME}(" in text
    assert ".extern .shared .align 1024 .b8 vdir_smem[];" in text
    # three role loops
    for lab in ("$L_ld_top_0:", "$L_st_top_0:", "$L_cp_top_0:", "$L_ld_issue_0:"):
        assert lab in text
    # the memory-model pieces
    for needle in (
        "ld.acquire.cta.shared.b64",
        "atom.release.cta.shared.xor.b64",
        "ld.acquire.gpu.global.u32",
        "red.release.gpu.global.add.u32",
        "fence.proxy.async.global;",
        "fence.mbarrier_init.release.cluster;",
        "mbarrier.arrive.expect_tx.shared::cta.b64",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group",
        "mbarrier.test_wait.parity.shared::cta.b64",
        "barrier.sync 1, 256;",
        "%globaltimer",
        "atom.relaxed.gpu.global.cas.b32",
        "ld.shared.v4.b32",
        "shfl.sync.bfly.b32",
        "cvt.rn.bf16.f32",
    ):
        assert needle in text, needle
    assert "fence.acq_rel.gpu" not in text  # red.release.gpu is the release
    assert "fence.acq_rel.gpu;" in lower_to_ptx(gemv_program(), get_target("h200"), LoweringOptions(release_fence=True))
    assert f".maxntid {L.block_threads(get_target('h200'))}, 1, 1" in text


def test_only_used_families_emitted():
    """A gemv-only program emits the gemv body and no other family."""
    prog = gemv_program()
    assert used_families(prog) == [FAMILIES["gemv"].opcode]
    text = lower_to_ptx(prog, "h200")
    assert re.search(r"^\$L_fam1_0:", text, re.M)
    for other in ("rmsnorm", "silu_mul", "add", "rmsnorm_gemv", "gemv_silu_mul", "gemv_add"):
        assert f"$L_fam{FAMILIES[other].opcode}_" not in text
    # no exp (silu) and no sqrt (rmsnorm) in a gemv-only kernel
    assert "ex2.approx" not in text and "sqrt.rn" not in text


def test_module_is_verified_ptx_dialect_ir():
    """The ptx-dialect module verifies and holds the expected ops."""
    mod = ptx_module(gemv_program(), "h200")
    mod.verify()
    kernel = next(op for op in mod.body.block.ops if isinstance(op, ptx.KernelOp))
    assert kernel.param_names() == [n for _, n in L.PARAMS if n != L.TRACE_PARAM]  # no trace option
    names = {op.name for op in kernel.body.block.ops}
    assert {"ptx.cp", "ptx.mbarrier", "ptx.bra", "ptx.label", "ptx.fma"} <= names


def test_reg_type_roundtrip():
    """Register types parse and print."""
    from xdsl.context import Context
    from xdsl.parser import Parser

    ctx = Context()
    ctx.load_dialect(ptx.PTX)
    t = Parser(ctx, "!ptx.reg<u32>").parse_attribute()
    assert t == ptx.RegType("u32")
    assert str(t) == "!ptx.reg<u32>"


def test_immediates_and_guards_print():
    """Float immediates print exactly; guards and register declarations print."""
    mod = ptx.ModuleOp("8.0", "sm_90a")
    k = ptx.KernelOp("k", [("u32", "a")], 32)
    mod.body.block.add_op(k)
    from vdir.lowering.builder import PtxBuilder

    b = PtxBuilder(k)
    a = b.param("u32", "a")
    f = b.mov("f32", 1.0)
    p = b.setp("eq.u32", a, 0)
    b.i("add.f32", "f32", f, 0.5, dst=f, guard=p, neg=True)
    b.raw("ret", "")
    text = ptx.print_ptx(mod)
    assert "mov.f32 %f1, 0f3F800000;" in text
    assert "@!%p1 add.f32 %f1, %f1, 0f3F000000;" in text
    assert ".reg .f32 %f<2>;" in text


ALL_FAMILY_PROGRAMS = {
    "gemv": lambda: family_program("gemv", [(16, 256), (1, 256)], ["bf16", "bf16"], (1, 16)),
    "gemv_acc_f32": lambda: family_program("gemv", [(16, 256), (1, 256), (1, 16)], ["bf16", "bf16", "f32"],
                                           (1, 16), "f32"),
    "rmsnorm": lambda: family_program("rmsnorm", [(1, 512), (1, 512)], ["bf16", "bf16"], (1, 512),
                                      params={"eps": 1e-5}),
    "silu_mul": lambda: family_program("silu_mul", [(4, 64), (4, 64)], ["bf16", "bf16"], (4, 64)),
    "add": lambda: family_program("add", [(4, 64), (4, 64)], ["bf16", "bf16"], (4, 64)),
    "add_f32": lambda: family_program("add", [(4, 64), (4, 64)], ["f32", "f32"], (4, 64), "f32"),
    "add_f32_to_bf16": lambda: family_program("add", [(4, 64), (4, 64)], ["f32", "f32"], (4, 64)),
    "sum_rows": lambda: family_program("sum_rows", [(6, 64)], ["f32"], (1, 64), "f32"),
    "sum_rows_bf16": lambda: family_program("sum_rows", [(6, 64)], ["f32"], (1, 64)),
    "rmsnorm_gemv": lambda: family_program("rmsnorm_gemv", [(8, 256), (1, 256), (1, 256)], ["bf16"] * 3,
                                           (1, 8), params={"eps": 1e-5}),
    "gemv_silu_mul": lambda: family_program("gemv_silu_mul", [(8, 256), (1, 256), (1, 8)], ["bf16"] * 3,
                                            (1, 8), params={"operand": 1}),
    "gemv_add": lambda: family_program("gemv_add", [(8, 256), (1, 256), (1, 8)], ["bf16"] * 3, (1, 8)),
    "rmsnorm_rows": lambda: family_program("rmsnorm_rows", [(8, 128), (1, 128)], ["bf16"] * 2, (8, 128),
                                           params={"eps": 1e-6}),
    "rope": lambda: family_program("rope", [(8, 128), (1, 128), (1, 128)], ["bf16"] * 3, (8, 128)),
    "rope_f32_tables": lambda: family_program("rope", [(8, 64), (1, 64), (1, 64)], ["bf16", "f32", "f32"], (8, 64)),
    "rmsnorm_rope": lambda: family_program("rmsnorm_rope", [(8, 128), (1, 128), (1, 128), (1, 128)], ["bf16"] * 4,
                                           (8, 128), params={"eps": 1e-6}),
}


@pytest.mark.parametrize("name", sorted(ALL_FAMILY_PROGRAMS))
def test_each_family_assembles(name):
    """Each family (and gemv with acc/f32 out) assembles for sm_90a."""
    prog = ALL_FAMILY_PROGRAMS[name]()
    info = assemble(lower_to_ptx(prog, "h200"))
    assert "spill" not in info or "0 bytes spill stores" in info


def test_all_families_in_one_kernel_assemble_without_spills():
    """All families in one kernel: assembles, no spills, no stack."""
    a = ProgramAssembler(2, [isa.BufferInfo("b", (1, 64), "bf16", False)], 4096, num_counters=1)
    for fam in FAMILIES.values():
        a.compute(0, fam.opcode, 0, [0, 0, 0], 1, 8)
    a.load(1, 0, 0, 1, 128, 128, 0, wait_counter=0, wait_count=1)
    a.store(0, 0, 0, 1, 128, 128, 0, release_counter=0)
    prog = a.finish()
    assert used_families(prog) == sorted(f.opcode for f in FAMILIES.values())
    text = lower_to_ptx(prog, "h200")
    # the dispatch is one indexed branch through a table by opcode (every family has a body)
    table = re.search(r"\$L_fam_table_0: \.branchtargets (.*);", text)
    assert table is not None and "brx.idx.uni" in text
    assert table.group(1).split(", ") == [f"$L_fam{op}_0" if op else "$L_fam_unknown_0"
                                          for op in range(max(used_families(prog)) + 1)]
    info = assemble(text)
    if info:
        assert "0 bytes spill stores" in info and "0 bytes stack frame" in info, info


def test_launch_facts():
    """Block size, grid and dynamic shared memory of a lowered kernel."""
    lk = lower(gemv_program(8, 4096), "h200")
    # the load and store warps, 8 compute warps, the stream engine's warp
    assert lk.block_threads == 352 and lk.grid == 1
    assert ".minnctapersm 1" in lk.ptx  # one CTA per SM: ptxas may use the registers that leaves
    assert lk.dynamic_smem % 128 == 0 and lk.dynamic_smem >= L.HEADER_BYTES + 8 * 4096 * 2


def test_too_much_shared_memory_is_rejected():
    """A program over the shared-memory limit is rejected with a message."""
    prog = gemv_program(16, 256)
    prog.smem_bytes = 300 * 1024
    with pytest.raises(ValueError, match="shared memory"):
        lower(prog, "h200")


@pytest.mark.parametrize("options", [{"load_path": "lsu"}, {"split_copies": 32}, {"fetch_depth": 2},
                                     {"load_ring": 8}, {"load_ring": 1}])
def test_lowering_options_assemble(options):
    """The non-default load paths, fetch depths and load rings assemble."""
    text = lower_to_ptx(gemv_program(), "h200", LoweringOptions.from_mapping(options))
    if options.get("load_path") == "lsu":
        assert "cp.async.cg.shared.global" in text and "cp.async.mbarrier.arrive.noinc" in text
    else:
        assert "cp.async.bulk.shared::cluster.global" in text
    assemble(text)


def test_unknown_lowering_option_is_rejected():
    """An unknown lowering option is an error, not ignored."""
    with pytest.raises(LoweringOptionError, match="unknown lowering option 'unroll' [(]known: split_copies, "):
        LoweringOptions.from_mapping({"unroll": 3})


def test_instruction_prefetch_window_fits_header():
    """The shared-memory header regions do not overlap the arena."""
    # every engine's instruction window ends before the tile arena
    engines = get_target().num_engines
    assert L.fetch_window(engines) <= L.fetch_window(len(L.KERNEL_ROLES)) <= L.HEADER_BYTES
    assert L.HEADER_BYTES == isa.KERNEL_RESERVED_SMEM
    assert L.MAX_LOAD_RING <= 32  # lane s holds load ring slot s's retirement info
    assert L.SMEM_MBARRIERS + 8 * L.MAX_LOAD_RING * L.MAX_LOAD_RINGS <= L.SMEM_SCRATCH
    assert L.HEADER_BYTES % 1024 == 0
