"""Mutation fuzzing of ``vdir-opt -p vdir-pipeline`` (``vdir/testing/fuzz.py``): errors, never crashes.

A few hundred mutants of the lit inputs and examples run within a fixed time
budget; any traceback, odd exit status or hang fails. The checker itself is
tested on a driver made to crash, hang and exit oddly, and every mutant that
ever misbehaved is kept in ``fuzz_cases/`` and run again.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from vdir.testing import fuzz
from vdir.tools import vdir_opt

ROOT = Path(__file__).resolve().parents[2]
#: seconds of fuzzing per CI run (the mutants stop there), and the fewest that must have run
BUDGET_SECONDS = 60.0
MIN_MUTANTS = 100
MUTANTS = 400


def test_mutants_get_errors_not_crashes(tmp_path):
    start = time.perf_counter()
    ran, bad = 0, []
    for n, m in enumerate(fuzz.mutants(fuzz.corpus(ROOT), MUTANTS, seed=0)):
        if time.perf_counter() - start > BUDGET_SECONDS:
            break
        outcome = fuzz.run_one(m.text, tmp_path / "mutant.mlir")
        ran += 1
        if not outcome.ok:
            bad.append(f"mutant {n} ({m.edit} in {m.source}): {outcome.why}")
    assert not bad, "\n".join(bad)
    assert ran >= MIN_MUTANTS, f"only {ran} mutants ran in {BUDGET_SECONDS:g} s"


def test_mutants_cover_every_edit_and_both_outcomes(tmp_path):
    edits, statuses = set(), set()
    for m in fuzz.mutants(fuzz.corpus(ROOT), 60, seed=0):
        edits.add(m.edit)
        statuses.add(fuzz.run_one(m.text, tmp_path / "mutant.mlir").status)
    assert edits == set(fuzz.EDITS) and statuses == {0, 1}


@pytest.mark.parametrize(
    ("driver", "why"),
    [
        (lambda argv: 1 // 0, "traceback: ZeroDivisionError"),
        (lambda argv: 3, "exit status 3"),
        (lambda argv: 1, "exit status 1 without a message"),
        (lambda argv: time.sleep(5), "no answer within 0.2 s"),
    ],
)
def test_the_checker_reports_crashes_hangs_and_odd_exits(driver, why, tmp_path, monkeypatch):
    monkeypatch.setattr(vdir_opt, "main", driver)
    outcome = fuzz.run_one("vdir.program @p() {\n}\n", tmp_path / "m.mlir", seconds=0.2)
    assert not outcome.ok and outcome.why.startswith(why)


def test_the_checker_passes_a_valid_program_and_a_located_error(tmp_path):
    good = fuzz.run_one((ROOT / "examples" / "gemv.mlir").read_text(), tmp_path / "m.mlir")
    bad = fuzz.run_one("vdir.program @p(%x: !vdir.buffer<4x8xbf16>) {\n  %t = vdir.load\n}\n", tmp_path / "m.mlir")
    assert good.ok and good.status == 0 and bad.ok and bad.status == 1


CASES = sorted((Path(__file__).parent / fuzz.FUZZ_CASES).glob("*.mlir"))


@pytest.mark.skipif(not CASES, reason="no mutant has misbehaved yet")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_mutants_that_once_misbehaved(case, tmp_path):
    outcome = fuzz.run_one(case.read_text(), tmp_path / "m.mlir")
    assert outcome.ok, outcome.why
