"""The shape sweep's command line, without a GPU (``bench/bench_sweep.py``)."""

from __future__ import annotations

import argparse
import sys
import types

import numpy as np
import pytest

from bench import bench_sweep as sweep
from bench.bench_gpu import device_target
from vdir.frontend.layers import WEIGHT_TILE_BYTES
from vdir.lowering.options import LoweringOptions

#: the SMs the sweep compiles for on an H200
H200_SMS = 132


def usage_error(argv: list[str], capsys) -> str:
    """The sweep's command line ``argv`` is refused as a usage error (exit status 2); its message."""
    with pytest.raises(SystemExit) as stop:
        sweep.main(argv)
    assert stop.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-4096"])
def test_a_tile_limit_that_is_not_positive_is_a_usage_error(value, capsys):
    assert f"--tile-bytes must be positive, not {value}" in usage_error(["--tile-bytes", value], capsys)


def test_a_tile_limit_with_the_simulator_is_a_usage_error(capsys):
    """``--sim`` scales the limit down with its shapes: a limit given with it is refused, not ignored."""
    assert "--tile-bytes applies on the GPU" in usage_error(["--sim", "--tile-bytes", "4096"], capsys)


def test_the_tile_limit_changes_the_tiling_the_sweep_compiles():
    """``tiling``, which the sweep's compile pool calls with the run's limit, follows it: a smaller
    limit splits a gemv's tiles (that ``gpu_main`` hands ``--tile-bytes`` to the pool needs a GPU)."""
    case = sweep.Case("gemv", 2048, 2048)
    assert sweep.tiling(case, H200_SMS, WEIGHT_TILE_BYTES) == {"rows": 16, "k_chunks": 1}
    assert sweep.tiling(case, H200_SMS, WEIGHT_TILE_BYTES // 2) == {"rows": 8, "k_chunks": 1}
    assert sweep.tiling(case, H200_SMS, WEIGHT_TILE_BYTES // 4) == {"rows": 8, "k_chunks": 2}


@pytest.mark.parametrize("argv", [["--tile-rows", "32"], ["--only", "mlp", "--tile-rows", "32"],
                                  ["--sim", "--only", "gemv", "--tile-rows", "32"]])
def test_tile_rows_outside_the_gpu_gemvs_is_a_usage_error(argv, capsys):
    """The rows override reaches only the gemvs' builder: with MLPs in the run or on the simulator it is refused."""
    assert "--tile-rows applies to the gemvs on the GPU" in usage_error(argv, capsys)


def test_tile_rows_that_are_not_positive_are_a_usage_error(capsys):
    assert "--tile-rows must be positive, not 0" in usage_error(["--only", "gemv", "--tile-rows", "0"], capsys)


def test_tile_rows_set_the_gemv_rows_and_the_k_chunks_follow_them():
    """Given rows replace the library's; the K chunks are the fewest that fit those rows within the limit."""
    case = sweep.Case("gemv", 2048, 8192)
    assert sweep.tiling(case, H200_SMS, WEIGHT_TILE_BYTES) == {"rows": 8, "k_chunks": 2}
    assert sweep.tiling(case, H200_SMS, 2 * WEIGHT_TILE_BYTES) == {"rows": 8, "k_chunks": 1}
    assert sweep.tiling(case, H200_SMS, 2 * WEIGHT_TILE_BYTES, gemv_rows=32) == {"rows": 32, "k_chunks": 4}
    assert sweep.compile_case(sweep.Case("gemv", 1000, 8192), 4, WEIGHT_TILE_BYTES, gemv_rows=16)["error"]


def test_gemv_shapes_replace_the_tables_gemvs():
    opts = sweep.argparse.Namespace(quick=False, only="gemv", gemv=[(1024, 6144), (512, 8192)], case=[])
    assert [c.name for c in sweep.select_cases(opts)] == ["gemv 1024x6144", "gemv 512x8192"]


@pytest.mark.parametrize("shape", ["1024", "1024x", "0x64", "ax8", "8x8x8", "x8"])
def test_a_gemv_shape_that_is_not_m_by_k_is_a_usage_error(shape, capsys):
    assert "is not MxK with M and K positive integers" in usage_error(["--only", "gemv", "--gemv", shape], capsys)


@pytest.mark.parametrize("only", ["mlp", "stack"])
def test_gemv_shapes_with_only_mlps_are_a_usage_error(only, capsys):
    assert f"--gemv adds gemvs: it cannot be given with --only {only}" in usage_error(
        ["--only", only, "--gemv", "64x64"], capsys)


def test_only_stack_selects_the_16_layer_stacks_alone():
    opts = sweep.argparse.Namespace(quick=False, only="stack", gemv=None, case=[])
    assert [c.name for c in sweep.select_cases(opts)] == [
        f"MLP x{sweep.STACK_LAYERS} {h}/{i}" for h, i in sweep.STACK_SHAPES]


def test_side_loads_reach_the_programs_the_sweep_compiles(capsys):
    """``--side-loads`` goes to vdir-place through the compile pool: a gemv's x streams with ``none``
    and keeps the load engine with the default; a value outside the choices is a usage error."""
    from vdir.testing.queues import load_engines

    case = sweep.Case("gemv", 1024, 1024)

    def x_engines(side_loads: str) -> set[str]:
        return load_engines(sweep.compile_case(case, 4, WEIGHT_TILE_BYTES, pipeline={"side_loads": side_loads})["prog"])["x"]

    assert x_engines("none") == {"stream"} and x_engines(sweep.DEFAULT_SIDE_LOADS) == {"load"}
    assert "invalid choice: 'most'" in usage_error(["--sim", "--side-loads", "most"], capsys)


def test_flag_words_reach_the_mlps_the_sweep_compiles_and_act_goes_as_words_alone(capsys):
    """``--flag-words`` goes to vdir-pipeline through the compile pool; the MLPs then declare ``act``
    scratch, and the run on the simulator still matches the host math; a negative count is refused."""
    from vdir import isa

    block = sweep.Case("block", 256, 512)
    plain = sweep.compile_case(block, 4, WEIGHT_TILE_BYTES)["prog"]
    flagged = sweep.compile_case(block, 4, WEIGHT_TILE_BYTES, pipeline={"flag_words": 4096})["prog"]
    assert [b.role for b in plain.buffers if b.name == "act"] == ["out"]
    assert [b.role for b in flagged.buffers if b.name == "act"] == ["scratch"]
    assert isa.moves_flag_words(flagged.executed_instrs()).any()
    assert "--flag-words must be 0 (none) or positive, not -1" in usage_error(["--sim", "--flag-words", "-1"], capsys)
    assert sweep.main(["--sim", "--quick", "--only", "mlp", "--flag-words", "4096"]) == 0
    assert "PASS" in capsys.readouterr().out


def test_hold_streams_reach_the_programs_the_sweep_compiles(capsys):
    """``--hold-streams`` and ``--release-first`` go to vdir-pipeline through the compile pool: a stack
    compiled with them is another encoding, and the run on the simulator still matches the host math;
    a negative count is refused."""
    stack = sweep.Case("stack", 256, 512, 2)
    plain = sweep.compile_case(stack, 8, WEIGHT_TILE_BYTES)["prog"]
    held = sweep.compile_case(stack, 8, WEIGHT_TILE_BYTES, pipeline={"hold_streams": 1})["prog"]
    first = sweep.compile_case(stack, 8, WEIGHT_TILE_BYTES, pipeline={"hold_streams": 1, "release_first": True})["prog"]
    assert not np.array_equal(plain.instrs, held.instrs) and not np.array_equal(held.instrs, first.instrs)
    assert "--hold-streams must be 0 (none) or positive, not -1" in usage_error(["--sim", "--hold-streams", "-1"], capsys)
    assert sweep.main(["--sim", "--quick", "--only", "mlp", "--hold-streams", "1", "--release-first"]) == 0
    assert "PASS" in capsys.readouterr().out


def test_the_programs_are_compiled_for_the_gpus_target_with_its_holds_unless_told(monkeypatch):
    """On the GPU the sweep compiles for the target of the GPU it opened (the default target for one that
    none describes); the holds and release-first it leaves to that target unless the command line gives
    them (``--hold-streams 0``, ``--no-release-first``: none)."""
    def chosen(*argv: str, target: str | None = None) -> dict:
        return sweep.pipeline_options(sweep.parse_options(list(argv)), target)

    assert chosen(target="h100") == {"side_loads": "idle", "flag_words": 0, "target": "h100"}
    assert chosen("--hold-streams", "0", "--no-release-first") == {
        "side_loads": "idle", "flag_words": 0, "hold_streams": 0, "release_first": False}
    assert chosen("--release-first")["release_first"] is True
    from vdir.device_runtime.cuda import CudaPlatform

    monkeypatch.setattr(CudaPlatform, "device_target", classmethod(lambda cls: "h100"))
    assert device_target() == "h100"
    monkeypatch.setattr(CudaPlatform, "device_target", classmethod(lambda cls: None))
    assert device_target() == "h200"  # no GPU, or one no target describes: the default target


def test_also_lowering_is_a_variant_of_the_runs_lowering():
    """``--also-lowering`` changes the options it names and keeps the rest of ``--lowering``'s."""
    ap = argparse.ArgumentParser()
    base = LoweringOptions.parse("stream_ring=2 load_ring=4")
    variant = sweep.lowering_variant(ap, base, "stream_ring=1")
    assert (variant.stream_ring, variant.load_ring) == (1, 4)
    assert sweep.lowering_variant(ap, base, "stream_ring=1,load_ring=8").load_ring == 8
    assert (base.stream_ring, base.load_ring) == (2, 4)


@pytest.mark.parametrize(("argv", "message"), [
    (["--also-lowering", "stream_ring=99"], "--also-lowering stream_ring=99: lowering option stream_ring must be in"),
    (["--also-lowering", "no_such_option=1"], "unknown lowering option 'no_such_option'"),
    (["--also-lowering", "stream_ring"], "lowering options are key=value pairs"),
    (["--sim", "--also-lowering", "stream_ring=1"], "--also-lowering applies on the GPU"),
])
def test_a_bad_lowering_variant_is_a_usage_error(argv, message, capsys):
    assert message in usage_error(argv, capsys)


class _Row:
    """An output row as the sweep's checks use it: ``fill_`` (torch's in-place fill) and its values."""

    def __init__(self) -> None:
        self.values = np.zeros(4)

    def fill_(self, value: float) -> None:
        self.values[:] = value


class _FakeVariant:
    """A program lowered with some options on the GPU, as ``time_lowering_variants`` uses one: it writes
    1.0 (with one tile in flight), nothing (with four) or 0.5 into each set's output and gives two figures
    (a warm-up, then the timed one), or refuses to load (with ``split_copies=2``)."""

    def __init__(self, plat, prog, sets, options):
        if options.split_copies == 2:
            raise RuntimeError("refused")
        self.plat, self.prog, self.sets, self.options = plat, prog, sets, options
        self.stream_ring = options.stream_ring or 2
        self.figures = iter([0.0, 90.0] if options.stream_ring == 1 else [0.0, 105.0])

    def run_all(self):
        if self.options.stream_ring == 4:
            return  # writes nothing: its rows keep the poison
        for s in self.sets:
            s["y"].values[:] = 1.0 if self.options.stream_ring == 1 else 0.5

    def time(self, n):
        return next(self.figures)


def test_lowering_variants_are_checked_timed_and_set_between_two_figures_of_the_default(monkeypatch):
    """Each variant's output is checked as vdir's own (poisoned first), its figure recorded, a variant that
    fails is named in the notes and the failures, and each is set against the mean of the default's figure
    before and after them."""
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=types.SimpleNamespace(synchronize=lambda: None)))
    monkeypatch.setattr(sweep, "VdirCase", _FakeVariant)
    sets = [{"y": _Row()}, {"y": _Row()}]
    base = _FakeVariant(None, None, sets, LoweringOptions())
    base.figures = iter([110.0])  # its second figure
    row = {"us": {"vdir": 90.0}, "err": {}, "notes": []}
    failed: list[str] = []
    recorded: dict[str, tuple[float, list[float]]] = {}

    def record(name, us, errs):
        recorded[name] = (us, errs)
        row["us"][name] = us

    variants = [("stream_ring=1", LoweringOptions(stream_ring=1)), ("split_copies=2", LoweringOptions(split_copies=2)),
                ("stream_ring=2", LoweringOptions(stream_ring=2)), ("stream_ring=4", LoweringOptions(stream_ring=4))]
    sweep.time_lowering_variants(sweep.Case("stack", 256, 512, 2), row, base, sets, variants,  # type: ignore[arg-type]
                                 lambda s: s["y"], lambda outs: [float(abs(o.values - 1.0).max()) for o in outs],
                                 record, failed, 10)
    assert {k: v for k, v in recorded.items() if k != "vdir stream_ring=4"} == {
        "vdir stream_ring=1": (90.0, [0.0, 0.0]), "vdir stream_ring=2": (105.0, [0.5, 0.5])}
    # a variant that writes nothing is checked on the poison, not on the rows the variant before it wrote
    assert np.isnan(recorded["vdir stream_ring=4"][1]).all()
    assert row["us"]["vdir again"] == 110.0
    assert failed == ["MLP x2 256/512 [vdir split_copies=2]"]
    assert row["notes"] == [
        "lowering split_copies=2 failed: RuntimeError: refused",
        "vdir again: 110.00 us",
        "lowering stream_ring=1: 90.00 us (-10.0% against the default's two figures; stream ring 1)",
        "lowering stream_ring=2: 105.00 us (+5.0% against the default's two figures; stream ring 2)",
        "lowering stream_ring=4: 105.00 us (+5.0% against the default's two figures; stream ring 4)",
    ]
