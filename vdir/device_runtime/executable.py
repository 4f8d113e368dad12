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
zeroed at every call, as the reference evaluator assumes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vdir.device_runtime import get_platform
from vdir.device_runtime.platform import DeviceBuffer, LaunchSpec, PlatformError
from vdir.families import DTYPE_BYTES, DTYPES
from vdir.isa import BufferInfo, EncodedProgram
from vdir.target import TargetDescription, get_target


class ArgumentError(ValueError):
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


class Executable:
    """An encoded program loaded on one backend, callable on numpy arrays.

    Built by :func:`vdir.compile`. ``options`` are launch options passed to
    the backend (for ``sim``: ``seed``, ``load_window``, ``check_races``).
    """

    def __init__(
        self,
        program: EncodedProgram,
        backend: str = "sim",
        target: TargetDescription | str | None = None,
        **options: Any,
    ):
        self.program = program
        self.backend = backend
        self.options = dict(options)
        self.platform = get_platform(backend, target if target is not None else program.target)
        try:
            self.artifact = self.platform.load_artifact(program)
            self._buffers: list[DeviceBuffer] = [
                self.platform.allocate(self._nbytes(info)) for info in program.buffers
            ]
            self._counters = self.platform.allocate(4 * max(program.num_counters, 1))
            self.platform.fill_zero(self._counters)
        except BaseException:
            self.platform.close()
            raise
        self._epoch = 1

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

    def bind(self, *args: Any, **named: Any) -> dict[str, np.ndarray]:
        """Match and validate call arguments; return argument name -> host array.

        Raises :class:`ArgumentError` on a wrong count, an unknown or
        repeated name, or an array whose shape, dtype or layout differs from
        the signature.
        """
        inputs = self.inputs
        if len(args) > len(inputs):
            names = ", ".join(b.name for b in inputs)
            raise ArgumentError(f"expected at most {len(inputs)} positional arguments ({names}), got {len(args)}")
        given: dict[str, Any] = {b.name: a for b, a in zip(inputs, args)}
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
        arrays = self.bind(*args, **named)
        for info, buf in zip(self.program.buffers, self._buffers):
            if info.name in arrays:
                self.platform.copy_in(buf, arrays[info.name])
            else:
                self.platform.fill_zero(buf)
        self._launch_and_wait()
        results = {}
        for info, buf in zip(self.program.buffers, self._buffers):
            if info.is_output:
                host = np.empty(tuple(info.shape), dtype=DTYPES[info.dtype])
                self.platform.copy_out(buf, host)
                results[info.name] = host
        return next(iter(results.values())) if len(results) == 1 else results

    def _launch_and_wait(self) -> None:
        """One launch at the current epoch; after a failure, zero the counters and restart at epoch 1."""
        spec = LaunchSpec(self.program, self._buffers, self._counters, self._epoch, self.options)
        try:
            self.platform.launch(self.artifact, spec)
            self.platform.synchronize()
        except PlatformError:
            self.platform.fill_zero(self._counters)
            self._epoch = 1
            raise
        self._epoch += 1

    def time(self, *args: Any, iterations: int = 10, **named: Any) -> list[float]:
        """Per-launch times in µs on the bound inputs (modelled, not measured, on ``sim``)."""
        arrays = self.bind(*args, **named)
        for info, buf in zip(self.program.buffers, self._buffers):
            if info.name in arrays:
                self.platform.copy_in(buf, arrays[info.name])
        spec = LaunchSpec(self.program, self._buffers, self._counters, self._epoch, self.options)
        try:
            times = self.platform.time_launches(self.artifact, spec, iterations)
        except PlatformError:
            self.platform.fill_zero(self._counters)
            self._epoch = 1
            raise
        self._epoch += iterations
        return times

    def trace(self, path: str | Path | None = None) -> dict:
        """The last launch's trace (Chrome/Perfetto JSON); written to ``path`` when given.

        Only the ``sim`` backend records traces.
        """
        last_trace = getattr(self.platform, "last_trace", None)
        recorded = last_trace() if last_trace is not None else None
        if recorded is None:
            raise PlatformError(
                f"no trace: the '{self.backend}' backend does not record one"
                if last_trace is None
                else "no trace yet: call the executable first"
            )
        if path is not None:
            recorded.write(path)
        return recorded.to_json()

    def close(self) -> None:
        """Free the device buffers and release the backend."""
        for buf in self._buffers:
            self.platform.free(buf)
        self.platform.free(self._counters)
        self._buffers = []
        self.platform.close()

    def __enter__(self) -> "Executable":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def compile(
    module_or_program: Any,
    backend: str = "sim",
    target: str | None = None,
    num_sms: int | None = None,
    **options: Any,
) -> Executable:
    """Compile an xDSL module (or take an encoded program) and load it on ``backend``.

    A ``ModuleOp`` goes through the pass pipeline (:func:`compile_module`) for
    ``target`` (default: the program's own), restricted to ``num_sms`` SMs
    when given; an
    :class:`EncodedProgram` is used as it is. ``options`` become launch
    options of the returned :class:`Executable`.
    """
    if target is not None:
        get_target(target, num_sms)  # an unknown target or too many SMs fails here, by name
    if isinstance(module_or_program, EncodedProgram):
        program = module_or_program
    else:
        from xdsl.dialects.builtin import ModuleOp

        if not isinstance(module_or_program, ModuleOp):
            raise TypeError(
                f"vdir.compile takes an xDSL ModuleOp or an EncodedProgram, got {type(module_or_program).__name__}"
            )
        program = compile_module(module_or_program, target=target, num_sms=num_sms)
    return Executable(program, backend=backend, target=target or program.target, **options)


def compile_module(module: Any, target: str | None = None, num_sms: int | None = None) -> EncodedProgram:
    """Run the pass pipeline on a verified module (left unchanged); return its encoding.

    The pipeline is imported here, lazily, so that the runtime does not pull
    in the compiler unless asked to compile.
    """
    from vdir.transforms.pipeline import compile_to_encoded

    return compile_to_encoded(module, target=target or "", num_sms=num_sms)


# ---------------------------------------------------------------------------
# Comparing a backend's outputs with the reference evaluator.
# ---------------------------------------------------------------------------

#: How close each backend must come to :func:`vdir.transforms.reference.evaluate`.
TOLERANCES = {
    "sim": "within 1 bf16 ulp of the reference (ulp floor at 2^-8 of the output's max |value|)",
    "cuda": "atol = rtol = 2e-2 relative to the output's max |value|",
}


@dataclass
class Mismatch:
    """The worst element of an output that misses the tolerance."""

    name: str
    index: tuple[int, ...]
    actual: float
    expected: float
    allowed: float
    tolerance: str

    def __str__(self) -> str:
        where = ", ".join(map(str, self.index))
        return (
            f"output '{self.name}' differs from the reference at [{where}]: got {self.actual:.6g}, "
            f"expected {self.expected:.6g} (|diff| {abs(self.actual - self.expected):.3g} > allowed "
            f"{self.allowed:.3g}; tolerance: {self.tolerance})"
        )


def allowed_error(expected: np.ndarray, backend: str) -> np.ndarray:
    """Per-element allowed |actual - expected| for ``backend`` (see :data:`TOLERANCES`)."""
    ref = np.abs(expected.astype(np.float64))
    scale = float(ref.max()) if ref.size else 0.0
    if backend == "sim":
        floor = max(scale * 2.0**-8, np.finfo(np.float32).tiny)
        magnitude = np.maximum(ref, floor)
        return np.exp2(np.floor(np.log2(magnitude)) - 7)  # bf16 has 8 significant bits
    scale = scale or 1.0
    return 2e-2 * scale + 2e-2 * ref


def compare_outputs(
    actual: dict[str, np.ndarray], expected: dict[str, np.ndarray], backend: str
) -> Mismatch | None:
    """The worst out-of-tolerance element over all outputs, or None when all match."""
    tolerance = TOLERANCES.get(backend, TOLERANCES["cuda"])
    worst: tuple[float, Mismatch] | None = None
    for name, want in expected.items():
        got = actual[name].astype(np.float64)
        want64 = want.astype(np.float64)
        allowed = allowed_error(want, "sim" if backend == "sim" else "cuda")
        diff = np.abs(got - want64)
        excess = np.where(np.isnan(diff), np.inf, diff - allowed)
        if excess.size == 0 or excess.max() <= 0:
            continue
        flat = int(np.argmax(excess))
        index = np.unravel_index(flat, want.shape)
        mismatch = Mismatch(
            name, tuple(int(i) for i in index), float(got[index]), float(want64[index]),
            float(allowed[index]), tolerance,
        )
        if worst is None or excess[index] > worst[0]:
            worst = (float(excess[index]), mismatch)
    return None if worst is None else worst[1]
