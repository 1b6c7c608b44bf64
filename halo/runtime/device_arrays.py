"""Arrays of a pipeline that runs on a GPU: NumPy arrays copied to and from the device,
GPU arrays used in place.

A GPU array is anything with `__cuda_array_interface__` (PyTorch CUDA tensors, CuPy
arrays, PyCUDA GPUArrays): a `DeviceArray` records its pointer, shape and strides, and
the pipeline reads or writes that memory directly (inputs, and outputs passed as `out=`).
A NumPy input is copied to a device buffer of the same (C-contiguous) layout before the
call; a NumPy output is computed in a device buffer and copied back after it. Every device
buffer made here is freed when the call ends, also when it fails.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from halo.backends.cuda.device import cuda_driver
from halo.errors import InputError

# Kernels index buffers with 32-bit integers (GPUs compute them at full speed).
MAX_ELEMENTS = 2**31 - 1


@dataclass(frozen=True)
class DeviceArray:
    """GPU memory as a pipeline sees it (strides in bytes, as NumPy's)."""
    pointer: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    readonly: bool
    owner: object

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize


def is_device_array(a: object) -> bool:
    return hasattr(a, "__cuda_array_interface__")


def device_array(a: object, what: str) -> DeviceArray:
    """`a`'s `__cuda_array_interface__` as a DeviceArray; `what` names it in errors."""
    interface = a.__cuda_array_interface__
    dtype, shape = np.dtype(interface["typestr"]), tuple(int(s) for s in interface["shape"])
    pointer, readonly = interface["data"]
    strides = interface.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], dtype.itemsize
        for extent in reversed(shape):
            strides.insert(0, step)
            step *= max(extent, 1)
    strides = tuple(int(s) for s in strides)
    if pointer % dtype.itemsize or any(s % dtype.itemsize for s in strides):
        raise InputError(f"{what} is a GPU array whose elements are not aligned to their "
                         f"size ({dtype.itemsize} bytes); pass a contiguous copy")
    if shape and shape[-1] > 1 and strides[-1] != dtype.itemsize:
        raise InputError(f"{what} is a GPU array whose last dimension is not contiguous "
                         f"(stride {strides[-1]} bytes, shape {shape}); kernels read "
                         "neighbouring last indices as neighbouring elements: pass a "
                         "contiguous copy (x.contiguous() in PyTorch, "
                         "cupy.ascontiguousarray(x))")
    return DeviceArray(int(pointer), shape, strides, dtype, bool(readonly), a)


def check_size(a: np.ndarray | DeviceArray, what: str) -> None:
    """Refuse an array whose elements a 32-bit index can't reach."""
    span = 1 + sum((e - 1) * abs(s) // a.itemsize for e, s in zip(a.shape, a.strides,
                                                                      strict=True) if e > 0)
    if span > MAX_ELEMENTS:
        raise InputError(f"{what} spans {span} elements; GPU kernels index with 32-bit "
                         f"integers, so at most {MAX_ELEMENTS}: split the work into pieces")


class DeviceCall:
    """The device buffers of one call: `pointer(a)` for each input and output, the call,
    then `finish()` to copy NumPy outputs back; `close()` frees everything."""

    def __init__(self) -> None:
        self._allocations: list[object] = []
        self._copy_back: list[tuple[np.ndarray, object]] = []

    def input(self, a: np.ndarray | DeviceArray) -> int:
        if isinstance(a, DeviceArray):
            return a.pointer
        allocation = self._alloc(a.nbytes)
        if a.nbytes:
            cuda_driver().memcpy_htod(allocation, np.ascontiguousarray(a))
        return int(allocation)

    def output(self, a: np.ndarray | DeviceArray) -> int:
        if isinstance(a, DeviceArray):
            return a.pointer
        allocation = self._alloc(a.nbytes)
        self._copy_back.append((a, allocation))
        return int(allocation)

    def finish(self) -> None:
        for a, allocation in self._copy_back:
            if a.nbytes:
                cuda_driver().memcpy_dtoh(a, allocation)

    def close(self) -> None:
        for allocation in self._allocations:
            allocation.free()
        self._allocations.clear()

    def _alloc(self, nbytes: int):
        allocation = cuda_driver().mem_alloc(max(nbytes, 1))
        self._allocations.append(allocation)
        return allocation
