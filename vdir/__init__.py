"""vdir: a compiler toolkit for GPU programs written as micro-ops on virtual engines.

The embedding entry point is :func:`compile` (:func:`vdir.compiler.compile`):
give it an xDSL module (or an already encoded program) and call the result on
numpy arrays. It is imported on first use, so that ``import vdir`` stays
cheap for the command-line tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vdir.compiler import compile


def __getattr__(name: str) -> Any:
    """``vdir.compile``, imported from :mod:`vdir.compiler` the first time it is asked for;
    ``vdir.__version__``, read from the installed package's metadata."""
    if name == "compile":
        from vdir.compiler import compile

        return compile
    if name == "__version__":
        return installed_version()
    raise AttributeError(f"module 'vdir' has no attribute '{name}'")


def installed_version() -> str:
    """The installed package's version; ``unknown`` when vdir runs from a source tree it was not installed from."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vdir")
    except PackageNotFoundError:
        return "unknown"


__all__ = ["compile", "installed_version"]
