"""Other libraries' tensors as vdir sees them: DLPack and the CUDA array interface, without torch.

:func:`tensor_view` reads where a tensor lives, its shape, element type and
strides from the producer's own protocol — ``__dlpack__`` (torch, CuPy, JAX,
numpy) or ``__cuda_array_interface__`` (Numba, CuPy, torch for the types it
can name) — and keeps the producer alive for as long as the view is held, so
that memory freed by its owner is never launched on. Nothing is copied.

The DLPack capsule is read with ctypes (the ABI of ``DLManagedTensor``,
DLPack 0.x/1.x unversioned); the capsule is kept, unconsumed, inside the view:
when the view goes away the capsule's destructor releases the producer's
reference, as the protocol intends.
"""

from __future__ import annotations

import ctypes
import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from vdir.diagnostics import VdirError
from vdir.families import DTYPE_BYTES

#: DLPack device types (``DLDeviceType``)
DL_CPU, DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED = 1, 2, 3, 13
DEVICE_NAMES = {DL_CPU: "cpu", DL_CUDA: "cuda", DL_CUDA_HOST: "cuda pinned host", DL_CUDA_MANAGED: "cuda managed"}

#: (DLPack type code, bits) -> vdir element type; code 0 int, 1 uint, 2 float, 4 bfloat
_DL_DTYPES = {(2, 32): "f32", (4, 16): "bf16", (0, 32): "i32", (0, 64): "i64"}
_DL_TYPE_NAMES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}
#: ``__cuda_array_interface__`` typestr -> vdir element type (bf16 has no typestr: use DLPack)
_CAI_DTYPES = {"<f4": "f32", "<i4": "i32", "<i8": "i64"}

#: byte alignment a buffer's base address needs (bulk and tensor copies)
BUFFER_ALIGNMENT = 16


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class TensorFormatError(VdirError, ValueError):
    """A tensor whose protocol data vdir cannot read (the message says what); callers add the argument's name."""


@dataclass(frozen=True)
class TensorView:
    """Where a tensor's elements are and how they are laid out, plus what keeps them alive.

    ``address`` is the first element's address (byte offset included);
    ``strides`` are in elements, None when the producer says the tensor is
    C-contiguous. ``dtype`` is a vdir element type name, or a description
    of a type vdir does not have (``"float64"``). ``host`` is the numpy
    view of a host tensor (None on a device).
    """

    address: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    dtype: str
    device_type: int
    device_id: int
    readonly: bool
    keepalive: Any
    host: np.ndarray | None = None

    @property
    def device(self) -> str:
        """``cpu``, ``cuda:N``, ... for messages."""
        name = DEVICE_NAMES.get(self.device_type, f"device type {self.device_type}")
        return f"{name}:{self.device_id}" if self.device_type == DL_CUDA else name

    @property
    def contiguous(self) -> bool:
        """Whether the elements are dense in C order (size-1 dimensions may have any stride)."""
        if self.strides is None:
            return True
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    @property
    def nbytes(self) -> int:
        """Bytes the elements take (a vdir element type; 0 for others)."""
        return int(np.prod(self.shape, dtype=np.int64)) * DTYPE_BYTES.get(self.dtype, 0)


def tensor_view(value: Any) -> TensorView:
    """The :class:`TensorView` of ``value``: a numpy array, or any DLPack / CUDA-array-interface producer.

    Raises :class:`TensorFormatError` when ``value`` speaks neither protocol or
    its data cannot be read.
    """
    if isinstance(value, np.ndarray):
        return _numpy_view(value)
    if _speaks(value, "__dlpack__") and _speaks(value, "__dlpack_device__"):
        return _dlpack_view(value)
    if _speaks(value, "__cuda_array_interface__"):
        return _cai_view(value)
    raise TensorFormatError(
        f"expected a numpy array or a tensor with __dlpack__ or __cuda_array_interface__, got {type(value).__name__}"
    )


def _speaks(value: Any, protocol: str) -> bool:
    """Whether ``value`` has the protocol attribute ``protocol``; a property of it that raises (torch's
    ``__cuda_array_interface__`` of a tensor that requires grad) is a :class:`TensorFormatError`."""
    try:
        return hasattr(value, protocol)
    except Exception as e:  # hasattr lets only AttributeError through as False
        raise TensorFormatError(f"its {protocol} failed ({type(e).__name__}: {e})") from None


def _numpy_view(array: np.ndarray) -> TensorView:
    dtype = next((name for name, dt in _numpy_dtypes().items() if array.dtype == dt), str(array.dtype))
    if array.itemsize and any(s % array.itemsize for s in array.strides):
        raise TensorFormatError(f"its strides ({', '.join(map(str, array.strides))} bytes) are not whole "
                                f"{array.itemsize}-byte elements")
    strides = tuple(s // array.itemsize for s in array.strides) if array.itemsize else None
    return TensorView(array.ctypes.data, tuple(array.shape), strides, dtype, DL_CPU, 0,
                      not array.flags.writeable, array, array)


def _numpy_dtypes() -> dict[str, np.dtype]:
    from vdir.families import DTYPES

    return {name: np.dtype(dt) for name, dt in DTYPES.items()}


#: the most dimensions a DLPack tensor may say it has (numpy's limit); a larger count is a malformed tensor,
#: whose shape is not read
MAX_DLPACK_DIMS = 64


def _dlpack_view(value: Any) -> TensorView:
    try:
        capsule = value.__dlpack__()
    except Exception as e:  # a producer's own failure
        raise TensorFormatError(f"its __dlpack__() failed ({type(e).__name__}: {e})") from None
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    try:
        address = get_pointer(capsule, b"dltensor")
    except Exception as e:  # a versioned or already consumed capsule
        raise TensorFormatError(f"its DLPack capsule is not an unconsumed 'dltensor' ({e})") from None
    t = _DLTensor.from_address(address)
    ndim = int(t.ndim)
    if not 0 <= ndim <= MAX_DLPACK_DIMS:
        raise TensorFormatError(f"its DLPack tensor is malformed ({ndim} dimensions)")
    if ndim and not t.shape:
        raise TensorFormatError(f"its DLPack tensor is malformed ({ndim} dimensions, no shape)")
    shape = tuple(int(t.shape[i]) for i in range(ndim))
    if any(d < 0 for d in shape) or math.prod(shape) >= 1 << 62:
        raise TensorFormatError(f"its DLPack tensor is malformed (shape {shape})")
    strides = tuple(int(t.strides[i]) for i in range(ndim)) if t.strides else None
    code, bits, lanes = int(t.dtype.code), int(t.dtype.bits), int(t.dtype.lanes)
    dtype = _DL_DTYPES.get((code, bits)) if lanes == 1 else None
    if dtype is None:
        dtype = f"{_DL_TYPE_NAMES.get(code, f'type code {code} ')}{bits}" + (f"x{lanes}" if lanes != 1 else "")
    view = TensorView(int(t.data or 0) + int(t.byte_offset), shape, strides, dtype, int(t.device.device_type),
                      int(t.device.device_id), False, (value, capsule))
    if not t.data and math.prod(shape):
        raise TensorFormatError("its DLPack tensor's data pointer is NULL")
    if view.device_type == DL_CPU and view.address and view.dtype in DTYPE_BYTES and view.contiguous:
        data = np.ctypeslib.as_array(ctypes.cast(view.address, ctypes.POINTER(ctypes.c_uint8)), (view.nbytes,))
        host = data.view(_numpy_dtypes()[view.dtype]).reshape(shape)
        view = dataclasses.replace(view, host=host, keepalive=(value, capsule, host))
    return view


def _cai_view(value: Any) -> TensorView:
    try:
        cai = value.__cuda_array_interface__
        shape = tuple(int(d) for d in cai["shape"])
        address, readonly = cai["data"]
        address = int(address or 0)
        typestr = str(cai["typestr"])
        itemsize = int(typestr[2:]) if typestr[2:].isdigit() else 1
        raw_strides = cai.get("strides")
        strides = tuple(int(s) // itemsize for s in raw_strides) if raw_strides is not None else None
    except Exception as e:  # any field of the wrong kind: a shape of text, a stride that is not a tuple, ...
        raise TensorFormatError(f"its __cuda_array_interface__ is malformed ({type(e).__name__}: {e})") from None
    if any(d < 0 for d in shape) or (strides is not None and len(strides) != len(shape)):
        raise TensorFormatError(f"its __cuda_array_interface__ is malformed (shape {shape}, strides {raw_strides})")
    dtype = _CAI_DTYPES.get(typestr, f"typestr {typestr}")
    return TensorView(address, shape, strides, dtype, DL_CUDA, -1, bool(readonly), value)


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


#: the managed tensors handed out and not yet deleted: address -> (struct, shape, owner)
_EXPORTED: dict[int, tuple[Any, ...]] = {}


@_DELETER
def _delete_exported(address: int | None) -> None:
    _EXPORTED.pop(int(address or 0), None)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_CAPSULE_DESTRUCTOR
def _destroy_capsule(capsule: int | None) -> None:
    """A capsule nobody consumed (still named ``dltensor``) deletes its tensor, as DLPack asks."""
    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.restype, is_valid.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]
    if capsule and is_valid(capsule, b"dltensor"):
        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]
        _EXPORTED.pop(int(get_pointer(capsule, b"dltensor") or 0), None)


def dlpack_capsule(address: int, shape: tuple[int, ...], dtype: str, device: tuple[int, int], owner: Any) -> Any:
    """A DLPack ``dltensor`` capsule of a C-contiguous ``dtype`` tensor at ``address``; ``owner`` is held until
    the consumer deletes it."""
    code, bits = next(key for key, name in _DL_DTYPES.items() if name == dtype)
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    managed = _DLManagedTensor()
    t = managed.dl_tensor
    t.data, t.ndim, t.byte_offset = address, len(shape), 0
    t.device.device_type, t.device.device_id = device
    t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, 1
    t.shape = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
    managed.deleter = _delete_exported
    key = ctypes.addressof(managed)
    _EXPORTED[key] = (managed, dims, owner)
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
    return new_capsule(key, b"dltensor", _destroy_capsule)


def aligned(address: int) -> bool:
    """Whether ``address`` meets :data:`BUFFER_ALIGNMENT`."""
    return address % BUFFER_ALIGNMENT == 0
