"""``vdir.compile`` compiles for the program's own target unless told otherwise."""

from __future__ import annotations

import pytest

import vdir
from vdir.frontend import ProgramBuilder


def small_program(target: str):
    b = ProgramBuilder("copy", target=target)
    x = b.buffer("x", (1, 64))
    y = b.buffer("y", (1, 64))
    t = b.load(x, (0, 0), (1, 64), name="t")
    b.store(t, y, (0, 0), name="s")
    return b.finish()


def test_the_programs_target_is_the_default():
    with vdir.compile(small_program("h100")) as run:
        assert run.program.target == "h100"


def test_an_explicit_target_wins():
    with vdir.compile(small_program("h100"), target="h200", num_sms=2) as run:
        assert run.program.target == "h200"
        assert run.program.num_sms == 2


def test_an_unknown_target_is_named():
    with pytest.raises(ValueError, match="unknown target 'mi300'"):
        vdir.compile(small_program("h200"), target="mi300")


def test_lowering_options_travel_apart_from_launch_options():
    """``options`` are the lowering options (any form); other keywords are launch options."""
    from vdir.lowering.options import LoweringOptions

    with vdir.compile(small_program("h200"), options="load_path=lsu", seed=3) as run:
        assert run.options == LoweringOptions(load_path="lsu")
        assert run.launch_options == {"seed": 3}
    with vdir.compile(small_program("h200")) as run:
        assert run.options is None  # the backend's defaults


def test_bad_lowering_options_fail_before_compiling():
    from vdir.lowering.options import LoweringOptionError

    with pytest.raises(LoweringOptionError, match="unknown lowering option 'seed'"):
        vdir.compile(small_program("h200"), options={"seed": 3})
