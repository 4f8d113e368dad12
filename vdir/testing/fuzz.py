"""A mutation fuzzer for ``vdir-opt``: small edits of valid programs must give errors, never crashes.

:func:`mutants` derives programs from a corpus of IR files (the lit inputs,
the examples) by one random edit each: a token deleted or duplicated, a
number changed, an element type swapped, the text truncated. :func:`run_one`
runs ``vdir-opt -p vdir-pipeline`` on one of them in this process and says
whether it behaved: exit status 0 or 1, no Python traceback, finished within
its time limit. Whatever it finds is kept under
``test/pytest/fuzz_cases/`` as a regression case (the pytest suite runs them
all; they are not part of the corpus).

    python -m vdir.testing.fuzz --mutants 2000 --seed 1   # report the cases that misbehave
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

#: what one edit may do to a program
EDITS = ("delete", "duplicate", "number", "dtype", "truncate")
#: the element types an edit swaps between
DTYPE_WORDS = ("bf16", "f32", "i32", "f16", "i64", "index")
#: seconds one mutant may take through the pipeline before it counts as a hang
HANG_SECONDS = 20.0
#: the folder (under test/pytest) of the mutants that once misbehaved
FUZZ_CASES = "fuzz_cases"
#: the pipeline a mutant goes through (few SMs: the mutants of large examples stay quick)
PIPELINE = "vdir-pipeline{num-sms=4}"

_TOKEN = re.compile(r"%?[\w.]+|<|>|\(|\)|\[|\]|\{|\}|,|:|=|->|\"[^\"\n]*\"")
_NUMBER = re.compile(r"(?<![\w%])-?\d+(?![\w])")
_DTYPE = re.compile(r"\b(" + "|".join(DTYPE_WORDS) + r")\b")


@dataclass(frozen=True)
class Mutant:
    """One edited program: where it came from and what was done."""

    source: str  # the corpus file
    edit: str
    text: str


@dataclass(frozen=True)
class Outcome:
    """How ``vdir-opt`` took one mutant: ``ok`` unless it crashed, hung or exited oddly."""

    ok: bool
    status: int | None
    seconds: float
    why: str = ""


def corpus(root: Path, max_bytes: int = 8192) -> list[Path]:
    """The IR files under ``root``'s ``test`` and ``examples`` folders of at most ``max_bytes``."""
    files = [*root.glob("test/**/*.mlir"), *root.glob("examples/*.mlir")]
    return sorted(f for f in files if f.stat().st_size <= max_bytes and not {"Output", FUZZ_CASES} & set(f.parts))


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    """One random edit of ``text``: (edit, new text)."""
    edit = rng.choice(EDITS)
    if edit == "truncate":
        return edit, text[: rng.randrange(len(text) + 1)]
    if edit == "number":
        spans = [m.span() for m in _NUMBER.finditer(text)]
        if spans:
            lo, hi = rng.choice(spans)
            value = rng.choice(["0", "-1", "1", "3", "7", "65536", "2147483648", "99999999999999999999",
                                str(int(text[lo:hi]) * rng.choice([2, 3, 1000]))])
            return edit, text[:lo] + value + text[hi:]
    if edit == "dtype":
        spans = [m.span() for m in _DTYPE.finditer(text)]
        if spans:
            lo, hi = rng.choice(spans)
            return edit, text[:lo] + rng.choice(DTYPE_WORDS) + text[hi:]
    spans = [m.span() for m in _TOKEN.finditer(text)]
    if not spans:
        return "truncate", ""
    lo, hi = rng.choice(spans)
    if edit == "duplicate":
        return edit, text[:hi] + " " + text[lo:hi] + text[hi:]
    return "delete", text[:lo] + text[hi:]


def mutants(files: Sequence[Path], count: int, seed: int) -> Iterator[Mutant]:
    """``count`` mutants of the files, each one random edit of a random file (deterministic in ``seed``)."""
    rng = random.Random(seed)
    texts = {f: f.read_text() for f in files}
    for _ in range(count):
        f = rng.choice(files)
        edit, text = mutate(texts[f], rng)
        yield Mutant(str(f), edit, text)


def run_one(text: str, path: Path, seconds: float = HANG_SECONDS, pipeline: str = PIPELINE) -> Outcome:
    """``vdir-opt path -p pipeline`` on ``text`` (written to ``path``) in this process.

    A hang is cut by an alarm that interrupts the driver as Ctrl-C would
    (nothing in the tools swallows it, and the driver's answer to it, exit
    status 130, or the interrupt itself, is recognised as the alarm's).
    """
    from vdir.tools.vdir_opt import main

    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    fired = []

    def alarm(signum, frame):
        fired.append(True)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.perf_counter()
    status: int | None = None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([str(path), "-p", pipeline])
    except KeyboardInterrupt:
        if not fired:
            raise
    except Exception as e:  # noqa: BLE001 -- any escaping exception is what the fuzzer looks for
        return Outcome(False, None, time.perf_counter() - start, f"traceback: {type(e).__name__}: {e}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.perf_counter() - start
    if fired:
        return Outcome(False, None, elapsed, f"no answer within {seconds:g} s")
    if status not in (0, 1):
        return Outcome(False, status, elapsed, f"exit status {status}")
    if "Traceback" in err.getvalue():
        return Outcome(False, status, elapsed, "a traceback on stderr")
    if status == 1 and not err.getvalue().strip():
        return Outcome(False, status, elapsed, "exit status 1 without a message")
    return Outcome(True, status, elapsed)


def main(argv: Sequence[str] | None = None) -> int:
    """Run mutants and print the ones that misbehave; the exit status is 1 if any did."""
    p = argparse.ArgumentParser(description="mutation fuzzing of vdir-opt -p vdir-pipeline")
    p.add_argument("--mutants", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--root", default=".", help="the repository (its test/ and examples/ are the corpus)")
    p.add_argument("--keep", help="write each misbehaving mutant to this folder")
    p.add_argument("--max-bytes", type=int, default=8192, help="the largest corpus file (bytes)")
    p.add_argument("--pipeline", default=PIPELINE, help=f"the pass pipeline (default: {PIPELINE})")
    p.add_argument("--hang-seconds", type=float, default=HANG_SECONDS, help="a mutant slower than this hangs")
    opts = p.parse_args(argv)
    root = Path(opts.root)
    scratch = Path(root / "build" / "fuzz")
    scratch.mkdir(parents=True, exist_ok=True)
    bad = 0
    for n, m in enumerate(mutants(corpus(root, opts.max_bytes), opts.mutants, opts.seed)):
        outcome = run_one(m.text, scratch / "mutant.mlir", opts.hang_seconds, opts.pipeline)
        if not outcome.ok:
            bad += 1
            print(f"mutant {n} ({m.edit} in {m.source}): {outcome.why}", flush=True)
            if opts.keep:
                Path(opts.keep).mkdir(parents=True, exist_ok=True)
                (Path(opts.keep) / f"seed{opts.seed}-{n}.mlir").write_text(m.text)
    print(f"{opts.mutants} mutants, {bad} misbehaved")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
