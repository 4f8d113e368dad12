"""``vdir-generate``'s inputs that a fuzzing run found mishandled: config settings of the wrong JSON type
or of an absurd size, config files that Python's JSON reader cannot take, empty paths, and ``--json``
files that could not be written, were written in part, or were an input.

Each is a one-line error naming the file (and the setting) and exit status 1, before the work where it
can be; none of these runs compiles a step.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from vdir.diagnostics import UserError
from vdir.frontend.layers import BULK_COPY_ALIGN, WEIGHT_TILE_BYTES, chunks_for
from vdir.models.llama import CONFIG_SIZE_LIMITS, NAMED_CONFIGS, config_from_json
from vdir.tools.common import write_text_whole
from vdir.tools.vdir_generate import main as generate_main

#: a config.json of the tiny shape, which every case below changes in one setting
TINY = {"hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
        "intermediate_size": 512, "vocab_size": 512, "num_hidden_layers": 2}


def generate_error(argv: list[str], capsys) -> str:
    """The one line ``vdir-generate argv`` prints on stderr, having exited with status 1."""
    assert generate_main([*argv, "--prompt", "1", "--tokens", "1", "--backend", "sim", "--no-progress"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def config_error(tmp_path, text: str, capsys) -> tuple[str, str]:
    """(the config file's path, the error of ``--random`` on a config of ``text``)."""
    path = tmp_path / "model.json"
    path.write_text(text)
    return str(path), generate_error(["--random", str(path)], capsys)


@pytest.mark.parametrize(("setting", "message"), [
    ({"hidden_size": float("inf")}, "hidden_size must be an integer, got Infinity"),
    ({"hidden_size": 256.7}, "hidden_size must be an integer, got 256.7"),
    ({"hidden_size": 256.0}, "hidden_size must be an integer, got 256.0"),
    ({"num_hidden_layers": True}, "num_hidden_layers must be an integer, got true"),
    ({"vocab_size": "512"}, 'vocab_size must be an integer, got "512"'),
    ({"num_key_value_heads": [2]}, "num_key_value_heads must be an integer, got an array"),
    ({"num_hidden_layers": None}, "missing key 'num_hidden_layers'"),
    ({"num_hidden_layers": -3}, "num_hidden_layers must be a positive integer, got -3"),
    ({"tie_word_embeddings": "false"}, 'tie_word_embeddings must be true or false, got "false"'),
    ({"tie_word_embeddings": 0}, "tie_word_embeddings must be true or false, got 0"),
    ({"model_type": ["qwen3"]}, "model_type must be a string, got an array"),
    ({"model_type": {"name": "qwen3"}}, "model_type must be a string, got an object"),
    ({"rope_theta": float("nan")}, "rope_theta must be a finite number, got NaN"),
    ({"rms_norm_eps": True}, "rms_norm_eps must be a finite number, got true"),
    ({"rope_theta": 10 ** 400}, "rope_theta must be a finite number, got " + "1" + "0" * 36 + "..."),
    ({"rope_scaling": {"rope_type": "llama3", "factor": "8", "low_freq_factor": 1, "high_freq_factor": 4,
                       "original_max_position_embeddings": 8192}},
     'rope_scaling.factor must be a finite number, got "8"'),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
                       "original_max_position_embeddings": 8192.5}},
     "rope_scaling.original_max_position_embeddings must be an integer, got 8192.5"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4}},
     "missing key 'rope_scaling.original_max_position_embeddings'"),
])
def test_a_setting_of_the_wrong_json_type_is_named(tmp_path, capsys, setting, message):
    """``Infinity`` was an internal OverflowError, 256.7 was read as 256, ``true`` as 1 layer, the string
    ``"false"`` as true (``bool("false")``), and a list as the model type."""
    path, err = config_error(tmp_path, json.dumps({**TINY, **setting}), capsys)
    assert err == f"error: {path}: {message}", err


@pytest.mark.parametrize(("setting", "value"), [
    ("intermediate_size", 1 << 50), ("hidden_size", 1 << 40), ("num_attention_heads", 1 << 34),
    ("vocab_size", 10 ** 4000), ("num_hidden_layers", CONFIG_SIZE_LIMITS["num_hidden_layers"] + 1),
])
def test_a_size_beyond_its_limit_is_refused_at_once(tmp_path, capsys, setting, value):
    """An intermediate size of 2**50 looped for minutes choosing the down projection's K chunks; a hidden
    size of 2**40 took a minute to reach a host-memory error."""
    path, err = config_error(tmp_path, json.dumps({**TINY, setting: value}), capsys)
    shown = str(value) if len(str(value)) <= 40 else f"{str(value)[:12]}... ({len(str(value))} digits)"
    assert err == (f"error: {path}: {setting} {shown} is beyond {CONFIG_SIZE_LIMITS[setting]:,}, the most this "
                   "reader takes (about 8 times the largest published model's)"), err


def test_the_size_limits_take_every_named_shape_and_the_sizes_at_the_limits():
    """The limits leave the shapes vdir runs far inside (each named config within an eighth of them), and a
    config at every limit at once is read (and fast: no size is searched through)."""
    for cfg in NAMED_CONFIGS.values():
        for setting, size in (("hidden_size", cfg.hidden), ("intermediate_size", cfg.intermediate),
                              ("vocab_size", cfg.vocab), ("num_hidden_layers", cfg.layers),
                              ("num_attention_heads", cfg.heads), ("num_key_value_heads", cfg.kv_heads),
                              ("head_dim", cfg.head_dim)):
            assert 8 * size <= CONFIG_SIZE_LIMITS[setting], (cfg.name, setting)
    widest = {**TINY, **{key: CONFIG_SIZE_LIMITS[key] for key in
                         ("hidden_size", "intermediate_size", "vocab_size", "num_hidden_layers")},
              "num_attention_heads": 1024, "num_key_value_heads": 1024, "head_dim": 128}
    cfg = config_from_json(widest, 256, source="widest.json")
    assert (cfg.hidden, cfg.intermediate, cfg.vocab) == (1 << 17, 1 << 19, 1 << 21)


def chunks_by_counting(rows: int, k: int, tile_bytes: int = WEIGHT_TILE_BYTES) -> int | None:
    """:func:`chunks_for` as it was: every chunk count from 1 up (None: no split fits)."""
    for chunks in range(1, k + 1):
        width = k // chunks
        if k % chunks == 0 and width * 2 % BULK_COPY_ALIGN == 0 and rows * width * 2 <= tile_bytes:
            return chunks
    return None


def test_chunks_for_picks_the_chunks_it_picked_by_counting():
    """``chunks_for`` searches the chunk widths that fit the tile rather than every count up to K (2**50
    of them for the fuzzed intermediate size), and picks the same count for every size of a grid,
    including those with no split (odd K, a tile smaller than one unit)."""
    for rows in (-1, 0, 1, 2, 3, 8, 16, 24, 64, 8192):
        for k in [*range(1, 600), 1000, 1024, 2047, 2048, 4096, 5120, 8192, 11008, 14336, 18944, 53248, 65536]:
            for tile_bytes in (16, 100, 4096, WEIGHT_TILE_BYTES, 2 * WEIGHT_TILE_BYTES):
                want = chunks_by_counting(rows, k, tile_bytes)
                if want is None:
                    with pytest.raises(ValueError, match=f"no equal split of K = {k} "):
                        chunks_for(rows, k, "k", tile_bytes)
                else:
                    assert chunks_for(rows, k, "k", tile_bytes) == want, (rows, k, tile_bytes)
    assert chunks_for(16, 1 << 50, "k") == 1 << 39  # at once: 2048-wide chunks


@pytest.mark.parametrize(("text", "message"), [
    ("[" * 100_000, "arrays or objects nested too deeply to read"),
    ('{"hidden_size": ' + "9" * 5000 + "}",
     "Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits"),
])
def test_a_config_json_cannot_read_is_named(tmp_path, capsys, text, message):
    """100,000 nested arrays were an internal RecursionError; a 5000-digit integer an error that named
    no file (and told to call ``sys.set_int_max_str_digits``)."""
    path, err = config_error(tmp_path, text, capsys)
    assert err == f"error: {path}: {message}", err
    (tmp_path / "config.json").write_text(text)  # the same from a checkpoint folder
    assert generate_error(["--weights", str(tmp_path)], capsys) == f"error: {tmp_path / 'config.json'}: {message}"


@pytest.mark.parametrize(("argv", "message"), [
    (["--weights", ""], "error: --weights: empty; give a checkpoint folder"),
    (["--random", ""], "error: --random: empty; give a named config or a config.json"),
    (["--random", "tiny", "--json", ""], "error: --json: empty; give the file to write"),
])
def test_an_empty_path_is_refused(capsys, argv, message):
    """``--weights ""`` was an internal TypeError; ``--json ""`` wrote nothing, silently."""
    assert generate_error(argv, capsys) == message


def test_json_naming_an_input_is_refused_before_the_work(tmp_path, capsys):
    """``--json`` naming the config or a checkpoint's file, by another spelling or a link, overwrote it."""
    config = tmp_path / "model.json"
    config.write_text(json.dumps(TINY))
    for out in (config, tmp_path / "." / "model.json"):
        assert generate_error(["--random", str(config), "--json", str(out)], capsys) == (
            f"{out}: error: --json: is the input {config}; name another file to write")
    assert json.loads(config.read_text()) == TINY
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text(json.dumps(TINY))
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    link = tmp_path / "link.json"
    link.symlink_to(checkpoint / "model.safetensors")
    for out, read in ((checkpoint / "config.json", "config.json"), (link, "model.safetensors")):
        assert generate_error(["--weights", str(checkpoint), "--json", str(out)], capsys) == (
            f"{out}: error: --json: is the input {checkpoint / read}; name another file to write")
    assert (checkpoint / "model.safetensors").read_bytes() == b"weights"


def test_a_json_file_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """A write that fails (a full disk, ``ulimit -f``) left an empty or partial file, and its error did not
    name it; now the old file stays, no temporary file is left, and the error names the file."""
    out = tmp_path / "out.json"
    out.write_text("old")
    out.chmod(0o640)
    write_text_whole(str(out), "--json", '{"tokens": [1]}')
    assert out.read_text() == '{"tokens": [1]}' and stat.S_IMODE(out.stat().st_mode) == 0o640
    link = tmp_path / "link.json"
    link.symlink_to(out)
    write_text_whole(str(link), "--json", "new")
    assert link.is_symlink() and out.read_text() == "new"

    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)  # the rename replaced_on_success ends with
    with pytest.raises(UserError, match=f"^{out}: error: --json: cannot write it: No space left on device$"):
        write_text_whole(str(out), "--json", "lost")
    assert out.read_text() == "new" and sorted(os.listdir(tmp_path)) == ["link.json", "out.json"]


def test_a_device_is_written_in_place_and_its_error_named():
    """``--json /dev/full`` said 'No space left on device' of no file; a device is not replaced by a file."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with pytest.raises(UserError, match="^/dev/full: error: --json: cannot write it: No space left on device$"):
        write_text_whole("/dev/full", "--json", "{}")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@pytest.mark.parametrize("prompt, message", [
    ("1,,2", "error: --prompt '1,,2': item 2 is empty"),
    ("1,2,", "error: --prompt '1,2,': item 3 is empty"),
    (" , ", "error: --prompt: give at least one token id"),
])
def test_an_empty_prompt_item_is_an_error_not_skipped(prompt, message, capsys):
    """``1,,2`` is likely a lost id: it was read as ``1,2``."""
    assert generate_main(["--random", "tiny", "--backend", "sim", "--no-progress", "--prompt", prompt]) == 1
    assert capsys.readouterr().err.strip() == message


@pytest.mark.parametrize("argv, message", [
    (["--prompt", "\u0663"], "error: --prompt '\u0663': expected comma-separated integer token ids"),
    (["--prompt", "1", "--tokens", "\u0663"], "vdir-generate: error: argument --tokens: '\u0663' is not an integer"),
    (["--prompt", "1", "--seed", "\u0663"], "vdir-generate: error: argument --seed: '\u0663' is not an integer"),
])
def test_integers_are_written_in_ascii(argv, message, capsys):
    """Python's int() reads '\u0663' (Arabic-Indic three) as 3; a command line takes ASCII digits only."""
    status = generate_main(["--random", "tiny", "--backend", "sim", "--no-progress", *argv])
    assert status in (1, 2) and capsys.readouterr().err.strip() == message
