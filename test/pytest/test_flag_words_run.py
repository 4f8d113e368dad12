"""Flag-word hand-offs run: ``vdir-pipeline{flag-words=N}`` against the same program without.

On the simulator an MLP block and a tiny decode step give the same bytes
with and without, launch after launch (the epochs advance); a scratch
buffer that only flag-word loads read is written as words alone, and a plan
that let a load's words stand for its slot wait while a plain store still
reads that slot is a race the simulator names; a load whose
words never arrive is a deadlock report that names them; forged flag-word
records are refused before anything runs; the kernel carries the flag-word
paths only for a program that has such records. On the GPU, an MLP block
and a two-layer stack on every SM give the same bytes as without, over
three launches.
"""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16
from xdsl.dialects.builtin import ModuleOp

import vdir
import vdir.analysis.flag_words as flag_words_analysis
from vdir import isa
from vdir.device_runtime.sim import SimDeadlockError, SimRaceError
from vdir.frontend.examples import build_mlp_block, build_mlp_stack
from vdir.frontend.llama import build_decode_step
from vdir.lowering.emit import lower_to_ptx
from vdir.models.llama import NAMED_CONFIGS, LlamaDecoder
from vdir.testing.gpu import gpu
from vdir.testing.llama import random_weights
from vdir.transforms.pipeline import compile_to_encoded

WORDS_STORE = "st.relaxed.gpu.global.v2.b64"
WORDS_LOAD = "ld.relaxed.gpu.global.v2.b64"


def _inputs(program: isa.EncodedProgram, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {b.name: (rng.standard_normal(b.shape) * 0.5).astype(bfloat16) for b in program.buffers if b.is_input}


def _runs(program: isa.EncodedProgram, inputs: dict, backend: str, launches: int = 3,
          options: dict | None = None) -> list[dict]:
    outs = []
    with vdir.compile(program, backend=backend, options=options) as exe:
        for _ in range(launches):
            got = exe(**inputs)
            got = got if isinstance(got, dict) else {exe.outputs[0].name: got}
            outs.append({k: np.asarray(v).view(np.uint16).copy() for k, v in got.items()})
    return outs


def _flag_records(program: isa.EncodedProgram) -> np.ndarray:
    ins = program.executed_instrs()
    moves = np.isin(isa.OPCODE.column(ins), (isa.OP_LOAD, isa.OP_STORE))
    return ins[moves & ((isa.TRANSFER_FLAGS.column(ins) & isa.TRANSFER_FLAG_WORDS) != 0)]


def _same(a: list[dict], b: list[dict]) -> bool:
    return all(x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x) for x, y in zip(a, b, strict=True))


def test_an_mlp_block_gives_the_same_bytes_on_the_simulator():
    module = build_mlp_block(256, 512)
    plain = compile_to_encoded(module, num_sms=4)
    flagged = compile_to_encoded(module, num_sms=4, flag_words=4096)
    assert plain.num_counters == 1 and flagged.num_counters == 0
    assert flagged.flag_word_bytes == 2 * 2 * 512 and plain.flag_word_bytes == 0
    assert flagged.sync_bytes == isa.flag_words_start(0) + flagged.flag_word_bytes
    assert len(_flag_records(flagged)) > 0 and len(_flag_records(plain)) == 0
    inputs = _inputs(plain, 1)
    assert _same(_runs(plain, inputs, "sim"), _runs(flagged, inputs, "sim"))


def test_a_decode_step_gives_the_same_tokens_and_logits_on_the_simulator():
    cfg = NAMED_CONFIGS["tiny"]
    weights = random_weights(cfg, seed=3)
    results = []
    for words in (0, 4096):
        program = compile_to_encoded(build_decode_step(cfg), num_sms=8, flag_words=words)
        if words:  # the rows handed between stages are scratch, and only their words carry them
            assert all(_stores_into(program, name)[1] == 0 for name in ("hs", "q", "ao", "act"))
        with LlamaDecoder(cfg, weights, backend="sim", program=program) as decoder:
            tokens = decoder.generate([1], 4).tokens
            results.append((tokens, decoder.logits().view(np.uint16).copy()))
    assert results[0][0] == results[1][0]
    assert np.array_equal(results[0][1], results[1][1])


def _no_scratch(module: ModuleOp) -> ModuleOp:
    """``module`` with none of its program's buffers declared scratch."""
    module.ops.first.properties["scratch_args"] = None
    return module


def _stores_into(program: isa.EncodedProgram, name: str) -> tuple[int, int]:
    """(flag-word, plain) store records into buffer ``name``."""
    ins = program.executed_instrs()
    b = [x.name for x in program.buffers].index(name)
    into = (isa.OPCODE.column(ins) == isa.OP_STORE) & (isa.BUFFER.column(ins) == b)
    words = isa.moves_flag_words(ins)
    return int((into & words).sum()), int((into & ~words).sum())


def test_a_scratch_buffer_only_flag_words_read_is_written_as_words_alone():
    """@act read back only through flag words: one record per store, its words, and the same result."""
    plain = compile_to_encoded(build_mlp_block(256, 512), num_sms=4)
    both = compile_to_encoded(build_mlp_block(256, 512), num_sms=4, flag_words=4096)
    alone = compile_to_encoded(build_mlp_block(256, 512, scratch_act=True), num_sms=4, flag_words=4096)
    assert [b.role for b in alone.buffers if b.name == "act"] == ["scratch"]
    words, stores = _stores_into(both, "act")
    assert words > 0 and stores == words  # its words, then its plain store
    assert _stores_into(alone, "act") == (words, 0)
    assert len(alone.executed_instrs()) == len(both.executed_instrs()) - words
    inputs = _inputs(plain, 6)
    want = [{"out": r["out"]} for r in _runs(plain, inputs, "sim")]
    assert _same(want, _runs(alone, inputs, "sim"))


def test_a_plain_load_of_a_buffer_written_as_words_alone_is_named_by_the_simulator():
    """A forged program whose load reads @act itself, where the stores wrote only @act's words: the load
    would see bytes of an earlier launch, and the simulator says so before it computes anything."""
    program = compile_to_encoded(build_mlp_block(256, 512, scratch_act=True), num_sms=4, flag_words=4096)
    instrs = program.instrs.copy()
    loads = np.nonzero((isa.OPCODE.column(instrs) == isa.OP_LOAD) & isa.moves_flag_words(instrs))[0]
    row = instrs[int(loads[0])]
    isa.TRANSFER_FLAGS.set(row, 0)
    isa.GLOBAL_OFFSET.set(row, 0)  # the first bytes of act, in bounds
    with pytest.raises(SimRaceError, match=r"reads bytes of scratch buffer 'act' that no store of the launch wrote"):
        _runs(_with_instrs(program, instrs), _inputs(program, 8), "sim", launches=1)


def test_a_slot_wait_left_to_words_a_plain_store_follows_is_a_race_the_simulator_names(monkeypatch):
    """The plan keeps a group its waiter may also wait on for its slot only where the stores write their
    words alone: were it kept with a plain store after the words (@hs not scratch here), the load could
    fill its slot while that store still reads it, and the simulator says so."""
    cfg = NAMED_CONFIGS["tiny"]
    module = _no_scratch(build_decode_step(cfg))
    monkeypatch.setattr(flag_words_analysis, "_needs_words_only", lambda group, waiters: False)
    program = compile_to_encoded(module, num_sms=8, flag_words=4096)
    with LlamaDecoder(cfg, random_weights(cfg, seed=3), backend="sim", program=program) as decoder:
        with pytest.raises(SimRaceError, match=r"race on shared memory .*: %ores.* writes the slot that store to @hs"):
            decoder.generate([1], 2)


def _flagged_block() -> isa.EncodedProgram:
    return compile_to_encoded(build_mlp_block(256, 512), num_sms=4, flag_words=4096)


def _with_instrs(program: isa.EncodedProgram, instrs: np.ndarray) -> isa.EncodedProgram:
    return isa.EncodedProgram(program.num_sms, program.smem_bytes, program.num_counters, program.bitmap_bits,
                              program.buffers, instrs, program.queues, program.uop_names, program.target,
                              program.scalars, program.flag_word_bytes)


def _forge(program: isa.EncodedProgram, change) -> isa.EncodedProgram:
    """``program`` with ``change(row)`` applied to its first flag-word load record."""
    instrs = program.instrs.copy()
    loads = isa.OPCODE.column(instrs) == isa.OP_LOAD
    k = int(np.nonzero(loads & ((isa.TRANSFER_FLAGS.column(instrs) & isa.TRANSFER_FLAG_WORDS) != 0))[0][0])
    change(instrs[k])
    return _with_instrs(program, instrs)


@pytest.mark.parametrize("change, message", [
    (lambda row: isa.GLOBAL_OFFSET.set(row, 8), r"flag words \[8, \d+\) are outside the sync block's flag words"),
    (lambda row: isa.GLOBAL_OFFSET.set(row, isa.GLOBAL_OFFSET.get(row) + 4), "whole 8-byte words"),
    (lambda row: isa.TMAP.set(row, 1), "no tensor map"),
    (lambda row: (isa.GUARD_SOURCE.set(row, isa.SOURCE_SCALAR), isa.GUARD_COEFF.set(row, 1)), "runs unconditionally"),
])
def test_forged_flag_word_records_are_refused_naming_the_micro_op(change, message):
    forged = _forge(_flagged_block(), change)
    with pytest.raises(ValueError, match=r"%act\w* \(.*\): .*" + message):
        isa.check_untrusted(forged)
    with pytest.raises(ValueError, match=message):  # vdir.compile checks a program handed over the same way
        vdir.compile(forged, backend="sim")


def test_a_load_whose_words_never_come_is_a_deadlock_naming_them():
    program = _flagged_block()
    instrs = program.instrs.copy()
    stores = isa.OPCODE.column(instrs) == isa.OP_STORE
    words = stores & ((isa.TRANSFER_FLAGS.column(instrs) & isa.TRANSFER_FLAG_WORDS) != 0)
    for k in np.nonzero(words)[0]:  # the stores write their buffer only: no words ever arrive
        isa.OPCODE.set(instrs[k], isa.OP_NOP)
    forged = _with_instrs(program, instrs)
    with pytest.raises(SimDeadlockError, match=r"flag word\(s\) of buffer 'act' with this launch's epoch 1"):
        _runs(forged, _inputs(program, 2), "sim", launches=1)


def test_the_kernel_carries_the_flag_word_paths_only_where_the_program_has_them():
    plain = lower_to_ptx(compile_to_encoded(build_mlp_block(256, 512), num_sms=4))
    flagged = lower_to_ptx(_flagged_block())
    assert WORDS_STORE not in plain and WORDS_LOAD not in plain
    assert WORDS_STORE in flagged and WORDS_LOAD in flagged


@gpu
@pytest.mark.parametrize("case", ["block", "stack", "block, act scratch", "stack, act scratch"])
def test_whole_gpu_programs_give_the_same_bytes_with_flag_words(case):
    """132 SMs (or the device's): the activation rows' loads (8 KiB) carry flag words with a limit of 8 KiB;
    with ``act`` scratch its stores write their words alone (the results compared: ``act`` is not one)."""
    scratch = case.endswith("scratch")
    build = build_mlp_block if case.startswith("block") else lambda **kw: build_mlp_stack(2, **kw)
    plain = compile_to_encoded(build(hidden=2048, intermediate=8192))
    flagged = compile_to_encoded(build(hidden=2048, intermediate=8192, scratch_act=scratch), flag_words=8192)
    assert len(_flag_records(flagged)) > 0
    assert (_stores_into(flagged, "act")[1] == 0) == scratch
    inputs = _inputs(plain, 4)
    want = _runs(plain, inputs, "cuda")
    if scratch:
        want = [{k: v for k, v in r.items() if k != "act"} for r in want]
    assert _same(want, _runs(flagged, inputs, "cuda"))


@gpu
def test_a_words_only_stack_with_every_uniform_claim_checked_gives_the_bytes_it_gives_unchecked():
    """The flag-word paths' branches declared warp-uniform (the poll's vote, the words' loops), each
    checked (lowering option uniform_checks), on a stack whose act rows go as words alone."""
    program = compile_to_encoded(build_mlp_stack(2, 256, 512, scratch_act=True), num_sms=4, flag_words=4096)
    words, plain = _stores_into(program, "act")
    assert words > 0 and plain == 0
    inputs = _inputs(program, 7)
    assert _same(_runs(program, inputs, "cuda", options={"uniform_checks": True}), _runs(program, inputs, "cuda"))


def test_a_stack_with_its_layers_kept_alike_is_compiled_trip_by_trip_and_gives_the_same_bytes():
    """keep-trips stamps the layer loop from two short compiles, extrapolating the counters; the flag
    words lie after the counters, so such a program is compiled trip by trip instead."""
    module = build_mlp_stack(8, 256, 512)
    plain = compile_to_encoded(module, num_sms=4, keep_trips=True)
    flagged = compile_to_encoded(module, num_sms=4, keep_trips=True, flag_words=4096)
    assert flagged.flag_word_bytes > 0 and len(_flag_records(flagged)) > 0
    inputs = _inputs(plain, 5)
    assert _same(_runs(plain, inputs, "sim", launches=2), _runs(flagged, inputs, "sim", launches=2))
