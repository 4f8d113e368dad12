"""``bench/sm_pace.py``: each SM's pace from a trace, and the script's flow on the simulator."""

from __future__ import annotations

import math

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


def test_the_script_runs_on_the_simulator(capsys):
    assert sm_pace.main(["--sim", "--launches", "2"]) == 0
    out = capsys.readouterr().out
    assert "gemv 512x1024 on 4 SMs, 2 launches (sim)" in out
    assert "stream loads per SM: 9 9 9 9" in out


@pytest.mark.parametrize("argv", [["--gemv", "8192"], ["--gemv", "0x8"], ["--launches", "0"]])
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as e:
        sm_pace.main(argv)
    assert e.value.code == 2
    assert "error:" in capsys.readouterr().err
