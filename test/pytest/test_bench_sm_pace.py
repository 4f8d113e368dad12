"""``bench/sm_pace.py``: each SM's pace from a trace, and the script's flow on the simulator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench import sm_pace
from vdir.device_runtime.trace import TraceEvent


def _landing(sm: int, engine: int, end_us: float) -> TraceEvent:
    return TraceEvent(sm=sm, engine=engine, uop=0, pos=0, start_us=end_us - 0.5, dur_us=0.5)


def test_the_pace_is_the_time_between_landings_per_load_after_the_first():
    stream, other = 3, 1
    events = [_landing(0, stream, t) for t in (1.0, 3.0, 5.0)] + [_landing(1, stream, 2.0)]
    events += [_landing(0, other, 9.0), _landing(2, other, 4.0)]  # another engine's: not counted
    pace, loads, last = sm_pace.landing_pace(events, stream, 3)
    assert pace[0] == pytest.approx(2.0) and math.isnan(pace[1]) and math.isnan(pace[2])
    assert list(loads) == [3, 1, 0]
    # from the launch's first stamp (0.5 µs: the first event's start)
    assert last[0] == pytest.approx(4.5) and last[1] == pytest.approx(1.5) and math.isnan(last[2])


def test_the_milestones_are_per_sm_firsts_and_lasts():
    events = [_landing(0, 3, 1.0), _landing(0, 3, 4.0), _landing(1, 3, 2.0)]
    starts, ends = sm_pace.milestones(events, 3)
    assert starts[0] == pytest.approx(0.0) and starts[-1] == pytest.approx(1.0)
    assert ends[0] == pytest.approx(1.5) and ends[-1] == pytest.approx(3.5)


def _span(sm: int, start: float, dur: float) -> TraceEvent:
    return TraceEvent(sm=sm, engine=2, uop=0, pos=0, start_us=start, dur_us=dur)


def test_step_and_gap_are_medians_over_the_sms_of_each_sms_median():
    events = [_span(0, 3.0, 3.0), _span(0, 0.0, 1.0), _span(0, 1.5, 1.0),  # SM 0 (any order): step 1, gaps 0.5
              _span(1, 0.0, 2.0), _span(1, 4.0, 2.0),  # SM 1: step 2, gap 2
              _span(2, 0.0, 4.0)]  # SM 2: step 4, no gap
    step, gap = sm_pace.step_and_gap(events, 2)
    assert step == pytest.approx(2.0) and gap == pytest.approx(1.25)
    overlapping = [_span(0, 0.0, 2.0), _span(0, 0.5, 2.0)]  # two loads in flight
    assert sm_pace.step_and_gap(overlapping, 2)[1] == pytest.approx(-1.5)
    assert all(math.isnan(v) for v in sm_pace.step_and_gap(overlapping, 1))  # another engine: none


@pytest.mark.parametrize("flush", [[], ["--flush-l2"], ["--lowering", "stream_ring=4"], ["--pipeline", "fuse=false"]])
def test_the_script_runs_on_the_simulator(capsys, flush):
    assert sm_pace.main(["--sim", "--launches", "2", *flush]) == 0
    out = capsys.readouterr().out
    assert "gemv 512x1024 on 4 SMs, 2 launches (sim)" in out
    assert "stream loads per CTA: 8 8 8 8" in out  # the weight tiles (x is the load engine's)


def test_paces_are_keyed_by_the_sm_each_cta_ran_on():
    # two launches: CTA 0 and 1 swap SMs; SM 7 is fast in both, SM 3 slow; CTA 2 did not start
    paces = [np.array([1.0, 2.0, np.nan]), np.array([2.2, 0.8, np.nan])]
    placements = [(7, 3, -1), (3, 7, -1)]
    by_sm = sm_pace.pace_by_sm(paces, placements)
    assert by_sm == pytest.approx({3: 2.1, 7: 0.9})
    assert sm_pace.kept_sm(placements) == pytest.approx(1 / 3)  # only CTA 2 "kept" its (absent) SM
    assert sm_pace.kept_sm([(1, 2), (1, 2)]) == 1.0


def test_the_correlation_is_over_the_common_keys_and_nan_without_spread():
    a = {0: 1.0, 1: 2.0, 2: 3.0, 9: 100.0}
    assert sm_pace.correlation(a, {0: 2.0, 1: 4.0, 2: 6.0}) == pytest.approx(1.0)
    assert sm_pace.correlation(a, {0: 3.0, 1: 2.0, 2: 1.0}) == pytest.approx(-1.0)
    assert math.isnan(sm_pace.correlation(a, {0: 1.0, 1: 1.0, 2: 1.0}))  # no spread
    assert math.isnan(sm_pace.correlation(a, {0: 1.0, 1: 2.0}))  # too few in common


def test_several_programs_are_compared_by_cta_and_by_sm(capsys):
    by_cta = [{0: 1.0, 1: 2.0, 2: 3.0}, {0: 3.0, 1: 2.0, 2: 1.0}]
    by_sm = [{5: 1.0, 6: 2.0, 7: 3.0}, {5: 1.0, 6: 3.0, 7: 2.0}]
    sm_pace.compare_programs([(8, 16), (16, 8)], by_cta, by_sm)
    assert "paces of 8x16 against 16x8: correlation by CTA index -1.00, by SM 0.50" in capsys.readouterr().out
    sm_pace.compare_programs([(8, 16), (16, 8)], by_cta, [None, None])
    assert "by SM not recorded" in capsys.readouterr().out
    sm_pace.compare_programs([(8, 16), (16, 8)], by_cta, by_sm, [(5, 6, 7, 8), (5, 7, 6, 8)])
    assert "by SM 0.50; CTAs on the same SM in both: 50%" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--gemv", "8192"], ["--gemv", "0x8"], ["--launches", "0"],
                                  ["--sim", "--gemv", "64x64"], ["--sim", "--lowering", "stream_ring=3"],
                                  ["--sim", "--lowering", "no_such=1"], ["--sim", "--pipeline", "no-such=1"]])
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as e:
        sm_pace.main(argv)
    assert e.value.code == 2
    assert "error:" in capsys.readouterr().err
