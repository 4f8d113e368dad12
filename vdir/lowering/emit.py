"""Entry points: an :class:`~vdir.isa.EncodedProgram` to a PTX module and text.

The kernel is specialised to the program only in which op families it emits
(the ones the program's compute instructions use); shapes, offsets and the
queues are read from the instruction stream at run time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vdir import isa
from vdir.dialects import ptx
from vdir.lowering import layout as L
from vdir.lowering.kernel import build_kernel
from vdir.target import TargetDescription, get_target


#: lowering options and their defaults: ``split_copies`` = how many bulk
#: copies (one per lane, at most 32) a dense load is cut into; ``load_path``
#: = ``"bulk"`` (cp.async.bulk, completion by transaction bytes) or ``"lsu"``
#: (16-byte cp.async per lane); ``fetch_depth`` = how many instructions the
#: ``lsu``-path load engine prefetches into registers (the other engines use
#: the shared-memory window of ``layout.FETCH_DEPTH``); ``compute_warps`` =
#: warps in the compute group (0: the target's ``compute_threads``);
#: ``tensor_copies`` = 1: loads and stores with a tensor map (``isa.W_TMAP``)
#: use ``cp.async.bulk.tensor``, 0: plain bulk copies and ``st.global``;
#: ``release_fence`` = 0: a counter is released by ``red.release.gpu`` alone
#: (itself a release), 1: with a redundant ``fence.acq_rel.gpu`` before it
LOWERING_OPTIONS = {"split_copies": 1, "load_path": "bulk", "fetch_depth": 8, "compute_warps": 0,
                    "tensor_copies": 1, "release_fence": 0}

#: the most compute warps: a CTA has at most 32 warps, two are the load and store engines
MAX_COMPUTE_WARPS = 32 - L.COMPUTE_FIRST_WARP


def used_families(program: isa.EncodedProgram) -> list[int]:
    """Sorted family opcodes of the program's compute instructions."""
    w0 = program.instrs[:, isa.W_OPCODE] if len(program.instrs) else []
    fams = {(int(w) >> 8) & 0xFF for w in w0 if int(w) & 0xFF == isa.OP_COMPUTE}
    return sorted(fams)


def _resolve(program: isa.EncodedProgram, target: TargetDescription | str | None) -> TargetDescription:
    if target is None:
        target = program.target
    if isinstance(target, str):
        target = get_target(target)
    return target


def _checked_options(options: dict | None) -> dict:
    """``LOWERING_OPTIONS`` updated with ``options``, each checked."""
    opts = dict(LOWERING_OPTIONS)
    for k, v in (options or {}).items():
        if k not in LOWERING_OPTIONS:
            raise ValueError(f"unknown lowering option '{k}' (known: {', '.join(LOWERING_OPTIONS)})")
        opts[k] = v
    if opts["load_path"] not in ("bulk", "lsu"):
        raise ValueError("load_path must be 'bulk' or 'lsu'")
    if not 1 <= int(opts["split_copies"]) <= 32:
        raise ValueError("split_copies must be in 1..32")
    for flag in ("tensor_copies", "release_fence"):
        if int(opts[flag]) not in (0, 1):
            raise ValueError(f"{flag} must be 0 or 1")
    if not 0 <= int(opts["compute_warps"]) <= MAX_COMPUTE_WARPS:
        raise ValueError(f"compute_warps must be in 0..{MAX_COMPUTE_WARPS} (0: the target's)")
    return opts


def _kernel_target(t: TargetDescription, opts: dict) -> TargetDescription:
    """``t`` with the compute group that the options ask for."""
    warps = int(opts["compute_warps"])
    return dataclasses.replace(t, compute_threads=32 * warps) if warps else t


def ptx_module(program: isa.EncodedProgram, target: TargetDescription | str | None = None,
               options: dict | None = None) -> ptx.ModuleOp:
    """The ``ptx.module`` of the persistent kernel for ``program`` (``options``: LOWERING_OPTIONS)."""
    opts = _checked_options(options)
    t = _kernel_target(_resolve(program, target), opts)
    fams = used_families(program)
    from vdir.lowering.families import BODIES

    unknown = [f for f in fams if f not in BODIES]
    if unknown:
        raise ValueError(f"the PTX lowering has no body for family opcode(s) {unknown}")
    mod = ptx.ModuleOp(t.ptx_version, t.arch, 64)
    mod.body.block.add_op(ptx.GlobalOp("vdir_smem", "shared", "b8", 1024, -1))
    kernel = ptx.KernelOp(L.KERNEL_NAME, L.PARAMS, L.block_threads(t))
    mod.body.block.add_op(kernel)
    build_kernel(kernel, t, fams, opts)
    return mod


def lower_to_ptx(program: isa.EncodedProgram, target: TargetDescription | str | None = None,
                 options: dict | None = None) -> str:
    """PTX text of the persistent kernel for ``program`` on ``target``."""
    return ptx.print_ptx(ptx_module(program, target, options))


@dataclass
class LoweredKernel:
    """PTX text plus what a launch needs to know."""

    ptx: str
    name: str
    block_threads: int
    grid: int
    dynamic_smem: int
    families: list[int]


def lower(program: isa.EncodedProgram, target: TargetDescription | str | None = None,
          options: dict | None = None) -> LoweredKernel:
    """Lower ``program`` and return the text with its launch configuration."""
    t = _kernel_target(_resolve(program, target), _checked_options(options))
    smem = L.dynamic_smem_bytes(program.smem_bytes)
    if smem > t.smem_per_block:
        raise ValueError(
            f"program needs {program.smem_bytes} bytes of tiles + {L.HEADER_BYTES} header = {smem} bytes "
            f"of shared memory; target '{t.name}' allows {t.smem_per_block}"
        )
    return LoweredKernel(
        ptx=lower_to_ptx(program, t, options), name=L.KERNEL_NAME, block_threads=L.block_threads(t),
        grid=program.num_sms, dynamic_smem=smem, families=used_families(program),
    )
