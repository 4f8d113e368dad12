"""The CUDA kernel's disk cache (``vdir.device_runtime.kernel_cache``).

The cache logic (key, location, entry format, hit and miss, damaged entries,
an unwritable directory, concurrent writers) runs on the CPU with a fake
compiler that records its calls. The tests marked ``gpu`` compile through
the driver's linker and load a real program in two fresh processes sharing
one cache directory: the second must hit and compute the same numbers.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16

from vdir import disk_cache
from vdir.device_runtime import kernel_cache as kc
from vdir.device_runtime.kernel_cache import DeviceKey, KernelCache, cache_key, kernel_image

REPO = Path(__file__).resolve().parents[2]
PTX = ".version 8.0\n.target sm_90a\n.visible .entry k()\n{\n\tret;\n}\n"
H200 = DeviceKey((9, 0), 13000)


def fake_cubin(ptx: str) -> bytes:
    """What :class:`FakeCompiler` makes of ``ptx``."""
    return b"\x7fELF fake cubin of " + ptx.encode()


class FakeCompiler:
    """Stands in for the driver's linker: :func:`fake_cubin`, and a log of the PTX it was given."""

    def __init__(self):
        self.calls: list[str] = []

    def __call__(self, ptx: str) -> bytes:
        self.calls.append(ptx)
        return fake_cubin(ptx)


@pytest.fixture
def cache(tmp_path: Path) -> KernelCache:
    """An empty cache in a directory that does not exist yet (the first write creates it)."""
    return KernelCache(tmp_path / "kernels")


# -- hits and misses ---------------------------------------------------------------------------------

def test_miss_compiles_and_stores_then_hits(cache: KernelCache):
    compiler = FakeCompiler()
    first = kernel_image(PTX, H200, compiler, cache)
    assert not first.cache_hit and compiler.calls == [PTX]
    entry = cache.path_for(cache_key(PTX, H200))
    assert entry.is_file() and stat.S_IMODE(entry.stat().st_mode) == 0o644
    second = kernel_image(PTX, H200, compiler, cache)
    assert second.cache_hit and second.data == first.data == fake_cubin(PTX)
    assert compiler.calls == [PTX]  # the hit compiled nothing


def test_a_fresh_cache_object_on_the_same_directory_hits(cache: KernelCache):
    """What a second process sees: only the directory is shared."""
    kernel_image(PTX, H200, FakeCompiler(), cache)
    compiler = FakeCompiler()
    image = kernel_image(PTX, H200, compiler, KernelCache(cache.directory))
    assert image.cache_hit and compiler.calls == []


@pytest.mark.parametrize("other", [
    pytest.param((PTX + "// changed\n", H200), id="ptx"),
    pytest.param((PTX, DeviceKey((10, 0), 13000)), id="major"),
    pytest.param((PTX, DeviceKey((9, 1), 13000)), id="minor"),
    pytest.param((PTX, DeviceKey((9, 0), 13010)), id="driver"),
])
def test_key_changes_with_ptx_device_and_driver(cache: KernelCache, other: tuple[str, DeviceKey]):
    ptx, device = other
    assert cache_key(ptx, device) != cache_key(PTX, H200)
    kernel_image(PTX, H200, FakeCompiler(), cache)
    compiler = FakeCompiler()
    image = kernel_image(ptx, device, compiler, cache)
    assert not image.cache_hit and compiler.calls == [ptx]


def test_key_is_stable_and_changes_with_the_format_version(monkeypatch: pytest.MonkeyPatch):
    key = cache_key(PTX, H200)
    assert key == cache_key(PTX, DeviceKey((9, 0), 13000)) and len(key) == 64 and int(key, 16) >= 0
    monkeypatch.setattr(kc, "CACHE_FORMAT_VERSION", kc.CACHE_FORMAT_VERSION + 1)
    assert cache_key(PTX, H200) != key


# -- the entry format ------------------------------------------------------------------------------------

def test_entry_round_trip_and_header():
    key = cache_key(PTX, H200)
    entry = kc.ENTRY_FORMAT.encode(key, b"cubin bytes")
    assert entry.startswith(kc.ENTRY_MAGIC) and entry.endswith(b"cubin bytes")
    assert kc.ENTRY_FORMAT.decode(key, entry) == b"cubin bytes"
    assert kc.ENTRY_FORMAT.decode(cache_key(PTX + " ", H200), entry) is None  # another key's entry


def _truncate(entry: bytes) -> bytes:
    return entry[:-3]


def _flip_payload_byte(entry: bytes) -> bytes:
    return entry[:-1] + bytes([entry[-1] ^ 0x01])


def _bad_magic(entry: bytes) -> bytes:
    return b"NOTVDIR!" + entry[8:]


def _extra_bytes(entry: bytes) -> bytes:
    return entry + b"\0"


def _header_only(entry: bytes) -> bytes:
    return entry[:10]


def _empty(entry: bytes) -> bytes:
    return b""


def _old_format(entry: bytes) -> bytes:
    return entry[:8] + (kc.CACHE_FORMAT_VERSION + 1).to_bytes(4, "little") + entry[12:]


@pytest.mark.parametrize("damage", [_truncate, _flip_payload_byte, _bad_magic, _extra_bytes, _header_only, _empty,
                                    _old_format])
def test_damaged_entry_is_a_miss_and_is_rewritten(cache: KernelCache, damage):
    compiler = FakeCompiler()
    kernel_image(PTX, H200, compiler, cache)
    path = cache.path_for(cache_key(PTX, H200))
    path.write_bytes(damage(path.read_bytes()))
    image = kernel_image(PTX, H200, compiler, cache)
    assert not image.cache_hit and image.data == fake_cubin(PTX) and compiler.calls == [PTX, PTX]
    assert kc.ENTRY_FORMAT.decode(cache_key(PTX, H200), path.read_bytes()) == image.data  # rewritten whole
    assert kernel_image(PTX, H200, compiler, cache).cache_hit


def test_entry_of_another_key_under_this_name_is_a_miss(cache: KernelCache):
    kernel_image(PTX + "// other\n", H200, FakeCompiler(), cache)
    other = cache.path_for(cache_key(PTX + "// other\n", H200))
    other.rename(cache.path_for(cache_key(PTX, H200)))
    assert not kernel_image(PTX, H200, FakeCompiler(), cache).cache_hit


# -- location and switches ------------------------------------------------------------------------------------

def test_cache_directory_precedence(tmp_path: Path):
    home = {"HOME": str(tmp_path / "home")}
    assert kc.default_cache_dir(home) == tmp_path / "home" / ".cache" / "vdir" / "kernels"
    xdg = {**home, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert kc.default_cache_dir(xdg) == tmp_path / "xdg" / "vdir" / "kernels"
    assert kc.default_cache_dir({**xdg, "VDIR_CACHE_DIR": str(tmp_path / "mine")}) == tmp_path / "mine"
    assert kc.default_cache_dir({**home, "XDG_CACHE_HOME": "", "VDIR_CACHE_DIR": ""}) == kc.default_cache_dir(home)


@pytest.mark.parametrize("value", ["0", "false", "OFF", " no "])
def test_env_var_turns_the_cache_off(tmp_path: Path, value: str):
    env = {"VDIR_KERNEL_CACHE": value, "VDIR_CACHE_DIR": str(tmp_path / "kernels")}
    assert not kc.cache_enabled(env)
    cache = KernelCache.from_environment(env)
    compiler = FakeCompiler()
    image = kernel_image(PTX, H200, compiler, cache)
    assert not cache.enabled and not image.cache_hit
    assert image.data == PTX.encode() + b"\0"  # the driver JIT-compiles the PTX, as without a cache
    assert compiler.calls == [] and not (tmp_path / "kernels").exists()


@pytest.mark.parametrize("value", [None, "", "1", "yes"])
def test_cache_is_on_by_default(tmp_path: Path, value: str | None):
    env = {"VDIR_CACHE_DIR": str(tmp_path / "kernels")}
    if value is not None:
        env["VDIR_KERNEL_CACHE"] = value
    cache = KernelCache.from_environment(env)
    assert cache.enabled and cache.directory == tmp_path / "kernels"


# -- an unwritable directory ----------------------------------------------------------------------------------

def test_unwritable_directory_only_disables_caching(tmp_path: Path):
    """The directory's parent is a plain file, so it cannot be created (whoever runs the test)."""
    (tmp_path / "file").write_text("not a directory")
    cache = KernelCache(tmp_path / "file" / "kernels")
    compiler = FakeCompiler()
    with pytest.warns(RuntimeWarning, match="cannot write") as warned:
        first = kernel_image(PTX, H200, compiler, cache)
        second = kernel_image(PTX, H200, compiler, cache)
    assert len(warned) == 1  # one warning, then writing is off
    assert not first.cache_hit and not second.cache_hit and first.data == second.data == fake_cubin(PTX)
    assert compiler.calls == [PTX, PTX]


def test_failed_write_leaves_no_temporary_file(cache: KernelCache, monkeypatch: pytest.MonkeyPatch):
    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(disk_cache.os, "replace", refuse)
    with pytest.warns(RuntimeWarning, match="Permission denied"):
        assert not kernel_image(PTX, H200, FakeCompiler(), cache).cache_hit
    assert cache.directory is not None and list(cache.directory.iterdir()) == []


def test_unreadable_entry_is_a_miss(cache: KernelCache):
    """An entry path that cannot be read as a file (here a directory) reads as a miss, not an error."""
    path = cache.path_for(cache_key(PTX, H200))
    path.mkdir(parents=True)
    assert cache.read(cache_key(PTX, H200)) is None


# -- concurrent writers ---------------------------------------------------------------------------------------

def test_concurrent_writers_and_readers_see_whole_entries(cache: KernelCache):
    """Writers replace the entry with different (large) images while readers read it: every read is
    None or one whole image, and no temporary file is left behind."""
    key = cache_key(PTX, H200)
    images = [bytes([i]) * (1 << 20) for i in range(8)]
    seen: list[bytes | None] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def write(image: bytes):
        try:
            for _ in range(5):
                assert KernelCache(cache.directory).write(key, image)
        except BaseException as e:  # noqa: BLE001 -- reported by the main thread
            errors.append(e)

    def read():
        while not stop.is_set():
            seen.append(KernelCache(cache.directory).read(key))

    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=write, args=(image,)) for image in images]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert errors == []
    assert all(s is None or s in images for s in seen)
    assert cache.read(key) in images
    assert cache.directory is not None and [p.name for p in cache.directory.iterdir()] == [f"{key}{kc.ENTRY_SUFFIX}"]


# -- on a GPU --------------------------------------------------------------------------------------------------

def _cuda_status() -> tuple[bool, str]:
    from vdir.device_runtime.cuda import CudaPlatform

    return CudaPlatform.is_available()


@pytest.fixture(scope="module")
def gpu():
    """Skips the test without a usable GPU."""
    ok, why = _cuda_status()
    if not ok:
        pytest.skip(f"cuda backend unavailable: {why}")


#: one process's run of a small gemv through ``vdir.compile``: argv[1] the inputs (npz of the bf16
#: bits: numpy files cannot name bf16), argv[2] where to save y (f32); prints the artifact's cache
#: facts as JSON
_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from ml_dtypes import bfloat16
    import vdir
    from vdir.frontend.examples import build_gemv

    data = np.load(sys.argv[1])
    w, x = data["w"].view(bfloat16), data["x"].view(bfloat16)
    with vdir.compile(build_gemv(*w.shape, rows_per_tile=8, k_chunks=2), backend="cuda", num_sms=4) as exe:
        np.save(sys.argv[2], np.asarray(exe(w, x), dtype=np.float32))
        art = exe.artifact
        print(json.dumps({"cache_hit": art.cache_hit, "load_seconds": art.load_seconds}))
""")


def _run_child(tmp_path: Path, cache_dir: Path, run: str, **env: str) -> tuple[dict, np.ndarray]:
    """Run :data:`_CHILD` in a fresh interpreter with the cache in ``cache_dir``; (its JSON, y)."""
    child_env = {k: v for k, v in os.environ.items() if k != "VDIR_KERNEL_CACHE"}
    child_env.update(VDIR_CACHE_DIR=str(cache_dir), PYTHONPATH=os.pathsep.join(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]), **env)
    out = tmp_path / f"y_{run}.npy"
    r = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "inputs.npz"), str(out)], env=child_env,
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{run} run failed:\n{r.stdout}\n{r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1]), np.load(out)


@pytest.mark.gpu
def test_second_process_hits_and_computes_the_same(gpu, tmp_path: Path):
    from vdir.testing.compare import allowed_error

    M, K = 64, 512
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((M, K)) * K ** -0.5).astype(bfloat16)
    x = rng.standard_normal((1, K)).astype(bfloat16)
    np.savez(tmp_path / "inputs.npz", w=w.view(np.uint16), x=x.view(np.uint16))
    ref = x.astype(np.float32) @ w.astype(np.float32).T
    cache_dir = tmp_path / "kernels"

    cold, y_cold = _run_child(tmp_path, cache_dir, "cold")
    entries = list(cache_dir.glob(f"*{kc.ENTRY_SUFFIX}"))
    warm, y_warm = _run_child(tmp_path, cache_dir, "warm")
    off, y_off = _run_child(tmp_path, tmp_path / "unused", "off", VDIR_KERNEL_CACHE="0")

    assert not cold["cache_hit"] and len(entries) == 1
    assert warm["cache_hit"] and list(cache_dir.glob(f"*{kc.ENTRY_SUFFIX}")) == entries
    assert not off["cache_hit"] and not (tmp_path / "unused").exists()
    for run, y in (("cold", y_cold), ("warm", y_warm), ("cache off", y_off)):
        err = np.abs(y - ref)
        assert np.all(err <= allowed_error(ref, "cuda")), f"{run}: max error {err.max()}"


@pytest.mark.gpu
def test_linker_makes_a_cubin_the_driver_loads(gpu, tmp_path: Path):
    from vdir.device_runtime.cuda import CudaPlatform, _driver
    from vdir.device_runtime.kernel_cache import load_module
    from vdir.frontend.examples import build_gemv
    from vdir.lowering.emit import lower
    from vdir.transforms.pipeline import compile_to_encoded

    plat = CudaPlatform()
    try:
        program = compile_to_encoded(build_gemv(64, 512, rows_per_tile=8, k_chunks=2), num_sms=4)
        ptx = lower(program.without_loops(), plat.target()).ptx
        cache = KernelCache(tmp_path)
        first = load_module(ptx, plat._dev, cache)
        second = load_module(ptx, plat._dev, cache)
        assert not first.cache_hit and second.cache_hit and first.seconds > 0 and second.seconds > 0
        (entry,) = tmp_path.glob(f"*{kc.ENTRY_SUFFIX}")
        image = kc.ENTRY_FORMAT.decode(entry.stem, entry.read_bytes())
        assert image is not None and image.startswith(b"\x7fELF")  # a cubin is an ELF file
        for loaded in (first, second):
            _driver().cuModuleUnload(loaded.module)
    finally:
        plat.close()
