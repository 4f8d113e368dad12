"""``bench/compare_runs.py`` on bench_gpu and bench_sweep JSON, without a GPU."""

from __future__ import annotations

import json

import pytest

from bench import compare_runs


def sweep_run(path, vdir_us: float, cublas_us: float) -> str:
    """A bench_sweep JSON document with one gemv row, written to ``path``."""
    row = {"case": "gemv 2048x2048", "us": {"vdir": vdir_us, "eager": 8.7, "graph": 8.2, "cublas": cublas_us,
                                            "compile": None}}
    path.write_text(json.dumps({"rows": [row], "failed": []}))
    return str(path)


def test_sweep_rows_give_every_contenders_figure(tmp_path):
    run = json.loads(open(sweep_run(tmp_path / "a.json", 9.5, 8.7)).read())
    assert compare_runs.figures(run) == {"gemv 2048x2048 [vdir]": 9.5, "gemv 2048x2048 [eager]": 8.7,
                                         "gemv 2048x2048 [graph]": 8.2, "gemv 2048x2048 [cublas]": 8.7}


def test_a_vdir_change_beyond_the_limit_and_the_spread_is_flagged(tmp_path, capsys):
    runs = [sweep_run(tmp_path / "b1.json", 10.0, 8.7), sweep_run(tmp_path / "a1.json", 9.0, 8.7),
            sweep_run(tmp_path / "b2.json", 10.1, 8.8), sweep_run(tmp_path / "a2.json", 9.1, 8.8)]
    assert compare_runs.main(runs) == 1
    out = capsys.readouterr().out
    assert "gemv 2048x2048 [vdir]" in out and "<-" in out
    assert "1 vdir figure(s) changed" in out


def test_a_torch_change_is_a_control_not_a_flag(tmp_path, capsys):
    runs = [sweep_run(tmp_path / "b.json", 9.5, 8.0), sweep_run(tmp_path / "a.json", 9.5, 9.0)]
    assert compare_runs.main(runs) == 0
    assert "0 vdir figure(s) changed" in capsys.readouterr().out


def test_bench_gpu_rows_still_read(tmp_path):
    run = {"rows": [{"case": "gemv 8192 x 8192", "vdir": 39.8, "torch": 36.5, "graph": None}], "notes": []}
    assert compare_runs.figures(run) == {"gemv 8192 x 8192 [vdir]": 39.8, "gemv 8192 x 8192 [torch]": 36.5}


@pytest.mark.parametrize("content", [None, "not json", "{}"])
def test_a_file_that_is_not_a_run_is_a_usage_error(tmp_path, content, capsys):
    path = tmp_path / "run.json"
    if content is not None:
        path.write_text(content)
    good = sweep_run(tmp_path / "good.json", 9.5, 8.7)
    with pytest.raises(SystemExit) as stop:
        compare_runs.main([good, str(path)])
    assert stop.value.code == 2
    assert f"{path}: not a run's JSON" in capsys.readouterr().err


def uop_run(path, compute_ns: float, store_ns: float) -> str:
    """A bench_uop_cost JSON document (its rows alone): gemv 16 x 1024 on one SM, two variants."""
    rows = [{"sms": 1, "variant": variant, "lowering": "", "gemv": "16x1024", "vecmat": None,
             "us": {"16": 20.0, "64": 70.0}, "ns_per_triple": ns}
            for variant, ns in (("only=compute", compute_ns), ("only=store", store_ns))]
    rows.append({"sms": 132, "variant": "full", "lowering": "control_warp=1", "gemv": None, "vecmat": None,
                 "us": {"128": 70.0, "512": 280.0}, "ns_per_triple": 540.0})
    path.write_text(json.dumps(rows))
    return str(path)


def test_uop_rows_give_each_engines_cost_per_micro_op_in_us(tmp_path):
    run = json.loads(open(uop_run(tmp_path / "u.json", 990.0, 470.0)).read())
    assert compare_runs.figures(run) == {
        "uop gemv 16x1024 only=compute, 1 SMs [vdir]": 0.99,
        "uop gemv 16x1024 only=store, 1 SMs [vdir]": 0.47,
        "uop add full, 132 SMs, control_warp=1 [vdir]": 0.54,
    }


def test_a_uop_change_is_flagged_and_a_level_one_is_not(tmp_path, capsys):
    runs = [uop_run(tmp_path / "b1.json", 990.0, 470.0), uop_run(tmp_path / "a1.json", 960.0, 471.0),
            uop_run(tmp_path / "b2.json", 992.0, 471.0), uop_run(tmp_path / "a2.json", 962.0, 470.0)]
    assert compare_runs.main(runs) == 1
    out = capsys.readouterr().out
    flagged = [line for line in out.splitlines() if line.endswith("<-")]
    assert len(flagged) == 1 and flagged[0].startswith("uop gemv 16x1024 only=compute, 1 SMs [vdir]")
    assert flagged[0].split()[-5:-3] == ["0.991", "0.961"]  # the medians, to the nanosecond
    assert "1 vdir figure(s) changed" in out


def test_a_list_that_is_not_uop_rows_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text("[1, 2]")
    with pytest.raises(SystemExit) as stop:
        compare_runs.main([uop_run(tmp_path / "good.json", 990.0, 470.0), str(path)])
    assert stop.value.code == 2
    assert f"{path}: not a run's JSON" in capsys.readouterr().err
