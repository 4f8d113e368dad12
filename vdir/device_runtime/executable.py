"""A compiled program bound to a backend: call it with numpy arrays, or launch it on device tensors.

:class:`Executable` owns the device side of a program: the loaded artifact,
one device buffer per program argument, the sync block (launch state and
global counters, advanced on the device) and the scalar block. Calling it
validates every argument against the program's signature first (so a wrong
shape or dtype never reaches a device), copies the inputs in, launches,
synchronises and copies the outputs back; :meth:`Executable.launch` runs on
the caller's device tensors and stream instead, copying nothing.

Arguments follow the buffer roles of the program (:attr:`BufferInfo.role`):
the *inputs* (``in`` and ``inout`` buffers, whose data the program reads)
are passed positionally in signature order or by name; the *outputs*
(``out`` and ``inout``) are returned. ``out`` buffers start zeroed at every
call, as the reference evaluator assumes (the bytes of one: an ``out``
buffer that unconditional stores cover entirely, ``isa.fully_stored_buffers``,
and a ``scratch`` buffer, are never seen before they are written, so they
are not zeroed). The launch-time
scalars (``index`` arguments) follow the buffer inputs, by position or by
name, as Python or numpy integers inside their declared ranges.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vdir.device_runtime import get_platform, platform_class
from vdir.device_runtime.platform import DeviceBuffer, LaunchSpec, PlatformError
from vdir.device_runtime.profile import LaunchProfile, launch_profile
from vdir.device_runtime.tensors import (
    BUFFER_ALIGNMENT,
    DL_CPU,
    DL_CUDA,
    TensorFormatError,
    TensorView,
    aligned,
    dlpack_capsule,
    tensor_view,
)
from vdir.diagnostics import VdirError
from vdir.families import DTYPE_BYTES, DTYPES
from vdir.isa import BufferInfo, EncodedProgram, ScalarInfo, fully_stored_buffers
from vdir.target import TargetDescription

if TYPE_CHECKING:
    from vdir.device_runtime.trace import Trace
    from vdir.lowering.options import LoweringOptions


class ArgumentError(VdirError, ValueError):
    """An argument does not match the program's signature; the message names it."""


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def _as_host_array(value: Any, label: str) -> np.ndarray:
    """``value`` as a numpy array without copying: numpy arrays, or host tensors that speak DLPack or the
    array interface (read through :func:`tensor_view`, which knows bf16 where numpy's DLPack does not)."""
    if isinstance(value, np.ndarray):
        return value
    try:
        view = tensor_view(value)
    except TensorFormatError as e:
        raise ArgumentError(f"{label}: {e}") from None
    if view.host is None and view.device_type == DL_CPU and view.dtype not in DTYPE_BYTES:
        *most, last = DTYPE_BYTES
        raise ArgumentError(f"{label}: a {type(value).__name__} of {view.dtype} elements; a program's buffers "
                            f"hold {', '.join(most)} or {last}")
    if view.host is None and view.device_type == DL_CPU:
        raise ArgumentError(f"{label}: a {view.dtype} {type(value).__name__} whose elements are not dense rows "
                            "cannot be read as a host array: pass a contiguous copy")
    if view.host is None:
        raise ArgumentError(f"{label}: a {type(value).__name__} on {view.device} is not a host array: "
                            "pass it to launch(), or bind_buffer() it")
    return view.host


def _lowering_options(options: LoweringOptions | Mapping[str, Any] | str | None) -> LoweringOptions | None:
    """``options`` checked and typed; None stays None (the backend's defaults, no lowering imported)."""
    if options is None:
        return None
    from vdir.lowering.options import LoweringOptions

    return LoweringOptions.coerce(options)


class Executable:
    """An encoded program loaded on one backend: callable on numpy arrays, or launched on device tensors.

    Built by :func:`vdir.compile`. ``options`` are the lowering options
    (:class:`~vdir.lowering.options.LoweringOptions`, a dict or a
    ``"key=value ..."`` string; None: the defaults) for a backend that lowers
    the program; ``launch_options`` are passed to every launch (for ``sim``:
    ``seed``, ``load_window``, ``check_races``; for ``cuda``: ``watchdog_ms``).

    Two ways to run it (``docs/runtime.md``):

    * ``exe(*inputs)`` copies numpy inputs in, runs, waits and returns numpy
      outputs;
    * ``exe.launch(..., stream=s)`` runs on device tensors (DLPack or
      ``__cuda_array_interface__``; on ``sim``, numpy arrays) without copies
      and without waiting; :meth:`synchronize` waits and reports device errors.

    A buffer bound with :meth:`bind_buffer` (weights, a KV cache) stays bound
    for every later call of either kind and is not passed again; it is the
    caller's memory, so it is never zeroed: what a launch does not write
    keeps its contents (an ``out`` buffer written one row per launch keeps
    its history).
    """

    def __init__(
        self,
        program: EncodedProgram,
        backend: str = "sim",
        target: TargetDescription | str | None = None,
        options: LoweringOptions | Mapping[str, Any] | str | None = None,
        **launch_options: Any,
    ):
        if not isinstance(program, EncodedProgram):
            raise ArgumentError(f"Executable takes an EncodedProgram (vdir.compile makes one from a module), "
                                f"got {type(program).__name__}")
        self.program = program
        self.backend = backend
        #: seconds the pass pipeline took to make ``program`` (or to read it from the program cache), and
        #: whether it came from the cache: set by :func:`vdir.compile` when it compiled a module, else None
        self.compile_seconds: float | None = None
        self.compile_cache_hit: bool | None = None
        self.options = _lowering_options(options)
        self.launch_options = dict(launch_options)
        platform_class(backend).check_launch_options(self.launch_options)
        self.platform = get_platform(backend, target if target is not None else program.target)
        try:
            self.artifact = self.platform.load_artifact(program, self.options)
            #: the executable's own memory for each buffer, allocated when first needed (:meth:`_own_buffer`)
            self._own: list[DeviceBuffer | None] = [None] * len(program.buffers)
            self._sync = self.platform.allocate(program.sync_bytes)
            self.platform.fill_zero(self._sync)
            self._scalar_block = self.platform.allocate(4 * max(len(program.scalars), 1))
        except BaseException:
            self.platform.close()
            raise
        #: buffer name -> a caller's memory bound for every call (:meth:`bind_buffer`)
        self._bound: dict[str, DeviceBuffer] = {}
        self._scalars_written = not program.scalars
        #: the buffers a run zeroes first: outputs whose bytes some launch may leave unwritten
        covered = fully_stored_buffers(program)
        self._zeroed = frozenset(i for i, info in enumerate(program.buffers)
                                 if info.is_output and not info.is_input and i not in covered)
        #: the spec and the buffers to zero of a launch with every buffer bound (cleared when bindings change)
        self._resident: tuple[LaunchSpec, list[DeviceBuffer]] | None = None
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
        """The buffers whose data the program reads (roles ``in``, ``inout``), in signature order."""
        return [b for b in self.program.buffers if b.is_input]

    @property
    def call_inputs(self) -> list[BufferInfo]:
        """The inputs a call takes positionally: :attr:`inputs` not bound with :meth:`bind_buffer`."""
        return [b for b in self.inputs if b.name not in self._bound]

    @property
    def outputs(self) -> list[BufferInfo]:
        """The buffers a call returns (roles ``out``, ``inout``)."""
        return [b for b in self.program.buffers if b.is_output]

    @property
    def scalars(self) -> list[ScalarInfo]:
        """The launch-time scalars a call must give, in positional order (after the buffer inputs)."""
        return list(self.program.scalars)

    def _info(self, name: str) -> tuple[int, BufferInfo]:
        for index, info in enumerate(self.program.buffers):
            if info.name == name:
                return index, info
        names = ", ".join(b.name for b in self.program.buffers)
        raise ArgumentError(f"no buffer named '{name}' (buffers: {names})")

    # ---- argument binding ------------------------------------------------------
    def _take_scalars(self, args: tuple[Any, ...], named: dict[str, Any], positional_inputs: int,
                      required: bool = True) -> tuple[int, ...] | None:
        """Take the scalars out of a call's arguments (positional tail, or by name); check each.

        Raises :class:`ArgumentError` for a missing scalar, one that is not an
        integer, or one outside its declared range. With ``required`` False,
        a call that gives none returns None (the device block is used as it is).
        """
        scalars = self.program.scalars
        given = dict(zip((sc.name for sc in scalars), args[positional_inputs:], strict=False))
        for sc in scalars:
            if sc.name in named:
                if sc.name in given:
                    raise ArgumentError(f"scalar '{sc.name}' given both by position and by name")
                given[sc.name] = named.pop(sc.name)
        if not given and not required:
            return None
        values = []
        for sc in scalars:
            if sc.name not in given:
                raise ArgumentError(f"missing scalar '{sc.name}' (an integer in {sc.lo} to {sc.hi})")
            values.append(_checked_scalar(sc, given[sc.name]))
        return tuple(values)

    def _match(self, args: tuple[Any, ...], named: dict[str, Any], positional: list[BufferInfo],
               allowed: set[str], what: str) -> dict[str, Any]:
        """Name the buffer arguments of a call: positional ones in ``positional`` order, then ``named``."""
        if len(args) > len(positional) + len(self.program.scalars):
            names = ", ".join([b.name for b in positional] + [sc.name for sc in self.program.scalars])
            raise ArgumentError(
                f"expected at most {len(positional) + len(self.program.scalars)} positional arguments ({names}), "
                f"got {len(args)}"
            )
        given: dict[str, Any] = {b.name: a for b, a in zip(positional, args, strict=False)}
        roles = {b.name: b.role for b in self.program.buffers}
        for name, value in named.items():
            if name not in roles:
                raise ArgumentError(f"no argument named '{name}' ({what}: {', '.join(sorted(allowed)) or 'none'})")
            if name in self._bound:
                raise ArgumentError(f"'{name}' is bound to a buffer (bind_buffer): unbind it to pass it per call")
            if name not in allowed:
                raise ArgumentError(
                    f"'{name}' is not an input of the program (its role is {roles[name]}: it starts zeroed)"
                )
            if name in given:
                raise ArgumentError(f"argument '{name}' given both by position and by name")
            given[name] = value
        return given

    def _host_arguments(self, args: tuple[Any, ...], named: dict[str, Any]) -> dict[str, np.ndarray]:
        """Match and validate a host call's arguments; return argument name -> host array."""
        call_inputs = self.call_inputs
        given = self._match(args, named, call_inputs, {b.name for b in call_inputs}, "inputs")
        missing = [  # numbered, like every message here, by position in the signature
            f"'{b.name}' (#{i + 1})"
            for i, b in enumerate(self.program.buffers)
            if b.is_input and b.name not in given and b.name not in self._bound
        ]
        if missing:
            raise ArgumentError(f"missing argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
        return {
            info.name: _check_host(info, index, given[info.name])
            for index, info in enumerate(self.program.buffers)
            if info.name in given
        }

    def _device_buffer(self, index: int, info: BufferInfo, value: Any) -> DeviceBuffer:
        """A caller's tensor as a borrowed buffer for buffer ``info``, after every check."""
        label = f"argument '{info.name}' (#{index + 1})"
        if isinstance(value, DeviceArray):
            view = value.view()
        else:
            try:
                view = tensor_view(value)
            except TensorFormatError as e:
                raise ArgumentError(f"{label}: {e}") from None
        _check_view(info, label, view)
        try:
            return self.platform.wrap(view)
        except PlatformError as e:
            raise ArgumentError(f"{label}: {e}") from None

    # ---- resident buffers --------------------------------------------------------
    def bind_buffer(self, name: str, tensor: Any) -> None:
        """Bind a caller's tensor to buffer ``name`` for every later call, without copying.

        ``tensor`` is a device tensor (DLPack or ``__cuda_array_interface__``;
        on ``sim`` a numpy array) or another executable's :meth:`buffer`; a
        reference is held until :meth:`unbind` or :meth:`close`. Its shape,
        element type, device, layout and alignment are checked now.
        """
        self._check_open()
        index, info = self._info(name)
        buf = self._device_buffer(index, info, tensor)
        self._resident = None
        old = self._bound.pop(name, None)
        if old is not None:
            self.platform.free(old)
        self._bound[name] = buf

    def unbind(self, name: str) -> None:
        """Forget :meth:`bind_buffer`'s binding of ``name`` (calls take it per call again)."""
        self._check_open()
        self._info(name)
        buf = self._bound.pop(name, None)
        if buf is None:
            raise ArgumentError(f"buffer '{name}' is not bound")
        self._resident = None
        self.platform.free(buf)

    def upload(self, name: str, array: Any) -> None:
        """Copy a host array into the executable's own buffer ``name`` once and keep it bound there."""
        self._check_open()
        index, info = self._info(name)
        host = _check_host(info, index, array)
        if name in self._bound:
            self.unbind(name)
        own = self._own_buffer(index)
        self.platform.copy_in(own, host)
        self._resident = None
        self._bound[name] = DeviceBuffer(own.handle, own.nbytes, self.platform, owned=False)

    def buffer(self, name: str) -> DeviceArray:
        """The device memory buffer ``name`` uses now (bound, or the executable's own), as a tensor.

        The result speaks DLPack and, on ``cuda``, ``__cuda_array_interface__``:
        ``torch.from_dlpack(exe.buffer("y"))`` views an output in place, and
        ``other.bind_buffer("x", exe.buffer("y"))`` shares it with another executable.
        It is valid while this executable is open.
        """
        self._check_open()
        index, info = self._info(name)
        return DeviceArray(self._current(index), tuple(info.shape), info.dtype, self)

    @property
    def scalar_block(self) -> DeviceArray:
        """The launch-time scalars in device memory (``int32``, one per scalar, in slot order).

        A launch that gives no scalars reads them from here: write it on the
        device (e.g. between replays of a captured graph) to change them. The
        kernel checks each value against its range and fails the launch (an
        error at :meth:`synchronize`) on one outside it. Once the block was
        taken here, a launch without scalars no longer asks for
        :meth:`set_scalars` first: it reads what the caller wrote.
        """
        self._check_open()
        self._scalars_written = True  # the caller holds the block now: launches read what it wrote
        return DeviceArray(self._scalar_block, (len(self.program.scalars),), "i32", self)

    def set_scalars(self, /, *values: Any, **named: Any) -> None:
        """Check the launch-time scalars (by position or name) and write them into :attr:`scalar_block`."""
        self._check_open()
        declared = self.program.scalars
        if len(values) > len(declared):
            raise ArgumentError(f"expected at most {len(declared)} scalars "
                                f"({', '.join(sc.name for sc in declared) or 'the program has none'}), got {len(values)}")
        rest = dict(named)
        scalars = self._take_scalars(values, rest, 0)
        if rest:
            names = ", ".join(sc.name for sc in declared) or "none"
            raise ArgumentError(f"no scalar named '{next(iter(rest))}' (scalars: {names})")
        self._write_scalars(scalars, None)

    def _write_scalars(self, scalars: tuple[int, ...] | None, stream: Any) -> None:
        if scalars is None:
            if not self._scalars_written:
                names = ", ".join(sc.name for sc in self.program.scalars)
                raise ArgumentError(f"no values for the scalars ({names}): pass them, or call set_scalars first")
            return
        if scalars:
            self.platform.write_words(self._scalar_block, scalars, stream)
        self._scalars_written = True

    def _current(self, index: int) -> DeviceBuffer:
        bound = self._bound.get(self.program.buffers[index].name)
        return bound if bound is not None else self._own_buffer(index)

    def _own_buffer(self, index: int) -> DeviceBuffer:
        """The executable's own memory for buffer ``index``, allocated the first time it is needed: a
        buffer bound to a caller's memory before then (another executable's weights) never takes any."""
        own = self._own[index]
        if own is None:
            own = self._own[index] = self.platform.allocate(_nbytes(self.program.buffers[index]))
        return own

    # ---- running ----------------------------------------------------------
    def __call__(self, /, *args: Any, **named: Any) -> np.ndarray | dict[str, np.ndarray]:
        """Run the program once on host arrays; wait; return the output (or a dict name -> output).

        Bound buffers (:meth:`bind_buffer`, :meth:`upload`) are not passed;
        their outputs are left where they are and not returned.
        """
        self._check_open()
        scalars = self._take_scalars(args, named, len(self.call_inputs))
        arrays = self._host_arguments(args, named)
        buffers = [self._current(i) for i in range(len(self.program.buffers))]
        self._check_disjoint(buffers)
        for i, (info, buf) in enumerate(zip(self.program.buffers, buffers, strict=True)):
            if info.name in arrays:
                self.platform.copy_in(buf, arrays[info.name])
            elif i in self._zeroed and info.name not in self._bound:
                self.platform.fill_zero(buf)
        self._write_scalars(scalars, None)
        self._run(buffers, None, wait=True)
        results = {}
        for info, buf in zip(self.program.buffers, buffers, strict=True):
            if info.is_output and info.name not in self._bound:
                host = np.empty(tuple(info.shape), dtype=DTYPES[info.dtype])
                self.platform.copy_out(buf, host)
                results[info.name] = host
        if not results:
            return {}
        return next(iter(results.values())) if len(results) == 1 else results

    def launch(self, /, *args: Any, stream: Any = None, **named: Any) -> None:
        """Enqueue one run on device tensors, on ``stream``, without waiting.

        Inputs not bound come positionally (in :attr:`call_inputs` order) or
        by name; outputs and scratch buffers may be given by name (tensors the
        caller provides), else the executable's own are used (see
        :meth:`buffer`). ``out`` buffers that a launch may leave partly
        unwritten are zeroed on the stream first, unless bound: a bound
        buffer is the caller's, and keeps what the launch does not write. Scalars: by position after the inputs or by name, or
        none at all to use :attr:`scalar_block` as it is on the device.

        ``stream``: a raw handle, an object with ``__cuda_stream__`` (or
        torch's ``cuda_stream``), None for the backend's own. Launches of one
        executable must be ordered (one stream, or the caller orders them).
        Safe to capture in a CUDA graph. Device errors surface at
        :meth:`synchronize` (or the next host call).
        """
        self._check_open()
        handle = self.platform.stream_handle(stream)
        if not args and not named and self._resident is not None:  # the hot path: everything bound
            for buf in self._resident[1]:
                self.platform.fill_zero(buf, handle)
            self._launch_spec(self._resident[0], handle)
            return
        scalars = self._take_scalars(args, named, len(self.call_inputs), required=False)
        given = self._match(args, named, self.call_inputs,
                            {b.name for b in self.program.buffers if b.name not in self._bound}, "buffers")
        missing = [f"'{b.name}'" for b in self.call_inputs if b.name not in given]
        if missing:
            raise ArgumentError(f"missing argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
        buffers = [self._device_buffer(i, info, given[info.name]) if info.name in given else self._current(i)
                   for i, info in enumerate(self.program.buffers)]
        self._check_disjoint(buffers)
        self._write_scalars(scalars, handle)  # refuses a launch without scalars before any buffer is zeroed
        zeroed = [buf for i, buf in enumerate(buffers) if i in self._zeroed and self.program.buffers[i].name not in self._bound]
        for buf in zeroed:  # as on the host path
            self.platform.fill_zero(buf, handle)
        spec = self._spec(buffers)
        if not given and self._scalars_written:
            self._resident = (spec, zeroed)
        self._launch_spec(spec, handle)

    def _check_disjoint(self, buffers: list[DeviceBuffer]) -> None:
        """Refuse buffers that share memory where the program writes one of them (an output or scratch):
        the launch would read bytes it had already zeroed or overwritten. Inputs may share memory."""
        infos = self.program.buffers
        spans = [(_address(buf), _address(buf) + buf.nbytes, i) for i, buf in enumerate(buffers)]
        spans.sort()
        for k, (_start, end, i) in enumerate(spans):
            for start2, _end2, j in spans[k + 1:]:
                if start2 >= end:
                    break
                if _written(infos[i]) or _written(infos[j]):
                    first, second = sorted((i, j))
                    raise ArgumentError(
                        f"'{infos[first].name}' (#{first + 1}) and '{infos[second].name}' (#{second + 1}) share "
                        "memory, and the program writes one of them: give each its own")

    def synchronize(self) -> None:
        """Wait for this executable's launches; raise :class:`PlatformError` on a device error.

        After an error the executable is usable again (its sync block is reset).
        """
        self._check_open()
        try:
            self.platform.synchronize()
        except PlatformError:
            self._reset_sync()
            raise

    def _spec(self, buffers: list[DeviceBuffer]) -> LaunchSpec:
        return LaunchSpec(self.program, buffers, self._sync, self._scalar_block if self.program.scalars else None,
                          self.launch_options)

    def _launch_spec(self, spec: LaunchSpec, stream: Any) -> None:
        """Enqueue one launch; after a failure, zero the sync block (the next launch starts afresh)."""
        try:
            self.platform.launch(self.artifact, spec, stream)
        except PlatformError:
            self._reset_sync()
            raise

    def _run(self, buffers: list[DeviceBuffer], stream: Any, wait: bool) -> None:
        """One launch, waited for when ``wait``; after a failure, zero the sync block."""
        self._launch_spec(self._spec(buffers), stream)
        if wait:
            self.synchronize()

    def _reset_sync(self) -> None:
        if not getattr(self.platform, "_closed", False):
            self.platform.fill_zero(self._sync)

    def time(self, /, *args: Any, iterations: int = 10, **named: Any) -> list[float]:
        """The time of each of ``iterations`` launches on the bound inputs, in µs, in launch order.

        A list rather than one figure, so that the caller picks the summary
        (a median, a minimum) and sees the spread; modelled, not measured, on ``sim``.
        ``iterations`` is a positive integer (else an :class:`ArgumentError`). ``out`` buffers are not
        zeroed before or between the timed launches (a plain call's result is the one to read).
        """
        self._check_open()
        if isinstance(iterations, bool) or not isinstance(iterations, int | np.integer) or iterations < 1:
            raise ArgumentError(f"iterations must be a positive integer, got {iterations!r}")
        iterations = int(iterations)
        scalars = self._take_scalars(args, named, len(self.call_inputs))
        arrays = self._host_arguments(args, named)
        buffers = [self._current(i) for i in range(len(self.program.buffers))]
        self._check_disjoint(buffers)
        for info, buf in zip(self.program.buffers, buffers, strict=True):
            if info.name in arrays:
                self.platform.copy_in(buf, arrays[info.name])
        self._write_scalars(scalars, None)
        spec = LaunchSpec(self.program, buffers, self._sync, self._scalar_block if self.program.scalars else None,
                          self.launch_options)
        try:
            return self.platform.time_launches(self.artifact, spec, iterations)
        except PlatformError:
            self._reset_sync()
            raise

    def trace(self, path: str | Path | None = None) -> dict:
        """The last launch's trace (Chrome/Perfetto JSON, :mod:`vdir.device_runtime.trace`);
        written to ``path`` when given.

        The ``sim`` backend records one at every launch, in its cost model's
        time; ``cuda`` when the program was lowered with the ``trace``
        option (``options="trace=1"``), from the kernel's ``%globaltimer`` stamps.
        """
        recorded = self._last_trace()
        if path is not None:
            _check_trace_path(path)
            recorded.write(path)
        return recorded.to_json()

    def profile(self) -> LaunchProfile:
        """Where the last launch's time went (:mod:`vdir.device_runtime.profile`): each engine's busy
        share and the critical path by stage, from its trace (the same backends as :meth:`trace`)."""
        return launch_profile(self._last_trace())

    def _last_trace(self) -> Trace:
        """The last launch's trace; a :class:`PlatformError` saying why where there is none."""
        self._check_open()
        why = self.platform.trace_unavailable(self.artifact)
        if why:
            raise PlatformError(f"no trace: {why}")
        recorded = self.platform.last_trace()
        if recorded is None:
            raise PlatformError("no trace yet: call the executable first")
        return recorded

    def close(self) -> None:
        """Free the device buffers, drop the bindings and release the backend; a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        for buf in [*(own for own in self._own if own is not None), *self._bound.values(), self._sync,
                    self._scalar_block]:
            self.platform.free(buf)
        self._own, self._bound = [], {}
        self.platform.close()

    def __enter__(self) -> "Executable":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_trace_path(path: Any) -> None:
    """:class:`ArgumentError` unless ``path`` names a file that can be written (its folder exists)."""
    if not isinstance(path, str | Path):
        raise ArgumentError(f"trace: the path is a {type(path).__name__}, not a str or Path")
    target = Path(path)
    if target.is_dir():
        raise ArgumentError(f"trace: '{path}' is a folder; name the file to write")
    if not target.parent.is_dir():
        raise ArgumentError(f"trace: no such folder '{target.parent}' (create it first)")


def _written(info: BufferInfo) -> bool:
    """Whether the program writes buffer ``info`` (an output, or scratch)."""
    return info.is_output or not info.is_input


def _address(buf: DeviceBuffer) -> int:
    """The first byte's address of ``buf`` (the simulator's buffers are numpy arrays, the GPU's pointers)."""
    return int(buf.handle.ctypes.data) if isinstance(buf.handle, np.ndarray) else int(buf.handle)


def _nbytes(info: BufferInfo) -> int:
    return math.prod(info.shape) * DTYPE_BYTES[info.dtype]


def _checked_scalar(sc: ScalarInfo, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ArgumentError(f"scalar '{sc.name}': expected an integer, got {type(value).__name__}")
    if not sc.lo <= int(value) < sc.hi:
        raise ArgumentError(f"scalar '{sc.name}' = {int(value)} is outside its range {sc.lo} to {sc.hi}")
    return int(value)


def _check_host(info: BufferInfo, index: int, value: Any) -> np.ndarray:
    label = f"argument '{info.name}' (#{index + 1})"
    array = _as_host_array(value, label)
    want = f"{_shape_text(tuple(info.shape))} {info.dtype}"
    got = f"{_shape_text(array.shape)} {array.dtype}"
    if tuple(array.shape) != tuple(info.shape) or array.dtype != DTYPES[info.dtype]:
        raise ArgumentError(f"{label}: expected {want}, got {got}")
    if not array.flags.c_contiguous:
        raise ArgumentError(f"{label}: the array must be C-contiguous (use np.ascontiguousarray)")
    return array


def _check_view(info: BufferInfo, label: str, view: TensorView) -> None:
    """Shape, element type, layout, alignment and writability of a caller's tensor for ``info``."""
    want = f"{_shape_text(tuple(info.shape))} {info.dtype}"
    got = f"{_shape_text(view.shape)} {view.dtype}"
    if view.shape != tuple(info.shape) or view.dtype != info.dtype:
        raise ArgumentError(f"{label}: expected {want}, got {got}")
    if not view.contiguous:
        raise ArgumentError(f"{label}: the tensor must be contiguous in C order (strides {view.strides}); "
                            "make a contiguous copy")
    if not aligned(view.address):
        raise ArgumentError(f"{label}: its data at {view.address:#x} is not {BUFFER_ALIGNMENT}-byte aligned, "
                            "as bulk copies need")
    if info.is_output and view.readonly:
        raise ArgumentError(f"{label}: the tensor is read-only, and the program writes '{info.name}'")


def _s32_words(values: Any, room: int) -> list[int]:
    """``values`` as s32 words for :meth:`DeviceArray.write_words`: integers (not bools) in the s32 range,
    at most ``room`` of them; :class:`ArgumentError` naming the first that is not."""
    if isinstance(values, np.ndarray):
        values = values.tolist()
    try:
        words = list(values)
    except TypeError:
        raise ArgumentError(f"write_words: expected a sequence of integers, got {type(values).__name__}") from None
    if len(words) > room:
        raise ArgumentError(f"write_words: {len(words)} words do not fit the buffer's {room}")
    for k, v in enumerate(words):
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise ArgumentError(f"write_words: word {k} is {v!r}, not an integer")
        if not -(1 << 31) <= int(v) < (1 << 31):
            raise ArgumentError(f"write_words: word {k} ({int(v)}) is outside the s32 range")
    return [int(v) for v in words]


class DeviceArray:
    """Device memory of an executable's buffer, as a tensor other libraries can take without copying.

    Speaks DLPack (``__dlpack__``) and, on ``cuda``, ``__cuda_array_interface__``;
    ``numpy()`` copies it to the host. Valid while its executable is open.
    """

    def __init__(self, buffer: DeviceBuffer, shape: tuple[int, ...], dtype: str, owner: Executable):
        self._buffer, self.shape, self.dtype, self._owner = buffer, shape, dtype, owner

    def view(self) -> TensorView:
        """Its :class:`TensorView` (what :meth:`Executable.bind_buffer` reads)."""
        self._owner._check_open()
        if self._owner.backend == "sim":
            return tensor_view(self.numpy_view())
        return TensorView(int(self._buffer.handle), self.shape, None, self.dtype, DL_CUDA,
                          getattr(self._owner.platform, "_ordinal", 0), False, self)

    def numpy_view(self) -> np.ndarray:
        """On ``sim``: the buffer's host memory as a numpy array (no copy)."""
        self._owner._check_open()
        if self._owner.backend != "sim":
            raise PlatformError(f"a '{self._owner.backend}' buffer is device memory: use numpy() to copy it")
        elements = self._buffer.handle.view(DTYPES[self.dtype])
        return elements[: math.prod(self.shape)].reshape(self.shape)  # an empty scalar block keeps a word

    def write_words(self, values: Sequence[int], stream: Any = None) -> None:
        """Write s32 ``values`` at the buffer's start (a token id): ordered on ``stream``, not waited for;
        None: written and waited for now."""
        self._owner._check_open()
        words = _s32_words(values, self._buffer.nbytes // 4)
        handle = None if stream is None else self._owner.platform.stream_handle(stream)
        self._owner.platform.write_words(self._buffer, words, handle)

    def numpy(self) -> np.ndarray:
        """A host copy of the contents (waits for the executable's launches)."""
        self._owner._check_open()
        host = np.empty(self.shape, dtype=DTYPES[self.dtype])
        if host.size:  # the scalar block of a program without scalars keeps a word, and holds none
            self._owner.platform.copy_out(self._buffer, host)
        return host

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:  # noqa: PLW3201 -- the protocol's name
        """The CUDA array interface (version 3) of ``f32``, ``i32`` and ``i64`` buffers (bf16 has no typestr:
        DLPack)."""
        typestr = {"f32": "<f4", "i32": "<i4", "i64": "<i8"}.get(self.dtype)
        if self._owner.backend == "sim" or typestr is None:
            raise AttributeError("__cuda_array_interface__")
        return {"shape": self.shape, "typestr": typestr, "data": (int(self._buffer.handle), False),
                "version": 3, "strides": None, "stream": None}

    def __dlpack_device__(self) -> tuple[int, int]:
        if self._owner.backend == "sim":
            return (DL_CPU, 0)
        return (DL_CUDA, getattr(self._owner.platform, "_ordinal", 0))

    def __dlpack__(self, stream: Any = None, **_kwargs: Any) -> Any:  # noqa: ARG002 -- launches are ordered by the caller
        """A DLPack capsule viewing the buffer (the array keeps the executable's memory referenced)."""
        self._owner._check_open()
        address = self.numpy_view().ctypes.data if self._owner.backend == "sim" else int(self._buffer.handle)
        return dlpack_capsule(address, self.shape, self.dtype, self.__dlpack_device__(), self)
