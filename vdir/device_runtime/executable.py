"""A compiled program bound to a backend: call it with numpy arrays.

:class:`Executable` owns the device side of a program: the loaded artifact,
one device buffer per program argument, the global dependency counters and
the launch epoch. Calling it validates every argument against the program's
signature first (so a wrong shape or dtype never reaches a device), copies
the inputs in, launches, synchronises and copies the outputs back.

Arguments follow the buffer roles of the program (:attr:`BufferInfo.role`):
the *inputs* (``in`` and ``inout`` buffers, whose data the program reads)
are passed positionally in signature order or by name; the *outputs*
(``out`` and ``inout``) are returned. ``out`` and ``scratch`` buffers start
zeroed at every call, as the reference evaluator assumes. The launch-time
scalars (``index`` arguments) follow the buffer inputs, by position or by
name, as Python or numpy integers inside their declared ranges.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vdir.device_runtime import get_platform, platform_class
from vdir.device_runtime.platform import DeviceBuffer, LaunchSpec, PlatformError
from vdir.diagnostics import VdirError
from vdir.families import DTYPE_BYTES, DTYPES
from vdir.isa import BufferInfo, EncodedProgram, ScalarInfo
from vdir.target import TargetDescription

if TYPE_CHECKING:
    from vdir.lowering.options import LoweringOptions


class ArgumentError(VdirError, ValueError):
    """An argument does not match the program's signature; the message names it."""


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def _as_host_array(value: Any, label: str) -> np.ndarray:
    """``value`` as a numpy array without copying: numpy arrays, or DLPack-capable tensors."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except Exception as e:  # e.g. a device tensor, or a dtype numpy cannot name
            raise ArgumentError(
                f"{label}: cannot read a {type(value).__name__} as a host array through DLPack ({e})"
            ) from None
    raise ArgumentError(f"{label}: expected a numpy array, got {type(value).__name__}")


def _lowering_options(options: LoweringOptions | Mapping[str, Any] | str | None) -> LoweringOptions | None:
    """``options`` checked and typed; None stays None (the backend's defaults, no lowering imported)."""
    if options is None:
        return None
    from vdir.lowering.options import LoweringOptions

    return LoweringOptions.coerce(options)


class Executable:
    """An encoded program loaded on one backend, callable on numpy arrays.

    Built by :func:`vdir.compile`. ``options`` are the lowering options
    (:class:`~vdir.lowering.options.LoweringOptions`, a dict or a
    ``"key=value ..."`` string; None: the defaults) for a backend that lowers
    the program; ``launch_options`` are passed to every launch (for ``sim``:
    ``seed``, ``load_window``, ``check_races``; for ``cuda``: ``watchdog_ms``).
    """

    def __init__(
        self,
        program: EncodedProgram,
        backend: str = "sim",
        target: TargetDescription | str | None = None,
        options: LoweringOptions | Mapping[str, Any] | str | None = None,
        **launch_options: Any,
    ):
        self.program = program
        self.backend = backend
        self.options = _lowering_options(options)
        self.launch_options = dict(launch_options)
        platform_class(backend).check_launch_options(self.launch_options)
        self.platform = get_platform(backend, target if target is not None else program.target)
        try:
            self.artifact = self.platform.load_artifact(program, self.options)
            self._buffers: list[DeviceBuffer] = [
                self.platform.allocate(self._nbytes(info)) for info in program.buffers
            ]
            self._counters = self.platform.allocate(4 * max(program.num_counters, 1))
            self.platform.fill_zero(self._counters)
        except BaseException:
            self.platform.close()
            raise
        self._epoch = 1
        self._closed = False

    def _check_open(self) -> None:
        """Raise :class:`PlatformError` once :meth:`close` has released the device side."""
        if self._closed:
            raise PlatformError("the executable is closed: compile the program again to run it")

    # ---- signature -------------------------------------------------------
    @property
    def signature(self) -> list[BufferInfo]:
        """Every program buffer, in order (inputs, outputs and scratch)."""
        return list(self.program.buffers)

    @property
    def inputs(self) -> list[BufferInfo]:
        """The buffers a call must provide (roles ``in``, ``inout``), in positional order."""
        return [b for b in self.program.buffers if b.is_input]

    @property
    def outputs(self) -> list[BufferInfo]:
        """The buffers a call returns (roles ``out``, ``inout``)."""
        return [b for b in self.program.buffers if b.is_output]

    @staticmethod
    def _nbytes(info: BufferInfo) -> int:
        return math.prod(info.shape) * DTYPE_BYTES[info.dtype]

    @property
    def scalars(self) -> list[ScalarInfo]:
        """The launch-time scalars a call must give, in positional order (after the buffer inputs)."""
        return list(self.program.scalars)

    def bind_scalars(self, args: tuple[Any, ...], named: dict[str, Any]) -> tuple[int, ...]:
        """Take the scalars out of a call's arguments (positional tail, or by name); check each.

        Raises :class:`ArgumentError` for a missing scalar, one that is not an
        integer, or one outside its declared range.
        """
        scalars = self.program.scalars
        given = dict(zip((sc.name for sc in scalars), args[len(self.inputs):], strict=False))
        for sc in scalars:
            if sc.name in named:
                if sc.name in given:
                    raise ArgumentError(f"scalar '{sc.name}' given both by position and by name")
                given[sc.name] = named.pop(sc.name)
        values = []
        for sc in scalars:
            if sc.name not in given:
                raise ArgumentError(f"missing scalar '{sc.name}' (an integer in {sc.lo} to {sc.hi})")
            value = given[sc.name]
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ArgumentError(f"scalar '{sc.name}': expected an integer, got {type(value).__name__}")
            if not sc.lo <= int(value) < sc.hi:
                raise ArgumentError(f"scalar '{sc.name}' = {int(value)} is outside its range {sc.lo} to {sc.hi}")
            values.append(int(value))
        return tuple(values)

    def bind(self, *args: Any, **named: Any) -> dict[str, np.ndarray]:
        """Match and validate call arguments; return argument name -> host array.

        Raises :class:`ArgumentError` on a wrong count, an unknown or
        repeated name, or an array whose shape, dtype or layout differs from
        the signature. Scalars are taken out first (:meth:`bind_scalars`).
        """
        inputs = self.inputs
        if len(args) > len(inputs) + len(self.program.scalars):
            names = ", ".join([b.name for b in inputs] + [sc.name for sc in self.program.scalars])
            raise ArgumentError(
                f"expected at most {len(inputs) + len(self.program.scalars)} positional arguments ({names}), "
                f"got {len(args)}"
            )
        given: dict[str, Any] = {b.name: a for b, a in zip(inputs, args, strict=False)}
        roles = {b.name: b.role for b in self.program.buffers}
        for name, value in named.items():
            if name not in roles:
                names = ", ".join(b.name for b in inputs)
                raise ArgumentError(f"no argument named '{name}' (inputs: {names})")
            if name not in {b.name for b in inputs}:
                raise ArgumentError(
                    f"'{name}' is not an input of the program (its role is {roles[name]}: it starts zeroed)"
                )
            if name in given:
                raise ArgumentError(f"argument '{name}' given both by position and by name")
            given[name] = value
        missing = [  # numbered, like every message here, by position in the signature
            f"'{b.name}' (#{i + 1})"
            for i, b in enumerate(self.program.buffers)
            if b.is_input and b.name not in given
        ]
        if missing:
            raise ArgumentError(f"missing argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
        return {
            info.name: self._check(info, index, given[info.name])
            for index, info in enumerate(self.program.buffers)
            if info.name in given
        }

    @staticmethod
    def _check(info: BufferInfo, index: int, value: Any) -> np.ndarray:
        label = f"argument '{info.name}' (#{index + 1})"
        array = _as_host_array(value, label)
        want = f"{_shape_text(tuple(info.shape))} {info.dtype}"
        got = f"{_shape_text(array.shape)} {array.dtype}"
        if tuple(array.shape) != tuple(info.shape) or array.dtype != DTYPES[info.dtype]:
            raise ArgumentError(f"{label}: expected {want}, got {got}")
        if not array.flags.c_contiguous:
            raise ArgumentError(f"{label}: the array must be C-contiguous (use np.ascontiguousarray)")
        return array

    # ---- running ----------------------------------------------------------
    def __call__(self, *args: Any, **named: Any) -> np.ndarray | dict[str, np.ndarray]:
        """Run the program once; return the output (or a dict name -> output)."""
        self._check_open()
        scalars = self.bind_scalars(args, named)
        arrays = self.bind(*args, **named)
        for info, buf in zip(self.program.buffers, self._buffers, strict=True):
            if info.name in arrays:
                self.platform.copy_in(buf, arrays[info.name])
            else:
                self.platform.fill_zero(buf)
        self._launch_and_wait(scalars)
        results = {}
        for info, buf in zip(self.program.buffers, self._buffers, strict=True):
            if info.is_output:
                host = np.empty(tuple(info.shape), dtype=DTYPES[info.dtype])
                self.platform.copy_out(buf, host)
                results[info.name] = host
        return next(iter(results.values())) if len(results) == 1 else results

    def _launch_and_wait(self, scalars: tuple[int, ...] = ()) -> None:
        """One launch at the current epoch; after a failure, zero the counters and restart at epoch 1."""
        spec = LaunchSpec(self.program, self._buffers, self._counters, self._epoch, self.launch_options, scalars)
        try:
            self.platform.launch(self.artifact, spec)
            self.platform.synchronize()
        except PlatformError:
            self.platform.fill_zero(self._counters)
            self._epoch = 1
            raise
        self._epoch += 1

    def time(self, *args: Any, iterations: int = 10, **named: Any) -> list[float]:
        """The time of each of ``iterations`` launches on the bound inputs, in µs, in launch order.

        A list rather than one figure, so that the caller picks the summary
        (a median, a minimum) and sees the spread; modelled, not measured, on ``sim``.
        """
        self._check_open()
        scalars = self.bind_scalars(args, named)
        arrays = self.bind(*args, **named)
        for info, buf in zip(self.program.buffers, self._buffers, strict=True):
            if info.name in arrays:
                self.platform.copy_in(buf, arrays[info.name])
        spec = LaunchSpec(self.program, self._buffers, self._counters, self._epoch, self.launch_options, scalars)
        try:
            times = self.platform.time_launches(self.artifact, spec, iterations)
        except PlatformError:
            self.platform.fill_zero(self._counters)
            self._epoch = 1
            raise
        self._epoch += iterations
        return times

    def trace(self, path: str | Path | None = None) -> dict:
        """The last launch's trace (Chrome/Perfetto JSON, :mod:`vdir.device_runtime.trace`);
        written to ``path`` when given.

        The ``sim`` backend records one at every launch, in its cost model's
        time; ``cuda`` when the program was lowered with the ``trace``
        option (``options="trace=1"``), from the kernel's ``%globaltimer`` stamps.
        """
        self._check_open()
        why = self.platform.trace_unavailable(self.artifact)
        if why:
            raise PlatformError(f"no trace: {why}")
        recorded = self.platform.last_trace()
        if recorded is None:
            raise PlatformError("no trace yet: call the executable first")
        if path is not None:
            recorded.write(path)
        return recorded.to_json()

    def close(self) -> None:
        """Free the device buffers and release the backend; a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        for buf in self._buffers:
            self.platform.free(buf)
        self.platform.free(self._counters)
        self._buffers = []
        self.platform.close()

    def __enter__(self) -> "Executable":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
