"""Entry points: an :class:`~vdir.isa.EncodedProgram` to a PTX module and text.

The kernel is specialised to the program only in which op families it emits
(the ones the program's compute instructions use) and in whether it runs loop
records; shapes, offsets and the queues are read from the instruction stream
at run time (and the queue table, ``layout.kernel_queue_table``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from vdir import isa
from vdir.dialects import ptx
from vdir.lowering import layout as L
from vdir.lowering.kernel import build_kernel
from vdir.lowering.options import LoweringOptionError, LoweringOptions, OptionsLike
from vdir.target import TargetDescription, get_target


def used_families(program: isa.EncodedProgram) -> list[int]:
    """Sorted family opcodes of the program's compute instructions."""
    instrs = program.instrs.reshape(-1, isa.INSTR_WORDS)
    compute = isa.OPCODE.column(instrs) == isa.OP_COMPUTE
    return sorted({int(f) for f in isa.FAMILY.column(instrs)[compute]})


def uses_reductions(program: isa.EncodedProgram) -> bool:
    """Whether some store of the program reduces (``isa.REDUCE``): only then does the store engine
    carry the bulk-reduction path, so every other program lowers to the same text as before."""
    instrs = program.instrs.reshape(-1, isa.INSTR_WORDS)
    stores = isa.OPCODE.column(instrs) == isa.OP_STORE
    return bool((isa.REDUCE.column(instrs)[stores] != isa.REDUCE_NONE).any())


def uses_flag_words(program: isa.EncodedProgram) -> bool:
    """Whether some load or store of the program moves flag words (``isa.TRANSFER_FLAG_WORDS``): only then
    do the engines carry those paths, so every other program lowers to the same text as before."""
    return bool(isa.moves_flag_words(program.instrs.reshape(-1, isa.INSTR_WORDS)).any())


def uses_release_first(program: isa.EncodedProgram) -> bool:
    """Whether some store, or store-engine nop (``isa.check_transfer_flags`` allows it nowhere else), of
    the program releases its counter before its bits (``isa.TRANSFER_RELEASE_FIRST``): only then does
    the store engine read the flag, so every other program lowers to the same text as before."""
    instrs = program.instrs.reshape(-1, isa.INSTR_WORDS)
    completes = np.isin(isa.OPCODE.column(instrs), (isa.OP_STORE, isa.OP_NOP))
    return bool((isa.TRANSFER_FLAGS.column(instrs)[completes] & isa.TRANSFER_RELEASE_FIRST).any())


def _resolve(program: isa.EncodedProgram, target: TargetDescription | str | None) -> TargetDescription:
    if target is None:
        target = program.target
    if isinstance(target, str):
        target = get_target(target)
    return target


def _kernel_target(t: TargetDescription, opts: LoweringOptions) -> TargetDescription:
    """``t`` with the compute group that the options ask for."""
    warps = opts.compute_warps
    return dataclasses.replace(t, compute_threads=32 * warps) if warps else t


def _runs_loops(program: isa.EncodedProgram, opts: LoweringOptions) -> bool:
    """Whether the kernel runs ``program``'s loop records; with the lsu load path or run_loops off it
    walks the executed stream (uploaded unrolled)."""
    return program.has_loops and not opts.expands_loops


def ptx_module(program: isa.EncodedProgram, target: TargetDescription | str | None = None,
               options: OptionsLike = None) -> ptx.ModuleOp:
    """The ``ptx.module`` of the persistent kernel for ``program``, built as ``options`` say."""
    opts = LoweringOptions.coerce(options)
    return _build_module(program, _kernel_target(_resolve(program, target), opts), opts)


def _build_module(program: isa.EncodedProgram, t: TargetDescription, opts: LoweringOptions) -> ptx.ModuleOp:
    opts = opts.for_program(program, t)
    if program.num_sms % opts.cluster_size:
        raise LoweringOptionError(
            f"lowering option cluster_size={opts.cluster_size} needs a grid of whole clusters; the program "
            f"runs on {program.num_sms} SM{'' if program.num_sms == 1 else 's'}"
        )
    fams = used_families(program)
    from vdir.lowering.families import has_body

    unknown = [f for f in fams if not has_body(f)]
    if unknown:
        raise ValueError(f"the PTX lowering has no body for family opcode(s) {unknown}")
    mod = ptx.ModuleOp(t.ptx_version, t.arch, 64)
    mod.body.block.add_op(ptx.GlobalOp("vdir_smem", "shared", "b8", 1024, -1))
    # one CTA per SM (persistent): without saying so, ptxas caps the registers to fit several
    # CTAs of this size on an SM, and spilled with 352 threads
    loops = _runs_loops(program, opts)
    kernel = ptx.KernelOp(L.KERNEL_NAME, L.kernel_params(opts.trace), L.block_threads(t, loops, opts.control_warp),
                          minnctapersm=1, cluster=opts.cluster_size if opts.cluster_size > 1 else None)
    mod.body.block.add_op(kernel)
    build_kernel(kernel, t, fams, opts, program.scalars, loops=loops, reduces=uses_reductions(program),
                 flag_words=uses_flag_words(program),
                 release_first=uses_release_first(program))
    return mod


def lower_to_ptx(program: isa.EncodedProgram, target: TargetDescription | str | None = None,
                 options: OptionsLike = None) -> str:
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
    #: the weight tiles its stream engine keeps in flight per SM (the option's, else the target's for the
    #: program: :meth:`LoweringOptions.for_program`)
    stream_ring: int


def lower(program: isa.EncodedProgram, target: TargetDescription | str | None = None,
          options: OptionsLike = None) -> LoweredKernel:
    """Lower ``program`` and return the text with its launch configuration."""
    options = LoweringOptions.coerce(options)
    t = _kernel_target(_resolve(program, target), options)
    options = options.for_program(program, t)
    smem = L.dynamic_smem_bytes(program.smem_bytes)
    if smem > t.smem_per_block:
        raise ValueError(
            f"program needs {program.smem_bytes} bytes of tiles + {L.HEADER_BYTES} header = {smem} bytes "
            f"of shared memory; target '{t.name}' allows {t.smem_per_block}"
        )
    return LoweredKernel(
        ptx=ptx.print_ptx(_build_module(program, t, options)), name=L.KERNEL_NAME, block_threads=L.block_threads(t, _runs_loops(program, options), options.control_warp),
        grid=program.num_sms, dynamic_smem=smem, families=used_families(program), stream_ring=options.stream_ring,
    )
