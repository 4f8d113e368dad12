"""The CUDA backend: runs the lowered persistent kernel through the driver API.

Only ``cuda.bindings.driver`` is used. The PTX from :func:`vdir.lowering.lower`
is loaded with ``cuModuleLoadData`` (the driver's JIT); the instruction
stream, the queue table and the buffer-pointer array live in device memory
for the artifact's lifetime. A launch passes the epoch; :meth:`synchronize`
reads each launch's error record and turns a watchdog report into a
:class:`~vdir.device_runtime.platform.PlatformError` naming the micro-op.
A program lowered with the ``trace`` option also gets a stamp buffer
(``layout.TRACE_STAMPS`` u64 per instruction), zeroed before each launch;
:meth:`CudaPlatform.last_trace` decodes the last launch's stamps into a
:class:`~vdir.device_runtime.trace.Trace`.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from vdir import isa
from vdir.device_runtime.platform import (
    BackendUnavailable,
    DeviceBuffer,
    LaunchOption,
    LaunchSpec,
    Platform,
    PlatformError,
)
from vdir.device_runtime.trace import Trace
from vdir.lowering import layout as L
from vdir.lowering.emit import LoweredKernel, lower
from vdir.lowering.options import LoweringOptions
from vdir.target import TargetDescription, get_target

DEFAULT_WATCHDOG_MS = 1000.0
#: what the times of a decoded trace are
TRACE_CLOCK = "measured: %globaltimer stamps (ns), from the earliest start"


def _driver():
    from cuda.bindings import driver  # pyright: ignore[reportAttributeAccessIssue] -- a compiled module, no stubs

    return driver


def _check(res: Any, what: str) -> Any:
    """Unwrap a driver call's ``(CUresult, ...)`` tuple; raise on an error."""
    drv = _driver()
    if isinstance(res, tuple):
        err, rest = res[0], res[1:]
    else:
        err, rest = res, ()
    if err != drv.CUresult.CUDA_SUCCESS:
        _, name = drv.cuGetErrorName(err)
        _, desc = drv.cuGetErrorString(err)
        name = name.decode() if isinstance(name, bytes) else name
        desc = desc.decode() if isinstance(desc, bytes) else desc
        raise PlatformError(f"{what} failed: {name} ({desc})")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


_TMAP_DTYPES = {1: "CU_TENSOR_MAP_DATA_TYPE_UINT8", 2: "CU_TENSOR_MAP_DATA_TYPE_UINT16",
                4: "CU_TENSOR_MAP_DATA_TYPE_UINT32", 8: "CU_TENSOR_MAP_DATA_TYPE_UINT64"}


def _tensor_maps(specs, ptrs: tuple[int, ...], program: isa.EncodedProgram) -> np.ndarray:
    """The CUtensorMap bytes of ``specs`` over the bound buffers, one per L.TMAP_BYTES."""
    drv = _driver()
    out = np.zeros((len(specs), L.TMAP_BYTES // 8), dtype=np.uint64)
    for i, s in enumerate(specs):
        ptr = ptrs[s.buffer]
        if ptr % 16:
            raise PlatformError(f"buffer '{program.buffers[s.buffer].name}' is at {ptr:#x}, "
                                "not 16-byte aligned as tensor copies need")
        tm = _check(drv.cuTensorMapEncodeTiled(
            getattr(drv.CUtensorMapDataType, _TMAP_DTYPES[s.elem_bytes]), 3, ptr,
            [drv.cuuint64_t(v) for v in s.global_dims], [drv.cuuint64_t(v) for v in s.global_strides],
            [drv.cuuint32_t(v) for v in s.box_dims], [drv.cuuint32_t(1)] * 3,
            drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
            drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
            drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        ), f"cuTensorMapEncodeTiled (buffer '{program.buffers[s.buffer].name}')")
        out[i] = np.array(tm.opaque, dtype=np.uint64)
    return out


@dataclass
class CudaArtifact:
    """A loaded program: module, function, and its device-side tables."""

    program: isa.EncodedProgram
    lowered: LoweredKernel
    module: Any
    function: Any
    instrs: DeviceBuffer
    queues: DeviceBuffer
    bufptrs: DeviceBuffer
    error: DeviceBuffer
    tmaps: DeviceBuffer  # the tensor maps of tmap_specs, rebuilt when the buffers change
    scalars: DeviceBuffer  # the launch-time scalars (s32 each), written before each launch
    tmap_specs: tuple[isa.TensorMapSpec, ...] = ()
    last_ptrs: tuple[int, ...] = ()
    #: the stamp buffer (layout.TRACE_STAMPS u64 per instruction) of a kernel lowered with ``trace``
    trace: DeviceBuffer | None = None


@dataclass
class _Pending:
    artifact: CudaArtifact
    spec: LaunchSpec
    watchdog_ms: float


class CudaPlatform(Platform):
    """A CUDA device driven through ``cuda.bindings.driver``."""

    name = "cuda"
    LAUNCH_OPTIONS: ClassVar[Mapping[str, LaunchOption]] = {"watchdog_ms": LaunchOption(float, minimum=0)}

    @classmethod
    def is_available(cls) -> tuple[bool, str]:
        """Probe ``cuInit`` and the device count; never raises."""
        try:
            drv = _driver()
        except Exception as e:  # noqa: BLE001
            return False, f"cuda-python's driver bindings are not importable ({e})"
        try:
            err = drv.cuInit(0)[0]
            if err != drv.CUresult.CUDA_SUCCESS:
                return False, f"cuInit failed ({err.name})"
            err, n = drv.cuDeviceGetCount()
            if err != drv.CUresult.CUDA_SUCCESS or n == 0:
                return False, "no CUDA device"
            err, dev = drv.cuDeviceGet(0)
            a = drv.CUdevice_attribute
            _, major = drv.cuDeviceGetAttribute(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
            if major < 9:
                return False, f"device 0 has compute capability {major}.x; the kernel needs sm_90a"
        except Exception as e:  # noqa: BLE001  (no driver library, etc.)
            return False, f"no usable CUDA driver ({type(e).__name__}: {e})"
        return True, ""

    def __init__(self, device: int = 0, target: str | TargetDescription = "h200",
                 watchdog_ms: float = DEFAULT_WATCHDOG_MS):
        ok, why = self.is_available()
        if not ok:
            raise BackendUnavailable(f"cuda backend unavailable: {why}")
        drv = _driver()
        self._dev = _check(drv.cuDeviceGet(device), "cuDeviceGet")
        self._ctx = _check(drv.cuDevicePrimaryCtxRetain(self._dev), "cuDevicePrimaryCtxRetain")
        _check(drv.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")
        nb = drv.CUstream_flags.CU_STREAM_NON_BLOCKING
        self._stream = _check(drv.cuStreamCreate(nb), "cuStreamCreate")
        self._gate_stream = _check(drv.cuStreamCreate(nb), "cuStreamCreate")
        nsm = _check(drv.cuDeviceGetAttribute(
            drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, self._dev), "cuDeviceGetAttribute")
        t = get_target(target) if isinstance(target, str) else target
        if nsm < t.num_sms:
            t = t.with_sms(nsm)
        self._target = t
        self.watchdog_ms = watchdog_ms
        self._buffers: dict[int, DeviceBuffer] = {}
        self._artifacts: list[CudaArtifact] = []
        self._pending: list[_Pending] = []
        self._traced: CudaArtifact | None = None  # the last completed launch's, if it records a trace
        self._trace: Trace | None = None  # its stamps, decoded on demand
        self._closed = False

    # -- context ---------------------------------------------------------
    def device_name(self) -> str:
        """The GPU's name as the driver reports it (e.g. ``NVIDIA H200``); empty if it cannot say."""
        try:
            raw = _check(_driver().cuDeviceGetName(256, self._dev), "cuDeviceGetName")
        except PlatformError:
            return ""
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        return text.split("\0", 1)[0].strip()

    def target(self) -> TargetDescription:
        """The target description (SM count read off the device)."""
        return self._target

    def close(self) -> None:
        """Free every buffer and module and release the primary context."""
        if self._closed:
            return
        drv = _driver()
        self._closed = True
        for art in self._artifacts:
            drv.cuModuleUnload(art.module)
        self._artifacts.clear()
        for ptr in list(self._buffers):
            drv.cuMemFree(ptr)
        self._buffers.clear()
        drv.cuStreamDestroy(self._stream)
        drv.cuStreamDestroy(self._gate_stream)
        drv.cuDevicePrimaryCtxRelease(self._dev)

    # -- memory ------------------------------------------------------------
    def allocate(self, nbytes: int) -> DeviceBuffer:
        """``cuMemAlloc`` (at least 16 bytes, so every buffer is 256-aligned)."""
        ptr = _check(_driver().cuMemAlloc(max(int(nbytes), 16)), "cuMemAlloc")
        buf = DeviceBuffer(handle=int(ptr), nbytes=int(nbytes), platform=self)
        self._buffers[int(ptr)] = buf
        return buf

    def free(self, buf: DeviceBuffer) -> None:
        """``cuMemFree``."""
        if self._buffers.pop(int(buf.handle), None) is not None:
            _check(_driver().cuMemFree(int(buf.handle)), "cuMemFree")

    def copy_in(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        """Host -> device copy of a contiguous array."""
        host = np.ascontiguousarray(host)
        if host.nbytes > buf.nbytes:
            raise PlatformError(f"copy_in: {host.nbytes} bytes into a buffer of {buf.nbytes}")
        _check(_driver().cuMemcpyHtoD(int(buf.handle), host.ctypes.data, host.nbytes), "cuMemcpyHtoD")

    def copy_out(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        """Device -> host copy into a contiguous array."""
        if not host.flags.c_contiguous:
            raise PlatformError("copy_out needs a contiguous host array")
        self.synchronize()
        _check(_driver().cuMemcpyDtoH(host.ctypes.data, int(buf.handle), host.nbytes), "cuMemcpyDtoH")

    def fill_zero(self, buf: DeviceBuffer) -> None:
        """``cuMemsetD8`` to zero."""
        if buf.nbytes:
            _check(_driver().cuMemsetD8(int(buf.handle), 0, buf.nbytes), "cuMemsetD8")

    def _upload(self, arr: np.ndarray) -> DeviceBuffer:
        buf = self.allocate(arr.nbytes)
        self.copy_in(buf, arr)
        return buf

    # -- artifacts and launches ------------------------------------------------
    def load_artifact(self, program: isa.EncodedProgram, options: LoweringOptions | None = None) -> CudaArtifact:
        """Lower to PTX as ``options`` say (None: the defaults), JIT-load it, raise the smem limit,
        upload the tables."""
        options = LoweringOptions.coerce(options)
        drv = _driver()
        if program.num_sms > self._target.num_sms:
            raise PlatformError(f"program uses {program.num_sms} SMs; the device has {self._target.num_sms}")
        try:
            program.check_loops()
        except isa.LoopFormError as e:
            raise PlatformError(f"malformed program: {e}") from None
        # the kernel walks plain queues: loop records are expanded here
        program = program.without_loops()
        lowered = lower(program, self._target, options)
        module = _check(drv.cuModuleLoadData(lowered.ptx.encode() + b"\0"), "cuModuleLoadData (PTX JIT)")
        fn = _check(drv.cuModuleGetFunction(module, lowered.name.encode()), "cuModuleGetFunction")
        _check(drv.cuFuncSetAttribute(
            fn, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, lowered.dynamic_smem),
            "cuFuncSetAttribute(max dynamic shared memory)")
        instrs = np.ascontiguousarray(program.instrs, dtype=np.uint32)
        try:
            specs = tuple(isa.tensor_map_table(program)) if options.tensor_copies_enabled else ()
        except ValueError as e:
            raise PlatformError(f"the program's tensor-copy words are inconsistent: {e}") from None
        art = CudaArtifact(
            program=program, lowered=lowered, module=module, function=fn,
            instrs=self._upload(instrs if instrs.size else np.zeros(isa.INSTR_WORDS, np.uint32)),
            queues=self._upload(program.queue_table()),
            bufptrs=self.allocate(8 * max(len(program.buffers), 1)),
            error=self.allocate(4 * L.ERROR_WORDS),
            tmaps=self.allocate(L.TMAP_BYTES * max(len(specs), 1)),
            scalars=self.allocate(4 * max(len(program.scalars), 1)),
            tmap_specs=specs,
            trace=self.allocate(8 * L.TRACE_STAMPS * max(len(program.instrs), 1)) if options.trace else None,
        )
        self._artifacts.append(art)
        return art

    def launch(self, artifact: CudaArtifact, spec: LaunchSpec) -> None:
        """Clear the error record and launch with ``spec.epoch`` (asynchronous)."""
        self._launch(artifact, spec, None, None)

    def _launch(self, artifact: CudaArtifact, spec: LaunchSpec, ev0: Any, ev1: Any) -> None:
        drv = _driver()
        prog = artifact.program
        if len(spec.buffers) != len(prog.buffers):
            raise PlatformError(f"program takes {len(prog.buffers)} buffers, got {len(spec.buffers)}")
        if spec.epoch < 1:
            raise PlatformError("epoch must be >= 1")
        ptrs = tuple(int(b.handle) for b in spec.buffers)
        if ptrs != artifact.last_ptrs:
            arr = np.array(ptrs or (0,), dtype=np.uint64)
            # stream-ordered: launches already queued keep their pointers
            # (pageable source: the driver stages it before returning)
            _check(drv.cuMemcpyHtoDAsync(int(artifact.bufptrs.handle), arr.ctypes.data, arr.nbytes,
                                         self._stream), "cuMemcpyHtoDAsync")
            if artifact.tmap_specs:
                maps = _tensor_maps(artifact.tmap_specs, ptrs, prog)
                _check(drv.cuMemcpyHtoDAsync(int(artifact.tmaps.handle), maps.ctypes.data, maps.nbytes,
                                             self._stream), "cuMemcpyHtoDAsync")
            artifact.last_ptrs = ptrs
        if len(spec.scalars) != len(prog.scalars):
            raise PlatformError(f"program takes {len(prog.scalars)} scalars, got {len(spec.scalars)}")
        if spec.scalars:
            # stream-ordered, like the pointer table (pageable: staged before returning)
            values = np.array(spec.scalars, dtype=np.int32)
            _check(drv.cuMemcpyHtoDAsync(int(artifact.scalars.handle), values.ctypes.data, values.nbytes,
                                         self._stream), "cuMemcpyHtoDAsync")
        _check(drv.cuMemsetD32Async(int(artifact.error.handle), 0, L.ERROR_WORDS, self._stream), "cuMemsetD32Async")
        if artifact.trace is not None:  # an instruction that does not run leaves its stamps 0
            _check(drv.cuMemsetD8Async(int(artifact.trace.handle), 0, artifact.trace.nbytes, self._stream),
                   "cuMemsetD8Async")
        wd_ms = float(spec.options.get("watchdog_ms", self.watchdog_ms))
        args = (
            (int(artifact.instrs.handle), int(artifact.queues.handle), int(artifact.bufptrs.handle),
             int(spec.counters.handle), spec.epoch, int(artifact.error.handle), int(wd_ms * 1e6),
             int(artifact.tmaps.handle), int(artifact.scalars.handle)),
            (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32,
             ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p),
        )
        # the trace buffer, the last parameter: a kernel lowered without the
        # trace option does not declare it, and the driver reads only the
        # arguments a kernel declares
        trace_ptr = int(artifact.trace.handle) if artifact.trace is not None else 0
        args = (args[0] + (trace_ptr,), args[1] + (ctypes.c_void_p,))
        lw = artifact.lowered
        if ev0 is not None:
            _check(drv.cuEventRecord(ev0, self._stream), "cuEventRecord")
        _check(drv.cuLaunchKernel(artifact.function, lw.grid, 1, 1, lw.block_threads, 1, 1,
                                  lw.dynamic_smem, self._stream, args, 0), "cuLaunchKernel")
        if ev1 is not None:
            _check(drv.cuEventRecord(ev1, self._stream), "cuEventRecord")
        self._pending.append(_Pending(artifact, spec, wd_ms))

    def synchronize(self) -> None:
        """Wait for the stream; raise on a device error or a watchdog report.

        After a failed launch the counters are zeroed again (the next launch
        must use epoch 1). A sticky device error frees everything.
        """
        drv = _driver()
        pending, self._pending = self._pending, []
        err = drv.cuStreamSynchronize(self._stream)[0]
        if err != drv.CUresult.CUDA_SUCCESS:
            _, name = drv.cuGetErrorName(err)
            msg = f"kernel failed: {name.decode() if isinstance(name, bytes) else name}"
            self.close()
            raise PlatformError(msg + " (the CUDA context is unusable; everything was freed)")
        for p in pending:
            rec = np.zeros(L.ERROR_WORDS, dtype=np.uint32)
            _check(drv.cuMemcpyDtoH(rec.ctypes.data, int(p.artifact.error.handle), rec.nbytes), "cuMemcpyDtoH")
            if rec[L.E_CODE] != L.ERR_NONE:
                self.fill_zero(p.spec.counters)
                raise PlatformError(describe_error(p.artifact.program, rec, p.watchdog_ms))
        if pending:
            self._traced = pending[-1].artifact if pending[-1].artifact.trace is not None else None
            self._trace = None

    def trace_unavailable(self, artifact: CudaArtifact) -> str:
        """Why launches of ``artifact`` record no trace ("" when they do)."""
        if artifact.trace is None:
            return "the program was lowered without the trace option (compile it with options='trace=1')"
        return ""

    def last_trace(self) -> Trace | None:
        """The trace of the last completed launch (after waiting for any still queued), or None
        when that launch's program was not lowered with the ``trace`` option.

        The stamps are copied out and decoded on the first call; an
        instruction that did not run (stamps 0) is left out.
        """
        if self._pending:
            self.synchronize()
        art = self._traced
        if self._trace is None and art is not None and art.trace is not None and not self._closed:
            raw = np.zeros(art.trace.nbytes // 8, dtype=np.uint64)
            _check(_driver().cuMemcpyDtoH(raw.ctypes.data, int(art.trace.handle), raw.nbytes), "cuMemcpyDtoH")
            stamps = raw.reshape(-1, L.TRACE_STAMPS)[: len(art.program.instrs)]
            self._trace = Trace.from_stamps(art.program, stamps[:, L.TRACE_START], stamps[:, L.TRACE_END],
                                            TRACE_CLOCK)
        return self._trace

    def time_launches(self, artifact: CudaArtifact | Sequence[CudaArtifact], spec: LaunchSpec | Sequence[LaunchSpec],
                      iterations: int) -> list[float]:
        """Launch ``iterations`` times, CUDA events around each kernel; microseconds.

        Launches are queued in batches behind a gate (``cuStreamWaitValue32``
        on a device word that another stream sets once the batch is queued), so
        the GPU runs them back to back and host launch overhead stays out of
        the numbers. Uses epochs ``spec.epoch, spec.epoch + 1, ...`` and leaves
        ``spec.epoch`` at the next unused one. ``artifact`` and ``spec`` may also
        be equal-length lists, launched in rotation (e.g. several weight sets,
        so that the data does not stay in L2); epochs then advance per pair.
        """
        drv = _driver()
        if isinstance(artifact, CudaArtifact) and isinstance(spec, LaunchSpec):
            pairs = [(artifact, spec)]
        elif isinstance(artifact, (list, tuple)) and isinstance(spec, (list, tuple)):
            pairs = list(zip(artifact, spec, strict=True))
        else:
            raise TypeError("time_launches takes one artifact and spec, or equal-length lists of both")
        times: list[float] = []
        gate = self.allocate(4)
        try:
            done = 0
            while done < iterations:
                n = min(64, iterations - done)
                self.fill_zero(gate)
                r = drv.cuStreamWaitValue32(self._stream, int(gate.handle), 1,
                                            drv.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ)
                gated = r[0] == drv.CUresult.CUDA_SUCCESS
                evs = [(_check(drv.cuEventCreate(0), "cuEventCreate"), _check(drv.cuEventCreate(0), "cuEventCreate"))
                       for _ in range(n)]
                try:
                    for k, (e0, e1) in enumerate(evs):
                        art, sp = pairs[(done + k) % len(pairs)]
                        self._launch(art, sp, e0, e1)
                        sp.epoch += 1
                    if gated:
                        _check(drv.cuMemsetD32Async(int(gate.handle), 1, 1, self._gate_stream), "cuMemsetD32Async")
                    self.synchronize()
                    times += [1000.0 * _check(drv.cuEventElapsedTime(e0, e1), "cuEventElapsedTime")
                              for e0, e1 in evs]
                finally:
                    for e0, e1 in evs:
                        drv.cuEventDestroy(e0)
                        drv.cuEventDestroy(e1)
                done += n
        finally:
            if not self._closed:
                self.free(gate)
        return times


def describe_error(program: isa.EncodedProgram, rec: np.ndarray, watchdog_ms: float) -> str:
    """A readable message for an error record (``layout.E_*`` words)."""
    code = int(rec[L.E_CODE])
    sm, eng, pos = int(rec[L.E_SM]), int(rec[L.E_ENGINE]), int(rec[L.E_POS])
    try:
        who = program.describe(sm, eng, pos)
    except Exception:  # noqa: BLE001
        names = get_target(program.target).engine_names
        engine = names[eng] if eng < len(names) else f"#{eng}"
        who = f"micro-op #{int(rec[L.E_UOP])} (SM {sm}, {engine} engine, queue position {pos})"
    if code == L.ERR_WATCHDOG:
        mask = isa.join_u64(rec[L.E_WAIT_MASK], rec[L.E_WAIT_MASK + 1])
        par = isa.join_u64(rec[L.E_WAIT_PARITY], rec[L.E_WAIT_PARITY + 1])
        bm = isa.join_u64(rec[L.E_BITMAP], rec[L.E_BITMAP + 1])
        msg = (f"watchdog: {who} waited > {watchdog_ms:g} ms on bits {mask:#x} "
               f"(want {par & mask:#x}, bitmap {bm:#x})")
        ctr = int(rec[L.E_COUNTER])
        if ctr:
            msg += (f" / counter {ctr - 1} (value {int(rec[L.E_COUNTER_VALUE])}, "
                    f"wanted {int(rec[L.E_COUNTER_WANTED])})")
        return msg
    if code == L.ERR_BOUNDS:
        return _bounds_message(program, sm, eng, pos, int(rec[L.E_VALUE:L.E_VALUE + 1].view(np.int32)[0]), who)
    return f"{L.ERROR_NAMES.get(code, f'error code {code}')} at {who}"


def _bounds_message(program: isa.EncodedProgram, sm: int, engine: int, pos: int, value: int, who: str) -> str:
    """The message of an ``ERR_BOUNDS`` record: which value, its range, which buffer."""
    try:
        ins = program.instruction(sm, engine, pos)
        source = isa.source_text(program, ins.get(isa.DYN_SOURCE), ins.get(isa.DYN_INDEX))
        buf = program.buffers[ins.get(isa.BUFFER)].name
        rng = f"{ins.get(isa.DYN_MIN)}..{ins.get(isa.DYN_MAX)}"
    except (IndexError, ValueError):  # a record that does not match the program
        return f"runtime offset out of range at {who}: value {value}"
    return (f"{who}: runtime offset {source} = {value} is outside its checked range {rng} "
            f"(the region would leave buffer '{buf}')")
