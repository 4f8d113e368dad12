"""Context buckets: a decode step compiled for the early positions only, beside the full one.

``LlamaConfig.attend`` compiles a step whose attention covers fewer
positions than the caches hold; ``LlamaDecoder(context_buckets=...)`` runs
each position on the shortest such step that covers it, sharing the full
step's weights, caches and history. The tokens and logits must be the same
bits as with the full step alone, across the bucket's edge.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vdir.device_runtime.executable import ArgumentError
from vdir.frontend.llama import build_decode_step, state_shapes
from vdir.models.llama import (
    AUTO_BUCKET_MIN_CONTEXT,
    NAMED_CONFIGS,
    LlamaDecoder,
    ModelError,
    auto_context_buckets,
    bucket_configs,
    parse_context_buckets,
    shared_buffers,
)
from vdir.testing.gpu import gpu
from vdir.testing.llama import random_weights
from vdir.transforms.pipeline import compile_to_encoded

#: tiny with room for two buckets' worth of blocks: 8 blocks of 16 positions, a bucket of 64 (4 blocks)
CFG = dataclasses.replace(NAMED_CONFIGS["tiny"], max_context=128)
BUCKET = 64
PROMPT = [3, 7, 11]


def teacher_forced_logits(decoder: LlamaDecoder, tokens: list[int]) -> list[np.ndarray]:
    """Each step's logits (bf16 bits) with ``tokens`` fed in, from an empty cache."""
    decoder.reset()
    out = []
    for pos, token in enumerate(tokens):
        decoder.step(pos, token)
        out.append(decoder.logits().view(np.uint16).copy())
    return out


def _tokens(count: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(4).integers(0, CFG.vocab, count)]


def test_a_bucket_step_has_no_blocks_past_its_context():
    full = compile_to_encoded(build_decode_step(CFG))
    short_cfg = dataclasses.replace(CFG, attend=BUCKET)
    short = compile_to_encoded(build_decode_step(short_cfg))
    assert short_cfg.blocks == BUCKET // CFG.block and CFG.blocks == CFG.max_context // CFG.block
    assert len(short.instrs) < len(full.instrs)
    scalar = {sc.name: (sc.lo, sc.hi) for sc in short.scalars}
    assert scalar["pos"] == (0, BUCKET)  # a position the bucket does not cover is refused at launch
    sizes = {b.name: b.shape for b in short.buffers}
    for name in shared_buffers(CFG):  # what the full step's buffers are bound to is laid out alike
        assert sizes[name] == {b.name: b.shape for b in full.buffers}[name], name
    assert sizes["states"] == state_shapes(short_cfg)["states"][0] != state_shapes(CFG)["states"][0]


def test_buckets_give_the_same_logits_bit_for_bit_across_the_edge():
    weights = random_weights(CFG, seed=1)
    tokens = _tokens(BUCKET + 8)
    with LlamaDecoder(CFG, weights) as decoder:
        want = teacher_forced_logits(decoder, tokens)
    with LlamaDecoder(CFG, weights, context_buckets=[BUCKET]) as decoder:
        got = teacher_forced_logits(decoder, tokens)
        generated = decoder.generate(PROMPT, BUCKET)  # crosses the edge: the history is shared
    for pos, (g, w) in enumerate(zip(got, want, strict=True)):
        assert np.array_equal(g, w), f"logits at position {pos}"
    with LlamaDecoder(CFG, weights) as decoder:
        assert generated.tokens == decoder.generate(PROMPT, BUCKET).tokens


def test_each_position_runs_the_shortest_step_that_covers_it():
    weights = random_weights(CFG, seed=2)
    with LlamaDecoder(CFG, weights, context_buckets=[BUCKET]) as decoder:
        (attended, short), (whole, full) = decoder.steps
        assert (attended, whole) == (BUCKET, CFG.max_context) and full is decoder.exe
        assert [decoder.step_for(p) for p in (0, BUCKET - 1, BUCKET, CFG.max_context - 1)] == [
            short, short, full, full]
        with pytest.raises(ArgumentError, match="pos"):
            short.launch(pos=BUCKET)  # the bucket's own launch refuses what it does not cover
        decoder.step(0, 5)
        decoder.logits()  # the executable usable after the refused launch


@pytest.mark.parametrize(
    "buckets, message",
    [
        ([48], r"context bucket 48: a bucket is a context below the step's 128 positions in multiples of 64 "
               r"\(four attention blocks of 16\)"),
        ([128], "context bucket 128"),
        ([0], "context bucket 0"),
        ([True], "context bucket True"),
        (["64"], "context bucket '64'"),
        ([64, "x"], "context bucket 'x'"),
        ("64", "context buckets: 'auto' or a list of context lengths, got '64'"),
        (64, "context buckets: 'auto' or a list of context lengths, got 64"),
        ("Auto", "context buckets: 'auto' or a list of context lengths, got 'Auto'"),
    ],
)
def test_bad_buckets_are_refused_by_name(buckets, message):
    with pytest.raises(ModelError, match=message):
        bucket_configs(CFG, buckets)
    with pytest.raises(ModelError, match=message):
        LlamaDecoder(CFG, random_weights(CFG, seed=3), context_buckets=buckets)


@pytest.mark.parametrize(
    "attend, message",
    [
        (-16, "attend = -16 must be 0"),
        (256, "attend = 256 must be 0 .max_context. or a context of at most max_context = 128"),
        (40, "attend = 40 is not a multiple of block = 16"),
        (32, r"attend / block = 2 attention blocks, not a multiple of 4"),
    ],
)
def test_configs_with_a_bad_attended_context_are_refused(attend, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(CFG, attend=attend)


def test_a_bucket_must_be_shorter_than_the_steps_own_attended_context():
    short = dataclasses.replace(CFG, max_context=256, attend=128)
    with pytest.raises(ModelError, match="context bucket 128: a bucket is a context below the step's 128 positions"):
        bucket_configs(short, [128])
    assert [c.attended for c in bucket_configs(short, [64])] == [64]


@pytest.mark.parametrize(
    "max_context, attend, want",
    [
        (1024, 0, []),
        (2048, 0, []),  # 1024 is below the shortest automatic bucket
        (3072, 0, []),
        (4096, 0, [2048]),
        (6144, 0, [3072]),
        (8192, 0, [2048, 4096]),
        (16384, 0, [2048, 4096, 8192]),
        (8192, 4096, [2048]),  # halves the positions the step attends, not the caches' length
    ],
)
def test_auto_buckets_halve_the_context_while_it_stays_at_least_2048(max_context, attend, want):
    cfg = dataclasses.replace(CFG, max_context=max_context, attend=attend)
    assert AUTO_BUCKET_MIN_CONTEXT == 2048
    assert auto_context_buckets(cfg) == want
    assert [c.attended for c in bucket_configs(cfg, "auto")] == want


def test_auto_buckets_stop_at_a_context_that_is_not_whole_blocks():
    cfg = dataclasses.replace(CFG, max_context=33 * 128, block=32)  # half of it, 2112, is not whole 128s
    assert auto_context_buckets(cfg) == []


def test_the_decoder_compiles_the_auto_buckets_by_default(monkeypatch):
    import vdir.models.llama as llama

    monkeypatch.setattr(llama, "AUTO_BUCKET_MIN_CONTEXT", BUCKET)  # CFG's 128 positions halve to one bucket
    weights = random_weights(CFG, seed=7)
    with LlamaDecoder(CFG, weights) as decoder:
        assert [attended for attended, _ in decoder.steps] == [BUCKET, CFG.max_context]
    with LlamaDecoder(CFG, weights, context_buckets=()) as decoder:
        assert [attended for attended, _ in decoder.steps] == [CFG.max_context]


@pytest.mark.parametrize("text, want", [("auto", "auto"), (" none ", []), ("1024,2048", [1024, 2048]),
                                        ("0x400,", [1024])])
def test_a_command_lines_buckets_parse_to_what_the_decoder_takes(text, want):
    assert parse_context_buckets(text) == want


@pytest.mark.parametrize("text", ["", ",", "6x", "Auto", "1024;2048"])
def test_a_command_lines_bad_buckets_say_what_they_take(text):
    with pytest.raises(ModelError, match="^expected auto, none or comma-separated context lengths$"):
        parse_context_buckets(text)


def test_buckets_share_duplicates_once_and_sort():
    assert [c.attended for c in bucket_configs(dataclasses.replace(CFG, max_context=256), [128, 64, 128])] == [64, 128]


def test_an_executable_allocates_no_memory_for_a_buffer_bound_before_its_first_launch():
    import vdir
    from vdir.frontend.examples import build_gemv

    exe = vdir.compile(build_gemv(64, 64, rows_per_tile=16, k_chunks=1), num_sms=2)
    sizes = []
    allocate = exe.platform.allocate
    exe.platform.allocate = lambda nbytes: (sizes.append(nbytes), allocate(nbytes))[1]
    w = np.asarray(np.random.default_rng(0).standard_normal((64, 64)), dtype=np.float32).astype(
        vdir.families.DTYPES["bf16"])
    x = np.asarray(np.random.default_rng(1).standard_normal((1, 64)), dtype=np.float32).astype(
        vdir.families.DTYPES["bf16"])
    exe.bind_buffer("w", w)
    y = exe(x=x)
    assert 64 * 64 * 2 not in sizes and sorted(sizes) == sorted([64 * 2, 64 * 2])  # x and y, not w
    want = (w.astype(np.float32) @ x.astype(np.float32).T).T
    assert np.allclose(y.astype(np.float32), want, rtol=2e-2, atol=2e-2)
    exe.close()


@gpu
def test_buckets_on_the_gpu_give_the_same_logits_bit_for_bit():
    weights = random_weights(CFG, seed=6)
    tokens = _tokens(BUCKET + 4)
    with LlamaDecoder(CFG, weights, backend="cuda") as decoder:
        want = teacher_forced_logits(decoder, tokens)
        want_tokens = decoder.generate(PROMPT, BUCKET).tokens
    with LlamaDecoder(CFG, weights, backend="cuda", context_buckets=[BUCKET]) as decoder:
        got = teacher_forced_logits(decoder, tokens)
        got_tokens = decoder.generate(PROMPT, BUCKET).tokens
    for pos, (g, w) in enumerate(zip(got, want, strict=True)):
        assert np.array_equal(g, w), f"logits at position {pos}"
    assert got_tokens == want_tokens


def test_vdir_generate_takes_context_buckets(capsys):
    from vdir.tools.vdir_generate import main as generate_main

    argv = ["--random", "tiny", "--max-context", "128", "--prompt", "1,2", "--tokens", "70", "--backend", "sim",
            "--no-progress"]
    assert generate_main(argv) == 0
    want = capsys.readouterr().out.splitlines()[0]
    assert generate_main([*argv, "--context-buckets", "64"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == want  # the same tokens, across the edge at 64
    assert any(line.startswith("compile: ") and line.endswith("; steps for 64, 128 positions") for line in out), out
    assert generate_main([*argv, "--context-buckets", "none"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == want


@pytest.mark.parametrize(
    "value, message",
    [
        ("48", "context bucket 48: a bucket is a context below the step's 128 positions in multiples of 64"),
        ("6x", "error: --context-buckets '6x': expected auto, none or comma-separated context lengths"),
        (",", "error: --context-buckets ',': expected auto, none or comma-separated context lengths"),
    ],
)
def test_vdir_generate_context_bucket_errors_are_one_line(value, message, capsys):
    from vdir.tools.vdir_generate import main as generate_main

    argv = ["--random", "tiny", "--max-context", "128", "--prompt", "1", "--backend", "sim", "--no-progress",
            "--context-buckets", value]
    assert generate_main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
