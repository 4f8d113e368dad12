"""``bench/sim_clock.py``: the simulator's clock against the GPU's medians, on the CPU.

Its table must say what the model gives for the programs the GPU benches
time (compiled the same way) and the ratio to the reference median; these
tests run it on the smallest gemv and on a reference it cannot match.
"""

from __future__ import annotations

import pytest

from bench import sim_clock
from vdir.device_runtime.sim import SIM_COSTS, SimCosts


def _rows(out: str) -> dict[str, list[str]]:
    return {cells[0]: cells[1:] for line in out.splitlines() if line.startswith("| gemv")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}


def test_the_table_gives_the_modelled_time_and_its_ratio_to_the_reference(monkeypatch, capsys):
    monkeypatch.setattr(sim_clock, "REFERENCE", {"h200": {"gemv 2048x2048": 9.31}})
    assert sim_clock.main(["--only", "gemv"]) == 0
    (modelled, measured, ratio), = _rows(capsys.readouterr().out).values()
    assert float(measured) == 9.31 and 2.0 < float(modelled) < 40.0  # a launch's cost at least, not ms
    assert float(ratio) == pytest.approx(float(modelled) / 9.31, abs=0.01)


def test_a_reference_far_from_the_model_shows_in_the_ratio(monkeypatch, capsys):
    monkeypatch.setattr(sim_clock, "REFERENCE", {"h200": {"gemv 2048x2048": 1000.0}})
    sim_clock.main(["--only", "gemv"])
    (_, _, ratio), = _rows(capsys.readouterr().out).values()
    assert float(ratio) < 0.1


def _sensitivity(out: str) -> tuple[list[str], dict[str, list[str]]]:
    lines = [line for line in out.splitlines() if line.startswith("| program (change")]
    (header,) = lines
    columns = [c.strip() for c in header.strip("|").split("|")][2:]
    rows = {cells[0]: cells[1:] for line in out.split(header, 1)[1].splitlines() if line.startswith("| gemv")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    return columns, rows


def test_sensitivity_scales_each_cost_alone_and_reports_the_change(monkeypatch, capsys):
    monkeypatch.setattr(sim_clock, "REFERENCE", {"h200": {"gemv 2048x2048": 9.31}})
    assert sim_clock.main(["--only", "gemv", "--sensitivity", "0.5"]) == 0
    columns, rows = _sensitivity(capsys.readouterr().out)
    assert columns == list(sim_clock.SENSITIVITY_COSTS)
    (base, *changes), = rows.values()
    change = dict(zip(columns, (float(c.rstrip("%")) for c in changes), strict=True))
    # the launch's fixed cost halved takes exactly half of it off the modelled time
    assert change["launch_us"] == pytest.approx(-100.0 * SIM_COSTS["h200"].launch_us / 2 / float(base), abs=0.06)
    # every cost is a cost: making it cheaper never makes the program slower, and the stream's rate moves it
    assert all(v <= 0.0 for v in change.values()) and change["stream_bytes_per_us"] < 0.0


def test_target_h100_models_the_programs_compiled_for_it_on_its_clock(monkeypatch, capsys):
    """``--target h100``: the sweep's programs compiled for the H100, modelled on the H100's clock and set
    beside its medians, the header naming it."""
    seen = []
    real = sim_clock.Simulated.modelled_us

    def recording(self, costs=None):
        seen.append((self.program.target, self.default_costs() if costs is None else costs))
        return real(self, costs)

    monkeypatch.setattr(sim_clock.Simulated, "modelled_us", recording)
    monkeypatch.setattr(sim_clock, "REFERENCE", {"h200": {}, "h100": {"gemv 2048x2048": 9.90}})
    assert sim_clock.main(["--only", "gemv", "--target", "h100"]) == 0
    out = capsys.readouterr().out
    assert "| program | modelled µs | H100 µs | modelled / H100 |" in out
    (_, measured, _), = _rows(out).values()
    assert float(measured) == 9.90 and seen == [("h100", SIM_COSTS["h100"])]


def test_the_h200_only_tables_are_refused_with_another_target(capsys):
    with pytest.raises(SystemExit) as e:
        sim_clock.main(["--target", "h100", "--decode", "--split-k"])
    assert e.value.code == 2
    assert "--decode, --split-k: modelled on the h200 only, not with --target h100" in capsys.readouterr().err


def test_a_rate_is_divided_and_a_missing_one_skipped():
    costs = SimCosts(stream_bytes_per_us=4.0e6)
    assert sim_clock.scaled(costs, "smem_bytes_per_us", 0.5).smem_bytes_per_us == 2 * costs.smem_bytes_per_us
    assert sim_clock.scaled(costs, "handoff_us", 0.5).handoff_us == costs.handoff_us / 2
    assert sim_clock.scaled(SimCosts(), "stream_bytes_per_us", 0.5) is None


def test_a_factor_that_is_not_positive_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        sim_clock.main(["--only", "gemv", "--sensitivity", "0"])
    assert e.value.code == 2 and "a factor above 0" in capsys.readouterr().err


def test_the_buckets_table_models_each_shorter_step_against_the_whole(monkeypatch, capsys):
    import dataclasses

    from vdir.models.llama import NAMED_CONFIGS

    tiny = dataclasses.replace(NAMED_CONFIGS["tiny"], max_context=256)  # 16 blocks of 16 positions
    monkeypatch.setattr(sim_clock, "decode_configs", lambda: {"llama-1b": tiny})
    monkeypatch.setattr(sim_clock, "BUCKET_CONTEXT", 256)
    monkeypatch.setattr(sim_clock, "BUCKETS", (64, 128))
    monkeypatch.setattr(sim_clock, "DECODE_POS", 20)
    monkeypatch.setattr(sim_clock, "REFERENCE", {"h200": {"gemv 2048x2048": 9.31}})
    assert sim_clock.main(["--only", "gemv", "--buckets"]) == 0
    rows = {cells[0]: cells[1:] for line in capsys.readouterr().out.splitlines()
            if line.startswith(("| whole", "| attending"))
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    assert list(rows) == ["whole", "attending 64", "attending 128"]
    assert rows["whole"][1] == "1.000"
    # fewer skipped blocks: each shorter step is modelled faster, the shortest fastest
    assert float(rows["attending 64"][1]) < float(rows["attending 128"][1]) < 1.0


def test_the_step_table_models_each_tiling_against_the_configs(monkeypatch, capsys):
    from vdir.models.llama import NAMED_CONFIGS

    compiled = []
    real = sim_clock.simulated_config

    def recording(name, cfg, *args):
        compiled.append(cfg)
        return real(name, cfg, *args)

    monkeypatch.setattr(sim_clock, "simulated_config", recording)
    monkeypatch.setattr(sim_clock, "decode_configs", lambda: {"tiny": NAMED_CONFIGS["tiny"]})
    monkeypatch.setattr(sim_clock, "DECODE_POS", 20)
    monkeypatch.setattr(sim_clock, "REFERENCE", {"h200": {"gemv 2048x2048": 9.31}})
    assert sim_clock.main(["--only", "gemv", "--step", "tiny", "--variant", "down_rows=8,o_rows=8"]) == 0
    rows = {cells[0]: cells[1:] for line in capsys.readouterr().out.split("| tiny step, tiling")[1].splitlines()
            if line.startswith("| ") and not line.startswith("| ---")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    assert list(rows) == ["the config’s", "down_rows=8,o_rows=8"]
    assert rows["the config’s"][1] == "1.000" and float(rows["down_rows=8,o_rows=8"][0]) > 0.0
    # the variant is the config retiled: its own rows, the K chunks chosen again for them
    assert [(c.down_rows, c.o_rows) for c in compiled] == [(16, 16), (8, 8)]
    assert compiled[1] == NAMED_CONFIGS["tiny"].retiled(down_rows=8, o_rows=8)


def test_a_variant_without_a_step_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        sim_clock.main(["--only", "gemv", "--variant", "down_rows=8"])
    assert e.value.code == 2 and "name the config with --step" in capsys.readouterr().err


def test_sm_stream_models_the_sms_sharing_the_hbm(monkeypatch, capsys):
    """``--sm-stream F`` gives every program the clock whose SMs stream at up to F times their even share
    of the HBM, for that run only; a factor below the share is refused."""
    seen = []
    real = sim_clock.Simulated.modelled_us

    def recording(self, costs=None):
        seen.append((costs or self.default_costs()).sm_stream_bytes_per_us)
        return real(self, costs)

    monkeypatch.setattr(sim_clock.Simulated, "modelled_us", recording)
    monkeypatch.setattr(sim_clock, "REFERENCE", {"h200": {"gemv 2048x2048": 9.31}})
    assert sim_clock.main(["--only", "gemv", "--sm-stream", "2"]) == 0
    rate = SIM_COSTS["h200"].stream_bytes_per_us
    assert seen == [pytest.approx(2 * rate / sim_clock.SMS)]
    assert sim_clock.SM_STREAM_FACTOR is None  # the next run keeps the fixed share
    with pytest.raises(SystemExit) as e:
        sim_clock.main(["--only", "gemv", "--sm-stream", "0.5"])
    assert e.value.code == 2 and "--sm-stream: a factor of at least 1" in capsys.readouterr().err


def test_the_split_k_table_models_each_form_against_the_plain_stack(monkeypatch, capsys):
    """``--split-k``: each stack plain, then each split-K form against it; a form whose tiles do not fit
    says so in its row instead of stopping the table."""
    monkeypatch.setattr(sim_clock, "SMS", 8)
    monkeypatch.setattr(sim_clock, "SPLIT_K_STACKS", ((2, 256, 512),))
    monkeypatch.setattr(sim_clock, "SPLIT_K_FORMS", (("split-K", {}, {}), ("one 256 KiB tile", {"up_rows": 512}, {})))
    monkeypatch.setattr(sim_clock, "REFERENCE", {"h200": {"gemv 2048x2048": 9.31}})
    assert sim_clock.main(["--only", "gemv", "--split-k"]) == 0
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in capsys.readouterr().out.splitlines()
            if line.startswith("| 2 x 256/512")]
    assert [r[1] for r in rows] == ["plain", "split-K", "one 256 KiB tile"]
    plain, split = float(rows[0][2]), float(rows[1][2])
    assert rows[0][3] == "1.000" and plain > 0.0 and split > 0.0
    assert float(rows[1][3]) == pytest.approx(split / plain, abs=1e-3)
    assert rows[2][2].startswith("does not compile: ") and "shared memory" in rows[2][2]


def test_load_windows_model_each_program_again_against_the_default_window(monkeypatch, capsys):
    """``--load-window W``: each program's time with W loads in flight per load engine beside the default
    window's, each cell its change against it; a gemv of four tiles per SM waits for each tile with one."""
    monkeypatch.setattr(sim_clock, "REFERENCE", {"h200": {"gemv 8192x1024": 11.74}})
    assert sim_clock.main(["--only", "gemv", "--load-window", "8", "--load-window", "1"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("| program | modelled µs (window 8)"))
    assert header.endswith("| window 8 | window 1 |")
    (row,) = [[c.strip() for c in line.strip("|").split("|")] for line in out.split(header, 1)[1].splitlines()
              if line.startswith("| gemv")]
    base, same, one = float(row[1]), row[2], row[3]
    assert same == f"{base:.2f} (+0.0%)"  # the default window again: the same launch
    one_us, one_change = float(one.split()[0]), float(one.split()[1].strip("(%)"))
    assert one_us > base and one_change == pytest.approx(100.0 * (one_us / base - 1.0), abs=0.06)


def test_a_load_window_below_one_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        sim_clock.main(["--only", "gemv", "--load-window", "0"])
    assert e.value.code == 2 and "--load-window: at least 1 load in flight, not 0" in capsys.readouterr().err
