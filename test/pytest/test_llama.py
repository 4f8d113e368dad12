"""The Llama decode step end to end: one launch per token, the token fed back on the device.

On the simulator (with race checks) the tiny configs run token for token and
bit for bit against :class:`vdir.testing.llama.MirrorModel` (the families'
numpy semantics, op for op), past an attention-block boundary, and within a
bf16 tolerance of a float64 model without intermediate rounding. The GPU
test does the same on the cuda backend with a tolerance. Checkpoints, the
command line and every bad input are tested too.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from ml_dtypes import bfloat16

from vdir.analysis.graph import build_graph
from vdir.diagnostics import UserError
from vdir.families import FAMILIES
from vdir.frontend.layers import WEIGHT_TILE_BYTES, balanced_rows, chunks_for
from vdir.frontend.llama import (
    AUTO_CHUNKS,
    LlamaConfig,
    attention_block_for,
    build_decode_step,
    decode_tables,
    device_weights,
    head_row_order,
    rope_in_projection,
    weight_shapes,
)
from vdir.frontend.rope import Llama3Scaling, rope_tables
from vdir.models.llama import (
    NAMED_CONFIGS,
    LlamaDecoder,
    ModelError,
    bucket_configs,
    load_checkpoint,
    named_config,
    stack_weights,
)
from vdir.testing.gpu import gpu
from vdir.testing.llama import MirrorModel, ideal_logits, random_weights
from vdir.tools.vdir_generate import main as generate_main

#: worst |logit - float64 logit| / max |float64 logit| after 18 steps of bf16 rounding
IDEAL_TOLERANCE = 3e-2
#: steps of the simulator tests: past the first 16-row attention block
STEPS = 18
PROMPT = [3, 9, 141]


def teacher_forced(decoder: LlamaDecoder, mirror: MirrorModel, steps: int, backend: str) -> list[int]:
    """Run both step by step, the prompt then the mirror's own tokens; compare; return the tokens fed."""
    tokens = list(PROMPT)
    for pos in range(steps):
        decoder.step(pos, tokens[pos])
        want_token, want_logits = mirror.step(tokens[pos], pos)
        got_logits = decoder.logits()
        if backend == "sim":
            assert np.array_equal(got_logits.view(np.uint16), want_logits.view(np.uint16)), f"logits at {pos}"
            assert decoder.history(pos + 1)[pos] == want_token, f"token at {pos}"
        else:
            scale = float(np.abs(want_logits.astype(np.float32)).max())
            err = float(np.abs(got_logits.astype(np.float32) - want_logits.astype(np.float32)).max()) / scale
            assert err < 2e-2, f"logits at {pos}: relative error {err:.3g}"
            top2 = np.sort(want_logits.astype(np.float32)[0])[-2:]
            if top2[1] - top2[0] > 0.05 * scale:  # a clear winner: the device must pick it too
                assert decoder.history(pos + 1)[pos] == want_token, f"token at {pos}"
        if pos + 1 >= len(tokens):
            tokens.append(want_token)
    return tokens


#: the named configs, tiny with RoPE in the projection tiles, and tiny with each projection's own rows
#: (RoPE in 8-row q and k tiles, 32-row output tiles, 8-row gate, up and down tiles; 16 rows unless given)
SIM_CONFIGS = {**NAMED_CONFIGS, "tiny-rope-in-tiles": dataclasses.replace(NAMED_CONFIGS["tiny"], rope_in_tiles=True),
               "tiny-short-last-argmax": dataclasses.replace(NAMED_CONFIGS["tiny"], argmax_parts=3),
               "tiny-mixed-rows": NAMED_CONFIGS["tiny"].retiled(rope_in_tiles=True, qkv_rows=8, o_rows=32,
                                                                up_rows=8, down_rows=8),
               # the MLPs' down projections split along K: groups of 3 of the 32 activation tiles (the last 2)
               "tiny-split-k": NAMED_CONFIGS["tiny"].retiled(split_k_mlp=True, mlp_group=3),
               "tiny-qwen3-split-k": NAMED_CONFIGS["tiny-qwen3"].retiled(split_k_mlp=True)}


@pytest.mark.parametrize("name", ["tiny", "tiny-qwen3", "tiny-rope-in-tiles", "tiny-mixed-rows",
                                  "tiny-short-last-argmax", "tiny-split-k", "tiny-qwen3-split-k"])
def test_decode_matches_the_mirror_token_for_token_on_the_simulator(name):
    cfg = SIM_CONFIGS[name]
    weights = random_weights(cfg, seed=1)
    with LlamaDecoder(cfg, weights, backend="sim") as decoder:
        tokens = teacher_forced(decoder, MirrorModel(cfg, weights), STEPS, "sim")
        logits = decoder.logits().astype(np.float64)[0]
    ideal = ideal_logits(cfg, weights, tokens[:STEPS])[-1]
    assert np.abs(logits - ideal).max() / np.abs(ideal).max() < IDEAL_TOLERANCE


def test_generate_feeds_the_token_back_on_the_device():
    cfg = NAMED_CONFIGS["tiny"]
    weights = random_weights(cfg, seed=2)
    mirror = MirrorModel(cfg, weights)
    expected, token = [], PROMPT[0]
    for pos in range(len(PROMPT) + 3):
        token, _ = mirror.step(PROMPT[pos] if pos < len(PROMPT) else token, pos)
        if pos >= len(PROMPT) - 1:
            expected.append(token)
    with LlamaDecoder(cfg, weights, backend="sim") as decoder:
        result = decoder.generate(PROMPT, 4)
        assert result.tokens == expected and result.prompt == PROMPT and result.steps == len(PROMPT) + 3
        assert decoder.generate(PROMPT, 4).tokens == expected  # a new sequence starts from empty caches


def test_the_decoder_compiles_for_the_target_of_its_backends_device(monkeypatch):
    """A step compiled by the decoder is for the target the backend's device names (here a simulator
    made to say ``h100``: its stream holds, the same tokens), unless the pipeline names one; the
    simulator itself names none, and the step keeps its own (``h200``). (The CUDA backend's naming:
    ``test_target_device.py``.)"""
    from vdir.device_runtime.sim import SimPlatform

    cfg = NAMED_CONFIGS["tiny"]
    weights = random_weights(cfg, seed=2)
    assert SimPlatform.device_target() is None
    with LlamaDecoder(cfg, weights, backend="sim") as decoder:
        assert decoder.exe.program.target == "h200"
        tokens = decoder.generate(PROMPT, 3).tokens
    monkeypatch.setattr(SimPlatform, "device_target", classmethod(lambda cls: "h100"))
    with LlamaDecoder(cfg, weights, backend="sim") as decoder:
        assert decoder.exe.program.target == "h100" and decoder.generate(PROMPT, 3).tokens == tokens
    with LlamaDecoder(cfg, weights, backend="sim", pipeline="target=h200") as decoder:
        assert decoder.exe.program.target == "h200"


def _hf_tensors(cfg: LlamaConfig, weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Our stacked weights split back into Hugging-Face tensors (the layout a checkpoint has)."""
    from vdir.models.llama import _GLOBAL_TENSORS, _LAYER_TENSORS

    out = {}
    for name, array in weights.items():
        if name in _GLOBAL_TENSORS:
            out[_GLOBAL_TENSORS[name]] = array.reshape(-1) if name == "final_norm" else array
            continue
        rows = array.shape[0] // cfg.layers
        for layer in range(cfg.layers):
            part = array[layer * rows : (layer + 1) * rows]
            out[_LAYER_TENSORS[name].format(layer)] = part.reshape(-1) if rows == 1 else part
    return out


def _config_json(cfg: LlamaConfig) -> dict:
    return {"num_hidden_layers": cfg.layers, "hidden_size": cfg.hidden, "num_attention_heads": cfg.heads,
            "num_key_value_heads": cfg.kv_heads, "head_dim": cfg.head_dim, "intermediate_size": cfg.intermediate,
            "vocab_size": cfg.vocab, "rope_theta": cfg.rope_theta, "rms_norm_eps": cfg.eps,
            "tie_word_embeddings": cfg.tied_embeddings, "model_type": "qwen3" if cfg.qk_norm else "llama"}


@pytest.mark.parametrize("name", ["tiny", "tiny-qwen3"])
def test_a_checkpoint_loads_into_the_same_model(tmp_path, name):
    from safetensors.numpy import save_file

    cfg = NAMED_CONFIGS[name]
    weights = random_weights(cfg, seed=3)
    (tmp_path / "config.json").write_text(json.dumps(_config_json(cfg)))
    save_file(_hf_tensors(cfg, weights), str(tmp_path / "model.safetensors"))
    loaded_cfg, loaded = load_checkpoint(tmp_path, cfg.max_context, block=cfg.block)
    assert (loaded_cfg.layers, loaded_cfg.qk_norm, loaded_cfg.tied_embeddings) == (cfg.layers, cfg.qk_norm,
                                                                                    cfg.tied_embeddings)
    for key, array in weights.items():
        assert np.array_equal(loaded[key].view(np.uint16), array.view(np.uint16)), key


def test_stack_weights_consuming_its_tensors_gives_the_same_weights():
    """``consume=True`` (what load_checkpoint asks, so that a checkpoint is not held twice) drops every
    tensor it stacked from the caller's dict, and stacks the same bytes as without it."""
    cfg = NAMED_CONFIGS["tiny-qwen3"]
    tensors = _hf_tensors(cfg, random_weights(cfg, seed=5))
    kept = stack_weights(cfg, dict(tensors))
    spare = {"model.rotary_emb.inv_freq": np.ones(4, np.float32)}  # a tensor the step does not use
    consumed = {**tensors, **spare}
    stacked = stack_weights(cfg, consumed, consume=True)
    assert consumed.keys() == spare.keys()
    for key, array in kept.items():
        assert stacked[key].dtype == bfloat16 and np.array_equal(stacked[key].view(np.uint16), array.view(np.uint16))


def test_checkpoint_errors_name_the_tensor(tmp_path):
    from safetensors.numpy import save_file

    cfg = NAMED_CONFIGS["tiny"]
    tensors = _hf_tensors(cfg, random_weights(cfg, seed=4))
    (tmp_path / "config.json").write_text(json.dumps(_config_json(cfg)))
    missing = dict(tensors)
    del missing["model.layers.1.mlp.up_proj.weight"]
    save_file(missing, str(tmp_path / "model.safetensors"))
    with pytest.raises(ModelError, match="no tensor 'model.layers.1.mlp.up_proj.weight'"):
        load_checkpoint(tmp_path, cfg.max_context, block=cfg.block)
    bad = dict(tensors)
    bad["model.layers.0.self_attn.k_proj.weight"] = np.zeros((64, 256), bfloat16)
    with pytest.raises(ModelError, match="weight 'wk'"):
        stack_weights(cfg, bad)
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 256}))
    with pytest.raises(ModelError, match="config.json: missing key 'num_attention_heads'"):
        load_checkpoint(tmp_path, 64)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"heads": 6}, "heads = 6 is not a multiple of kv_heads = 4"),
        ({"head_dim": 96}, r"head_dim = 96 is not supported \(one of \(64, 128\)\)"),
        ({"max_context": 70}, "max_context = 70 is not a multiple of block = 16"),
        ({"max_context": 32}, r"max_context / block = 2 attention blocks, not a multiple of 4: the merge's f32 mask "
                              r"row would not be whole 16-byte rows"),
        ({"vocab": 500}, "vocab = 500 is not a multiple of the 16-row tile"),
        ({"layers": 0}, "layers must be a positive integer"),
        ({"down_chunks": -1}, "down_chunks must be a positive integer"),
        ({"logit_chunks": 3}, "hidden = 256 does not split into 3 equal chunks"),
        ({"vocab": 8192, "vocab_rows": 8192}, "logit_chunks: no equal split of K = 256 gives a 8192-row bf16 tile"),
        ({"vocab": 4100, "vocab_rows": 4}, r"vocab = 4100 logits are not whole 16-byte rows \(a multiple of 8\)"),
        ({"argmax_parts": 128}, "argmax_parts = 128: 127 parts of 8 logits .whole 16-byte rows. leave none of "
                                "vocab = 512 for the last"),
        ({"argmax_parts": 60}, "argmax_parts = 60: 59 parts of 16 logits"),
        ({"rope_in_tiles": "no"}, "rope_in_tiles must be true or false, got 'no'"),
    ],
)
def test_configs_that_do_not_fit_are_refused(change, message):
    base = dict(layers=2, hidden=256, heads=8, kv_heads=4, head_dim=64, intermediate=512, vocab=512, max_context=64,
                block=16)
    with pytest.raises(ValueError, match=message):
        LlamaConfig(**{**base, **change})


def test_bad_runs_are_refused_before_launch():
    cfg = NAMED_CONFIGS["tiny"]
    weights = random_weights(cfg, seed=5)
    with pytest.raises(ModelError, match=r"weight 'wq': expected shape \(512, 256\)"):
        LlamaDecoder(cfg, {**weights, "wq": weights["wq"][:256]})
    with pytest.raises(ModelError, match="missing weight"):
        LlamaDecoder(cfg, {k: v for k, v in weights.items() if k != "emb"})
    with LlamaDecoder(cfg, weights) as decoder:
        with pytest.raises(ModelError, match="token id 512 is outside the vocabulary of 512"):
            decoder.step(0, 512)
        with pytest.raises(ModelError, match="position 64 is past the compiled context of 64"):
            decoder.step(64)
        with pytest.raises(ModelError, match="need 66 positions; the step was compiled for 64"):
            decoder.generate([1, 2, 3], 64)
        with pytest.raises(ModelError, match="at least one token"):
            decoder.generate([], 4)
        # arguments of the wrong kind are named, not coerced ("123" was read as [1, 2, 3], 3.7 as 3)
        for prompt, message in (("123", "a sequence of token ids, not str"), (5, "not int"),
                                (np.array([[3, 9]]), "not ndarray of 2 dimensions"),
                                ([3.7, 9.2], "integers, got 3.7"), ([float("nan")], "integers, got nan")):
            with pytest.raises(ModelError, match=message):
                decoder.generate(prompt, 2)
        for tokens in (-100, 0, 2.5, "2", None):
            with pytest.raises(ModelError, match="how many to generate, at least 1"):
                decoder.generate([1, 2], tokens)
        with pytest.raises(ModelError, match="a callable"):
            decoder.generate([1, 2], 2, progress=5)
        with pytest.raises(ModelError, match="are integers, got '1' and None"):
            decoder.step("1")
        with pytest.raises(ModelError, match="0 or more"):
            decoder.history(-1)
        assert decoder.generate(np.array([3, 9]), 2).prompt == [3, 9]  # a 1-d array of ids is a prompt


def test_vdir_generate_command(tmp_path, capsys):
    out = tmp_path / "gen.json"
    assert generate_main(["--random", "tiny", "--prompt", "3,9,141", "--tokens", "3", "--backend", "sim",
                          "--json", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    data = json.loads(out.read_text())
    cfg = NAMED_CONFIGS["tiny"]
    with LlamaDecoder(cfg, random_weights(cfg, 0)) as decoder:
        assert data["tokens"] == decoder.generate(PROMPT, 3).tokens
    assert data["prompt"] == PROMPT and f"tokens: {','.join(map(str, data['tokens']))}" in printed
    assert "ms/token" in printed and data["ms_per_token"] > 0
    # the suite runs with the program cache off: the step was compiled
    assert data["compile_seconds"] > 0 and data["compile_cache_hit"] is False
    assert f"compile: {data['compile_seconds']:.2f} s\n" in printed
    assert data["target"] == "h200"  # the simulator runs the step's own target


def test_vdir_generate_with_flag_words_gives_the_same_tokens(capsys):
    """``--flag-words N``: the step's hand-off rows go through flag words (words alone: they are
    scratch); the greedy tokens are those of the default step."""
    argv = ["--random", "tiny", "--prompt", "3,9,141", "--tokens", "3", "--backend", "sim", "--no-progress"]
    assert generate_main(argv) == 0
    plain = capsys.readouterr().out.splitlines()[0]
    assert generate_main([*argv, "--flag-words", "4096"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == plain and plain.startswith("tokens: ")
    assert generate_main([*argv, "--pipeline", "flag-words=4096 prefetch=1"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == plain


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--random", "tiny", "--prompt", "1,x"], "--prompt '1,x': expected comma-separated integer token ids"),
        (["--random", "huge", "--prompt", "1"], "unknown config 'huge'"),
        (["--random", "tiny", "--prompt", "1", "--tokens", "0"], "--tokens 0: generate at least one token"),
        (["--random", "tiny", "--prompt", "600"], "token id 600 is outside the vocabulary of 512"),
        (["--weights", "/nonexistent-dir", "--prompt", "1"], "config.json"),
        (["--random", "tiny", "--prompt", "1", "--seed", "-1"], "--seed -1: a seed is a non-negative integer"),
        (["--random", "tiny", "--prompt", "1", "--flag-words", "-8"], "--flag-words -8: 0 (none) or a positive byte count"),
        (["--random", "tiny", "--prompt", "1", "--pipeline", "prefetch=-1"],
         "error: --pipeline: vdir-pipeline: option 'prefetch' must be at least 0, got -1"),
        (["--random", "tiny", "--prompt", "1", "--pipeline", "flag_wrds=64"],
         "error: --pipeline: unknown pipeline option 'flag_wrds' (known: target, num_sms, "),
        (["--random", "tiny", "--prompt", "1", "--pipeline", "flag-words=64", "--flag-words", "128"],
         "error: --pipeline: flag-words=128 and the pipeline option flag-words=64 disagree"),
        (["--random", "tiny", "--prompt", "1", "--max-micro-ops", "10"],
         "more than 10 micro-ops (the limit; --max-micro-ops raises it)"),
        (["--random", "tiny", "--prompt", "1", "--max-micro-ops", "0"],
         "--max-micro-ops: expected a positive integer, got '0'"),
    ],
)
def test_vdir_generate_errors_are_one_line(argv, message, capsys):
    assert generate_main([*argv, "--backend", "sim", "--no-progress"]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def test_vdir_generate_usage_and_config_errors_are_one_line(tmp_path, capsys):
    """A usage error was argparse's usage text and its error; a malformed config.json did not name the file."""
    assert generate_main(["--frobnicate"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("vdir-generate: error: ") and len(err.splitlines()) == 1, err
    bad = tmp_path / "config.json"
    bad.write_text("[1, 2")
    assert generate_main(["--random", str(bad), "--prompt", "1", "--backend", "sim", "--no-progress"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {bad}: Expecting ',' delimiter") and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(("settings", "message"), [
    ([1, 2], "expected a JSON object of the model's settings, got a list"),
    ({"hidden_size": 64, "num_attention_heads": 3, "num_hidden_layers": 1, "intermediate_size": 128,
      "vocab_size": 128}, "hidden_size 64 is not a multiple of num_attention_heads 3 (and no head_dim is given)"),
    ({"hidden_size": 64, "num_attention_heads": 0}, "hidden_size (64) and num_attention_heads (0) must be positive"),
    ({"hidden_size": 64, "num_attention_heads": 1, "rope_scaling": [1]}, "rope_scaling is a list, not an object"),
])
def test_vdir_generate_names_the_config_file_and_what_is_wrong_in_it(tmp_path, capsys, settings, message):
    """A config that is not an object, or whose heads do not divide its width, was an error about
    'config.json' (not the file given) from deep inside: 'list indices must be integers', 'no equal
    split of K = 63'."""
    path = tmp_path / "model.json"
    path.write_text(json.dumps(settings))
    assert generate_main(["--random", str(path), "--prompt", "1", "--backend", "sim", "--no-progress"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"error: {path}: {message}", err


def test_vdir_generate_checks_its_json_path_before_the_work(tmp_path, capsys):
    missing = tmp_path / "no-such-folder" / "out.json"
    assert generate_main(["--random", "tiny", "--prompt", "1", "--json", str(missing), "--backend", "sim",
                          "--no-progress"]) == 1
    assert capsys.readouterr().err.strip() == f"{missing}: error: --json: no such folder '{missing.parent}' (create it first)"


def test_vdir_generate_refuses_random_weights_the_host_cannot_hold(monkeypatch, capsys):
    """``--random`` with more weights than the host's available memory is a one-line error before any
    weight is made (it was the system's out-of-memory kill): the simulator counts twice, its buffers
    being host arrays; where the memory is not known, nothing is refused."""
    import vdir.tools.vdir_generate as generate
    from vdir.frontend.llama import weight_bytes

    tiny = NAMED_CONFIGS["tiny"]
    assert weight_bytes(NAMED_CONFIGS["llama-8b"]) == 2 * 8_030_261_248  # Llama-3.1-8B's published parameters
    monkeypatch.setattr(generate, "_available_host_bytes", lambda: weight_bytes(tiny) + 1)
    assert generate_main(["--random", "tiny", "--prompt", "1", "--backend", "sim", "--no-progress"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --random tiny: its weights are 0.0 GB, and the sim backend holds a second "
                          "copy: 0.0 GB of host memory needed, 0.0 GB available") and len(err.splitlines()) == 1, err
    generate._check_host_memory("tiny", tiny, "cuda", weight_bytes(tiny))  # one copy fits
    generate._check_host_memory("tiny", tiny, "sim", None)  # not known: no check
    with pytest.raises(UserError, match=r"--random llama-8b: its weights are 16\.1 GB: 16\.1 GB of host memory"):
        generate._check_host_memory("llama-8b", NAMED_CONFIGS["llama-8b"], "cuda", 8 * 10**9)


def test_random_weights_drawn_in_blocks_are_one_draw_of_each_tensor(monkeypatch):
    """Drawing a tensor's values block by block (so that no whole tensor's f32 copy is held) gives the
    weights one draw of the whole tensor gave: the benches' seeded weights are unchanged."""
    import vdir.testing.llama as testing_llama

    cfg = NAMED_CONFIGS["tiny-qwen3"]
    whole = random_weights(cfg, seed=3)  # every tensor of this shape in one block
    assert max(r * c for r, c in weight_shapes(cfg).values()) <= testing_llama.RANDOM_DRAW_VALUES
    monkeypatch.setattr(testing_llama, "RANDOM_DRAW_VALUES", 1000)  # several blocks per tensor
    blocked = random_weights(cfg, seed=3)
    assert blocked.keys() == whole.keys()
    for name, array in whole.items():
        assert blocked[name].dtype == bfloat16 and np.array_equal(blocked[name].view(np.uint16),
                                                                  array.view(np.uint16)), name


def test_chunk_counts_left_out_keep_weight_tiles_within_the_limit():
    # the Llama-3.2-1B and Llama-3.1-8B shapes, tiled as the bench does
    for hidden, heads, head_dim, inter, rows in ((2048, 32, 64, 8192, 16), (4096, 32, 128, 14336, 8)):
        cfg = LlamaConfig(layers=1, hidden=hidden, heads=heads, kv_heads=8, head_dim=head_dim, intermediate=inter,
                          vocab=128256, proj_rows=rows, vocab_rows=64, max_context=64, block=16)
        for chunks, r, k in ((cfg.down_chunks, rows, inter), (cfg.o_chunks, rows, heads * head_dim),
                             (cfg.logit_chunks, 64, hidden)):
            assert k % chunks == 0 and r * (k // chunks) * 2 <= WEIGHT_TILE_BYTES
            assert chunks == 1 or r * (k // (chunks - 1)) * 2 > WEIGHT_TILE_BYTES or k % (chunks - 1)
    assert (LlamaConfig(layers=1, hidden=2048, heads=32, kv_heads=8, head_dim=64, intermediate=8192, vocab=128256,
                        max_context=64, block=16).down_chunks == 4)
    assert chunks_for(16, 512, "k") == 1 and chunks_for(16, 4096, "k") == 2 and chunks_for(8, 14336, "k") == 4
    # a split whose rows are not whole 16-byte units is passed over, not the end of the search:
    # 24 -> 12 elements (24 bytes) fails, 24 -> 8 (16 bytes) fits
    assert chunks_for(1, 24, "k", tile_bytes=16) == 3
    assert LlamaConfig(layers=1, hidden=2048, heads=32, kv_heads=8, head_dim=64, intermediate=8192, vocab=128256,
                       max_context=64, block=16).argmax_parts == 16  # 8016 logits each
    assert NAMED_CONFIGS["tiny"].argmax_parts == 1
    # a vocabulary that no equal split of whole 16-byte rows covers within the limit (Qwen3's 151936 =
    # 8 x 18992, 18992 = 16 x 1187) ends in a shorter part instead of 1187 parts of 128 logits
    qwen = NAMED_CONFIGS["qwen3-1.7b"]
    assert (qwen.argmax_parts, qwen.argmax_width, qwen.argmax_last_width) == (19, 8000, 7936)
    assert (qwen.argmax_parts - 1) * qwen.argmax_width + qwen.argmax_last_width == qwen.vocab
    short = dataclasses.replace(NAMED_CONFIGS["tiny"], argmax_parts=3)
    assert (short.argmax_width, short.argmax_last_width) == (176, 160)


def test_the_short_last_argmax_part_is_its_own_micro_op():
    """Three parts of a 512-logit row: two of 176 in the repeat, one of 160 after it at 352."""
    from vdir.dialects import vdir as V
    from vdir.frontend.llama import weight_bytes

    module = build_decode_step(dataclasses.replace(NAMED_CONFIGS["tiny"], argmax_parts=3))
    loads = {op.result.name_hint: op for op in module.walk()
             if isinstance(op, V.LoadOp) and (op.result.name_hint or "").startswith("lgp")}
    assert sorted(loads) == ["lgp", "lgp_last"]
    assert loads["lgp"].result.type.sig.shape == (1, 176)
    assert loads["lgp_last"].result.type.sig.shape == (1, 160)
    assert list(loads["lgp_last"].static_offsets.get_values()) == [0, 352]
    assert NAMED_CONFIGS["qwen3-4b"].argmax_parts == 19
    assert weight_bytes(NAMED_CONFIGS["qwen3-4b"]) == 2 * 4_022_468_096  # Qwen3-4B's parameters, tied embeddings
    assert NAMED_CONFIGS["tiny"].o_chunks == 1 and dataclasses.replace(NAMED_CONFIGS["tiny"], o_chunks=4).o_chunks == 4


def test_the_down_projection_takes_half_rows_where_they_spread_more_evenly():
    """The 3B shape's 3072 down rows in 16-row tiles put two of 192 tiles on 60 of 132 SMs; in 8 rows
    at most three of 384 (24 rows, not 32): it takes 8. The 1B shape's 128 tiles fit one per SM, the
    8B shape's 256 go two to an SM either way: both keep their rows, as does a config that names them."""
    assert balanced_rows(3072, 16, 132) == 8 and balanced_rows(3072, 16, 200) == 16
    assert balanced_rows(2048, 16, 132) == 16  # 128 tiles: one per SM already
    assert balanced_rows(4096, 16, 132) == 16  # 2 x 16 rows against 4 x 8: level
    assert balanced_rows(3072, 8, 132) == 8  # 4-row tiles would not be whole bulk-copy units
    assert balanced_rows(3000, 16, 100) == 16  # 16 does not divide it: left to the tile check
    cfgs = NAMED_CONFIGS
    assert (cfgs["llama-3b"].down_rows, cfgs["llama-3b"].down_chunks, cfgs["llama-3b"].o_rows) == (8, 2, 16)
    assert cfgs["llama-1b"].down_rows == 16 and cfgs["llama-8b"].down_rows == 8 and cfgs["tiny"].down_rows == 16
    assert cfgs["llama-3b"].retiled(down_rows=16).down_chunks == 4


def test_retiled_chooses_again_the_chunk_counts_of_a_changed_field():
    """``retiled(proj_rows=16)`` of the 8B shape gives the K chunks a 16-row config would choose (its
    down and output tiles within the limit); ``dataclasses.replace`` keeps the 8-row ones."""
    cfg = NAMED_CONFIGS["llama-8b"]
    wide = cfg.retiled(proj_rows=16)
    fresh = dataclasses.replace(cfg, proj_rows=16, qkv_rows=AUTO_CHUNKS, o_rows=AUTO_CHUNKS, down_rows=AUTO_CHUNKS,
                                down_chunks=AUTO_CHUNKS, o_chunks=AUTO_CHUNKS)
    assert (wide.down_chunks, wide.o_chunks) == (fresh.down_chunks, fresh.o_chunks) == (7, 2)
    assert (wide.qkv_rows, wide.o_rows, wide.up_rows, wide.down_rows) == (16, 16, 16, 16)
    assert dataclasses.replace(cfg, proj_rows=16).down_chunks == cfg.down_chunks == 4
    assert cfg.retiled(proj_rows=16, down_chunks=14).down_chunks == 14  # named too: kept
    # one projection's rows: its own K chunks follow, the others' stay
    down_only = cfg.retiled(down_rows=16)
    assert (down_only.down_chunks, down_only.o_chunks, down_only.o_rows) == (7, cfg.o_chunks, 8)
    gate_up = cfg.retiled(up_rows=16)
    assert (gate_up.up_rows, gate_up.proj_rows, gate_up.down_rows, gate_up.down_chunks) == (16, 8, 8, 4)
    mixed = cfg.retiled(proj_rows=16, down_rows=8)
    assert (mixed.down_rows, mixed.down_chunks, mixed.o_rows, mixed.o_chunks) == (8, 4, 16, 2)
    assert cfg.retiled(block=64).down_chunks == cfg.down_chunks  # a field nothing follows


@pytest.mark.parametrize("name", ["tiny", "tiny-qwen3"])
def test_attention_blocks_read_the_cache_without_waiting_on_the_launch(name):
    """The blocks' K and V loads depend on nothing of the launch: the new position reaches the merge through
    its own rows (``attn_self``), not through the cache. Each append of a new row waits for every block's
    read of that layer's and kv head's cache rows."""
    cfg = NAMED_CONFIGS[name]
    graph = build_graph(build_decode_step(cfg))
    buffer = {a.name: i for i, a in enumerate(graph.args)}
    reads = [n for n in graph.nodes if n.kind == "load" and n.buffer in (buffer["kcache"], buffer["vcache"])]
    assert len(reads) == 2 * cfg.layers * cfg.kv_heads * cfg.blocks
    assert all(not n.deps for n in reads), [n.name for n in reads if n.deps]
    appends = [n for n in graph.nodes if n.kind == "store" and n.buffer in (buffer["kcache"], buffer["vcache"])]
    assert len(appends) == 2 * cfg.layers * cfg.kv_heads
    for append in appends:
        assert append.dyn is not None
        layer = append.dyn.const // cfg.max_context
        same_rows = {n.id for n in reads if n.buffer == append.buffer and n.col == append.col
                     and n.row // cfg.max_context == layer}
        waited = {p.id for group in append.deps for p in group}
        assert len(same_rows) == cfg.blocks and same_rows <= waited, append.name


@pytest.mark.parametrize(("head_dim", "proj_rows"), [(64, 16), (128, 8), (64, 64), (128, 2)])
def test_rope_in_tiles_is_the_models_rotation(head_dim, proj_rows):
    """Rotating each projection tile of a head in the step's row order, with the step's tables, gives the
    model's rotation of the whole head, in that order, bit for bit; q . k is the model's."""
    cfg = LlamaConfig(layers=1, hidden=256, heads=2, kv_heads=1, head_dim=head_dim, intermediate=256, vocab=512,
                      max_context=64, block=16, proj_rows=proj_rows, rope_scaling=Llama3Scaling(8.0, 1.0, 4.0, 64),
                      rope_in_tiles=True)
    assert rope_in_projection(cfg)
    order = head_row_order(cfg)
    assert sorted(order) == list(range(head_dim))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, head_dim), dtype=np.float32).astype(bfloat16)
    y = rng.standard_normal((1, head_dim), dtype=np.float32).astype(bfloat16)
    cos, sin = rope_tables(cfg.max_context, head_dim, cfg.rope_theta, cfg.rope_scaling)
    tables = decode_tables(cfg)
    for pos in (0, 1, 37, 63):
        whole = FAMILIES["rope"].run([x, cos[pos : pos + 1], sin[pos : pos + 1]], {}, "bf16")
        xs = x[:, order]
        tiles = [FAMILIES["rope"].run([xs[:, c : c + proj_rows], tables["rope_cos"][pos : pos + 1, c : c + proj_rows],
                                       tables["rope_sin"][pos : pos + 1, c : c + proj_rows]], {}, "bf16")
                 for c in range(0, head_dim, proj_rows)]
        assert np.concatenate(tiles, axis=1).tobytes() == whole[:, order].tobytes()
    assert float((x[:, order].astype(np.float64) * y[:, order]).sum()) == pytest.approx(
        float((x.astype(np.float64) * y).sum()), rel=1e-12)


def test_device_weights_permute_only_q_and_k_heads():
    cfg = SIM_CONFIGS["tiny-rope-in-tiles"]
    weights = random_weights(cfg, seed=2)
    dev = device_weights(cfg, weights)
    order = head_row_order(cfg)
    D = cfg.head_dim
    for name, heads in (("wq", cfg.layers * cfg.heads), ("wk", cfg.layers * cfg.kv_heads)):
        for h in range(heads):
            assert np.array_equal(dev[name][h * D : (h + 1) * D], weights[name][h * D + order])
    assert all(dev[k] is weights[k] for k in weights if k not in ("wq", "wk"))
    for whole in (NAMED_CONFIGS["tiny"], dataclasses.replace(NAMED_CONFIGS["tiny-qwen3"], rope_in_tiles=True)):
        # asked for whole heads, or QK-norm (which needs them): the model's order
        assert not rope_in_projection(whole) and np.array_equal(head_row_order(whole), np.arange(whole.head_dim))


def test_attention_block_left_out_is_the_largest_that_fits():
    # the blocks come in fours (the merge's f32 mask row is whole 16-byte units)
    assert [attention_block_for(c) for c in (64, 160, 1024, 4096, 32)] == [16, 40, 128, 128, 8]
    assert LlamaConfig(layers=1, hidden=256, heads=4, kv_heads=2, head_dim=64, intermediate=256, vocab=512,
                       max_context=1024).block == 128
    with pytest.raises(ValueError, match="max_context = 12 has no attention block"):
        attention_block_for(12)
    with pytest.raises(ValueError, match="max_context = 200 has no attention block .* into a multiple of 4 blocks"):
        attention_block_for(200)


def test_qwen3_heads_are_normed_and_rotated_in_one_micro_op():
    """vdir-fuse makes every QK-norm of a Qwen3 step one ``rmsnorm_rope`` with its rotation: the q heads of
    each kv head's blocks and of its merge, and its new k row (the norm's only user is the rotation)."""
    from xdsl.context import Context

    from vdir.dialects import vdir as V
    from vdir.transforms.fuse import FusePass

    cfg = NAMED_CONFIGS["tiny-qwen3"]
    module = build_decode_step(cfg)
    FusePass().apply(Context(), module)
    counts: dict[str, int] = {}
    for op in module.walk():
        if isinstance(op, V.ComputeOp):
            counts[op.family.data] = counts.get(op.family.data, 0) + 1
    assert counts["rmsnorm_rope"] == 3 * cfg.kv_heads
    assert "rmsnorm_rows" not in counts and "rope" not in counts


def test_weight_shapes_follow_the_config():
    cfg = NAMED_CONFIGS["tiny-qwen3"]
    shapes = weight_shapes(cfg)
    assert "lm_head" not in shapes and shapes["q_norm"] == (cfg.layers, cfg.head_dim)
    assert shapes["wo"] == (cfg.layers * cfg.hidden, cfg.heads * cfg.head_dim)
    assert math.prod(shapes["wk"]) == cfg.layers * cfg.kv_heads * cfg.head_dim * cfg.hidden


@gpu
@pytest.mark.parametrize("name", ["tiny", "tiny-qwen3"])
def test_decode_on_the_gpu_follows_the_mirror(name):
    """60 steps on the cuda backend (through all four attention blocks), teacher-forced, within tolerance."""
    cfg = NAMED_CONFIGS[name]
    weights = random_weights(cfg, seed=6)
    with LlamaDecoder(cfg, weights, backend="cuda") as decoder:
        teacher_forced(decoder, MirrorModel(cfg, weights), 60, "cuda")
        result = decoder.generate(PROMPT, 20)
    assert len(result.tokens) == 20 and all(0 <= t < cfg.vocab for t in result.tokens)


@gpu
def test_split_k_decode_on_the_gpu_follows_the_mirror():
    """The split-K MLP on the cuda backend: 60 teacher-forced steps within tolerance of the mirror, whose
    fixed-point sums are the device's in any order of the adds."""
    cfg = SIM_CONFIGS["tiny-split-k"]
    weights = random_weights(cfg, seed=7)
    with LlamaDecoder(cfg, weights, backend="cuda") as decoder:
        teacher_forced(decoder, MirrorModel(cfg, weights), 60, "cuda")


def test_split_k_keeps_the_models_weights_and_transposes_the_down_projection():
    """A split-K step takes the model's weights as they are (a checkpoint's layout); the step reads the down
    weights transposed, layer by layer, and its MLPs hand over no act row."""
    cfg = SIM_CONFIGS["tiny-split-k"]
    assert weight_shapes(cfg) == weight_shapes(NAMED_CONFIGS["tiny"])
    weights = random_weights(cfg, seed=2)
    on_device = device_weights(cfg, weights)
    assert "wd" not in on_device
    inter, hidden = cfg.intermediate, cfg.hidden
    for layer in range(cfg.layers):
        assert np.array_equal(on_device["wdt"][layer * inter:(layer + 1) * inter],
                              weights["wd"][layer * hidden:(layer + 1) * hidden].T)
    text = str(build_decode_step(cfg))
    assert "%act" not in text and "reduce add" in text and "fixed_add" in text
    with pytest.raises(ValueError, match="mlp_group must be a positive integer"):
        NAMED_CONFIGS["tiny"].retiled(split_k_mlp=True, mlp_group=-1)


#: the torch comparison's tolerance: a logit within this fraction of the step's largest |logit|
TORCH_LOGIT_TOLERANCE = 0.03


@gpu
@pytest.mark.parametrize("name", ["tiny", "tiny-qwen3"])
def test_decode_on_the_gpu_follows_a_plain_torch_step(name):
    """64 greedy steps (through all four attention blocks) against the same model in plain torch.

    vdir generates; torch runs teacher-forced on vdir's tokens. At every step
    the logits agree within TORCH_LOGIT_TOLERANCE of the largest, and torch
    picks vdir's token unless its own top two are closer than that.
    """
    pytest.importorskip("torch")
    from vdir.testing.torch_llama import TorchStep

    cfg = NAMED_CONFIGS[name]
    weights = random_weights(cfg, seed=9)
    steps = cfg.max_context  # 64: every attention block of the compiled context
    ref = TorchStep(cfg, weights)
    with LlamaDecoder(cfg, weights, backend="cuda") as decoder:
        tokens = [PROMPT[0], *decoder.generate(PROMPT[:1], steps).tokens]
        decoder.reset()
        for pos in range(steps):
            decoder.step(pos, tokens[pos])
            ref.step_at(pos, tokens[pos])
            got = decoder.logits().astype(np.float32)[0]
            want = ref.logits.float().cpu().numpy()[0]
            scale = float(np.abs(want).max())
            assert np.abs(got - want).max() <= TORCH_LOGIT_TOLERANCE * scale, f"step {pos}"
            top2 = np.sort(want)[-2:]
            if top2[1] - top2[0] > TORCH_LOGIT_TOLERANCE * scale:
                assert int(np.argmax(want)) == tokens[pos + 1], f"step {pos}: torch picks another token"


@pytest.mark.parametrize("max_context, block", [(None, 16), (64, 16), (128, 16), (32, 8), (96, 24)])
def test_named_config_keeps_or_chooses_the_block_for_a_new_context(max_context, block):
    """A named config's block stays where the new context splits into whole merge masks of it,
    else the config picks one that does (tiny: block 16, merge masks of 4 blocks)."""
    cfg = named_config("tiny", max_context)
    assert (cfg.max_context, cfg.block) == (max_context or NAMED_CONFIGS["tiny"].max_context, block)
    assert cfg.blocks % 4 == 0


@pytest.mark.parametrize("name, layers, hidden, head_dim",
                         [("llama-1b", 16, 2048, 64), ("llama-3b", 28, 3072, 128), ("llama-8b", 32, 4096, 128)])
def test_the_benched_shapes_are_named_configs(name, layers, hidden, head_dim):
    """``vdir-generate --random llama-1b`` builds the shape the decode benches time; a longer context keeps
    its 128-row attention block and gets the decoder's automatic bucket."""
    cfg = named_config(name)
    assert (cfg.layers, cfg.hidden, cfg.head_dim, cfg.max_context, cfg.block) == (layers, hidden, head_dim, 1024, 128)
    longer = named_config(name, 4096)
    assert (longer.max_context, longer.block) == (4096, 128)
    assert [c.attended for c in bucket_configs(longer, "auto")] == [2048]
    with pytest.raises(ModelError, match=r"unknown config 'llama-2b' \(named: tiny, tiny-qwen3, llama-1b, llama-3b, llama-8b, qwen3-0.6b, qwen3-1.7b, qwen3-4b;"):
        named_config("llama-2b")


@pytest.mark.parametrize("max_context", [16, 200])
def test_named_config_names_a_context_without_a_block(max_context):
    with pytest.raises(ValueError, match=rf"max_context = {max_context} has no attention block"):
        named_config("tiny", max_context)
