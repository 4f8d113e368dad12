"""The performance targets, checked against one run of the shape sweep: each target, its figures, met or not.

    python3 bench/targets.py sweep.json [sweep2.json ...]

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
    met = got >= share
    figures = f"{got:.1%} ({row['us']['vdir']:.2f} us)"
    if ratio is not None:
        figures += f", {ratio:.2f}x cuBLAS"
        met = met and (ratio >= 1.0 or not beat_cublas)
    elif beat_cublas:
        return Verdict(name, None, figures + "; cuBLAS not timed")
    return Verdict(name, met, figures)


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


def print_verdicts(doc: dict, judged: list[Verdict] | None = None) -> None:
    """The targets, one line each, under a heading that names the run."""
    print(f"targets ({doc.get('device', 'unknown device')}, {doc.get('date', 'undated')}; ratios in this run):")
    for v in verdicts(doc) if judged is None else judged:
        print("  " + v.line())


def load_run(path: str) -> tuple[dict, list[Verdict]]:
    """A sweep run's document and its verdicts; ValueError says what is wrong with the file."""
    try:
        doc = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise ValueError("no 'rows': not a bench_sweep.py --json document")
    if doc.get("mode") == "sim":
        raise ValueError("a simulator run (--sim) has no GPU figures to judge")
    try:
        return doc, verdicts(doc)
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"a row without the sweep's figures ({type(e).__name__}: {e})") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="JSON files written by bench/bench_sweep.py --json")
    opts = ap.parse_args(argv)
    for path in opts.runs:
        try:
            doc, judged = load_run(path)
        except (OSError, ValueError) as e:
            print(f"targets: {path}: {e.strerror if isinstance(e, OSError) else e}", file=sys.stderr)
            return 1
        print(f"{path}:")
        print_verdicts(doc, judged)
    return 0


if __name__ == "__main__":
    sys.exit(main())
