"""The CUDA backend: runs the lowered persistent kernel through the driver API.

Only ``cuda.bindings.driver`` is used. The PTX from :func:`vdir.lowering.lower`
is compiled to a cubin once and loaded from the on-disk kernel cache after
that (:mod:`vdir.device_runtime.kernel_cache`); the instruction
stream and the queue table live in device memory for the artifact's
lifetime. Each distinct set of buffer addresses gets its own pointer table
and tensor maps, built once and passed to the kernel by address, so a launch
enqueues nothing but its memsets and the kernel, and a launch captured in a
CUDA graph keeps the tables of its capture. The epoch lives in the sync
block and advances on the device. :meth:`synchronize` reads the error record
and turns a report into a :class:`~vdir.device_runtime.platform.PlatformError`
naming the micro-op. A program lowered with the ``trace`` option also gets
a stamp buffer (the SM each CTA ran on, then ``layout.TRACE_STAMPS`` u64 per
instruction), zeroed before each launch; :meth:`CudaPlatform.last_trace`
decodes the last launch's stamps into a :class:`~vdir.device_runtime.trace.Trace`.

(``cuda.core`` would wrap the same calls; the raw bindings are kept because
the launch path is latency-bound, and its objects would add a layer per call.)
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from vdir import isa
from vdir.device_runtime.kernel_cache import load_module
from vdir.device_runtime.platform import (
    BackendUnavailable,
    DeviceBuffer,
    LaunchOption,
    LaunchSpec,
    Platform,
    PlatformError,
)
from vdir.device_runtime.tensors import DL_CUDA, TensorView
from vdir.device_runtime.trace import Trace
from vdir.lowering import layout as L
from vdir.lowering.emit import LoweredKernel, lower
from vdir.lowering.options import LoweringOptions
from vdir.target import TargetDescription, get_target, target_for_device

DEFAULT_WATCHDOG_MS = 1000.0
#: what the times of a decoded trace are
TRACE_CLOCK = "measured: %globaltimer stamps (ns), from the earliest start"


@functools.cache
def _driver():
    """``cuda.bindings.driver``, imported on first use (the launch path calls this per launch)."""
    from cuda.bindings import driver  # pyright: ignore[reportAttributeAccessIssue] -- a compiled module, no stubs

    return driver


@contextlib.contextmanager
def _relaxed_capture() -> Iterator[None]:
    """This thread in the relaxed stream-capture mode for the block, as other libraries' allocators do: a
    ``cuMemAlloc`` or a synchronous copy in it is allowed while a caller's stream is being captured in a
    graph (and is not part of the graph)."""
    drv = _driver()
    relaxed = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
    previous = _check(drv.cuThreadExchangeStreamCaptureMode(relaxed), "cuThreadExchangeStreamCaptureMode")
    try:
        yield
    finally:
        drv.cuThreadExchangeStreamCaptureMode(previous)


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


def _require_resident_clusters(fn: Any, lowered: LoweredKernel, cluster: int, stream: Any) -> None:
    """Raise unless the driver says every cluster of ``lowered``'s grid can be resident at once: the
    persistent kernel's CTAs wait on each other, so one left waiting for an SM would never be run
    (the watchdog would report the wait)."""
    drv = _driver()
    config = drv.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = lowered.grid, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = lowered.block_threads, 1, 1
    config.sharedMemBytes = lowered.dynamic_smem
    config.hStream = stream
    config.numAttrs = 0  # the kernel's .reqnctapercluster gives the cluster's size
    clusters = _check(drv.cuOccupancyMaxActiveClusters(fn, config), "cuOccupancyMaxActiveClusters")
    if clusters * cluster < lowered.grid:
        raise PlatformError(
            f"lowering option cluster_size={cluster}: at most {clusters} clusters ({clusters * cluster} CTAs) of "
            f"this kernel are resident at once, and all {lowered.grid} of its CTAs must be; use a smaller "
            f"cluster_size or compile the program for at most {clusters * cluster} SMs"
        )


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


#: the ctypes storage of each PTX parameter type (layout.PARAMS)
_ARGUMENT_TYPES = {"u64": ctypes.c_uint64, "u32": ctypes.c_uint32}

#: pointer tables an artifact keeps for launches outside a capture (those of captures are kept for good)
MAX_POINTER_TABLES = 256


@dataclass
class PointerTables:
    """The device tables of one set of buffer addresses: the pointer array and the tensor maps."""

    bufptrs: DeviceBuffer
    tmaps: DeviceBuffer
    captured: bool = False  # a captured graph may launch with them: never freed before the artifact


@dataclass
class CudaArtifact:
    """A loaded program: module, function, and its device-side tables."""

    program: isa.EncodedProgram
    lowered: LoweredKernel
    module: Any
    function: Any
    instrs: DeviceBuffer
    queues: DeviceBuffer
    error: DeviceBuffer  # the error record: written by a failing launch, cleared when reported
    tmap_specs: tuple[isa.TensorMapSpec, ...] = ()
    #: buffer addresses -> their tables, most recently used last
    tables: dict[tuple[int, ...], PointerTables] = field(default_factory=dict)
    #: (tables, sync, scalars, watchdog) -> the packed kernel arguments (kept alive with their storage)
    arguments: dict[tuple[int, ...], Any] = field(default_factory=dict)
    cache_hit: bool = False  # the kernel's cubin came from the kernel cache
    load_seconds: float = 0.0  # the module load: cache lookup, compilation on a miss, cuModuleLoadData
    #: the stamp buffer (each CTA's SM, then layout.TRACE_STAMPS u64 per instruction) of a kernel lowered
    #: with ``trace``
    trace: DeviceBuffer | None = None


@dataclass
class _Prepared:
    """A spec's launches on one stream: the packed arguments (their tables kept by the artifact)."""

    artifact: CudaArtifact
    stream: Any
    params: int  # the address of the void* array cuLaunchKernel takes
    pending: "_Pending"
    foreign: bool  # a caller's stream


@dataclass
class _Pending:
    """What a launch since the last synchronize needs for its error report and its reset."""

    artifact: CudaArtifact
    sync: DeviceBuffer
    watchdog_ms: float


def _device_name(dev: Any) -> str:
    """Device ``dev``'s name as the driver reports it (e.g. ``NVIDIA H200``); empty if it cannot say."""
    try:
        raw = _check(_driver().cuDeviceGetName(256, dev), "cuDeviceGetName")
    except PlatformError:
        return ""
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
    return text.split("\0", 1)[0].strip()


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
        self._ordinal = int(device)
        self._dev = _check(drv.cuDeviceGet(device), "cuDeviceGet")
        self._ctx = _check(drv.cuDevicePrimaryCtxRetain(self._dev), "cuDevicePrimaryCtxRetain")
        _check(drv.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")
        nb = drv.CUstream_flags.CU_STREAM_NON_BLOCKING
        self._stream = _check(drv.cuStreamCreate(nb), "cuStreamCreate")
        self._gate_stream = _check(drv.cuStreamCreate(nb), "cuStreamCreate")
        attr = drv.CUdevice_attribute
        nsm = self._attribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        smem = self._attribute(attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        t = get_target(target) if isinstance(target, str) else target
        # the device's SMs and shared-memory limit, not the description's, and its stream ring
        self._target = t.on_device(nsm, smem, self.device_name())
        self.watchdog_ms = watchdog_ms
        self._buffers: dict[int, DeviceBuffer] = {}
        self._artifacts: list[CudaArtifact] = []
        self._pending: dict[int, _Pending] = {}  # id(artifact) -> its launches since the last synchronize
        self._other_streams = False  # a launch since the last synchronize went to a caller's stream
        #: artifacts launched on a caller's stream, which may have been captured in a graph whose
        #: replays fail at any later time: every synchronize checks their records
        self._foreign: dict[int, _Pending] = {}
        self._last_stream: tuple[Any, Any] = (None, self._stream)  # (caller's object, its CUstream)
        #: each spec's checked, packed launch per stream (a spec's buffers are read on its first launch)
        self._prepared: weakref.WeakKeyDictionary[LaunchSpec, _Prepared] = weakref.WeakKeyDictionary()
        self._last_launched: CudaArtifact | None = None
        self._traced: CudaArtifact | None = None  # the last completed launch's, if it records a trace
        self._trace: Trace | None = None  # its stamps, decoded on demand
        self._closed = False

    def _attribute(self, attribute: Any) -> int:
        return int(_check(_driver().cuDeviceGetAttribute(attribute, self._dev), "cuDeviceGetAttribute"))

    # -- context ---------------------------------------------------------
    def device_name(self) -> str:
        """The GPU's name as the driver reports it (e.g. ``NVIDIA H200``); empty if it cannot say."""
        return _device_name(self._dev)

    @classmethod
    def device_target(cls) -> str | None:
        """The target whose ``device_names`` the name of device 0 matches (:func:`target_for_device`:
        ``h100`` on an H100), without opening a context; None without a usable device or for a GPU no
        target describes."""
        if not cls.is_available()[0]:
            return None
        try:  # as is_available reads device 0; cuDeviceGetName needs no context
            err, dev = _driver().cuDeviceGet(0)
            name = _device_name(dev) if err == _driver().CUresult.CUDA_SUCCESS else ""
        except Exception:  # noqa: BLE001  (is_available probed the driver: nothing is expected here)
            return None
        known = target_for_device(name)
        return known.name if known is not None else None

    def target(self) -> TargetDescription:
        """The target description as the device runs it (:meth:`~vdir.target.TargetDescription.on_device`:
        its SM count, shared-memory limit and stream ring)."""
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

    # -- streams -------------------------------------------------------------
    def stream_handle(self, stream: Any) -> Any:
        """A ``CUstream`` for a caller's stream: a raw handle (int), an object with ``__cuda_stream__``
        (``(version, handle)``), a ``cuda_stream`` attribute (torch) or a driver ``CUstream``; None: our own."""
        if stream is None:
            return self._stream
        if stream is self._last_stream[0]:
            return self._last_stream[1]
        handle = self._stream_of(stream)
        self._last_stream = (stream, handle)
        return handle

    def _stream_of(self, stream: Any) -> Any:
        drv = _driver()
        if isinstance(stream, drv.CUstream):
            return stream
        if hasattr(stream, "__cuda_stream__"):
            try:
                _version, handle = stream.__cuda_stream__()
            except Exception as e:  # noqa: BLE001 -- a producer's own failure
                raise PlatformError(f"stream: its __cuda_stream__() failed ({type(e).__name__}: {e})") from None
        else:
            handle = getattr(stream, "cuda_stream", stream)
        if isinstance(handle, bool) or not isinstance(handle, int | np.integer):
            raise PlatformError(f"stream: expected a stream handle (an int), an object with __cuda_stream__ "
                                f"or a CUstream, got {type(stream).__name__}")
        return drv.CUstream(int(handle))

    def is_capturing(self, stream: Any) -> bool:
        """``cuStreamIsCapturing``: whether work on ``stream`` is being recorded into a graph."""
        drv = _driver()
        status = _check(drv.cuStreamIsCapturing(stream), "cuStreamIsCapturing")
        return status != drv.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE

    # -- memory ------------------------------------------------------------
    def allocate(self, nbytes: int) -> DeviceBuffer:
        """``cuMemAlloc`` (at least 16 bytes, so every buffer is 256-aligned), in the relaxed capture mode:
        an executable allocates a buffer of its own at the launch that first needs it, which may be
        captured in a graph."""
        with _relaxed_capture():
            ptr = _check(_driver().cuMemAlloc(max(int(nbytes), 16)), "cuMemAlloc")
        buf = DeviceBuffer(handle=int(ptr), nbytes=int(nbytes), platform=self)
        self._buffers[int(ptr)] = buf
        return buf

    def free(self, buf: DeviceBuffer) -> None:
        """``cuMemFree`` (a borrowed buffer is only dropped)."""
        buf.keepalive = None
        if buf.owned and self._buffers.pop(int(buf.handle), None) is not None:
            _check(_driver().cuMemFree(int(buf.handle)), "cuMemFree")

    def wrap(self, view: TensorView) -> DeviceBuffer:
        """A caller's device memory as a borrowed buffer, after asking the driver where it lives."""
        drv = _driver()
        if view.device_type != DL_CUDA:
            raise PlatformError(f"it is on {view.device}; the cuda backend needs memory of cuda:{self._ordinal}")
        if view.address == 0:
            raise PlatformError("its data pointer is null")
        attr = drv.CUpointer_attribute
        try:
            kind = _check(drv.cuPointerGetAttribute(attr.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, view.address),
                          "cuPointerGetAttribute")
            ordinal = _check(drv.cuPointerGetAttribute(attr.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, view.address),
                             "cuPointerGetAttribute")
        except PlatformError:
            raise PlatformError(f"its address {view.address:#x} is not memory the CUDA driver knows") from None
        if int(kind) != int(drv.CUmemorytype.CU_MEMORYTYPE_DEVICE):
            raise PlatformError(f"its address {view.address:#x} is host memory, not memory of cuda:{self._ordinal}")
        if int(ordinal) != self._ordinal:
            raise PlatformError(f"it is on cuda:{int(ordinal)}; this executable runs on cuda:{self._ordinal}")
        return DeviceBuffer(view.address, view.nbytes, self, owned=False, keepalive=view.keepalive)

    def copy_in(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        """Host -> device copy of a contiguous array (ordered after our stream's work)."""
        host = np.ascontiguousarray(host)
        if host.nbytes > buf.nbytes:
            raise PlatformError(f"copy_in: {host.nbytes} bytes into a buffer of {buf.nbytes}")
        _check(_driver().cuMemcpyHtoDAsync(int(buf.handle), host.ctypes.data, host.nbytes, self._stream),
               "cuMemcpyHtoDAsync")
        _check(_driver().cuStreamSynchronize(self._stream), "cuStreamSynchronize")

    def copy_out(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        """Device -> host copy into a contiguous array."""
        if not host.flags.c_contiguous:
            raise PlatformError("copy_out needs a contiguous host array")
        self.synchronize()
        _check(_driver().cuMemcpyDtoH(host.ctypes.data, int(buf.handle), host.nbytes), "cuMemcpyDtoH")

    def fill_zero(self, buf: DeviceBuffer, stream: Any = None) -> None:
        """``cuMemsetD8Async`` to zero on ``stream`` (a ``CUstream``; None: our own, then waited for)."""
        if buf.nbytes:
            drv = _driver()
            s = self._stream if stream is None else stream
            _check(drv.cuMemsetD8Async(int(buf.handle), 0, buf.nbytes, s), "cuMemsetD8Async")
            if stream is None:
                _check(drv.cuStreamSynchronize(s), "cuStreamSynchronize")

    def write_words(self, buf: DeviceBuffer, values: Sequence[int], stream: Any = None) -> None:
        """One ``cuMemsetD32Async`` per value (capturable, no host staging), ordered like :meth:`fill_zero`."""
        drv = _driver()
        s = self._stream if stream is None else stream
        for i, v in enumerate(values):
            _check(drv.cuMemsetD32Async(int(buf.handle) + 4 * i, int(v) & 0xFFFFFFFF, 1, s), "cuMemsetD32Async")
        if stream is None:
            _check(drv.cuStreamSynchronize(s), "cuStreamSynchronize")

    def copy_device(self, dst: DeviceBuffer, src: DeviceBuffer, stream: Any = None) -> None:
        """``cuMemcpyDtoDAsync``, ordered like :meth:`fill_zero`."""
        if dst.nbytes != src.nbytes:
            raise PlatformError(f"copy_device: {src.nbytes} bytes into a buffer of {dst.nbytes}")
        drv = _driver()
        s = self._stream if stream is None else stream
        _check(drv.cuMemcpyDtoDAsync(int(dst.handle), int(src.handle), src.nbytes, s), "cuMemcpyDtoDAsync")
        if stream is None:
            _check(drv.cuStreamSynchronize(s), "cuStreamSynchronize")

    def _upload(self, arr: np.ndarray) -> DeviceBuffer:
        buf = self.allocate(arr.nbytes)
        self.copy_in(buf, arr)
        return buf

    # -- artifacts and launches ------------------------------------------------
    def load_artifact(self, program: isa.EncodedProgram, options: LoweringOptions | None = None) -> CudaArtifact:
        """Lower to PTX as ``options`` say (None: the defaults), load it through the kernel cache, raise
        the smem limit, upload the tables."""
        options = LoweringOptions.coerce(options)
        drv = _driver()
        if program.num_sms > self._target.num_sms:
            raise PlatformError(f"program uses {program.num_sms} SMs; the device has {self._target.num_sms}")
        try:
            program.check_loops()
            # the kernel copies what the words say: never outside a buffer (vdir.compile checked a program
            # handed over already; an Executable built directly, or from the compiler, is checked here)
            isa.check_regions(program)
            isa.check_reductions(program)
        except ValueError as e:  # a LoopFormError too
            raise PlatformError(f"malformed program: {e}") from None
        # loops are unrolled here unless the engines run them (lowering option run_loops)
        if options.expands_loops:
            program = program.without_loops()
        lowered = lower(program, self._target, options)
        loaded = load_module(lowered.ptx, self._dev)
        module = loaded.module
        fn = _check(drv.cuModuleGetFunction(module, lowered.name.encode()), "cuModuleGetFunction")
        _check(drv.cuFuncSetAttribute(
            fn, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, lowered.dynamic_smem),
            "cuFuncSetAttribute(max dynamic shared memory)")
        if options.cluster_size > 1:
            _require_resident_clusters(fn, lowered, options.cluster_size, self._stream)
        instrs = np.ascontiguousarray(program.instrs, dtype=np.uint32)
        try:
            specs = tuple(isa.tensor_map_table(program)) if options.tensor_copies_enabled else ()
        except ValueError as e:
            raise PlatformError(f"the program's tensor-copy words are inconsistent: {e}") from None
        error = self.allocate(4 * L.ERROR_WORDS)
        self.fill_zero(error)
        art = CudaArtifact(
            program=program, lowered=lowered, module=module, function=fn,
            instrs=self._upload(instrs if instrs.size else np.zeros(isa.INSTR_WORDS, np.uint32)),
            queues=self._upload(L.kernel_queue_table(program)), error=error, tmap_specs=specs,
            cache_hit=loaded.cache_hit, load_seconds=loaded.seconds,
            trace=self.allocate(8 * (L.TRACE_SM_WORDS + L.TRACE_STAMPS * max(program.executed_count(), 1)))
            if options.trace else None,
        )
        self._artifacts.append(art)
        return art

    def _pointer_tables(self, artifact: CudaArtifact, ptrs: tuple[int, ...], foreign: bool) -> PointerTables:
        """The tables of ``ptrs``, built (synchronously, on our own stream) the first time they are used.

        The build runs in the relaxed capture mode, as other libraries'
        allocators do, so that it may happen while a caller's stream is being
        captured; tables used on a caller's stream (``foreign``: maybe in a
        graph) are kept for the artifact's life.
        """
        tables = artifact.tables.pop(ptrs, None)
        if tables is None:
            with _relaxed_capture():
                tables = self._build_tables(artifact, ptrs)
            self._evict_tables(artifact)
        tables.captured = tables.captured or foreign
        artifact.tables[ptrs] = tables  # most recently used last
        return tables

    def _build_tables(self, artifact: CudaArtifact, ptrs: tuple[int, ...]) -> PointerTables:
        bufptrs = self._upload(np.array(ptrs or (0,), dtype=np.uint64))
        if artifact.tmap_specs:
            tmaps = self._upload(_tensor_maps(artifact.tmap_specs, ptrs, artifact.program))
        else:
            tmaps = self.allocate(L.TMAP_BYTES)
        return PointerTables(bufptrs, tmaps)

    def _evict_tables(self, artifact: CudaArtifact) -> None:
        """Past :data:`MAX_POINTER_TABLES`, free the least recently used uncaptured tables (after a sync)."""
        loose = [k for k, t in artifact.tables.items() if not t.captured]
        if len(loose) < MAX_POINTER_TABLES:
            return
        self.synchronize()  # no launch in flight may still read them
        for key in loose[: len(loose) // 2]:
            tables = artifact.tables.pop(key)
            self.free(tables.bufptrs)
            self.free(tables.tmaps)
        artifact.arguments.clear()
        self._prepared.clear()  # their packed arguments may point at the freed tables

    def _arguments(self, artifact: CudaArtifact, tables: PointerTables, spec: LaunchSpec, wd_ms: float) -> Any:
        """The packed kernel arguments (``void**``, as ``cuLaunchKernel`` takes them), cached per combination."""
        by_name = {
            "p_instrs": int(artifact.instrs.handle), "p_queues": int(artifact.queues.handle),
            "p_buffers": int(tables.bufptrs.handle), "p_sync": int(spec.sync.handle),
            "p_error": int(artifact.error.handle), "p_watchdog_ns": int(wd_ms * 1e6),
            "p_tmaps": int(tables.tmaps.handle),
            "p_scalars": int(spec.scalars.handle) if spec.scalars is not None else 0,
            L.TRACE_PARAM: int(artifact.trace.handle) if artifact.trace is not None else 0,
        }
        params = L.kernel_params(artifact.trace is not None)
        values = tuple(by_name[name] for _, name in params)
        packed = artifact.arguments.get(values)
        if packed is None:
            storage = [_ARGUMENT_TYPES[kind](v) for (kind, _), v in zip(params, values, strict=True)]
            pointers = (ctypes.c_void_p * len(storage))(*(ctypes.addressof(v) for v in storage))
            packed = artifact.arguments[values] = (pointers, storage)
        return packed[0]

    def launch(self, artifact: CudaArtifact, spec: LaunchSpec, stream: Any = None) -> None:
        """Enqueue one launch on ``stream`` (a ``CUstream`` from :meth:`stream_handle`; None: our own)."""
        self._launch(artifact, spec, self._stream if stream is None else stream, None, None)

    def _launch(self, artifact: CudaArtifact, spec: LaunchSpec, stream: Any, ev0: Any, ev1: Any) -> None:
        drv = _driver()
        prepared = self._prepared.get(spec)
        if prepared is None or prepared.stream is not stream or prepared.artifact is not artifact:
            prepared = self._prepared[spec] = self._prepare(artifact, spec, stream)
        if artifact.trace is not None:  # an instruction that does not run leaves its stamps 0
            _check(drv.cuMemsetD8Async(int(artifact.trace.handle), 0, artifact.trace.nbytes, stream),
                   "cuMemsetD8Async")
        lw = artifact.lowered
        if ev0 is not None:
            _check(drv.cuEventRecord(ev0, stream), "cuEventRecord")
        _check(drv.cuLaunchKernel(artifact.function, lw.grid, 1, 1, lw.block_threads, 1, 1,
                                  lw.dynamic_smem, stream, prepared.params, 0), "cuLaunchKernel")
        if ev1 is not None:
            _check(drv.cuEventRecord(ev1, stream), "cuEventRecord")
        self._pending[id(artifact)] = prepared.pending
        self._last_launched = artifact
        if prepared.foreign:
            self._foreign[id(artifact)] = prepared.pending
            self._other_streams = True

    def _prepare(self, artifact: CudaArtifact, spec: LaunchSpec, stream: Any) -> _Prepared:
        """Check ``spec`` against the program and pack what its launches on ``stream`` pass."""
        prog = artifact.program
        if len(spec.buffers) != len(prog.buffers):
            raise PlatformError(f"program takes {len(prog.buffers)} buffers, got {len(spec.buffers)}")
        if spec.sync.nbytes < prog.sync_bytes:
            raise PlatformError(f"the sync block has {spec.sync.nbytes} bytes; the program needs {prog.sync_bytes}")
        if prog.scalars and (spec.scalars is None or spec.scalars.nbytes < 4 * len(prog.scalars)):
            raise PlatformError(f"the program reads {len(prog.scalars)} scalar(s): the launch needs their block")
        foreign = stream is not self._stream
        tables = self._pointer_tables(artifact, tuple(int(b.handle) for b in spec.buffers), foreign)
        wd_ms = float(spec.options.get("watchdog_ms", self.watchdog_ms))
        params = self._arguments(artifact, tables, spec, wd_ms)
        return _Prepared(artifact, stream, ctypes.addressof(params), _Pending(artifact, spec.sync, wd_ms), foreign)

    def synchronize(self) -> None:
        """Wait for the launches since the last call; raise on a device error or an error record.

        Launches only on our own stream wait for that stream. Once a program
        was launched on a caller's stream every call waits for the whole
        context and checks that program's error record: the launch may have
        been captured in a graph whose replays run unseen. After a reported error the sync
        blocks of those launches are zeroed and the record is cleared, so the
        executable stays usable. A sticky device error frees everything.
        """
        drv = _driver()
        pending, self._pending = {**self._foreign, **self._pending}, {}
        whole_context, self._other_streams = self._other_streams or bool(self._foreign), False
        err = (drv.cuCtxSynchronize() if whole_context else drv.cuStreamSynchronize(self._stream))[0]
        if err != drv.CUresult.CUDA_SUCCESS:
            _, name = drv.cuGetErrorName(err)
            msg = f"kernel failed: {name.decode() if isinstance(name, bytes) else name}"
            self.close()
            raise PlatformError(msg + " (the CUDA context is unusable; everything was freed)")
        for p in pending.values():
            self._check_error_record(p.artifact, p.sync, p.watchdog_ms)
        if self._last_launched is not None:
            art, self._last_launched = self._last_launched, None
            self._traced = art if art.trace is not None else None
            self._trace = None

    def _check_error_record(self, artifact: CudaArtifact, sync: DeviceBuffer, watchdog_ms: float | None = None) -> None:
        """Raise the artifact's recorded error, if any, after zeroing ``sync`` and clearing the record.

        The caller has waited for the launches that may have written it.
        """
        drv = _driver()
        rec = np.zeros(L.ERROR_WORDS, dtype=np.uint32)
        _check(drv.cuMemcpyDtoH(rec.ctypes.data, int(artifact.error.handle), rec.nbytes), "cuMemcpyDtoH")
        if rec[L.E_CODE] != L.ERR_NONE:
            self.fill_zero(sync)
            self.fill_zero(artifact.error)
            raise PlatformError(describe_error(artifact.program, rec,
                                               self.watchdog_ms if watchdog_ms is None else watchdog_ms))

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
            executed = art.program.without_loops()  # the stamps' order
            stamps = raw[L.TRACE_SM_WORDS :].reshape(-1, L.TRACE_STAMPS)[: len(executed.instrs)]
            sm_ids = tuple(int(w) - 1 for w in raw[: executed.num_sms])  # -1: the CTA did not start
            self._trace = Trace.from_stamps(executed, stamps[:, L.TRACE_START], stamps[:, L.TRACE_END],
                                            TRACE_CLOCK, sm_ids)
        return self._trace

    def time_launches(self, artifact: CudaArtifact | Sequence[CudaArtifact], spec: LaunchSpec | Sequence[LaunchSpec],
                      iterations: int) -> list[float]:
        """Launch ``iterations`` times, CUDA events around each kernel; microseconds.

        Launches are queued in batches behind a gate (``cuStreamWaitValue32``
        on a device word that another stream sets once the batch is queued), so
        the GPU runs them back to back and host launch overhead stays out of
        the numbers. ``artifact`` and ``spec`` may also be equal-length lists,
        launched in rotation (e.g. several weight sets, so that the data does
        not stay in L2).
        """
        drv = _driver()
        if isinstance(artifact, CudaArtifact) and isinstance(spec, LaunchSpec):
            pairs = [(artifact, spec)]
        elif isinstance(artifact, (list, tuple)) and isinstance(spec, (list, tuple)):
            pairs = list(zip(artifact, spec, strict=True))
        else:
            raise TypeError("time_launches takes one artifact and spec, or equal-length lists of both")
        for art, sp in pairs:  # build the pointer tables outside the gated batches
            self._pointer_tables(art, tuple(int(b.handle) for b in sp.buffers), False)
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
                        self._launch(art, sp, self._stream, e0, e1)
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
    if code == L.ERR_DIVERGENT:
        return (f"{L.ERROR_NAMES[code]}: warp {int(rec[L.E_WARP])} of SM {sm} at uniform-branch check "
                f"#{int(rec[L.E_VALUE])} (lowering option uniform_checks; the check's label in the PTX is "
                f"$L_{L.UNIFORM_CHECK_LABEL}_{int(rec[L.E_VALUE])})")
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
    if code == L.ERR_SCALAR_RANGE:
        return _scalar_message(program, pos, int(rec[L.E_VALUE:L.E_VALUE + 1].view(np.int32)[0]))
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


def _scalar_message(program: isa.EncodedProgram, slot: int, value: int) -> str:
    """The message of an ``ERR_SCALAR_RANGE`` record: the scalar, its value, its range."""
    if not 0 <= slot < len(program.scalars):
        return f"launch-time scalar #{slot} = {value} is out of range"
    sc = program.scalars[slot]
    return (f"launch-time scalar '{sc.name}' = {value} is outside its range {sc.lo} to {sc.hi} "
            "(the launch did nothing)")
