"""Where one kernel's warps stall, instruction by instruction, from Nsight Compute's source page.

    ncu --launch-skip 2 --launch-count 1 --section WarpStateStats --section SourceCounters \\
        --warp-sampling-interval 0 -o prof python3 bench/profile_uop.py --variant only=compute
    ncu -i prof.ncu-rep --page source --csv --print-source sass > prof.csv
    python3 bench/ncu_sources.py prof.csv [--top 20] [--start 0x3610 --end 0x4c30]

(``bash bench/run_all.sh profile`` runs both profiles of docs/performance.md's
round 60 and this summary.) It prints the warp-state samples by stall reason,
the instructions grouped by how often they executed (in a program of N
micro-ops on one SM, a class of ``8 N`` is the eight compute warps' path and
its size the instructions each warp runs per micro-op; ``N`` the one warp's
alone), the opcodes of each class, and the instructions with the most
samples, each with its three main stall reasons. ``--start``/``--end`` keep
the instructions at those byte offsets from the kernel's first.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from dataclasses import dataclass, field

#: the source page's columns this reads
ADDRESS, SOURCE, SAMPLES, EXECUTED = "Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"
#: the per-reason sample columns: ``stall_<reason>`` (their "(Not Issued)" twins are left out)
STALL_PREFIX = "stall_"


@dataclass
class Instruction:
    """One SASS instruction of the source page: its byte offset from the kernel's first, its text, how
    many times a warp executed it, and its warp-state samples by stall reason."""

    offset: int
    source: str
    executed: int
    samples: int
    stalls: dict[str, int] = field(default_factory=dict)

    @property
    def opcode(self) -> str:
        """The opcode without its modifiers or guard (``LDS`` for ``@P0 LDS.128 R4, [R8]``)."""
        words = [w for w in self.source.split() if not w.startswith("@")]
        return words[0].split(".")[0] if words else ""


class SourcePageError(ValueError):
    """The file is not Nsight Compute's source page as CSV."""


def read_source_page(lines: list[str]) -> list[Instruction]:
    """The instructions of a source page exported with ``--page source --csv --print-source sass``:
    a ``"Kernel Name"`` line, the header, then a row per instruction."""
    rows = [(line, r) for line, r in enumerate(csv.reader(lines), 1) if r]  # (the row's line, its cells)
    header_at = next((i for i, (_, r) in enumerate(rows) if ADDRESS in r and SOURCE in r), None)
    if header_at is None:
        raise SourcePageError(f"no header row with {ADDRESS!r} and {SOURCE!r}: not ncu's source page as CSV")
    header = rows[header_at][1]
    missing = [c for c in (SAMPLES, EXECUTED) if c not in header]
    if missing:
        raise SourcePageError(f"the source page lacks the column(s) {', '.join(map(repr, missing))}: profile "
                              "with --section SourceCounters")
    col = {name: header.index(name) for name in (ADDRESS, SOURCE, SAMPLES, EXECUTED)}
    stall_cols = {h[len(STALL_PREFIX):]: i for i, h in enumerate(header)
                  if h.startswith(STALL_PREFIX) and "Not Issued" not in h}
    out: list[Instruction] = []
    base = None
    for line, r in rows[header_at + 1:]:
        try:
            address = int(r[col[ADDRESS]], 16)
        except (ValueError, IndexError):
            raise SourcePageError(f"line {line}: no hexadecimal address") from None
        base = address if base is None else base
        out.append(Instruction(address - base, r[col[SOURCE]].strip(), _count(r, col[EXECUTED]),
                               _count(r, col[SAMPLES]),
                               {k: v for k, i in stall_cols.items() if (v := _count(r, i))}))
    return out


def _count(row: list[str], i: int) -> int:
    """A count column's value (blank or "-": 0)."""
    text = row[i].replace(",", "").strip() if i < len(row) else ""
    return int(text) if text.isdigit() else 0


def by_reason(instrs: list[Instruction]) -> Counter[str]:
    """The samples of ``instrs`` by stall reason."""
    total: Counter[str] = Counter()
    for ins in instrs:
        total.update(ins.stalls)
    return total


def by_executions(instrs: list[Instruction]) -> dict[int, list[Instruction]]:
    """The executed instructions of ``instrs`` grouped by how many times a warp executed them."""
    groups: dict[int, list[Instruction]] = {}
    for ins in instrs:
        if ins.executed:
            groups.setdefault(ins.executed, []).append(ins)
    return groups


def report(instrs: list[Instruction], top: int, classes: int) -> list[str]:
    """The summary's lines: samples by reason, the ``classes`` largest execution classes with their
    opcodes, and the ``top`` instructions with the most samples."""
    total = sum(i.samples for i in instrs)
    lines = [f"{len(instrs)} instructions, {total} samples"]
    if not total:
        return lines
    lines.append("samples by stall reason: " + ", ".join(
        f"{reason} {100 * n / total:.1f}%" for reason, n in by_reason(instrs).most_common()))
    groups = sorted(by_executions(instrs).items(), key=lambda kv: -sum(i.samples for i in kv[1]))
    lines.append("by executions (times a warp ran each: instructions, their samples, their opcodes):")
    for executed, members in groups[:classes]:
        ops = Counter(i.opcode for i in members)
        lines.append(f"  {executed:>9}x: {len(members):5d} instructions, "
                     f"{100 * sum(i.samples for i in members) / total:5.1f}% of the samples; "
                     + ", ".join(f"{op} {n}" for op, n in ops.most_common(8)))
    lines.append(f"the {top} instructions with the most samples:")
    for ins in sorted(instrs, key=lambda i: -i.samples)[:top]:
        reasons = ", ".join(f"{r} {n}" for r, n in sorted(ins.stalls.items(), key=lambda kv: -kv[1])[:3])
        lines.append(f"  {ins.offset:#7x} {ins.samples:6d} ({100 * ins.samples / total:4.1f}%) "
                     f"x{ins.executed:<7d} {ins.source[:56]:56s} {reasons}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv", help="ncu -i REPORT --page source --csv --print-source sass > CSV")
    p.add_argument("--top", type=int, default=20, help="instructions listed (default %(default)s)")
    p.add_argument("--classes", type=int, default=6, help="execution classes listed (default %(default)s)")
    p.add_argument("--start", type=lambda t: int(t, 0), default=0, help="first byte offset kept (default 0)")
    p.add_argument("--end", type=lambda t: int(t, 0), default=None, help="byte offset past the last kept")
    opts = p.parse_args(argv)
    try:
        with open(opts.csv, newline="", encoding="utf-8") as f:
            instrs = read_source_page(f.read().splitlines())
    except (OSError, UnicodeDecodeError, SourcePageError) as e:
        print(f"ncu_sources: {opts.csv}: {e}", file=sys.stderr)
        return 1
    kept = [i for i in instrs if i.offset >= opts.start and (opts.end is None or i.offset < opts.end)]
    print("\n".join(report(kept, opts.top, opts.classes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
