"""Compare two or more runs of ``bench/bench_gpu.py --json``, ``bench/bench_sweep.py --json`` or
``bench/bench_uop_cost.py --json``, figure by figure.

    python3 bench/compare_runs.py before.json after.json [before2.json after2.json ...]

Runs are given as (before, after) pairs from one session on one GPU, taken
alternately so that drift of the clock or the HBM shows as before/before
spread rather than as a change. For every vdir figure (the table's rows and
the per-option notes) it prints the median of the "before" runs, the median
of the "after" runs, their relative difference, and the spread among the
"before" runs themselves; torch's figures are printed the same way as a
control (the code under test does not touch them). A figure whose change
exceeds ``--limit`` percent and the before-spread is flagged.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys

#: decimals of the µs figures printed: to the nanosecond, which a micro-op's cost moves by
DECIMALS = 3

#: "<what>: 39.90 us (...)" in the bench's notes
_NOTE = re.compile(r"^(?P<what>.+?): (?P<us>\d+(?:\.\d+)?) us\b")

#: one row of the printed table: case, MiB, vdir us, TB/s, %, torch us, TB/s, %, graph us, TB/s, speedup
_ROW = re.compile(
    r"^(?P<case>\S.*?)\s+[\d.]+\s+(?P<vdir>[\d.]+)\s+[\d.]+\s+[\d.]+%\s+(?P<torch>[\d.]+)\s+[\d.]+\s+[\d.]+%"
    r"\s+(?P<graph>-|[\d.]+)\s+(?:-|[\d.]+)\s+[\d.]+x"
)


def table_rows(log_text: str) -> list[dict]:
    """The table's rows as the JSON form gives them, parsed from the printed table (older runs' JSON lacks them)."""
    rows = []
    for line in log_text.splitlines():
        if m := _ROW.match(line):
            graph = None if m["graph"] == "-" else float(m["graph"])
            rows.append({"case": m["case"], "vdir": float(m["vdir"]), "torch": float(m["torch"]), "graph": graph})
    return rows


def uop_figures(rows: list[dict]) -> dict[str, float]:
    """A ``bench_uop_cost.py`` run's figures: each engine's cost per micro-op (the slope between its two
    sizes), in microseconds, named by the micro-op's kind, the variant, the SMs and the lowering options."""
    out: dict[str, float] = {}
    for row in rows:
        kind = f"gemv {row['gemv']}" if row.get("gemv") else f"vecmat {row['vecmat']}" if row.get("vecmat") else "add"
        options = f", {row['lowering']}" if row.get("lowering") else ""
        out[f"uop {kind} {row['variant']}, {row['sms']} SMs{options} [vdir]"] = row["ns_per_triple"] / 1000.0
    return out


def figures(run: dict | list, log_path: str | None = None) -> dict[str, float]:
    """Every timed figure of one run, in microseconds, by name."""
    if isinstance(run, list):  # bench_uop_cost writes its rows alone
        return uop_figures(run)
    out: dict[str, float] = {}
    rows = run["rows"]
    if not isinstance(rows, list):  # an older bench wrote only the row count; read its printed table
        rows = table_rows(open(log_path).read()) if log_path else []
    for row in rows:
        if isinstance(row.get("us"), dict):  # a bench_sweep row: every contender's time under "us"
            for column, us in row["us"].items():
                if us is not None:
                    out[f"{row['case']} [{column}]"] = float(us)
            continue
        for column in ("vdir", "torch", "graph"):
            if row.get(column) is not None:
                out[f"{row['case']} [{column}]"] = float(row[column])
    for note in run.get("notes", []):
        m = _NOTE.match(note)
        if m and "results not meaningful" not in note and "per layer" not in note:
            out[f"note: {m['what']} [vdir]"] = float(m["us"])
    return out


def load(ap: argparse.ArgumentParser, path: str) -> dict[str, float]:
    """The figures of the run at ``path`` (:func:`figures`); a usage error naming the file where it
    cannot be read or is not a run's JSON."""
    try:
        with open(path) as f:
            return figures(json.load(f), path.removesuffix(".json") + ".log")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        ap.error(f"{path}: not a run's JSON ({type(e).__name__}: {e})")


def spread(values: list[float]) -> float:
    """(max - min) / median, in percent; 0 for a single value."""
    return 100.0 * (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="JSON files: before, after[, before, after, ...]")
    ap.add_argument("--limit", type=float, default=1.0, help="flag changes above this many percent")
    args = ap.parse_args(argv)
    if len(args.runs) % 2:
        ap.error("give the runs as (before, after) pairs")
    loaded = [load(ap, p) for p in args.runs]
    before, after = loaded[0::2], loaded[1::2]
    names = [n for n in before[0] if all(n in r for r in loaded)]
    flagged = 0
    print(f"{'figure':70s} {'before us':>10s} {'after us':>10s} {'change':>8s} {'b-spread':>8s}")
    for name in names:
        b = [r[name] for r in before]
        a = [r[name] for r in after]
        mb, ma = statistics.median(b), statistics.median(a)
        change = 100.0 * (ma - mb) / mb
        noise = spread(b)
        flag = " <-" if name.endswith("[vdir]") and abs(change) > max(args.limit, noise) else ""
        flagged += bool(flag)
        print(f"{name:70s} {mb:10.{DECIMALS}f} {ma:10.{DECIMALS}f} {change:+7.2f}% {noise:7.2f}%{flag}")
    print(f"{len(names)} figures, {flagged} vdir figure(s) changed by more than {args.limit}% and the spread")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
