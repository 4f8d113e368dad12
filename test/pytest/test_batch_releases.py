"""Batched releases (lowering option ``batch_releases``, ``vdir.lowering.kernel.store_engine``).

Without the option the kernel is the same text; with it the store engine
carries one deferred completion and one ``fence.acq_rel.gpu`` for two
releasing stores, whose counters it then adds with relaxed reductions; the
PTX assembles; a kernel that runs loops or moves flag words keeps the usual
completion. On the GPU, programs with hand-off stores in a row give the
same bytes with and without.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_ptx_lowering import assemble

import vdir
from vdir.frontend.examples import build_mlp_block, build_mlp_stack
from vdir.frontend.llama import build_decode_step
from vdir.isa import index_ranges
from vdir.lowering.emit import lower_to_ptx
from vdir.models.llama import NAMED_CONFIGS
from vdir.testing.gpu import gpu
from vdir.tools.vdir_run import parse_scalars, random_inputs
from vdir.transforms.pipeline import compile_to_encoded

BATCHED = {"batch_releases": True}
FENCE, RELAXED, RELEASE = "fence.acq_rel.gpu;", "red.relaxed.gpu.global.add.u32", "red.release.gpu.global.add.u32"


def test_the_option_changes_the_kernel_only_where_asked():
    program = compile_to_encoded(build_mlp_stack(2, 256, 512), num_sms=8)
    plain = lower_to_ptx(program)
    assert plain == lower_to_ptx(program, options={"batch_releases": False})
    assert FENCE not in plain and RELAXED not in plain
    batched = lower_to_ptx(program, options=BATCHED)
    # one fence for the pair, a relaxed add for each of its two counters; the usual completion stays
    assert batched.count(FENCE) == 1 and batched.count(RELAXED) == 2
    assert batched.count(RELEASE) == plain.count(RELEASE)
    assemble(batched)


@pytest.mark.parametrize("options", [{"run_loops": True}, {}], ids=["runs-loops", "flag-words"])
def test_a_kernel_that_runs_loops_or_moves_flag_words_keeps_the_usual_completion(options):
    """The store engine reads the next instruction ahead only from a plain queue, and a flag-word
    store completes on a path of its own: there the option changes nothing."""
    if options:
        program = compile_to_encoded(build_mlp_block(256, 1024), num_sms=4)
        assert program.has_loops
    else:
        program = compile_to_encoded(build_mlp_block(256, 512, scratch_act=True), num_sms=4, flag_words=4096)
    assert lower_to_ptx(program, options={**options, **BATCHED}) == lower_to_ptx(program, options=options)


def outputs(program, options: dict, launches: int) -> dict[str, bytes]:
    """The program's outputs on the GPU after ``launches`` launches on fresh seeded inputs."""
    inputs = random_inputs(program.buffers, 7, index_ranges(program))
    scalars = parse_scalars([], program.scalars, 7)
    with vdir.compile(program, backend="cuda", options=options) as exe:
        for _ in range(launches):
            out = exe(**{k: v.copy() for k, v in inputs.items()}, **scalars)
        out = out if isinstance(out, dict) else {exe.outputs[0].name: out}
        return {k: np.asarray(v).tobytes() for k, v in out.items()}


@gpu
def test_batched_releases_give_the_same_bytes_on_the_gpu():
    """A whole-GPU 2-layer MLP stack and the tiny decode step, three launches batched against one not:
    the same bytes (the batching only delays a store's completion)."""
    for program in (compile_to_encoded(build_mlp_stack(2, 2048, 8192)),
                    compile_to_encoded(build_decode_step(NAMED_CONFIGS["tiny"]))):
        assert outputs(program, {}, 1) == outputs(program, BATCHED, 3)
