"""The platform interface every device backend implements.

The compiler core (dialects, transforms, lowering) never imports a backend.
A backend is a small class with the methods below; the executable returned by
``vdir.compile`` drives it. Backends: ``sim`` (the CPU simulator, the default)
and ``cuda`` (cuda-python's driver bindings).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from vdir.device_runtime.tensors import TensorView
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
    """An opaque handle to device memory: allocated by a platform, or borrowed from a caller's tensor.

    A borrowed buffer (``owned`` False, from :meth:`Platform.wrap`) holds
    ``keepalive``, the producer of the memory, so that its owner cannot free
    it while vdir may launch on it; :meth:`Platform.free` only drops it.
    """

    handle: Any
    nbytes: int
    platform: "Platform"
    owned: bool = True
    keepalive: Any = None


@dataclass(eq=False)
class LaunchSpec:
    """What one launch needs: the program, its buffers in argument order, its sync block.

    A backend may check and pack a spec once and reuse that for every launch
    of the same spec object: make a new spec to launch on other buffers.

    ``sync`` (``EncodedProgram.sync_bytes``, zeroed once) holds the launch
    state and the global counters; every launch advances it on the device,
    so launches of one spec need nothing else between them. After a failed
    launch it must be zeroed again.
    """

    program: EncodedProgram
    buffers: list[DeviceBuffer]
    sync: DeviceBuffer
    #: the launch-time scalars (s32 per slot, ``4 * len(program.scalars)`` bytes); the
    #: launch reads them on the device and stops with an error on a value out of range
    scalars: DeviceBuffer | None = None
    options: dict = field(default_factory=dict)


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

    @classmethod
    def device_target(cls) -> str | None:
        """The name of the target that describes the device this backend would run on, for a caller that
        compiles a program for it (the pass pipeline leaves some choices to the target: the stream
        holds); None where none does, or where any target's program runs as compiled (the simulator).
        Never raises."""
        return None

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
    def fill_zero(self, buf: DeviceBuffer, stream: Any = None) -> None:
        """Zero a buffer; with a ``stream`` (a backend stream handle), ordered on it and asynchronous."""

    @abc.abstractmethod
    def write_words(self, buf: DeviceBuffer, values: Sequence[int], stream: Any = None) -> None:
        """Write s32 ``values`` at the start of ``buf`` (the launch-time scalars), ordered like :meth:`fill_zero`."""

    @abc.abstractmethod
    def copy_device(self, dst: DeviceBuffer, src: DeviceBuffer, stream: Any = None) -> None:
        """Copy ``src``'s bytes into ``dst`` (device to device, same size), ordered like :meth:`fill_zero`."""

    @abc.abstractmethod
    def wrap(self, view: TensorView) -> DeviceBuffer:
        """Borrow a caller's tensor memory as a buffer, without copying.

        Raises :class:`PlatformError` (the message says why; the caller names
        the argument) unless the memory is where this platform's launches can
        read and write it: host memory for the simulator, this device's
        memory for ``cuda``.
        """

    def stream_handle(self, stream: Any) -> Any:
        """The backend's handle of a caller's stream object (None: the platform's own stream).

        Backends without streams take only None.
        """
        if stream is not None:
            raise PlatformError(f"the '{self.name}' backend has no streams: pass stream=None")
        return None

    def is_capturing(self, stream: Any) -> bool:  # noqa: ARG002 -- backends with streams override it
        """Whether work on ``stream`` is being recorded into a graph rather than run."""
        return False

    # -- artifacts and launches -------------------------------------------
    @abc.abstractmethod
    def load_artifact(self, program: EncodedProgram, options: LoweringOptions | None = None) -> Any:
        """Prepare a program (lower and load PTX as ``options`` say, None: the defaults; upload queues).

        Returns the handle that :meth:`launch` takes.

        A backend that runs the encoded program itself (the simulator) checks
        nothing more: the options change how the kernel issues its work, never
        what it computes."""

    @abc.abstractmethod
    def launch(self, artifact: Any, spec: LaunchSpec, stream: Any = None) -> None:
        """Start one launch of a loaded program on ``stream`` (None: the platform's own; may be asynchronous)."""

    @abc.abstractmethod
    def synchronize(self) -> None:
        """Wait for every launch started since the last call; raise :class:`PlatformError` on a device error.

        After an error the sync blocks of those launches are zeroed again and
        the error record is cleared, so the next launch starts afresh.
        """

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
