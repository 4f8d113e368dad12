"""``bench/sim_clock.py``: the simulator's clock against the H200's medians, on the CPU.

Its table must say what the model gives for the programs the GPU benches
time (compiled the same way) and the ratio to the reference median; these
tests run it on the smallest gemv and on a reference it cannot match.
"""

from __future__ import annotations

import pytest

from bench import sim_clock


def _rows(out: str) -> dict[str, list[str]]:
    return {cells[0]: cells[1:] for line in out.splitlines() if line.startswith("| gemv")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}


def test_the_table_gives_the_modelled_time_and_its_ratio_to_the_reference(monkeypatch, capsys):
    monkeypatch.setattr(sim_clock, "REFERENCE", {"gemv 2048x2048": 9.31})
    assert sim_clock.main(["--only", "gemv"]) == 0
    (modelled, measured, ratio), = _rows(capsys.readouterr().out).values()
    assert float(measured) == 9.31 and 2.0 < float(modelled) < 40.0  # a launch's cost at least, not ms
    assert float(ratio) == pytest.approx(float(modelled) / 9.31, abs=0.01)


def test_a_reference_far_from_the_model_shows_in_the_ratio(monkeypatch, capsys):
    monkeypatch.setattr(sim_clock, "REFERENCE", {"gemv 2048x2048": 1000.0})
    sim_clock.main(["--only", "gemv"])
    (_, _, ratio), = _rows(capsys.readouterr().out).values()
    assert float(ratio) < 0.1
