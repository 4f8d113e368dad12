"""The micro-op cost bench's programs and variants, without a GPU.

``bench/bench_uop_cost.py`` times each engine alone through
``bench_gpu.variant``; these tests keep its programs correct on the
simulator, its result check able to fail, and the variants honest about
which queues they keep.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench import bench_uop_cost as uop
from bench.bench_gpu import variant
from vdir import isa
from vdir.target import get_target


@pytest.mark.parametrize("argv", [["--sim"], ["--sim", "--gemv", "16x256"], ["--sim", "--gemv", "8x64"],
                                  ["--sim", "--vecmat", "16x256"]])
def test_the_programs_match_their_reference_on_the_simulator(argv):
    assert uop.main(argv) == 0


@pytest.mark.parametrize("kind", [None, ("gemv", 16, 256), ("vecmat", 16, 64)])
def test_the_result_check_rejects_a_wrong_element(kind):
    rng = np.random.default_rng(1)
    inp = uop.inputs(rng, 4, 2, kind)
    good = uop._reference(inp, kind).astype(np.float32)
    uop._check(good, inp, 4, 2, kind)  # the exact answer passes
    bad = good.copy()
    bad.flat[3] += 1.0 + abs(bad.flat[3])
    with pytest.raises(SystemExit, match="differs from the reference"):
        uop._check(bad, inp, 4, 2, kind)


def test_a_bad_tile_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        uop.main(["--sim", "--gemv", "16x"])
    assert "--gemv takes RxK" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        uop.main(["--sim", "--vecmat", "0x8"])
    assert "--vecmat takes KxN" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["only=compute", "only=store", "loads_free"])
def test_a_variant_keeps_the_queues_it_names_and_drops_every_wait(kind):
    prog = uop.compile_program(8, 2)
    target = get_target(prog.target)
    kept = set(target.load_engines) if kind == "loads_free" else {target.engine_index(kind.split("=")[1])}
    v = variant(prog, kind)
    full = prog.without_loops()
    for sm, engines in enumerate(v.queues):
        for e, (_start, count) in enumerate(engines):
            assert count == (full.queues[sm][e][1] if e in kept else 0), (sm, e)
            if count:
                ops = v.queue(sm, e)[:, isa.W_OPCODE]
                assert np.array_equal(ops, full.queue(sm, e)[:, isa.W_OPCODE]), (sm, e)
    assert not v.instrs[:, isa.W_WAIT_MASK:isa.W_WAIT_MASK + 2].any()
    assert not v.instrs[:, isa.W_WAIT_COUNTER].any()
    assert any(count for engines in v.queues for _s, count in engines)
    isa.check_untrusted(v)  # laid out as an encoded program must be: it loads


def test_a_variant_for_an_unknown_engine_names_the_engines():
    with pytest.raises(SystemExit, match="only=nosuch: the target's engines are load, compute, store, stream"):
        variant(uop.compile_program(2, 1), "only=nosuch")


@pytest.mark.parametrize("argv", [["--variant", "only=compute", "--gemv", "8x64"], ["--variant", "full", "--vecmat", "16x64"],
                                  ["--variant", "loads_free"]])
def test_the_profiling_script_builds_and_launches_its_program(argv):
    from bench import profile_uop

    assert profile_uop.main(["--backend", "sim", "--triples", "4", *argv]) == 0
