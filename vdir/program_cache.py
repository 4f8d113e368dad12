"""A disk cache of compiled programs: the pass pipeline's encoding of a module, reused by later processes.

``vdir.compile`` (and so ``LlamaDecoder`` and ``vdir-generate``) compiles a
module through the pass pipeline, which takes seconds for a model's decode
step (the 1B step about 3 s, the 8B step about 15 s on a 2-core machine).
The encoding depends only on what the key covers, so a later process that
compiles the same module the same way reads it from here instead:

* the module as text (its printed form, which the parser reads back to the
  same program);
* the pipeline's options (:class:`~vdir.transforms.pipeline_options.PipelineOptions`)
  and the limits in effect (:func:`vdir.limits.current_limits`);
* vdir's own source (a digest of every ``.py`` file of the package, so any
  change to the compiler misses) and the versions of xDSL, numpy and Python;
* :data:`CACHE_FORMAT_VERSION`.

A program that uses an op family registered from outside vdir is never
cached: its callables are not in the key. Entries are written, read and
checked as :mod:`vdir.disk_cache` says (a damaged entry is a miss; nothing
here makes a compile fail), and an entry read back is checked as an
untrusted encoded program (:meth:`vdir.isa.EncodedProgram.from_bytes`): a
forged one is a miss too. The directory is ``$VDIR_PROGRAM_CACHE_DIR`` if
set, else ``$XDG_CACHE_HOME/vdir/programs``, else ``~/.cache/vdir/programs``;
``VDIR_PROGRAM_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import functools
import hashlib
import json
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vdir.disk_cache import CacheLocation, EntryFormat, EntryStore
from vdir.isa import BufferInfo, EncodedProgram, ScalarInfo, buffer_entry, parse_buffer_entry
from vdir.limits import Limits, code_bytes_for, limits_in_effect

if TYPE_CHECKING:
    from vdir.transforms.pipeline_options import PipelineOptions

#: Part of every key and entry: raise it when the payload's layout changes.
CACHE_FORMAT_VERSION = 1
#: The environment variable naming the cache directory (used as is, no subdirectory added).
CACHE_DIR_ENV = "VDIR_PROGRAM_CACHE_DIR"
#: The environment variable that turns the cache off when set to ``0``, ``false``, ``no`` or ``off``.
ENABLE_ENV = "VDIR_PROGRAM_CACHE"
#: Where the program cache lives.
LOCATION = CacheLocation(CACHE_DIR_ENV, ENABLE_ENV, "programs")
#: The entries: a header, then the payload (:func:`encode_program`).
ENTRY_FORMAT = EntryFormat(b"VDIRPROG", CACHE_FORMAT_VERSION, ".program", "compiled programs")
#: The payload starts with the length of its JSON part (u32, little-endian).
_JSON_LENGTH = struct.Struct("<I")


class ProgramCache(EntryStore):
    """One cache directory of compiled programs; ``directory`` None: caching is off (see the module
    docstring for where :meth:`from_environment` finds it)."""

    FORMAT = ENTRY_FORMAT
    LOCATION = LOCATION


@functools.cache
def source_digest() -> str:
    """The hex SHA-256 over every ``.py`` file of the vdir package (:func:`tree_digest`) and the versions
    of xDSL, numpy and Python."""
    import numpy
    import xdsl

    import vdir

    versions = f"xdsl {getattr(xdsl, '__version__', '?')}\0numpy {numpy.__version__}\0python {sys.version}\0"
    return tree_digest(Path(vdir.__file__).resolve().parent, versions)


def tree_digest(root: Path, salt: str = "") -> str:
    """The hex SHA-256 over ``salt`` and every ``.py`` file under ``root``: its path from ``root`` and its
    bytes, in path order (so a file changed, added, removed or renamed changes it)."""
    h = hashlib.sha256(salt.encode())
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def only_vdir_families() -> bool:
    """Whether every registered op family is one vdir registers itself (the source digest covers them)."""
    from vdir.families import BUILTIN_FAMILIES, FAMILIES

    return len(FAMILIES) == len(BUILTIN_FAMILIES) and all(FAMILIES.get(f.name) is f for f in BUILTIN_FAMILIES)


def program_key(module_text: str, options: PipelineOptions, limits: Limits) -> str:
    """The entry's key: the hex SHA-256 over the format version, the source digest, the limits, the
    pipeline options and the module's text."""
    h = hashlib.sha256()
    h.update(f"vdir program cache {CACHE_FORMAT_VERSION}\0{source_digest()}\0{limits!r}\0{options!r}\0".encode())
    h.update(module_text.encode())
    return h.hexdigest()


def encode_program(program: EncodedProgram) -> bytes:
    """A payload: the host metadata as JSON (target, buffers, scalars, micro-op names), then the
    encoded program's bytes (:meth:`~vdir.isa.EncodedProgram.to_bytes`)."""
    meta = json.dumps({
        "target": program.target,
        "buffers": [buffer_entry(b) for b in program.buffers],
        "scalars": [s.text() for s in program.scalars],
        "names": [[uid, name] for uid, name in program.uop_names.items()],
    }, separators=(",", ":")).encode()
    return _JSON_LENGTH.pack(len(meta)) + meta + program.to_bytes()


def decode_program(payload: bytes, limits: Limits) -> EncodedProgram | None:
    """Inverse of :func:`encode_program`, checked as an untrusted encoded program whose code may be as
    large as ``limits`` let a compile make it; None if it is not one."""
    code_bytes = max(limits.max_code_bytes, code_bytes_for(limits.max_micro_ops))
    try:
        (length,) = _JSON_LENGTH.unpack_from(payload)
        meta = json.loads(payload[_JSON_LENGTH.size:_JSON_LENGTH.size + length])
        buffers: list[BufferInfo] = [parse_buffer_entry(text) for text in meta["buffers"]]
        scalars = [ScalarInfo.parse(text) for text in meta["scalars"]]
        names = {int(uid): str(name) for uid, name in meta["names"]}
        with limits_in_effect(limits.replace(max_code_bytes=code_bytes)):
            return EncodedProgram.from_bytes(payload[_JSON_LENGTH.size + length:], buffers, names,
                                             target=str(meta["target"]), scalars=scalars)
    except (ValueError, KeyError, TypeError, struct.error):
        return None


@dataclass(frozen=True)
class CachedProgram:
    """A compiled program, and whether it came from the cache."""

    program: EncodedProgram
    cache_hit: bool


def cached_compile(module: Any, options: PipelineOptions, limits: Limits, compile_module: Callable[[], EncodedProgram],
                   cache: ProgramCache | None = None) -> CachedProgram:
    """``module`` compiled with ``options`` under ``limits``: the cached encoding on a hit; on a miss
    ``compile_module()``, stored for next time. ``cache`` None: the environment's. A module that uses an
    op family from outside vdir is compiled without the cache."""
    cache = ProgramCache.from_environment() if cache is None else cache
    if not cache.enabled or not only_vdir_families():
        return CachedProgram(compile_module(), cache_hit=False)
    key = program_key(str(module), options, limits)
    payload = cache.read(key)
    program = None if payload is None else decode_program(payload, limits)
    if program is not None:
        return CachedProgram(program, cache_hit=True)
    program = compile_module()
    cache.write(key, encode_program(program))
    return CachedProgram(program, cache_hit=False)
