"""Assemble :class:`~vdir.isa.EncodedProgram` objects by hand.

For tests and benchmarks of the GPU kernel that do not go through the
compiler: instructions are appended per (SM, engine) queue with their waits
and signals spelled out, and :meth:`ProgramAssembler.finish` lays the queues
out contiguously.
"""

from __future__ import annotations

import numpy as np

from vdir import isa
from vdir.families import DTYPE_BYTES, ComputeSignature, Family, ParamWords, TileSig, get_family
from vdir.target import DEFAULT_TARGET, EngineKind, get_target


class ProgramAssembler:
    """Collects instructions per (SM, engine) queue and builds the program."""

    def __init__(self, num_sms: int, buffers: list[isa.BufferInfo], smem_bytes: int, num_counters: int = 0,
                 target: str = DEFAULT_TARGET):
        self.num_sms = num_sms
        self.target = target
        spec = get_target(target)
        self.num_engines = spec.num_engines
        self.load_engine, self.compute_engine, self.store_engine = (
            spec.engine_index(k) for k in (EngineKind.LOAD, EngineKind.COMPUTE, EngineKind.STORE)
        )
        self.buffers = buffers
        self.smem_bytes = smem_bytes
        self.num_counters = num_counters
        self.queues: list[list[list[np.ndarray]]] = [[[] for _ in range(self.num_engines)] for _ in range(num_sms)]
        self.names: dict[int, str] = {}
        self._uop = 0

    def _common(self, opcode: int, wait: int, parity: int, signal: int,
                wait_counter: int | None, wait_count: int, release_counter: int | None, name: str) -> isa.Instruction:
        ins = isa.Instruction.empty(opcode)
        ins.wait_mask, ins.wait_parity, ins.signal_mask = wait, parity, signal
        ins.set(isa.WAIT_COUNTER, 0 if wait_counter is None else wait_counter + 1)
        ins.set(isa.WAIT_COUNT, wait_count)
        ins.set(isa.RELEASE_COUNTER, 0 if release_counter is None else release_counter + 1)
        ins.set(isa.UOP_ID, self._uop)
        self.names[self._uop] = name or f"uop{self._uop}"
        self._uop += 1
        return ins

    def _push(self, sm: int, engine: int, ins: isa.Instruction) -> int:
        self.queues[sm][engine].append(ins.words)
        return ins.uop_id

    def transfer(self, sm: int, store: bool, buf: int, offset: int, rows: int, row_bytes: int, stride: int,
                 smem: int, *, wait: int = 0, parity: int = 0, signal: int = 0,
                 wait_counter: int | None = None, wait_count: int = 0,
                 release_counter: int | None = None, name: str = "", engine: int | None = None) -> int:
        """A load (global -> tile) or store (tile -> global) of ``rows`` rows.

        ``engine`` is the queue index it goes on (a second load engine, such
        as ``stream``); by default the target's load or store engine.
        """
        ins = self._common(isa.OP_STORE if store else isa.OP_LOAD, wait, parity, signal,
                           wait_counter, wait_count, release_counter, name)
        for f, v in zip(isa.REGION_FIELDS, (buf, offset, rows, row_bytes, stride, smem), strict=True):
            ins.set(f, v)
        if engine is None:
            engine = self.store_engine if store else self.load_engine
        return self._push(sm, engine, ins)

    def load(self, sm: int, *args, **kw) -> int:
        """A load; arguments as :meth:`transfer` without ``store``."""
        return self.transfer(sm, False, *args, **kw)

    def store(self, sm: int, *args, **kw) -> int:
        """A store; arguments as :meth:`transfer` without ``store``."""
        return self.transfer(sm, True, *args, **kw)

    def compute(self, sm: int, family: int, out: int, inputs: list[int], p0: int = 0, p1: int = 0,
                p2: int = 0, f0: float = 0.0, *, p3: int = 0, wait: int = 0, parity: int = 0, signal: int = 0,
                wait_counter: int | None = None, wait_count: int = 0,
                release_counter: int | None = None, name: str = "") -> int:
        """A compute micro-op of family opcode ``family`` on shared offsets, its words given raw."""
        ins = self._common(isa.OP_COMPUTE, wait, parity, signal, wait_counter, wait_count, release_counter, name)
        ins.set_family(family)
        if len(inputs) > isa.MAX_INPUTS:
            raise ValueError(f"a compute names at most {isa.MAX_INPUTS} input tiles, not {len(inputs)}")
        ins.set(isa.OUT_SMEM, out)
        for f, o in zip(isa.IN_SMEM, inputs, strict=False):
            ins.set(f, o)
        ins.set(isa.NUM_INPUTS, len(inputs))
        ParamWords(p0, p1, p2, p3, f0).write(ins.words)
        return self._push(sm, self.compute_engine, ins)

    def compute_family(self, sm: int, family: Family, out: int, inputs: list[int],
                       signature: ComputeSignature, **deps) -> int:
        """A compute micro-op whose parameter words ``family`` encodes from ``signature``.

        ``inputs`` are the shared offsets of ``signature.inputs``; ``deps``
        are :meth:`compute`'s keyword arguments (waits, signals, name).
        """
        words = family.encode_params(signature)
        return self.compute(sm, family.opcode, out, inputs, words.p0, words.p1, words.p2, words.f0,
                            p3=words.p3, **deps)

    def nop(self, sm: int, engine: int, *, wait: int = 0, parity: int = 0, signal: int = 0,
            wait_counter: int | None = None, wait_count: int = 0,
            release_counter: int | None = None, name: str = "") -> int:
        """A nop: only waits and signals."""
        ins = self._common(isa.OP_NOP, wait, parity, signal, wait_counter, wait_count, release_counter, name)
        return self._push(sm, engine, ins)

    def finish(self, tensor_maps: bool = True) -> isa.EncodedProgram:
        """The encoded program (queues laid out SM by SM, engine by engine).

        With ``tensor_maps`` the loads and stores get their tensor-copy words
        (``isa.assign_tensor_maps``), as ``vdir-encode`` gives them.
        """
        rows, queues = [], []
        for sm in range(self.num_sms):
            qs = []
            for e in range(self.num_engines):
                q = self.queues[sm][e]
                qs.append((len(rows), len(q)))
                rows += q
            queues.append(qs)
        instrs = np.stack(rows).astype(np.uint32) if rows else np.zeros((0, isa.INSTR_WORDS), np.uint32)
        if tensor_maps:
            isa.assign_tensor_maps(instrs, self.buffers)
        return isa.EncodedProgram(
            num_sms=self.num_sms, smem_bytes=self.smem_bytes, num_counters=self.num_counters,
            bitmap_bits=64, buffers=self.buffers, instrs=instrs, queues=queues, uop_names=dict(self.names),
            target=self.target,
        )


def run_once(platform, program: isa.EncodedProgram, arrays: list[np.ndarray], options: dict | None = None,
             artifact=None) -> list[np.ndarray]:
    """Run ``program`` once on ``platform`` with host ``arrays`` (argument order), from a zeroed sync block.

    Returns the arrays of the output buffers, copied back (same dtypes and
    shapes as given). Everything allocated here is freed again.
    """
    from vdir.device_runtime.platform import LaunchSpec

    bufs = []
    sync = platform.allocate(program.sync_bytes)
    try:
        for a in arrays:
            buf = platform.allocate(a.nbytes)
            platform.copy_in(buf, np.ascontiguousarray(a))
            bufs.append(buf)
        platform.fill_zero(sync)
        art = artifact if artifact is not None else platform.load_artifact(program)
        platform.launch(art, LaunchSpec(program, bufs, sync, options=dict(options or {})))
        platform.synchronize()
        outs = []
        for info, a, buf in zip(program.buffers, arrays, bufs, strict=True):
            if info.is_output:
                o = np.empty_like(a)
                platform.copy_out(buf, o)
                outs.append(o)
        return outs
    finally:
        if not getattr(platform, "_closed", False):
            for buf in bufs + [sync]:
                platform.free(buf)


def _align(n: int, a: int = 1024) -> int:
    return (n + a - 1) // a * a


def family_program(family: str, shapes: list[tuple[int, int]], dtypes: list[str], out_shape: tuple[int, int],
                   out_dtype: str = "bf16", params: dict | None = None) -> isa.EncodedProgram:
    """One SM: load each input tile, run one ``family`` op, store the result.

    Buffers are the inputs in order, then the output. The family encodes its
    parameter words from the tiles and ``params``, as the encoder does.
    """
    fam = get_family(family)
    sigs = [TileSig(s, d) for s, d in zip(shapes, dtypes, strict=True)]
    signature = ComputeSignature(tuple(sigs), TileSig(out_shape, out_dtype), dict(params or {}))
    bufs = [isa.BufferInfo(f"in{i}", s, d, False) for i, (s, d) in enumerate(zip(shapes, dtypes, strict=True))]
    bufs.append(isa.BufferInfo("out", out_shape, out_dtype, True))
    offs, cur = [], 0
    for t in sigs:
        offs.append(cur)
        cur = _align(cur + t.nbytes)
    out_off = cur
    a = ProgramAssembler(1, bufs, _align(cur + signature.result.nbytes))
    for i, t in enumerate(sigs):
        rb = t.shape[1] * DTYPE_BYTES[t.dtype]
        a.load(0, i, 0, t.shape[0], rb, rb, offs[i], signal=1 << i, name=f"load in{i}")
    n = len(shapes)
    allin = (1 << n) - 1
    a.compute_family(0, fam, out_off, offs, signature, wait=allin, parity=allin, signal=1 << 8, name=f"{family}")
    ob = out_shape[1] * DTYPE_BYTES[out_dtype]
    a.store(0, n, 0, out_shape[0], ob, ob, out_off, wait=1 << 8, parity=1 << 8, name="store out")
    return a.finish()
