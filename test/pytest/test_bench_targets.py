"""``bench/targets.py``: the performance targets judged on a sweep run's figures, on the CPU.

The runs here are written by hand in the form ``bench_sweep.py --json``
writes, each just past or just short of a target, so that a verdict that
stopped following its figures would fail.
"""

from __future__ import annotations

import json

import pytest

from bench import bench_sweep, targets


def _gemv(m: int, k: int, vdir: float, cublas: float | None, pct_copy: float) -> dict:
    us = {"vdir": vdir} | ({"cublas": cublas} if cublas is not None else {})
    return {"case": f"gemv {m}x{k}", "kind": "gemv", "dims": [m, k], "us": us, "vdir_pct_copy": pct_copy}


def _stack(hidden: int, inter: int, pct_copy: float, over_compile: float | None) -> dict:
    row = {"case": f"MLP x16 {hidden}/{inter}", "kind": "stack", "dims": [hidden, inter], "us": {"vdir": 100.0},
           "vdir_pct_copy": pct_copy}
    return row | ({"speedup_compile": over_compile} if over_compile is not None else {})


def _run(*rows: dict, mode: str = targets.TARGET_COMPILE_MODE) -> dict:
    return {"device": "a GPU", "date": "today", "torch_compile_mode": mode, "rows": list(rows)}


def _all_met() -> list[dict]:
    return [_gemv(8192, 8192, 36.0, 36.5, 88.1), _gemv(28672, 8192, 100.0, 101.0, 96.2),
            _gemv(4096, 1024, 8.0, 7.6, 60.0), _stack(2048, 8192, 80.0, 1.2), _stack(4096, 14336, 95.0, 1.5)]


def _met(doc: dict) -> list[bool | None]:
    return [v.met for v in targets.verdicts(doc)]


def test_a_run_at_every_bound_meets_every_target():
    assert _met(_run(*_all_met())) == [True] * 5


@pytest.mark.parametrize("index, row, which", [
    (0, _gemv(8192, 8192, 36.0, 36.5, 87.9), 0),  # under 88% of the copy
    (0, _gemv(8192, 8192, 36.0, 35.9, 90.0), 0),  # at the copy share but behind cuBLAS
    (1, _gemv(28672, 8192, 100.0, 101.0, 95.9), 1),
    (2, _gemv(4096, 1024, 8.0, 7.59, 60.0), 2),  # 0.949x cuBLAS
    (3, _stack(2048, 8192, 79.9, 1.2), 3),
    (4, _stack(4096, 14336, 95.0, 1.19), 4),
])
def test_a_figure_past_its_bound_fails_that_target_alone(index: int, row: dict, which: int):
    rows = _all_met()
    rows[index] = row
    met = _met(_run(*rows))
    assert met[which] is False and met.count(True) == 4


def test_the_cases_below_a_bound_are_named_with_their_figures():
    rows = _all_met() + [_gemv(8192, 1024, 12.0, 10.0, 55.0)]
    verdict = targets.verdicts(_run(*rows))[2]
    assert verdict.figures == "3 of 4 cases, 0.83x to 1.01x; below: gemv 8192x1024 0.83x"
    assert verdict.line().startswith("NOT MET      no gemv more than 5% behind cuBLAS: ")


def test_targets_without_figures_are_not_measured_never_met():
    failed = {"case": "gemv 8192x8192", "kind": "gemv", "dims": [8192, 8192], "us": {},
              "vdir_status": "compile failed: ..."}
    doc = _run(failed, _gemv(4096, 1024, 8.0, None, 60.0), _stack(2048, 8192, 85.0, None), mode="none")
    assert _met(doc) == [None, None, None, True, None]
    lines = [v.line() for v in targets.verdicts(doc)]
    assert lines[0] == "not measured gemv 8192 x 8192 at 88% of the copy, above cuBLAS: not timed in this run"
    assert "(this run's mode: none)" in lines[4]


def test_the_script_prints_each_runs_verdicts(tmp_path, capsys):
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(_run(*_all_met())))
    assert targets.main([str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [f"{path}:", "targets (a GPU, today; each ratio within one run):"]
    assert len(out) == 7 and all(line.startswith("  met ") for line in out[2:])


@pytest.mark.parametrize("text, message", [
    ("{not json", "not JSON"),
    ('{"mode": "sim", "rows": []}', "a simulator run (--sim) has no GPU figures to judge"),
    ("[1, 2]", "not a bench_sweep.py --json document"),
    ('{"rows": [{"kind": "gemv", "dims": [8192, 8192], "us": {"vdir": 1.0}}]}', "a row without the sweep's figures"),
])
def test_a_file_that_is_not_a_sweep_run_is_refused_and_nothing_is_printed(tmp_path, capsys, text, message):
    path = tmp_path / "run.json"
    path.write_text(text)
    assert targets.main([str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"targets: {path}: ") and message in err


def test_a_missing_file_is_refused(tmp_path, capsys):
    assert targets.main([str(tmp_path / "none.json")]) == 1
    assert "No such file or directory" in capsys.readouterr().err


def test_the_sweeps_table_ends_with_the_targets(capsys):
    row = _gemv(8192, 8192, 36.0, 36.5, 88.1) | {
        "err": {"vdir": 1e-3}, "vdir_status": None, "notes": [], "moved_bytes": 2 * 8192 * 8192, "sets": 3,
        "tol": 1e-2, "vdir_gbps": 3700.0}
    doc = _run(row) | {"sms": 132, "iters": 100, "torch": "2", "lowering": "defaults", "tile_bytes": 65536,
                       "gemv_tile_rows": None, "copy": {"us": 500.0, "gbps": 4200.0}, "failed": [], "wall_s": 1.0}
    bench_sweep.print_table(doc)
    out = capsys.readouterr().out.splitlines()
    assert out[-6] == "targets (a GPU, today; each ratio within one run):"
    assert out[-5].startswith("  met          gemv 8192 x 8192 at 88% of the copy, above cuBLAS: 88.1% (36.00 us)")


def _write(tmp_path, name: str, doc: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_runs_judged_together_take_each_case_from_the_run_that_timed_it(tmp_path, capsys):
    gemvs, stacks = _all_met()[:3], _all_met()[3:]
    skipped = {"case": "MLP x16 2048/8192", "kind": "stack", "us": {}, "vdir_status": "skipped"}
    a = _write(tmp_path, "gemvs.json", _run(*gemvs, skipped, mode="none"))
    b = _write(tmp_path, "stacks.json", _run(*stacks))
    assert targets.main(["--together", a, b]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{a} + {b}:" and out[1] == "targets (a GPU, today, today; each ratio within one run):"
    assert len(out) == 7 and all(line.startswith("  met ") for line in out[2:])  # the stacks' mode: max-autotune


@pytest.mark.parametrize("second, message", [
    (_run(_gemv(4096, 1024, 8.0, 7.6, 60.0)), "'gemv 4096x1024' is timed in both"),
    (_run(_stack(2048, 8192, 85.0, 1.3)) | {"device": "another GPU"}, "runs of different GPUs"),
    (_run(_stack(5120, 13824, 85.0, 1.3), mode="default"), "torch.compile modes ['default', "),
    (_run(_stack(5120, 13824, 85.0, 1.3)) | {"lowering": "{'stream_ring': 1}"},
     "the runs timed different code (lowering: None, {'stream_ring': 1})"),
])
def test_runs_that_cannot_be_judged_together_are_refused(tmp_path, capsys, second: dict, message: str):
    a = _write(tmp_path, "a.json", _run(*_all_met()))
    b = _write(tmp_path, "b.json", second)
    assert targets.main([a, b]) == 0  # apart, each is a run of its own
    capsys.readouterr()
    assert targets.main(["--together", a, b]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("targets: ") and message in err


def test_a_bad_file_among_several_leaves_nothing_printed(tmp_path, capsys):
    good = _write(tmp_path, "good.json", _run(*_all_met()))
    assert targets.main([good, str(tmp_path / "missing.json")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "missing.json: No such file or directory" in err


def test_a_run_of_other_lowering_options_says_so_in_its_heading(capsys):
    targets.print_verdicts(_run(*_all_met()) | {"lowering": "{'stream_ring': 2}"})
    assert capsys.readouterr().out.splitlines()[0] == (
        "targets (a GPU, today; lowering options {'stream_ring': 2}; each ratio within one run):")


def test_the_8192_gemv_without_cublas_is_not_measured_whatever_its_copy_share():
    rows = _all_met()
    rows[0] = _gemv(8192, 8192, 36.0, None, 95.0)
    verdict = targets.verdicts(_run(*rows))[0]
    assert verdict.met is None and verdict.figures == "95.0% (36.00 us); cuBLAS not timed"
