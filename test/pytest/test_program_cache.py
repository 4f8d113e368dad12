"""The program cache (``vdir.program_cache``): a module compiled once, read back by later compiles.

What is checked: a miss compiles and stores, a hit returns the same program
without compiling; the key follows everything that decides the encoding
(module, options, limits, vdir's source) and nothing else; a damaged or
forged entry is a miss and is rewritten; a program with an op family from
outside vdir is never cached; the switch and an unwritable directory; and
``vdir.compile`` and a fresh process going through it.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import vdir
from vdir import disk_cache
from vdir import program_cache as pc
from vdir.families import DTYPES, FAMILIES, register_family
from vdir.frontend.examples import build_mlp_block
from vdir.isa import EncodedProgram
from vdir.limits import DEFAULT_LIMITS
from vdir.program_cache import ProgramCache, cached_compile, decode_program, encode_program, program_key
from vdir.transforms.pipeline import compile_to_encoded
from vdir.transforms.pipeline_options import PipelineOptions

REPO = Path(__file__).resolve().parents[2]
OPTIONS = PipelineOptions(num_sms=4)


@pytest.fixture(scope="module")
def module():
    return build_mlp_block(256, 512)


@pytest.fixture(scope="module")
def program(module) -> EncodedProgram:
    return compile_to_encoded(module, OPTIONS)


@pytest.fixture
def cache(tmp_path: Path) -> ProgramCache:
    """An empty cache in a directory that does not exist yet (the first write creates it)."""
    return ProgramCache(tmp_path / "programs")


class Compiler:
    """Stands in for the pipeline: returns ``program`` and counts its calls."""

    def __init__(self, program: EncodedProgram):
        self.program, self.calls = program, 0

    def __call__(self) -> EncodedProgram:
        self.calls += 1
        return self.program


def _same(a: EncodedProgram, b: EncodedProgram) -> None:
    assert np.array_equal(a.instrs, b.instrs) and a.queues == b.queues and a.buffers == b.buffers
    assert (a.num_sms, a.smem_bytes, a.num_counters, a.bitmap_bits, a.flag_word_bytes, a.target) == \
           (b.num_sms, b.smem_bytes, b.num_counters, b.bitmap_bits, b.flag_word_bytes, b.target)
    assert a.uop_names == b.uop_names and a.scalars == b.scalars


# -- hits and misses -----------------------------------------------------------------------------------------

def test_miss_compiles_and_stores_then_hits(module, program, cache):
    compiler = Compiler(program)
    first = cached_compile(module, OPTIONS, DEFAULT_LIMITS, compiler, cache)
    assert not first.cache_hit and compiler.calls == 1 and first.program is program
    second = cached_compile(module, OPTIONS, DEFAULT_LIMITS, compiler, cache)
    assert second.cache_hit and compiler.calls == 1
    _same(second.program, program)


def test_the_payload_round_trips_every_field(program):
    _same(decode_program(encode_program(program), DEFAULT_LIMITS), program)


def test_the_key_follows_what_decides_the_encoding(module, monkeypatch: pytest.MonkeyPatch):
    text = str(module)
    key = program_key(text, OPTIONS, DEFAULT_LIMITS)
    assert key == program_key(str(build_mlp_block(256, 512)), PipelineOptions(num_sms=4), DEFAULT_LIMITS)
    others = {
        program_key(str(build_mlp_block(256, 1024)), OPTIONS, DEFAULT_LIMITS),
        program_key(text, PipelineOptions(num_sms=4, flag_words=4096), DEFAULT_LIMITS),
        program_key(text, OPTIONS, DEFAULT_LIMITS.replace(max_micro_ops=1000)),
    }
    monkeypatch.setattr(pc, "source_digest", lambda: "another vdir")
    others.add(program_key(text, OPTIONS, DEFAULT_LIMITS))
    monkeypatch.setattr(pc, "CACHE_FORMAT_VERSION", pc.CACHE_FORMAT_VERSION + 1)
    others.add(program_key(text, OPTIONS, DEFAULT_LIMITS))
    assert key not in others and len(others) == 5


def test_the_source_digest_follows_every_python_file_of_the_tree(tmp_path: Path):
    """A file changed, added, removed or renamed anywhere below the root changes the digest; other files
    do not."""
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("A = 1\n")
    (tmp_path / "pkg" / "sub" / "b.py").write_text("B = 2\n")
    root = tmp_path / "pkg"
    seen = {pc.tree_digest(root)}
    (root / "sub" / "b.py").write_text("B = 3\n")
    seen.add(pc.tree_digest(root))
    (root / "sub" / "c.py").write_text("")
    seen.add(pc.tree_digest(root))
    (root / "sub" / "c.py").rename(root / "d.py")
    seen.add(pc.tree_digest(root))
    assert len(seen) == 4
    (root / "notes.txt").write_text("not code")
    assert pc.tree_digest(root) in seen and pc.tree_digest(root, "salt") not in seen
    digest = pc.source_digest()  # vdir's own: every module, this one among them
    assert len(digest) == 64 and digest == pc.source_digest()


# -- damaged and forged entries --------------------------------------------------------------------------------

def _flip_last(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 1])


@pytest.mark.parametrize("damage", [lambda d: d[:-5], _flip_last, lambda d: b"", lambda d: d + b"\0"])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(module, program, cache, damage):
    compiler = Compiler(program)
    cached_compile(module, OPTIONS, DEFAULT_LIMITS, compiler, cache)
    (entry,) = cache.directory.iterdir()
    entry.write_bytes(damage(entry.read_bytes()))
    assert not cached_compile(module, OPTIONS, DEFAULT_LIMITS, compiler, cache).cache_hit
    assert compiler.calls == 2 and cached_compile(module, OPTIONS, DEFAULT_LIMITS, compiler, cache).cache_hit


def test_a_forged_entry_with_a_valid_checksum_is_a_miss(module, program, cache):
    """The entry's checksum only says it is whole; the program in it is checked as an untrusted one."""
    forged = dataclasses.replace(program, instrs=program.instrs.copy())
    forged.instrs[:, :] = 0xFFFFFFFF  # no engine runs these opcodes
    key = program_key(str(module), OPTIONS, DEFAULT_LIMITS)
    assert cache.write(key, encode_program(forged))
    assert decode_program(cache.read(key) or b"", DEFAULT_LIMITS) is None
    result = cached_compile(module, OPTIONS, DEFAULT_LIMITS, Compiler(program), cache)
    assert not result.cache_hit and result.program is program


def test_a_payload_that_is_not_one_reads_as_none():
    for payload in (b"", b"\x05\0\0\0{bad}", b"\x02\0\0\0{}" + b"\0" * 8):
        assert decode_program(payload, DEFAULT_LIMITS) is None


# -- what is not cached, switches, directories ----------------------------------------------------------------

def test_a_program_with_a_family_from_outside_vdir_is_not_cached(module, program, cache):
    own = dataclasses.replace(FAMILIES["add"], name="add_elsewhere", opcode=0xFE)
    with register_family(own):
        assert not pc.only_vdir_families()
        compiler = Compiler(program)
        for _ in range(2):
            assert not cached_compile(module, OPTIONS, DEFAULT_LIMITS, compiler, cache).cache_hit
        assert compiler.calls == 2 and not cache.directory.exists()
    assert pc.only_vdir_families()


@pytest.mark.parametrize("value", ["0", "false", "OFF", " no "])
def test_the_switch_turns_the_cache_off(tmp_path: Path, value: str):
    cache = ProgramCache.from_environment({pc.ENABLE_ENV: value, pc.CACHE_DIR_ENV: str(tmp_path / "p")})
    assert not cache.enabled


def test_cache_directory_precedence(tmp_path: Path):
    home = {"HOME": str(tmp_path / "home")}
    assert ProgramCache.from_environment(home).directory == tmp_path / "home" / ".cache" / "vdir" / "programs"
    xdg = {**home, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert ProgramCache.from_environment(xdg).directory == tmp_path / "xdg" / "vdir" / "programs"
    assert ProgramCache.from_environment({**xdg, pc.CACHE_DIR_ENV: str(tmp_path / "mine")}).directory == \
           tmp_path / "mine"


def test_an_unwritable_directory_only_disables_caching(tmp_path: Path, module, program):
    (tmp_path / "file").write_text("not a directory")
    cache = ProgramCache(tmp_path / "file" / "programs")
    compiler = Compiler(program)
    with pytest.warns(RuntimeWarning, match="cannot write") as warned:
        for _ in range(2):
            assert cached_compile(module, OPTIONS, DEFAULT_LIMITS, compiler, cache).program is program
    assert len(warned) == 1 and compiler.calls == 2


def test_a_failed_write_leaves_no_temporary_file(cache, module, program, monkeypatch: pytest.MonkeyPatch):
    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(disk_cache.os, "replace", refuse)
    with pytest.warns(RuntimeWarning, match="Permission denied"):
        cached_compile(module, OPTIONS, DEFAULT_LIMITS, Compiler(program), cache)
    assert cache.directory is not None and list(cache.directory.iterdir()) == []


# -- through vdir.compile ----------------------------------------------------------------------------------------

def test_vdir_compile_reads_what_an_earlier_compile_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The cached program runs as the compiled one does (the simulator, the same numbers)."""
    monkeypatch.setenv(pc.ENABLE_ENV, "1")
    monkeypatch.setenv(pc.CACHE_DIR_ENV, str(tmp_path))
    rng = np.random.default_rng(7)
    first = vdir.compile(build_mlp_block(256, 512), num_sms=4)
    inputs = {b.name: rng.standard_normal(b.shape).astype(DTYPES[b.dtype]) for b in first.program.buffers
              if b.is_input}
    (entry,) = tmp_path.iterdir()
    stamp = entry.stat().st_mtime_ns
    second = vdir.compile(build_mlp_block(256, 512), num_sms=4)
    assert first.compile_cache_hit is False and second.compile_cache_hit is True
    assert first.compile_seconds is not None and second.compile_seconds is not None
    assert vdir.compile(first.program).compile_cache_hit is None  # an encoded program is not compiled
    assert entry.stat().st_mtime_ns == stamp and len(list(tmp_path.iterdir())) == 1  # read, not written again
    _same(second.program, first.program)
    want, got = first(**inputs), second(**inputs)  # the outputs by name
    assert want.keys() == got.keys() and all(np.array_equal(want[k], got[k]) for k in want)
    assert all(np.isfinite(np.asarray(v, dtype=np.float32)).all() for v in want.values())
    vdir.compile(build_mlp_block(256, 512), num_sms=4, pipeline="flag-words=4096")
    assert len(list(tmp_path.iterdir())) == 2  # other options: another entry


def test_a_second_process_hits(tmp_path: Path):
    """Two fresh interpreters compile the same module: the first stores, the second reads."""
    script = textwrap.dedent("""
        import time, vdir
        from vdir.frontend.examples import build_mlp_block
        from vdir.program_cache import ProgramCache, cached_compile
        from vdir.transforms.pipeline import compile_to_encoded
        from vdir.transforms.pipeline_options import PipelineOptions
        from vdir.limits import current_limits
        m, o = build_mlp_block(256, 512), PipelineOptions(num_sms=4)
        r = cached_compile(m, o, current_limits(), lambda: compile_to_encoded(m, o))
        print("hit" if r.cache_hit else "miss", len(r.program.instrs))
    """)
    env = {**os.environ, pc.CACHE_DIR_ENV: str(tmp_path), pc.ENABLE_ENV: "1"}
    runs = [subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                           check=True).stdout.split() for _ in range(2)]
    assert [r[0] for r in runs] == ["miss", "hit"] and runs[0][1] == runs[1][1]
