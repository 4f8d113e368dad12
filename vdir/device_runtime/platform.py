"""The platform interface every device backend implements.

The compiler core (dialects, transforms, lowering) never imports a backend.
A backend is a small class with the methods below; the executable returned by
``vdir.compile`` drives it. Backends: ``sim`` (the CPU simulator, the default)
and ``cuda`` (cuda-python's driver bindings).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from vdir.device_runtime.trace import Trace
from vdir.diagnostics import VdirError
from vdir.isa import EncodedProgram
from vdir.target import TargetDescription

if TYPE_CHECKING:  # the lowering is imported by the backends that lower, when they do
    from vdir.lowering.options import LoweringOptions


class PlatformError(VdirError, RuntimeError):
    """A backend failed: no device, a launch error, a watchdog report, a race."""


class BackendUnavailable(PlatformError):
    """The backend cannot run on this machine (e.g. no CUDA device); the message says why."""


class LaunchOptionError(VdirError, ValueError):
    """A launch option the backend does not take, or a value it cannot use; the message names it."""


@dataclass(frozen=True)
class LaunchOption:
    """What values one launch option of a backend takes: its ``kind`` and its least value.

    ``kind`` is ``bool``, ``int`` (an integer, not a bool) or ``float`` (a
    finite number); ``minimum`` (inclusive) bounds a number.
    """

    kind: type
    minimum: float | None = None

    def check(self, name: str, value: Any) -> None:
        """Raise :class:`LaunchOptionError`, naming the option, unless ``value`` fits."""
        if self.kind is bool:
            if not isinstance(value, bool | np.bool_):
                raise LaunchOptionError(f"launch option '{name}' must be True or False, got {value!r}")
            return
        integral = isinstance(value, Integral) and not isinstance(value, bool | np.bool_)
        if self.kind is int and not integral:
            raise LaunchOptionError(f"launch option '{name}' must be an integer, got {value!r}")
        if self.kind is float and not (integral or (isinstance(value, Real) and math.isfinite(value))):
            raise LaunchOptionError(f"launch option '{name}' must be a finite number, got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise LaunchOptionError(f"launch option '{name}' must be at least {self.minimum:g}, got {value!r}")


@dataclass
class DeviceBuffer:
    """An opaque handle to a buffer owned by a platform."""

    handle: Any
    nbytes: int
    platform: "Platform"


@dataclass
class LaunchSpec:
    """What one launch needs: the program, its buffers in argument order, the epoch."""

    program: EncodedProgram
    buffers: list[DeviceBuffer]
    counters: DeviceBuffer
    epoch: int = 1
    options: dict = field(default_factory=dict)
    #: the launch-time scalars, in the program's slot order (checked against their ranges)
    scalars: tuple[int, ...] = ()


class Platform(abc.ABC):
    """A device backend: context, memory, artifacts, launches, timing."""

    name: str = "abstract"
    #: the launch options this backend takes (``vdir.compile(..., name=value)``)
    LAUNCH_OPTIONS: ClassVar[Mapping[str, LaunchOption]] = {}

    @classmethod
    def check_launch_options(cls, options: Mapping[str, Any]) -> None:
        """Reject an option this backend does not take (listing those it does) or a value it cannot use.

        Called before a program is compiled or loaded, so that a misspelt
        option is not silently ignored at every launch.
        """
        for name, value in options.items():
            spec = cls.LAUNCH_OPTIONS.get(name)
            if spec is None:
                known = ", ".join(cls.LAUNCH_OPTIONS) or "none"
                raise LaunchOptionError(f"unknown launch option '{name}' for the '{cls.name}' backend (known: {known})")
            spec.check(name, value)

    def __init__(self, target: TargetDescription | str | None = None) -> None:  # noqa: B027 -- only declares it
        """Backends are constructed with an optional target (a description or a name)."""

    # -- context lifecycle -------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def is_available(cls) -> tuple[bool, str]:
        """(True, "") when usable here, else (False, reason); must never hang."""

    @abc.abstractmethod
    def target(self) -> TargetDescription:
        """The target description of the device this platform drives."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the device context and everything allocated through it."""

    # -- memory ----------------------------------------------------------
    @abc.abstractmethod
    def allocate(self, nbytes: int) -> DeviceBuffer:
        """A new device buffer of ``nbytes`` (contents undefined)."""

    @abc.abstractmethod
    def free(self, buf: DeviceBuffer) -> None:
        """Release a buffer from :meth:`allocate`."""

    @abc.abstractmethod
    def copy_in(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        """Copy a contiguous host array into ``buf``."""

    @abc.abstractmethod
    def copy_out(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        """Copy ``buf`` into a contiguous host array of the same byte size."""

    @abc.abstractmethod
    def fill_zero(self, buf: DeviceBuffer) -> None:
        """Zero a buffer (used for the global dependency counters)."""

    # -- artifacts and launches -------------------------------------------
    @abc.abstractmethod
    def load_artifact(self, program: EncodedProgram, options: LoweringOptions | None = None) -> Any:
        """Prepare a program (lower and load PTX as ``options`` say, None: the defaults; upload queues).

        Returns the handle that :meth:`launch` takes.

        A backend that runs the encoded program itself (the simulator) checks
        nothing more: the options change how the kernel issues its work, never
        what it computes."""

    @abc.abstractmethod
    def launch(self, artifact: Any, spec: LaunchSpec) -> None:
        """Start one launch of a loaded program (may be asynchronous)."""

    @abc.abstractmethod
    def synchronize(self) -> None:
        """Wait for outstanding work; raise :class:`PlatformError` on a device error."""

    @abc.abstractmethod
    def time_launches(self, artifact: Any, spec: LaunchSpec, iterations: int) -> list[float]:
        """Per-launch times in microseconds for ``iterations`` launches."""

    # -- traces ----------------------------------------------------------
    def trace_unavailable(self, artifact: Any) -> str:
        """Why launches of ``artifact`` record no trace, "" when they do (by default none does)."""
        return f"the '{self.name}' backend records no trace"

    def last_trace(self) -> Trace | None:
        """The trace of the most recent completed launch, or None (by default none is recorded)."""
        return None
