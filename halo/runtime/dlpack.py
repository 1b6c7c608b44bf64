"""GPU arrays that speak only DLPack (`__dlpack__` and `__dlpack_device__`, without
`__cuda_array_interface__`; `lang.environment.offers_cuda_dlpack` tells them apart): the
pointer, shape, strides and dtype read from the `DLManagedTensor` in the capsule the array
hands out.

The capsule is not consumed (its name stays "dltensor"): the array that made it frees
the tensor when the capsule is garbage collected, so a caller that keeps the capsule
keeps the memory. halo launches on the CUDA legacy default stream, which it asks the
producer to order its work before (`stream=1`, the DLPack convention).
"""
from __future__ import annotations

import ctypes

import numpy as np

_LEGACY_DEFAULT_STREAM = 1
# DLDataTypeCode -> the NumPy kind of its dtype (int, uint, float, bool).
_KINDS = {0: "i", 1: "u", 2: "f", 6: "b"}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class DLPackView:
    """What a DLPack capsule describes: `pointer` (of the first element), `shape`,
    `strides` (in bytes, as NumPy's), `dtype`; `capsule` keeps the memory alive. `problem`
    is what halo can't take of it (vector lanes, a dtype NumPy lacks), else ''."""

    def __init__(self, a: object):
        try:
            self.capsule = a.__dlpack__(stream=_LEGACY_DEFAULT_STREAM)
        except TypeError:  # an exporter from before the stream argument
            self.capsule = a.__dlpack__()
        tensor = _DLTensor.from_address(_get_pointer(self.capsule, b"dltensor"))
        code, bits, lanes = tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes
        self.problem = ""
        kind = _KINDS.get(code)
        if lanes != 1 or kind is None or (kind == "b" and bits != 8):
            self.problem = f"DLPack dtype (code {code}, {bits} bits, {lanes} lanes)"
            kind, bits = "u", 8
        self.dtype = np.dtype(f"{kind}{bits // 8}") if kind != "b" else np.dtype(bool)
        self.shape = tuple(int(tensor.shape[i]) for i in range(tensor.ndim))
        if tensor.strides:
            self.strides = tuple(int(tensor.strides[i]) * self.dtype.itemsize
                                 for i in range(tensor.ndim))
        else:  # C-contiguous
            self.strides = tuple(int(np.prod(self.shape[i + 1:], dtype=np.int64)) *
                                 self.dtype.itemsize for i in range(tensor.ndim))
        self.pointer = (tensor.data or 0) + tensor.byte_offset
