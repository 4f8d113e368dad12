"""Content-addressed entries on disk: what vdir's caches share.

Two caches keep what is slow to make between processes: the CUDA backend's
kernel cache (PTX compiled to a cubin, :mod:`vdir.device_runtime.kernel_cache`)
and the program cache (a module compiled by the pass pipeline,
:mod:`vdir.program_cache`). Each is an :class:`EntryStore`: one directory of
entry files, one per key (a hex SHA-256 the cache computes over everything
that decides the entry's contents). This module owns how an entry is
written, read and checked, and where a cache's directory is:

* **Location** (:class:`CacheLocation`): the directory named by the cache's
  own environment variable, used as it is; else ``$XDG_CACHE_HOME/vdir/<name>``;
  else ``~/.cache/vdir/<name>``. Another variable set to ``0``, ``false``,
  ``no`` or ``off`` turns the cache off.
* **Entry**: a header (the cache's magic, its format version, the key, the
  payload's length and SHA-256), then the payload. An entry that cannot be
  read, is truncated, belongs to another key or version, or fails its
  checksum reads as a miss, and the next write replaces it.
* **Writes** go to a temporary file in the same directory, are flushed and
  renamed into place (``os.replace``), so that concurrent processes see
  either the whole entry or none. The first write that fails warns once and
  turns writing off for that store; nothing a cache does makes its caller
  fail.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Self

#: Values of a cache's switch variable (compared case-insensitively, spaces ignored) that turn it off.
DISABLING_VALUES = frozenset({"0", "false", "no", "off"})
#: Entry header: magic (8 bytes), format version (u32), key digest (32 bytes), payload length (u64),
#: payload SHA-256 (32 bytes); little-endian, the payload follows.
_HEADER = struct.Struct("<8sI32sQ32s")


@dataclass(frozen=True)
class EntryFormat:
    """How one cache's entries are told apart from another's and from older ones of its own."""

    magic: bytes
    """The first 8 bytes of every entry file."""
    version: int
    """Raised when the payload's layout, or the way it is produced, changes."""
    suffix: str
    """An entry file's name is its key and this suffix."""
    what: str
    """What an entry holds, for messages ("compiled kernels")."""

    def encode(self, key: str, payload: bytes) -> bytes:
        """An entry file's bytes: the header, then ``payload``."""
        header = _HEADER.pack(self.magic, self.version, bytes.fromhex(key), len(payload),
                              hashlib.sha256(payload).digest())
        return header + payload

    def decode(self, key: str, data: bytes) -> bytes | None:
        """The payload in ``data`` if it is a complete, intact entry of this format for ``key``; else None."""
        if len(data) < _HEADER.size:
            return None
        magic, version, digest, length, checksum = _HEADER.unpack_from(data)
        payload = data[_HEADER.size:]
        if (magic != self.magic or version != self.version or digest != bytes.fromhex(key)
                or length != len(payload) or hashlib.sha256(payload).digest() != checksum):
            return None
        return payload


@dataclass(frozen=True)
class CacheLocation:
    """Where a cache lives and how it is switched off, read from the environment."""

    dir_env: str
    """The variable naming the cache's directory (used as it is, no subdirectory added)."""
    switch_env: str
    """The variable that turns the cache off when set to one of :data:`DISABLING_VALUES`."""
    name: str
    """The cache's subdirectory under ``$XDG_CACHE_HOME/vdir`` or ``~/.cache/vdir``."""

    def enabled(self, environ: Mapping[str, str] | None = None) -> bool:
        """False when :attr:`switch_env` is ``0`` (or ``false``, ``no``, ``off``); True otherwise."""
        env = os.environ if environ is None else environ
        return env.get(self.switch_env, "").strip().lower() not in DISABLING_VALUES

    def directory(self, environ: Mapping[str, str] | None = None) -> Path:
        """``$<dir_env>``, else ``$XDG_CACHE_HOME/vdir/<name>``, else ``~/.cache/vdir/<name>``.

        Raises ``RuntimeError`` when none is set and the home directory cannot be found.
        """
        env = os.environ if environ is None else environ
        if env.get(self.dir_env):
            return Path(env[self.dir_env])
        if env.get("XDG_CACHE_HOME"):
            return Path(env["XDG_CACHE_HOME"]) / "vdir" / self.name
        home = env.get("HOME") or os.path.expanduser("~")  # without HOME: the password database's entry
        if home.startswith("~"):
            raise RuntimeError("no home directory (HOME is unset and the user has no password entry)")
        return Path(home) / ".cache" / "vdir" / self.name


class EntryStore:
    """One cache directory of entries; ``directory`` None: the cache is off.

    A cache is a subclass that says what its entries are (:attr:`FORMAT`)
    and where it lives (:attr:`LOCATION`). Reads and writes never raise: a
    bad entry reads as a miss, and the first failed write warns once and
    turns writing off for this object.
    """

    FORMAT: ClassVar[EntryFormat]
    LOCATION: ClassVar[CacheLocation]

    def __init__(self, directory: Path | None):
        self.directory = directory
        self.format = self.FORMAT
        self._writable = directory is not None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Self:
        """The store :attr:`LOCATION` names in the environment; off if switched off or it cannot be located."""
        if not cls.LOCATION.enabled(environ):
            return cls(None)
        try:
            return cls(cls.LOCATION.directory(environ))
        except RuntimeError as e:  # no home directory to put it in
            warnings.warn(f"vdir cache of {cls.FORMAT.what} disabled: no cache directory ({e}); "
                          f"set {cls.LOCATION.dir_env}", RuntimeWarning, stacklevel=2)
            return cls(None)

    @property
    def enabled(self) -> bool:
        """Whether there is a directory to look in."""
        return self.directory is not None

    def path_for(self, key: str) -> Path:
        """The entry file of ``key``."""
        if self.directory is None:
            raise ValueError(f"the cache of {self.format.what} is disabled; it has no entry paths")
        return self.directory / f"{key}{self.format.suffix}"

    def read(self, key: str) -> bytes | None:
        """The cached payload of ``key``, or None (disabled, absent, unreadable or damaged)."""
        if self.directory is None:
            return None
        try:
            data = self.path_for(key).read_bytes()
        except OSError:
            return None
        return self.format.decode(key, data)

    def write(self, key: str, payload: bytes) -> bool:
        """Store ``payload`` under ``key`` atomically; False (after one warning) if the directory is unwritable."""
        if self.directory is None or not self._writable:
            return False
        tmp: str | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{key[:16]}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), 0o644)  # readable like any cache file (mkstemp makes it private)
                f.write(self.format.encode(key, payload))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path_for(key))
            return True
        except OSError as e:
            if tmp is not None:
                _remove_quietly(tmp)
            self._writable = False
            warnings.warn(f"vdir cache: cannot write to {self.directory} ({e}); "
                          f"{self.format.what} will not be cached", RuntimeWarning, stacklevel=3)
            return False


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
