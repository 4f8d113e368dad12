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
