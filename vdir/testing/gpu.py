"""The ``gpu`` test marker: marks a test ``gpu`` (``pytest -m gpu`` selects them) and skips it,
with the reason, where the cuda backend is unavailable."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import pytest

from vdir.device_runtime import backend_status

_T = TypeVar("_T", bound=Callable)


@functools.cache
def _cuda_status() -> tuple[bool, str]:
    return backend_status("cuda")


def gpu(test: _T) -> _T:
    """Marker ``gpu``, and skipped (naming why) without the cuda backend."""
    ok, why = _cuda_status()
    test = pytest.mark.skipif(not ok, reason=f"cuda backend unavailable: {why or 'no GPU'}")(test)
    return pytest.mark.gpu(test)
