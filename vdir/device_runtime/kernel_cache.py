"""A disk cache for the CUDA backend's kernel: PTX compiled once to a cubin, reused by later processes.

Loading PTX with ``cuModuleLoadData`` makes the driver JIT-compile it in every
process, which takes hundreds of milliseconds for the persistent kernel. This
module compiles the PTX to a cubin with the driver's linker (``cuLinkCreate``,
``cuLinkAddData``, ``cuLinkComplete``), stores the cubin on disk and loads it
from there next time.

An entry is keyed by the SHA-256 of the PTX text, the device's compute
capability, the driver version and :data:`CACHE_FORMAT_VERSION`, so a new
driver, another GPU generation or another kernel each get their own entry. The
directory is ``$VDIR_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/vdir/kernels``,
else ``~/.cache/vdir/kernels``; ``VDIR_KERNEL_CACHE=0`` turns the cache off
(the driver then JIT-compiles the PTX, as without a cache).

How entries are written, read and checked, and where the directory is, is
:mod:`vdir.disk_cache`'s (shared with the program cache): the cache never
makes a load fail, and concurrent processes see either a whole entry or none.

Everything but :func:`link_ptx`, :func:`device_key` and :func:`load_module`
is plain Python over bytes and paths; the compiler is a parameter
(``compile_ptx``), so the hit/miss logic, the key and the file format are
tested without a GPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vdir.disk_cache import CacheLocation, EntryFormat, EntryStore

#: Part of every key: raise it when the entry layout or the way cubins are produced changes,
#: so that entries written by an older vdir are never read as current ones.
CACHE_FORMAT_VERSION = 1
#: The environment variable naming the cache directory (used as is, no subdirectory added).
CACHE_DIR_ENV = "VDIR_CACHE_DIR"
#: The environment variable that turns the cache off when set to ``0``, ``false``, ``no`` or ``off``.
ENABLE_ENV = "VDIR_KERNEL_CACHE"
#: Where the kernel cache lives (:class:`vdir.disk_cache.CacheLocation`).
LOCATION = CacheLocation(CACHE_DIR_ENV, ENABLE_ENV, "kernels")
#: The first bytes of every entry file.
ENTRY_MAGIC = b"VDIRKERN"
#: An entry's file name is its key and this suffix (the file is a header and a cubin, not a bare cubin).
ENTRY_SUFFIX = ".kernel"
#: The entries' format: a header, then the cubin.
ENTRY_FORMAT = EntryFormat(ENTRY_MAGIC, CACHE_FORMAT_VERSION, ENTRY_SUFFIX, "compiled kernels")

CompilePtx = Callable[[str], bytes]


@dataclass(frozen=True)
class DeviceKey:
    """What, besides the PTX, decides which cubin the driver's compiler produces."""

    compute_capability: tuple[int, int]
    driver_version: int  # as ``cuDriverGetVersion`` gives it: 1000 * major + 10 * minor


def cache_key(ptx: str, device: DeviceKey) -> str:
    """The entry's key: the hex SHA-256 over the format version, the device key and the PTX text."""
    major, minor = device.compute_capability
    h = hashlib.sha256()
    h.update(f"vdir kernel cache {CACHE_FORMAT_VERSION}\0sm {major}.{minor}\0driver {device.driver_version}\0"
             .encode())
    h.update(ptx.encode())
    return h.hexdigest()


def cache_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """False when ``VDIR_KERNEL_CACHE`` is ``0`` (or ``false``, ``no``, ``off``); True otherwise."""
    return LOCATION.enabled(environ)


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$VDIR_CACHE_DIR``, else ``$XDG_CACHE_HOME/vdir/kernels``, else ``~/.cache/vdir/kernels``.

    Raises ``RuntimeError`` when none is set and the home directory cannot be found.
    """
    return LOCATION.directory(environ)


class KernelCache(EntryStore):
    """One cache directory of compiled kernels; ``directory`` None: caching is off (see the module
    docstring for where :meth:`from_environment` finds it). Reads and writes never raise
    (:class:`vdir.disk_cache.EntryStore`)."""

    FORMAT = ENTRY_FORMAT
    LOCATION = LOCATION


@dataclass(frozen=True)
class KernelImage:
    """What to hand ``cuModuleLoadData``: a cubin, or (cache off) the NUL-terminated PTX."""

    data: bytes
    cache_hit: bool


def kernel_image(ptx: str, device: DeviceKey, compile_ptx: CompilePtx, cache: KernelCache) -> KernelImage:
    """The image to load for ``ptx``: the cached cubin on a hit; on a miss ``compile_ptx(ptx)``,
    stored for next time; with the cache off, the PTX itself (the driver JIT-compiles it)."""
    if not cache.enabled:
        return KernelImage(ptx.encode() + b"\0", cache_hit=False)
    key = cache_key(ptx, device)
    cached = cache.read(key)
    if cached is not None:
        return KernelImage(cached, cache_hit=True)
    image = compile_ptx(ptx)
    cache.write(key, image)
    return KernelImage(image, cache_hit=False)


# -- the driver side (needs a GPU) ----------------------------------------------------------------

@dataclass(frozen=True)
class LoadedModule:
    """A module loaded into the current context, whether its cubin came from the cache, and the
    seconds the load took (cache lookup, compilation on a miss, ``cuModuleLoadData``)."""

    module: Any
    cache_hit: bool
    seconds: float


def link_ptx(ptx: str) -> bytes:
    """Compile ``ptx`` for the current context's device with the driver's linker; the cubin bytes."""
    from vdir.device_runtime.cuda import _check, _driver

    drv = _driver()
    data = ptx.encode() + b"\0"
    state = _check(drv.cuLinkCreate(0, [], []), "cuLinkCreate")
    try:
        _check(drv.cuLinkAddData(state, drv.CUjitInputType.CU_JIT_INPUT_PTX, data, len(data), b"vdir.ptx",
                                 0, [], []), "cuLinkAddData (PTX compile)")
        cubin, size = _check(drv.cuLinkComplete(state), "cuLinkComplete")
        # the image belongs to the link state: copy it out before the state is destroyed
        return ctypes.string_at(int(cubin), int(size))
    finally:
        drv.cuLinkDestroy(state)


def device_key(device: Any) -> DeviceKey:
    """The compute capability of ``device`` (a ``CUdevice``) and the driver's version."""
    from vdir.device_runtime.cuda import _check, _driver

    drv = _driver()
    attr = drv.CUdevice_attribute
    major = _check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
                   "cuDeviceGetAttribute")
    minor = _check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
                   "cuDeviceGetAttribute")
    return DeviceKey((int(major), int(minor)), int(_check(drv.cuDriverGetVersion(), "cuDriverGetVersion")))


def load_module(ptx: str, device: Any, cache: KernelCache | None = None) -> LoadedModule:
    """Load ``ptx`` into the current context through ``cache`` (None: the environment's).

    Raises :class:`~vdir.device_runtime.platform.PlatformError` if the driver
    refuses the PTX or the image.
    """
    from vdir.device_runtime.cuda import _check, _driver

    t0 = time.perf_counter()
    cache = KernelCache.from_environment() if cache is None else cache
    image = kernel_image(ptx, device_key(device), link_ptx, cache)
    what = "cuModuleLoadData (cubin)" if cache.enabled else "cuModuleLoadData (PTX JIT)"
    module = _check(_driver().cuModuleLoadData(image.data), what)
    return LoadedModule(module, image.cache_hit, time.perf_counter() - t0)
