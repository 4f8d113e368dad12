"""``vdir-place``'s ``side-loads``: which small loads that wait on nothing stay on the load engine.

``idle`` (the default) keeps them on an SM none of whose loads wait (a
gemv's x); ``none`` streams them all. An MLP block's SMs wait for their
activation row, so its input and norm rows stream under either. Each choice
is run on the simulator, with race checking, against the reference
evaluator.
"""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir.diagnostics import UserError
from vdir.frontend.examples import build_mlp_block
from vdir.testing.queues import load_engines
from vdir.testing.reference import evaluate
from vdir.transforms.pipeline import compile_to_encoded

HIDDEN, INTER, SMS = 256, 512, 4


@pytest.mark.parametrize("side_loads", ["none", "idle"])
def test_an_mlp_blocks_input_and_norm_rows_stream(side_loads):
    program = compile_to_encoded(build_mlp_block(HIDDEN, INTER), num_sms=SMS, side_loads=side_loads)
    engines = load_engines(program)
    assert engines["g"] == {"stream"} and engines["wg"] == {"stream"}


@pytest.mark.parametrize("side_loads", ["none", "idle"])
def test_every_choice_runs_exactly(side_loads):
    module = build_mlp_block(HIDDEN, INTER)
    program = compile_to_encoded(module, num_sms=SMS, side_loads=side_loads)
    rng = np.random.default_rng(5)
    inputs = {b.name: (rng.standard_normal(b.shape) * 0.5).astype(bfloat16)
              for b in program.buffers if not b.is_output}
    want = evaluate(module, {**inputs, **{b.name: np.zeros(b.shape, bfloat16) for b in program.buffers
                                          if b.is_output}})
    with vdir.compile(program, backend="sim") as exe:
        got = exe(**inputs)
    got = got if isinstance(got, dict) else {exe.outputs[0].name: got}
    assert set(got) == {b.name for b in program.buffers if b.is_output} != set()
    for name, value in got.items():
        assert np.array_equal(np.asarray(value).view(np.uint16), want[name].view(np.uint16)), name


def test_an_unknown_choice_is_refused_by_name():
    with pytest.raises(UserError, match="option 'side-loads' must be one of none, idle, got 'leading'"):
        compile_to_encoded(build_mlp_block(HIDDEN, INTER), num_sms=SMS, side_loads="leading")
