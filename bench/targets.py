"""The performance targets, checked against one run of the shape sweep: each target, its figures, met or not.

    python3 bench/targets.py sweep.json [sweep2.json ...]
    python3 bench/targets.py --together gemvs.json stacks.json   # one sweep run in parts, judged as one

``bench/bench_sweep.py`` prints the same lines under its table. Every
target is a ratio within one run (``docs/performance.md``, "Where it
stands"):

* gemv 8192 x 8192 at :data:`GEMV_8192_COPY` of the copy bandwidth and no
  slower than cuBLAS;
* gemv 28672 x 8192 at :data:`GEMV_28672_COPY` of the copy bandwidth;
* no gemv more than :data:`CUBLAS_SLACK` behind cuBLAS (its time at most
  cuBLAS's divided by ``1 - CUBLAS_SLACK``);
* every 16-layer MLP stack at :data:`STACK_COPY` of the copy bandwidth and
  :data:`STACK_OVER_COMPILE` times as fast as torch.compile in a CUDA graph
  (max-autotune; a run with another mode says which).

A target whose cases the run did not time (left out, not compiled, cut
short) is ``not measured``, never met. "No regression elsewhere" needs two
runs and is not judged here: ``bench/compare_runs.py`` compares them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: gemv 8192 x 8192: its share of the copy bandwidth
GEMV_8192_COPY = 0.88
#: gemv 28672 x 8192: its share of the copy bandwidth
GEMV_28672_COPY = 0.96
#: how far behind cuBLAS a gemv may be
CUBLAS_SLACK = 0.05
#: every 16-layer MLP stack: its share of the copy bandwidth
STACK_COPY = 0.80
#: every 16-layer MLP stack: its speed-up over torch.compile in a CUDA graph
STACK_OVER_COMPILE = 1.2
#: the torch.compile mode the stack target names
TARGET_COMPILE_MODE = "max-autotune-no-cudagraphs"
#: what a sweep run says of the code it timed (``bench_sweep.py``'s options): runs judged together agree on it
BUILD_KEYS = ("target", "lowering", "side_loads", "flag_words", "hold_streams", "release_first", "tile_bytes",
              "gemv_tile_rows")


@dataclass(frozen=True)
class Verdict:
    """One target against one run: ``met`` is None where the run has no figure for it."""

    target: str
    met: bool | None
    figures: str

    def line(self) -> str:
        state = {True: "met", False: "NOT MET", None: "not measured"}[self.met]
        return f"{state:<12} {self.target}: {self.figures}"


def _timed(doc: dict, kind: str) -> list[dict]:
    """The rows of ``kind`` in which vdir has a time."""
    return [r for r in doc["rows"] if r.get("kind") == kind and "vdir" in r.get("us", {})]


def _gemv(doc: dict, m: int, k: int) -> dict | None:
    return next((r for r in _timed(doc, "gemv") if r.get("dims") == [m, k]), None)


def _copy_share(row: dict) -> float:
    return row["vdir_pct_copy"] / 100.0


def _vs_cublas(row: dict) -> float | None:
    """cuBLAS's time over vdir's (above 1: vdir is faster); None where cuBLAS was not timed."""
    cublas = row["us"].get("cublas")
    return cublas / row["us"]["vdir"] if cublas else None


def _gemv_at_copy(doc: dict, m: int, k: int, share: float, beat_cublas: bool) -> Verdict:
    name = f"gemv {m} x {k} at {share:.0%} of the copy" + (", above cuBLAS" if beat_cublas else "")
    row = _gemv(doc, m, k)
    if row is None:
        return Verdict(name, None, "not timed in this run")
    got, ratio = _copy_share(row), _vs_cublas(row)
    figures = f"{got:.1%} ({row['us']['vdir']:.2f} us)" + (f", {ratio:.2f}x cuBLAS" if ratio is not None else "")
    if beat_cublas and ratio is None:
        return Verdict(name, None, figures + "; cuBLAS not timed")
    return Verdict(name, got >= share and (not beat_cublas or (ratio is not None and ratio >= 1.0)), figures)


def _every(name: str, rows: list[dict], ratio: Callable[[dict], float | None], bound: float,
           text: Callable[[float], str]) -> Verdict:
    """``ratio`` at least ``bound`` on every row; the rows below it listed, the range otherwise."""
    figures = [(r["case"], v) for r in rows for v in [ratio(r)] if v is not None]
    if not figures:
        return Verdict(name, None, "no case timed in this run")
    low = [f"{case} {text(v)}" for case, v in figures if v < bound]
    values = [v for _, v in figures]
    span = f"{len(figures) - len(low)} of {len(figures)} cases, {text(min(values))} to {text(max(values))}"
    return Verdict(name, not low, span + ("; below: " + ", ".join(low) if low else ""))


def verdicts(doc: dict) -> list[Verdict]:
    """Each target against the sweep run ``doc`` (``bench_sweep.py --json``'s document)."""
    gemvs, stacks = _timed(doc, "gemv"), _timed(doc, "stack")
    mode = doc.get("torch_compile_mode", TARGET_COMPILE_MODE)
    compile_name = f"every MLP stack {STACK_OVER_COMPILE:.1f}x over torch.compile in a CUDA graph"
    if mode != TARGET_COMPILE_MODE:
        compile_name += f" (this run's mode: {mode})"
    return [
        _gemv_at_copy(doc, 8192, 8192, GEMV_8192_COPY, beat_cublas=True),
        _gemv_at_copy(doc, 28672, 8192, GEMV_28672_COPY, beat_cublas=False),
        _every(f"no gemv more than {CUBLAS_SLACK:.0%} behind cuBLAS", gemvs, _vs_cublas, 1.0 - CUBLAS_SLACK,
               lambda v: f"{v:.2f}x"),
        _every(f"every MLP stack at {STACK_COPY:.0%} of the copy", stacks, _copy_share, STACK_COPY,
               lambda v: f"{v:.1%}"),
        _every(compile_name, stacks, lambda r: r.get("speedup_compile"), STACK_OVER_COMPILE,
               lambda v: f"{v:.2f}x"),
    ]


def print_verdicts(doc: dict) -> None:
    """The targets, one line each, under a heading that names the run."""
    lowering = doc.get("lowering", "defaults")
    built = f"; compiled for {doc['target']}" if "target" in doc else ""
    built += "" if lowering == "defaults" else f"; lowering options {lowering}"
    print(f"targets ({doc.get('device', 'unknown device')}, {doc.get('date', 'undated')}{built}; "
          "each ratio within one run):")
    for v in verdicts(doc):
        print("  " + v.line())


def load_run(path: str) -> dict:
    """A sweep run's document, its verdicts checked to be computable; ValueError says what is wrong."""
    try:
        doc = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise ValueError("no 'rows': not a bench_sweep.py --json document")
    if doc.get("mode") == "sim":
        raise ValueError("a simulator run (--sim) has no GPU figures to judge")
    try:
        verdicts(doc)
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"a row without the sweep's figures ({type(e).__name__}: {e})") from None
    return doc


def together(runs: dict[str, dict]) -> dict:
    """Runs of one GPU as one document, each case from the run that timed it (each ratio still from one
    run: a case's figures and its copy share come from the same run). ValueError: runs of different GPUs,
    runs of different code (:data:`BUILD_KEYS`), a case in two runs, or stacks timed against two
    torch.compile modes."""
    devices = {doc.get("device") for doc in runs.values()}
    if len(devices) > 1:
        raise ValueError(f"runs of different GPUs ({', '.join(sorted(map(str, devices)))}) are not judged together")
    for key in BUILD_KEYS:
        values = {str(doc.get(key)) for doc in runs.values()}
        if len(values) > 1:
            raise ValueError(f"the runs timed different code ({key}: {', '.join(sorted(values))})")
    owner: dict[str, str] = {}
    for path, doc in runs.items():
        for row in doc["rows"]:
            if "vdir" in row.get("us", {}):
                if row["case"] in owner:
                    raise ValueError(f"{row['case']!r} is timed in both {owner[row['case']]} and {path}")
                owner[row["case"]] = path
    modes = {doc.get("torch_compile_mode") for doc in runs.values() if _timed(doc, "stack")}
    if len(modes) > 1:
        raise ValueError(f"the stacks were timed against torch.compile modes {sorted(map(str, modes))}")
    first = next(iter(runs.values()))
    return {key: first.get(key) for key in BUILD_KEYS if key in first} | {
            "device": first.get("device"), "date": ", ".join(str(d.get("date")) for d in runs.values()),
            "torch_compile_mode": modes.pop() if modes else first.get("torch_compile_mode"),
            "rows": [r for path, doc in runs.items() for r in doc["rows"] if owner.get(r.get("case")) == path]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="JSON files written by bench/bench_sweep.py --json")
    ap.add_argument("--together", action="store_true",
                    help="judge the runs as one (runs of one GPU, each case in one run): a sweep run in parts")
    opts = ap.parse_args(argv)
    runs: dict[str, dict] = {}
    for path in opts.runs:
        try:
            runs[path] = load_run(path)
        except (OSError, ValueError) as e:
            print(f"targets: {path}: {e.strerror if isinstance(e, OSError) else e}", file=sys.stderr)
            return 1
    if opts.together:
        try:
            runs = {" + ".join(runs): together(runs)}
        except ValueError as e:
            print(f"targets: {e}", file=sys.stderr)
            return 1
    for path, doc in runs.items():
        print(f"{path}:")
        print_verdicts(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
