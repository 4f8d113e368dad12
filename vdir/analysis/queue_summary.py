"""How an encoded program's work falls on the SMs and engines: a table a person can read.

``vdir-opt -p vdir-pipeline -t queues`` prints, per SM and engine, the
instructions the queue executes (loops expanded), the bytes its loads and
stores move, and its synchronisation: the cross-SM waits (global counters),
the local waits (dependency bits) and the releases. Then the spread over the
SMs (least, mean, most) of each column, which is where an unbalanced
placement or a queue that waits on every other SM shows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vdir import isa
from vdir.target import get_target

#: the columns of one engine, in order: (key, header); every cell is CELL characters wide
_COLUMNS = (("instrs", "instrs"), ("mb", "MB"), ("xwaits", "x-SM"), ("waits", "bits"), ("releases", "rel"))
CELL = 8


@dataclass(frozen=True)
class QueueStats:
    """What one queue does: executed instructions, bytes moved, waits and releases."""

    instrs: int
    mb: float
    xwaits: int
    waits: int
    releases: int


def queue_stats(program: isa.EncodedProgram, sm: int, engine: int) -> QueueStats:
    """The statistics of queue ``(sm, engine)``, its loops expanded."""
    words = program.executed_queue(sm, engine)
    if not len(words):
        return QueueStats(0, 0.0, 0, 0, 0)
    ops = isa.OPCODE.column(words)
    copies = (ops == isa.OP_LOAD) | (ops == isa.OP_STORE)
    moved = (isa.ROWS.column(words).astype(np.int64) * isa.ROW_BYTES.column(words))[copies].sum()
    return QueueStats(
        instrs=int((ops != isa.OP_NOP).sum()),
        mb=float(moved) / 1e6,
        xwaits=int((isa.WAIT_COUNTER.column(words) != 0).sum()),
        waits=int((isa.WAIT_MASK.column(words) != 0).sum()),
        releases=int((isa.RELEASE_COUNTER.column(words) != 0).sum()),
    )


def queue_summary(program: isa.EncodedProgram, name: str = "program") -> str:
    """The table of ``vdir-opt -t queues`` (see the module docstring).

    Per engine: ``instrs`` executed (no-ops left out), ``MB`` loaded or
    stored, ``x-SM`` waits on global counters, ``bits`` waits on dependency
    bits, ``rel`` global-counter releases.
    """
    engines = get_target(program.target).engine_names
    stats = [[queue_stats(program, sm, e) for e in range(len(engines))] for sm in range(program.num_sms)]
    used = [e for e in range(len(engines)) if any(row[e].instrs or row[e].xwaits for row in stats)]
    groups = [(e, [(k, h) for k, h in _COLUMNS if k != "mb" or any(row[e].mb for row in stats)]) for e in used]
    cols = [(e, key) for e, keys in groups for key, _ in keys]
    lines = [f"// {name}: {program.num_sms} SMs, {len(program.instrs)} encoded instructions, "
             f"{program.smem_bytes} bytes of tiles per SM, {program.num_counters} global counter(s)",
             " " * 6 + " | ".join(f"{engines[e]:^{CELL * len(keys)}}" for e, keys in groups),
             " " * 6 + " | ".join("".join(f"{h:>{CELL}}" for _, h in keys) for _, keys in groups)]

    def row_text(label: str, values: list[float]) -> str:
        cells, i = [], 0
        for _, keys in groups:
            cells.append("".join(_cell(v) for v in values[i : i + len(keys)]))
            i += len(keys)
        return f"{label:<6}" + " | ".join(cells)

    for sm, row in enumerate(stats):
        lines.append(row_text(f"sm {sm}", [getattr(row[e], key) for e, key in cols]))
    for label, pick in (("least", np.min), ("mean", np.mean), ("most", np.max), ("total", np.sum)):
        lines.append(row_text(label, [float(pick([getattr(row[e], key) for row in stats])) for e, key in cols]))
    return "\n".join(lines) + "\n"


def _cell(value: float) -> str:
    text = f"{value:.1f}" if not float(value).is_integer() else f"{int(value)}"
    return f"{text:>{CELL}}"


__all__ = ["QueueStats", "queue_stats", "queue_summary"]
