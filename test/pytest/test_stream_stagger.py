"""The lowering option ``stream_stagger_ns``: the stream engine's second load waits after its first.

The wait changes when bytes land, never which: a gemv of several weight tiles per SM gives the same bytes
with the option as without, and its rows match numpy. The PTX it adds (a ``%globaltimer`` spin on the
stream engine only) is checked in ``test/lowering/ptx-options.mlir``.
"""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir.frontend.examples import build_gemv
from vdir.testing.gpu import gpu


@gpu
@pytest.mark.parametrize("stagger_ns", [400, 3000])
def test_a_staggered_stream_gives_the_same_bytes(stagger_ns):
    m, k, sms = 256, 1024, 4  # 16-row tiles: four per SM, two of them in the stream ring at once
    rng = np.random.default_rng(stagger_ns)
    w = (rng.standard_normal((m, k)) / np.sqrt(k)).astype(bfloat16)
    x = rng.standard_normal((1, k)).astype(bfloat16)
    outs = []
    for options in ({}, {"stream_stagger_ns": stagger_ns}):
        with vdir.compile(build_gemv(m, k, rows_per_tile=16), backend="cuda", num_sms=sms, options=options) as exe:
            outs.append(np.asarray(exe(w=w, x=x)).copy())
    assert np.array_equal(outs[0].view(np.uint16), outs[1].view(np.uint16))
    want = w.astype(np.float64) @ x.astype(np.float64).reshape(-1)
    got = outs[1].astype(np.float64).reshape(-1)
    # f32 sums of exact bf16 products, rounded once to bf16
    assert np.abs(got - want).max() <= 2.0 ** -7 * np.abs(want).max()
