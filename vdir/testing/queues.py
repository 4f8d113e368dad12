"""What an encoded program's queues hold, for tests: which engine loads which buffer."""

from __future__ import annotations

from vdir import isa


def load_engines(program: isa.EncodedProgram) -> dict[str, set[str]]:
    """Buffer name -> the names of the engines whose queues (on any SM) load from it."""
    found: dict[str, set[str]] = {b.name: set() for b in program.buffers}
    for sm in range(program.num_sms):
        for engine in range(program.num_engines):
            queue = program.executed_queue(sm, engine)
            loads = isa.OPCODE.column(queue) == isa.OP_LOAD
            for b in set(isa.BUFFER.column(queue)[loads].tolist()):
                found[program.buffers[b].name].add(program.engine_name(engine))
    return found
