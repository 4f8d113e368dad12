"""Device backends behind one small interface, looked up by name.

``sim`` (the CPU simulator) is always present. ``cuda`` is imported lazily,
the first time someone asks for it, inside a ``try``: a missing driver, a
missing module or an import failure makes it *unavailable* (with the reason)
and never breaks the simulator.
"""

from __future__ import annotations

import importlib

from vdir.device_runtime.platform import (
    BackendUnavailable,
    DeviceBuffer,
    LaunchSpec,
    Platform,
    PlatformError,
)
from vdir.target import TargetDescription

#: backend name -> (module, class name); imported on first use.
_BACKENDS: dict[str, tuple[str, str]] = {
    "sim": ("vdir.device_runtime.sim", "SimPlatform"),
    "cuda": ("vdir.device_runtime.cuda", "CudaPlatform"),
}


def backend_names() -> list[str]:
    """Every backend vdir knows, available here or not."""
    return list(_BACKENDS)


def platform_class(name: str) -> type[Platform]:
    """The :class:`Platform` subclass of backend ``name``.

    Raises :class:`PlatformError` for an unknown name and
    :class:`BackendUnavailable` when its module cannot be imported.
    """
    try:
        module_name, class_name = _BACKENDS[name]
    except KeyError:
        raise PlatformError(f"unknown backend '{name}' (known: {', '.join(_BACKENDS)})") from None
    try:
        module = importlib.import_module(module_name)
        return getattr(module, class_name)
    except Exception as e:  # an optional backend may fail to import in any way
        raise BackendUnavailable(f"backend '{name}' cannot be loaded: {type(e).__name__}: {e}") from None


def backend_status(name: str) -> tuple[bool, str]:
    """(True, "") when backend ``name`` can run here, else (False, the reason)."""
    try:
        cls = platform_class(name)
        return cls.is_available()
    except PlatformError as e:
        return False, str(e)
    except Exception as e:  # a probe must never take the caller down
        return False, f"backend '{name}' probe failed: {type(e).__name__}: {e}"


def available_backends() -> list[str]:
    """Names of the backends that can run on this machine (``sim`` always)."""
    return [name for name in _BACKENDS if backend_status(name)[0]]


def default_backend() -> str:
    """``cuda`` when a GPU is usable here, else ``sim``."""
    return "cuda" if backend_status("cuda")[0] else "sim"


def get_platform(name: str = "sim", target: TargetDescription | str | None = None) -> Platform:
    """A ready platform instance for backend ``name``.

    ``target`` (a :class:`TargetDescription` or a target name) is passed to
    the platform's constructor when given. Raises :class:`BackendUnavailable`
    with the reason when the backend cannot run here.
    """
    cls = platform_class(name)
    ok, reason = cls.is_available()
    if not ok:
        raise BackendUnavailable(f"backend '{name}' is not available: {reason}")
    return cls(target=target) if target is not None else cls()


def register_backend(name: str, module: str, class_name: str) -> None:
    """Make an out-of-tree backend known by name (imported lazily, like the built-in ones)."""
    _BACKENDS[name] = (module, class_name)


__all__ = [
    "BackendUnavailable",
    "DeviceBuffer",
    "LaunchSpec",
    "Platform",
    "PlatformError",
    "available_backends",
    "backend_names",
    "backend_status",
    "default_backend",
    "get_platform",
    "platform_class",
    "register_backend",
]
