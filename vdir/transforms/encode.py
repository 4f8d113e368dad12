"""``vdir-encode``: the laid-out program -> the binary micro-op ISA.

Each node becomes one 32-word instruction in its (SM, engine) queue, in queue
order (``docs/isa.md`` documents every field). A node that waits on more than
one global counter gets a ``nop`` before it for each extra wait, and one that
releases more than one counter gets a ``nop`` after it per extra release; the
in-order engines make both equivalent to the node doing it itself. The
program is replaced by a ``vdir.encoded_program`` op; the GPU kernel and the
CPU simulator execute exactly these words.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.passes import ModulePass

from vdir import isa
from vdir.diagnostics import PassFailure
from vdir.dialects.vdir import EncodedProgramOp
from vdir.families import DTYPE_BYTES, get_family
from vdir.target import ENGINE_INDEX
from vdir.transforms.graph import Graph, Node, build_graph, single_program
from vdir.transforms.schedule import queues_of


def _mask(bits) -> int:
    m = 0
    for b in bits:
        m |= 1 << b
    return m


def _base(opcode: int, node: Node | None, uop_id: int) -> isa.Instruction:
    ins = isa.Instruction.empty(opcode)
    ins.words[isa.W_UOP_ID] = uop_id
    return ins


def _sync_fields(ins: isa.Instruction, node: Node, counter: tuple[int, int] | None, release: int | None) -> None:
    ins.wait_mask = _mask(node.wait_bits)
    ins.wait_parity = _mask(b for b, p in node.wait_bits.items() if p)
    ins.signal_mask = _mask(node.signal_bits)
    if counter is not None:
        ins.words[isa.W_WAIT_COUNTER] = counter[0] + 1
        ins.words[isa.W_WAIT_COUNT] = counter[1]
    if release is not None:
        ins.words[isa.W_RELEASE_COUNTER] = release + 1


def _memory_fields(ins: isa.Instruction, node: Node, graph: Graph, smem: int) -> None:
    arg = graph.args[node.buffer]
    es = DTYPE_BYTES[arg.dtype]
    rows, cols = node.tile.shape  # type: ignore[union-attr]
    ins.words[isa.W_BUFFER] = node.buffer
    ins.global_offset = node.row * arg.row_bytes + node.col * es
    ins.words[isa.W_ROWS] = rows
    ins.words[isa.W_ROW_BYTES] = cols * es
    ins.words[isa.W_ROW_STRIDE] = arg.row_bytes
    ins.words[isa.W_SMEM] = smem


def _compute_fields(ins: isa.Instruction, node: Node) -> None:
    fam = get_family(node.family)
    ins.set_family(fam.opcode)
    ins.words[isa.W_OUT_SMEM] = node.smem
    for i, src in enumerate(node.inputs):
        ins.words[isa.W_IN_SMEM + i] = src.smem
    ins.words[isa.W_NUM_INPUTS] = len(node.inputs)
    first = node.inputs[0].tile
    ins.words[isa.W_P0], ins.words[isa.W_P1] = first.shape  # type: ignore[union-attr]
    if node.family == "gemv":
        flags = (isa.GEMV_HAS_ACC if len(node.inputs) > 2 else 0) | (
            isa.GEMV_OUT_F32 if node.tile.dtype == "f32" else 0  # type: ignore[union-attr]
        )
        ins.words[isa.W_P2] = flags
    elif node.family == "gemv_silu_mul":
        ins.words[isa.W_P2] = int(node.params["operand"])
    if "eps" in node.params:
        ins.set_f0(float(node.params["eps"]))


def encode_node(node: Node, graph: Graph) -> list[isa.Instruction]:
    """The instructions for one node: extra counter waits, itself, extra releases."""
    waits = list(node.wait_counters)
    releases = list(node.release_counters)
    out: list[isa.Instruction] = []
    for extra in waits[1:]:
        nop = _base(isa.OP_NOP, node, node.id)
        nop.words[isa.W_WAIT_COUNTER] = extra[0] + 1
        nop.words[isa.W_WAIT_COUNT] = extra[1]
        out.append(nop)
    opcode = {"load": isa.OP_LOAD, "compute": isa.OP_COMPUTE, "store": isa.OP_STORE}[node.kind]
    ins = _base(opcode, node, node.id)
    _sync_fields(ins, node, waits[0] if waits else None, releases[0] if releases else None)
    if node.kind == "load":
        _memory_fields(ins, node, graph, node.smem)
    elif node.kind == "store":
        _memory_fields(ins, node, graph, node.inputs[0].smem)
    else:
        _compute_fields(ins, node)
    out.append(ins)
    for extra in releases[1:]:
        nop = _base(isa.OP_NOP, node, node.id)
        nop.words[isa.W_RELEASE_COUNTER] = extra + 1
        out.append(nop)
    return out


def encode(graph: Graph) -> isa.EncodedProgram:
    """The :class:`~vdir.isa.EncodedProgram` of a laid-out graph."""
    queues = queues_of(graph)
    words: list[np.ndarray] = []
    table = [[(0, 0)] * isa.NUM_ENGINES for _ in range(graph.num_sms)]
    for sm in range(graph.num_sms):
        for engine, e in ENGINE_INDEX.items():
            start = len(words)
            for node in queues.get((sm, engine), []):
                words.extend(i.words for i in encode_node(node, graph))
            table[sm][e] = (start, len(words) - start)
    instrs = np.stack(words) if words else np.zeros((0, isa.INSTR_WORDS), np.uint32)
    return isa.EncodedProgram(
        num_sms=graph.num_sms,
        smem_bytes=graph.smem_bytes,
        num_counters=graph.num_counters,
        bitmap_bits=graph.target.dependency_bits,
        buffers=[isa.BufferInfo(a.name, a.shape, a.dtype, a.is_output, a.is_input) for a in graph.args],
        instrs=instrs,
        queues=table,
        uop_names={n.id: f"{n.name} ({n.loc})" for n in graph.nodes},
        target=graph.target.name,
    )


# ---------------------------------------------------------------------------
# IR form
# ---------------------------------------------------------------------------


def encoded_op(name: str, program: isa.EncodedProgram) -> EncodedProgramOp:
    """``vdir.encoded_program`` holding ``program``."""
    names = [program.uop_names.get(i, "") for i in range(max(program.uop_names, default=-1) + 1)]
    return EncodedProgramOp.create(
        properties={
            "sym_name": StringAttr(name),
            "target": StringAttr(program.target),
            "buffers": ArrayAttr(
                [
                    StringAttr(f"{b.name}:{b.shape[0]}x{b.shape[1]}:{b.dtype}:{b.role}")
                    for b in program.buffers
                ]
            ),
            "code": StringAttr(isa.encode_code(program)),
            "names": StringAttr(isa.encode_text(names)),
        }
    )


def program_of(op: EncodedProgramOp) -> isa.EncodedProgram:
    """Read a ``vdir.encoded_program`` back into an :class:`~vdir.isa.EncodedProgram`."""
    buffers = []
    for b in op.buffers.data:
        name, shape, dtype, io = b.data.split(":")
        r, c = (int(x) for x in shape.split("x"))
        buffers.append(isa.BufferInfo(name, (r, c), dtype, io in ("out", "inout"), io in ("in", "inout")))
    names = {i: s for i, s in enumerate(isa.decode_text(op.names.data)) if s}
    return isa.EncodedProgram.from_bytes(isa.decode_code(op.code.data), buffers, names, op.target.data)


def encoded_programs(module: ModuleOp) -> list[isa.EncodedProgram]:
    """Every encoded program in the module."""
    return [program_of(op) for op in module.walk() if isinstance(op, EncodedProgramOp)]


def replace_with_encoded(module: ModuleOp, graph: Graph) -> isa.EncodedProgram:
    """Encode ``graph`` and swap the module's program for the encoded op."""
    program = encode(graph)
    old = single_program(module)
    new = encoded_op(graph.name, program)
    new.location = old.location
    module.body.block.insert_op_before(new, old)
    module.body.block.erase_op(old, safe_erase=False)
    return program


@dataclass(frozen=True)
class EncodePass(ModulePass):
    """Encode the laid-out program into per-engine instruction streams."""

    name = "vdir-encode"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = build_graph(op)
        if graph.stage != "laid-out":
            raise PassFailure(
                f"vdir-encode needs a program at stage 'laid-out' (it is '{graph.stage}'); "
                "run vdir-place, vdir-schedule, vdir-alloc-smem and vdir-layout-deps first",
                graph.program_op,
            )
        replace_with_encoded(op, graph)
